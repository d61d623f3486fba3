//! Licenses: cluster-wide counters named in slurm.conf (`Licenses=foo:4,bar`)
//! and asked for by jobs (`sbatch -L foo:2,bar`), as slurm.conf(5) and
//! sbatch(1) describe them. A license is held from a job's start to its end
//! (COMPLETING included).
//!
//! One syntax serves both: comma-separated `name[:count]`, the count 1 where
//! it is left out. A job's list means all of them (AND); Slurm's `|` (any one
//! of them) is refused here, with [`LicenseSpecError::Or`].

use std::collections::BTreeMap;

/// Why a license list does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LicenseSpecError {
    /// An empty name (`-L :2`, `-L foo,,bar`).
    #[error("invalid license specification \"{spec}\": empty license name")]
    EmptyName {
        /// The whole list.
        spec: String,
    },
    /// A count that is not a positive whole number.
    #[error(
        "invalid license specification \"{spec}\": count \"{count}\" is not a positive number"
    )]
    BadCount {
        /// The whole list.
        spec: String,
        /// The count as given.
        count: String,
    },
    /// `a|b`: any one of several licenses, which muster does not implement.
    #[error("invalid license specification \"{spec}\": '|' (any one of several licenses) is not supported; list the licenses the job needs with ','")]
    Or {
        /// The whole list.
        spec: String,
    },
}

/// A parsed license list: each name once (counts of a repeated name added
/// up), in name order.
pub type Licenses = BTreeMap<String, u32>;

/// Parses `name[:count][,name[:count]...]` (also `name=count`, as
/// slurm.conf's own examples write counts). An empty or blank list is no
/// licenses.
pub fn parse(spec: &str) -> Result<Licenses, LicenseSpecError> {
    let mut out = Licenses::new();
    let trimmed = spec.trim();
    if trimmed.is_empty() {
        return Ok(out);
    }
    if trimmed.contains('|') {
        return Err(LicenseSpecError::Or { spec: spec.into() });
    }
    for item in trimmed.split(',') {
        let item = item.trim();
        let (name, count) = match item.split_once([':', '=']) {
            Some((n, c)) => (n.trim(), Some(c.trim())),
            None => (item, None),
        };
        if name.is_empty() {
            return Err(LicenseSpecError::EmptyName { spec: spec.into() });
        }
        let count = match count {
            None => 1,
            Some(c) => match c.parse::<u32>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(LicenseSpecError::BadCount {
                        spec: spec.into(),
                        count: c.into(),
                    })
                }
            },
        };
        let n = out.entry(name.to_string()).or_insert(0);
        *n = n.saturating_add(count);
    }
    Ok(out)
}

/// Slurm's spelling of a job's licenses (`Licenses=foo:1,bar:2` in
/// `scontrol show job`, squeue `%W`): `name:count`, comma-separated.
pub fn format(licenses: &Licenses) -> String {
    let mut s = String::new();
    for (name, count) in licenses {
        if !s.is_empty() {
            s.push(',');
        }
        s.push_str(name);
        s.push(':');
        s.push_str(&count.to_string());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_default_to_one_and_repeats_add_up() {
        let l = parse("foo:2,bar, foo:3").unwrap();
        assert_eq!(format(&l), "bar:1,foo:5");
        assert_eq!(parse("matlab=10").unwrap()["matlab"], 10);
        assert!(parse("  ").unwrap().is_empty());
    }

    #[test]
    fn or_bad_counts_and_empty_names_are_refused() {
        assert!(matches!(parse("a|b"), Err(LicenseSpecError::Or { .. })));
        assert!(matches!(
            parse("a:0"),
            Err(LicenseSpecError::BadCount { .. })
        ));
        assert!(matches!(
            parse("a:x"),
            Err(LicenseSpecError::BadCount { .. })
        ));
        assert!(matches!(
            parse("a,,b"),
            Err(LicenseSpecError::EmptyName { .. })
        ));
    }
}
