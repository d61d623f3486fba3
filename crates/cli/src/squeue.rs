//! `squeue` (being written).

/// Runs `squeue`.
pub fn main(_args: Vec<String>) -> i32 {
    eprintln!("squeue: not implemented yet");
    1
}
