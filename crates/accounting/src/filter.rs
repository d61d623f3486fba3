//! SQL for [`JobQuery`] and for the upsert, shared by both backends; only
//! the placeholder spelling differs (`?1` in SQLite, `$1` in PostgreSQL).

use model::JobState;
use proto::AcctJob;

use crate::{AcctError, JobQuery};

/// A bound parameter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Param {
    Int(i64),
    OptInt(Option<i64>),
    Text(String),
}

/// A statement with its parameters.
#[derive(Clone, Debug)]
pub(crate) struct Sql {
    pub text: String,
    pub params: Vec<Param>,
}

/// How a backend spells the N-th placeholder (1-based).
pub(crate) type Placeholder = fn(usize) -> String;

/// The columns every query selects, in this order.
const SELECT: &str = "SELECT cluster, job_id, record FROM jobs";

/// The upsert of one job: a write for an existing key replaces the row.
pub(crate) fn upsert(job: &AcctJob, ph: Placeholder) -> Result<Sql, AcctError> {
    Ok(Sql {
        text: upsert_text(ph),
        params: upsert_params(job)?,
    })
}

/// The upsert's parameters for one job, in the order of [`upsert_text`].
pub(crate) fn upsert_params(job: &AcctJob) -> Result<Vec<Param>, AcctError> {
    let record = serde_json::to_string(job).map_err(|source| AcctError::Encode {
        job_id: job.job_id.0,
        source,
    })?;
    let params = vec![
        Param::Text(job.cluster.clone()),
        Param::Int(i64::from(job.job_id.0)),
        Param::Int(job.submit_time),
        Param::Text(job.user.clone()),
        Param::Text(job.account.clone()),
        Param::Text(job.state.as_slurm_str().to_owned()),
        Param::Text(job.partition.clone()),
        Param::Text(job.name.clone()),
        Param::OptInt(job.eligible_time),
        Param::OptInt(job.start_time),
        Param::OptInt(job.end_time),
        Param::Text(record),
        Param::OptInt(job.array_job_id.map(i64::from)),
    ];
    debug_assert_eq!(params.len(), UPSERT_PARAMS);
    Ok(params)
}

/// How many parameters the upsert binds.
const UPSERT_PARAMS: usize = 13;

/// The upsert's text, the same for every job (a batch prepares it once).
pub(crate) fn upsert_text(ph: Placeholder) -> String {
    let values: Vec<String> = (1..=UPSERT_PARAMS).map(ph).collect();
    format!(
        "INSERT INTO jobs (cluster, job_id, submit_time, user_name, account, state, \
         partition_name, job_name, eligible_time, start_time, end_time, record, \
         array_job_id) \
         VALUES ({}) \
         ON CONFLICT (cluster, job_id, submit_time) DO UPDATE SET \
         user_name = excluded.user_name, account = excluded.account, \
         state = excluded.state, partition_name = excluded.partition_name, \
         job_name = excluded.job_name, eligible_time = excluded.eligible_time, \
         start_time = excluded.start_time, end_time = excluded.end_time, \
         record = excluded.record, array_job_id = excluded.array_job_id",
        values.join(", ")
    )
}

/// The longest (end - submit) of the ended jobs in `jobs`, per cluster, as
/// upserts that raise `job_span` (never lower it). Run in the same
/// transaction as the jobs' upserts, so a reader never sees a job its
/// cluster's span does not cover.
pub(crate) fn span_updates(jobs: &[AcctJob], ph: Placeholder) -> Vec<Sql> {
    let mut longest: std::collections::BTreeMap<&str, i64> = std::collections::BTreeMap::new();
    for j in jobs {
        if let Some(end) = j.end_time {
            let span = end.saturating_sub(j.submit_time);
            let e = longest.entry(j.cluster.as_str()).or_insert(span);
            *e = (*e).max(span);
        }
    }
    longest
        .into_iter()
        .map(|(cluster, span)| Sql {
            text: format!(
                "INSERT INTO job_span (cluster, max_span) VALUES ({}, {}) \
                 ON CONFLICT (cluster) DO UPDATE SET max_span = excluded.max_span \
                 WHERE job_span.max_span < excluded.max_span",
                ph(1),
                ph(2)
            ),
            params: vec![Param::Text(cluster.to_owned()), Param::Int(span)],
        })
        .collect()
}

struct Builder {
    ph: Placeholder,
    clauses: Vec<String>,
    params: Vec<Param>,
}

impl Builder {
    fn bind(&mut self, p: Param) -> String {
        self.params.push(p);
        (self.ph)(self.params.len())
    }

    fn any_of(&mut self, column: &str, values: Vec<Param>) {
        if values.is_empty() {
            return;
        }
        let marks: Vec<String> = values.into_iter().map(|v| self.bind(v)).collect();
        self.clauses
            .push(format!("{column} IN ({})", marks.join(", ")));
    }
}

fn texts(v: &[String]) -> Vec<Param> {
    v.iter().cloned().map(Param::Text).collect()
}

