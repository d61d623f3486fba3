//! Shape keys: what placement reads of a job's request, so that jobs of
//! one shape share what a pass learns (`ShapeMemo`), and the looser
//! spread key under which jobs differing only in tasks and time limit
//! share whether they could start now.

use crate::placement::{JobRequest, Unfit};
use model::{JobId, TimeLimit, Timestamp};

/// What one pass learnt about jobs of one shape.
#[derive(Clone, Debug, Default)]
pub(super) struct ShapeMemo {
    /// One could not start now.
    pub(super) failed_now: bool,
    /// One was planned from this time on (`Some(None)`: no plan found).
    pub(super) planned_from: Option<Option<Timestamp>>,
    /// Why one waits, when it had no plan.
    pub(super) unfit: Option<Unfit>,
}

/// Everything about a job's request that placement reads: jobs with the
/// same key fit in the same places. Plain CPU jobs (the common case, and
/// every simulated trace job) get a key of numbers; the rest their whole
/// request in text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum ShapeKey {
    Plain {
        partitions: Parts,
        numbers: [u64; 9],
        flags: (bool, bool),
    },
    Other(String),
}

fn limit_key(t: Option<TimeLimit>) -> u64 {
    match t {
        None => 0,
        Some(TimeLimit::Unlimited) => u64::MAX,
        Some(TimeLimit::Minutes(m)) => u64::from(m) + 1,
    }
}

/// The key with the time limits left out (plain jobs only; others keep
/// theirs, so they are diagnosed per limit).
pub(super) fn without_time(key: &ShapeKey) -> ShapeKey {
    match key {
        ShapeKey::Plain {
            partitions,
            numbers,
            flags,
        } => {
            let mut numbers = *numbers;
            numbers[7] = 0;
            numbers[8] = 0;
            ShapeKey::Plain {
                partitions: partitions.clone(),
                numbers,
                flags: *flags,
            }
        }
        other => other.clone(),
    }
}

/// A job's candidate partitions in a shape key: one partition (the usual
/// case) without an allocation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Parts {
    One(usize),
    Many(Vec<usize>),
}

fn parts_key(parts: &[usize]) -> Parts {
    match parts {
        [one] => Parts::One(*one),
        _ => Parts::Many(parts.to_vec()),
    }
}

pub(super) fn shape_key(job: &JobRequest) -> ShapeKey {
    let plain = job.gres_per_node.is_empty()
        && job.gpus_total.is_none()
        && job.gpus_per_task.is_none()
        && job.cpus_per_gpu.is_none()
        && job.mem_per_gpu.is_none()
        && job.required_nodes.is_empty()
        && job.excluded_nodes.is_empty()
        && job.constraint.is_none()
        && job.threads_per_core.is_none()
        && job.ntasks_per_core.is_none()
        && job.max_leaves.is_none()
        && job.segment.is_none();
    if plain {
        return ShapeKey::Plain {
            partitions: parts_key(&job.partitions),
            numbers: [
                u64::from(job.min_nodes),
                u64::from(job.max_nodes),
                u64::from(job.ntasks),
                job.ntasks_per_node.map_or(0, |n| u64::from(n) + 1),
                u64::from(job.cpus_per_task),
                job.mem_per_node.map_or(0, |m| m.saturating_add(1)),
                job.mem_per_cpu.map_or(0, |m| m.saturating_add(1)),
                limit_key(Some(job.time_limit)),
                limit_key(job.time_min),
            ],
            flags: (job.exclusive, job.memory_consumable),
        };
    }
    let shape = JobRequest {
        job_id: JobId(0),
        priority: 0,
        submit_time: 0,
        user: 0,
        ..job.clone()
    };
    ShapeKey::Other(format!("{shape:?}"))
}

#[cfg(test)]
thread_local! {
    /// Tests turn the memo of `spread_key` off to compare plans with it
    /// and without it.
    pub(crate) static NO_SPREAD_MEMO: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The key under which jobs that differ only in tasks and time limit share
/// what a pass learns about starting now, for jobs whose room now is the
/// sum over nodes of the tasks each can take (which does not depend on how
/// many tasks the job has): plain CPU jobs (no GRES, node lists or
/// constraints), not exclusive, with no `--time-min`, no tasks-per-node,
/// at least one node and as many nodes as tasks allowed (so each node that
/// takes a task may be used). For two such jobs with the same key, the
/// one with more tasks and a longer limit fits now only where the other
/// does: its interval overlaps every plan the other's does, and the nodes
/// only fill up as the pass goes on.
pub(super) fn spread_key(job: &JobRequest, shape: &ShapeKey) -> Option<ShapeKey> {
    #[cfg(test)]
    if NO_SPREAD_MEMO.with(|c| c.get()) {
        return None;
    }
    let ShapeKey::Plain {
        partitions,
        numbers,
        flags,
    } = shape
    else {
        return None;
    };
    let spread = !job.exclusive
        && job.time_min.is_none()
        && job.ntasks_per_node.is_none()
        && job.min_nodes <= 1
        && job.max_nodes >= job.ntasks
        && job.cpus_per_gpu.is_none()
        && job.mem_per_gpu.is_none();
    if !spread {
        return None;
    }
    let mut numbers = *numbers;
    // Max nodes, tasks and time limit.
    numbers[1] = 0;
    numbers[2] = 0;
    numbers[7] = 0;
    Some(ShapeKey::Plain {
        partitions: partitions.clone(),
        numbers,
        flags: *flags,
    })
}
