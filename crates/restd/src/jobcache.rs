//! Jobs as the listings write them (`GET /slurm/v0.0.38/jobs`, v0.0.44's),
//! kept from one listing to the next, so a listing of jobs that did not
//! change since the last is a concatenation of text already written.
//!
//! A job's text is a pure function of its `JobInfo` as the controller
//! sent it, the cluster's name and, for a job holding nodes, the shapes of
//! those nodes. So each job's text is kept with the `JobInfo` it came
//! from, in its wire form (postcard: exact, and a few hundred bytes), and
//! reused only while the controller sends exactly that again; a changed
//! topology drops the text of every job that holds nodes. Nothing else is
//! assumed about what may change (run times, priorities, the scheduler's
//! last look at a job all do): every listing still asks the controller,
//! as the caller, for the jobs it may see, and writes what it answers.
//!
//! Each listing drops the jobs it did not see, so the cache holds at most
//! the jobs of the last listing: about 3 KB of text and the `JobInfo`'s
//! wire form per job.
//!
//! Measured with `bench/rest.sh` (docs/performance.md): most of a listing
//! was building and freeing the `J` values of each job and writing them.

use crate::json::J;
use crate::v0038::Topology;
use proto::JobInfo;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

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
    /// The job's `JobInfo` in postcard.
    wire: Vec<u8>,
    text: Arc<str>,
    /// The last listing that had this job.
    listing: u64,
    holds_nodes: bool,
}

impl JobCache {
    /// `jobs` written by `render` as a listing puts them: one [`J::Raw`]
    /// per job, in order, each written at [`JOB_LEVEL`].
    pub fn listing(
        &self,
        jobs: &[JobInfo],
        cluster: &str,
        topo: Topology<'_>,
        render: Render,
    ) -> Vec<J> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.topo != topo {
            inner.entries.retain(|_, e| !e.holds_nodes);
            inner.topo = topo.to_vec();
        }
        inner.listing += 1;
        let listing = inner.listing;
        let mut out = Vec::with_capacity(jobs.len());
        let mut wire = Vec::with_capacity(512);
        for j in jobs {
            wire.clear();
            if postcard::to_io(j, &mut wire).is_err() {
                // Never for a JobInfo (it is sent this way); written afresh.
                out.push(J::Raw(
                    render(j, cluster, topo)
                        .to_slurm_string_at(JOB_LEVEL)
                        .into(),
                ));
                continue;
            }
            let kept = match inner.entries.get_mut(&j.job_id.0) {
                Some(e) if e.wire == wire => {
                    e.listing = listing;
                    Some(e.text.clone())
                }
                _ => None,
            };
            let text = match kept {
                Some(text) => text,
                None => {
                    let text: Arc<str> = render(j, cluster, topo)
                        .to_slurm_string_at(JOB_LEVEL)
                        .into();
                    inner.entries.insert(
                        j.job_id.0,
                        Entry {
                            wire: wire.clone(),
                            text: text.clone(),
                            listing,
                            holds_nodes: !j.nodes.is_empty(),
                        },
                    );
                    text
                }
            };
            out.push(J::Raw(text));
        }
        inner.entries.retain(|_, e| e.listing == listing);
        out
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
