//! `sacctmgr show` columns: names, minimum abbreviations, headers and
//! widths as Slurm 22.05 defines them, and the pure renderer.

use proto::acctdb::{format_wall, AcctAccount, AcctTables, AcctUser, Assoc, Qos};

/// What a column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Account name.
    Account,
    /// User's admin level.
    Admin,
    /// Cluster.
    Cluster,
    /// The controller's host.
    ControlHost,
    /// The controller's port.
    ControlPort,
    /// User's default account.
    DefAcct,
    /// Default QOS.
    DefQos,
    /// Account or QOS description.
    Descr,
    /// QOS flags.
    Flags,
    /// QOS grace time.
    GraceTime,
    /// `GrpCPUMins` (always empty: TRES minutes are not kept).
    GrpCpuMins,
    /// `GrpCPUs` (old form; empty).
    GrpCpus,
    /// GrpJobs.
    GrpJobs,
    /// `GrpMem` (old form; empty).
    GrpMem,
    /// `GrpNodes` (old form; empty).
    GrpNodes,
    /// GrpSubmitJobs.
    GrpSubmit,
    /// GrpTRES.
    GrpTres,
    /// GrpTRESMins (empty).
    GrpTresMins,
    /// GrpTRESRunMins (empty).
    GrpTresRunMins,
    /// GrpWall.
    GrpWall,
    /// Association or QOS id.
    Id,
    /// MaxCPUMins (empty).
    MaxCpuMins,
    /// MaxCPUs (empty).
    MaxCpus,
    /// MaxJobs.
    MaxJobs,
    /// MaxJobsPA (empty).
    MaxJobsPa,
    /// MaxJobsPU (QOS).
    MaxJobsPu,
    /// MaxNodes (empty).
    MaxNodes,
    /// MaxSubmitJobs.
    MaxSubmit,
    /// MaxSubmitPA (empty).
    MaxSubmitPa,
    /// MaxSubmitPU (QOS).
    MaxSubmitPu,
    /// MaxTRES (per job).
    MaxTres,
    /// MaxTRESMins (empty).
    MaxTresMins,
    /// MaxTRESPerNode (empty).
    MaxTresPerNode,
    /// MaxTRESPA (empty).
    MaxTresPa,
    /// MaxTRESPU.
    MaxTresPu,
    /// MaxWall.
    MaxWall,
    /// MinTRES (empty).
    MinTres,
    /// Entity name (QOS, cluster).
    Name,
    /// Organization.
    Org,
    /// Parent account.
    ParentName,
    /// Partition.
    Partition,
    /// QOS preempt list.
    Preempt,
    /// PreemptExemptTime.
    PreemptExemptTime,
    /// PreemptMode.
    PreemptMode,
    /// Priority.
    Priority,
    /// QOS list.
    Qos,
    /// RPC version.
    Rpc,
    /// Fairshare.
    Share,
    /// UsageFactor.
    UsageFactor,
    /// UsageThreshold (empty).
    UsageThres,
    /// User.
    User,
}

