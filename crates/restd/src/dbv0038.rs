//! slurmdbd's part of the v0.0.38 API beside `jobs` and `job/{id}` (those
//! are in `api`): accounts, users, associations, QOS, TRES, the whole
//! configuration and the diagnostics, in the shapes of slurmrestd 22.05's
//! document (`dbv0.0.38_*` of `rest_openapi_v3.json`). The association
//! database comes from the controller's accounting writer
//! (`CtldRequest::AcctTables`), read as the caller.
//!
//! Values muster does not keep (coordinators, wckeys, usage, rollups)
//! are written empty, as slurmrestd writes them when the database has none.

use crate::api::{Call, Ctx, Resp, Route};
use crate::json::{obj, strs, J};
use crate::v0038;
use proto::acctdb::{AcctTables, Assoc, Limits, Qos};
use proto::{CtldRequest, CtldResponse, Identity};

/// The routes of this module (beside `api::ROUTES`).
pub const ROUTES: &[Route] = &[
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/accounts",
        op: "slurmdb_v0_0_38_get_accounts",
        summary: "Get account list",
        query: &[("with_deleted", "Include deleted accounts")],
        schema: "dbv0.0.38_account_info",
        auth: true,
        handler: accounts,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/account/{account_name}",
        op: "slurmdb_v0_0_38_get_account",
        summary: "Get account info",
        query: &[("with_deleted", "Include deleted accounts")],
        schema: "dbv0.0.38_account_info",
        auth: true,
        handler: account,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/users",
        op: "slurmdb_v0_0_38_get_users",
        summary: "Get user list",
        query: &[("with_deleted", "Include deleted users")],
        schema: "dbv0.0.38_user_info",
        auth: true,
        handler: users,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/user/{user_name}",
        op: "slurmdb_v0_0_38_get_user",
        summary: "Get user info",
        query: &[("with_deleted", "Include deleted users")],
        schema: "dbv0.0.38_user_info",
        auth: true,
        handler: user,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/associations",
        op: "slurmdb_v0_0_38_get_associations",
        summary: "Get association list",
        query: ASSOC_QUERY,
        schema: "dbv0.0.38_associations_info",
        auth: true,
        handler: associations,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/association",
        op: "slurmdb_v0_0_38_get_association",
        summary: "Get association info",
        query: ASSOC_QUERY,
        schema: "dbv0.0.38_associations_info",
        auth: true,
        handler: associations,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/qos",
        op: "slurmdb_v0_0_38_get_qos",
        summary: "Get QOS list",
        query: &[("with_deleted", "Include deleted QOS")],
        schema: "dbv0.0.38_qos_info",
        auth: true,
        handler: qos_list,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/qos/{qos_name}",
        op: "slurmdb_v0_0_38_get_single_qos",
        summary: "Get QOS info",
        query: &[("with_deleted", "Include deleted QOS")],
        schema: "dbv0.0.38_qos_info",
        auth: true,
        handler: qos_one,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/tres",
        op: "slurmdb_v0_0_38_get_tres",
        summary: "Get TRES info",
        query: &[],
        schema: "dbv0.0.38_tres_info",
        auth: true,
        handler: tres,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/config",
        op: "slurmdb_v0_0_38_get_config",
        summary: "Dump all configuration information",
        query: &[],
        schema: "dbv0.0.38_config_info",
        auth: true,
        handler: config,
    },
    Route {
        method: "GET",
        path: "/slurmdb/v0.0.38/diag",
        op: "slurmdb_v0_0_38_diag",
        summary: "Get slurmdb diagnostics",
        query: &[],
        schema: "dbv0.0.38_diag",
        auth: true,
        handler: diag,
    },
];

/// The filters of `associations` and `association`.
pub const ASSOC_QUERY: &[(&str, &str)] = &[
    ("cluster", "Cluster name"),
    ("account", "Account name"),
    ("user", "User name"),
    ("partition", "Partition name"),
];

/// The association database as the caller may read it.
pub fn tables(ctx: &Ctx, who: &Identity) -> Result<AcctTables, client::ClientError> {
    match ctx.call(who, CtldRequest::AcctTables)? {
        CtldResponse::AcctTables(t) => Ok(t),
        _ => Err(client::ClientError::Unexpected),
    }
}

fn db_ok(rest: Vec<(&str, J)>) -> Resp {
    Resp::json(200, &v0038::answer(true, vec![], rest))
}

