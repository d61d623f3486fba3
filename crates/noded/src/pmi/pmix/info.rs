//! The pure half of the PMIx server: the job and node information it
//! registers, and the fence blobs' encoding (hex, in node order). No
//! libpmix here, so it is built and tested without the `pmix` feature.

use proto::StepLaunch;
use std::collections::BTreeMap;

/// The key a node's fence blob travels under.
pub fn fence_key(node_index: u32) -> String {
    format!("pmix.{node_index}")
}

/// Lower-case hex of `data`.
pub fn hex(data: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(data.len() * 2);
    for b in data {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// The bytes of [`hex`]'s text, or None if it is not that.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

/// Every node's blob of one fence, concatenated in node order (what
/// libpmix expects back from fence_nb); None when a node's is missing or
/// garbled.
pub fn gather(kvs: &[(String, String)], nnodes: usize) -> Option<Vec<u8>> {
    let by_key: BTreeMap<&str, &str> = kvs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut all = Vec::new();
    for node in 0..nnodes {
        all.extend(unhex(by_key.get(fence_key(node as u32).as_str())?)?);
    }
    Some(all)
}

/// A value of the job's PMIx information.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `PMIX_STRING`.
    Str(String),
    /// `PMIX_UINT32`.
    U32(u32),
    /// `PMIX_UINT16`.
    U16(u16),
    /// `PMIX_PROC_RANK`.
    Rank(u32),
    /// `PMIX_BOOL`.
    Bool(bool),
    /// `PMIX_DATA_ARRAY` of `PMIX_INFO`: one rank's information.
    Info(Vec<(&'static str, Value)>),
}

/// The step's namespace (Slurm: `slurm.pmix.<job>.<step>`).
pub fn nspace(l: &StepLaunch) -> String {
    format!("muster.pmix.{}.{}", l.job_id, l.step_id)
}

/// `PMIx_generate_ppn`'s input: each node's ranks, `;` between nodes.
pub fn ppn_input(tasks: &[Vec<u32>]) -> String {
    tasks
        .iter()
        .map(|ts| {
            ts.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// What `PMIx_server_register_nspace` is given, as Slurm's mpi/pmix
/// registers it: the job's sizes and maps, this node's peers, and one
/// `PMIX_PROC_DATA` array per rank (rank first). `node_map` and `proc_map`
/// are `PMIx_generate_regex`/`PMIx_generate_ppn` of the step's nodes and
/// ranks; `tmpdir` the directory the server was given; `ids` the uid and
/// gid the tasks run as (libpmix gives them its shared-memory files).
pub fn job_info(
    l: &StepLaunch,
    node_map: &str,
    proc_map: &str,
    tmpdir: &str,
    ids: (u32, u32),
) -> Vec<(&'static str, Value)> {
    use Value::*;
    let size = l.ntasks();
    let me = l.node_index as usize;
    let mine = &l.tasks[me];
    let peers: Vec<String> = mine.iter().map(|t| t.to_string()).collect();
    let mut v: Vec<(&'static str, Value)> = vec![
        ("pmix.univ.size", U32(size)),
        ("pmix.job.size", U32(size)),
        ("pmix.max.size", U32(size)),
        ("pmix.app.size", U32(size)),
        ("pmix.job.napps", U32(1)),
        ("pmix.local.size", U32(mine.len() as u32)),
        ("pmix.node.size", U32(mine.len() as u32)),
        ("pmix.num.nodes", U32(l.tasks.len() as u32)),
        ("pmix.jobid", Str(format!("{}.{}", l.job_id, l.step_id))),
        ("pmix.nmap", Str(node_map.to_string())),
        ("pmix.pmap", Str(proc_map.to_string())),
        ("pmix.anlmap", Str(proto::process_mapping(&l.tasks))),
        ("pmix.lpeers", Str(peers.join(","))),
        (
            "pmix.lldr",
            Rank(mine.iter().copied().min().unwrap_or_default()),
        ),
        ("pmix.aldr", Rank(0)),
        ("pmix.hname", Str(l.nodes[me].clone())),
        ("pmix.nodeid", U32(l.node_index)),
        ("pmix.tmpdir", Str(tmpdir.to_string())),
        ("pmix.nsdir", Str(tmpdir.to_string())),
        ("pmix.spawned", Bool(false)),
        ("pmix.euid", U32(ids.0)),
        ("pmix.egid", U32(ids.1)),
    ];
    let mut ranks: Vec<(u32, usize, usize)> = Vec::new();
    for (node, ts) in l.tasks.iter().enumerate() {
        ranks.extend(ts.iter().enumerate().map(|(local, t)| (*t, node, local)));
    }
    ranks.sort_unstable();
    for (rank, node, local) in ranks {
        v.push((
            "pmix.pdata",
            Info(vec![
                ("pmix.rank", Rank(rank)),
                ("pmix.appnum", U32(0)),
                ("pmix.grank", Rank(rank)),
                ("pmix.apprank", Rank(rank)),
                ("pmix.lrank", U16(local as u16)),
                ("pmix.nrank", U16(local as u16)),
                (
                    "pmix.hname",
                    Str(l.nodes.get(node).cloned().unwrap_or_default()),
                ),
                ("pmix.nodeid", U32(node as u32)),
            ]),
        ));
    }
    v
}
