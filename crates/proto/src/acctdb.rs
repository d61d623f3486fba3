//! The association database on the wire (Slurm's slurmdbd tables that
//! `sacctmgr` manages): clusters, accounts (a tree under `root`), users,
//! associations (cluster/account/user/partition, with limits) and QOS.
//!
//! `sacctmgr` sends an [`AdminRequest`]; the controller's accounting writer
//! applies it to its [`AcctTables`] (crate `accounting`, module `admin`) and
//! answers with an [`AdminReply`] that carries the text Slurm prints. The
//! value forms shared by both sides (TRES lists, wall times, admin levels)
//! are parsed and printed here.

use serde::{Deserialize, Serialize};

/// Slurm's `AdminLevel` of a user.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AdminLevel {
    /// An ordinary user.
    #[default]
    None,
    /// May change jobs, nodes and the association database (sacctmgr).
    Operator,
    /// Everything an operator may, and more.
    Administrator,
}

impl AdminLevel {
    /// How sacctmgr prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            AdminLevel::None => "None",
            AdminLevel::Operator => "Operator",
            AdminLevel::Administrator => "Administrator",
        }
    }

    /// Parses `AdminLevel=` as Slurm does: `None`, `Operator`, and
    /// `Administrator` (also `Admin` and `SuperUser`), any case.
    pub fn parse(s: &str) -> Option<AdminLevel> {
        let l = s.to_ascii_lowercase();
        if l == "none" {
            Some(AdminLevel::None)
        } else if l.starts_with("oper") {
            Some(AdminLevel::Operator)
        } else if l.starts_with("admin") || l.starts_with("super") {
            Some(AdminLevel::Administrator)
        } else {
            None
        }
    }
}

/// A cluster known to the database.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AcctCluster {
    /// `ClusterName`.
    pub name: String,
}

/// An account (a node of the account tree; its place in the tree is its
/// associations' `parent`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AcctAccount {
    /// Name (lower case).
    pub name: String,
    /// `Description=`.
    pub description: String,
    /// `Organization=`.
    pub organization: String,
}

/// A user known to the database.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AcctUser {
    /// Login name.
    pub name: String,
    /// `DefaultAccount=`.
    pub default_account: String,
    /// `AdminLevel=`.
    pub admin_level: AdminLevel,
}

/// The limits an association or a QOS may carry; `None` is "not set" (an
/// association then inherits its parent's, and sacctmgr prints nothing).
/// TRES lists are canonical ([`parse_tres`]); times are minutes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// `GrpTRES`.
    pub grp_tres: Option<String>,
    /// `GrpJobs`.
    pub grp_jobs: Option<u32>,
    /// `GrpSubmitJobs`.
    pub grp_submit_jobs: Option<u32>,
    /// `GrpWall`, minutes.
    pub grp_wall: Option<u32>,
    /// `MaxJobs` (per user, for an association).
    pub max_jobs: Option<u32>,
    /// `MaxSubmitJobs`.
    pub max_submit_jobs: Option<u32>,
    /// `MaxWall` (`MaxWallDurationPerJob`), minutes.
    pub max_wall: Option<u32>,
    /// `MaxTRESPerJob` (`MaxTRES`).
    pub max_tres_per_job: Option<String>,
    /// `MaxTRESPerUser` (`MaxTRESPU`).
    pub max_tres_per_user: Option<String>,
}

/// One association: who may run under which account, where, with which
/// limits. An account's own association has an empty `user`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Assoc {
    /// Stable id (never reused).
    pub id: u32,
    /// Cluster.
    pub cluster: String,
    /// Account.
    pub account: String,
    /// User; empty for the account's own association.
    pub user: String,
    /// Partition; empty for every partition.
    pub partition: String,
    /// The parent account (for an account association; empty for `root`).
    pub parent: String,
    /// `Fairshare=` (raw shares).
    pub shares: u32,
    /// `Priority=`.
    pub priority: Option<u32>,
    /// Limits.
    pub limits: Limits,
    /// `QOS=`; empty: inherited from the parent.
    pub qos: Vec<String>,
    /// `DefaultQOS=`.
    pub default_qos: Option<String>,
}

