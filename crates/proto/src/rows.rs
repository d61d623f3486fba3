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
use std::mem::MaybeUninit;

/// An answer to `QueryJobs` with `rows` set. Sent in rpc's positional
/// binary form: no field here may be skipped when serializing.
///
/// On the wire each chunk is a byte string holding the chunk's rows in
/// postcard (`Vec<JobRow>`), so the controller can encode rows as it
/// walks its jobs ([`JobRows::push_encoded`]) instead of building every
/// row first and encoding the whole answer afterwards. Decoding gives
/// [`JobRows::chunks`] only.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobRows {
    /// The controller's time when it answered.
    pub now: Timestamp,
    /// Every text the rows name, each once; index 0 is always "".
    pub strings: Vec<String>,
    /// The jobs, in the controller's order, in chunks of at most
    /// [`JobRows::CHUNK`], each row in the receiver's compact form: a
    /// decoder allocates each chunk whole (serde allocates at most 1 MiB
    /// ahead of a sequence's announced length, so one long sequence is
    /// grown and copied again and again).
    pub chunks: Vec<Vec<PackedRow>>,
    /// Rows already encoded, sent after those of `chunks` (the sender's
    /// side only: see [`JobRows::push_encoded`]).
    encoded: Vec<EncodedChunk>,
    /// The sender's memo of the enums it encoded last.
    memo: EncodeMemo,
}

/// Up to [`JobRows::CHUNK`] rows in postcard, after two bytes that hold
/// the row count as a postcard varint (right-aligned: a count under 128
/// is one byte, in `bytes[1]`), kept up to date as rows are appended, so
/// the chunk goes out as it lies ([`EncodedChunk::wire`]) instead of being
/// copied behind its count.
#[derive(Clone, Debug, Default, PartialEq)]
struct EncodedChunk {
    rows: u32,
    bytes: Vec<u8>,
}

impl EncodedChunk {
    fn new() -> EncodedChunk {
        let mut bytes = Vec::with_capacity(JobRows::CHUNK * 48);
        bytes.extend_from_slice(&[0, 0]);
        EncodedChunk { rows: 0, bytes }
    }

    /// Counts one more row (at most 16,383: two varint bytes).
    fn count_row(&mut self) {
        self.rows += 1;
        let n = self.rows;
        debug_assert!(n < 1 << 14 && JobRows::CHUNK < 1 << 14);
        if n < 0x80 {
            self.bytes[1] = n as u8;
        } else {
            self.bytes[0] = (n as u8 & 0x7f) | 0x80;
            self.bytes[1] = (n >> 7) as u8;
        }
    }

    /// The chunk as it travels: its row count, then its rows.
    fn wire(&self) -> &[u8] {
        if self.rows < 0x80 {
            &self.bytes[1..]
        } else {
            &self.bytes
        }
    }
}

struct WireChunks<'a>(&'a JobRows);

/// Bytes serialized as one byte string (postcard: length, then the
/// bytes), not as a sequence of numbers.
pub(crate) struct WireBytes<'a>(pub(crate) &'a [u8]);

impl Serialize for WireBytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl Serialize for WireChunks<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let r = self.0;
        let mut seq = s.serialize_seq(Some(r.chunks.len() + r.encoded.len()))?;
        for c in &r.chunks {
            let mut bytes = Vec::new();
            put_varint(&mut bytes, c.len() as u64);
            let mut memo = EncodeMemo::default();
            for row in c {
                encode_row(&row.unpack(), &mut bytes, &mut memo).map_err(S::Error::custom)?;
            }
            seq.serialize_element(&WireBytes(&bytes))?;
        }
        for c in &r.encoded {
            seq.serialize_element(&WireBytes(c.wire()))?;
        }
        seq.end()
    }
}

impl Serialize for JobRows {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("JobRows", 3)?;
        st.serialize_field("now", &self.now)?;
        st.serialize_field("strings", &self.strings)?;
        st.serialize_field("chunks", &WireChunks(self))?;
        st.end()
    }
}

/// One chunk read back from its bytes.
struct DecodedChunk(Vec<PackedRow>);

impl<'de> Deserialize<'de> for DecodedChunk {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = DecodedChunk;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a chunk of job rows as bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<DecodedChunk, E> {
                decode_chunk(v).map(DecodedChunk).map_err(E::custom)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<DecodedChunk, A::Error> {
                // Bytes as a self-describing format writes them (JSON: numbers).
                let mut v = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    v.push(b);
                }
                self.visit_bytes(&v)
            }
        }
        d.deserialize_bytes(V)
    }
}

impl<'de> Deserialize<'de> for JobRows {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename = "JobRows")]
        struct Wire {
            now: Timestamp,
            strings: Vec<String>,
            chunks: Vec<DecodedChunk>,
        }
        let w = Wire::deserialize(d)?;
        Ok(JobRows {
            now: w.now,
            strings: w.strings,
            chunks: w.chunks.into_iter().map(|c| c.0).collect(),
            encoded: Vec::new(),
            memo: EncodeMemo::default(),
        })
    }
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
    /// Appended after `array_max_tasks`.
    pub configuring: bool,
}

