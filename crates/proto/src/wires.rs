//! Every job of a listing as its own postcard bytes (`JobFilter::wire`):
//! what a receiver that keeps each job's rendering between listings
//! (restd's job cache) asks for, so it can tell an unchanged job by
//! comparing bytes and decode only the jobs that changed.
//!
//! On the wire: the controller's time, then one byte string holding, per
//! job, its length as a postcard varint and its [`JobInfo`] in postcard.
//! The sender encodes each `JobInfo` as it is built ([`JobWires::push`]),
//! so no job table is ever held whole; the receiver walks the jobs
//! without decoding them ([`JobWires::iter`]). With `JobFilter::stream`
//! the answer comes in parts of about [`JobWires::PART_BYTES`]
//! (`CtldResponse::JobWiresPart`, then the last as `JobWires`), sent while
//! the rest is built; the receiver keeps each part's bytes as they came
//! ([`JobWires::append`] copies nothing).

use crate::rows::{put_varint, WireBytes};
use crate::{JobInfo, JobList};
use model::Timestamp;
use serde::{Deserialize, Serialize};

/// An answer to `QueryJobs` with `wire` set. Sent in rpc's positional
/// binary form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobWires {
    /// The controller's time when it answered.
    pub now: Timestamp,
    /// How many jobs `pieces` hold.
    count: usize,
    /// The jobs in pieces (one per part received), each with the number
    /// of jobs it holds: per job, its length (varint), then its `JobInfo`
    /// in postcard.
    pieces: Vec<(usize, Vec<u8>)>,
}

/// The bytes kept for a job's length before it is encoded.
const ROOM: usize = 2;

/// One job of a [`JobWires`], still encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobWire<'a> {
    /// Its id (the first field of its `JobInfo`).
    pub job_id: u32,
    /// Its `JobInfo` in postcard.
    pub bytes: &'a [u8],
}

impl JobWire<'_> {
    /// The job, decoded.
    pub fn decode(&self) -> Result<JobInfo, postcard::Error> {
        postcard::from_bytes(self.bytes)
    }
}

impl JobWires {
    /// An answer with no jobs yet.
    pub fn new(now: Timestamp) -> JobWires {
        JobWires {
            now,
            count: 0,
            pieces: Vec::new(),
        }
    }

    /// The bytes after which a streamed answer sends a part.
    pub const PART_BYTES: usize = 1 << 20;

    /// Appends `job`. `expected` jobs in all: the first job's size sizes
    /// the buffer for all of them, so it is not grown (and copied) again
    /// and again.
    pub fn push(&mut self, job: &JobInfo, expected: usize) -> Result<(), postcard::Error> {
        if self.pieces.is_empty() {
            self.pieces.push((0, Vec::new()));
        }
        let Some((count, bytes)) = self.pieces.last_mut() else {
            unreachable!("a piece was just added")
        };
        let start = bytes.len();
        // Room for the length: two varint bytes, what a job of 128 bytes
        // to 16 KiB takes, so the encoding is seldom moved after.
        bytes.extend_from_slice(&[0; ROOM]);
        *bytes = postcard::to_extend(job, std::mem::take(bytes))?;
        let len = bytes.len() - start - ROOM;
        let mut head = Vec::with_capacity(5);
        put_varint(&mut head, len as u64);
        if head.len() <= ROOM {
            let at = start + ROOM - head.len();
            bytes[at..start + ROOM].copy_from_slice(&head);
            bytes.drain(start..at);
        } else {
            bytes.splice(start..start + ROOM, head.iter().copied());
        }
        *count += 1;
        if *count == 1 && expected > 1 {
            let each = bytes.len() - start;
            let room = (each * (expected - 1) * 9 / 8).min(Self::PART_BYTES * 9 / 8);
            bytes.reserve(room);
        }
        self.count += 1;
        Ok(())
    }

