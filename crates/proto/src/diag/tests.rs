use super::*;
use crate::{CtldRequest, CtldResponse};

#[test]
fn diag_request_and_answer_round_trip_in_postcard_and_json() {
    let stats = DiagStats {
        req_time: 20,
        req_time_start: 10,
        jobs_submitted: 3,
        schedule: SchedStats {
            total_cycles: 2,
            cycle_sum: 300,
            ..SchedStats::default()
        },
        rpc_by_type: vec![RpcTypeStat {
            name: "REQUEST_PING".into(),
            id: 1008,
            count: 1,
            total_time: 9,
        }],
        rpc_by_user: vec![RpcUserStat {
            user: "root".into(),
            uid: 0,
            count: 1,
            total_time: 9,
        }],
        ..DiagStats::default()
    };
    let resp = CtldResponse::Diag(Box::new(stats.clone()));
    let bin = postcard::to_allocvec(&resp).unwrap();
    match postcard::from_bytes::<CtldResponse>(&bin).unwrap() {
        CtldResponse::Diag(back) => assert_eq!(*back, stats),
        other => panic!("unexpected {other:?}"),
    }
    let json = serde_json::to_string(&stats).unwrap();
    assert_eq!(serde_json::from_str::<DiagStats>(&json).unwrap(), stats);
    for reset in [false, true] {
        let bin = postcard::to_allocvec(&CtldRequest::Diag { reset }).unwrap();
        match postcard::from_bytes::<CtldRequest>(&bin).unwrap() {
            CtldRequest::Diag { reset: back } => assert_eq!(back, reset),
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn means_of_nothing_are_zero() {
    assert_eq!(mean(10, 0), 0);
    assert_eq!(mean(10, 3), 3);
}