/// Builds a [`JobRows`] string table: each distinct text once.
///
/// Texts borrowed for the interner's whole life (`intern`) are first
/// looked up by address: jobs that share one description (a loop of
/// sbatch) hand in the same name, user and account at the same address
/// every time, so most look-ups cost a pointer comparison instead of
/// hashing the text. Two texts at one address with one length are the
/// same text, since a borrow for `'a` keeps it alive and unchanged.
#[derive(Debug)]
pub struct Interner<'a> {
    /// The texts from index `base` on (those before were taken by
    /// [`Interner::take_new`]).
    strings: Vec<String>,
    base: u32,
    index: HashMap<&'a str, u32>,
    owned: HashMap<String, u32>,
    /// Recently interned borrowed texts: (address, length, index), by a
    /// few bits of the address.
    by_addr: [(usize, usize, u32); Interner::SLOTS],
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
            base: 0,
            index,
            owned: HashMap::new(),
            by_addr: [(0, 0, 0); Interner::SLOTS],
        }
    }

    const SLOTS: usize = 64;

    /// The index of `s`, added if new.
    pub fn intern(&mut self, s: &'a str) -> u32 {
        let addr = s.as_ptr() as usize;
        let slot = ((addr >> 3) ^ (addr >> 11)) % Self::SLOTS;
        let (a, len, i) = self.by_addr[slot];
        if a == addr && len == s.len() && addr != 0 {
            return i;
        }
        let i = match self.index.get(s) {
            Some(i) => *i,
            None => {
                let i = self.next_index();
                self.strings.push(s.to_string());
                self.index.insert(s, i);
                i
            }
        };
        self.by_addr[slot] = (addr, s.len(), i);
        i
    }

    /// The index of a text built for this answer (not borrowed).
    pub fn intern_owned(&mut self, s: String) -> u32 {
        if let Some(i) = self.index.get(s.as_str()).or_else(|| self.owned.get(&s)) {
            return *i;
        }
        let i = self.next_index();
        self.strings.push(s.clone());
        self.owned.insert(s, i);
        i
    }

    fn next_index(&self) -> u32 {
        self.base + self.strings.len() as u32
    }

    /// The texts added since the last call (all of them at the first):
    /// what a part of a streamed answer carries. Indexes go on counting.
    pub fn take_new(&mut self) -> Vec<String> {
        let new = std::mem::take(&mut self.strings);
        self.base += new.len() as u32;
        new
    }

    /// The table (the texts [`Interner::take_new`] has not taken).
    pub fn into_strings(self) -> Vec<String> {
        self.strings
    }
}

impl JobRows {
    /// Rows per chunk: 2,048 rows of about 250 bytes stay under 1 MiB.
    pub const CHUNK: usize = 2048;

    /// An answer of `now` with no rows and only "" in its string table.
    pub fn new(now: Timestamp) -> JobRows {
        JobRows {
            now,
            strings: vec![String::new()],
            ..JobRows::default()
        }
    }

    /// Every row, in order.
    pub fn rows(&self) -> impl Iterator<Item = &PackedRow> + Clone {
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
        self.push_packed(PackedRow::pack(&row));
    }

