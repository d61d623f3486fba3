//! Compact job rows: what `squeue` prints in its brief forms, without a
//! [`JobInfo`] per job (`JobFilter::rows`).
//!
//! A [`JobRow`] holds the numbers of a brief `JobInfo` and, for its text
//! fields, indexes into the answer's string table ([`JobRows::strings`]),
//! so a name, user, partition or node shared by many jobs travels and is
//! decoded once. Everything [`JobInfo::BRIEF_OMITS`] names is absent: a
//! command asks for rows only when its output reads none of it.

use crate::{JobFilter, JobInfo, JobList};
use model::{JobId, JobState, PendingReason, TimeLimit, Timestamp};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// An answer to `QueryJobs` with `rows` set. Sent in rpc's positional
/// binary form: no field here may be skipped when serializing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobRows {
    /// The controller's time when it answered.
    pub now: Timestamp,
    /// Every text the rows name, each once; index 0 is always "".
    pub strings: Vec<String>,
    /// The jobs, in the controller's order, in chunks of at most
    /// [`JobRows::CHUNK`]: a decoder allocates each chunk whole (serde
    /// allocates at most 1 MiB ahead of a sequence's announced length, so
    /// one long sequence is grown and copied again and again).
    pub chunks: Vec<Vec<JobRow>>,
}

/// One job of [`JobRows`]: the fields of a brief [`JobInfo`], text as
/// indexes into [`JobRows::strings`]. A text field the filter omits is 0
/// (""), as it is empty in a `JobInfo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)] // Each field is the `JobInfo` field of the same name.
pub struct JobRow {
    pub job_id: JobId,
    pub name: u32,
    pub user: u32,
    pub uid: u32,
    pub group: u32,
    pub gid: u32,
    pub account: u32,
    pub qos: u32,
    pub partition: u32,
    pub state: JobState,
    pub completing: bool,
    pub reason: PendingReason,
    pub priority: u32,
    pub nice: i32,
    pub submit_time: Timestamp,
    pub eligible_time: Timestamp,
    pub start_time: Option<Timestamp>,
    pub end_time: Option<Timestamp>,
    pub run_time: u64,
    pub time_limit: TimeLimit,
    pub nodes: Vec<u32>,
    pub num_nodes: u32,
    pub num_cpus: u32,
    pub num_tasks: u32,
    pub cpus_per_task: u32,
    pub mem_per_cpu: Option<u64>,
    pub mem_per_node: Option<u64>,
    pub exclusive: bool,
    pub requeue: bool,
    pub restarts: u32,
    pub last_sched_eval: Option<Timestamp>,
    pub sched_nodes: Vec<u32>,
    pub array_job_id: Option<u32>,
    pub array_task_id: Option<u32>,
    pub array_task_str: Option<String>,
    pub array_max_tasks: Option<u32>,
}

/// Builds a [`JobRows`] string table: each distinct text once.
#[derive(Debug)]
pub struct Interner<'a> {
    strings: Vec<String>,
    index: HashMap<&'a str, u32>,
    owned: HashMap<String, u32>,
}

impl Default for Interner<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Interner<'a> {
    /// A table holding only "" (index 0).
    pub fn new() -> Self {
        let mut index = HashMap::new();
        index.insert("", 0);
        Interner {
            strings: vec![String::new()],
            index,
            owned: HashMap::new(),
        }
    }

    /// The index of `s`, added if new.
    pub fn intern(&mut self, s: &'a str) -> u32 {
        if let Some(i) = self.index.get(s) {
            return *i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.index.insert(s, i);
        i
    }

    /// The index of a text built for this answer (not borrowed).
    pub fn intern_owned(&mut self, s: String) -> u32 {
        if let Some(i) = self.index.get(s.as_str()).or_else(|| self.owned.get(&s)) {
            return *i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.clone());
        self.owned.insert(s, i);
        i
    }

    /// The table.
    pub fn into_strings(self) -> Vec<String> {
        self.strings
    }
}

impl JobRows {
    /// Rows per chunk: 2,048 rows of about 250 bytes stay under 1 MiB.
    pub const CHUNK: usize = 2048;

    /// Every row, in order.
    pub fn rows(&self) -> impl Iterator<Item = &JobRow> + Clone {
        self.chunks.iter().flatten()
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.chunks.iter().all(Vec::is_empty)
    }

