//! The PMI server of a step on one node (Slurm's mpi/pmi2 plugin): each
//! task talks PMI-1 or PMI-2 (chosen by its `init` line) on its `PMI_FD`;
//! puts are kept per fence; a fence completes when every local task is in
//! it and srun (the root of a one-level tree over the step's nodes) has
//! merged every node's puts and sent them back.
//!
//! ```text
//!   task --put--> pending puts          task --barrier_in/kvs-fence--> wait
//!   all local tasks in fence: FenceIn{seq, pending} --> srun (merges all nodes)
//!   srun --FenceOut{seq, all puts}--> kvs += all; every waiting task answered
//! ```
//!
//! A task that aborts, or exits after `init` without `finalize`, makes the
//! supervisor tell srun, which ends the step at once: nobody waits forever
//! in a fence.

use crate::to_srun::ToSrun;
use proto::{StepLaunch, StepdToSrun};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex};

/// Longest PMI-2 command accepted (MPICH's limit).
const MAX_PMI2_LEN: usize = 64 * 1024;

#[derive(Default)]
struct State {
    kvs: BTreeMap<String, String>,
    pending: Vec<(String, String)>,
    node_attrs: BTreeMap<String, String>,
    /// The fence now being gathered.
    seq: u32,
    /// Local tasks in it.
    in_fence: usize,
    /// Fences completed everywhere.
    done: u32,
    initialized: BTreeSet<u32>,
    finalized: BTreeSet<u32>,
    aborted: bool,
}

struct Inner {
    state: Mutex<State>,
    changed: Condvar,
    to: ToSrun,
    jobid: String,
    size: u32,
    local: usize,
    mapping: String,
}

/// The server of one step on one node.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