/// The `SELECT` for a query, ordered as [`crate::AccountingStore::query`]
/// promises.
pub(crate) fn select(q: &JobQuery, ph: Placeholder) -> Sql {
    let mut b = Builder {
        ph,
        clauses: Vec::new(),
        params: Vec::new(),
    };
    if let Some(c) = &q.cluster {
        let m = b.bind(Param::Text(c.clone()));
        b.clauses.push(format!("cluster = {m}"));
    }
    if !q.job_ids.is_empty() {
        // An id selects the job, or every task of the array it names.
        let ids = |b: &mut Builder| -> Vec<String> {
            q.job_ids
                .iter()
                .map(|&i| b.bind(Param::Int(i64::from(i))))
                .collect()
        };
        let direct = ids(&mut b).join(", ");
        let array = ids(&mut b).join(", ");
        b.clauses.push(format!(
            "(job_id IN ({direct}) OR array_job_id IN ({array}))"
        ));
    }
    b.any_of("user_name", texts(&q.users));
    b.any_of("account", texts(&q.accounts));
    b.any_of("job_name", texts(&q.names));
    b.any_of("partition_name", texts(&q.partitions));

    let window = q.start.is_some() || q.end.is_some();
    if let (Some(start), true) = (q.start, q.states.is_empty()) {
        return bounded_window(b, q, start);
    }
    if window {
        let s = b.bind(Param::Int(q.start.unwrap_or(i64::MIN)));
        let e = b.bind(Param::Int(q.end.unwrap_or(i64::MAX)));
        if q.states.is_empty() {
            // Eligible (or, when the writer left eligible_time out, started)
            // by the end of the window and not ended before its start. A job
            // is never eligible before its submission, so `submit_time <=
            // end` changes nothing but lets an index on (user, submit time)
            // stop at the window's end.
            b.clauses.push(format!(
                "submit_time <= {e} AND COALESCE(eligible_time, start_time) <= {e} \
                 AND (end_time IS NULL OR end_time >= {s})"
            ));
        } else {
            let mut per_state = Vec::new();
            for st in dedup(&q.states) {
                let m = b.bind(Param::Text(st.as_slurm_str().to_owned()));
                per_state.push(format!("(state = {m} AND {})", in_state_during(st, &s, &e)));
            }
            b.clauses.push(format!("({})", per_state.join(" OR ")));
        }
    } else {
        let states = dedup(&q.states)
            .into_iter()
            .map(|st| Param::Text(st.as_slurm_str().to_owned()))
            .collect();
        b.any_of("state", states);
    }

    let mut text = SELECT.to_owned();
    if !b.clauses.is_empty() {
        text.push_str(" WHERE ");
        text.push_str(&b.clauses.join(" AND "));
    }
    text.push_str(" ORDER BY submit_time, job_id, cluster");
    Sql {
        text,
        params: b.params,
    }
}

/// The window query without states, from `start`: its two halves, each an
/// index range of its own.
///
/// - Ended jobs: one that ended at or after `start` was submitted at or
///   after `start - max_span` (`job_span`: no ended job of the cluster
///   took longer from submission to end), so the walk of the (user,
///   submit time) index is bounded on both sides instead of running from
///   the user's first job.
/// - Jobs with no end yet (pending, running): the `jobs_open` index holds
///   only them.
///
/// The span is read in the same statement, so it covers every ended job
/// the statement sees.
fn bounded_window(mut b: Builder, q: &JobQuery, start: i64) -> Sql {
    let s = b.bind(Param::Int(start));
    let e = b.bind(Param::Int(q.end.unwrap_or(i64::MAX)));
    let span = match &q.cluster {
        Some(c) => {
            let m = b.bind(Param::Text(c.clone()));
            format!("(SELECT COALESCE(MAX(max_span), 0) FROM job_span WHERE cluster = {m})")
        }
        None => "(SELECT COALESCE(MAX(max_span), 0) FROM job_span)".to_owned(),
    };
    let mut common = b.clauses.join(" AND ");
    if !common.is_empty() {
        common.push_str(" AND ");
    }
    let eligible = format!("submit_time <= {e} AND COALESCE(eligible_time, start_time) <= {e}");
    let text = format!(
        "{SELECT_KEYED} WHERE {common}{eligible} AND end_time >= {s} AND submit_time >= {s} - {span} \
         UNION ALL \
         {SELECT_KEYED} WHERE {common}{eligible} AND end_time IS NULL \
         ORDER BY submit_time, job_id, cluster"
    );
    Sql {
        text,
        params: b.params,
    }
}

/// [`SELECT`] with the ordering column, for the halves of a `UNION ALL`.
const SELECT_KEYED: &str = "SELECT cluster, job_id, record, submit_time FROM jobs";

/// "The job was in state `st` at some time in [s, e]", for a job whose
/// current state is `st`.
fn in_state_during(st: JobState, s: &str, e: &str) -> String {
    match st {
        JobState::Pending => {
            format!("submit_time <= {e} AND (start_time IS NULL OR start_time >= {s})")
        }
        JobState::Running | JobState::Suspended => format!(
            "COALESCE(start_time, submit_time) <= {e} AND (end_time IS NULL OR end_time >= {s})"
        ),
        // A final state begins at the end time; a writer that left it out
        // still gets the job found by its submit time rather than lost.
        _ => format!(
            "COALESCE(end_time, submit_time) >= {s} AND COALESCE(end_time, submit_time) <= {e}"
        ),
    }
}

fn dedup(states: &[JobState]) -> Vec<JobState> {
    let mut v = states.to_vec();
    v.sort();
    v.dedup();
    v
}
