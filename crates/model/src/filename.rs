//! Slurm's filename patterns (`--output`, `--error`, `--input` of sbatch
//! and srun): `%j %J %A %a %x %u %N %n %t %s %%`, each number with an
//! optional zero-padding width (`%4j`); unknown codes stay as written.

/// The values a pattern may name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatternValues<'a> {
    /// `%j`: the job id.
    pub job_id: u32,
    /// `%J`: `job.step` for a step, the job id for a batch script.
    pub job_step: Option<&'a str>,
    /// `%A`: the array's job id (the job id outside arrays).
    pub array_job_id: u32,
    /// `%a`: the array task id (4294967294, Slurm's NO_VAL, outside arrays).
    pub array_task_id: Option<u32>,
    /// `%x`: the job name.
    pub name: &'a str,
    /// `%u`: the user name.
    pub user: &'a str,
    /// `%N`: the node (the batch host for a batch script).
    pub node: &'a str,
    /// `%n`: the node's index in the step.
    pub node_index: u32,
    /// `%t`: the task id.
    pub task: u32,
    /// `%s`: the step (`batch` for a batch script).
    pub step: &'a str,
    /// Where a relative result is anchored.
    pub work_dir: &'a str,
}

/// Expands `pattern` and makes it absolute against the working directory.
/// Directories are not created, as in Slurm.
pub fn expand(pattern: &str, v: &PatternValues<'_>) -> String {
    use std::fmt::Write;
    // Room for the working directory in front, where the result is
    // relative: one allocation for the usual pattern.
    let mut out = String::with_capacity(v.work_dir.len() + pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // The width as `str::parse` reads the digits: 0 where they
        // overflow.
        let mut width = Some(0usize);
        while let Some(d) = chars.peek().copied().filter(|d| d.is_ascii_digit()) {
            width = width
                .and_then(|w| w.checked_mul(10))
                .and_then(|w| w.checked_add(d as usize - '0' as usize));
            chars.next();
        }
        let width = width.unwrap_or(0);
        let Some(code) = chars.next() else {
            out.push('%');
            break;
        };
        let mut num = |n: u64| {
            let _ = write!(out, "{:0width$}", n, width = width);
        };
        match code {
            'j' => num(v.job_id.into()),
            'J' => match v.job_step {
                Some(js) => out.push_str(js),
                None => num(v.job_id.into()),
            },
            'A' => num(v.array_job_id.into()),
            'a' => num(v.array_task_id.map_or(4_294_967_294, u64::from)),
            'x' => out.push_str(v.name),
            'u' => out.push_str(v.user),
            'N' => out.push_str(v.node),
            'n' => num(v.node_index.into()),
            't' => num(v.task.into()),
            's' => out.push_str(v.step),
            '%' => out.push('%'),
            other => {
                out.push('%');
                out.push(other);
            }
        }
    }
    if !out.starts_with('/') {
        let dir = v.work_dir.trim_end_matches('/');
        out.insert(0, '/');
        out.insert_str(0, dir);
    }
    out
}

/// The path `scontrol show job` (`StdOut=`, `StdErr=`) and `squeue -O
/// STDOUT` show for `pattern`, from submission on: Slurm's job query
/// expands only `%A %a %j %u %x` (no widths) and leaves every other code,
/// `%N` included, as written, anchored at the working directory.
pub fn expand_shown(pattern: &str, v: &PatternValues<'_>) -> String {
    let mut out = String::with_capacity(v.work_dir.len() + pattern.len() + 16);
    let mut rest = pattern;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let code = after.chars().next();
        let value = match code {
            Some('A') => Some(v.array_job_id.to_string()),
            Some('a') => Some(v.array_task_id.unwrap_or(4_294_967_294).to_string()),
            Some('j') => Some(v.job_id.to_string()),
            Some('u') => Some(v.user.to_string()),
            Some('x') => Some(v.name.to_string()),
            _ => None,
        };
        match value {
            Some(text) => {
                out.push_str(&text);
                rest = &after[1..];
            }
            None => {
                out.push('%');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if !out.starts_with('/') {
        let dir = v.work_dir.trim_end_matches('/');
        out.insert(0, '/');
        out.insert_str(0, dir);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_widths_and_relative_paths() {
        let v = PatternValues {
            job_id: 42,
            job_step: Some("42.3"),
            array_job_id: 40,
            array_task_id: Some(2),
            name: "sim",
            user: "alice",
            node: "n7",
            node_index: 1,
            task: 5,
            step: "3",
            work_dir: "/home/alice/",
        };
        assert_eq!(
            expand("out-%j-%J-%A_%a-%x-%u-%N-%n-%3t-%s-%%-%q-%", &v),
            "/home/alice/out-42-42.3-40_2-sim-alice-n7-1-005-3-%-%q-%"
        );
        assert_eq!(expand("/tmp/%6j.out", &v), "/tmp/000042.out");
        let batch = PatternValues {
            job_id: 9,
            array_job_id: 9,
            step: "batch",
            work_dir: "/w",
            ..PatternValues::default()
        };
        assert_eq!(expand("%J.%a.%s", &batch), "/w/9.4294967294.batch");
    }

    #[test]
    fn shown_paths_expand_only_what_the_job_query_knows() {
        let v = PatternValues {
            job_id: 42,
            array_job_id: 40,
            array_task_id: Some(2),
            name: "sim",
            user: "alice",
            work_dir: "/home/alice",
            ..PatternValues::default()
        };
        assert_eq!(
            expand_shown("o-%A_%a-%j-%u-%x-%N-%n-%t-%s-%4j-%%", &v),
            "/home/alice/o-40_2-42-alice-sim-%N-%n-%t-%s-%4j-%%"
        );
        assert_eq!(expand_shown("/tmp/%N.out", &v), "/tmp/%N.out");
    }
}