    /// [`JobRows::push`] of a row already in the receiver's form.
    pub fn push_packed(&mut self, row: PackedRow) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < Self::CHUNK => c.push(row),
            _ => {
                let mut c = Vec::with_capacity(Self::CHUNK);
                c.push(row);
                self.chunks.push(c);
            }
        }
    }

    /// Appends `row` in its encoded form, as the controller does: it is
    /// sent as if pushed with [`JobRows::push`], but neither
    /// [`JobRows::rows`] nor [`JobRows::len`] sees it before the answer
    /// is decoded.
    pub fn push_encoded(&mut self, row: &JobRow) -> Result<(), postcard::Error> {
        let chunk = match self.encoded.last_mut() {
            Some(c) if (c.rows as usize) < Self::CHUNK => c,
            _ => {
                self.encoded.push(EncodedChunk::new());
                self.encoded.last_mut().expect("just pushed")
            }
        };
        encode_row(row, &mut chunk.bytes, &mut self.memo)?;
        chunk.count_row();
        Ok(())
    }

    /// With [`JobRows::push_encoded`]: when the last encoded chunk is
    /// full, the encoded chunks as a part of a streamed answer (no
    /// strings: the caller adds the texts they name that no earlier part
    /// carried), leaving none here.
    pub fn take_full_part(&mut self) -> Option<JobRows> {
        match self.encoded.last() {
            Some(c) if c.rows as usize >= Self::CHUNK => Some(JobRows {
                now: self.now,
                strings: Vec::new(),
                chunks: Vec::new(),
                encoded: std::mem::take(&mut self.encoded),
                memo: EncodeMemo::default(),
            }),
            _ => None,
        }
    }

    /// Adds the next part of a streamed answer (`JobFilter::stream`) to
    /// the parts received before it: its texts continue the string table
    /// and its rows follow. The first part starts the table at index 0,
    /// the last one is the answer's `JobRows`; together they are the
    /// answer as one `JobRows` would have carried it.
    pub fn append(&mut self, part: JobRows) {
        self.strings.extend(part.strings);
        self.chunks.extend(part.chunks);
        self.encoded.extend(part.encoded);
    }

    /// This answer as the receiver gets it: encoded rows decoded into
    /// [`JobRows::chunks`].
    pub fn decoded(&self) -> Result<JobRows, postcard::Error> {
        postcard::from_bytes(&postcard::to_allocvec(self)?)
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
        let mut rows = JobRows::new(list.now);
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
            configuring: job.configuring,
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
            configuring: self.configuring,
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

/// A job row as the receiver keeps it: the fields of a [`JobRow`] in
/// 160 bytes instead of 282, with nothing on the heap unless the job has
/// nodes, planned nodes or an array's task list (`RowExtra`, which
/// pending jobs rarely have). Optional numbers are a value and a flag;
/// an absent one is stored as 0, so equal rows compare equal.
///
/// squeue keeps 100,000 of these; at 282 bytes each, touching their
/// pages for the first time was a sixth of its CPU.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)] // Each public field is the `JobRow` field of the same name.
pub struct PackedRow {
    pub submit_time: Timestamp,
    pub eligible_time: Timestamp,
    pub run_time: u64,
    start_time: Timestamp,
    end_time: Timestamp,
    last_sched_eval: Timestamp,
    mem_per_cpu: u64,
    mem_per_node: u64,
    extra: Option<Box<RowExtra>>,
    pub job_id: JobId,
    pub name: u32,
    pub user: u32,
    pub uid: u32,
    pub group: u32,
    pub gid: u32,
    pub account: u32,
    pub qos: u32,
    pub partition: u32,
    pub priority: u32,
    pub nice: i32,
    pub num_nodes: u32,
    pub num_cpus: u32,
    pub num_tasks: u32,
    pub cpus_per_task: u32,
    pub restarts: u32,
    array_job_id: u32,
    array_task_id: u32,
    array_max_tasks: u32,
    /// Minutes, unless [`PackedRow::UNLIMITED`] is set.
    time_limit: u32,
    pub state: JobState,
    pub reason: PendingReason,
    flags: u16,
}

/// The fields of a [`PackedRow`] that take memory of their own.
#[derive(Clone, Debug, Default, PartialEq)]
struct RowExtra {
    nodes: Vec<u32>,
    sched_nodes: Vec<u32>,
    array_task_str: Option<String>,
}

/// The row of `JobRow::default()`.
impl Default for PackedRow {
    fn default() -> Self {
        PackedRow {
            submit_time: 0,
            eligible_time: 0,
            run_time: 0,
            start_time: 0,
            end_time: 0,
            last_sched_eval: 0,
            mem_per_cpu: 0,
            mem_per_node: 0,
            extra: None,
            job_id: JobId::default(),
            name: 0,
            user: 0,
            uid: 0,
            group: 0,
            gid: 0,
            account: 0,
            qos: 0,
            partition: 0,
            priority: 0,
            nice: 0,
            num_nodes: 0,
            num_cpus: 0,
            num_tasks: 0,
            cpus_per_task: 0,
            restarts: 0,
            array_job_id: 0,
            array_task_id: 0,
            array_max_tasks: 0,
            time_limit: 0,
            state: JobState::default(),
            reason: PendingReason::default(),
            // `TimeLimit::default()`.
            flags: PackedRow::UNLIMITED,
        }
    }
}

impl PackedRow {
    const COMPLETING: u16 = 1;
    const EXCLUSIVE: u16 = 1 << 1;
    const REQUEUE: u16 = 1 << 2;
    const START: u16 = 1 << 3;
    const END: u16 = 1 << 4;
    const LAST_EVAL: u16 = 1 << 5;
    const MEM_CPU: u16 = 1 << 6;
    const MEM_NODE: u16 = 1 << 7;
    const ARRAY_JOB: u16 = 1 << 8;
    const ARRAY_TASK: u16 = 1 << 9;
    const ARRAY_MAX: u16 = 1 << 10;
    const UNLIMITED: u16 = 1 << 11;
    const CONFIGURING: u16 = 1 << 12;

    fn flag(&self, f: u16) -> bool {
        self.flags & f != 0
    }

    fn set_flag(&mut self, f: u16, on: bool) {
        if on {
            self.flags |= f;
        }
    }

    fn opt<T>(&self, f: u16, v: T) -> Option<T> {
        self.flag(f).then_some(v)
    }

    /// Stores `v` behind flag `f` (0 when absent).
    fn put<T: Default>(&mut self, f: u16, v: Option<T>) -> T {
        self.set_flag(f, v.is_some());
        v.unwrap_or_default()
    }

    fn set_time_limit(&mut self, t: TimeLimit) {
        match t {
            TimeLimit::Unlimited => {
                self.flags |= Self::UNLIMITED;
                self.time_limit = 0;
            }
            TimeLimit::Minutes(m) => {
                self.flags &= !Self::UNLIMITED;
                self.time_limit = m;
            }
        }
    }

    fn extra_mut(&mut self) -> &mut RowExtra {
        self.extra.get_or_insert_with(Box::default)
    }

    #[allow(missing_docs)]
    pub fn completing(&self) -> bool {
        self.flag(Self::COMPLETING)
    }
    #[allow(missing_docs)]
    pub fn configuring(&self) -> bool {
        self.flag(Self::CONFIGURING)
    }
    #[allow(missing_docs)]
    pub fn exclusive(&self) -> bool {
        self.flag(Self::EXCLUSIVE)
    }
    #[allow(missing_docs)]
    pub fn requeue(&self) -> bool {
        self.flag(Self::REQUEUE)
    }
    #[allow(missing_docs)]
    pub fn start_time(&self) -> Option<Timestamp> {
        self.opt(Self::START, self.start_time)
    }
    #[allow(missing_docs)]
    pub fn end_time(&self) -> Option<Timestamp> {
        self.opt(Self::END, self.end_time)
    }
    #[allow(missing_docs)]
    pub fn last_sched_eval(&self) -> Option<Timestamp> {
        self.opt(Self::LAST_EVAL, self.last_sched_eval)
    }
    #[allow(missing_docs)]
    pub fn mem_per_cpu(&self) -> Option<u64> {
        self.opt(Self::MEM_CPU, self.mem_per_cpu)
    }
    #[allow(missing_docs)]
    pub fn mem_per_node(&self) -> Option<u64> {
        self.opt(Self::MEM_NODE, self.mem_per_node)
    }
    #[allow(missing_docs)]
    pub fn array_job_id(&self) -> Option<u32> {
        self.opt(Self::ARRAY_JOB, self.array_job_id)
    }
    #[allow(missing_docs)]
    pub fn array_task_id(&self) -> Option<u32> {
        self.opt(Self::ARRAY_TASK, self.array_task_id)
    }
    #[allow(missing_docs)]
    pub fn array_max_tasks(&self) -> Option<u32> {
        self.opt(Self::ARRAY_MAX, self.array_max_tasks)
    }
    #[allow(missing_docs)]
    pub fn time_limit(&self) -> TimeLimit {
        if self.flag(Self::UNLIMITED) {
            TimeLimit::Unlimited
        } else {
            TimeLimit::Minutes(self.time_limit)
        }
    }
    /// The nodes, as string-table indexes.
    pub fn nodes(&self) -> &[u32] {
        self.extra.as_deref().map_or(&[], |e| &e.nodes)
    }
    /// The planned nodes, as string-table indexes.
    pub fn sched_nodes(&self) -> &[u32] {
        self.extra.as_deref().map_or(&[], |e| &e.sched_nodes)
    }
    #[allow(missing_docs)]
    pub fn array_task_str(&self) -> Option<&str> {
        self.extra.as_deref()?.array_task_str.as_deref()
    }

    /// This row (an array's pending record) as the row of its task `task`
    /// alone, as `squeue -r` shows it: that task id, no task list, no
    /// `%N` limit.
    pub fn as_task(&self, task: u32) -> PackedRow {
        let mut row = self.clone();
        row.flags &= !Self::ARRAY_MAX;
        row.array_max_tasks = 0;
        row.flags |= Self::ARRAY_TASK;
        row.array_task_id = task;
        if let Some(e) = &mut row.extra {
            e.array_task_str = None;
            if e.nodes.is_empty() && e.sched_nodes.is_empty() {
                row.extra = None;
            }
        }
        row
    }

    /// `row` in this form.
    pub fn pack(row: &JobRow) -> PackedRow {
        let mut p = PackedRow {
            submit_time: row.submit_time,
            eligible_time: row.eligible_time,
            run_time: row.run_time,
            job_id: row.job_id,
            name: row.name,
            user: row.user,
            uid: row.uid,
            group: row.group,
            gid: row.gid,
            account: row.account,
            qos: row.qos,
            partition: row.partition,
            priority: row.priority,
            nice: row.nice,
            num_nodes: row.num_nodes,
            num_cpus: row.num_cpus,
            num_tasks: row.num_tasks,
            cpus_per_task: row.cpus_per_task,
            restarts: row.restarts,
            state: row.state,
            reason: row.reason,
            ..PackedRow::default()
        };
        p.set_flag(Self::COMPLETING, row.completing);
        p.set_flag(Self::CONFIGURING, row.configuring);
        p.set_flag(Self::EXCLUSIVE, row.exclusive);
        p.set_flag(Self::REQUEUE, row.requeue);
        p.start_time = p.put(Self::START, row.start_time);
        p.end_time = p.put(Self::END, row.end_time);
        p.last_sched_eval = p.put(Self::LAST_EVAL, row.last_sched_eval);
        p.mem_per_cpu = p.put(Self::MEM_CPU, row.mem_per_cpu);
        p.mem_per_node = p.put(Self::MEM_NODE, row.mem_per_node);
        p.array_job_id = p.put(Self::ARRAY_JOB, row.array_job_id);
        p.array_task_id = p.put(Self::ARRAY_TASK, row.array_task_id);
        p.array_max_tasks = p.put(Self::ARRAY_MAX, row.array_max_tasks);
        p.set_time_limit(row.time_limit);
        if !row.nodes.is_empty() {
            p.extra_mut().nodes = row.nodes.clone();
        }
        if !row.sched_nodes.is_empty() {
            p.extra_mut().sched_nodes = row.sched_nodes.clone();
        }
        if row.array_task_str.is_some() {
            p.extra_mut().array_task_str = row.array_task_str.clone();
        }
        p
    }

    /// The [`JobRow`] this row packs.
    pub fn unpack(&self) -> JobRow {
        JobRow {
            job_id: self.job_id,
            name: self.name,
            user: self.user,
            uid: self.uid,
            group: self.group,
            gid: self.gid,
            account: self.account,
            qos: self.qos,
            partition: self.partition,
            state: self.state,
            completing: self.completing(),
            configuring: self.configuring(),
            reason: self.reason,
            priority: self.priority,
            nice: self.nice,
            submit_time: self.submit_time,
            eligible_time: self.eligible_time,
            start_time: self.start_time(),
            end_time: self.end_time(),
            run_time: self.run_time,
            time_limit: self.time_limit(),
            nodes: self.nodes().to_vec(),
            num_nodes: self.num_nodes,
            num_cpus: self.num_cpus,
            num_tasks: self.num_tasks,
            cpus_per_task: self.cpus_per_task,
            mem_per_cpu: self.mem_per_cpu(),
            mem_per_node: self.mem_per_node(),
            exclusive: self.exclusive(),
            requeue: self.requeue(),
            restarts: self.restarts,
            last_sched_eval: self.last_sched_eval(),
            sched_nodes: self.sched_nodes().to_vec(),
            array_job_id: self.array_job_id(),
            array_task_id: self.array_task_id(),
            array_task_str: self.array_task_str().map(str::to_string),
            array_max_tasks: self.array_max_tasks(),
        }
    }

    /// The brief `JobInfo` this row stands for (texts from `rows`).
    pub fn to_info(&self, rows: &JobRows) -> JobInfo {
        self.unpack().to_info(rows)
    }
}

// A job row in postcard, written and read by hand: serde's generic code
// (a call per field, each number handed over as a slice) was a quarter of
// the controller's and of squeue's CPU on 100,000 rows. The bytes are
// exactly postcard's for `JobRow` (the tests compare both ways); the
// enums go through postcard itself, once per value in a row of equal
// ones (`EncodeMemo`, `DecodeMemo`).

pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The most bytes a row's fixed-size part can take in postcard: 19
/// numbers of 32 bits (at most 5 bytes each), 8 of 64 (10 bytes), 12
/// option tags and booleans (and CONFIGURING's), two list lengths and the three enums (its
/// variable parts, the node lists and the task list, are added to it by
/// [`encode_row`]).
const ROW_FIXED_MAX: usize = 19 * 5 + 8 * 10 + 12 + 2 * 10 + 3 * EncodeMemo::MAX + 1;

/// Writes postcard into room reserved for it beforehand (a vector's
/// spare capacity): no capacity check or length update per byte, as
/// `Vec::push` does (the encoding helpers were a third of the
/// controller's time on 100,000 rows), only the slice's bounds check.
struct Put<'a> {
    buf: &'a mut [MaybeUninit<u8>],
    at: usize,
}

