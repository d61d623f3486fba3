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
    /// `sattach` clients: they get the tasks' output and ends too.
    attached: Arc<Mutex<Vec<TcpStream>>>,
    identity: proto::Identity,
}

impl ToSrun {
    /// The connection `stream` (none: srun could not be reached), whose
    /// messages carry `identity`.
    pub fn new(stream: Option<TcpStream>, identity: proto::Identity) -> ToSrun {
        ToSrun {
            stream: Arc::new(Mutex::new(stream)),
            attached: Arc::new(Mutex::new(Vec::new())),
            identity,
        }
    }

    /// Adds an `sattach` client: `hello` first, then what srun gets from
    /// now on (but PMI fences). False when it could not be told.
    pub fn attach(&self, mut stream: TcpStream, hello: StepdToSrun) -> bool {
        let env = rpc::envelope(self.identity.clone(), hello);
        if rpc::write_frame(&mut stream, &env).is_err() {
            return false;
        }
        let mut list = self.attached.lock().unwrap_or_else(|p| p.into_inner());
        list.push(stream);
        true
    }

    /// Sends one message; a gone srun is ignored (the step goes on, as
    /// Slurm's does when srun dies, until it is ended).
    pub fn send(&self, msg: StepdToSrun) {
        let mut guard = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        let env = rpc::envelope(self.identity.clone(), msg);
        if let Some(s) = guard.as_mut() {
            if rpc::write_frame(s, &env).is_err() {
                *guard = None;
            }
        }
        drop(guard);
        if matches!(env.body, StepdToSrun::FenceIn { .. }) {
            return;
        }
        let mut list = self.attached.lock().unwrap_or_else(|p| p.into_inner());
        list.retain_mut(|s| rpc::write_frame(s, &env).is_ok());
    }
}
