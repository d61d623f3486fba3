//! With the `pmix` feature: links the system OpenPMIx library (pkg-config
//! `pmix`, Debian's libpmix-dev) and compiles `src/pmi/pmix/layout.c`, which
//! reports the C layout of the structures `pmix::ffi` declares by hand (a
//! unit test compares them). Without the feature it does nothing.

fn main() {
    #[cfg(feature = "pmix")]
    pmix();
}

#[cfg(feature = "pmix")]
fn pmix() {
    println!("cargo:rerun-if-changed=src/pmi/pmix/layout.c");
    let lib = match pkg_config::Config::new().atleast_version("4").probe("pmix") {
        Ok(lib) => lib,
        Err(e) => panic!(
            "the `pmix` feature needs the OpenPMIx development files \
             (Debian: apt-get install libpmix-dev): {e}"
        ),
    };
    let mut build = cc::Build::new();
    build.file("src/pmi/pmix/layout.c");
    for dir in &lib.include_paths {
        build.include(dir);
    }
    build.compile("muster_pmix_layout");
}
