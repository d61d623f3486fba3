//! The node daemon's room (slurmd): the one long-lived process per node.
//! It serves the controller's requests, keeps the job table, starts the
//! batch jobs' supervisors (through `stepd`'s launch and zygote), srun's
//! step supervisors (`steps`, running `taskd`) and the extern step holders
//! (`holder`), and reports every end to the controller (`link`).
//!
//! ```text
//!   shell (listener, requests, job watchers, recovery)
//!     |-- state (pure job table)   setup   hw   pids   credsock   confine
//!     |-- holder --+
//!     |-- steps ---+-- link::NodeLink (controller link, node facts) -- ctld
//!     +-- link::CtldLink (registration, job ends)
//! ```
//!
//! May import: the leaves (`spool`, `slots`, `gather`, `env`, `exec`,
//! `options`), `stepd` (launch, zygote, reaping a holder) and `taskd`'s
//! spec and control lines. Nothing outside imports this room but the
//! crate root (`run`, `state`). Inside, `holder` and `steps` know the
//! daemon only through [`link::NodeLink`], never `shell`.

pub mod state;

mod configless;
mod confine;
mod credsock;
mod fabric;
mod health;
mod holder;
mod hw;
mod link;
mod pids;
mod scripts;
mod setup;
mod shell;
mod steps;
mod xid;

pub use shell::run;
