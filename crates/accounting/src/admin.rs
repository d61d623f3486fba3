//! `sacctmgr add/modify/delete` applied to the association database: pure
//! functions from the current [`AcctTables`] and an [`AdminRequest`] to the
//! new tables and the text sacctmgr prints (Slurm 22.05's wording).
//!
//! Invariants kept here: every account association but `root`'s has a
//! parent account association on the same cluster; every user association
//! hangs under an existing account association; a user's default account is
//! one of its associations' accounts; association ids are never reused.

use proto::acctdb::{
    merge_tres, AcctAccount, AcctCluster, AcctTables, AcctUser, Action, AdminLevel, AdminReply,
    AdminRequest, Assoc, Cond, Entity, Key, ListOp, Qos, Setting,
};

/// The outcome of [`apply`]: the reply, and the new tables when the
/// request changes something (whether or not it is committed).
#[derive(Debug)]
pub struct Applied {
    /// What sacctmgr prints.
    pub reply: AdminReply,
    /// The tables after the change.
    pub tables: Option<AcctTables>,
}

fn refuse(stderr: String) -> Applied {
    Applied {
        reply: AdminReply {
            stderr,
            ..AdminReply::default()
        },
        tables: None,
    }
}

fn nothing(stdout: &str) -> Applied {
    Applied {
        reply: AdminReply {
            stdout: stdout.to_owned(),
            ..AdminReply::default()
        },
        tables: None,
    }
}

fn changed(stdout: String, stderr: String, tables: AcctTables) -> Applied {
    Applied {
        reply: AdminReply {
            stdout,
            stderr,
            changed: true,
            ok: true,
        },
        tables: Some(tables),
    }
}

/// The database every store starts from: QOS `normal` (as slurmdbd creates
/// it), and `cluster` with its `root` account and `root` user.
pub fn bootstrap(t: &mut AcctTables, cluster: &str) {
    if t.qos.is_empty() {
        t.qos.push(Qos::new(1, "normal"));
    }
    add_cluster_records(t, cluster);
}

