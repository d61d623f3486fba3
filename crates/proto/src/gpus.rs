//! `--gpu-bind` (srun(1)): which of a step's GPUs on a node each task is
//! given. srun checks the text with [`GpuBind::parse`]; the text travels
//! to the nodes as written, and each node binds its own tasks.

use serde::{Deserialize, Serialize};

/// A parsed `--gpu-bind` value (the `verbose,` prefix is accepted and
/// dropped).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GpuBind {
    /// `none`: every task sees all of the step's GPUs on its node (and the
    /// implicit per-task binding of `--gpus-per-task` is off).
    #[default]
    None,
    /// `closest`: the GPUs whose gres.conf `Cores=` share CPUs with the
    /// task's (all of them where that is not known).
    Closest,
    /// `single:N`: each task is bound to one GPU, N tasks per GPU in
    /// order (`--ntasks-per-gpu=N` implies it).
    Single(u32),
    /// `per_task:N` (implied by `--gpus-per-task=N`): N GPUs of its own for
    /// each task, in order.
    PerTask(u32),
    /// `map_gpu:ID,...`: task i (local id) gets `ids[i % len]`. An `ID*N`
    /// item stands for N copies.
    Map(Vec<u32>),
    /// `mask_gpu:MASK,...`: task i gets the GPUs whose bits are set in
    /// `masks[i % len]`.
    Mask(Vec<u64>),
}

impl GpuBind {
    /// Parses a `--gpu-bind` value: `[verbose,]none|closest|single:N|
    /// map_gpu:LIST|mask_gpu:LIST` (`map:`/`mask:`/`per_task:` as in
    /// `--tres-bind` too). `Err` carries srun's message.
    pub fn parse(text: &str) -> Result<GpuBind, String> {
        let bad = || format!("Invalid --gpu-bind argument: {text}");
        let mut rest = text.trim();
        if let Some(r) = rest.strip_prefix("verbose,") {
            rest = r;
        }
        let (kind, arg) = match rest.split_once(':') {
            Some((k, a)) => (k.to_ascii_lowercase(), Some(a)),
            None => (rest.to_ascii_lowercase(), None),
        };
        let positive = |a: Option<&str>| -> Result<u32, String> {
            a.and_then(|a| a.trim().parse::<u32>().ok())
                .filter(|n| *n > 0)
                .ok_or_else(bad)
        };
        match (kind.as_str(), arg) {
            ("none", None) => Ok(GpuBind::None),
            ("closest", None) => Ok(GpuBind::Closest),
            ("single", a) => positive(a).map(GpuBind::Single),
            ("per_task", a) => positive(a).map(GpuBind::PerTask),
            ("map_gpu" | "map", Some(a)) => {
                let mut ids = Vec::new();
                for item in a.split(',') {
                    let (id, times) = match item.split_once('*') {
                        Some((id, n)) => (id, n.trim().parse::<u32>().map_err(|_| bad())?),
                        None => (item, 1),
                    };
                    let id = id.trim().parse::<u32>().map_err(|_| bad())?;
                    ids.extend(std::iter::repeat_n(id, times as usize));
                }
                if ids.is_empty() {
                    return Err(bad());
                }
                Ok(GpuBind::Map(ids))
            }
            ("mask_gpu" | "mask", Some(a)) => {
                let mut masks = Vec::new();
                for item in a.split(',') {
                    let (mask, times) = match item.split_once('*') {
                        Some((m, n)) => (m, n.trim().parse::<u32>().map_err(|_| bad())?),
                        None => (item, 1),
                    };
                    let mask = mask.trim();
                    let hex = mask
                        .strip_prefix("0x")
                        .or_else(|| mask.strip_prefix("0X"))
                        .unwrap_or(mask);
                    let m = u64::from_str_radix(hex, 16).map_err(|_| bad())?;
                    masks.extend(std::iter::repeat_n(m, times as usize));
                }
                if masks.is_empty() {
                    return Err(bad());
                }
                Ok(GpuBind::Mask(masks))
            }
            _ => Err(bad()),
        }
    }

    /// The binding of a step's tasks: `--gpu-bind` if given, else the one
    /// `--gpus-per-task` (`per_task:N`) or `--ntasks-per-gpu` (`single:N`)
    /// implies, else none (every task sees all of the step's GPUs, as in
    /// Slurm).
    pub fn of_step(
        gpu_bind: Option<&str>,
        gpus_per_task: Option<u64>,
        ntasks_per_gpu: Option<u32>,
    ) -> GpuBind {
        if let Some(b) = gpu_bind.and_then(|t| GpuBind::parse(t).ok()) {
            return b;
        }
        match (gpus_per_task, ntasks_per_gpu) {
            (Some(n), _) if n > 0 => GpuBind::PerTask(n.min(u64::from(u32::MAX)) as u32),
            (_, Some(n)) if n > 0 => GpuBind::Single(n),
            _ => GpuBind::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GpuBind;

    #[test]
    fn parses_every_form() {
        assert_eq!(GpuBind::parse("none"), Ok(GpuBind::None));
        assert_eq!(GpuBind::parse("verbose,closest"), Ok(GpuBind::Closest));
        assert_eq!(GpuBind::parse("single:2"), Ok(GpuBind::Single(2)));
        assert_eq!(GpuBind::parse("map_gpu:1,0"), Ok(GpuBind::Map(vec![1, 0])));
        assert_eq!(GpuBind::parse("map:0*2,1"), Ok(GpuBind::Map(vec![0, 0, 1])));
        assert_eq!(
            GpuBind::parse("mask_gpu:0x3,C"),
            Ok(GpuBind::Mask(vec![3, 12]))
        );
        assert!(GpuBind::parse("single:0").is_err());
        assert!(GpuBind::parse("map_gpu:").is_err());
        assert!(GpuBind::parse("sideways").is_err());
    }

    #[test]
    fn options_imply_a_binding() {
        assert_eq!(GpuBind::of_step(None, None, None), GpuBind::None);
        assert_eq!(GpuBind::of_step(None, Some(1), None), GpuBind::PerTask(1));
        assert_eq!(GpuBind::of_step(None, None, Some(2)), GpuBind::Single(2));
        assert_eq!(GpuBind::of_step(Some("none"), Some(1), None), GpuBind::None);
        assert_eq!(
            GpuBind::of_step(Some("map_gpu:1,0"), Some(1), None),
            GpuBind::Map(vec![1, 0])
        );
    }
}
