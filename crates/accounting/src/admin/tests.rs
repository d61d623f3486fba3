use super::*;
use proto::acctdb::{Action, AdminRequest, Cond, Entity, Key, ListOp, Setting};

fn req(action: Action, entity: Entity, cond: Cond, set: Vec<Setting>) -> AdminRequest {
    AdminRequest {
        action,
        entity,
        cond,
        set,
        commit: true,
    }
}

fn set(key: Key, v: &str) -> Setting {
    Setting {
        key,
        op: ListOp::Set,
        value: Some(v.to_owned()),
    }
}

fn names(n: &[&str]) -> Cond {
    Cond {
        names: n.iter().map(|s| s.to_string()).collect(),
        ..Cond::default()
    }
}

fn base() -> AcctTables {
    let mut t = AcctTables::default();
    bootstrap(&mut t, "anchor");
    t
}

fn run(t: &AcctTables, r: AdminRequest) -> (AdminReply, AcctTables) {
    let a = apply(t, &r, "anchor");
    let new = a.tables.clone().unwrap_or_else(|| t.clone());
    (a.reply, new)
}

#[test]
fn bootstrap_makes_root_and_normal() {
    let t = base();
    assert_eq!(t.clusters.len(), 1);
    assert!(t.account_assoc("anchor", "root").is_some());
    assert!(t.assoc("anchor", "root", "root", "").is_some());
    assert_eq!(t.qos[0].name, "normal");
    assert_eq!(admin_level(&t, "root"), AdminLevel::Administrator);
    assert_eq!(admin_level(&t, "nobody"), AdminLevel::None);
}

#[test]
fn add_account_prints_what_slurm_prints() {
    let (r, t) = run(
        &base(),
        req(Action::Add, Entity::Account, names(&["ml"]), vec![]),
    );
    assert!(r.ok && r.changed, "{r:?}");
    assert_eq!(
        r.stdout,
        " Adding Account(s)\n  ml\n Settings\n  Description     = Account Name\n  \
         Organization    = Parent/Account Name\n Associations\n  A = ml         C = anchor    \n"
    );
    assert_eq!(t.account_assoc("anchor", "ml").unwrap().parent, "root");
    let acct = t.accounts.iter().find(|a| a.name == "ml").unwrap();
    assert_eq!(
        (acct.description.as_str(), acct.organization.as_str()),
        ("ml", "ml")
    );
    // Again: nothing new, exit 1.
    let (r, _) = run(
        &t,
        req(Action::Add, Entity::Account, names(&["ml"]), vec![]),
    );
    assert_eq!(
        (r.stdout.as_str(), r.ok, r.changed),
        (" Nothing new added.\n", false, false)
    );
}

#[test]
fn accounts_need_an_existing_parent() {
    let (r, _) = run(
        &base(),
        req(
            Action::Add,
            Entity::Account,
            names(&["ml"]),
            vec![set(Key::Parent, "nope")],
        ),
    );
    assert!(!r.ok);
    assert!(
        r.stderr
            .starts_with(" Parent account 'nope' doesn't exist on cluster anchor\n"),
        "{r:?}"
    );
}

