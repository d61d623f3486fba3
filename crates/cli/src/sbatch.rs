//! `sbatch` (being written).

/// Runs `sbatch`.
pub fn main(_args: Vec<String>) -> i32 {
    eprintln!("sbatch: not implemented yet");
    1
}
