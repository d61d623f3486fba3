//! The node daemon's command-line options (slurmd's spelling), shared by
//! the crate root that parses them and the daemon that runs with them.

use std::path::PathBuf;

/// Command-line options of the node daemon (`muster noded`, slurmd's
/// spelling).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodedOptions {
    /// `-N`: the NodeName this daemon serves; `None` means the short host name.
    pub node_name: Option<String>,
    /// `-f`: slurm.conf (default `SLURM_CONF`, else `/etc/slurm/slurm.conf`).
    pub conf_path: PathBuf,
    /// `--conf-server HOST[:PORT]` (or `SLURM_CONF_SERVER`): configless
    /// mode: slurm.conf and the files beside it come from the controller
    /// there at start (see `daemon::configless`); `conf_path` is then the
    /// cached copy.
    pub conf_server: Option<String>,
    /// `--authinfo`: the `AuthInfo` options to sign the configless fetch
    /// with, before slurm.conf is there (`auth::AuthSettings::bootstrap`).
    pub authinfo: Option<String>,
    /// `-D`: stay in the foreground. The daemon always does; kept so that
    /// slurmd command lines work unchanged.
    pub foreground: bool,
    /// `-v` count: more logging.
    pub verbose: u8,
    /// The program that runs job supervisors as `PROGRAM noded --stepd
    /// DIR`. `None` means this executable, which must then dispatch
    /// `noded` to [`crate::main`] (as `muster` does); a test binary that runs the
    /// daemon in-process points it at one that does.
    pub stepd_program: Option<PathBuf>,
}

impl NodedOptions {
    /// Options with the defaults: this host's name, `SLURM_CONF` or
    /// `/etc/slurm/slurm.conf`.
    pub fn with_defaults() -> NodedOptions {
        NodedOptions {
            node_name: None,
            conf_path: default_conf_path(),
            conf_server: std::env::var("SLURM_CONF_SERVER")
                .ok()
                .filter(|v| !v.is_empty()),
            authinfo: None,
            foreground: true,
            verbose: 0,
            stepd_program: None,
        }
    }
}

fn default_conf_path() -> PathBuf {
    match std::env::var_os("SLURM_CONF") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from("/etc/slurm/slurm.conf"),
    }
}
