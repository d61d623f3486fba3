//! `muster-cli` (the user commands alone) is linked as a position-dependent
//! executable: its code is still compiled position-independent, but the
//! linker resolves its thousands of relative relocations at link time, so
//! the dynamic loader neither applies them nor copies the pages they are in
//! at every start, which is most of what starting a command costs beyond
//! exec itself. The daemons' `muster` stays a PIE (address randomization
//! for the long-running, network-facing processes).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=muster-cli=-no-pie");
    }
}
