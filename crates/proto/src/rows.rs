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
    /// [`JobRows::CHUNK`]: a decoder allocates each chunk whole (serde
    /// allocates at most 1 MiB ahead of a sequence's announced length, so
    /// one long sequence is grown and copied again and again).
    pub chunks: Vec<Vec<JobRow>>,
    /// Rows already encoded, sent after those of `chunks` (the sender's
    /// side only: see [`JobRows::push_encoded`]).
    encoded: Vec<EncodedChunk>,
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

/// Appends postcard's output to a `Vec<u8>` a byte at a time where it
/// hands over a few: postcard writes every number as a slice of 1 to 10
/// bytes, and `extend_from_slice` turns each into a `memcpy` call, which
/// cost the controller more than the encoding itself on 100,000 rows. The
/// bytes are the same as `postcard::to_extend`'s.
struct Append<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for Append<'_> {
    type Output = ();

    #[inline]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        if data.len() <= 16 {
            for &b in data {
                self.0.push(b);
            }
        } else {
            self.0.extend_from_slice(data);
        }
        Ok(())
    }

    #[inline]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

struct WireChunks<'a>(&'a JobRows);

struct WireBytes<'a>(&'a [u8]);

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
            let bytes = postcard::to_allocvec(c).map_err(S::Error::custom)?;
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
struct DecodedChunk(Vec<JobRow>);

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
        encode_row(row, &mut chunk.bytes)?;
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

// A job row in postcard, written and read by hand: serde's generic code
// (a call per field, each number handed over as a slice) was a quarter of
// the controller's and of squeue's CPU on 100,000 rows. The bytes are
// exactly postcard's for `JobRow` (the tests compare both ways); the
// enums go through postcard itself.

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_u32(out: &mut Vec<u8>, n: u32) {
    put_varint(out, u64::from(n));
}

fn put_i64(out: &mut Vec<u8>, n: i64) {
    put_varint(out, ((n << 1) ^ (n >> 63)) as u64);
}

fn put_bool(out: &mut Vec<u8>, b: bool) {
    out.push(u8::from(b));
}

fn put_opt<T: Copy>(out: &mut Vec<u8>, v: Option<T>, put: fn(&mut Vec<u8>, T)) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put(out, v);
        }
    }
}

fn put_ids(out: &mut Vec<u8>, ids: &[u32]) {
    put_varint(out, ids.len() as u64);
    for i in ids {
        put_u32(out, *i);
    }
}

fn put_serde<T: Serialize>(out: &mut Vec<u8>, v: &T) -> Result<(), postcard::Error> {
    postcard::serialize_with_flavor(v, Append(out))
}

/// Appends `row` as `postcard::to_allocvec(row)` writes it.
fn encode_row(row: &JobRow, out: &mut Vec<u8>) -> Result<(), postcard::Error> {
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
    for n in [
        job_id.0, *name, *user, *uid, *group, *gid, *account, *qos, *partition,
    ] {
        put_u32(out, n);
    }
    put_serde(out, state)?;
    put_bool(out, *completing);
    put_serde(out, reason)?;
    put_u32(out, *priority);
    put_varint(out, u64::from(((*nice << 1) ^ (*nice >> 31)) as u32));
    put_i64(out, *submit_time);
    put_i64(out, *eligible_time);
    put_opt(out, *start_time, put_i64);
    put_opt(out, *end_time, put_i64);
    put_varint(out, *run_time);
    put_serde(out, time_limit)?;
    put_ids(out, nodes);
    for n in [*num_nodes, *num_cpus, *num_tasks, *cpus_per_task] {
        put_u32(out, n);
    }
    put_opt(out, *mem_per_cpu, put_varint);
    put_opt(out, *mem_per_node, put_varint);
    put_bool(out, *exclusive);
    put_bool(out, *requeue);
    put_u32(out, *restarts);
    put_opt(out, *last_sched_eval, put_i64);
    put_ids(out, sched_nodes);
    put_opt(out, *array_job_id, put_u32);
    put_opt(out, *array_task_id, put_u32);
    match array_task_str {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
    }
    put_opt(out, *array_max_tasks, put_u32);
    Ok(())
}