    /// Appends `row`, starting a chunk when the last one is full.
    pub fn push(&mut self, row: JobRow) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < Self::CHUNK => c.push(row),
            _ => {
                let mut c = Vec::with_capacity(Self::CHUNK);
                c.push(row);
                self.chunks.push(c);
            }
        }
    }

    /// The text at `i` ("" when out of range: never from a well-formed
    /// answer).
    pub fn text(&self, i: u32) -> &str {
        self.strings.get(i as usize).map_or("", String::as_str)
    }

    /// The rows a controller would send for `list` under `filter`: each
    /// job stripped as `filter` strips it (tests compare what commands
    /// print from rows and from full jobs).
    pub fn from_list(list: &JobList, filter: &JobFilter) -> JobRows {
        let mut strings = Interner::new();
        let mut rows = JobRows {
            now: list.now,
            ..JobRows::default()
        };
        for j in &list.jobs {
            let mut j = j.clone();
            filter.strip(&mut j);
            rows.push(JobRow::from_info(&j, &mut strings));
        }
        rows.strings = strings.into_strings();
        rows
    }
}

impl JobRow {
    /// The row of `job`, its texts added to `strings`.
    pub fn from_info(job: &JobInfo, strings: &mut Interner<'_>) -> JobRow {
        let mut s = |t: &str| strings.intern_owned(t.to_string());
        JobRow {
            job_id: job.job_id,
            name: s(&job.name),
            user: s(&job.user),
            uid: job.uid,
            group: s(&job.group),
            gid: job.gid,
            account: s(&job.account),
            qos: s(&job.qos),
            partition: s(&job.partition),
            state: job.state,
            completing: job.completing,
            reason: job.reason,
            priority: job.priority,
            nice: job.nice,
            submit_time: job.submit_time,
            eligible_time: job.eligible_time,
            start_time: job.start_time,
            end_time: job.end_time,
            run_time: job.run_time,
            time_limit: job.time_limit,
            nodes: job.nodes.iter().map(|n| s(n)).collect(),
            num_nodes: job.num_nodes,
            num_cpus: job.num_cpus,
            num_tasks: job.num_tasks,
            cpus_per_task: job.cpus_per_task,
            mem_per_cpu: job.mem_per_cpu,
            mem_per_node: job.mem_per_node,
            exclusive: job.exclusive,
            requeue: job.requeue,
            restarts: job.restarts,
            last_sched_eval: job.last_sched_eval,
            sched_nodes: job.sched_nodes.iter().map(|n| s(n)).collect(),
            array_job_id: job.array_job_id,
            array_task_id: job.array_task_id,
            array_task_str: job.array_task_str.clone(),
            array_max_tasks: job.array_max_tasks,
        }
    }

    /// The brief `JobInfo` this row stands for (texts from `rows`).
    pub fn to_info(&self, rows: &JobRows) -> JobInfo {
        let t = |i: u32| rows.text(i).to_string();
        JobInfo {
            job_id: self.job_id,
            name: t(self.name),
            user: t(self.user),
            uid: self.uid,
            group: t(self.group),
            gid: self.gid,
            account: t(self.account),
            qos: t(self.qos),
            partition: t(self.partition),
            state: self.state,
            completing: self.completing,
            reason: self.reason,
            priority: self.priority,
            nice: self.nice,
            submit_time: self.submit_time,
            eligible_time: self.eligible_time,
            start_time: self.start_time,
            end_time: self.end_time,
            run_time: self.run_time,
            time_limit: self.time_limit,
            nodes: self.nodes.iter().map(|i| t(*i)).collect(),
            num_nodes: self.num_nodes,
            num_cpus: self.num_cpus,
            num_tasks: self.num_tasks,
            cpus_per_task: self.cpus_per_task,
            mem_per_cpu: self.mem_per_cpu,
            mem_per_node: self.mem_per_node,
            exclusive: self.exclusive,
            requeue: self.requeue,
            restarts: self.restarts,
            last_sched_eval: self.last_sched_eval,
            sched_nodes: self.sched_nodes.iter().map(|i| t(*i)).collect(),
            array_job_id: self.array_job_id,
            array_task_id: self.array_task_id,
            array_task_str: self.array_task_str.clone(),
            array_max_tasks: self.array_max_tasks,
            ..JobInfo::default()
        }
    }
}