/// (name, minimum typed length, header, width, field), in Slurm's
/// matching order: the first entry the typed word abbreviates wins.
const FIELDS: &[(&str, usize, &str, i32, Field)] = &[
    ("account", 3, "Account", 10, Field::Account),
    ("acct", 4, "Account", 10, Field::Account),
    ("adminlevel", 2, "Admin", 9, Field::Admin),
    ("clusters", 2, "Cluster", 10, Field::Cluster),
    ("controlhost", 8, "ControlHost", 15, Field::ControlHost),
    ("controlport", 8, "ControlPort", 12, Field::ControlPort),
    ("defaultaccount", 8, "Def Acct", 10, Field::DefAcct),
    ("defaultqos", 8, "Def QOS", 9, Field::DefQos),
    ("description", 3, "Descr", 20, Field::Descr),
    ("flags", 2, "Flags", 10, Field::Flags),
    ("gracetime", 3, "GraceTime", 10, Field::GraceTime),
    ("grpcpus", 6, "GrpCPUs", 8, Field::GrpCpus),
    ("grpcpumins", 7, "GrpCPUMins", 11, Field::GrpCpuMins),
    ("grptres", 7, "GrpTRES", 13, Field::GrpTres),
    ("grptresmins", 7, "GrpTRESMins", 13, Field::GrpTresMins),
    (
        "grptresrunmins",
        7,
        "GrpTRESRunMin",
        13,
        Field::GrpTresRunMins,
    ),
    ("grpjobs", 4, "GrpJobs", 7, Field::GrpJobs),
    ("grpmemory", 4, "GrpMem", 7, Field::GrpMem),
    ("grpnodes", 4, "GrpNodes", 8, Field::GrpNodes),
    ("grpsubmitjobs", 4, "GrpSubmit", 9, Field::GrpSubmit),
    ("grpwall", 4, "GrpWall", 11, Field::GrpWall),
    ("id", 2, "ID", 6, Field::Id),
    ("maxcpuminsperjob", 7, "MaxCPUMins", 11, Field::MaxCpuMins),
    ("maxcpusperjob", 7, "MaxCPUs", 8, Field::MaxCpus),
    ("maxtres", 7, "MaxTRES", 13, Field::MaxTres),
    ("maxtresperjob", 11, "MaxTRES", 13, Field::MaxTres),
    (
        "maxtrespernode",
        11,
        "MaxTRESPerNode",
        14,
        Field::MaxTresPerNode,
    ),
    (
        "maxtresminsperjob",
        8,
        "MaxTRESMins",
        13,
        Field::MaxTresMins,
    ),
    ("maxtrespa", 9, "MaxTRESPA", 13, Field::MaxTresPa),
    ("maxtresperuser", 11, "MaxTRESPU", 13, Field::MaxTresPu),
    ("maxtrespu", 9, "MaxTRESPU", 13, Field::MaxTresPu),
    ("maxjobs", 4, "MaxJobs", 7, Field::MaxJobs),
    ("maxjobspa", 9, "MaxJobsPA", 9, Field::MaxJobsPa),
    ("maxjobsperuser", 11, "MaxJobsPU", 9, Field::MaxJobsPu),
    ("maxjobspu", 9, "MaxJobsPU", 9, Field::MaxJobsPu),
    ("maxnodesperjob", 4, "MaxNodes", 8, Field::MaxNodes),
    ("maxsubmitjobs", 4, "MaxSubmit", 9, Field::MaxSubmit),
    ("maxsubmitpa", 11, "MaxSubmitPA", 11, Field::MaxSubmitPa),
    (
        "maxsubmitjobsperuser",
        10,
        "MaxSubmitPU",
        11,
        Field::MaxSubmitPu,
    ),
    ("maxsubmitpu", 6, "MaxSubmitPU", 11, Field::MaxSubmitPu),
    ("maxwalldurationperjob", 4, "MaxWall", 11, Field::MaxWall),
    ("mintresperjob", 7, "MinTRES", 13, Field::MinTres),
    ("name", 2, "Name", 10, Field::Name),
    ("organization", 1, "Org", 20, Field::Org),
    ("parentname", 7, "Par Name", 10, Field::ParentName),
    ("partition", 4, "Partition", 10, Field::Partition),
    ("preemptmode", 8, "PreemptMode", 11, Field::PreemptMode),
    ("preempt", 7, "Preempt", 10, Field::Preempt),
    (
        "preemptexempttime",
        8,
        "PreemptExemptTime",
        19,
        Field::PreemptExemptTime,
    ),
    ("priority", 3, "Priority", 10, Field::Priority),
    ("qoslevel", 3, "QOS", 20, Field::Qos),
    ("qos", 1, "QOS", 20, Field::Qos),
    ("rpc", 1, "RPC", 5, Field::Rpc),
    ("share", 1, "Share", 9, Field::Share),
    ("fairshare", 2, "Share", 9, Field::Share),
    ("usagefactor", 6, "UsageFactor", 11, Field::UsageFactor),
    ("usagethreshold", 6, "UsageThres", 10, Field::UsageThres),
    ("user", 1, "User", 10, Field::User),
];

/// One column to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// What.
    pub field: Field,
    /// Header text.
    pub header: &'static str,
    /// Width; negative: left-justified.
    pub width: i32,
}

/// Parses a `format=` list (`Name%20,Account,QOS%-30`). The error is the
/// field Slurm names in `Unknown field '...'`.
pub fn parse_format(spec: &str) -> Result<Vec<Column>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').filter(|s| !s.is_empty()) {
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => (n, w.parse::<i32>().ok().filter(|w| *w != 0)),
            None => (item, None),
        };
        let l = name.to_ascii_lowercase();
        let found = FIELDS
            .iter()
            .find(|(full, min, ..)| l.len() >= (*min).min(full.len()) && full.starts_with(&l));
        let Some((_, _, header, w, field)) = found else {
            return Err(name.to_owned());
        };
        out.push(Column {
            field: *field,
            header,
            width: width.unwrap_or(*w),
        });
    }
    Ok(out)
}

