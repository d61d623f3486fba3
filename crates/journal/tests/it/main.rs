//! Behaviour of `journal` through its public API and its files on disk.
//!
//! One test binary (matklad): `util` holds helpers and an independent encoder of the v1
//! format, so these tests also pin the format rather than reuse the crate's own code.

mod fixture;
mod prop;
mod recovery;
mod snapshot;
mod util;
