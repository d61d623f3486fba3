//! The step supervisor's connection to srun, shared by its task I/O
//! threads (`taskd`) and its PMI servers (`pmi`). A leaf: it imports
//! nothing of the crate.

use proto::StepdToSrun;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

/// The shared, framed connection to srun.
#[derive(Clone)]
pub struct ToSrun {
    stream: Arc<Mutex<Option<TcpStream>>>,
    identity: proto::Identity,
}

impl ToSrun {
    /// The connection `stream` (none: srun could not be reached), whose
    /// messages carry `identity`.
    pub fn new(stream: Option<TcpStream>, identity: proto::Identity) -> ToSrun {
        ToSrun {
            stream: Arc::new(Mutex::new(stream)),
            identity,
        }
    }

    /// Sends one message; a gone srun is ignored (the step goes on, as
    /// Slurm's does when srun dies, until it is ended).
    pub fn send(&self, msg: StepdToSrun) {
        let mut guard = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = guard.as_mut() {
            let env = rpc::envelope(self.identity.clone(), msg);
            if rpc::write_frame(s, &env).is_err() {
                *guard = None;
            }
        }
    }
}
