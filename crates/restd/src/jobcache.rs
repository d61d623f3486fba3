//! Jobs as the listings write them (`GET /slurm/v0.0.38/jobs`, v0.0.44's),
//! kept from one listing to the next, so a listing of jobs that did not
//! change since the last is a concatenation of text already written.
//!
//! A job's text is a pure function of its `JobInfo` as the controller
//! sent it, the cluster's name and, for a job holding nodes, the shapes of
//! those nodes. The controller sends each job in its own bytes (postcard,
//! `proto::JobWires`), so each job's text is kept with those bytes and
//! reused only while the controller sends exactly them again: an
//! unchanged job is compared, never decoded. A changed topology drops the
//! text of every job that holds nodes. Nothing else is assumed about what
//! may change (run times, priorities, the scheduler's last look at a job
//! all do): every listing still asks the controller, as the caller, for
//! the jobs it may see, and writes what it answers.
//!
//! Each listing drops the jobs it did not see, so the cache holds at most
//! the jobs of the last listing: about 3 KB of text and the `JobInfo`'s
//! wire form per job.
//!
//! Measured with `bench/rest.sh` (docs/performance.md): most of a listing
//! was building and freeing the `J` values of each job and writing them,
//! then decoding every job and encoding it again to compare.

use crate::json::J;
use crate::v0038::Topology;
use hyper::body::Bytes;
use proto::{JobInfo, JobWires};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The indent of a job in a listing: the answer (0), its `jobs` (1), a job
/// of them (2), in both data parsers.
pub const JOB_LEVEL: usize = 2;

/// How a data parser writes one job.
pub type Render = fn(&JobInfo, &str, Topology<'_>) -> J;

/// The text of the jobs of the last listing, for one data parser.
#[derive(Default)]
pub struct JobCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The node shapes the texts of jobs holding nodes were written with.
    topo: Vec<(String, u32, u32, u32)>,
    entries: HashMap<u32, Entry>,
    /// The number of the listing in progress.
    listing: u64,
}

struct Entry {
    /// The job's `JobInfo` in postcard, then its text: one piece, so a
    /// listing that finds the job unchanged touches one allocation.
    kept: Bytes,
    /// Where the text starts in `kept`.
    wire_len: usize,
    /// The last listing that had this job.
    listing: u64,
    holds_nodes: bool,
}

impl Entry {
    fn wire(&self) -> &[u8] {
        &self.kept[..self.wire_len]
    }

    fn text(&self) -> Bytes {
        self.kept.slice(self.wire_len..)
    }
}

/// A job of the listing in progress: its kept text (whether it holds
/// nodes, its id), or its `JobInfo` to write and the bytes it came in.
enum Slot {
    Kept(Bytes, bool, u32),
    Fresh(Box<JobInfo>, Vec<u8>),
}

impl Slot {
    fn holds_nodes(&self) -> bool {
        match self {
            Slot::Kept(_, holds, _) => *holds,
            Slot::Fresh(j, _) => !j.nodes.is_empty(),
        }
    }
}

/// A job's `JobInfo` from its bytes, or None (logged).
fn decode(job_id: u32, bytes: &[u8]) -> Option<Box<JobInfo>> {
    let wire = proto::JobWire { job_id, bytes };
    match wire.decode() {
        Ok(j) => Some(Box::new(j)),
        Err(e) => {
            tracing::warn!("job {job_id}: its information does not decode: {e}");
            None
        }
    }
}

impl JobCache {
    /// `jobs` written by `render` as a listing puts them: one [`J::Raw`]
    /// per job, in order, each written at [`JOB_LEVEL`]. `topology` gives
    /// the nodes' shapes; it is asked only when a job holds nodes. A job
    /// whose bytes do not decode is left out (logged).
    pub fn listing(
        &self,
        jobs: &JobWires,
        cluster: &str,
        topology: impl FnOnce() -> Vec<(String, u32, u32, u32)>,
        render: Render,
    ) -> Vec<J> {
        let whole = |each: &mut dyn FnMut(&JobWires)| -> Result<(), std::convert::Infallible> {
            each(jobs);
            Ok(())
        };
        match self.listing_from(whole, cluster, topology, render) {
            Ok(out) => out,
            Err(never) => match never {},
        }
    }

    /// [`JobCache::listing`] of jobs that `feed` hands over part after
    /// part (as the controller streams them: `client::Client::job_wires`),
    /// each part compared with the kept texts as it comes. `feed`'s
    /// error is the listing's.
    pub fn listing_from<E>(
        &self,
        feed: impl FnOnce(&mut dyn FnMut(&JobWires)) -> Result<(), E>,
        cluster: &str,
        topology: impl FnOnce() -> Vec<(String, u32, u32, u32)>,
        render: Render,
    ) -> Result<Vec<J>, E> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.listing += 1;
        let listing = inner.listing;
        let mut slots = Vec::new();
        feed(&mut |part: &JobWires| {
            slots.reserve(part.len());
            for wire in part.iter() {
                let slot = match inner.entries.get_mut(&wire.job_id) {
                    Some(e) if e.wire() == wire.bytes => {
                        e.listing = listing;
                        Slot::Kept(e.text(), e.holds_nodes, wire.job_id)
                    }
                    _ => match decode(wire.job_id, wire.bytes) {
                        Some(j) => Slot::Fresh(j, wire.bytes.to_vec()),
                        None => continue,
                    },
                };
                slots.push(slot);
            }
        })?;
        let topo = if slots.iter().any(Slot::holds_nodes) {
            topology()
        } else {
            Vec::new()
        };
        if inner.topo != topo {
            // The kept texts of jobs holding nodes were written for other
            // shapes: written again, from the bytes they were kept with.
            for slot in &mut slots {
                if let Slot::Kept(_, true, id) = *slot {
                    let Some(e) = inner.entries.get(&id) else {
                        continue;
                    };
                    let bytes = e.wire().to_vec();
                    if let Some(j) = decode(id, &bytes) {
                        *slot = Slot::Fresh(j, bytes);
                    }
                }
            }
            inner.entries.retain(|_, e| !e.holds_nodes);
            inner.topo = topo;
        }
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            let text = match slot {
                Slot::Kept(text, _, _) => text,
                Slot::Fresh(j, bytes) => {
                    let text = render(&j, cluster, &inner.topo).to_slurm_string_at(JOB_LEVEL);
                    let mut kept = bytes;
                    let wire_len = kept.len();
                    kept.extend_from_slice(text.as_bytes());
                    let entry = Entry {
                        kept: Bytes::from(kept),
                        wire_len,
                        listing,
                        holds_nodes: !j.nodes.is_empty(),
                    };
                    let text = entry.text();
                    inner.entries.insert(j.job_id.0, entry);
                    text
                }
            };
            out.push(J::Raw(text));
        }
        inner.entries.retain(|_, e| e.listing == listing);
        Ok(out)
    }

    /// How many jobs' texts are kept.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .len()
    }

    /// Whether no job's text is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
