//! The dependency rules `tidy` enforces: every edge between workspace
//! crates (normal `[dependencies]`, target-specific ones included; not dev
//! or build ones) is in `ALLOWED_EDGES`, and no pure crate reaches, through
//! workspace crates, one of `PURE_FORBIDDEN`. A new edge is an API change:
//! add it to the table in the same commit and say so.

use std::path::Path;

/// Where the table lives, for the message of a failing check.
pub const TABLE_AT: &str = "xtask/src/deps.rs, ALLOWED_EDGES";

/// The allowed edges between workspace crates, `(from, to)`, each once:
/// today's edges, so the layering in ARCHITECTURE.md holds.
pub const ALLOWED_EDGES: &[(&str, &str)] = &[
    ("accounting", "model"),
    ("accounting", "proto"),
    ("auth", "conf"),
    ("auth", "proto"),
    ("bench", "client"),
    ("bench", "conf"),
    ("bench", "e2e"),
    ("bench", "model"),
    ("bench", "proto"),
    ("cli", "client"),
    ("cli", "hostlist"),
    ("cli", "model"),
    ("cli", "proto"),
    ("client", "auth"),
    ("client", "conf"),
    ("client", "proto"),
    ("client", "rpc"),
    ("conf", "hostlist"),
    ("conf", "model"),
    ("ctld", "accounting"),
    ("ctld", "auth"),
    ("ctld", "conf"),
    ("ctld", "engine"),
    ("ctld", "journal"),
    ("ctld", "model"),
    ("ctld", "proto"),
    ("ctld", "rpc"),
    ("engine", "conf"),
    ("engine", "hostlist"),
    ("engine", "model"),
    ("engine", "proto"),
    ("engine", "sched"),
    ("model", "hostlist"),
    ("muster", "auth"),
    ("muster", "cli"),
    ("muster", "client"),
    ("muster", "conf"),
    ("muster", "ctld"),
    ("muster", "hostlist"),
    ("muster", "model"),
    ("muster", "noded"),
    ("muster", "proto"),
    ("muster", "restd"),
    ("muster", "sim"),
    ("noded", "auth"),
    ("noded", "conf"),
    ("noded", "hostlist"),
    ("noded", "model"),
    ("noded", "proto"),
    ("noded", "rpc"),
    ("proto", "model"),
    ("refsched", "sched"),
    ("refsched", "sim"),
    ("restd", "auth"),
    ("restd", "charts"),
    ("restd", "cli"),
    ("restd", "client"),
    ("restd", "conf"),
    ("restd", "hostlist"),
    ("restd", "model"),
    ("restd", "proto"),
    ("rpc", "proto"),
    ("sched", "hostlist"),
    ("sched", "model"),
    ("sim", "charts"),
    ("sim", "conf"),
    ("sim", "engine"),
    ("sim", "hostlist"),
    ("sim", "model"),
    ("sim", "proto"),
    ("sim", "sched"),
];

/// What a pure crate may not depend on, directly or through workspace
/// crates: the I/O crates, the daemons and any async runtime.
pub const PURE_FORBIDDEN: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "futures",
    "futures-executor",
    "rpc",
    "journal",
    "accounting",
    "auth",
    "client",
    "ctld",
    "noded",
];

/// One crate's normal dependencies, by name.
#[derive(Debug)]
pub struct Manifest {
    pub name: String,
    pub deps: Vec<String>,
}

/// Reads `crates/*/Cargo.toml` under `root`.
pub fn read_manifests(root: &Path) -> Result<Vec<Manifest>, String> {
    let dir = root.join("crates");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut manifests = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .path()
            .join("Cargo.toml");
        if !path.is_file() {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let manifest = parse_manifest(&text)
            .ok_or_else(|| format!("{}: no [package] name", path.display()))?;
        manifests.push(manifest);
    }
    manifests.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(manifests)
}

/// The package name and normal dependency names of one `Cargo.toml`: the
/// keys of `[dependencies]` and `[target.*.dependencies]`, and the
/// `[dependencies.NAME]` tables.
pub fn parse_manifest(text: &str) -> Option<Manifest> {
    let (mut name, mut deps) = (None, Vec::new());
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = header.trim().to_string();
            if let Some(dep) = section.strip_prefix("dependencies.") {
                deps.push(dep.trim_matches('"').to_string());
            }
            continue;
        }
        let key = line
            .split(['=', '.'])
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        let normal = section == "dependencies"
            || (section.starts_with("target.") && section.ends_with(".dependencies"));
        if normal && !key.is_empty() {
            deps.push(key.to_string());
        } else if section == "package" && key == "name" {
            let value = line.split_once('=')?.1.trim().trim_matches('"');
            name = Some(value.to_string());
        }
    }
    deps.sort();
    deps.dedup();
    Some(Manifest { name: name?, deps })
}