/// A quality of service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Qos {
    /// Stable id.
    pub id: u32,
    /// Name (lower case).
    pub name: String,
    /// `Description=`.
    pub description: String,
    /// `Priority=`.
    pub priority: u32,
    /// `GraceTime=`, seconds.
    pub grace_time: u32,
    /// `PreemptExemptTime=`, seconds: its jobs are not preempted before
    /// they have run this long (None: the cluster's PreemptExemptTime).
    #[serde(default)]
    pub preempt_exempt_time: Option<u32>,
    /// `Preempt=`: QOS this one may preempt.
    pub preempt: Vec<String>,
    /// `PreemptMode=` (`cluster`, `cancel`, `requeue`, `suspend`, `off`).
    pub preempt_mode: String,
    /// `Flags=`.
    pub flags: Vec<String>,
    /// `UsageFactor=`.
    pub usage_factor: f64,
    /// Limits (`MaxJobs`/`MaxSubmitJobs` are the per-user forms here:
    /// `MaxJobsPerUser`, `MaxSubmitJobsPerUser`).
    pub limits: Limits,
}

impl Qos {
    /// A QOS with Slurm's defaults.
    pub fn new(id: u32, name: &str) -> Qos {
        Qos {
            id,
            name: name.to_owned(),
            description: name.to_owned(),
            priority: 0,
            grace_time: 0,
            preempt_exempt_time: None,
            preempt: Vec::new(),
            preempt_mode: "cluster".to_owned(),
            flags: Vec::new(),
            usage_factor: 1.0,
            limits: Limits::default(),
        }
    }
}

/// The whole association database.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AcctTables {
    /// Clusters.
    pub clusters: Vec<AcctCluster>,
    /// Accounts.
    pub accounts: Vec<AcctAccount>,
    /// Users.
    pub users: Vec<AcctUser>,
    /// Associations.
    pub assocs: Vec<Assoc>,
    /// QOS.
    pub qos: Vec<Qos>,
}

impl AcctTables {
    /// The association with these coordinates.
    pub fn assoc(
        &self,
        cluster: &str,
        account: &str,
        user: &str,
        partition: &str,
    ) -> Option<&Assoc> {
        self.assocs.iter().find(|a| {
            a.cluster == cluster
                && a.account == account
                && a.user == user
                && a.partition == partition
        })
    }

    /// The account association of `account` on `cluster`.
    pub fn account_assoc(&self, cluster: &str, account: &str) -> Option<&Assoc> {
        self.assoc(cluster, account, "", "")
    }

    /// The parent association of `a` (the account association of its
    /// account for a user association; of its parent account otherwise).
    pub fn parent_of(&self, a: &Assoc) -> Option<&Assoc> {
        if a.user.is_empty() {
            if a.parent.is_empty() {
                None
            } else {
                self.account_assoc(&a.cluster, &a.parent)
            }
        } else {
            self.account_assoc(&a.cluster, &a.account)
        }
    }

