use super::*;

fn cfg(extra: &str) -> conf::Config {
    let text = format!(
        "ClusterName=c\nSlurmctldHost=h\n{extra}\nNodeName=n1 NodeHostname=host1 CPUs=2\n\
         PartitionName=p Nodes=n1 Default=YES\n"
    );
    conf::parse_str(&text, Path::new("/etc/slurm/slurm.conf"), &mut |_| {
        Err(io::Error::other("no include"))
    })
    .expect("parses")
    .config
}

fn node() -> Daemon {
    Daemon::Noded { node: "n1".into() }
}

#[test]
fn unset_log_files_mean_stderr_at_info() {
    let s = settings(&Daemon::Ctld, Some(&cfg("")), 0);
    assert_eq!(s.file, None);
    assert_eq!(s.level, LevelFilter::INFO);
    assert_eq!(s.time, TimeFormat::Iso8601Ms);
    assert!(s.warnings.is_empty());
    let s = settings(&node(), None, 0);
    assert_eq!((s.file, s.level), (None, LevelFilter::INFO));
}

#[test]
fn slurmd_log_file_expands_node_and_host_names() {
    let c = cfg("SlurmctldLogFile=/var/log/ctld.log\nSlurmdLogFile=/var/log/slurmd.%n.%h.log");
    let s = settings(&node(), Some(&c), 0);
    assert_eq!(s.file, Some(PathBuf::from("/var/log/slurmd.n1.host1.log")));
    let s = settings(&Daemon::Ctld, Some(&c), 0);
    assert_eq!(s.file, Some(PathBuf::from("/var/log/ctld.log")));
}

#[test]
fn debug_levels_map_onto_tracing_and_each_v_raises_one_step() {
    let level = |key: &str, v: u8| settings(&Daemon::Ctld, Some(&cfg(key)), v).level;
    assert_eq!(level("SlurmctldDebug=quiet", 0), LevelFilter::OFF);
    assert_eq!(level("SlurmctldDebug=fatal", 0), LevelFilter::ERROR);
    assert_eq!(level("SlurmctldDebug=error", 0), LevelFilter::ERROR);
    assert_eq!(level("SlurmctldDebug=error", 1), LevelFilter::INFO);
    assert_eq!(level("SlurmctldDebug=info", 0), LevelFilter::INFO);
    assert_eq!(level("SlurmctldDebug=info", 1), LevelFilter::DEBUG);
    assert_eq!(level("SlurmctldDebug=verbose", 0), LevelFilter::DEBUG);
    assert_eq!(level("SlurmctldDebug=debug", 0), LevelFilter::DEBUG);
    assert_eq!(level("SlurmctldDebug=debug", 1), LevelFilter::TRACE);
    assert_eq!(level("SlurmctldDebug=debug5", 3), LevelFilter::TRACE);
    assert_eq!(level("SlurmctldDebug=2", 0), LevelFilter::ERROR);
    // The node daemon reads its own key.
    let s = settings(
        &node(),
        Some(&cfg("SlurmctldDebug=quiet\nSlurmdDebug=debug2")),
        0,
    );
    assert_eq!(s.level, LevelFilter::TRACE);
}

#[test]
fn a_bad_level_warns_and_keeps_info() {
    let s = settings(&Daemon::Ctld, Some(&cfg("SlurmctldDebug=loud")), 0);
    assert_eq!(s.level, LevelFilter::INFO);
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(s.warnings[0].starts_with("SlurmctldDebug=loud is not a level"));
}

#[test]
fn log_time_formats() {
    let time = |v: &str| settings(&Daemon::Ctld, Some(&cfg(&format!("LogTimeFormat={v}"))), 0);
    assert_eq!(time("iso8601").time, TimeFormat::Iso8601);
    assert_eq!(time("iso8601_ms").time, TimeFormat::Iso8601Ms);
    assert_eq!(time("rfc5424").time, TimeFormat::Rfc5424);
    assert_eq!(time("rfc5424_ms").time, TimeFormat::Rfc5424Ms);
    assert_eq!(time("short").time, TimeFormat::Short);
    let s = time("thread_id");
    assert_eq!(s.time, TimeFormat::Iso8601Ms);
    assert_eq!(
        s.warnings,
        vec![
            "LogTimeFormat=thread_id is not supported by muster, ignored (iso8601, iso8601_ms, \
             rfc5424, rfc5424_ms and short are)"
                .to_string()
        ]
    );
    let s = time("iso8601,format_stderr");
    assert_eq!((s.time, s.warnings.len()), (TimeFormat::Iso8601, 1));
}

#[test]
fn time_formats_render_as_slurm_writes_them() {
    use chrono::TimeZone;
    let t = chrono::FixedOffset::east_opt(3600)
        .unwrap()
        .with_ymd_and_hms(2026, 12, 2, 10, 24, 13)
        .unwrap()
        + chrono::Duration::milliseconds(123);
    let f = |tf: TimeFormat| t.format(tf.chrono_format()).to_string();
    assert_eq!(f(TimeFormat::Iso8601), "2026-12-02T10:24:13");
    assert_eq!(f(TimeFormat::Iso8601Ms), "2026-12-02T10:24:13.123");
    assert_eq!(f(TimeFormat::Rfc5424), "2026-12-02T10:24:13+01:00");
    assert_eq!(f(TimeFormat::Rfc5424Ms), "2026-12-02T10:24:13.123+01:00");
    assert_eq!(f(TimeFormat::Short), "Dec 02 10:24:13");
}