fn add_cluster_records(t: &mut AcctTables, cluster: &str) -> bool {
    if t.clusters.iter().any(|c| c.name == cluster) {
        return false;
    }
    t.clusters.push(AcctCluster {
        name: cluster.to_owned(),
    });
    t.clusters.sort_by(|a, b| a.name.cmp(&b.name));
    if !t.accounts.iter().any(|a| a.name == "root") {
        t.accounts.push(AcctAccount {
            name: "root".into(),
            description: "default root account".into(),
            organization: "root".into(),
        });
        t.accounts.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if t.user("root").is_none() {
        t.users.push(AcctUser {
            name: "root".into(),
            default_account: "root".into(),
            admin_level: AdminLevel::Administrator,
        });
        t.users.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let qos: Vec<String> = t
        .qos_named("normal")
        .map(|q| vec![q.name.clone()])
        .unwrap_or_default();
    let mut root = new_assoc(t, cluster, "root", "", "", "");
    root.qos = qos;
    t.assocs.push(root);
    let user = new_assoc(t, cluster, "root", "root", "", "");
    t.assocs.push(user);
    true
}

fn new_assoc(
    t: &AcctTables,
    cluster: &str,
    account: &str,
    user: &str,
    partition: &str,
    parent: &str,
) -> Assoc {
    Assoc {
        id: t.assocs.iter().map(|a| a.id).max().unwrap_or(0) + 1,
        cluster: cluster.to_owned(),
        account: account.to_owned(),
        user: user.to_owned(),
        partition: partition.to_owned(),
        parent: parent.to_owned(),
        shares: 1,
        ..Assoc::default()
    }
}

/// The admin level of `user` in the database.
pub fn admin_level(t: &AcctTables, user: &str) -> AdminLevel {
    t.user(user).map_or(AdminLevel::None, |u| u.admin_level)
}

/// Applies `req` to `t`. `local_cluster` is the controller's ClusterName.
pub fn apply(t: &AcctTables, req: &AdminRequest, local_cluster: &str) -> Applied {
    let _ = local_cluster;
    match (req.action, req.entity) {
        (Action::Add, Entity::Cluster) => add_clusters(t, req),
        (Action::Add, Entity::Account) => add_accounts(t, req),
        (Action::Add, Entity::User) => add_users(t, req),
        (Action::Add, Entity::Qos) => add_qos(t, req),
        (Action::Modify, _) => modify(t, req),
        (Action::Delete, _) => delete(t, req),
    }
}

fn clusters_for(t: &AcctTables, cond: &Cond) -> Result<Vec<String>, String> {
    if cond.clusters.is_empty() {
        if t.clusters.is_empty() {
            return Err("  Can't add accounts, no cluster defined yet.\n \
                 Please contact your administrator.\n"
                .into());
        }
        return Ok(t.clusters.iter().map(|c| c.name.clone()).collect());
    }
    for c in &cond.clusters {
        if !t.clusters.iter().any(|x| &x.name == c) {
            return Err(format!(
                "  This cluster '{c}' doesn't exist.\n        \
                 Contact your admin to add it to accounting.\n"
            ));
        }
    }
    Ok(cond.clusters.clone())
}

fn add_clusters(t: &AcctTables, req: &AdminRequest) -> Applied {
    if req.cond.names.is_empty() {
        return refuse(" You need to specify a cluster name to add.\n".into());
    }
    let mut new = t.clone();
    let mut out = String::new();
    let mut err = String::new();
    for name in &req.cond.names {
        if add_cluster_records(&mut new, name) {
            out.push_str(&format!("  Name           = {name}\n"));
        } else {
            err.push_str(&format!(
                " This cluster {name} already exists.  Not adding.\n"
            ));
        }
    }
    if out.is_empty() {
        let mut a = nothing(" Nothing new added.\n");
        a.reply.stderr = err;
        return a;
    }
    let mut stdout = format!(" Adding Cluster(s)\n{out}");
    if !req.set.is_empty() {
        stdout.push_str(" Settings\n");
        for a in new.assocs.iter_mut() {
            if req.cond.names.contains(&a.cluster) && a.account == "root" && a.user.is_empty() {
                for s in &req.set {
                    if let Err(e) = set_assoc(a, s, t) {
                        return refuse(e);
                    }
                }
            }
        }
        stdout.push_str(&settings_text(&req.set));
    }
    changed(stdout, err, new)
}

fn add_accounts(t: &AcctTables, req: &AdminRequest) -> Applied {
    if req.cond.names.is_empty() {
        return refuse(" Need name of account to add.\n".into());
    }
    let clusters = match clusters_for(t, &req.cond) {
        Ok(c) => c,
        Err(e) => return refuse(e),
    };
    let mut parent = "root".to_owned();
    let mut description = None;
    let mut organization = None;
    let mut limits = Vec::new();
    for s in &req.set {
        match s.key {
            Key::Parent => parent = s.value.clone().unwrap_or_else(|| "root".into()),
            Key::Description => description = s.value.clone(),
            Key::Organization => organization = s.value.clone(),
            _ => limits.push(s.clone()),
        }
    }
    let mut new = t.clone();
    let mut acct_str = String::new();
    let mut assoc_str = String::new();
    let mut err = String::new();
    for name in &req.cond.names {
        if name.is_empty() {
            return refuse(" No blank names are allowed when adding.\n".into());
        }
        if !new.accounts.iter().any(|a| &a.name == name) {
            new.accounts.push(AcctAccount {
                name: name.clone(),
                description: description.clone().unwrap_or_else(|| name.clone()),
                organization: organization.clone().unwrap_or_else(|| {
                    if parent != "root" {
                        parent.clone()
                    } else {
                        name.clone()
                    }
                }),
            });
            acct_str.push_str(&format!("  {name}\n"));
        }
        for c in &clusters {
            if new.account_assoc(c, name).is_some() {
                continue;
            }
            if new.account_assoc(c, &parent).is_none() {
                err.push_str(&format!(
                    " Parent account '{parent}' doesn't exist on cluster {c}\n        \
                     Contact your admin to add this account.\n"
                ));
                continue;
            }
            let mut a = new_assoc(&new, c, name, "", "", &parent);
            for s in &limits {
                if let Err(e) = set_assoc(&mut a, s, t) {
                    return refuse(e);
                }
            }
            new.assocs.push(a);
            assoc_str.push_str(&format!("  A = {:<10.10} C = {:<10.10}\n", name, c));
        }
    }
    new.accounts.sort_by(|a, b| a.name.cmp(&b.name));
    if acct_str.is_empty() && assoc_str.is_empty() {
        let mut a = nothing(" Nothing new added.\n");
        a.reply.stderr = err;
        return a;
    }
    if assoc_str.is_empty() {
        err.push_str(" No associations created.\n");
        return refuse(err);
    }
    let mut out = String::new();
    if !acct_str.is_empty() {
        out.push_str(&format!(" Adding Account(s)\n{acct_str} Settings\n"));
        out.push_str(&format!(
            "  Description     = {}\n",
            description.as_deref().unwrap_or("Account Name")
        ));
        out.push_str(&format!(
            "  Organization    = {}\n",
            organization.as_deref().unwrap_or("Parent/Account Name")
        ));
    }
    out.push_str(&format!(" Associations\n{assoc_str}"));
    let mut shown = limits.clone();
    if parent != "root" {
        shown.push(Setting {
            key: Key::Parent,
            op: ListOp::Set,
            value: Some(parent.clone()),
        });
    }
    if !shown.is_empty() {
        out.push_str(" Settings\n");
        out.push_str(&settings_text(&shown));
    }
    changed(out, err, new)
}

fn add_users(t: &AcctTables, req: &AdminRequest) -> Applied {
    if req.cond.names.is_empty() {
        return refuse(" Need name of user to add.\n".into());
    }
    let mut default_account = None;
    let mut admin = None;
    let mut limits = Vec::new();
    for s in &req.set {
        match s.key {
            Key::DefaultAccount => default_account = s.value.clone(),
            Key::AdminLevel => {
                admin = Some(
                    s.value
                        .as_deref()
                        .and_then(AdminLevel::parse)
                        .unwrap_or_default(),
                )
            }
            _ => limits.push(s.clone()),
        }
    }
    let mut accounts = req.cond.accounts.clone();
    if accounts.is_empty() {
        if let Some(d) = &default_account {
            accounts.push(d.clone());
        }
    }
    let clusters = match clusters_for(t, &req.cond) {
        Ok(c) => c,
        Err(e) => return refuse(e),
    };
    for a in &accounts {
        if !t.accounts.iter().any(|x| &x.name == a) {
            return refuse(format!(
                " This account '{a}' doesn't exist.\n        \
                 Contact your admin to add this account.\n"
            ));
        }
    }
    let partitions: Vec<String> = if req.cond.partitions.is_empty() {
        vec![String::new()]
    } else {
        req.cond.partitions.clone()
    };
    let mut new = t.clone();
    let mut user_str = String::new();
    let mut assoc_str = String::new();
    let mut err = String::new();
    for name in &req.cond.names {
        let existing = new.user(name).is_some();
        if !existing {
            let Some(def) = default_account
                .clone()
                .or_else(|| accounts.first().cloned())
            else {
                return refuse(" Need a default account for these users to add.\n".into());
            };
            new.users.push(AcctUser {
                name: name.clone(),
                default_account: def,
                admin_level: admin.unwrap_or_default(),
            });
            user_str.push_str(&format!("  {name}\n"));
        }
        for c in &clusters {
            for acct in &accounts {
                if new.account_assoc(c, acct).is_none() {
                    err.push_str(&format!(
                        " This account '{acct}' doesn't exist on cluster {c}\n"
                    ));
                    continue;
                }
                for p in &partitions {
                    if new.assoc(c, acct, name, p).is_some() {
                        continue;
                    }
                    let mut a = new_assoc(&new, c, acct, name, p, acct);
                    for s in &limits {
                        if let Err(e) = set_assoc(&mut a, s, t) {
                            return refuse(e);
                        }
                    }
                    new.assocs.push(a);
                    assoc_str.push_str(&format!(
                        "  U = {:<9.9} A = {:<10.10} C = {:<10.10}",
                        name, acct, c
                    ));
                    if !p.is_empty() {
                        assoc_str.push_str(&format!(" P = {:<10.10}", p));
                    }
                    assoc_str.push('\n');
                }
            }
        }
    }
    new.users.sort_by(|a, b| a.name.cmp(&b.name));
    if user_str.is_empty() && assoc_str.is_empty() {
        let mut a = nothing(" Nothing new added.\n");
        a.reply.stderr = err;
        return a;
    }
    let mut out = String::new();
    if !user_str.is_empty() {
        out.push_str(&format!(" Adding User(s)\n{user_str} Settings =\n"));
        let def = default_account
            .clone()
            .or_else(|| accounts.first().cloned())
            .unwrap_or_default();
        out.push_str(&format!("  Default Account = {def}\n"));
        if let Some(a) = admin {
            out.push_str(&format!("  Admin Level     = {}\n", a.as_str()));
        }
    }
    if !assoc_str.is_empty() {
        out.push_str(&format!(" Associations =\n{assoc_str}"));
    }
    if !limits.is_empty() {
        out.push_str(" Non Default Settings\n");
        out.push_str(&settings_text(&limits));
    }
    changed(out, err, new)
}

fn add_qos(t: &AcctTables, req: &AdminRequest) -> Applied {
    if req.cond.names.is_empty() {
        return refuse(" Need name of qos to add.\n".into());
    }
    let mut new = t.clone();
    let mut qos_str = String::new();
    let mut description = None;
    for name in &req.cond.names {
        if new.qos_named(name).is_some() {
            continue;
        }
        let id = new.qos.iter().map(|q| q.id).max().unwrap_or(0) + 1;
        let mut q = Qos::new(id, name);
        for s in &req.set {
            if s.key == Key::Description {
                description = s.value.clone();
            }
            if let Err(e) = set_qos(&mut q, s, t) {
                return refuse(e);
            }
        }
        new.qos.push(q);
        qos_str.push_str(&format!("  {name}\n"));
    }
    if qos_str.is_empty() {
        return nothing(" Nothing new added.\n");
    }
    new.qos.sort_by_key(|q| q.id);
    let mut out = format!(" Adding QOS(s)\n{qos_str} Settings\n");
    out.push_str(&format!(
        "  Description    = {}\n",
        description.as_deref().unwrap_or("QOS Name")
    ));
    let limits: Vec<Setting> = req
        .set
        .iter()
        .filter(|s| s.key != Key::Description)
        .cloned()
        .collect();
    out.push_str(&settings_text(&limits));
    changed(out, String::new(), new)
}

/// Whether `a` matches the association conditions of `cond` (names are
/// the entity's own names and are matched by the caller).
fn assoc_matches(a: &Assoc, cond: &Cond) -> bool {
    let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
    any(&cond.clusters, &a.cluster)
        && any(&cond.accounts, &a.account)
        && any(&cond.users, &a.user)
        && any(&cond.partitions, &a.partition)
        && any(&cond.parents, &a.parent)
}

/// How Slurm names an association in modify and delete listings.
fn assoc_object(a: &Assoc) -> String {
    let mut s = format!("  C = {:<10} A = {:<20}", a.cluster, a.account);
    if !a.user.is_empty() {
        s.push_str(&format!(" U = {:<9}", a.user));
    }
    if !a.partition.is_empty() {
        s.push_str(&format!(" P = {}", a.partition));
    }
    s.push('\n');
    s
}

fn is_assoc_key(k: Key) -> bool {
    !matches!(
        k,
        Key::Description | Key::Organization | Key::DefaultAccount | Key::AdminLevel
    )
}

fn modify(t: &AcctTables, req: &AdminRequest) -> Applied {
    if req.set.is_empty() {
        return refuse(" You didn't give me anything to set\n".into());
    }
    let mut new = t.clone();
    let mut out = String::new();
    let (own, assoc_set): (Vec<&Setting>, Vec<&Setting>) = if req.entity == Entity::Qos {
        (req.set.iter().collect(), Vec::new())
    } else {
        req.set.iter().partition(|s| !is_assoc_key(s.key))
    };
    let names = &req.cond.names;
    let named = |n: &str| names.is_empty() || names.iter().any(|x| x == n);
    match req.entity {
        Entity::Qos => {
            let mut hit = String::new();
            for q in new.qos.iter_mut().filter(|q| named(&q.name)) {
                for s in &own {
                    if let Err(e) = set_qos(q, s, t) {
                        return refuse(e);
                    }
                }
                hit.push_str(&format!("  {}\n", q.name));
            }
            if hit.is_empty() {
                return nothing(" Nothing modified\n");
            }
            out.push_str(&format!(" Modified qos...\n{hit}"));
            return changed(out, String::new(), new);
        }
        Entity::Account => {
            let mut hit = String::new();
            for a in new.accounts.iter_mut().filter(|a| named(&a.name)) {
                if own.is_empty() {
                    continue;
                }
                for s in &own {
                    match s.key {
                        Key::Description => a.description = s.value.clone().unwrap_or_default(),
                        Key::Organization => a.organization = s.value.clone().unwrap_or_default(),
                        _ => return refuse(unknown_key(s.key)),
                    }
                }
                hit.push_str(&format!("  {}\n", a.name));
            }
            if !hit.is_empty() {
                out.push_str(&format!(" Modified accounts...\n{hit}"));
            }
        }
        Entity::User => {
            let mut hit = String::new();
            for s in &own {
                if s.key == Key::DefaultAccount {
                    let acct = s.value.clone().unwrap_or_default();
                    for u in t.users.iter().filter(|u| named(&u.name)) {
                        let has = t
                            .assocs
                            .iter()
                            .any(|a| a.user == u.name && a.account == acct);
                        if !has {
                            return refuse(format!(
                                " Can't modify because these users aren't associated with \
                                 new default account '{acct}'...\n  U = {}\n",
                                u.name
                            ));
                        }
                    }
                }
            }
            for u in new.users.iter_mut().filter(|u| named(&u.name)) {
                if own.is_empty() {
                    continue;
                }
                for s in &own {
                    match s.key {
                        Key::DefaultAccount => {
                            u.default_account = s.value.clone().unwrap_or_default()
                        }
                        Key::AdminLevel => {
                            u.admin_level = s
                                .value
                                .as_deref()
                                .and_then(AdminLevel::parse)
                                .unwrap_or_default()
                        }
                        _ => return refuse(unknown_key(s.key)),
                    }
                }
                hit.push_str(&format!("  {}\n", u.name));
            }
            if !hit.is_empty() {
                out.push_str(&format!(" Modified users...\n{hit}"));
            }
        }
        Entity::Cluster => {
            if !own.is_empty() {
                return refuse(unknown_key(own[0].key));
            }
        }
    }
    if !assoc_set.is_empty() {
        if let Some(p) = assoc_set.iter().find(|s| s.key == Key::Parent) {
            let parent = p.value.clone().unwrap_or_default();
            if !t.accounts.iter().any(|a| a.name == parent) {
                return refuse(format!(" Parent Account {parent} doesn't exist.\n"));
            }
        }
        let mut hit = String::new();
        let ids: Vec<u32> = t
            .assocs
            .iter()
            .filter(|a| assoc_matches(a, &req.cond))
            .filter(|a| match req.entity {
                Entity::Account => a.user.is_empty() && named(&a.account),
                Entity::User => !a.user.is_empty() && named(&a.user),
                Entity::Cluster => a.user.is_empty() && a.account == "root" && named(&a.cluster),
                Entity::Qos => false,
            })
            .map(|a| a.id)
            .collect();
        for a in new.assocs.iter_mut().filter(|a| ids.contains(&a.id)) {
            for s in &assoc_set {
                if let Err(e) = set_assoc(a, s, t) {
                    return refuse(e);
                }
            }
            hit.push_str(&assoc_object(a));
        }
        if !hit.is_empty() {
            let what = match req.entity {
                Entity::Account => "account",
                Entity::User => "user",
                _ => "cluster",
            };
            out.push_str(&format!(" Modified {what} associations...\n{hit}"));
        }
    }
    if out.is_empty() {
        return nothing(" Nothing modified\n");
    }
    changed(out, String::new(), new)
}

fn delete(t: &AcctTables, req: &AdminRequest) -> Applied {
    let c = &req.cond;
    let no_cond = c.names.is_empty()
        && c.clusters.is_empty()
        && c.accounts.is_empty()
        && c.users.is_empty()
        && c.partitions.is_empty()
        && c.parents.is_empty();
    if no_cond {
        return refuse(" No conditions given to remove, not executing.\n".into());
    }
    let mut new = t.clone();
    let named = |n: &str| c.names.is_empty() || c.names.iter().any(|x| x == n);
    let out = match req.entity {
        Entity::Cluster => {
            let gone: Vec<String> = t
                .clusters
                .iter()
                .filter(|x| {
                    named(&x.name) && (c.clusters.is_empty() || c.clusters.contains(&x.name))
                })
                .map(|x| x.name.clone())
                .collect();
            if gone.is_empty() {
                return nothing(" Nothing deleted\n");
            }
            new.clusters.retain(|x| !gone.contains(&x.name));
            new.assocs.retain(|a| !gone.contains(&a.cluster));
            list(" Deleting clusters...\n", &gone)
        }
        Entity::Qos => {
            let gone: Vec<String> = t
                .qos
                .iter()
                .filter(|q| named(&q.name))
                .map(|q| q.name.clone())
                .collect();
            if gone.is_empty() {
                return nothing(" Nothing deleted\n");
            }
            new.qos.retain(|q| !gone.contains(&q.name));
            for a in new.assocs.iter_mut() {
                a.qos.retain(|q| !gone.contains(q));
                if a.default_qos.as_ref().is_some_and(|d| gone.contains(d)) {
                    a.default_qos = None;
                }
            }
            list(" Deleting QOS(s)...\n", &gone)
        }
        Entity::Account => {
            let targets: Vec<String> = if c.names.is_empty() {
                c.accounts.clone()
            } else {
                c.names.clone()
            };
            if targets.iter().any(|n| n == "root") {
                return refuse(
                    " You are not allowed to remove the root account.\n \
                     Use remove cluster instead.\n"
                        .into(),
                );
            }
            let only_names = c.clusters.is_empty()
                && c.partitions.is_empty()
                && c.users.is_empty()
                && c.parents.is_empty();
            let gone: Vec<&Assoc> = t
                .assocs
                .iter()
                .filter(|a| a.user.is_empty() && targets.contains(&a.account))
                .filter(|a| {
                    assoc_matches(
                        a,
                        &Cond {
                            accounts: vec![],
                            ..c.clone()
                        },
                    )
                })
                .collect();
            let gone_accounts: Vec<String> = t
                .accounts
                .iter()
                .filter(|a| targets.contains(&a.name))
                .map(|a| a.name.clone())
                .collect();
            if gone.is_empty() && gone_accounts.is_empty() {
                return nothing(" Nothing deleted\n");
            }
            // Users whose default account would disappear stop the delete.
            let defaults: Vec<&AcctUser> = t
                .users
                .iter()
                .filter(|u| targets.contains(&u.default_account))
                .collect();
            let mut blocked = String::new();
            for u in &defaults {
                for a in t
                    .assocs
                    .iter()
                    .filter(|a| a.user == u.name && a.account == u.default_account)
                {
                    if gone.iter().any(|g| g.cluster == a.cluster) {
                        blocked.push_str(&format!(
                            "C = {:<10} A = {:<20} U = {:<9}\n",
                            a.cluster, a.account, a.user
                        ));
                    }
                }
            }
            if !blocked.is_empty() {
                return refuse(format!(
                    " Users listed below have these as their Default Accounts.\n{blocked} \
                     Please either remove the accounts listed above from list and resubmit,\n \
                     or change these users default account to remove the account(s).\n \
                     Changes Discarded\n"
                ));
            }
            let keys: Vec<(String, String)> = gone
                .iter()
                .map(|a| (a.cluster.clone(), a.account.clone()))
                .collect();
            // Sub-accounts move up to the deleted account's parent.
            for g in &gone {
                for a in new.assocs.iter_mut() {
                    if a.user.is_empty() && a.cluster == g.cluster && a.parent == g.account {
                        a.parent = g.parent.clone();
                    }
                }
            }
            new.assocs
                .retain(|a| !keys.contains(&(a.cluster.clone(), a.account.clone())));
            if only_names {
                new.accounts.retain(|a| !gone_accounts.contains(&a.name));
                list(" Deleting accounts...\n", &gone_accounts)
            } else {
                let mut s = " Deleting account associations...\n".to_owned();
                for g in &gone {
                    s.push_str(&assoc_object(g));
                }
                s
            }
        }
        Entity::User => {
            let targets: Vec<String> = if c.names.is_empty() {
                c.users.clone()
            } else {
                c.names.clone()
            };
            let by_assoc =
                !(c.accounts.is_empty() && c.clusters.is_empty() && c.partitions.is_empty());
            let gone: Vec<&Assoc> = t
                .assocs
                .iter()
                .filter(|a| !a.user.is_empty() && targets.contains(&a.user))
                .filter(|a| {
                    assoc_matches(
                        a,
                        &Cond {
                            users: vec![],
                            ..c.clone()
                        },
                    )
                })
                .collect();
            let users: Vec<String> = t
                .users
                .iter()
                .filter(|u| targets.contains(&u.name))
                .map(|u| u.name.clone())
                .collect();
            if gone.is_empty() && (by_assoc || users.is_empty()) {
                return nothing(" Nothing deleted\n");
            }
            let ids: Vec<u32> = gone.iter().map(|a| a.id).collect();
            new.assocs.retain(|a| !ids.contains(&a.id));
            if by_assoc {
                // A user left with no association is removed; one whose
                // default account went gets another of its accounts.
                for u in new.users.iter_mut() {
                    let left: Vec<&Assoc> =
                        new.assocs.iter().filter(|a| a.user == u.name).collect();
                    if !left.iter().any(|a| a.account == u.default_account) {
                        if let Some(a) = left.first() {
                            u.default_account = a.account.clone();
                        }
                    }
                }
                let orphaned: Vec<String> = new
                    .users
                    .iter()
                    .filter(|u| {
                        targets.contains(&u.name) && !new.assocs.iter().any(|a| a.user == u.name)
                    })
                    .map(|u| u.name.clone())
                    .collect();
                new.users.retain(|u| !orphaned.contains(&u.name));
                let mut s = " Deleting user associations...\n".to_owned();
                for g in &gone {
                    s.push_str(&assoc_object(g));
                }
                s
            } else {
                new.users.retain(|u| !users.contains(&u.name));
                list(" Deleting users...\n", &users)
            }
        }
    };
    changed(out, String::new(), new)
}

fn list(head: &str, names: &[String]) -> String {
    let mut s = head.to_owned();
    for n in names {
        s.push_str(&format!("  {n}\n"));
    }
    s
}

/// What sacctmgr prints for a setting the entity does not have.
fn unknown_key(k: Key) -> String {
    format!(
        " Unknown option: {}\n Use keyword 'where' to modify condition\n",
        key_name(k)
    )
}

/// The name sacctmgr prints for a setting.
pub fn key_name(k: Key) -> &'static str {
    match k {
        Key::Shares => "Fairshare",
        Key::Priority => "Priority",
        Key::GrpTres => "GrpTRES",
        Key::GrpJobs => "GrpJobs",
        Key::GrpSubmitJobs => "GrpSubmitJobs",
        Key::GrpWall => "GrpWall",
        Key::MaxJobs => "MaxJobs",
        Key::MaxSubmitJobs => "MaxSubmitJobs",
        Key::MaxWall => "MaxWall",
        Key::MaxTresPerJob => "MaxTRESPerJob",
        Key::MaxTresPerUser => "MaxTRESPerUser",
        Key::MaxJobsPerUser => "MaxJobsPerUser",
        Key::MaxSubmitJobsPerUser => "MaxSubmitJobsPerUser",
        Key::Qos => "QOS",
        Key::DefaultQos => "DefQOS",
        Key::Parent => "Parent",
        Key::Description => "Description",
        Key::Organization => "Organization",
        Key::DefaultAccount => "DefaultAccount",
        Key::AdminLevel => "AdminLevel",
        Key::Preempt => "Preempt",
        Key::PreemptMode => "PreemptMode",
        Key::GraceTime => "GraceTime",
        Key::PreemptExemptTime => "PreemptExemptTime",
        Key::UsageFactor => "UsageFactor",
        Key::Flags => "Flags",
    }
}

/// The `  Name          = value` lines sacctmgr prints for settings.
fn settings_text(set: &[Setting]) -> String {
    set.iter()
        .map(|s| {
            let v = match (&s.value, s.key) {
                (None, _) => "NONE".to_owned(),
                (Some(v), Key::MaxWall | Key::GrpWall) => v
                    .parse::<u32>()
                    .map(proto::acctdb::format_wall)
                    .unwrap_or_else(|_| v.clone()),
                (Some(v), _) => v.clone(),
            };
            format!("  {:<13} = {v}\n", key_name(s.key))
        })
        .collect()
}

fn count(s: &Setting) -> Result<Option<u32>, String> {
    match &s.value {
        None => Ok(None),
        Some(v) => v
            .parse::<u32>()
            .map(Some)
            .map_err(|_| format!(" Bad {} value: {v}\n", key_name(s.key))),
    }
}

fn tres(current: &Option<String>, s: &Setting) -> Result<Option<String>, String> {
    match &s.value {
        None => Ok(None),
        Some(v) => {
            if proto::acctdb::parse_tres(v).is_none() {
                return Err(format!(" Invalid TRES specification: {v}\n"));
            }
            Ok(merge_tres(current.as_deref(), v))
        }
    }
}

fn qos_list(current: &[String], s: &Setting, t: &AcctTables) -> Result<Vec<String>, String> {
    let given: Vec<String> = s
        .value
        .as_deref()
        .unwrap_or("")
        .split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_owned)
        .collect();
    for q in &given {
        if t.qos_named(q).is_none() {
            return Err(format!(" Unknown QOS name: {q}\n"));
        }
    }
    let mut out: Vec<String> = match s.op {
        ListOp::Set => given,
        ListOp::Add => current.iter().cloned().chain(given).collect(),
        ListOp::Remove => current
            .iter()
            .filter(|q| !given.contains(q))
            .cloned()
            .collect(),
    };
    out.sort();
    out.dedup();
    Ok(out)
}