    /// `a` with every unset limit, QOS list and default QOS taken from the
    /// nearest ancestor that sets it (what sacctmgr shows and what is enforced).
    pub fn effective(&self, a: &Assoc) -> Assoc {
        let mut out = a.clone();
        let mut cur = self.parent_of(a);
        let mut depth = 0;
        while let Some(p) = cur {
            let l = &mut out.limits;
            let pl = &p.limits;
            fill(&mut l.grp_tres, &pl.grp_tres);
            fill(&mut l.grp_jobs, &pl.grp_jobs);
            fill(&mut l.grp_submit_jobs, &pl.grp_submit_jobs);
            fill(&mut l.grp_wall, &pl.grp_wall);
            fill(&mut l.max_jobs, &pl.max_jobs);
            fill(&mut l.max_submit_jobs, &pl.max_submit_jobs);
            fill(&mut l.max_wall, &pl.max_wall);
            fill(&mut l.max_tres_per_job, &pl.max_tres_per_job);
            fill(&mut l.max_tres_per_user, &pl.max_tres_per_user);
            fill(&mut out.priority, &p.priority);
            fill(&mut out.default_qos, &p.default_qos);
            if out.qos.is_empty() {
                out.qos = p.qos.clone();
            }
            depth += 1;
            // A cycle can only come from a hand-edited database.
            if depth > 64 {
                break;
            }
            cur = self.parent_of(p);
        }
        out
    }

    /// The user record.
    pub fn user(&self, name: &str) -> Option<&AcctUser> {
        self.users.iter().find(|u| u.name == name)
    }

    /// The QOS record.
    pub fn qos_named(&self, name: &str) -> Option<&Qos> {
        self.qos.iter().find(|q| q.name == name)
    }
}

fn fill<T: Clone>(own: &mut Option<T>, parent: &Option<T>) {
    if own.is_none() {
        own.clone_from(parent);
    }
}

/// What a sacctmgr command acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Entity {
    /// `cluster`.
    Cluster,
    /// `account`.
    Account,
    /// `user`.
    User,
    /// `qos`.
    Qos,
}

/// What a sacctmgr command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// `add` / `create`.
    Add,
    /// `modify` / `update`.
    Modify,
    /// `delete` / `remove`.
    Delete,
}

/// The conditions (`where ...`) of a command, or for `add` the names and
/// coordinates of what is added. Empty lists do not restrict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cond {
    /// `Name=` or bare names.
    pub names: Vec<String>,
    /// `Cluster=`.
    pub clusters: Vec<String>,
    /// `Account=`.
    pub accounts: Vec<String>,
    /// `User=`.
    pub users: Vec<String>,
    /// `Partition=`.
    pub partitions: Vec<String>,
    /// `Parent=` (as a condition).
    pub parents: Vec<String>,
}

/// A field `sacctmgr ... set` (or `add ... Key=value`) can set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Key {
    /// `Fairshare=` / `Shares=`.
    Shares,
    /// `Priority=`.
    Priority,
    /// `GrpTRES=`.
    GrpTres,
    /// `GrpJobs=`.
    GrpJobs,
    /// `GrpSubmitJobs=`.
    GrpSubmitJobs,
    /// `GrpWall=`.
    GrpWall,
    /// `MaxJobs=`.
    MaxJobs,
    /// `MaxSubmitJobs=`.
    MaxSubmitJobs,
    /// `MaxWall=`.
    MaxWall,
    /// `MaxTRESPerJob=` / `MaxTRES=`.
    MaxTresPerJob,
    /// `MaxTRESPerUser=`.
    MaxTresPerUser,
    /// `MaxJobsPerUser=` (QOS).
    MaxJobsPerUser,
    /// `MaxSubmitJobsPerUser=` (QOS).
    MaxSubmitJobsPerUser,
    /// `QOS=` (`+=`, `-=` add and remove).
    Qos,
    /// `DefaultQOS=`.
    DefaultQos,
    /// `Parent=`.
    Parent,
    /// `Description=`.
    Description,
    /// `Organization=`.
    Organization,
    /// `DefaultAccount=`.
    DefaultAccount,
    /// `AdminLevel=`.
    AdminLevel,
    /// `Preempt=` (QOS).
    Preempt,
    /// `PreemptMode=` (QOS).
    PreemptMode,
    /// `GraceTime=` (QOS).
    GraceTime,
    /// `PreemptExemptTime=` (QOS).
    PreemptExemptTime,
    /// `UsageFactor=` (QOS).
    UsageFactor,
    /// `Flags=` (QOS).
    Flags,
}

