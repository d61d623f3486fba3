use super::*;
use crate::tests::{admin, desc, engine_on, other, user, CONF};
use crate::Input;
use proto::acctdb::{AcctUser, Assoc, UsageEntry};
use proto::{CtldRequest, CtldResponse, JobFilter, SlurmError};

/// alice (uid 1000) and bob (uid 1001) each with a job, under `private`.
fn engine_with(private: &str) -> (crate::Engine, model::JobId, model::JobId) {
    let mut e = engine_on(&format!("{CONF}PrivateData={private}\n"));
    let a = e.on_submit(desc(), &user(), 1).expect("accepted").job_id;
    let b = e.on_submit(desc(), &other(), 1).expect("accepted").job_id;
    e.schedule(1);
    (e, a, b)
}

fn ask(e: &mut crate::Engine, who: &Identity, req: CtldRequest) -> CtldResponse {
    e.apply(
        Input::Request {
            req: Box::new(req),
            who: who.clone(),
        },
        2,
    )
    .reply
    .expect("a request is answered")
}

fn job_ids(r: CtldResponse) -> Vec<u32> {
    match r {
        CtldResponse::Jobs(l) => l.jobs.iter().map(|j| j.job_id.0).collect(),
        other => panic!("{other:?}"),
    }
}

fn carol(level: AdminLevel) -> (Identity, AcctTables) {
    let who = Identity {
        uid: 1002,
        gid: 1002,
        user: "carol".into(),
        host: "h".into(),
    };
    let tables = AcctTables {
        users: vec![AcctUser {
            name: "carol".into(),
            default_account: String::new(),
            admin_level: level,
        }],
        ..AcctTables::default()
    };
    (who, tables)
}

#[test]
fn with_private_jobs_a_user_sees_only_their_own_jobs() {
    let (mut e, a, b) = engine_with("jobs");
    assert_eq!(
        job_ids(ask(&mut e, &user(), CtldRequest::ListJobs)),
        vec![a.0]
    );
    assert_eq!(
        job_ids(ask(&mut e, &other(), CtldRequest::ListJobs)),
        vec![b.0]
    );
    let everything = JobFilter::default();
    let r = ask(&mut e, &user(), CtldRequest::QueryJobs(everything.clone()));
    assert_eq!(job_ids(r), vec![a.0]);
    // Asked for by id, another user's job is as if it did not exist.
    let theirs = JobFilter {
        job_ids: vec![b.0],
        ..JobFilter::default()
    };
    assert!(job_ids(ask(&mut e, &user(), CtldRequest::QueryJobs(theirs))).is_empty());
    let r = ask(&mut e, &user(), CtldRequest::Explain { job_id: b });
    assert!(
        matches!(r, CtldResponse::Error(SlurmError::InvalidJobId)),
        "{r:?}"
    );
    // root sees both.
    let r = ask(&mut e, &admin(), CtldRequest::QueryJobs(everything));
    assert_eq!(job_ids(r), vec![a.0, b.0]);
    // The brief rows the controller encodes hold the same.
    use proto::JobRowSource;
    let rows = e
        .seen_by(&user())
        .job_rows(&JobFilter::default(), 2)
        .decoded()
        .unwrap();
    assert_eq!(rows.rows().map(|r| r.job_id).collect::<Vec<_>>(), vec![a]);
}

#[test]
fn operators_by_admin_level_see_everything_and_plain_users_do_not() {
    let (mut e, a, b) = engine_with("jobs");
    for (level, seen) in [
        (AdminLevel::None, vec![]),
        (AdminLevel::Operator, vec![a.0, b.0]),
        (AdminLevel::Administrator, vec![a.0, b.0]),
    ] {
        let (who, tables) = carol(level);
        e.on_assoc_tables(tables);
        assert_eq!(
            job_ids(ask(&mut e, &who, CtldRequest::ListJobs)),
            seen,
            "{level:?}"
        );
        assert_eq!(e.is_operator(&who), level != AdminLevel::None);
    }
}