fn db_refused(e: &client::ClientError, source: &str) -> Resp {
    let (number, text) = match e {
        client::ClientError::Refused(s) => (v0038::errno(*s), s.as_slurm_str().to_string()),
        other => (-1, other.to_string()),
    };
    Resp::json(
        500,
        &v0038::answer(
            true,
            vec![v0038::error(&text, number, &text, source)],
            vec![],
        ),
    )
}

fn not_found(what: &str, source: &str, key: &str) -> Resp {
    Resp::json(
        500,
        &v0038::answer(
            true,
            vec![v0038::error(
                &format!("Unable to find {what} {}", key),
                -1,
                "Unspecified error",
                source,
            )],
            vec![(key_of(what), J::Arr(vec![]))],
        ),
    )
}

fn key_of(what: &str) -> &'static str {
    match what {
        "account" => "accounts",
        "user" => "users",
        _ => "qos",
    }
}

/// `{account, cluster, partition, user}` of an association.
pub fn assoc_short(a: &Assoc) -> J {
    obj(vec![
        ("account", J::from(&a.account)),
        ("cluster", J::from(&a.cluster)),
        ("partition", J::from(&a.partition)),
        ("user", J::from(&a.user)),
    ])
}

/// One `dbv0.0.38_account`: its associations are every association under
/// it (its own and its users').
pub fn account_json(t: &AcctTables, a: &proto::acctdb::AcctAccount) -> J {
    obj(vec![
        (
            "associations",
            J::Arr(
                t.assocs
                    .iter()
                    .filter(|x| x.account == a.name)
                    .map(assoc_short)
                    .collect(),
            ),
        ),
        ("coordinators", J::Arr(vec![])),
        ("description", J::from(&a.description)),
        ("name", J::from(&a.name)),
        ("organization", J::from(&a.organization)),
        ("flags", J::Arr(vec![])),
    ])
}

/// One `dbv0.0.38_user`.
pub fn user_json(t: &AcctTables, u: &proto::acctdb::AcctUser) -> J {
    obj(vec![
        ("administrator_level", J::from(u.admin_level.as_str())),
        (
            "associations",
            J::Arr(
                t.assocs
                    .iter()
                    .filter(|x| x.user == u.name)
                    .map(assoc_short)
                    .collect(),
            ),
        ),
        ("coordinators", J::Arr(vec![])),
        (
            "default",
            obj(vec![
                ("account", J::from(&u.default_account)),
                ("wckey", J::from("")),
            ]),
        ),
        ("flags", J::Arr(vec![])),
        ("name", J::from(&u.name)),
    ])
}

fn tres_or_empty(s: &Option<String>) -> J {
    v0038::tres_list(s.as_deref().unwrap_or(""))
}

fn opt_int(n: Option<u32>) -> J {
    n.map_or(J::Null, J::from)
}

/// One `dbv0.0.38_association`.
pub fn assoc_json(a: &Assoc) -> J {
    let l: &Limits = &a.limits;
    obj(vec![
        ("account", J::from(&a.account)),
        ("cluster", J::from(&a.cluster)),
        (
            "default",
            obj(vec![(
                "qos",
                J::from(a.default_qos.clone().unwrap_or_default()),
            )]),
        ),
        ("flags", J::Arr(vec![])),
        (
            "max",
            obj(vec![
                (
                    "jobs",
                    obj(vec![(
                        "per",
                        obj(vec![("wall_clock", opt_int(l.max_wall))]),
                    )]),
                ),
                (
                    "per",
                    obj(vec![(
                        "account",
                        obj(vec![("wall_clock", opt_int(l.grp_wall))]),
                    )]),
                ),
                (
                    "tres",
                    obj(vec![
                        (
                            "per",
                            obj(vec![
                                ("job", tres_or_empty(&l.max_tres_per_job)),
                                ("node", J::Arr(vec![])),
                            ]),
                        ),
                        ("total", tres_or_empty(&l.grp_tres)),
                        (
                            "minutes",
                            obj(vec![
                                ("per", obj(vec![("job", J::Arr(vec![]))])),
                                ("total", J::Arr(vec![])),
                            ]),
                        ),
                    ]),
                ),
            ]),
        ),
        ("min", obj(vec![("priority_threshold", J::Null)])),
        ("parent_account", J::from(&a.parent)),
        ("partition", J::from(&a.partition)),
        ("priority", opt_int(a.priority)),
        ("shares_raw", J::from(a.shares)),
        ("user", J::from(&a.user)),
        ("QOS", strs(&a.qos)),
    ])
}

