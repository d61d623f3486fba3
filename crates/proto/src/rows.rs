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

/// Up to [`JobRows::CHUNK`] rows in postcard, without the count.
#[derive(Clone, Debug, Default, PartialEq)]
struct EncodedChunk {
    rows: u32,
    bytes: Vec<u8>,
}

/// A chunk as it travels: its row count (a postcard varint) and rows.
fn chunk_bytes(rows: usize, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    let mut n = rows as u32;
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(body);
    out
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
            seq.serialize_element(&WireBytes(&chunk_bytes(c.rows as usize, &c.bytes)))?;
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
                postcard::from_bytes(v).map(DecodedChunk).map_err(E::custom)
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
    strings: Vec<String>,
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
                let i = self.strings.len() as u32;
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
                self.encoded.push(EncodedChunk {
                    rows: 0,
                    bytes: Vec::with_capacity(Self::CHUNK * 48),
                });
                self.encoded.last_mut().expect("just pushed")
            }
        };
        postcard::serialize_with_flavor(row, Append(&mut chunk.bytes))?;
        chunk.rows += 1;
        Ok(())
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