    /// The jobs pushed so far, as a part of a streamed answer, once they
    /// hold [`JobWires::PART_BYTES`]; this answer goes on empty.
    pub fn take_full_part(&mut self) -> Option<JobWires> {
        match self.pieces.last() {
            Some((_, bytes)) if bytes.len() >= Self::PART_BYTES => {
                let part = JobWires {
                    now: self.now,
                    count: self.count,
                    pieces: std::mem::take(&mut self.pieces),
                };
                self.count = 0;
                Some(part)
            }
            _ => None,
        }
    }

    /// `part`'s jobs after these (a streamed answer put together), its
    /// bytes kept as they are.
    pub fn append(&mut self, part: JobWires) {
        self.now = part.now;
        self.count += part.count;
        self.pieces.extend(part.pieces);
    }

    /// How many jobs it holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds no job.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The jobs, in order, still encoded. A malformed answer ends early
    /// (the rest is not a job).
    pub fn iter(&self) -> impl Iterator<Item = JobWire<'_>> + '_ {
        self.pieces.iter().flat_map(|(_, bytes)| walk(bytes))
    }

    /// The jobs, decoded.
    pub fn decode(&self) -> Result<JobList, postcard::Error> {
        let jobs = self
            .iter()
            .map(|w| w.decode())
            .collect::<Result<Vec<_>, _>>()?;
        if jobs.len() != self.count {
            return Err(postcard::Error::DeserializeUnexpectedEnd);
        }
        Ok(JobList {
            now: self.now,
            jobs,
        })
    }

    /// A listing in this form (from a controller that answered a whole
    /// [`JobList`]).
    pub fn from_list(list: &JobList) -> Result<JobWires, postcard::Error> {
        let mut w = JobWires::new(list.now);
        for j in &list.jobs {
            w.push(j, list.jobs.len())?;
        }
        Ok(w)
    }
}

/// The jobs of one piece; a malformed one ends early.
fn walk(mut rest: &[u8]) -> impl Iterator<Item = JobWire<'_>> + '_ {
    std::iter::from_fn(move || {
        let (len, after) = take_varint(rest)?;
        let len = usize::try_from(len).ok()?;
        if after.len() < len {
            return None;
        }
        let (bytes, next) = after.split_at(len);
        let (job_id, _) = take_varint(bytes)?;
        rest = next;
        Some(JobWire {
            job_id: u32::try_from(job_id).ok()?,
            bytes,
        })
    })
}

/// A postcard varint at the start of `b`, and what follows it.
fn take_varint(b: &[u8]) -> Option<(u64, &[u8])> {
    let mut n: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        n |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((n, &b[i + 1..]));
        }
    }
    None
}

impl Serialize for JobWires {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("JobWires", 3)?;
        st.serialize_field("now", &self.now)?;
        st.serialize_field("count", &(self.count as u64))?;
        match &self.pieces[..] {
            [] => st.serialize_field("bytes", &WireBytes(&[]))?,
            [(_, one)] => st.serialize_field("bytes", &WireBytes(one))?,
            // Only a receiver holds several pieces; sent on, they are one.
            many => {
                let all: Vec<u8> = many.iter().flat_map(|(_, b)| b.iter().copied()).collect();
                st.serialize_field("bytes", &WireBytes(&all))?;
            }
        }
        st.end()
    }
}

/// The bytes read back.
struct ReadBytes(Vec<u8>);