impl Put<'_> {
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.buf[self.at].write(b);
        self.at += 1;
    }

    #[inline(always)]
    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.byte((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        self.byte(n as u8);
    }

    #[inline(always)]
    fn u32(&mut self, n: u32) {
        self.varint(u64::from(n));
    }

    #[inline(always)]
    fn i64(&mut self, n: i64) {
        self.varint(((n << 1) ^ (n >> 63)) as u64);
    }

    #[inline(always)]
    fn bool(&mut self, b: bool) {
        self.byte(u8::from(b));
    }

    #[inline(always)]
    fn opt_i64(&mut self, v: Option<i64>) {
        match v {
            None => self.byte(0),
            Some(v) => {
                self.byte(1);
                self.i64(v);
            }
        }
    }

    #[inline(always)]
    fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            None => self.byte(0),
            Some(v) => {
                self.byte(1);
                self.varint(v);
            }
        }
    }

    #[inline(always)]
    fn opt_u32(&mut self, v: Option<u32>) {
        self.opt_u64(v.map(u64::from));
    }

    #[inline(always)]
    fn ids(&mut self, ids: &[u32]) {
        self.varint(ids.len() as u64);
        for i in ids {
            self.u32(*i);
        }
    }

    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        for (to, from) in self.buf[self.at..self.at + b.len()].iter_mut().zip(b) {
            to.write(*from);
        }
        self.at += b.len();
    }
}

/// The encoding of the enum values a row encoded last (the sender's
/// side): the rows of one answer mostly repeat their state, reason and
/// time limit, so postcard's serde code runs once per change, not per row.
#[derive(Clone, Debug, Default)]
struct EncodeMemo {
    state: Memo<JobState>,
    reason: Memo<PendingReason>,
    time_limit: Memo<TimeLimit>,
}