#[test]
fn without_private_data_everybody_sees_everything() {
    let (mut e, a, b) = engine_with("none");
    assert_eq!(
        job_ids(ask(&mut e, &user(), CtldRequest::ListJobs)),
        vec![a.0, b.0]
    );
    assert!(matches!(
        ask(&mut e, &user(), CtldRequest::ListNodes),
        CtldResponse::Nodes(_)
    ));
    assert_eq!(e.sight(&user()), Sight::everything());
}

#[test]
fn private_nodes_and_partitions_refuse_the_listings_to_users() {
    let (mut e, _, _) = engine_with("nodes,partitions");
    for req in [CtldRequest::ListNodes, CtldRequest::ListPartitions] {
        let r = ask(&mut e, &user(), req.clone());
        assert!(
            matches!(r, CtldResponse::Error(SlurmError::AccessDenied)),
            "{r:?}"
        );
        let r = ask(&mut e, &admin(), req);
        assert!(!matches!(r, CtldResponse::Error(_)), "{r:?}");
    }
    // Jobs are not hidden by these words.
    assert_eq!(
        job_ids(ask(&mut e, &user(), CtldRequest::ListJobs)).len(),
        2
    );
}

#[test]
fn private_usage_leaves_a_user_their_own_rows() {
    let who = user();
    let sight = Sight::of(PrivateData::parse("usage"), &who, false, None);
    let report = UsageReport {
        cluster: "c".into(),
        rows: vec![
            UsageEntry {
                account: String::new(),
                user: String::new(),
                alloc_secs: 10,
                capacity_secs: 100,
            },
            UsageEntry {
                account: "physics".into(),
                user: String::new(),
                alloc_secs: 10,
                capacity_secs: 0,
            },
            UsageEntry {
                account: "physics".into(),
                user: "alice".into(),
                alloc_secs: 4,
                capacity_secs: 0,
            },
            UsageEntry {
                account: "physics".into(),
                user: "bob".into(),
                alloc_secs: 6,
                capacity_secs: 0,
            },
        ],
    };
    let seen = sight.usage(report);
    let users: Vec<(&str, &str)> = seen
        .rows
        .iter()
        .map(|r| (r.account.as_str(), r.user.as_str()))
        .collect();
    assert_eq!(users, vec![("", ""), ("physics", "alice")]);
}

#[test]
fn private_users_and_accounts_trim_the_association_database() {
    let assoc = |account: &str, user: &str| Assoc {
        account: account.into(),
        user: user.into(),
        ..Assoc::default()
    };
    let tables = AcctTables {
        users: vec![
            AcctUser {
                name: "alice".into(),
                default_account: "physics".into(),
                admin_level: AdminLevel::None,
            },
            AcctUser {
                name: "bob".into(),
                default_account: "physics".into(),
                admin_level: AdminLevel::None,
            },
        ],
        assocs: vec![
            assoc("physics", ""),
            assoc("physics", "alice"),
            assoc("physics", "bob"),
        ],
        accounts: vec![proto::acctdb::AcctAccount {
            name: "physics".into(),
            ..Default::default()
        }],
        ..AcctTables::default()
    };
    let sight = Sight::of(PrivateData::parse("users,accounts"), &user(), false, None);
    let t = sight.tables(tables.clone());
    assert_eq!(t.users.len(), 1);
    assert_eq!(t.users[0].name, "alice");
    assert_eq!(t.assocs.len(), 1);
    assert_eq!(t.assocs[0].user, "alice");
    assert!(t.accounts.is_empty());
    // An operator's copy is whole.
    assert_eq!(
        Sight::of(PrivateData::ALL, &user(), true, None).tables(tables.clone()),
        tables
    );
}

