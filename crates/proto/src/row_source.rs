//! The answer to a brief job listing in rows (`JobFilter::rows`), built
//! from whatever holds the jobs.
//!
//! The holder of the jobs (the controller's engine) hands out one
//! [`JobRow`] per selected job, its texts in an [`Interner`]
//! ([`JobRowSource::each_job_row`]); this module turns those rows into the
//! answer: plain [`JobRows`], or rows encoded as they come, whole or in
//! the parts of a streamed answer (`JobFilter::stream`). The holder never
//! writes the wire form itself.
//!
//! ```text
//!   each_job_row ──JobRow──▶ push_encoded ──full chunk──▶ part(..) ──▶ sent
//!                                         └──the rest───▶ last part (returned)
//! ```

use crate::{Interner, JobFilter, JobRow, JobRows};
use model::Timestamp;

/// Why a row could not be encoded (never expected: a row is plain data).
pub type RowEncodeError = postcard::Error;

/// A holder of jobs that hands out their rows; the answers built from
/// them are provided.
pub trait JobRowSource {
    /// Calls `each` with the row of every job `filter` selects, in the
    /// answer's order, and the string table its texts are in; returns the
    /// table. The row is lent: built for the call and dropped after.
    fn each_job_row<'a>(
        &'a self,
        filter: &JobFilter,
        now: Timestamp,
        each: impl FnMut(&JobRow, &mut Interner<'a>),
    ) -> Interner<'a>;

    /// Told of a row that could not be encoded (it is left out of the
    /// answer).
    fn row_unencodable(&self, row: &JobRow, error: RowEncodeError);

    /// The rows `filter` selects as [`JobRows`], decoded form.
    fn job_rows(&self, filter: &JobFilter, now: Timestamp) -> JobRows {
        let mut rows = JobRows::new(now);
        rows.strings = self
            .each_job_row(filter, now, |row, _| rows.push(row.clone()))
            .into_strings();
        rows
    }

    /// [`JobRowSource::job_rows`] with each row encoded as it is built
    /// (what the controller sends: no row is kept, and the answer is a few
    /// dozen bytes a job instead of a few hundred). The same answer once
    /// decoded.
    fn job_rows_encoded(&self, filter: &JobFilter, now: Timestamp) -> JobRows {
        self.job_rows_parts(filter, now, |_| false)
    }

    /// [`JobRowSource::job_rows_encoded`] in parts (`JobFilter::stream`):
    /// each time a chunk of rows is full, `part` is offered the rows so far
    /// with the texts they name that no earlier part carried; if it
    /// returns true it has taken them (sent them on), else they stay in
    /// the answer. Returns the rest: the last part. The parts appended in
    /// order ([`JobRows::append`]) are the answer `job_rows_encoded`
    /// gives.
    fn job_rows_parts(
        &self,
        filter: &JobFilter,
        now: Timestamp,
        mut part: impl FnMut(&mut JobRows) -> bool,
    ) -> JobRows {
        let mut rows = JobRows::new(now);
        rows.strings = Vec::new();
        let mut pending: Option<JobRows> = None;
        let mut strings = self.each_job_row(filter, now, |row, strings| {
            if let Err(e) = rows.push_encoded(row) {
                self.row_unencodable(row, e);
            }
            if let Some(mut p) = rows.take_full_part() {
                p.strings = strings.take_new();
                if !part(&mut p) {
                    match &mut pending {
                        Some(kept) => kept.append(p),
                        None => pending = Some(p),
                    }
                }
            }
        });
        let mut last = pending.unwrap_or_else(|| {
            let mut p = JobRows::new(now);
            p.strings = Vec::new();
            p
        });
        rows.strings = strings.take_new();
        last.append(rows);
        last
    }
}
