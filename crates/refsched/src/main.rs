//! `refsched`: see the library's documentation.

fn main() {
    std::process::exit(refsched::main(std::env::args().skip(1).collect()));
}
