use super::*;

#[test]
fn exit_code_from_wait_status() {
    assert_eq!(ExitCode::from_wait_status(1 << 8).to_string(), "1:0");
    assert_eq!(ExitCode::from_wait_status(9).to_string(), "0:9");
    assert_eq!(ExitCode::from_wait_status(0).to_string(), "0:0");
}

#[test]
fn gres_parse_forms() {
    assert_eq!(Gres::parse("gpu").unwrap().to_string(), "gpu:1");
    assert_eq!(Gres::parse("gpu:2").unwrap().to_string(), "gpu:2");
    assert_eq!(Gres::parse("gpu:a100:4").unwrap().to_string(), "gpu:a100:4");
    assert_eq!(
        Gres::parse("gres/gpu:a100").unwrap().to_string(),
        "gpu:a100:1"
    );
    assert!(Gres::parse("gpu:x:y:z").is_err());
    assert!(Gres::parse("gpu:a100:y").is_err());
}

#[test]
fn node_state_words() {
    let mut st = NodeState::new(NodeBase::Mixed);
    st.drain = true;
    assert_eq!(st.sinfo_short(), "drng");
    assert_eq!(st.sinfo_long(), "draining");
    assert_eq!(st.scontrol_string(), "MIXED+DRAIN");
    st.base = NodeBase::Idle;
    assert_eq!(st.sinfo_short(), "drain");
    let mut down = NodeState::new(NodeBase::Down);
    down.not_responding = true;
    assert_eq!(down.sinfo_short(), "down*");
}

/// The reboot flags as Slurm 22.05 prints them (sinfo(1) NODE STATE CODES:
/// `@` pending reboot, `^` reboot issued; an idle or down node waiting for
/// its reboot reads `boot`, `REBOOT` in long form).
#[test]
fn reboot_state_words() {
    let words = |st: &NodeState| (st.sinfo_short(), st.sinfo_long(), st.scontrol_string());
    let mut st = NodeState::new(NodeBase::Allocated);
    st.reboot = true;
    assert_eq!(
        words(&st),
        (
            "alloc@".into(),
            "allocated@".into(),
            "ALLOCATED+REBOOT_REQUESTED".into()
        )
    );
    st.drain = true;
    assert_eq!(
        words(&st),
        (
            "drng@".into(),
            "draining@".into(),
            "ALLOCATED+DRAIN+REBOOT_REQUESTED".into()
        )
    );
    st.base = NodeBase::Mixed;
    st.drain = false;
    assert_eq!(st.sinfo_short(), "mix@");
    st.base = NodeBase::Idle;
    assert_eq!(
        words(&st),
        (
            "boot".into(),
            "reboot".into(),
            "IDLE+REBOOT_REQUESTED".into()
        )
    );
    st.not_responding = true;
    assert_eq!(st.sinfo_short(), "boot*");
    assert_eq!(st.scontrol_string(), "IDLE+REBOOT_REQUESTED+NOT_RESPONDING");
    let mut issued = NodeState::new(NodeBase::Down);
    issued.reboot_issued = true;
    issued.drain = true;
    assert_eq!(
        words(&issued),
        (
            "boot^".into(),
            "reboot^".into(),
            "DOWN+DRAIN+REBOOT_ISSUED".into()
        )
    );
}