/// Reads postcard's encoding of rows from a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, postcard::Error> {
        let (b, rest) = self
            .0
            .split_first()
            .ok_or(postcard::Error::DeserializeUnexpectedEnd)?;
        self.0 = rest;
        Ok(*b)
    }

    /// A varint whose value fits in `bits` bits (32 or 64), as postcard
    /// reads one: at most 5 or 10 bytes.
    fn varint(&mut self, bits: u32) -> Result<u64, postcard::Error> {
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

    fn u32(&mut self) -> Result<u32, postcard::Error> {
        Ok(self.varint(32)? as u32)
    }

    fn u64(&mut self) -> Result<u64, postcard::Error> {
        self.varint(64)
    }

    fn i32(&mut self) -> Result<i32, postcard::Error> {
        let n = self.u32()?;
        Ok((n >> 1) as i32 ^ -((n & 1) as i32))
    }

    fn i64(&mut self) -> Result<i64, postcard::Error> {
        let n = self.u64()?;
        Ok((n >> 1) as i64 ^ -((n & 1) as i64))
    }

    fn bool(&mut self) -> Result<bool, postcard::Error> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(postcard::Error::DeserializeBadBool),
        }
    }

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
        if n > self.0.len() as u64 {
            return Err(postcard::Error::DeserializeUnexpectedEnd);
        }
        Ok(n as usize)
    }

    fn ids(&mut self) -> Result<Vec<u32>, postcard::Error> {
        let n = self.len()?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.u32()?);
        }
        Ok(v)
    }

    fn string(&mut self) -> Result<String, postcard::Error> {
        let n = self.len()?;
        let (s, rest) = self.0.split_at(n);
        self.0 = rest;
        std::str::from_utf8(s)
            .map(str::to_string)
            .map_err(|_| postcard::Error::DeserializeBadUtf8)
    }

    fn serde<T: Deserialize<'a>>(&mut self) -> Result<T, postcard::Error> {
        let (v, rest) = postcard::take_from_bytes(self.0)?;
        self.0 = rest;
        Ok(v)
    }

    fn row(&mut self) -> Result<JobRow, postcard::Error> {
        Ok(JobRow {
            job_id: JobId(self.u32()?),
            name: self.u32()?,
            user: self.u32()?,
            uid: self.u32()?,
            group: self.u32()?,
            gid: self.u32()?,
            account: self.u32()?,
            qos: self.u32()?,
            partition: self.u32()?,
            state: self.serde()?,
            completing: self.bool()?,
            reason: self.serde()?,
            priority: self.u32()?,
            nice: self.i32()?,
            submit_time: self.i64()?,
            eligible_time: self.i64()?,
            start_time: self.opt(Self::i64)?,
            end_time: self.opt(Self::i64)?,
            run_time: self.u64()?,
            time_limit: self.serde()?,
            nodes: self.ids()?,
            num_nodes: self.u32()?,
            num_cpus: self.u32()?,
            num_tasks: self.u32()?,
            cpus_per_task: self.u32()?,
            mem_per_cpu: self.opt(Self::u64)?,
            mem_per_node: self.opt(Self::u64)?,
            exclusive: self.bool()?,
            requeue: self.bool()?,
            restarts: self.u32()?,
            last_sched_eval: self.opt(Self::i64)?,
            sched_nodes: self.ids()?,
            array_job_id: self.opt(Self::u32)?,
            array_task_id: self.opt(Self::u32)?,
            array_task_str: self.opt(Self::string)?,
            array_max_tasks: self.opt(Self::u32)?,
        })
    }
}

/// A chunk's rows from its bytes (`postcard::from_bytes::<Vec<JobRow>>`'s
/// result, with trailing bytes refused).
fn decode_chunk(bytes: &[u8]) -> Result<Vec<JobRow>, postcard::Error> {
    let mut r = Reader(bytes);
    let n = r.len()?;
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        rows.push(r.row()?);
    }
    if !r.0.is_empty() {
        return Err(postcard::Error::DeserializeBadEncoding);
    }
    Ok(rows)
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

    #[test]
    fn appended_rows_are_postcards_bytes() {
        let mut rows = vec![JobRow::default(), row(7, 3)];
        rows.push(JobRow {
            job_id: JobId(u32::MAX),
            priority: u32::MAX,
            nice: i32::MIN,
            submit_time: i64::MIN,
            run_time: u64::MAX,
            mem_per_cpu: Some(u64::MAX),
            nodes: (0..40).collect(),
            array_task_str: Some("1-1000:3%4,2000-3000,4000-5000:7".repeat(3)),
            ..row(u32::MAX - 1, 1)
        });
        for r in &rows {
            let mut bytes = vec![9u8];
            postcard::serialize_with_flavor(r, Append(&mut bytes)).unwrap();
            let mut want = vec![9u8];
            want.extend(postcard::to_allocvec(r).unwrap());
            assert_eq!(bytes, want, "{r:?}");
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
        for r in varied_rows() {
            let want = postcard::to_allocvec(&r).unwrap();
            let mut bytes = vec![7u8];
            encode_row(&r, &mut bytes).unwrap();
            assert_eq!(bytes[1..], want[..], "{r:?}");
            let mut reader = Reader(&want);
            assert_eq!(reader.row().unwrap(), r);
            assert!(reader.0.is_empty());
        }
        let rows = varied_rows();
        let bytes = postcard::to_allocvec(&rows).unwrap();
        assert_eq!(decode_chunk(&bytes).unwrap(), rows);
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
    fn hand_written_varints_refuse_what_postcard_refuses() {
        let cases: &[&[u8]] = &[
            &[0x80, 0x80, 0x80, 0x80, 0x10],       // 2^32: too big for a u32
            &[0xff, 0xff, 0xff, 0xff, 0x0f],       // u32::MAX
            &[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], // six bytes
        ];
        for c in cases {
            let want = postcard::from_bytes::<u32>(c).ok();
            assert_eq!(Reader(c).u32().ok(), want, "{c:?}");
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
            assert_eq!(Reader(c).u64().ok(), want, "{c:?}");
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
            back.rows().cloned().collect::<Vec<_>>(),
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