/// How a list value changes the list (`=`, `+=`, `-=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ListOp {
    /// Replace.
    #[default]
    Set,
    /// Add to.
    Add,
    /// Remove from.
    Remove,
}

/// One `Key=value`, validated and canonical: `value` is `None` for `-1`
/// (clear the limit); times are minutes (seconds for `GraceTime` and
/// `PreemptExemptTime`), TRES
/// lists as [`parse_tres`] writes them, names lower case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    /// The field.
    pub key: Key,
    /// `=`, `+=` or `-=`.
    pub op: ListOp,
    /// The canonical value, `None` to clear.
    pub value: Option<String>,
}

/// One sacctmgr change request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdminRequest {
    /// add / modify / delete.
    pub action: Action,
    /// What.
    pub entity: Entity,
    /// Which (or, for add, the names and coordinates).
    pub cond: Cond,
    /// The values to set.
    pub set: Vec<Setting>,
    /// Apply it (otherwise only say what would change).
    pub commit: bool,
}

/// The controller's answer to an [`AdminRequest`]: Slurm's texts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminReply {
    /// What sacctmgr prints on stdout (the summary of the change).
    pub stdout: String,
    /// What it prints on stderr (refusals, problems).
    pub stderr: String,
    /// Whether the request changes anything (and so asks to commit).
    pub changed: bool,
    /// Whether sacctmgr exits 0.
    pub ok: bool,
}

/// `sreport`: usage of the controller's cluster in `[start, end)` (hour
/// boundaries).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageQuery {
    /// Window start.
    pub start: i64,
    /// Window end (exclusive).
    pub end: i64,
}

/// Allocated CPU-seconds of one association (or, with an empty account and
/// user, of the whole cluster, with its capacity) summed over a window.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageEntry {
    /// Account (empty: the cluster).
    pub account: String,
    /// User (empty: an account's own or the cluster).
    pub user: String,
    /// Allocated CPU-seconds.
    pub alloc_secs: i64,
    /// CPU-seconds the cluster could give (cluster entry only).
    pub capacity_secs: i64,
}

/// The answer to a [`UsageQuery`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageReport {
    /// ClusterName.
    pub cluster: String,
    /// One entry per association with usage, and the cluster's.
    pub rows: Vec<UsageEntry>,
}

/// An association's usage decayed with PriorityDecayHalfLife (what
/// fair-share and `sshare`'s RawUsage use).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecayedUsage {
    /// Account.
    pub account: String,
    /// User.
    pub user: String,
    /// Decayed CPU-seconds.
    pub usage: f64,
}

/// TRES names in Slurm's order (by TRES id); `gres/...` and `license/...`
/// follow, by name.
const TRES_ORDER: &[&str] = &[
    "cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages",
];

/// Parses a TRES list (`cpu=4,mem=2G,gres/gpu=1`) into Slurm's canonical
/// form (ordered by TRES id, memory in `M`/`G`/... units, `gres/gpu`), or
/// `None` for a malformed one. `-1` for an item removes it (`Err` never:
/// the caller decides what `-1` means).
pub fn parse_tres(s: &str) -> Option<Vec<(String, i64)>> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for item in s.split(',').filter(|x| !x.is_empty()) {
        let (name, value) = item.split_once('=')?;
        let name = name.trim().to_ascii_lowercase();
        let known = TRES_ORDER.contains(&name.as_str())
            || (name.starts_with("gres/") && name.len() > 5)
            || (name.starts_with("license/") && name.len() > 8);
        if !known {
            return None;
        }
        let value = value.trim();
        let v: i64 = if value == "-1" {
            -1
        } else if name == "mem" {
            i64::try_from(model::units::parse_memory_mb(value).ok()?).ok()?
        } else {
            i64::try_from(model::units::parse_count(value)?).ok()?
        };
        out.retain(|(n, _)| *n != name);
        out.push((name, v));
    }
    out.sort_by_key(|a| tres_rank(&a.0));
    Some(out)
}