/// Parses `key=value` words (PMI-1) into a map.
pub fn parse_v1(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Parses a PMI-2 payload (`k=v;k=v;`, `;;` an escaped `;`).
pub fn parse_v2(payload: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut field = String::new();
    let mut chars = payload.chars().peekable();
    let mut fields = Vec::new();
    while let Some(c) = chars.next() {
        if c == ';' {
            if chars.peek() == Some(&';') {
                chars.next();
                field.push(';');
            } else {
                fields.push(std::mem::take(&mut field));
            }
        } else {
            field.push(c);
        }
    }
    if !field.is_empty() {
        fields.push(field);
    }
    for f in fields {
        if let Some((k, v)) = f.split_once('=') {
            out.insert(k.to_string(), v.to_string());
        }
    }
    out
}

/// Frames a PMI-2 answer: 6-character length, then `k=v;` pairs.
pub fn frame_v2(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut payload = String::new();
    for (k, v) in pairs {
        payload.push_str(k);
        payload.push('=');
        payload.push_str(&v.replace(';', ";;"));
        payload.push(';');
    }
    let mut out = format!("{:<6}", payload.len()).into_bytes();
    out.extend_from_slice(payload.as_bytes());
    out
}

impl Server {
    /// A server for `l`'s tasks on this node.
    pub fn new(l: &StepLaunch, to: ToSrun) -> Server {
        Server {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                to,
                jobid: format!("{}.{}", l.job_id, l.step_id),
                size: l.ntasks(),
                local: l.tasks[l.node_index as usize].len(),
                mapping: proto::process_mapping(&l.tasks),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves task `rank` on its end of the PMI socket, in a thread.
    pub fn serve(&self, rank: u32, fd: OwnedFd, pids: Arc<Mutex<Vec<i32>>>) {
        let me = self.clone();
        std::thread::spawn(move || {
            let stream = UnixStream::from(fd);
            let Ok(writer) = stream.try_clone() else {
                return;
            };
            let _ = me.conversation(rank, BufReader::new(stream), writer, &pids);
        });
    }

    /// srun merged the fence `seq` of every node.
    pub fn fence_out(&self, seq: u32, kvs: Vec<(String, String)>) {
        let mut st = self.lock();
        st.kvs.extend(kvs);
        st.done = st.done.max(seq + 1);
        self.inner.changed.notify_all();
    }

    /// A local task ended: one that started PMI and never finished it
    /// breaks every fence, so the step is aborted.
    pub fn task_exited(&self, rank: u32) {
        let st = self.lock();
        if st.initialized.contains(&rank) && !st.finalized.contains(&rank) && !st.aborted {
            drop(st);
            self.abort(
                rank,
                1,
                format!("task {rank} exited without calling PMI finalize"),
            );
        }
    }

    fn abort(&self, rank: u32, code: i32, message: String) {
        let mut st = self.lock();
        st.aborted = true;
        self.inner.changed.notify_all();
        drop(st);
        self.inner.to.send(StepdToSrun::Abort {
            task: rank,
            code,
            message,
        });
    }

    /// Enters the fence; returns once it completed everywhere (false: aborted).
    fn fence(&self) -> bool {
        let mut st = self.lock();
        let seq = st.seq;
        st.in_fence += 1;
        if st.in_fence >= self.inner.local {
            st.in_fence = 0;
            st.seq += 1;
            let kvs = std::mem::take(&mut st.pending);
            drop(st);
            self.inner.to.send(StepdToSrun::FenceIn { seq, kvs });
            st = self.lock();
        }
        while st.done <= seq && !st.aborted {
            st = self
                .inner
                .changed
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
        }
        !st.aborted
    }

    fn get(&self, key: &str) -> Option<String> {
        if key == "PMI_process_mapping" {
            return Some(self.inner.mapping.clone());
        }
        let st = self.lock();
        st.kvs.get(key).cloned().or_else(|| {
            st.pending
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        })
    }

    fn conversation(
        &self,
        rank: u32,
        mut r: BufReader<UnixStream>,
        mut w: UnixStream,
        _pids: &Mutex<Vec<i32>>,
    ) -> std::io::Result<()> {
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let m = parse_v1(line.trim_end());
            if line.starts_with("mcmd=spawn") {
                // Swallow the multi-line spawn request; spawning is not offered.
                let mut l2 = String::new();
                while r.read_line(&mut l2)? > 0 && l2.trim_end() != "endcmd" {
                    l2.clear();
                }
                w.write_all(b"cmd=spawn_result rc=-1\n")?;
                continue;
            }
            let cmd = m.get("cmd").map(String::as_str).unwrap_or("");
            let reply: String = match cmd {
                "init" => {
                    self.lock().initialized.insert(rank);
                    if m.get("pmi_version").map(String::as_str) == Some("2") {
                        w.write_all(b"cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")?;
                        return self.conversation_v2(rank, r, w);
                    }
                    "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into()
                }
                "get_maxes" => {
                    "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024".into()
                }
                "get_appnum" => "cmd=appnum rc=0 appnum=0".into(),
                "get_my_kvsname" => format!("cmd=my_kvsname rc=0 kvsname={}", self.inner.jobid),
                "get_universe_size" => format!("cmd=universe_size rc=0 size={}", self.inner.size),
                "put" => {
                    let (k, v) = (m.get("key"), m.get("value"));
                    if let (Some(k), Some(v)) = (k, v) {
                        self.lock().pending.push((k.clone(), v.clone()));
                    }
                    "cmd=put_result rc=0 msg=success".into()
                }
                "barrier_in" => {
                    if !self.fence() {
                        return Ok(());
                    }
                    "cmd=barrier_out rc=0".into()
                }
                "get" => match m.get("key").and_then(|k| self.get(k)) {
                    Some(v) => format!("cmd=get_result rc=0 msg=success value={v}"),
                    None => "cmd=get_result rc=-1 msg=key_not_found".into(),
                },
                "finalize" => {
                    self.lock().finalized.insert(rank);
                    "cmd=finalize_ack rc=0".into()
                }
                "abort" => {
                    let code = m.get("exitcode").and_then(|c| c.parse().ok()).unwrap_or(1);
                    self.abort(rank, code, format!("task {rank} called PMI abort"));
                    return Ok(());
                }
                "publish_name" => "cmd=publish_result rc=-1 msg=unsupported".into(),
                "unpublish_name" => "cmd=unpublish_result rc=-1 msg=unsupported".into(),
                "lookup_name" => "cmd=lookup_result rc=-1 msg=unsupported info=fail".into(),
                other => format!("cmd={other}_result rc=-1 msg=unsupported"),
            };
            w.write_all(reply.as_bytes())?;
            w.write_all(b"\n")?;
        }
    }

    fn conversation_v2(
        &self,
        rank: u32,
        mut r: BufReader<UnixStream>,
        mut w: UnixStream,
    ) -> std::io::Result<()> {
        loop {
            let mut head = [0u8; 6];
            if r.read_exact(&mut head).is_err() {
                return Ok(());
            }
            let len: usize = std::str::from_utf8(&head)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .filter(|n| *n <= MAX_PMI2_LEN)
                .ok_or_else(|| std::io::Error::other("bad PMI-2 header"))?;
            let mut buf = vec![0u8; len];
            r.read_exact(&mut buf)?;
            let m = parse_v2(&String::from_utf8_lossy(&buf));
            let cmd = m.get("cmd").cloned().unwrap_or_default();
            let thrid = m.get("thrid").cloned();
            let resp = format!("{cmd}-response");
            let mut pairs: Vec<(String, String)> = vec![("cmd".into(), resp)];
            let mut add = |k: &str, v: String| pairs.push((k.to_string(), v));
            if let Some(t) = thrid {
                add("thrid", t);
            }
            match cmd.as_str() {
                "fullinit" => {
                    add("rc", "0".into());
                    add("pmi-version", "2".into());
                    add("pmi-subversion", "0".into());
                    add("rank", rank.to_string());
                    add("size", self.inner.size.to_string());
                    add("appnum", "0".into());
                    add("debugged", "FALSE".into());
                    add("pmiverbose", "FALSE".into());
                }
                "job-getid" => {
                    add("rc", "0".into());
                    add("jobid", self.inner.jobid.clone());
                }
                "info-getjobattr" => {
                    let key = m.get("key").cloned().unwrap_or_default();
                    let value = match key.as_str() {
                        "PMI_process_mapping" => Some(self.inner.mapping.clone()),
                        "universeSize" => Some(self.inner.size.to_string()),
                        _ => None,
                    };
                    add("rc", "0".into());
                    match value {
                        Some(v) => {
                            add("found", "TRUE".into());
                            add("value", v);
                        }
                        None => add("found", "FALSE".into()),
                    }
                }
                "info-putnodeattr" => {
                    if let (Some(k), Some(v)) = (m.get("key"), m.get("value")) {
                        self.lock().node_attrs.insert(k.clone(), v.clone());
                        self.inner.changed.notify_all();
                    }
                    add("rc", "0".into());
                }
                "info-getnodeattr" => {
                    let key = m.get("key").cloned().unwrap_or_default();
                    let wait = m.get("wait").map(String::as_str) == Some("TRUE");
                    let mut st = self.lock();
                    while wait && !st.node_attrs.contains_key(&key) && !st.aborted {
                        st = self
                            .inner
                            .changed
                            .wait(st)
                            .unwrap_or_else(|p| p.into_inner());
                    }
                    let v = st.node_attrs.get(&key).cloned();
                    drop(st);
                    add("rc", "0".into());
                    match v {
                        Some(v) => {
                            add("found", "TRUE".into());
                            add("value", v);
                        }
                        None => add("found", "FALSE".into()),
                    }
                }
                "kvs-put" => {
                    if let (Some(k), Some(v)) = (m.get("key"), m.get("value")) {
                        self.lock().pending.push((k.clone(), v.clone()));
                    }
                    add("rc", "0".into());
                }
                "kvs-fence" => {
                    if !self.fence() {
                        return Ok(());
                    }
                    add("rc", "0".into());
                }
                "kvs-get" => {
                    add("rc", "0".into());
                    match m.get("key").and_then(|k| self.get(k)) {
                        Some(v) => {
                            add("found", "TRUE".into());
                            add("value", v);
                        }
                        None => add("found", "FALSE".into()),
                    }
                }
                "finalize" => {
                    self.lock().finalized.insert(rank);
                    add("rc", "0".into());
                }
                "abort" => {
                    let msg = m.get("msg").cloned().unwrap_or_default();
                    if m.get("isworld").map(String::as_str) != Some("FALSE") {
                        self.abort(rank, 1, format!("task {rank} called PMI abort: {msg}"));
                    }
                    return Ok(());
                }
                _ => {
                    add("rc", "-1".into());
                    add("errmsg", "unsupported".into());
                }
            }
            let refs: Vec<(&str, &str)> = pairs
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            w.write_all(&frame_v2(&refs))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmi2_frames_escape_semicolons() {
        let f = frame_v2(&[("cmd", "kvs-get-response"), ("value", "a;b")]);
        assert_eq!(
            String::from_utf8(f).unwrap(),
            "32    cmd=kvs-get-response;value=a;;b;"
        );
        let m = parse_v2("cmd=kvs-put;key=k;value=a;;b;");
        assert_eq!(m["value"], "a;b");
        assert_eq!(m["key"], "k");
    }

    #[test]
    fn pmi1_words_parse_in_any_order() {
        let m = parse_v1("cmd=put kvsname=1.0 key=k value=v");
        assert_eq!(m["cmd"], "put");
        assert_eq!(m["value"], "v");
    }
}