/// A cache, not part of the answer: any two are alike.
impl PartialEq for EncodeMemo {
    fn eq(&self, _: &EncodeMemo) -> bool {
        true
    }
}

impl EncodeMemo {
    /// The most bytes one of the memoized enums takes (a variant index
    /// and one number: two varints of at most 5 bytes).
    const MAX: usize = 10;
}

/// One value and its postcard bytes.
#[derive(Clone, Debug, Default)]
struct Memo<T> {
    value: Option<T>,
    bytes: [u8; EncodeMemo::MAX],
    len: u8,
}

impl<T: Copy + PartialEq + Serialize> Memo<T> {
    /// The bytes of `v`.
    #[inline(always)]
    fn encode(&mut self, v: T) -> Result<&[u8], postcard::Error> {
        if self.value != Some(v) {
            let mut bytes = [0u8; EncodeMemo::MAX];
            let len = postcard::to_slice(&v, &mut bytes)?.len();
            self.bytes = bytes;
            self.len = len as u8;
            self.value = Some(v);
        }
        Ok(&self.bytes[..usize::from(self.len)])
    }
}

impl<'de, T: Copy + Deserialize<'de>> Memo<T> {
    /// The value `input` starts with, read past. When `input` starts with
    /// the bytes this memo last read, their value is the same (postcard
    /// reads an enum byte by byte, each step decided by the bytes before):
    /// nothing is decoded again.
    #[inline(always)]
    fn decode(&mut self, input: &mut &'de [u8]) -> Result<T, postcard::Error> {
        let len = usize::from(self.len);
        if let Some(v) = self.value {
            // A byte loop: these are one to three bytes, too few for memcmp.
            if input.len() >= len && input.iter().zip(&self.bytes[..len]).all(|(a, b)| a == b) {
                *input = &input[len..];
                return Ok(v);
            }
        }
        let (v, rest) = postcard::take_from_bytes::<T>(input)?;
        let used = input.len() - rest.len();
        if used <= EncodeMemo::MAX {
            self.bytes[..used].copy_from_slice(&input[..used]);
            self.len = used as u8;
            self.value = Some(v);
        }
        *input = rest;
        Ok(v)
    }
}

/// Appends `row` as `postcard::to_allocvec(row)` writes it.
fn encode_row(
    row: &JobRow,
    out: &mut Vec<u8>,
    memo: &mut EncodeMemo,
) -> Result<(), postcard::Error> {
    // Every field, so a new one cannot be forgotten here.
    let JobRow {
        job_id,
        name,
        user,
        uid,
        group,
        gid,
        account,
        qos,
        partition,
        state,
        completing,
        configuring,
        reason,
        priority,
        nice,
        submit_time,
        eligible_time,
        start_time,
        end_time,
        run_time,
        time_limit,
        nodes,
        num_nodes,
        num_cpus,
        num_tasks,
        cpus_per_task,
        mem_per_cpu,
        mem_per_node,
        exclusive,
        requeue,
        restarts,
        last_sched_eval,
        sched_nodes,
        array_job_id,
        array_task_id,
        array_task_str,
        array_max_tasks,
    } = row;
    let task_str = array_task_str.as_deref().map(str::as_bytes);
    let most = ROW_FIXED_MAX
        + 5 * (nodes.len() + sched_nodes.len())
        + task_str.map_or(0, |s| s.len() + 10);
    out.reserve(most);
    let mut w = Put {
        buf: out.spare_capacity_mut(),
        at: 0,
    };
    for n in [
        job_id.0, *name, *user, *uid, *group, *gid, *account, *qos, *partition,
    ] {
        w.u32(n);
    }
    w.bytes(memo.state.encode(*state)?);
    w.bool(*completing);
    w.bytes(memo.reason.encode(*reason)?);
    w.u32(*priority);
    w.u32(((*nice << 1) ^ (*nice >> 31)) as u32);
    w.i64(*submit_time);
    w.i64(*eligible_time);
    w.opt_i64(*start_time);
    w.opt_i64(*end_time);
    w.varint(*run_time);
    w.bytes(memo.time_limit.encode(*time_limit)?);
    w.ids(nodes);
    for n in [*num_nodes, *num_cpus, *num_tasks, *cpus_per_task] {
        w.u32(n);
    }
    w.opt_u64(*mem_per_cpu);
    w.opt_u64(*mem_per_node);
    w.bool(*exclusive);
    w.bool(*requeue);
    w.u32(*restarts);
    w.opt_i64(*last_sched_eval);
    w.ids(sched_nodes);
    w.opt_u32(*array_job_id);
    w.opt_u32(*array_task_id);
    match task_str {
        None => w.byte(0),
        Some(s) => {
            w.byte(1);
            w.varint(s.len() as u64);
            w.bytes(s);
        }
    }
    w.opt_u32(*array_max_tasks);
    w.bool(*configuring);
    let used = w.at;
    // SAFETY: `Put` wrote the `used` bytes after the vector's length
    // (each write is bounds-checked against the reserved room).
    unsafe { out.set_len(out.len() + used) };
    Ok(())
}

/// Reads postcard's encoding of rows from a byte slice.
struct Reader<'a> {
    input: &'a [u8],
    state: Memo<JobState>,
    reason: Memo<PendingReason>,
    time_limit: Memo<TimeLimit>,
}