#[test]
fn private_jobs_hides_other_users_steps_and_priorities() {
    let (mut e, a, _) = engine_with("jobs");
    match ask(&mut e, &user(), CtldRequest::ListSteps) {
        CtldResponse::Steps(l) => assert!(l.steps.iter().all(|s| s.job_id == a)),
        r => panic!("{r:?}"),
    }
    match ask(&mut e, &user(), CtldRequest::Priorities) {
        CtldResponse::Priorities(p) => assert!(p.jobs.iter().all(|j| j.uid == user().uid)),
        r => panic!("{r:?}"),
    }
}

#[test]
fn explain_leaves_out_other_users_jobs_and_private_nodes() {
    let mut e = engine_on(&format!("{CONF}PrivateData=jobs,nodes\n"));
    let mut all = desc();
    all.ntasks = Some(8);
    let blocker = e
        .on_submit(all.clone(), &other(), 1)
        .expect("accepted")
        .job_id;
    e.schedule(1);
    let mine = e.on_submit(all, &user(), 2).expect("accepted").job_id;
    e.schedule(2);
    let whole = e.explain(mine, 3).unwrap();
    assert!(whole
        .candidates
        .iter()
        .any(|n| n.jobs.iter().any(|(id, _)| *id == blocker)));
    match ask(&mut e, &user(), CtldRequest::Explain { job_id: mine }) {
        CtldResponse::Explanation(x) => {
            assert!(x.candidates.is_empty(), "{x:?}");
            assert!(x.waits_for.iter().all(|(id, _)| *id != blocker), "{x:?}");
            assert_ne!(x.first.map(|f| f.0), Some(blocker));
        }
        r => panic!("{r:?}"),
    }
    match ask(&mut e, &admin(), CtldRequest::Explain { job_id: mine }) {
        CtldResponse::Explanation(x) => assert!(!x.candidates.is_empty()),
        r => panic!("{r:?}"),
    }
}

/// Slurm's user permissions: an Operator (and an Administrator) acts on
/// every user's jobs as their owner would, and holds them as an
/// administrator does; only an Administrator changes nodes as root does;
/// a user of AdminLevel None does neither.
#[test]
fn operators_act_on_every_job_and_administrators_on_the_cluster() {
    use proto::NodeStateRequest;
    for level in [
        AdminLevel::None,
        AdminLevel::Operator,
        AdminLevel::Administrator,
    ] {
        let (mut e, a, b) = engine_with("none");
        let (who, tables) = carol(level);
        e.on_assoc_tables(tables);
        let operator = level >= AdminLevel::Operator;
        let held = e.on_hold(b, false, &who);
        assert_eq!(held.is_ok(), operator, "{level:?}: {held:?}");
        if !operator {
            assert_eq!(held, Err(SlurmError::InvalidUserId));
        }
        if operator {
            // An operator's hold is an administrator's (priority 0).
            assert_eq!(
                e.jobs[&b].reason,
                model::PendingReason::JobHeldAdmin,
                "{level:?}"
            );
        }
        let cancelled = e.on_cancel(a, None, proto::SignalScope::Steps, &who, 3);
        assert_eq!(cancelled.is_ok(), operator, "{level:?}: {cancelled:?}");
        if !operator {
            assert_eq!(cancelled, Err(SlurmError::AccessDenied));
        }
        let drained = e.on_update_node(
            &["node1".to_string()],
            Some(NodeStateRequest::Drain),
            Some("by carol".into()),
            &who,
            3,
        );
        assert_eq!(
            drained.is_ok(),
            level == AdminLevel::Administrator,
            "{level:?}: {drained:?}"
        );
        assert_eq!(e.is_super(&who), level == AdminLevel::Administrator);
    }
    // A job's owner still acts on it without any AdminLevel; root on all.
    let (mut e, a, b) = engine_with("none");
    assert!(e
        .on_cancel(a, None, proto::SignalScope::Steps, &user(), 3)
        .is_ok());
    assert!(e.on_hold(b, false, &admin()).is_ok());
}
