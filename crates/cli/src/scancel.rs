//! `scancel` (being written).

/// Runs `scancel`.
pub fn main(_args: Vec<String>) -> i32 {
    eprintln!("scancel: not implemented yet");
    1
}
