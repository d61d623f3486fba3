//! srun(1) `--cpu-bind` and `--hint`, parsed: what srun checks before it
//! asks for a step, and what the node's task/affinity binds by.

use serde::{Deserialize, Serialize};

/// How task/affinity binds each task of a step (srun(1) `--cpu-bind`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpuBindType {
    /// No `--cpu-bind`: task/affinity binds to cores where the tasks fit
    /// the step's CPUs (Slurm's default), else not at all.
    #[default]
    Auto,
    /// `none`: not bound.
    None,
    /// `cores`: each task to the cores its CPUs per task need.
    Cores,
    /// `threads`: each task to as many threads (the same as cores where
    /// a node has one thread per core).
    Threads,
    /// `sockets`, `ldoms`, `boards`: to the step's CPUs on the node (muster
    /// models one socket's worth: all of them).
    Sockets,
    /// `rank`: task N (node-local) to the step's Nth CPU.
    Rank,
    /// `map_cpu:<list>`: task N to the Nth CPU id of the list (wrapping).
    MapCpu(Vec<u32>),
    /// `mask_cpu:<list>`: task N to the CPUs of the Nth mask (wrapping),
    /// each mask the CPU ids whose bits are set.
    MaskCpu(Vec<Vec<u32>>),
}

/// A parsed `--cpu-bind` value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuBind {
    /// `verbose`: each task's binding is reported on its stderr.
    pub verbose: bool,
    /// The binding.
    pub kind: CpuBindType,
}

/// Why a `--cpu-bind` or `--hint` value was refused (srun prints it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuBindError {
    /// Not a type srun(1) knows.
    #[error("invalid --cpu-bind argument: {0}")]
    Bind(String),
    /// Not a hint srun(1) knows.
    #[error("invalid --hint argument: {0}")]
    Hint(String),
}

impl CpuBind {
    /// Parses `[{quiet|verbose},]type` with srun(1)'s types (`q`, `v`,
    /// `no` and the `_`/`-` spellings included).
    pub fn parse(text: &str) -> Result<CpuBind, CpuBindError> {
        let bad = || CpuBindError::Bind(text.to_string());
        let mut bind = CpuBind::default();
        let mut kind: Option<CpuBindType> = None;
        let mut parts = text.split(',').peekable();
        while let Some(part) = parts.next() {
            let lower = part.trim().to_ascii_lowercase();
            let (name, list) = match lower.split_once(':') {
                Some((n, l)) => (n.replace('-', "_"), Some(l.to_string())),
                None => (lower.replace('-', "_"), None),
            };
            let next = match name.as_str() {
                "q" | "quiet" => {
                    bind.verbose = false;
                    continue;
                }
                "v" | "verbose" => {
                    bind.verbose = true;
                    continue;
                }
                "no" | "none" => CpuBindType::None,
                "cores" => CpuBindType::Cores,
                "threads" => CpuBindType::Threads,
                "sockets" | "ldoms" | "boards" => CpuBindType::Sockets,
                "rank" => CpuBindType::Rank,
                "map_cpu" | "mask_cpu" => {
                    // The list runs to the end: its items are separated by
                    // the same commas.
                    let mut items: Vec<String> = list.into_iter().collect();
                    items.extend(parts.by_ref().map(|p| p.trim().to_string()));
                    if items.is_empty() || items.iter().any(|i| i.is_empty()) {
                        return Err(bad());
                    }
                    if name == "map_cpu" {
                        CpuBindType::MapCpu(
                            items
                                .iter()
                                .map(|i| parse_cpu_id(i))
                                .collect::<Option<_>>()
                                .ok_or_else(bad)?,
                        )
                    } else {
                        CpuBindType::MaskCpu(
                            items
                                .iter()
                                .map(|i| parse_mask(i))
                                .collect::<Option<_>>()
                                .ok_or_else(bad)?,
                        )
                    }
                }
                _ => return Err(bad()),
            };
            if kind.is_some() {
                return Err(bad());
            }
            kind = Some(next);
        }
        bind.kind = kind.unwrap_or_default();
        Ok(bind)
    }

    /// The binding `--hint` implies where `--cpu-bind` names no type
    /// (srun(1) `--hint`): `nomultithread` one thread per core (threads),
    /// `compute_bound` and `memory_bound` cores, `multithread` threads.
    pub fn of_hint(hint: &str) -> Result<CpuBindType, CpuBindError> {
        match hint.trim().to_ascii_lowercase().as_str() {
            "nomultithread" | "multithread" => Ok(CpuBindType::Threads),
            "compute_bound" | "memory_bound" => Ok(CpuBindType::Cores),
            _ => Err(CpuBindError::Hint(hint.to_string())),
        }
    }

