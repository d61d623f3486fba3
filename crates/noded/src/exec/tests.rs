use super::*;

#[test]
fn programs_are_found_on_the_task_path_as_execvp_finds_them() {
    let env = vec![("PATH".to_string(), "/nonexistent:/usr/bin:/bin".to_string())];
    let sh = resolve_program(None, "sh", &env).expect("sh on PATH");
    assert!(sh.ends_with("/sh"), "{sh}");
    assert_eq!(resolve_program(None, "no-such-program-here", &env), None);
    assert_eq!(
        resolve_program(None, "./relative", &env).as_deref(),
        Some("./relative")
    );
}

#[test]
fn the_image_carries_the_environment_and_a_pid_slot() {
    let env = vec![
        ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ("SLURM_TASK_PID".to_string(), "stale".to_string()),
        ("A".to_string(), "1".to_string()),
    ];
    let img = ExecImage::new_in(None, "sh", &["-c".to_string()], &env).expect("an image");
    let env: Vec<&str> = img.env.iter().map(|e| e.to_str().unwrap()).collect();
    assert_eq!(env, vec!["PATH=/usr/bin:/bin", "A=1"]);
    assert!(img.pid_entry.starts_with(TASK_PID_KEY));
    assert_eq!(img.argv_ptrs.len(), 3);
    assert_eq!(img.env_ptrs.len(), 4);
}
