//! Which blocked jobs are due for a plan of their own beyond the first
//! ones of each partition (`bf_age_reserve`, `bf_slowdown_reserve`), and
//! the partition sizes that decision reads.

use super::{limit_secs, Policy, SchedConfig, FOREVER};
use crate::backfill::demand_cpus;
use crate::placement::{JobRequest, NodeView, PartView};
use model::{TimeLimit, Timestamp};

/// Whether `job` has waited long enough for a plan of its own
/// (`bf_age_reserve`, `bf_slowdown_reserve`; backfill only).
/// `sizes`: each partition's, from [`PartSize::all`].
pub fn aged(cfg: &SchedConfig, job: &JobRequest, sizes: &[PartSize], now: Timestamp) -> bool {
    let share = || {
        let mine = job.partitions.iter().map(|&p| sizes[p]);
        Share::of(demand_cpus(job), job.exclusive, mine)
    };
    due_reservation(cfg, job.submit_time, job.time_limit, share, now)
}

/// A partition's size, for [`Share`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartSize {
    /// Its nodes' CPUs.
    pub cpus: i64,
    /// Its nodes.
    pub nodes: i64,
}

impl PartSize {
    /// Every partition's size, in `parts`' order.
    pub fn all(nodes: &[NodeView], parts: &[PartView]) -> Vec<PartSize> {
        parts
            .iter()
            .map(|p| PartSize {
                cpus: p
                    .nodes
                    .iter()
                    .map(|n| i64::from(nodes[n.0 as usize].cpus))
                    .sum(),
                nodes: p.nodes.len() as i64,
            })
            .collect()
    }
}

/// What a job asks for against the largest of its partitions: CPUs of CPUs,
/// or nodes of nodes for whole-node jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    asks: i64,
    of: i64,
}

impl Share {
    /// `demand` as [`demand_cpus`] counts it (nodes when `exclusive`).
    pub fn of(demand: i64, exclusive: bool, parts: impl Iterator<Item = PartSize>) -> Share {
        let of = parts
            .map(|p| if exclusive { p.nodes } else { p.cpus })
            .max()
            .unwrap_or(0);
        Share { asks: demand, of }
    }

    /// At least `percent` percent.
    fn at_least(self, percent: u32) -> bool {
        self.asks.saturating_mul(100) >= self.of.saturating_mul(i64::from(percent))
    }
}

/// Whether a blocked job submitted at `submit` with `limit`, asking for
/// `share` of its partitions (computed only when needed), has waited long
/// enough at `now` for a plan of its own (`bf_age_reserve`,
/// `bf_slowdown_reserve`; backfill only).
pub fn due_reservation(
    cfg: &SchedConfig,
    submit: Timestamp,
    limit: TimeLimit,
    share: impl FnOnce() -> Share,
    now: Timestamp,
) -> bool {
    if cfg.policy != Policy::Backfill {
        return false;
    }
    let waited = now.saturating_sub(submit);
    let by_age = cfg.bf_age_reserve.is_some_and(|a| waited >= i64::from(a));
    let by_slowdown = || {
        cfg.bf_slowdown_reserve.is_some_and(|f| {
            let l = limit_secs(limit).max(1);
            l != FOREVER && waited.saturating_add(l) >= l.saturating_mul(i64::from(f))
        }) && share().at_least(cfg.bf_slowdown_reserve_width)
    };
    by_age || by_slowdown()
}
