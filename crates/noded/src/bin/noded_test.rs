//! `noded` as a program of its own, for the tests: `noded-test-bin noded
//! [options]` runs the daemon, `noded-test-bin noded --stepd DIR` a job
//! supervisor, exactly as `muster noded ...` does.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(noded::main(args));
}
