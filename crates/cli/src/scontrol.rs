//! `scontrol` (being written).

/// Runs `scontrol`.
pub fn main(_args: Vec<String>) -> i32 {
    eprintln!("scontrol: not implemented yet");
    1
}
