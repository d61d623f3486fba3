//! The batch job's supervisor room (slurmstepd's batch part): the
//! supervisor process of each batch job (`supervisor`), the zygote that
//! forks them (`zygote`), and `launch`, the two sides of starting one: the
//! daemon's (the job directory, the spec, the answer) and the
//! supervisor's (the script's fork and exec).
//!
//! ```text
//!   daemon --launch::start_supervisor--> zygote --fork--> supervisor::main
//!                                                           | launch::spawn_script
//!                                                           v
//!                                                        batch script
//! ```
//!
//! May import: the leaves (`spool`, `slots`, `gather`, `env`, `exec`).
//! Never the daemon's room, `taskd` or `pmi`: the supervisor outlives the
//! daemon and talks to it only through the spool and its stdio.

pub mod launch;
pub mod supervisor;
pub mod zygote;
