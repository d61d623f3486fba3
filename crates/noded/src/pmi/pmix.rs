//! The PMIx server of a step on one node (`srun --mpi=pmix`, Slurm's
//! mpi/pmix plugin): the system OpenPMIx library (libpmix, through
//! [`ffi`]) serves the local tasks, and its fences travel over the same
//! tree as PMI's (srun the root, `FenceIn`/`FenceOut`).
//!
//! ```text
//!   supervisor: PMIx_server_init, register_nspace (job, node and rank info)
//!     per task: register_client, setup_fork --> PMIX_* in the task's env
//!   task --PMIx_Fence--> libpmix (all local tasks in) --fence_nb upcall-->
//!     FenceIn{seq, "pmix.<node>" = hex(node's blob)} --> srun (all nodes)
//!   srun --FenceOut{seq, every node's blob}--> concatenated, in node order,
//!     to the upcall's callback --> libpmix answers its tasks
//! ```
//!
//! A task that calls PMIx_Abort, or exits after connecting without
//! PMIx_Finalize, makes the supervisor tell srun, which ends the step.
//!
//! Several node daemons on one host (`muster up`, the loopback test
//! clusters) give Open MPI ranks of different "nodes" one hostname: its
//! shared-memory BTL (vader) names its segments by hostname and local rank,
//! so they collide; run it there with `OMPI_MCA_btl=self,tcp`. Distinct
//! hosts (the multi-host test harness, real clusters) need nothing.
//!
//! Built only with the `pmix` cargo feature (it links libpmix); without it
//! [`Server`] has no values and [`Server::start`] says so.

// Without the feature the pure half below is only tested, not used.
#![cfg_attr(not(feature = "pmix"), allow(dead_code))]

#[cfg(feature = "pmix")]
mod ffi;
mod info;
#[cfg(feature = "pmix")]
mod server;
#[cfg(test)]
mod tests;

#[cfg(feature = "pmix")]
pub use server::Server;

/// Without the `pmix` feature: no server can exist.
#[cfg(not(feature = "pmix"))]
pub enum Server {}

#[cfg(not(feature = "pmix"))]
impl Server {
    /// Always refuses: this build has no PMIx.
    pub fn start(
        _l: &proto::StepLaunch,
        _to: crate::to_srun::ToSrun,
        _ids: (u32, u32),
    ) -> Result<Server, String> {
        Err("this node's muster was built without PMIx support (cargo feature `pmix`)".into())
    }

    /// The PMIx variables of one task.
    pub fn task_env(&self, _rank: u32) -> Result<Vec<(String, String)>, String> {
        match *self {}
    }

    /// srun merged the fence `seq` of every node.
    pub fn fence_out(&self, _seq: u32, _kvs: Vec<(String, String)>) {
        match *self {}
    }

    /// A local task ended.
    pub fn task_exited(&self, _rank: u32) {
        match *self {}
    }

    /// Shuts the library down.
    pub fn finish(&self) {
        match *self {}
    }

    /// The server's directory (its rendezvous files and sockets).
    pub fn tmpdir(&self) -> &std::path::Path {
        match *self {}
    }
}