/// Slurm's spelling of a QOS `PreemptMode`.
fn preempt_mode(m: &str) -> String {
    match m.to_ascii_lowercase().as_str() {
        "off" => "DISABLED".into(),
        "cluster" => "CLUSTER".into(),
        other => other.to_ascii_uppercase(),
    }
}

/// One `dbv0.0.38_qos`.
pub fn qos_json(q: &Qos) -> J {
    let l = &q.limits;
    obj(vec![
        ("description", J::from(&q.description)),
        (
            "flags",
            J::Arr(
                q.flags
                    .iter()
                    .map(|f| J::from(f.to_ascii_uppercase()))
                    .collect(),
            ),
        ),
        ("id", J::from(q.id.to_string())),
        (
            "limits",
            obj(vec![
                ("factor", J::Float(q.usage_factor)),
                (
                    "max",
                    obj(vec![
                        (
                            "wall_clock",
                            obj(vec![(
                                "per",
                                obj(vec![
                                    ("qos", opt_int(l.grp_wall)),
                                    ("job", opt_int(l.max_wall)),
                                ]),
                            )]),
                        ),
                        (
                            "jobs",
                            obj(vec![(
                                "active_jobs",
                                obj(vec![(
                                    "per",
                                    obj(vec![("account", J::Null), ("user", opt_int(l.max_jobs))]),
                                )]),
                            )]),
                        ),
                        (
                            "accruing",
                            obj(vec![(
                                "per",
                                obj(vec![("account", J::Null), ("user", J::Null)]),
                            )]),
                        ),
                        (
                            "tres",
                            obj(vec![
                                (
                                    "minutes",
                                    obj(vec![(
                                        "per",
                                        obj(vec![
                                            ("job", J::Arr(vec![])),
                                            ("account", J::Arr(vec![])),
                                            ("user", J::Arr(vec![])),
                                            ("qos", J::Arr(vec![])),
                                        ]),
                                    )]),
                                ),
                                (
                                    "per",
                                    obj(vec![
                                        ("account", J::Arr(vec![])),
                                        ("job", tres_or_empty(&l.max_tres_per_job)),
                                        ("node", J::Arr(vec![])),
                                        ("user", tres_or_empty(&l.max_tres_per_user)),
                                    ]),
                                ),
                            ]),
                        ),
                    ]),
                ),
                (
                    "min",
                    obj(vec![
                        ("priority_threshold", J::Null),
                        (
                            "tres",
                            obj(vec![("per", obj(vec![("job", J::Arr(vec![]))]))]),
                        ),
                    ]),
                ),
            ]),
        ),
        (
            "preempt",
            obj(vec![
                ("list", strs(&q.preempt)),
                ("mode", J::Arr(vec![J::from(preempt_mode(&q.preempt_mode))])),
                ("exempt_time", opt_int(q.preempt_exempt_time)),
            ]),
        ),
        ("priority", J::from(q.priority)),
        ("usage_factor", J::Float(q.usage_factor)),
        ("usage_threshold", J::Null),
        ("name", J::from(&q.name)),
    ])
}

/// The TRES slurmdbd knows: Slurm's standard ones (ids 1 to 8) and each
/// GRES a node of the cluster has (`gres/NAME`, from 1001 on).
pub fn tres_catalog(gres: &[String]) -> J {
    let mut list: Vec<J> = [
        ("cpu", "", 1),
        ("mem", "", 2),
        ("energy", "", 3),
        ("node", "", 4),
        ("billing", "", 5),
        ("fs", "disk", 6),
        ("vmem", "", 7),
        ("pages", "", 8),
    ]
    .iter()
    .map(|(ty, name, id)| {
        obj(vec![
            ("type", J::from(*ty)),
            ("name", J::from(*name)),
            ("id", J::Int(*id)),
            ("count", J::Int(0)),
        ])
    })
    .collect();
    for (i, g) in gres.iter().enumerate() {
        list.push(obj(vec![
            ("type", J::from("gres")),
            ("name", J::from(g)),
            ("id", J::Int(1001 + i as i64)),
            ("count", J::Int(0)),
        ]));
    }
    J::Arr(list)
}

/// The GRES names of the cluster's nodes, sorted.
pub fn gres_names(ctx: &Ctx, who: &Identity) -> Vec<String> {
    let mut names: Vec<String> = match ctx.call(who, CtldRequest::ListNodes) {
        Ok(CtldResponse::Nodes(nodes)) => nodes
            .iter()
            .flat_map(|n| n.gres.iter().map(|g| g.name.clone()))
            .collect(),
        _ => Vec::new(),
    };
    names.sort();
    names.dedup();
    names
}

