use super::*;

/// What a two-GPU, two-socket node's NVML would say.
struct Fake(Result<Vec<NvmlDevice>, String>);

impl GpuDiscovery for Fake {
    fn devices(&self) -> Result<Vec<NvmlDevice>, String> {
        self.0.clone()
    }
}

fn two_gpus() -> Fake {
    Fake(Ok(vec![
        NvmlDevice {
            minor: 1,
            name: "NVIDIA A100-SXM4-40GB".into(),
            cpu_affinity: vec![0x0f],
        },
        NvmlDevice {
            minor: 0,
            name: "NVIDIA A100-SXM4-40GB".into(),
            cpu_affinity: vec![0xf0, 0x1],
        },
    ]))
}

fn gpu_line(type_: Option<&str>) -> conf::GresConf {
    conf::GresConf {
        node_names: vec![],
        name: "gpu".into(),
        type_: type_.map(str::to_string),
        files: vec!["/dev/nvidia0".into()],
        count: 1,
        cores: None,
        links: None,
        flags: vec!["nvidia_gpu_env".into()],
        autodetect: Some("nvml".into()),
        line: 3,
    }
}

/// Issue 37: NVML's answers become gres.conf lines in NVML's order, with
/// the device file of the minor number, Slurm's type spelling and the
/// CPUs of the affinity mask.
#[test]
fn issue_37_nvml_devices_become_gres_lines() {
    let found = detected(&two_gpus()).unwrap();
    assert_eq!(found[0].file, "/dev/nvidia1");
    assert_eq!(found[0].type_, "nvidia_a100-sxm4-40gb");
    assert_eq!(found[0].cores, [0, 1, 2, 3]);
    assert_eq!(found[1].file, "/dev/nvidia0");
    assert_eq!(found[1].cores, [4, 5, 6, 7, 64]);
    let mps = conf::GresConf {
        name: "mps".into(),
        ..gpu_line(None)
    };
    let lines = autodetect_lines(&[gpu_line(None), mps], &two_gpus()).unwrap();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0].name, "mps");
    assert_eq!(lines[1].files, ["/dev/nvidia1"]);
    assert_eq!(lines[1].cores.as_deref(), Some("0,1,2,3"));
    assert_eq!(lines[1].flags, ["nvidia_gpu_env"]);
    assert_eq!(lines[2].type_.as_deref(), Some("nvidia_a100-sxm4-40gb"));
    // A configured type is kept (the controller's pools carry it).
    let typed = autodetect_lines(&[gpu_line(Some("a100"))], &two_gpus()).unwrap();
    assert_eq!(typed[0].type_.as_deref(), Some("a100"));
    // A failure is the caller's to report.
    let broken = Fake(Err("nvmlInit_v2 failed with NVML error 9".into()));
    assert!(autodetect_lines(&[gpu_line(None)], &broken).is_err());
}

/// Issue 37, acceptance test 17: without the driver's library, loading
/// NVML fails with a message naming it, and nothing crashes.
#[test]
fn issue_37_nvml_absent_is_an_error_not_a_crash() {
    match Nvml::load() {
        Err(e) => assert!(e.contains(LIBRARY), "{e}"),
        // A node with the driver: the library answers (or says why not).
        Ok(nvml) => {
            let _ = nvml.devices();
        }
    }
}