#[test]
fn users_associations_limits_and_effective_values() {
    let t = base();
    let (_, t) = run(
        &t,
        req(
            Action::Add,
            Entity::Account,
            names(&["ml"]),
            vec![set(Key::MaxWall, "60")],
        ),
    );
    let (r, t) = run(
        &t,
        req(
            Action::Add,
            Entity::User,
            Cond {
                names: vec!["alice".into()],
                accounts: vec!["ml".into()],
                ..Cond::default()
            },
            vec![set(Key::MaxJobs, "4")],
        ),
    );
    assert_eq!(
        r.stdout,
        " Adding User(s)\n  alice\n Settings =\n  Default Account = ml\n Associations =\n  \
         U = alice     A = ml         C = anchor    \n Non Default Settings\n  MaxJobs       = 4\n"
    );
    let a = t.assoc("anchor", "ml", "alice", "").unwrap();
    let eff = t.effective(a);
    assert_eq!(eff.limits.max_jobs, Some(4));
    assert_eq!(eff.limits.max_wall, Some(60), "inherited from the account");
    assert_eq!(eff.qos, vec!["normal".to_string()], "inherited from root");
    // Modify the user's association, then its admin level.
    let (r, t) = run(
        &t,
        req(
            Action::Modify,
            Entity::User,
            names(&["alice"]),
            vec![set(Key::MaxJobs, "8"), set(Key::AdminLevel, "Operator")],
        ),
    );
    assert_eq!(
        r.stdout,
        " Modified users...\n  alice\n Modified user associations...\n  \
         C = anchor     A = ml                   U = alice    \n"
    );
    assert_eq!(admin_level(&t, "alice"), AdminLevel::Operator);
    assert_eq!(
        t.assoc("anchor", "ml", "alice", "")
            .unwrap()
            .limits
            .max_jobs,
        Some(8)
    );
    // Default account must be one of the user's accounts.
    let (r, _) = run(
        &t,
        req(
            Action::Modify,
            Entity::User,
            names(&["alice"]),
            vec![set(Key::DefaultAccount, "root")],
        ),
    );
    assert!(!r.ok && r.stderr.contains("aren't associated"), "{r:?}");
    // An account that is someone's default cannot go.
    let (r, _) = run(
        &t,
        req(Action::Delete, Entity::Account, names(&["ml"]), vec![]),
    );
    assert!(!r.ok && r.stderr.contains("Default Accounts"), "{r:?}");
    // Deleting the user removes its associations.
    let (r, t) = run(
        &t,
        req(Action::Delete, Entity::User, names(&["alice"]), vec![]),
    );
    assert_eq!(r.stdout, " Deleting users...\n  alice\n");
    assert!(t.user("alice").is_none());
    assert!(t.assoc("anchor", "ml", "alice", "").is_none());
    let (r, t) = run(
        &t,
        req(Action::Delete, Entity::Account, names(&["ml"]), vec![]),
    );
    assert_eq!(r.stdout, " Deleting accounts...\n  ml\n");
    assert!(t.account_assoc("anchor", "ml").is_none());
    let (r, _) = run(
        &t,
        req(Action::Delete, Entity::Account, names(&["root"]), vec![]),
    );
    assert!(r.stderr.contains("not allowed to remove the root account"));
}

#[test]
fn qos_add_modify_delete() {
    let (r, t) = run(
        &base(),
        req(
            Action::Add,
            Entity::Qos,
            names(&["high"]),
            vec![set(Key::Priority, "100")],
        ),
    );
    assert_eq!(
        r.stdout,
        " Adding QOS(s)\n  high\n Settings\n  Description    = QOS Name\n  Priority      = 100\n"
    );
    assert_eq!(t.qos_named("high").unwrap().priority, 100);
    let (r, t) = run(
        &t,
        req(
            Action::Modify,
            Entity::Qos,
            names(&["high"]),
            vec![set(Key::MaxWall, "120")],
        ),
    );
    assert_eq!(r.stdout, " Modified qos...\n  high\n");
    assert_eq!(t.qos_named("high").unwrap().limits.max_wall, Some(120));
    let (r, _) = run(
        &t,
        req(
            Action::Modify,
            Entity::Qos,
            names(&["nosuch"]),
            vec![set(Key::Priority, "1")],
        ),
    );
    assert_eq!((r.stdout.as_str(), r.ok), (" Nothing modified\n", false));
    let (r, t) = run(
        &t,
        req(Action::Delete, Entity::Qos, names(&["high"]), vec![]),
    );
    assert_eq!(r.stdout, " Deleting QOS(s)...\n  high\n");
    assert!(t.qos_named("high").is_none());
    let (r, _) = run(
        &t,
        req(Action::Delete, Entity::Qos, Cond::default(), vec![]),
    );
    assert_eq!(r.stderr, " No conditions given to remove, not executing.\n");
    let (r, _) = run(
        &t,
        req(Action::Modify, Entity::Qos, names(&["normal"]), vec![]),
    );
    assert_eq!(r.stderr, " You didn't give me anything to set\n");
}