fn accounts(ctx: &Ctx, who: &Identity, _call: &Call) -> Resp {
    match tables(ctx, who) {
        Ok(t) => db_ok(vec![(
            "accounts",
            J::Arr(t.accounts.iter().map(|a| account_json(&t, a)).collect()),
        )]),
        Err(e) => db_refused(&e, "slurmdb_accounts_get"),
    }
}

fn account(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("account_name");
    match tables(ctx, who) {
        Ok(t) => match t
            .accounts
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(name))
        {
            Some(a) => db_ok(vec![("accounts", J::Arr(vec![account_json(&t, a)]))]),
            None => not_found("account", "slurmdb_accounts_get", name),
        },
        Err(e) => db_refused(&e, "slurmdb_accounts_get"),
    }
}

fn users(ctx: &Ctx, who: &Identity, _call: &Call) -> Resp {
    match tables(ctx, who) {
        Ok(t) => db_ok(vec![(
            "users",
            J::Arr(t.users.iter().map(|u| user_json(&t, u)).collect()),
        )]),
        Err(e) => db_refused(&e, "slurmdb_users_get"),
    }
}

fn user(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("user_name");
    match tables(ctx, who) {
        Ok(t) => match t.users.iter().find(|u| u.name == name) {
            Some(u) => db_ok(vec![("users", J::Arr(vec![user_json(&t, u)]))]),
            None => not_found("user", "slurmdb_users_get", name),
        },
        Err(e) => db_refused(&e, "slurmdb_users_get"),
    }
}

/// The associations that `call`'s filters select (`cluster`, `account`,
/// `user`, `partition`; an unknown parameter refuses the request).
pub fn select_assocs<'t>(t: &'t AcctTables, call: &Call) -> Result<Vec<&'t Assoc>, String> {
    for (k, _) in &call.query {
        if !ASSOC_QUERY.iter().any(|(n, _)| n == k) {
            return Err(format!("query parameter {k} is not supported here"));
        }
    }
    let want = |name: &str, value: &str| match call.query(name) {
        None | Some("") => true,
        Some(list) => list.split(',').any(|v| v == value),
    };
    Ok(t.assocs
        .iter()
        .filter(|a| {
            want("cluster", &a.cluster)
                && want("account", &a.account)
                && want("user", &a.user)
                && want("partition", &a.partition)
        })
        .collect())
}

fn associations(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match tables(ctx, who) {
        Ok(t) => match select_assocs(&t, call) {
            Ok(list) => db_ok(vec![(
                "associations",
                J::Arr(list.into_iter().map(assoc_json).collect()),
            )]),
            Err(why) => Resp::json(
                500,
                &v0038::answer(
                    true,
                    vec![v0038::error(
                        &why,
                        -1,
                        "Unspecified error",
                        "_parse_assoc_cond",
                    )],
                    vec![],
                ),
            ),
        },
        Err(e) => db_refused(&e, "slurmdb_associations_get"),
    }
}

fn qos_list(ctx: &Ctx, who: &Identity, _call: &Call) -> Resp {
    match tables(ctx, who) {
        Ok(t) => db_ok(vec![("qos", J::Arr(t.qos.iter().map(qos_json).collect()))]),
        Err(e) => db_refused(&e, "slurmdb_qos_get"),
    }
}

fn qos_one(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("qos_name");
    match tables(ctx, who) {
        Ok(t) => match t.qos_named(name) {
            Some(q) => db_ok(vec![("qos", J::Arr(vec![qos_json(q)]))]),
            None => not_found("qos", "slurmdb_qos_get", name),
        },
        Err(e) => db_refused(&e, "slurmdb_qos_get"),
    }
}

fn tres(ctx: &Ctx, who: &Identity, _call: &Call) -> Resp {
    db_ok(vec![("tres", tres_catalog(&gres_names(ctx, who)))])
}

fn config(ctx: &Ctx, who: &Identity, _call: &Call) -> Resp {
    match tables(ctx, who) {
        Ok(t) => db_ok(vec![
            ("tres", J::Arr(vec![tres_catalog(&gres_names(ctx, who))])),
            (
                "accounts",
                J::Arr(t.accounts.iter().map(|a| account_json(&t, a)).collect()),
            ),
            (
                "associations",
                J::Arr(t.assocs.iter().map(assoc_json).collect()),
            ),
            (
                "users",
                J::Arr(t.users.iter().map(|u| user_json(&t, u)).collect()),
            ),
            ("qos", J::Arr(t.qos.iter().map(qos_json).collect())),
            ("wckeys", J::Arr(vec![])),
        ]),
        Err(e) => db_refused(&e, "slurmdb_config_get"),
    }
}