/// Applies one setting to an association.
fn set_assoc(a: &mut Assoc, s: &Setting, t: &AcctTables) -> Result<(), String> {
    let l = &mut a.limits;
    match s.key {
        Key::Shares => a.shares = count(s)?.unwrap_or(1),
        Key::Priority => a.priority = count(s)?,
        Key::GrpTres => l.grp_tres = tres(&l.grp_tres, s)?,
        Key::GrpJobs => l.grp_jobs = count(s)?,
        Key::GrpSubmitJobs => l.grp_submit_jobs = count(s)?,
        Key::GrpWall => l.grp_wall = count(s)?,
        Key::MaxJobs | Key::MaxJobsPerUser => l.max_jobs = count(s)?,
        Key::MaxSubmitJobs | Key::MaxSubmitJobsPerUser => l.max_submit_jobs = count(s)?,
        Key::MaxWall => l.max_wall = count(s)?,
        Key::MaxTresPerJob => l.max_tres_per_job = tres(&l.max_tres_per_job, s)?,
        Key::MaxTresPerUser => l.max_tres_per_user = tres(&l.max_tres_per_user, s)?,
        Key::Qos => a.qos = qos_list(&a.qos, s, t)?,
        Key::DefaultQos => {
            if let Some(q) = &s.value {
                if t.qos_named(q).is_none() {
                    return Err(format!(" Unknown QOS name: {q}\n"));
                }
            }
            a.default_qos = s.value.clone();
        }
        Key::Parent => {
            if a.user.is_empty() && a.account != "root" {
                let p = s.value.clone().unwrap_or_else(|| "root".into());
                if p == a.account {
                    return Err(format!(" Account {p} can't be its own parent.\n"));
                }
                a.parent = p;
            }
        }
        other => return Err(unknown_key(other)),
    }
    Ok(())
}

