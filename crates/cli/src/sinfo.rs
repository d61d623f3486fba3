//! `sinfo` (being written).

/// Runs `sinfo`.
pub fn main(_args: Vec<String>) -> i32 {
    eprintln!("sinfo: not implemented yet");
    1
}