/// The rules broken by `manifests`, one line each: an edge between two of
/// them that `allowed` lacks, and a crate of `pure` that reaches one of
/// `forbidden` (with the path it takes).
pub fn check(
    manifests: &[Manifest],
    allowed: &[(&str, &str)],
    pure: &[&str],
    forbidden: &[&str],
) -> Vec<String> {
    let is_member = |n: &str| manifests.iter().any(|m| m.name == n);
    let deps_of = |n: &str| {
        manifests
            .iter()
            .find(|m| m.name == n)
            .map_or(&[][..], |m| &m.deps[..])
    };
    let mut problems = Vec::new();
    for m in manifests {
        for d in m.deps.iter().filter(|d| is_member(d)) {
            if !allowed.contains(&(m.name.as_str(), d.as_str())) {
                problems.push(format!(
                    "dependency edge {} -> {d} is not in the allowed table ({TABLE_AT})",
                    m.name
                ));
            }
        }
    }
    for p in pure {
        // Breadth first, so the path shown is a shortest one.
        let mut paths: Vec<Vec<&str>> = vec![vec![p]];
        let mut seen = vec![*p];
        let mut k = 0;
        while k < paths.len() {
            let path = paths[k].clone();
            k += 1;
            let last = path[path.len() - 1];
            for d in deps_of(last) {
                if seen.contains(&d.as_str()) {
                    continue;
                }
                seen.push(d);
                let mut next = path.clone();
                next.push(d);
                if forbidden.contains(&d.as_str()) {
                    problems.push(format!(
                        "pure crate {p} depends on {d} ({})",
                        next.join(" -> ")
                    ));
                } else if is_member(d) {
                    paths.push(next);
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(name: &str, deps: &[&str]) -> Manifest {
        Manifest {
            name: name.to_string(),
            deps: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn an_edge_outside_the_table_and_a_pure_crate_reaching_rpc_are_reported() {
        let manifests = [
            manifest("hostlist", &["thiserror"]),
            manifest("model", &["hostlist", "serde"]),
            manifest("sched", &["model", "helper"]),
            manifest("helper", &["rpc"]),
            manifest("rpc", &["tokio"]),
            manifest("cli", &["model"]),
        ];
        let allowed = [
            ("model", "hostlist"),
            ("sched", "model"),
            ("sched", "helper"),
            ("helper", "rpc"),
        ];
        let problems = check(&manifests, &allowed, &["sched", "model"], &["rpc", "tokio"]);
        assert_eq!(
            problems,
            [
                format!("dependency edge cli -> model is not in the allowed table ({TABLE_AT})"),
                "pure crate sched depends on rpc (sched -> helper -> rpc)".to_string(),
            ]
        );
    }

    #[test]
    fn the_allowed_table_keeps_the_pure_crates_pure() {
        let mut manifests: Vec<Manifest> = Vec::new();
        for &(from, to) in ALLOWED_EDGES {
            for n in [from, to] {
                if !manifests.iter().any(|m| m.name == n) {
                    manifests.push(manifest(n, &[]));
                }
            }
            let m = manifests
                .iter_mut()
                .find(|m| m.name == from)
                .expect("added");
            m.deps.push(to.to_string());
        }
        assert!(
            ALLOWED_EDGES.windows(2).all(|w| w[0] < w[1]),
            "sorted, each once"
        );
        let problems = check(
            &manifests,
            ALLOWED_EDGES,
            crate::PURE_CRATES,
            PURE_FORBIDDEN,
        );
        assert_eq!(problems, Vec::<String>::new());
    }

    #[test]
    fn a_manifest_gives_its_normal_dependencies() {
        let text = r#"
[package]
name = "engine"
version.workspace = true

[dependencies]
serde.workspace = true
model = { workspace = true }
"proto" = { path = "../proto" }

[target.'cfg(unix)'.dependencies]
libc = "0.2"

[dependencies.sched]
path = "../sched"

[dev-dependencies]
proptest.workspace = true

[build-dependencies]
cc = "1"
"#;
        let m = parse_manifest(text).expect("a package");
        assert_eq!(m.name, "engine");
        assert_eq!(m.deps, ["libc", "model", "proto", "sched", "serde"]);
    }
}