/// Applies one setting to a QOS.
fn set_qos(q: &mut Qos, s: &Setting, t: &AcctTables) -> Result<(), String> {
    let l = &mut q.limits;
    match s.key {
        Key::Description => q.description = s.value.clone().unwrap_or_default(),
        Key::Priority => q.priority = count(s)?.unwrap_or(0),
        Key::GrpTres => l.grp_tres = tres(&l.grp_tres, s)?,
        Key::GrpJobs => l.grp_jobs = count(s)?,
        Key::GrpSubmitJobs => l.grp_submit_jobs = count(s)?,
        Key::GrpWall => l.grp_wall = count(s)?,
        Key::MaxJobs | Key::MaxJobsPerUser => l.max_jobs = count(s)?,
        Key::MaxSubmitJobs | Key::MaxSubmitJobsPerUser => l.max_submit_jobs = count(s)?,
        Key::MaxWall => l.max_wall = count(s)?,
        Key::MaxTresPerJob => l.max_tres_per_job = tres(&l.max_tres_per_job, s)?,
        Key::MaxTresPerUser => l.max_tres_per_user = tres(&l.max_tres_per_user, s)?,
        Key::GraceTime => q.grace_time = count(s)?.unwrap_or(0),
        Key::PreemptExemptTime => q.preempt_exempt_time = count(s)?,
        Key::UsageFactor => {
            q.usage_factor = match &s.value {
                None => 1.0,
                Some(v) => v
                    .parse::<f64>()
                    .ok()
                    .filter(|f| *f >= 0.0)
                    .ok_or_else(|| format!(" Bad UsageFactor value: {v}\n"))?,
            }
        }
        Key::PreemptMode => {
            let v = s.value.clone().unwrap_or_else(|| "cluster".into());
            let ok = [
                "cluster", "cancel", "requeue", "suspend", "off", "gang", "within",
            ];
            if !v.split(',').all(|m| ok.contains(&m)) {
                return Err(format!(" Unknown preempt mode: {v}\n"));
            }
            q.preempt_mode = v;
        }
        Key::Preempt => q.preempt = qos_list(&q.preempt, s, t)?,
        Key::Flags => {
            let given: Vec<String> = s
                .value
                .as_deref()
                .unwrap_or("")
                .split(',')
                .filter(|x| !x.is_empty())
                .map(str::to_owned)
                .collect();
            q.flags = match s.op {
                ListOp::Set => given,
                ListOp::Add => q.flags.iter().cloned().chain(given).collect(),
                ListOp::Remove => q
                    .flags
                    .iter()
                    .filter(|f| !given.contains(f))
                    .cloned()
                    .collect(),
            };
            q.flags.dedup();
        }
        other => return Err(unknown_key(other)),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