/// `dbv0.0.38_diag`'s statistics: muster's accounting runs inside the
/// controller, so `time_start` is the controller's and the lists of
/// slurmdbd's own RPCs and rollups are empty.
pub fn db_diag_stats(time_start: i64) -> J {
    obj(vec![
        ("time_start", J::Int(time_start)),
        ("rollups", J::Arr(vec![])),
        ("RPCs", J::Arr(vec![])),
        ("users", J::Arr(vec![])),
    ])
}

fn diag(ctx: &Ctx, who: &Identity, _call: &Call) -> Resp {
    match ctx.call(who, CtldRequest::Diag { reset: false }) {
        Ok(CtldResponse::Diag(d)) => db_ok(vec![("statistics", db_diag_stats(d.req_time_start))]),
        Ok(_) => db_refused(&client::ClientError::Unexpected, "slurmdb_diag"),
        Err(e) => db_refused(&e, "slurmdb_diag"),
    }
}

/// Examples of this module's answers, for the document's schemas.
pub fn examples() -> Vec<(&'static str, J)> {
    let t = example_tables();
    vec![
        (
            "dbv0.0.38_account_info",
            v0038::answer(
                true,
                vec![],
                vec![("accounts", J::Arr(vec![account_json(&t, &t.accounts[0])]))],
            ),
        ),
        (
            "dbv0.0.38_user_info",
            v0038::answer(
                true,
                vec![],
                vec![("users", J::Arr(vec![user_json(&t, &t.users[0])]))],
            ),
        ),
        (
            "dbv0.0.38_associations_info",
            v0038::answer(
                true,
                vec![],
                vec![("associations", J::Arr(vec![assoc_json(&t.assocs[0])]))],
            ),
        ),
        (
            "dbv0.0.38_qos_info",
            v0038::answer(
                true,
                vec![],
                vec![("qos", J::Arr(vec![qos_json(&t.qos[0])]))],
            ),
        ),
        (
            "dbv0.0.38_tres_info",
            v0038::answer(true, vec![], vec![("tres", tres_catalog(&["gpu".into()]))]),
        ),
        (
            "dbv0.0.38_config_info",
            v0038::answer(
                true,
                vec![],
                vec![
                    ("tres", J::Arr(vec![tres_catalog(&["gpu".into()])])),
                    ("accounts", J::Arr(vec![account_json(&t, &t.accounts[0])])),
                    ("associations", J::Arr(vec![assoc_json(&t.assocs[0])])),
                    ("users", J::Arr(vec![user_json(&t, &t.users[0])])),
                    ("qos", J::Arr(vec![qos_json(&t.qos[0])])),
                    ("wckeys", J::Arr(vec![])),
                ],
            ),
        ),
        (
            "dbv0.0.38_diag",
            v0038::answer(true, vec![], vec![("statistics", db_diag_stats(0))]),
        ),
    ]
}

/// A small association database with every limit set, for the schemas
/// and the tests.
pub fn example_tables() -> AcctTables {
    let limits = Limits {
        grp_tres: Some("cpu=10".into()),
        grp_jobs: Some(5),
        grp_submit_jobs: Some(10),
        grp_wall: Some(600),
        max_jobs: Some(2),
        max_submit_jobs: Some(4),
        max_wall: Some(60),
        max_tres_per_job: Some("cpu=4,mem=1000M".into()),
        max_tres_per_user: Some("cpu=8".into()),
    };
    let mut qos = Qos::new(1, "normal");
    qos.limits = limits.clone();
    qos.preempt_exempt_time = Some(30);
    AcctTables {
        clusters: vec![proto::acctdb::AcctCluster {
            name: "cluster".into(),
        }],
        accounts: vec![proto::acctdb::AcctAccount {
            name: "research".into(),
            description: "research".into(),
            organization: "lab".into(),
        }],
        users: vec![proto::acctdb::AcctUser {
            name: "alice".into(),
            default_account: "research".into(),
            admin_level: proto::acctdb::AdminLevel::None,
        }],
        assocs: vec![Assoc {
            id: 2,
            cluster: "cluster".into(),
            account: "research".into(),
            user: "alice".into(),
            partition: String::new(),
            parent: "root".into(),
            shares: 1,
            priority: Some(1),
            limits,
            qos: vec!["normal".into()],
            default_qos: Some("normal".into()),
        }],
        qos: vec![qos],
    }
}