impl<'a> Reader<'a> {
    fn new(input: &'a [u8]) -> Reader<'a> {
        Reader {
            input,
            state: Memo::default(),
            reason: Memo::default(),
            time_limit: Memo::default(),
        }
    }

    #[inline(always)]
    fn byte(&mut self) -> Result<u8, postcard::Error> {
        let (b, rest) = self
            .input
            .split_first()
            .ok_or(postcard::Error::DeserializeUnexpectedEnd)?;
        self.input = rest;
        Ok(*b)
    }

    /// A varint whose value fits in `bits` bits (32 or 64), as postcard
    /// reads one: at most 5 or 10 bytes.
    #[inline(always)]
    fn varint(&mut self, bits: u32) -> Result<u64, postcard::Error> {
        // Most numbers of a row are under 128 (one byte) or times (five):
        // those are read here without a bounds check per byte; longer
        // ones, errors and the last bytes of the input by `long_varint`,
        // from the start again.
        let input = self.input;
        if let Some(head) = input.get(..5) {
            let mut n = 0u64;
            for (i, &b) in head.iter().enumerate() {
                n |= u64::from(b & 0x7f) << (7 * i);
                if b < 0x80 {
                    if bits < 64 && n >> bits != 0 {
                        break;
                    }
                    self.input = &input[i + 1..];
                    return Ok(n);
                }
            }
        }
        self.long_varint(bits)
    }

    #[inline(never)]
    fn long_varint(&mut self, bits: u32) -> Result<u64, postcard::Error> {
        let mut n = 0u64;
        for i in 0..bits.div_ceil(7) {
            let b = self.byte()?;
            let part = u64::from(b & 0x7f);
            let shift = 7 * i;
            if shift == 63 && part > 1 {
                return Err(postcard::Error::DeserializeBadVarint);
            }
            n |= part << shift;
            if b & 0x80 == 0 {
                if bits < 64 && n >> bits != 0 {
                    return Err(postcard::Error::DeserializeBadVarint);
                }
                return Ok(n);
            }
        }
        Err(postcard::Error::DeserializeBadVarint)
    }

    #[inline(always)]
    fn u32(&mut self) -> Result<u32, postcard::Error> {
        Ok(self.varint(32)? as u32)
    }

    #[inline(always)]
    fn u64(&mut self) -> Result<u64, postcard::Error> {
        self.varint(64)
    }

    #[inline(always)]
    fn i32(&mut self) -> Result<i32, postcard::Error> {
        let n = self.u32()?;
        Ok((n >> 1) as i32 ^ -((n & 1) as i32))
    }

    #[inline(always)]
    fn i64(&mut self) -> Result<i64, postcard::Error> {
        let n = self.u64()?;
        Ok((n >> 1) as i64 ^ -((n & 1) as i64))
    }

    #[inline(always)]
    fn bool(&mut self) -> Result<bool, postcard::Error> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(postcard::Error::DeserializeBadBool),
        }
    }

    #[inline(always)]
    fn opt<T>(
        &mut self,
        get: fn(&mut Self) -> Result<T, postcard::Error>,
    ) -> Result<Option<T>, postcard::Error> {
        match self.byte()? {
            0 => Ok(None),
            1 => get(self).map(Some),
            _ => Err(postcard::Error::DeserializeBadOption),
        }
    }

    fn len(&mut self) -> Result<usize, postcard::Error> {
        let n = self.u64()?;
        // Every element takes at least a byte.
        if n > self.input.len() as u64 {
            return Err(postcard::Error::DeserializeUnexpectedEnd);
        }
        Ok(n as usize)
    }

    #[inline(always)]
    fn ids(&mut self) -> Result<Vec<u32>, postcard::Error> {
        // An empty list (most rows) is one zero byte.
        if let Some((0, rest)) = self.input.split_first() {
            self.input = rest;
            return Ok(Vec::new());
        }
        self.some_ids()
    }

    #[inline(never)]
    fn some_ids(&mut self) -> Result<Vec<u32>, postcard::Error> {
        let n = self.len()?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.u32()?);
        }
        Ok(v)
    }

    fn string(&mut self) -> Result<String, postcard::Error> {
        let n = self.len()?;
        let (s, rest) = self.input.split_at(n);
        self.input = rest;
        std::str::from_utf8(s)
            .map(str::to_string)
            .map_err(|_| postcard::Error::DeserializeBadUtf8)
    }

    /// The next row, in the receiver's form, written into `p`
    /// (`PackedRow::default()`).
    #[inline(always)]
    fn row_into(&mut self, p: &mut PackedRow) -> Result<(), postcard::Error> {
        type R = PackedRow;
        p.job_id = JobId(self.u32()?);
        p.name = self.u32()?;
        p.user = self.u32()?;
        p.uid = self.u32()?;
        p.group = self.u32()?;
        p.gid = self.u32()?;
        p.account = self.u32()?;
        p.qos = self.u32()?;
        p.partition = self.u32()?;
        p.state = self.state.decode(&mut self.input)?;
        let completing = self.bool()?;
        p.set_flag(R::COMPLETING, completing);
        p.reason = self.reason.decode(&mut self.input)?;
        p.priority = self.u32()?;
        p.nice = self.i32()?;
        p.submit_time = self.i64()?;
        p.eligible_time = self.i64()?;
        let start = self.opt(Self::i64)?;
        p.start_time = p.put(R::START, start);
        let end = self.opt(Self::i64)?;
        p.end_time = p.put(R::END, end);
        p.run_time = self.u64()?;
        let limit = self.time_limit.decode(&mut self.input)?;
        p.set_time_limit(limit);
        let nodes = self.ids()?;
        if !nodes.is_empty() {
            p.extra_mut().nodes = nodes;
        }
        p.num_nodes = self.u32()?;
        p.num_cpus = self.u32()?;
        p.num_tasks = self.u32()?;
        p.cpus_per_task = self.u32()?;
        let mem = self.opt(Self::u64)?;
        p.mem_per_cpu = p.put(R::MEM_CPU, mem);
        let mem = self.opt(Self::u64)?;
        p.mem_per_node = p.put(R::MEM_NODE, mem);
        let exclusive = self.bool()?;
        p.set_flag(R::EXCLUSIVE, exclusive);
        let requeue = self.bool()?;
        p.set_flag(R::REQUEUE, requeue);
        p.restarts = self.u32()?;
        let eval = self.opt(Self::i64)?;
        p.last_sched_eval = p.put(R::LAST_EVAL, eval);
        let sched = self.ids()?;
        if !sched.is_empty() {
            p.extra_mut().sched_nodes = sched;
        }
        let id = self.opt(Self::u32)?;
        p.array_job_id = p.put(R::ARRAY_JOB, id);
        let id = self.opt(Self::u32)?;
        p.array_task_id = p.put(R::ARRAY_TASK, id);
        let tasks = self.opt(Self::string)?;
        if tasks.is_some() {
            p.extra_mut().array_task_str = tasks;
        }
        let max = self.opt(Self::u32)?;
        p.array_max_tasks = p.put(R::ARRAY_MAX, max);
        let configuring = self.bool()?;
        p.set_flag(R::CONFIGURING, configuring);
        Ok(())
    }

    #[cfg(test)]
    fn row(&mut self) -> Result<JobRow, postcard::Error> {
        let mut p = PackedRow::default();
        self.row_into(&mut p)?;
        Ok(p.unpack())
    }
}

