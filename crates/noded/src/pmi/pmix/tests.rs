use super::info::*;
use proto::StepLaunch;

fn launch(tasks: Vec<Vec<u32>>, node_index: u32) -> StepLaunch {
    StepLaunch {
        job_id: model::JobId(42),
        step_id: 3,
        uid: 0,
        gid: 0,
        user: "root".into(),
        argv: vec!["true".into()],
        env: Vec::new(),
        work_dir: "/tmp".into(),
        node_index,
        nodes: vec!["nodea".into(), "nodeb".into()],
        tasks,
        cpus: 2,
        mem: 0,
        job_mem: 0,
        gpus: Vec::new(),
        cpu_ids: Vec::new(),
        job_cpu_ids: Vec::new(),
        cpu_bind: None,
        srun_addr: "127.0.0.1:1".into(),
        token: String::new(),
        stdout: None,
        stderr: None,
        stdin: proto::StdinMode::Task0,
        mpi: "pmix".into(),
        acctg_freq: None,
        gpu_bind: proto::GpuBind::None,
        task_prolog: None,
        task_epilog: None,
        pty: None,
        multi_prog: None,
        container: Vec::new(),
    }
}

#[test]
fn blobs_travel_as_hex_and_come_back_in_node_order() {
    let a = vec![0u8, 1, 0xfe, 0x7f];
    assert_eq!(hex(&a), "0001fe7f");
    assert_eq!(unhex("0001fe7f").as_deref(), Some(&a[..]));
    assert_eq!(unhex("0g"), None);
    assert_eq!(unhex("abc"), None);
    // srun merges the nodes' puts in arrival order; the result is by node.
    let kvs = vec![
        (fence_key(1), hex(b"second")),
        (fence_key(0), hex(b"first-")),
    ];
    assert_eq!(gather(&kvs, 2).as_deref(), Some(&b"first-second"[..]));
    // Nodes without data contribute nothing, but must have answered.
    let kvs = vec![(fence_key(0), String::new()), (fence_key(1), hex(b"x"))];
    assert_eq!(gather(&kvs, 2).as_deref(), Some(&b"x"[..]));
    assert_eq!(gather(&kvs[..1], 2), None);
}

#[test]
fn the_job_info_is_slurms_set_with_one_array_per_rank() {
    // Cyclic over two nodes: 0 and 2 on nodea, 1 and 3 on nodeb.
    let l = launch(vec![vec![0, 2], vec![1, 3]], 1);
    assert_eq!(nspace(&l), "muster.pmix.42.3");
    assert_eq!(ppn_input(&l.tasks), "0,2;1,3");
    let info = job_info(
        &l,
        "pmix[nodea,nodeb]",
        "pmix[0,2;1,3]",
        "/tmp/x",
        (1000, 100),
    );
    let get = |k: &str| {
        info.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("pmix.univ.size"), Some(Value::U32(4)));
    assert_eq!(get("pmix.job.size"), Some(Value::U32(4)));
    assert_eq!(get("pmix.local.size"), Some(Value::U32(2)));
    assert_eq!(get("pmix.num.nodes"), Some(Value::U32(2)));
    assert_eq!(get("pmix.lpeers"), Some(Value::Str("1,3".into())));
    assert_eq!(get("pmix.lldr"), Some(Value::Rank(1)));
    assert_eq!(get("pmix.nodeid"), Some(Value::U32(1)));
    assert_eq!(get("pmix.hname"), Some(Value::Str("nodeb".into())));
    assert_eq!(get("pmix.jobid"), Some(Value::Str("42.3".into())));
    assert_eq!(get("pmix.euid"), Some(Value::U32(1000)));
    assert_eq!(get("pmix.egid"), Some(Value::U32(100)));
    assert_eq!(
        get("pmix.anlmap"),
        Some(Value::Str("(vector,(0,2,1),(0,2,1))".into()))
    );
    let ranks: Vec<&Vec<(&str, Value)>> = info
        .iter()
        .filter_map(|(k, v)| match (k, v) {
            (&"pmix.pdata", Value::Info(i)) => Some(i),
            _ => None,
        })
        .collect();
    assert_eq!(ranks.len(), 4);
    for (r, items) in ranks.iter().enumerate() {
        // The rank comes first, as libpmix requires.
        assert_eq!(items[0], ("pmix.rank", Value::Rank(r as u32)));
        let node = (r % 2) as u32;
        let local = (r / 2) as u16;
        assert!(
            items.contains(&("pmix.nodeid", Value::U32(node))),
            "{items:?}"
        );
        assert!(
            items.contains(&("pmix.lrank", Value::U16(local))),
            "{items:?}"
        );
        let host = ["nodea", "nodeb"][node as usize].to_string();
        assert!(
            items.contains(&("pmix.hname", Value::Str(host))),
            "{items:?}"
        );
    }
}

#[cfg(feature = "pmix")]
#[test]
fn the_declared_layout_is_the_headers() {
    use super::ffi::*;
    use std::mem::{offset_of, size_of};
    let mut c = [0usize; 32];
    // SAFETY: layout.c writes at most `c.len()` values.
    let n = unsafe { muster_pmix_layout(c.as_mut_ptr(), c.len()) };
    let rust = [
        size_of::<pmix_proc_t>(),
        offset_of!(pmix_proc_t, rank),
        size_of::<pmix_data_array_t>(),
        offset_of!(pmix_data_array_t, size),
        offset_of!(pmix_data_array_t, array),
        size_of::<pmix_server_module_t>(),
        offset_of!(pmix_server_module_t, client_connected),
        offset_of!(pmix_server_module_t, client_finalized),
        offset_of!(pmix_server_module_t, abort),
        offset_of!(pmix_server_module_t, fence_nb),
        offset_of!(pmix_server_module_t, direct_modex),
        PMIX_MAX_NSLEN,
        PMIX_RANK_WILDCARD as usize,
        PMIX_STRING as usize,
        PMIX_UINT16 as usize,
        PMIX_UINT32 as usize,
        PMIX_PROC_RANK as usize,
        PMIX_BOOL as usize,
        PMIX_DATA_ARRAY as usize,
        PMIX_INFO as usize,
        (PMIX_SUCCESS - PMIX_ERR_NOT_SUPPORTED) as usize,
        (PMIX_SUCCESS - PMIX_ERROR) as usize,
        (PMIX_SUCCESS - PMIX_OPERATION_SUCCEEDED) as usize,
    ];
    assert_eq!(n, rust.len());
    assert_eq!(&c[..n], &rust[..]);
}
