//! Job dependencies as sbatch(1) `--dependency` writes them:
//! `after`, `afterany`, `afterok`, `afternotok`, `aftercorr`, `singleton`,
//! `+time` delays (minutes), several jobs per type (`afterok:1:2`), `,` when
//! all must hold and `?` when any may.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A dependency type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DepKind {
    /// `after`: the job started (or was cancelled).
    After,
    /// `afterany`: the job ended, in any state.
    AfterAny,
    /// `afterok`: the job completed successfully.
    AfterOk,
    /// `afternotok`: the job ended in a failed state.
    AfterNotOk,
    /// `aftercorr`: the task with the same index of the other array completed successfully.
    AfterCorr,
    /// `singleton`: no other job with the same name and user is running.
    Singleton,
}

impl DepKind {
    /// Slurm's spelling.
    pub fn as_slurm_str(self) -> &'static str {
        match self {
            DepKind::After => "after",
            DepKind::AfterAny => "afterany",
            DepKind::AfterOk => "afterok",
            DepKind::AfterNotOk => "afternotok",
            DepKind::AfterCorr => "aftercorr",
            DepKind::Singleton => "singleton",
        }
    }
}

/// One job a dependency names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepTarget {
    /// The job (or array) id.
    pub job_id: u32,
    /// One task of that array (`123_4`).
    pub task: Option<u32>,
    /// `+time`: minutes to wait after the condition holds.
    pub delay_min: u32,
}

/// One condition: a type and the job it names (none for singleton).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepItem {
    /// The type.
    pub kind: DepKind,
    /// The job (None for singleton).
    pub target: Option<DepTarget>,
}

/// A whole `--dependency` value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    /// `?`-separated: any one condition suffices.
    pub any: bool,
    /// The conditions.
    pub items: Vec<DepItem>,
}

/// Why a `--dependency` value was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepError {
    /// Not a dependency at all.
    Syntax,
    /// `afterburstbuffer`: muster has no burst buffers.
    BurstBuffer,
}

fn target(text: &str) -> Option<DepTarget> {
    let (id, delay) = match text.split_once('+') {
        Some((i, d)) => (i, d.parse::<u32>().ok()?),
        None => (text, 0),
    };
    let (job, task) = match id.split_once('_') {
        Some((j, t)) => (j, Some(t.parse::<u32>().ok()?)),
        None => (id, None),
    };
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let job_id = job.parse::<u32>().ok().filter(|n| *n > 0)?;
    Some(DepTarget {
        job_id,
        task,
        delay_min: delay,
    })
}

impl Dependency {
    /// Parses a `--dependency` value. A bare job id list (`123:124`) means
    /// `afterany`, as Slurm reads it.
    pub fn parse(text: &str) -> Result<Dependency, DepError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Dependency::default());
        }
        let has_any = text.contains('?');
        if has_any && text.contains(',') {
            return Err(DepError::Syntax);
        }
        let sep = if has_any { '?' } else { ',' };
        let mut dep = Dependency {
            any: has_any,
            items: Vec::new(),
        };
        for part in text.split(sep) {
            let part = part.trim();
            if part.eq_ignore_ascii_case("singleton") {
                dep.items.push(DepItem {
                    kind: DepKind::Singleton,
                    target: None,
                });
                continue;
            }
            let mut words = part.split(':');
            let head = words.next().unwrap_or_default();
            let kind = match head.to_ascii_lowercase().as_str() {
                "after" => DepKind::After,
                "afterany" => DepKind::AfterAny,
                "afterok" => DepKind::AfterOk,
                "afternotok" => DepKind::AfterNotOk,
                "aftercorr" => DepKind::AfterCorr,
                "afterburstbuffer" => return Err(DepError::BurstBuffer),
                _ => {
                    // `123:124`: job ids without a type.
                    let t = target(head).ok_or(DepError::Syntax)?;
                    dep.items.push(DepItem {
                        kind: DepKind::AfterAny,
                        target: Some(t),
                    });
                    for w in words {
                        let t = target(w).ok_or(DepError::Syntax)?;
                        dep.items.push(DepItem {
                            kind: DepKind::AfterAny,
                            target: Some(t),
                        });
                    }
                    continue;
                }
            };
            let mut n = 0;
            for w in words {
                let t = target(w).ok_or(DepError::Syntax)?;
                if kind == DepKind::AfterCorr && t.task.is_some() {
                    return Err(DepError::Syntax);
                }
                dep.items.push(DepItem {
                    kind,
                    target: Some(t),
                });
                n += 1;
            }
            if n == 0 {
                return Err(DepError::Syntax);
            }
        }
        Ok(dep)
    }

    /// True when there is nothing to wait for.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl fmt::Display for DepItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.as_slurm_str())?;
        if let Some(t) = self.target {
            write!(f, ":{}", t.job_id)?;
            if let Some(task) = t.task {
                write!(f, "_{task}")?;
            }
            if t.delay_min > 0 {
                write!(f, "+{}", t.delay_min)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(d: &Dependency) -> String {
        let sep = if d.any { "?" } else { "," };
        d.items
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(sep)
    }

    #[test]
    fn parses_slurm_forms() {
        let p = |t: &str| Dependency::parse(t).map(|d| show(&d));
        assert_eq!(p("afterok:123").as_deref(), Ok("afterok:123"));
        assert_eq!(
            p("afterok:1:2,afterany:3+10").as_deref(),
            Ok("afterok:1,afterok:2,afterany:3+10")
        );
        assert_eq!(
            p("afterok:1?afternotok:2").as_deref(),
            Ok("afterok:1?afternotok:2")
        );
        assert_eq!(p("singleton").as_deref(), Ok("singleton"));
        assert_eq!(p("after:5_3").as_deref(), Ok("after:5_3"));
        assert_eq!(p("aftercorr:7").as_deref(), Ok("aftercorr:7"));
        assert_eq!(p("12:13").as_deref(), Ok("afterany:12,afterany:13"));
        assert_eq!(p("afterburstbuffer:1"), Err(DepError::BurstBuffer));
        for bad in [
            "afterok",
            "afterok:",
            "afterok:x",
            "bogus:1",
            "afterok:1,afterok:2?after:3",
        ] {
            assert_eq!(p(bad), Err(DepError::Syntax), "{bad}");
        }
    }
}
