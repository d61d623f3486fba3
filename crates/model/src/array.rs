//! Job array index sets: sbatch's `--array` forms (`0-9`, `1,3,5-7`,
//! `0-15:4`, `%N`) and the task lists squeue and scontrol print
//! (`123_[5-9%2]`, `ArrayTaskId=0-3`).
//!
//! A set is kept as sorted, disjoint, non-adjacent inclusive runs, so a
//! 100,000-task array is one run, not 100,000 numbers.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A set of array task indexes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSet {
    runs: Vec<(u32, u32)>,
}

/// An `--array` specification: the indexes and the `%N` limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArraySpec {
    /// The task indexes.
    pub tasks: TaskSet,
    /// `%N`: at most N tasks run at once (None: no limit).
    pub throttle: Option<u32>,
}

impl TaskSet {
    /// The empty set.
    pub fn new() -> TaskSet {
        TaskSet::default()
    }

    /// The set of one index.
    pub fn single(t: u32) -> TaskSet {
        TaskSet { runs: vec![(t, t)] }
    }

    /// Parses a list of indexes as `--array` and job ids take it (`1,3,5-7`,
    /// `0-15:4`), without the `%N` part.
    pub fn parse(text: &str) -> Option<TaskSet> {
        let mut set = TaskSet::new();
        if text.is_empty() {
            return None;
        }
        for part in text.split(',') {
            let (range, step) = match part.split_once(':') {
                Some((r, s)) => (r, number(s)?),
                None => (part, 1),
            };
            if step == 0 {
                return None;
            }
            let (first, last) = match range.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let n = number(range)?;
                    (n, n)
                }
            };
            if last < first {
                return None;
            }
            if step == 1 {
                set.insert_run(first, last);
            } else {
                let mut t = first;
                while t <= last {
                    set.insert_run(t, t);
                    match t.checked_add(step) {
                        Some(n) => t = n,
                        None => break,
                    }
                }
            }
        }
        Some(set)
    }

    fn insert_run(&mut self, first: u32, last: u32) {
        self.runs.push((first, last));
        self.runs.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(self.runs.len());
        for &(a, b) in &self.runs {
            match merged.last_mut() {
                Some(m) if a <= m.1.saturating_add(1) => m.1 = m.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.runs = merged;
    }

    /// Adds one index.
    pub fn insert(&mut self, t: u32) {
        if !self.contains(t) {
            self.insert_run(t, t);
        }
    }

    /// How many indexes.
    pub fn len(&self) -> u64 {
        self.runs.iter().map(|(a, b)| (b - a) as u64 + 1).sum()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The smallest index.
    pub fn first(&self) -> Option<u32> {
        self.runs.first().map(|r| r.0)
    }

    /// The largest index.
    pub fn last(&self) -> Option<u32> {
        self.runs.last().map(|r| r.1)
    }

    /// Whether `t` is in the set.
    pub fn contains(&self, t: u32) -> bool {
        let i = self.runs.partition_point(|r| r.1 < t);
        self.runs.get(i).is_some_and(|r| r.0 <= t)
    }

    /// Removes `t`; true when it was there.
    pub fn remove(&mut self, t: u32) -> bool {
        let i = self.runs.partition_point(|r| r.1 < t);
        let Some(&(a, b)) = self.runs.get(i) else {
            return false;
        };
        if t < a {
            return false;
        }
        match (t == a, t == b) {
            (true, true) => {
                self.runs.remove(i);
            }
            (true, false) => self.runs[i].0 = t + 1,
            (false, true) => self.runs[i].1 = t - 1,
            (false, false) => {
                self.runs[i].1 = t - 1;
                self.runs.insert(i + 1, (t + 1, b));
            }
        }
        true
    }

    /// Removes and returns the smallest index.
    pub fn pop_first(&mut self) -> Option<u32> {
        let t = self.first()?;
        self.remove(t);
        Some(t)
    }

    /// The indexes in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs.iter().flat_map(|&(a, b)| a..=b)
    }

    /// The step between consecutive indexes when it is constant, else 1
    /// (`SLURM_ARRAY_TASK_STEP`).
    pub fn stride(&self) -> u32 {
        if self.runs.iter().any(|(a, b)| a != b) || self.runs.len() < 2 {
            return 1;
        }
        let step = self.runs[1].0 - self.runs[0].0;
        let regular = self.runs.windows(2).all(|w| w[1].0 - w[0].0 == step);
        if regular {
            step
        } else {
            1
        }
    }
}

/// Slurm's list form: `0-3`, `1,3,5-7`.
impl fmt::Display for TaskSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (a, b)) in self.runs.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}-{b}")?;
            }
        }
        Ok(())
    }
}

