//! Helpers the node daemon's integration tests share: a test identity and
//! cluster key, credentials signed with it, and a fake controller.

use proto::{CtldRequest, CtldResponse, Identity};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

pub fn identity() -> Identity {
    Identity {
        uid: nix::unistd::getuid().as_raw(),
        gid: nix::unistd::getgid().as_raw(),
        user: "tester".into(),
        host: "ctl".into(),
    }
}

/// Authentication for a test daemon: a fresh cluster key in `dir` (the
/// tests sign their requests with it) and this user as SlurmUser, so the
/// tests may launch jobs.
pub fn auth_conf(dir: &std::path::Path) -> String {
    auth::create_key(&dir.join("muster.key")).unwrap();
    let user = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    format!(
        "AuthType=auth/muster\nAuthInfo=key={0}/muster.key,socket={0}/auth.sock\nSlurmUser={user}\n",
        dir.display()
    )
}

/// A fresh credential for `identity()`, signed with the key in `dir`.
pub fn credential(dir: &std::path::Path) -> Option<String> {
    let key = auth::load_key(&dir.join("muster.key")).unwrap();
    Some(
        auth::Signer::with_key(&key)
            .sign(&identity(), chrono::Utc::now().timestamp())
            .unwrap(),
    )
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A controller that answers Ok to everything and records what it got.
pub async fn fake_controller(listener: TcpListener, seen: Arc<Mutex<Vec<CtldRequest>>>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        let seen = seen.clone();
        tokio::spawn(async move {
            while let Ok(env) =
                rpc::read_frame_async::<_, CtldRequest>(&mut stream, Duration::from_secs(5)).await
            {
                seen.lock().unwrap().push(env.body);
                let reply = rpc::envelope(identity(), CtldResponse::Ok);
                if rpc::write_frame_async(&mut stream, &reply).await.is_err() {
                    return;
                }
            }
        });
    }
}