impl<'de> Deserialize<'de> for ReadBytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ReadBytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("jobs as bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<ReadBytes, E> {
                Ok(ReadBytes(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<ReadBytes, E> {
                Ok(ReadBytes(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ReadBytes, A::Error> {
                // Bytes as a self-describing format writes them (JSON: numbers).
                let mut v = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    v.push(b);
                }
                Ok(ReadBytes(v))
            }
        }
        d.deserialize_byte_buf(V)
    }
}

impl<'de> Deserialize<'de> for JobWires {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename = "JobWires")]
        struct Wire {
            now: Timestamp,
            count: u64,
            bytes: ReadBytes,
        }
        let w = Wire::deserialize(d)?;
        let count = usize::try_from(w.count).map_err(serde::de::Error::custom)?;
        Ok(JobWires {
            now: w.now,
            count,
            pieces: vec![(count, w.bytes.0)],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CtldResponse;

    fn job(id: u32, name: &str) -> JobInfo {
        JobInfo {
            job_id: model::JobId(id),
            name: name.to_string(),
            user: "alice".into(),
            ..JobInfo::default()
        }
    }

    #[test]
    fn jobs_come_back_as_they_went_and_each_one_alone() {
        let list = JobList {
            now: 1_700_000_000,
            jobs: (1..=300)
                .map(|i| job(i * 1000, &"x".repeat(i as usize)))
                .chain([job(7, &"y".repeat(20_000)), job(8, "")])
                .collect(),
        };
        let wires = JobWires::from_list(&list).unwrap();
        assert_eq!(wires.len(), 302);
        for (w, j) in wires.iter().zip(&list.jobs) {
            assert_eq!(w.job_id, j.job_id.0);
            assert_eq!(w.bytes, postcard::to_allocvec(j).unwrap().as_slice());
        }
        let resp = CtldResponse::JobWires(wires.clone());
        let back: CtldResponse =
            postcard::from_bytes(&postcard::to_allocvec(&resp).unwrap()).unwrap();
        let CtldResponse::JobWires(back) = back else {
            panic!("{back:?}")
        };
        assert_eq!(back, wires);
        assert_eq!(back.decode().unwrap(), list);
        let json: CtldResponse =
            serde_json::from_str(&serde_json::to_string(&resp).unwrap()).unwrap();
        let CtldResponse::JobWires(json) = json else {
            panic!("{json:?}")
        };
        assert_eq!(json, wires);
    }

    #[test]
    fn a_cut_answer_decodes_to_an_error() {
        let list = JobList {
            now: 5,
            jobs: vec![job(1, "a"), job(2, "b")],
        };
        let mut wires = JobWires::from_list(&list).unwrap();
        let bytes = &mut wires.pieces[0].1;
        bytes.truncate(bytes.len() - 3);
        assert_eq!(wires.iter().count(), 1);
        assert!(wires.decode().is_err());
    }

    #[test]
    fn a_streamed_answer_put_together_is_the_whole_answer() {
        let list = JobList {
            now: 9,
            jobs: (1..=3000)
                .map(|i| job(i, &"n".repeat((i % 700) as usize)))
                .collect(),
        };
        let mut sending = JobWires::new(list.now);
        let mut received = JobWires::new(0);
        let mut parts = 0;
        for j in &list.jobs {
            sending.push(j, list.jobs.len()).unwrap();
            if let Some(part) = sending.take_full_part() {
                parts += 1;
                let wire = postcard::to_allocvec(&CtldResponse::JobWiresPart(part)).unwrap();
                let Ok(CtldResponse::JobWiresPart(part)) = postcard::from_bytes(&wire) else {
                    panic!("not a part")
                };
                received.append(part);
            }
        }
        assert!(parts > 0);
        let last = postcard::to_allocvec(&CtldResponse::JobWires(sending)).unwrap();
        let Ok(CtldResponse::JobWires(last)) = postcard::from_bytes(&last) else {
            panic!("not the last part")
        };
        received.append(last);
        assert_eq!(received.len(), list.jobs.len());
        assert_eq!(received.decode().unwrap(), list);
        // Sent on whole, it is one piece again.
        let again: CtldResponse = postcard::from_bytes(
            &postcard::to_allocvec(&CtldResponse::JobWires(received)).unwrap(),
        )
        .unwrap();
        let CtldResponse::JobWires(again) = again else {
            panic!("{again:?}")
        };
        assert_eq!(again.decode().unwrap(), list);
    }
}