fn number(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl ArraySpec {
    /// Parses `--array`: indexes, optionally followed by `%N` with N > 0.
    pub fn parse(text: &str) -> Option<ArraySpec> {
        let text = text.trim();
        let (list, throttle) = match text.split_once('%') {
            Some((l, n)) => {
                let n = number(n)?;
                if n == 0 {
                    return None;
                }
                (l, Some(n))
            }
            None => (text, None),
        };
        let tasks = TaskSet::parse(list)?;
        Some(ArraySpec { tasks, throttle })
    }
}

/// A job id as the commands take it: `123`, `123_4`, `123_[1-3]`,
/// `123_[1,5%2]` (the `%N` part is ignored here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobIdSpec {
    /// The job (or array) id.
    pub job_id: u32,
    /// The tasks named, when any.
    pub tasks: Option<TaskSet>,
}

impl JobIdSpec {
    /// Parses `123`, `123_4`, `123_[1-3]`. Steps (`123.0`) are not part of it.
    pub fn parse(text: &str) -> Option<JobIdSpec> {
        let (job, tasks) = match text.split_once('_') {
            Some((j, t)) => {
                let inner = t
                    .strip_prefix('[')
                    .and_then(|x| x.strip_suffix(']'))
                    .unwrap_or(t);
                let inner = inner.split('%').next().unwrap_or(inner);
                (j, Some(TaskSet::parse(inner)?))
            }
            None => (text, None),
        };
        let job_id = number(job).filter(|n| *n > 0)?;
        Some(JobIdSpec { job_id, tasks })
    }
}

/// Splits a comma-separated list of job ids, keeping the commas inside
/// brackets (`1_[1,3],2` is two ids).
pub fn split_job_list(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0u32;
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if (c == ',' || c.is_whitespace()) && depth == 0 {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_sbatch_forms() {
        let s = |t: &str| ArraySpec::parse(t).map(|a| (a.tasks.to_string(), a.throttle));
        assert_eq!(s("0-9"), Some(("0-9".into(), None)));
        assert_eq!(s("1,3,5-7"), Some(("1,3,5-7".into(), None)));
        assert_eq!(s("0-15:4"), Some(("0,4,8,12".into(), None)));
        assert_eq!(s("5-9%2"), Some(("5-9".into(), Some(2))));
        assert_eq!(s("3,1,2"), Some(("1-3".into(), None)));
        for bad in [
            "", "a", "3-1", "1-", "-1", "0-3%0", "0-3%", "1:0", "0-4:0", "1,,2",
        ] {
            assert_eq!(s(bad), None, "{bad}");
        }
    }

    #[test]
    fn removes_and_pops_keep_runs() {
        let mut t = TaskSet::parse("0-9").unwrap();
        assert!(t.remove(5));
        assert!(!t.remove(5));
        assert_eq!(t.to_string(), "0-4,6-9");
        assert_eq!(t.pop_first(), Some(0));
        assert_eq!(t.len(), 8);
        assert!(t.contains(9) && !t.contains(0) && !t.contains(10));
        t.insert(5);
        assert_eq!(t.to_string(), "1-9");
        assert_eq!(TaskSet::parse("0-15:4").unwrap().stride(), 4);
        assert_eq!(TaskSet::parse("1,3,6").unwrap().stride(), 1);
    }

    #[test]
    fn job_ids_with_tasks() {
        let p = |t: &str| JobIdSpec::parse(t).map(|j| (j.job_id, j.tasks.map(|s| s.to_string())));
        assert_eq!(p("123"), Some((123, None)));
        assert_eq!(p("123_4"), Some((123, Some("4".into()))));
        assert_eq!(p("123_[1-3]"), Some((123, Some("1-3".into()))));
        assert_eq!(p("123_[5-9%2]"), Some((123, Some("5-9".into()))));
        assert_eq!(p("0"), None);
        assert_eq!(p("12x"), None);
        assert_eq!(split_job_list("1_[1,3],2 3"), vec!["1_[1,3]", "2", "3"]);
    }
}