    /// The value as srun sends it: `verbose,` where asked, then the type
    /// as srun(1) writes it (`Auto` writes no type).
    pub fn to_text(&self) -> String {
        let kind = match &self.kind {
            CpuBindType::Auto => String::new(),
            CpuBindType::None => "none".into(),
            CpuBindType::Cores => "cores".into(),
            CpuBindType::Threads => "threads".into(),
            CpuBindType::Sockets => "sockets".into(),
            CpuBindType::Rank => "rank".into(),
            CpuBindType::MapCpu(ids) => format!(
                "map_cpu:{}",
                ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
            ),
            CpuBindType::MaskCpu(masks) => format!(
                "mask_cpu:{}",
                masks
                    .iter()
                    .map(|m| mask_hex(m))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        let verbose = if self.verbose { "verbose" } else { "" };
        match (verbose.is_empty(), kind.is_empty()) {
            (true, _) => kind,
            (false, true) => verbose.to_string(),
            (false, false) => format!("{verbose},{kind}"),
        }
    }
}

/// A `map_cpu` id: decimal, or hexadecimal with `0x`.
fn parse_cpu_id(text: &str) -> Option<u32> {
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A `mask_cpu` mask (hexadecimal, `0x` optional, any length): the ids of
/// its set bits. An empty mask is refused.
fn parse_mask(text: &str) -> Option<Vec<u32>> {
    let hex = text.strip_prefix("0x").unwrap_or(text);
    if hex.is_empty() {
        return None;
    }
    let mut ids = Vec::new();
    for (pos, c) in hex.chars().rev().enumerate() {
        let nibble = c.to_digit(16)?;
        for bit in 0..4 {
            if nibble & (1 << bit) != 0 {
                ids.push(pos as u32 * 4 + bit);
            }
        }
    }
    (!ids.is_empty()).then_some(ids)
}

/// CPU ids as a hexadecimal mask the way Slurm prints one (`0x3`).
pub fn mask_hex(ids: &[u32]) -> String {
    let Some(top) = ids.iter().max() else {
        return "0x0".to_string();
    };
    let mut nibbles = vec![0u8; (*top / 4 + 1) as usize];
    for id in ids {
        nibbles[(id / 4) as usize] |= 1 << (id % 4);
    }
    let digits: String = nibbles
        .iter()
        .rev()
        .map(|n| char::from_digit(u32::from(*n), 16).unwrap_or('0'))
        .collect();
    format!("0x{digits}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_srun_cpu_bind_forms() {
        let p = |t: &str| CpuBind::parse(t).unwrap();
        assert_eq!(
            p("verbose,cores"),
            CpuBind {
                verbose: true,
                kind: CpuBindType::Cores
            }
        );
        assert_eq!(p("v").kind, CpuBindType::Auto);
        assert!(p("v").verbose);
        assert_eq!(p("no").kind, CpuBindType::None);
        assert_eq!(p("q,none").kind, CpuBindType::None);
        assert_eq!(p("map_cpu:1,0").kind, CpuBindType::MapCpu(vec![1, 0]));
        assert_eq!(p("map-cpu:0x2").kind, CpuBindType::MapCpu(vec![2]));
        assert_eq!(
            p("verbose,mask_cpu:0x3,c").kind,
            CpuBindType::MaskCpu(vec![vec![0, 1], vec![2, 3]])
        );
        assert_eq!(p("ldoms").kind, CpuBindType::Sockets);
        for bad in [
            "cores,threads",
            "bogus",
            "map_cpu:",
            "mask_cpu:0x0",
            "map_cpu:x",
        ] {
            assert!(CpuBind::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn text_round_trips_and_masks_print_as_slurm_does() {
        for t in [
            "verbose,cores",
            "none",
            "map_cpu:1,0",
            "mask_cpu:0x3,0x10",
            "verbose",
        ] {
            assert_eq!(CpuBind::parse(t).unwrap().to_text(), t);
        }
        assert_eq!(mask_hex(&[1]), "0x2");
        assert_eq!(mask_hex(&[0, 1, 4]), "0x13");
        assert_eq!(mask_hex(&[]), "0x0");
    }

    #[test]
    fn hints_imply_a_binding() {
        assert_eq!(CpuBind::of_hint("nomultithread"), Ok(CpuBindType::Threads));
        assert_eq!(CpuBind::of_hint("compute_bound"), Ok(CpuBindType::Cores));
        assert!(CpuBind::of_hint("lots").is_err());
    }
}
