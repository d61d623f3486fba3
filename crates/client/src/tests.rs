//! `Client::call` against a stand-in controller on loopback: a submission
//! whose answer was lost is sent again with its token; a request over the
//! controller's limit is not sent.

use super::*;
use proto::{JobDesc, SubmitReply};
use std::net::TcpListener;

/// A client of a controller at 127.0.0.1:`port`, signing with a key of
/// its own (the stand-in does not check credentials).
fn client_for(dir: &Path, port: u16) -> Client {
    let key = dir.join("key");
    auth::create_key(&key).expect("a key");
    let text = format!(
        "ClusterName=t\nAuthType=auth/muster\nSlurmctldHost=h(127.0.0.1)\nSlurmctldPort={port}\n\
         AuthInfo=key={}\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1 Default=YES\n",
        key.display()
    );
    let cfg = conf::parse_str(&text, &dir.join("slurm.conf"), &mut |_| {
        Err(std::io::Error::other("no includes"))
    })
    .expect("slurm.conf")
    .config;
    Client::new(cfg, current_identity())
}

fn submission() -> CtldRequest {
    CtldRequest::Submit(Box::new(JobDesc {
        name: "j".into(),
        script: "#!/bin/sh\n".into(),
        ..JobDesc::default()
    }))
}

fn token_of(req: &CtldRequest) -> Option<String> {
    match req {
        CtldRequest::Submit(d) => d.submit_token.clone(),
        _ => None,
    }
}

#[test]
fn issue_34_a_submission_whose_answer_was_lost_is_sent_again_with_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let controller = std::thread::spawn(move || {
        let mut tokens = Vec::new();
        // The first try is read and its connection closed unanswered, as
        // by a controller that journaled it and died; the second answered.
        for answer in [false, true] {
            let (mut s, _) = listener.accept().unwrap();
            let env: proto::Envelope<CtldRequest> = rpc::read_frame(&mut s).unwrap();
            tokens.push(token_of(&env.body));
            if answer {
                let reply = CtldResponse::Submitted(SubmitReply {
                    job_id: model::JobId(42),
                    test_only: None,
                    partition: "p".into(),
                });
                rpc::write_frame(&mut s, &rpc::envelope(current_identity(), reply)).unwrap();
            }
        }
        tokens
    });
    let client = client_for(dir.path(), port);
    let got = client.call(submission());
    let tokens = controller.join().unwrap();
    match got {
        Ok(CtldResponse::Submitted(r)) => assert_eq!(r.job_id, model::JobId(42)),
        other => panic!("{other:?}"),
    }
    assert_eq!(tokens.len(), 2);
    let first = tokens[0].as_deref().expect("a token");
    assert!(proto::SubmitToken::parse(first).is_some(), "{first}");
    assert_eq!(tokens[0], tokens[1], "sent again with the same token");
}

#[test]
fn issue_34_a_request_over_the_controllers_limit_is_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens there: a request that was sent would be Unreachable.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = client_for(dir.path(), port);
    let mut req = submission();
    if let CtldRequest::Submit(d) = &mut req {
        d.script = "#".repeat(proto::MAX_REQUEST_BYTES as usize);
    }
    match client.call(req) {
        Err(ClientError::TooLarge { bytes, limit }) => {
            assert!(bytes > limit, "{bytes}");
            assert_eq!(limit, u64::from(proto::MAX_REQUEST_BYTES));
        }
        other => panic!("{other:?}"),
    }
    let e = ClientError::TooLarge {
        bytes: 17_000_000,
        limit: u64::from(proto::MAX_REQUEST_BYTES),
    };
    assert_eq!(
        e.to_string(),
        "Request too large (17000000 bytes, limit 16 MiB)"
    );
}