fn tres_rank(name: &str) -> (usize, String) {
    match TRES_ORDER.iter().position(|n| *n == name) {
        Some(i) => (i, String::new()),
        None => (TRES_ORDER.len(), name.to_owned()),
    }
}

/// Prints a parsed TRES list as sacctmgr does (`cpu=4,mem=2G,gres/gpu=1`).
pub fn format_tres(items: &[(String, i64)]) -> String {
    items
        .iter()
        .map(|(n, v)| {
            if n == "mem" && *v >= 0 {
                format!("{n}={}", model::units::format_memory_mb(*v as u64))
            } else {
                format!("{n}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Merges TRES `update` into `current` as `sacctmgr modify ... set
/// GrpTRES=` does: named items are replaced, `=-1` removes one. `None`
/// when nothing is left.
pub fn merge_tres(current: Option<&str>, update: &str) -> Option<String> {
    let mut items = current.and_then(parse_tres).unwrap_or_default();
    for (name, v) in parse_tres(update).unwrap_or_default() {
        items.retain(|(n, _)| *n != name);
        if v >= 0 {
            items.push((name, v));
        }
    }
    items.sort_by_key(|a| tres_rank(&a.0));
    (!items.is_empty()).then(|| format_tres(&items))
}

/// One TRES value from a canonical list (`mem` in megabytes).
pub fn tres_value(list: &str, name: &str) -> Option<u64> {
    parse_tres(list)?
        .into_iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| u64::try_from(v).ok())
}

/// Parses a wall-clock limit as sacctmgr does (`60`, `1:00:00`,
/// `2-00:00:00`, in minutes); `-1` is `None` (unset). The error is the
/// text that does not parse.
pub fn parse_wall(s: &str) -> Result<Option<u32>, String> {
    if s.trim() == "-1" {
        return Ok(None);
    }
    match model::units::parse_time_limit(s) {
        Ok(model::TimeLimit::Minutes(m)) => Ok(Some(m)),
        Ok(model::TimeLimit::Unlimited) => Ok(None),
        Err(_) => Err(s.to_owned()),
    }
}

/// Prints minutes as sacctmgr prints a wall limit (`01:00:00`, `1-00:00:00`).
pub fn format_wall(minutes: u32) -> String {
    model::units::format_duration_hms(u64::from(minutes) * 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tres_lists_are_canonical() {
        let t = parse_tres("gres/gpu=2,mem=2048,cpu=4").unwrap();
        assert_eq!(format_tres(&t), "cpu=4,mem=2G,gres/gpu=2");
        assert_eq!(parse_tres("bogus=1"), None);
        assert_eq!(parse_tres("cpu"), None);
        assert_eq!(
            merge_tres(Some("cpu=4,mem=2G"), "cpu=-1,node=2").as_deref(),
            Some("mem=2G,node=2")
        );
        assert_eq!(merge_tres(Some("cpu=4"), "cpu=-1"), None);
        assert_eq!(tres_value("cpu=4,mem=2G", "mem"), Some(2048));
    }

    #[test]
    fn walls_and_admin_levels() {
        assert_eq!(parse_wall("60"), Ok(Some(60)));
        assert_eq!(parse_wall("1-00:00:00"), Ok(Some(1440)));
        assert_eq!(parse_wall("-1"), Ok(None));
        assert!(parse_wall("abc").is_err());
        assert_eq!(format_wall(60), "01:00:00");
        assert_eq!(format_wall(1440), "1-00:00:00");
        assert_eq!(AdminLevel::parse("operator"), Some(AdminLevel::Operator));
        assert_eq!(AdminLevel::parse("Admin"), Some(AdminLevel::Administrator));
        assert_eq!(AdminLevel::parse("x"), None);
    }
}