/// How rows are printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// Columns and a dashes line.
    #[default]
    Columns,
    /// `-p`: `|` after every field.
    Parsable,
    /// `-P`: `|` between fields.
    Parsable2,
}

/// One printed row: the entities it is about.
#[derive(Clone, Debug, Default)]
pub struct Row<'a> {
    /// The cluster (cluster rows and associations).
    pub cluster: &'a str,
    /// The account record.
    pub account: Option<&'a AcctAccount>,
    /// The user record.
    pub user: Option<&'a AcctUser>,
    /// The association, with inherited values filled in.
    pub assoc: Option<Assoc>,
    /// The QOS.
    pub qos: Option<&'a Qos>,
    /// The controller's host and port (cluster rows).
    pub control: Option<(&'a str, u16)>,
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The text of `field` in `row`.
pub fn value(field: Field, row: &Row<'_>) -> String {
    let a = row.assoc.as_ref();
    let q = row.qos;
    // Limits come from the QOS on QOS rows, from the association otherwise.
    let limits = q.map(|q| &q.limits).or(a.map(|a| &a.limits));
    match field {
        Field::Account => a
            .map(|a| a.account.clone())
            .or(row.account.map(|x| x.name.clone()))
            .unwrap_or_default(),
        Field::Admin => opt(row.user.map(|u| u.admin_level.as_str())),
        Field::Cluster => {
            if row.cluster.is_empty() {
                opt(a.map(|a| a.cluster.clone()))
            } else {
                row.cluster.to_owned()
            }
        }
        Field::ControlHost => opt(row.control.map(|c| c.0)),
        Field::ControlPort => opt(row.control.map(|c| c.1)),
        Field::DefAcct => opt(row.user.map(|u| u.default_account.clone())),
        Field::DefQos => opt(a.and_then(|a| a.default_qos.clone())),
        Field::Descr => q
            .map(|q| q.description.clone())
            .or(row.account.map(|x| x.description.clone()))
            .unwrap_or_default(),
        Field::Flags => opt(q.map(|q| q.flags.join(","))),
        Field::GraceTime => {
            opt(q.map(|q| model::units::format_duration_hms(u64::from(q.grace_time))))
        }
        Field::PreemptExemptTime => opt(q
            .and_then(|q| q.preempt_exempt_time)
            .map(|s| model::units::format_duration_hms(u64::from(s)))),
        Field::GrpJobs => opt(limits.and_then(|l| l.grp_jobs)),
        Field::GrpSubmit => opt(limits.and_then(|l| l.grp_submit_jobs)),
        Field::GrpTres => opt(limits.and_then(|l| l.grp_tres.clone())),
        Field::GrpWall => opt(limits.and_then(|l| l.grp_wall).map(format_wall)),
        Field::Id => opt(a.map(|a| a.id).or(q.map(|q| q.id))),
        Field::MaxJobs => opt(a.and_then(|a| a.limits.max_jobs)),
        Field::MaxJobsPu => opt(q.and_then(|q| q.limits.max_jobs)),
        Field::MaxSubmit => opt(a.and_then(|a| a.limits.max_submit_jobs)),
        Field::MaxSubmitPu => opt(q.and_then(|q| q.limits.max_submit_jobs)),
        Field::MaxTres => opt(limits.and_then(|l| l.max_tres_per_job.clone())),
        Field::MaxTresPu => opt(limits.and_then(|l| l.max_tres_per_user.clone())),
        Field::MaxWall => opt(limits.and_then(|l| l.max_wall).map(format_wall)),
        Field::Name => q
            .map(|q| q.name.clone())
            .or(row.user.map(|u| u.name.clone()))
            .or(row.account.map(|x| x.name.clone()))
            .unwrap_or_else(|| row.cluster.to_owned()),
        Field::Org => opt(row.account.map(|x| x.organization.clone())),
        Field::ParentName => opt(a.filter(|a| a.user.is_empty()).map(|a| a.parent.clone())),
        Field::Partition => opt(a.map(|a| a.partition.clone())),
        Field::Preempt => opt(q.map(|q| q.preempt.join(","))),
        Field::PreemptMode => opt(q.map(|q| q.preempt_mode.clone())),
        Field::Priority => opt(q.map(|q| q.priority).or(a.and_then(|a| a.priority))),
        Field::Qos => opt(a.map(|a| a.qos.join(","))),
        Field::Rpc => opt(row.control.map(|_| 9728)),
        Field::Share => opt(a.map(|a| a.shares)),
        Field::UsageFactor => opt(q.map(|q| format!("{:.6}", q.usage_factor))),
        Field::User => a
            .map(|a| a.user.clone())
            .or(row.user.map(|u| u.name.clone()))
            .unwrap_or_default(),
        Field::GrpCpuMins
        | Field::GrpCpus
        | Field::GrpMem
        | Field::GrpNodes
        | Field::GrpTresMins
        | Field::GrpTresRunMins
        | Field::MaxCpuMins
        | Field::MaxCpus
        | Field::MaxJobsPa
        | Field::MaxNodes
        | Field::MaxSubmitPa
        | Field::MaxTresMins
        | Field::MaxTresPerNode
        | Field::MaxTresPa
        | Field::MinTres
        | Field::UsageThres => String::new(),
    }
}

/// `cell`, for the listings that keep their own columns.
pub(crate) fn cell_text(text: &str, width: i32) -> String {
    cell(text, width)
}

fn cell(text: &str, width: i32) -> String {
    let w = width.unsigned_abs() as usize;
    let shown: String = if text.chars().count() > w {
        let mut s: String = text.chars().take(w.saturating_sub(1)).collect();
        s.push('+');
        s
    } else {
        text.to_owned()
    };
    if width < 0 {
        format!("{shown:<w$}")
    } else {
        format!("{shown:>w$}")
    }
}

/// Prints `rows` as sacctmgr does.
pub fn render(cols: &[Column], rows: &[Row<'_>], layout: Layout, header: bool) -> String {
    let mut out = String::new();
    let line = |out: &mut String, cells: Vec<String>| match layout {
        Layout::Columns => {
            for (c, text) in cols.iter().zip(cells) {
                out.push_str(&cell(&text, c.width));
                out.push(' ');
            }
            out.push('\n');
        }
        Layout::Parsable => {
            for text in cells {
                out.push_str(&text);
                out.push('|');
            }
            out.push('\n');
        }
        Layout::Parsable2 => {
            out.push_str(&cells.join("|"));
            out.push('\n');
        }
    };
    if header {
        line(&mut out, cols.iter().map(|c| c.header.to_owned()).collect());
        if layout == Layout::Columns {
            for c in cols {
                out.push_str(&"-".repeat(c.width.unsigned_abs() as usize));
                out.push(' ');
            }
            out.push('\n');
        }
    }
    for r in rows {
        line(&mut out, cols.iter().map(|c| value(c.field, r)).collect());
    }
    out
}

/// The associations in Slurm's order: by cluster, then depth first down
/// the account tree from `root`; under each account its users (by name,
/// then partition) before its sub-accounts (by name).
pub fn tree_order(t: &AcctTables) -> Vec<&Assoc> {
    let mut out = Vec::new();
    let mut clusters: Vec<&str> = t.assocs.iter().map(|a| a.cluster.as_str()).collect();
    clusters.sort();
    clusters.dedup();
    for c in clusters {
        let mut stack = vec!["root".to_owned()];
        let mut seen = std::collections::BTreeSet::new();
        while let Some(acct) = stack.pop() {
            if !seen.insert(acct.clone()) {
                continue;
            }
            if let Some(a) = t.account_assoc(c, &acct) {
                out.push(a);
            }
            let mut users: Vec<&Assoc> = t
                .assocs
                .iter()
                .filter(|a| a.cluster == c && a.account == acct && !a.user.is_empty())
                .collect();
            users.sort_by(|x, y| (&x.user, &x.partition).cmp(&(&y.user, &y.partition)));
            out.extend(users);
            let mut kids: Vec<String> = t
                .assocs
                .iter()
                .filter(|a| a.cluster == c && a.user.is_empty() && a.parent == acct)
                .map(|a| a.account.clone())
                .collect();
            kids.sort();
            stack.extend(kids.into_iter().rev());
        }
    }
    out
}