/// A chunk's rows from its bytes (`postcard::from_bytes::<Vec<JobRow>>`'s
/// result, packed, with trailing bytes refused).
fn decode_chunk(bytes: &[u8]) -> Result<Vec<PackedRow>, postcard::Error> {
    let mut r = Reader::new(bytes);
    let n = r.len()?;
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        // Each row is written where it will stay.
        rows.push(PackedRow::default());
        let last = rows.last_mut().expect("just pushed");
        r.row_into(last)?;
    }
    if !r.input.is_empty() {
        return Err(postcard::Error::DeserializeBadEncoding);
    }
    Ok(rows)
}

/// Asks the CPU to bring `value`'s cache lines in (a hint: nothing is
/// read that the program sees, and a prefetch never faults). The
/// controller's walk over boxed jobs and squeue's formatting of rows in
/// sorted order both read memory far from the last read.
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = (value as *const T).cast::<i8>();
        let mut offset = 0;
        while offset < std::mem::size_of::<T>() {
            // SAFETY: `_mm_prefetch` is unsafe only for its target
            // feature, SSE, which every x86_64 CPU has; the address stays
            // within `value`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u32, name: u32) -> JobRow {
        JobRow {
            job_id: JobId(id),
            name,
            nodes: vec![name, 0],
            start_time: Some(i64::from(id) * 1000),
            array_task_str: id.is_multiple_of(3).then(|| format!("{id}-{}", id + 2)),
            ..JobRow::default()
        }
    }

    /// Rows with every field set in turn, numbers around varint
    /// boundaries and at their ends, every state, some reasons.
    fn varied_rows() -> Vec<JobRow> {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let edges = [0u64, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX];
        let mut pick = move || {
            let r = next();
            match r % 4 {
                0 => edges[(r >> 8) as usize % edges.len()],
                1 => r >> (r % 64),
                _ => r % 300,
            }
        };
        let reasons = [
            PendingReason::None,
            PendingReason::JobHeldUser,
            PendingReason::Limit(model::LimitReason::ALL[0]),
            PendingReason::Limit(*model::LimitReason::ALL.last().unwrap()),
        ];
        let mut rows = Vec::new();
        for i in 0..3000usize {
            let mut p = || pick();
            let some = i % 2 == 1;
            rows.push(JobRow {
                job_id: JobId(p() as u32),
                name: p() as u32,
                user: p() as u32,
                uid: p() as u32,
                group: p() as u32,
                gid: p() as u32,
                account: p() as u32,
                qos: p() as u32,
                partition: p() as u32,
                state: model::ALL_JOB_STATES[i % model::ALL_JOB_STATES.len()],
                completing: i % 3 == 0,
                configuring: i % 5 == 1,
                reason: reasons[i % reasons.len()],
                priority: p() as u32,
                nice: p() as i32,
                submit_time: p() as i64,
                eligible_time: -(p() as i64),
                start_time: some.then(|| p() as i64),
                end_time: some.then(|| i64::MIN.wrapping_add(p() as i64)),
                run_time: p(),
                time_limit: if i % 5 == 0 {
                    TimeLimit::Unlimited
                } else {
                    TimeLimit::Minutes(p() as u32)
                },
                nodes: (0..p() % 5).map(|_| p() as u32).collect(),
                num_nodes: p() as u32,
                num_cpus: p() as u32,
                num_tasks: p() as u32,
                cpus_per_task: p() as u32,
                mem_per_cpu: some.then(&mut p),
                mem_per_node: (i % 4 == 0).then(&mut p),
                exclusive: some,
                requeue: i % 3 == 1,
                restarts: p() as u32,
                last_sched_eval: (i % 3 == 2).then(|| p() as i64),
                sched_nodes: (0..p() % 3).map(|_| p() as u32).collect(),
                array_job_id: some.then(|| p() as u32),
                array_task_id: (i % 4 == 1).then(|| p() as u32),
                array_task_str: some.then(|| format!("{}-{}%é{}", p(), p(), "x".repeat(i % 200))),
                array_max_tasks: (i % 4 == 3).then(|| p() as u32),
            });
        }
        rows
    }

    #[test]
    fn hand_written_rows_are_postcards_bytes() {
        let rows = varied_rows();
        // One memo on each side for all rows, as for a chunk: each row
        // twice, so enums repeat as well as change.
        let mut memo = EncodeMemo::default();
        let mut all = Vec::new();
        let mut rest = Vec::new();
        for r in rows.iter().flat_map(|r| [r, r]) {
            let want = postcard::to_allocvec(r).unwrap();
            let mut bytes = vec![7u8];
            encode_row(r, &mut bytes, &mut memo).unwrap();
            assert_eq!(bytes[1..], want[..], "{r:?}");
            all.extend_from_slice(&want);
            rest.push(r.clone());
        }
        let mut reader = Reader::new(&all);
        for r in &rest {
            assert_eq!(&reader.row().unwrap(), r);
        }
        assert!(reader.input.is_empty());
        let bytes = postcard::to_allocvec(&rows).unwrap();
        let packed: Vec<PackedRow> = rows.iter().map(PackedRow::pack).collect();
        assert_eq!(decode_chunk(&bytes).unwrap(), packed);
        // Cut short anywhere, or with a byte too many: an error, never rows.
        let few = postcard::to_allocvec(&rows[..40]).unwrap();
        for cut in 0..few.len() {
            assert!(decode_chunk(&few[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(decode_chunk(&long).is_err());
    }

    #[test]
    fn the_largest_row_fits_the_room_reserved_for_it() {
        let most = JobRow {
            job_id: JobId(u32::MAX),
            name: u32::MAX,
            user: u32::MAX,
            uid: u32::MAX,
            group: u32::MAX,
            gid: u32::MAX,
            account: u32::MAX,
            qos: u32::MAX,
            partition: u32::MAX,
            state: JobState::Requeued,
            completing: true,
            configuring: false,
            reason: PendingReason::Limit(*model::LimitReason::ALL.last().unwrap()),
            priority: u32::MAX,
            nice: i32::MIN,
            submit_time: i64::MIN,
            eligible_time: i64::MIN,
            start_time: Some(i64::MIN),
            end_time: Some(i64::MIN),
            run_time: u64::MAX,
            time_limit: TimeLimit::Minutes(u32::MAX),
            nodes: Vec::new(),
            num_nodes: u32::MAX,
            num_cpus: u32::MAX,
            num_tasks: u32::MAX,
            cpus_per_task: u32::MAX,
            mem_per_cpu: Some(u64::MAX),
            mem_per_node: Some(u64::MAX),
            exclusive: true,
            requeue: true,
            restarts: u32::MAX,
            last_sched_eval: Some(i64::MIN),
            sched_nodes: Vec::new(),
            array_job_id: Some(u32::MAX),
            array_task_id: Some(u32::MAX),
            array_task_str: None,
            array_max_tasks: Some(u32::MAX),
        };
        let bytes = postcard::to_allocvec(&most).unwrap();
        assert!(bytes.len() <= ROW_FIXED_MAX, "{} bytes", bytes.len());
        let mut out = Vec::new();
        encode_row(&most, &mut out, &mut EncodeMemo::default()).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn packed_rows_keep_every_field() {
        for r in varied_rows() {
            let p = PackedRow::pack(&r);
            assert_eq!(p.unpack(), r);
            // squeue -r: one task of an array's pending record.
            let mut task = r.clone();
            task.array_task_id = Some(7);
            task.array_task_str = None;
            task.array_max_tasks = None;
            assert_eq!(p.as_task(7), PackedRow::pack(&task));
        }
        assert_eq!(PackedRow::pack(&JobRow::default()), PackedRow::default());
        assert!(std::mem::size_of::<PackedRow>() <= 160);
    }

    #[test]
    fn memoized_enums_read_as_postcard_reads_them() {
        // Bytes that start like the value read before but go on
        // differently are read afresh.
        let mut m = Memo::<PendingReason>::default();
        let a = postcard::to_allocvec(&PendingReason::RaisedSignal(9)).unwrap();
        let b = postcard::to_allocvec(&PendingReason::RaisedSignal(15)).unwrap();
        let c = postcard::to_allocvec(&PendingReason::Priority).unwrap();
        for (bytes, want) in [
            (&a, PendingReason::RaisedSignal(9)),
            (&a, PendingReason::RaisedSignal(9)),
            (&b, PendingReason::RaisedSignal(15)),
            (&c, PendingReason::Priority),
            (&a, PendingReason::RaisedSignal(9)),
        ] {
            let mut input = &bytes[..];
            assert_eq!(m.decode(&mut input).unwrap(), want);
            assert!(input.is_empty());
        }
        // Cut short after a memoized value: an error.
        let mut input = &a[..1];
        assert!(m.decode(&mut input).is_err());
    }

    #[test]
    fn hand_written_varints_refuse_what_postcard_refuses() {
        let cases: &[&[u8]] = &[
            &[0x80, 0x80, 0x80, 0x80, 0x10],       // 2^32: too big for a u32
            &[0xff, 0xff, 0xff, 0xff, 0x0f],       // u32::MAX
            &[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], // six bytes
        ];
        for c in cases {
            let want = postcard::from_bytes::<u32>(c).ok();
            assert_eq!(Reader::new(c).u32().ok(), want, "{c:?}");
        }
        let cases: &[&[u8]] = &[
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // u64::MAX
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], // 2^64
            &[
                0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
            ],
        ];
        for c in cases {
            let want = postcard::from_bytes::<u64>(c).ok();
            assert_eq!(Reader::new(c).u64().ok(), want, "{c:?}");
        }
    }

    #[test]
    fn chunks_of_any_size_travel_behind_their_count() {
        for n in [0usize, 1, 127, 128, 129, 2047, JobRows::CHUNK] {
            let mut rows = JobRows::new(1);
            let mut pushed = JobRows::new(1);
            for r in varied_rows().into_iter().take(n) {
                rows.push_encoded(&r).unwrap();
                pushed.push(r);
            }
            assert_eq!(rows.decoded().unwrap(), pushed, "{n} rows");
        }
    }

    #[test]
    fn encoded_rows_decode_as_pushed_ones() {
        // More than two chunks, so chunk boundaries are crossed.
        let n = JobRows::CHUNK * 2 + 7;
        let mut pushed = JobRows::new(5);
        let mut encoded = JobRows::new(5);
        for i in 0..n as u32 {
            pushed.push(row(i, i % 4));
            encoded.push_encoded(&row(i, i % 4)).unwrap();
        }
        assert_eq!(
            encoded.len(),
            0,
            "encoded rows are not seen before decoding"
        );
        let back = encoded.decoded().unwrap();
        assert_eq!(back.len(), n);
        assert_eq!(back, pushed.decoded().unwrap());
        assert_eq!(back, pushed);
        assert!(back.chunks.iter().all(|c| c.len() <= JobRows::CHUNK));
    }

    #[test]
    fn rows_survive_a_self_describing_format() {
        let mut rows = JobRows::new(9);
        rows.strings.push("debug".into());
        rows.push(row(1, 1));
        rows.push_encoded(&row(2, 1)).unwrap();
        let text = serde_json::to_string(&rows).unwrap();
        let back: JobRows = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back.rows().map(PackedRow::unpack).collect::<Vec<_>>(),
            vec![row(1, 1), row(2, 1)]
        );
        assert_eq!(back.strings, rows.strings);
    }

    #[test]
    fn texts_taken_in_parts_continue_the_table() {
        let texts = ["a", "b", "a", "c", "b", "d"];
        let mut whole = Interner::new();
        let mut parts = Interner::new();
        let mut table = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(whole.intern(t), parts.intern(t), "{t}");
            assert_eq!(
                whole.intern_owned(format!("{t}!")),
                parts.intern_owned(format!("{t}!"))
            );
            if i % 2 == 1 {
                table.extend(parts.take_new());
            }
        }
        table.extend(parts.take_new());
        assert!(parts.take_new().is_empty());
        assert_eq!(table, whole.into_strings());
    }

    #[test]
    fn interning_by_address_keeps_texts_apart() {
        let texts = ["a".to_string(), "b".to_string(), "a".to_string()];
        let mut i = Interner::new();
        let ids: Vec<u32> = (0..3)
            .flat_map(|_| texts.iter().map(|t| i.intern(t)).collect::<Vec<_>>())
            .collect();
        assert_eq!(ids, vec![1, 2, 1, 1, 2, 1, 1, 2, 1]);
        // A prefix at the same address is another text.
        assert_eq!(i.intern(&texts[0][..0]), 0);
        assert_eq!(i.into_strings(), vec!["", "a", "b"]);
    }
}
