//! Slurm's units: time limits and durations, memory sizes, counts.
//! (Placeholder signatures; the full implementation and property tests live here.)

use serde::{Deserialize, Serialize};

/// Why a time or memory value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not one of Slurm's time forms.
    #[error("invalid time specification {0:?}")]
    Time(String),
    /// Not a memory size.
    #[error("invalid memory specification {0:?}")]
    Memory(String),
}

/// A time limit: a number of minutes, or UNLIMITED/INFINITE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TimeLimit {
    /// No limit.
    #[default]
    Unlimited,
    /// A limit in whole minutes (Slurm rounds seconds up to minutes).
    Minutes(u32),
}

/// Parses a count such as `4` (also `4k` = 4096 as Slurm does for counts).
pub fn parse_count(s: &str) -> Option<u64> {
    s.parse().ok()
}
