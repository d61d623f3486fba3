//! The PMI servers' room: what a step supervisor (`taskd`) runs for
//! `srun --mpi=pmi2` (`pmi2`, Slurm's mpi/pmi2 plugin) and
//! `srun --mpi=pmix` (`pmix`, Slurm's mpi/pmix plugin). Both serve the
//! local tasks and send their fences to srun (`FenceIn`/`FenceOut`).
//!
//! May import: the leaf `to_srun` (the supervisor's connection to srun)
//! and nothing else of the crate; `taskd` imports this room, never the
//! other way.

pub mod pmi2;
pub mod pmix;
