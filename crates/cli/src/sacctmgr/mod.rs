//! `sacctmgr`: view and change the association database (clusters, the
//! account tree, users and their admin levels, associations with limits,
//! QOS), as Slurm 22.05 does.
//!
//! ```text
//! args --parse_command--> Command::Show --fetch AcctTables--> rows --render--> text
//!                        Command::Change --AdminRequest--> controller --AdminReply--> text
//! ```
//!
//! Changes are made by the controller's accounting writer (it checks that
//! the caller is root, SlurmUser or an Operator/Administrator). Without
//! `-i`, sacctmgr first asks what would change, prints it, and asks to
//! commit, as Slurm does.
//!
//! Not yet: interactive mode (a command is required), coordinators, wckeys,
//! TRES and events listings, `dump`/`load`, `-o` one-liner.

pub mod fields;
pub mod resv;

#[cfg(test)]
mod tests;

use crate::common::print_stdout;
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use fields::{Column, Layout, Row};
use proto::acctdb::{
    parse_tres, parse_wall, AcctTables, Action, AdminLevel, AdminReply, AdminRequest, Cond, Entity,
    Key, ListOp, Setting,
};

pub(crate) const OPTIONS: &[OptSpec] = &[
    opt("associations", Some('s'), Arg::None),
    opt("help", Some('h'), Arg::None),
    opt("immediate", Some('i'), Arg::None),
    opt("noheader", Some('n'), Arg::None),
    opt("oneliner", Some('o'), Arg::None),
    opt("parsable", Some('p'), Arg::None),
    opt("parsable2", Some('P'), Arg::None),
    opt("quiet", Some('Q'), Arg::None),
    opt("readonly", Some('r'), Arg::None),
    opt("usage", None, Arg::None),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
];

const HELP: &str = "\
sacctmgr [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -h or --help: equivalent to \"help\" command
     -i or --immediate: commit changes immediately
     -n or --noheader: no header will be added to the beginning of output
     -p or --parsable: output will be '|' delimited with a '|' at the end
     -P or --parsable2: output will be '|' delimited without a '|' at the end
     -Q or --quiet: equivalent to \"quiet\" command
     -r or --readonly: equivalent to \"readonly\" command
     -s or --associations: equivalent to \"associations\" command
     -v or --verbose: equivalent to \"verbose\" command
     -V or --version: equivalent to \"version\" command

  <keyword> may be omitted from the execute line and sacctmgr will execute
  in interactive mode. It will process commands as entered until explicitly
  terminated.

    Valid <COMMAND> values are:
     add <ENTITY> <SPECS>     add entity
     delete <ENTITY> where <SPECS> delete the specified entity(s)
     help                     print this description of use.
     list <ENTITY> [<SPECS>]  display info of identified entity, default
                              is display all.
     modify <ENTITY> where <SPECS> set <SPECS>
                              modify entity
     show                     same as list
     version                  display tool version number.

  <ENTITY> may be \"account\", \"association\", \"cluster\", \"qos\" or \"user\".
";

/// The command-line options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Opts {
    /// `-i`: no confirmation.
    pub immediate: bool,
    /// `-n`.
    pub noheader: bool,
    /// `-p` / `-P`.
    pub layout: Layout,
    /// `-s` / `withassoc`.
    pub withassoc: bool,
    /// `-r`.
    pub readonly: bool,
}

/// A parsed command.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `show`/`list`.
    Show(Show),
    /// add/modify/delete.
    Change(AdminRequest),
    /// `help`.
    Help,
    /// `version`.
    Version,
    /// `show reservation`: the windows accounting keeps.
    ShowResv(resv::ResvShow),
}

/// What to list.
#[derive(Clone, Debug, PartialEq)]
pub struct Show {
    /// `account`, `association`, `cluster`, `qos` or `user`.
    pub what: ShowWhat,
    /// The `where` conditions.
    pub cond: Cond,
    /// The columns.
    pub columns: Vec<Column>,
    /// `withassoc`.
    pub withassoc: bool,
}

/// The listable entities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShowWhat {
    /// `show account`.
    Account,
    /// `show association`.
    Assoc,
    /// `show cluster`.
    Cluster,
    /// `show qos`.
    Qos,
    /// `show user`.
    User,
}

/// Whether `word` names `full` as Slurm matches keywords: at least `min`
/// characters, a case-insensitive prefix.
pub(crate) fn abbrev(word: &str, full: &str, min: usize) -> bool {
    let w = word.to_ascii_lowercase();
    w.len() >= min.min(full.len()) && full.starts_with(&w)
}

/// Splits `Key=value`, `Key+=value`, `Key-=value`.
fn split_kv(word: &str) -> (String, ListOp, Option<String>) {
    match word.find('=') {
        Some(i) => {
            let (k, v) = (&word[..i], &word[i + 1..]);
            let (k, op) = if let Some(k) = k.strip_suffix('+') {
                (k, ListOp::Add)
            } else if let Some(k) = k.strip_suffix('-') {
                (k, ListOp::Remove)
            } else {
                (k, ListOp::Set)
            };
            (k.to_owned(), op, Some(strip_quotes(v)))
        }
        None => (word.to_owned(), ListOp::Set, None),
    }
}

fn strip_quotes(v: &str) -> String {
    v.trim_matches(|c| c == '"' || c == '\'').to_owned()
}

fn list(v: &str, lower: bool) -> Vec<String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            if lower {
                s.to_ascii_lowercase()
            } else {
                s.to_owned()
            }
        })
        .collect()
}

/// A condition keyword: adds to `cond` and says whether it was one.
fn cond_key(cond: &mut Cond, key: &str, value: &str) -> bool {
    let k = key.to_ascii_lowercase();
    if abbrev(&k, "names", 1) {
        cond.names.extend(list(value, false));
    } else if abbrev(&k, "clusters", 1) {
        cond.clusters.extend(list(value, true));
    } else if abbrev(&k, "accounts", 2) || abbrev(&k, "acct", 4) {
        cond.accounts.extend(list(value, true));
    } else if abbrev(&k, "users", 1) {
        cond.users.extend(list(value, false));
    } else if abbrev(&k, "partitions", 3) {
        cond.partitions.extend(list(value, true));
    } else if abbrev(&k, "parent", 3) {
        cond.parents.extend(list(value, true));
    } else {
        return false;
    }
    true
}

/// The setting keywords: (name, minimum length, key).
const KEYS: &[(&str, usize, Key)] = &[
    ("adminlevel", 2, Key::AdminLevel),
    ("defaultaccount", 8, Key::DefaultAccount),
    ("defaultqos", 8, Key::DefaultQos),
    ("description", 1, Key::Description),
    ("fairshare", 2, Key::Shares),
    ("flags", 2, Key::Flags),
    ("gracetime", 3, Key::GraceTime),
    ("grptres", 7, Key::GrpTres),
    ("grpjobs", 4, Key::GrpJobs),
    ("grpsubmitjobs", 4, Key::GrpSubmitJobs),
    ("grpwall", 4, Key::GrpWall),
    ("maxtres", 7, Key::MaxTresPerJob),
    ("maxtresperjob", 11, Key::MaxTresPerJob),
    ("maxtresperuser", 11, Key::MaxTresPerUser),
    ("maxtrespu", 9, Key::MaxTresPerUser),
    ("maxjobs", 4, Key::MaxJobs),
    ("maxjobsperuser", 11, Key::MaxJobsPerUser),
    ("maxjobspu", 9, Key::MaxJobsPerUser),
    ("maxsubmitjobs", 4, Key::MaxSubmitJobs),
    ("maxsubmitjobsperuser", 10, Key::MaxSubmitJobsPerUser),
    ("maxsubmitpu", 6, Key::MaxSubmitJobsPerUser),
    ("maxwalldurationperjob", 4, Key::MaxWall),
    ("organization", 1, Key::Organization),
    ("parent", 3, Key::Parent),
    ("preemptexempttime", 8, Key::PreemptExemptTime),
    ("preemptmode", 8, Key::PreemptMode),
    ("preempt", 7, Key::Preempt),
    ("priority", 3, Key::Priority),
    ("qoslevel", 1, Key::Qos),
    ("shares", 1, Key::Shares),
    ("usagefactor", 6, Key::UsageFactor),
];

/// Parses one `Key=value` setting into its canonical form; the error is
/// the text for stderr.
pub fn parse_setting(word: &str) -> Result<Option<Setting>, String> {
    let (k, op, v) = split_kv(word);
    let Some(&(_, _, key)) = KEYS.iter().find(|(full, min, _)| abbrev(&k, full, *min)) else {
        return Ok(None);
    };
    let v = v.unwrap_or_default();
    let name = accounting_key_name(key);
    let bad = || format!(" Bad {name} value: {v}\n");
    let value = match key {
        _ if v == "-1" => None,
        Key::Shares
        | Key::Priority
        | Key::GrpJobs
        | Key::GrpSubmitJobs
        | Key::MaxJobs
        | Key::MaxSubmitJobs
        | Key::MaxJobsPerUser
        | Key::MaxSubmitJobsPerUser => Some(v.parse::<u32>().map_err(|_| bad())?.to_string()),
        Key::MaxWall | Key::GrpWall => parse_wall(&v)
            .map_err(|_| format!(" Bad {name} time format: {v}\n"))?
            .map(|m| m.to_string()),
        Key::GraceTime | Key::PreemptExemptTime => {
            let secs = match v.parse::<u32>() {
                Ok(s) => s,
                Err(_) => parse_wall(&v)
                    .ok()
                    .flatten()
                    .map(|m| m * 60)
                    .ok_or_else(|| format!(" Bad {name} time format: {v}\n"))?,
            };
            Some(secs.to_string())
        }
        Key::GrpTres | Key::MaxTresPerJob | Key::MaxTresPerUser => {
            let t = parse_tres(&v).ok_or_else(|| format!(" Invalid TRES specification: {v}\n"))?;
            Some(
                t.iter()
                    .map(|(n, x)| format!("{n}={x}"))
                    .collect::<Vec<_>>()
                    .join(","),
            )
        }
        Key::AdminLevel => Some(
            AdminLevel::parse(&v)
                .ok_or_else(|| format!(" Unknown AdminLevel: {v}\n"))?
                .as_str()
                .to_owned(),
        ),
        Key::UsageFactor => {
            v.parse::<f64>().map_err(|_| bad())?;
            Some(v.clone())
        }
        Key::Description | Key::Organization => Some(v.clone()),
        _ => Some(v.to_ascii_lowercase()),
    };
    Ok(Some(Setting { key, op, value }))
}

fn accounting_key_name(k: Key) -> &'static str {
    KEYS.iter()
        .find(|(_, _, x)| *x == k)
        .map(|(n, ..)| match *n {
            "fairshare" => "Fairshare",
            "maxwalldurationperjob" => "MaxWall",
            "grpwall" => "GrpWall",
            "gracetime" => "GraceTime",
            "preemptexempttime" => "PreemptExemptTime",
            "maxjobs" => "MaxJobs",
            "grpjobs" => "GrpJobs",
            "priority" => "Priority",
            _ => "",
        })
        .unwrap_or("")
}

fn unknown_condition(w: &str) -> String {
    format!(" Unknown condition: {w}\n Use keyword 'set' to modify value\n")
}

fn unknown_option(w: &str) -> String {
    format!(" Unknown option: {w}\n Use keyword 'where' to modify condition\n")
}

/// Parses the words after the options. The error is the text for stderr.
pub fn parse_command(words: &[String], o: &Opts) -> Result<Command, String> {
    let Some(first) = words.first() else {
        return Err("sacctmgr: interactive mode is not supported, give a command\n".into());
    };
    let rest = &words[1..];
    if abbrev(first, "help", 2) {
        return Ok(Command::Help);
    }
    if abbrev(first, "version", 4) {
        return Ok(Command::Version);
    }
    let action = if abbrev(first, "add", 3) || abbrev(first, "create", 3) {
        Some(Action::Add)
    } else if abbrev(first, "modify", 1) || abbrev(first, "update", 1) {
        Some(Action::Modify)
    } else if abbrev(first, "delete", 3) || abbrev(first, "remove", 3) {
        Some(Action::Delete)
    } else if abbrev(first, "show", 3) || abbrev(first, "list", 3) {
        None
    } else {
        return Err(format!("invalid keyword: {first}\n"));
    };
    let Some(action) = action else {
        if rest.first().is_some_and(|w| resv::is_reservation(w)) {
            return resv::parse(&rest[1..], crate::common::now()).map(Command::ShowResv);
        }
        return parse_show(rest, o).map(Command::Show);
    };
    if o.readonly {
        return Err("Can't run this command in readonly mode.\n".into());
    }
    let entity = rest.first().and_then(|w| {
        if abbrev(w, "accounts", 1) || abbrev(w, "acct", 4) {
            Some(Entity::Account)
        } else if abbrev(w, "clusters", 2) {
            Some(Entity::Cluster)
        } else if abbrev(w, "qos", 1) {
            Some(Entity::Qos)
        } else if abbrev(w, "users", 1) {
            Some(Entity::User)
        } else {
            None
        }
    });
    let Some(entity) = entity else {
        return Err(match action {
            Action::Add => "No valid entity in add command\nInput line must include \
                \"Account\", \"Cluster\", \"Coordinator\", \"Federation\", \"QOS\", \
                \"Resource\", or \"User\"\n"
                .into(),
            Action::Modify => "No valid entity in modify command\nInput line must include \
                \"Account\", \"Cluster\", \"Federation\", \"Job\", \"QOS\", \"Resource\" or \
                \"User\"\n"
                .into(),
            Action::Delete => "No valid entity in delete command\nInput line must include \
                \"Account\", \"Cluster\", \"Coordinator\", \"Federation\", \"QOS\", \
                \"Resource\", or \"User\"\n"
                .into(),
        });
    };
    let mut cond = Cond::default();
    let mut set = Vec::new();
    let mut err = String::new();
    let mut in_set = false;
    for w in &rest[1..] {
        let (k, _, v) = split_kv(w);
        if v.is_none() && abbrev(&k, "where", 5) {
            in_set = false;
            continue;
        }
        if v.is_none() && abbrev(&k, "set", 3) {
            in_set = true;
            continue;
        }
        let Some(v) = v else {
            // A bare word is a name.
            if in_set {
                err.push_str(&unknown_option(w));
            } else {
                cond.names.extend(list(w, entity != Entity::User));
            }
            continue;
        };
        match action {
            Action::Add => {
                let coordinate = abbrev(&k, "names", 1)
                    || abbrev(&k, "clusters", 1)
                    || (entity == Entity::User
                        && (abbrev(&k, "accounts", 2) || abbrev(&k, "partitions", 3)));
                if coordinate {
                    let lower = !(entity == Entity::User && abbrev(&k, "names", 1));
                    let mut c = Cond::default();
                    cond_key(
                        &mut c,
                        &k,
                        &if lower {
                            v.to_ascii_lowercase()
                        } else {
                            v.clone()
                        },
                    );
                    cond.names.extend(c.names);
                    cond.clusters.extend(c.clusters);
                    cond.accounts.extend(c.accounts);
                    cond.partitions.extend(c.partitions);
                    continue;
                }
                match parse_setting(w)? {
                    Some(s) => set.push(s),
                    None => err.push_str(&unknown_option(w)),
                }
            }
            Action::Modify if in_set => match parse_setting(w)? {
                Some(s) => set.push(s),
                None => err.push_str(&unknown_option(w)),
            },
            _ => {
                if !cond_key(&mut cond, &k, &v) {
                    err.push_str(&unknown_condition(w));
                }
            }
        }
    }
    if !err.is_empty() {
        return Err(err);
    }
    if action == Action::Add && entity != Entity::User {
        for n in cond.names.iter_mut() {
            *n = n.to_ascii_lowercase();
        }
    }
    Ok(Command::Change(AdminRequest {
        action,
        entity,
        cond,
        set,
        commit: o.immediate,
    }))
}

fn parse_show(words: &[String], o: &Opts) -> Result<Show, String> {
    let what = words.first().and_then(|w| {
        if abbrev(w, "accounts", 2) || abbrev(w, "acct", 4) {
            Some(ShowWhat::Account)
        } else if abbrev(w, "associations", 2) {
            Some(ShowWhat::Assoc)
        } else if abbrev(w, "clusters", 2) {
            Some(ShowWhat::Cluster)
        } else if abbrev(w, "qos", 1) {
            Some(ShowWhat::Qos)
        } else if abbrev(w, "users", 1) {
            Some(ShowWhat::User)
        } else {
            None
        }
    });
    let Some(what) = what else {
        return Err(
            "No valid entity in list command\nInput line must include \"Account\", \
            \"Association\", \"Cluster\", \"Configuration\",\n\"Event\", \"Federation\", \
            \"Problem\", \"QOS\", \"Resource\", \"Reservation\",\n\"RunAwayJobs\", \"Stats\", \
            \"Transaction\", \"TRES\", \"User\", or \"WCKey\"\n"
                .into(),
        );
    };
    let mut cond = Cond::default();
    let mut format = String::new();
    let mut withassoc = o.withassoc;
    let mut err = String::new();
    for w in &words[1..] {
        let (k, _, v) = split_kv(w);
        match v {
            None if abbrev(&k, "where", 5) => {}
            None if abbrev(&k, "withassoc", 5) => withassoc = true,
            None if abbrev(&k, "withdeleted", 5) || abbrev(&k, "wopinfo", 4) => {}
            None => cond.names.extend(list(w, what != ShowWhat::User)),
            Some(v) if abbrev(&k, "format", 1) => {
                if !format.is_empty() {
                    format.push(',');
                }
                format.push_str(&v);
            }
            Some(v) => {
                if !cond_key(&mut cond, &k, &v) {
                    err.push_str(&unknown_condition(w));
                }
            }
        }
    }
    if !err.is_empty() {
        return Err(err);
    }
    if format.is_empty() {
        format = default_format(what, withassoc).to_owned();
    }
    let columns =
        fields::parse_format(&format).map_err(|bad| format!("Unknown field '{bad}'\n"))?;
    Ok(Show {
        what,
        cond,
        columns,
        withassoc,
    })
}

/// The columns each listing prints by default (Slurm 22.05).
pub fn default_format(what: ShowWhat, withassoc: bool) -> &'static str {
    match (what, withassoc) {
        (ShowWhat::Assoc, _) => {
            "Cluster,Account,User,Partition,Share,Priority,GrpJobs,GrpTRES,GrpSubmit,GrpWall,\
             GrpTRESMins,MaxJobs,MaxTRES,MaxTRESPerNode,MaxSubmit,MaxWall,MaxTRESMins,QOS,\
             DefaultQOS,GrpTRESRunMins"
        }
        (ShowWhat::Account, false) => "Account,Description,Organization",
        (ShowWhat::Account, true) => {
            "Account,Description,Organization,Cluster,ParentName,User,Share,Priority,GrpJobs,\
             GrpNodes,GrpCPUs,GrpMEM,GrpSubmit,GrpWall,GrpCPUMins,MaxJobs,MaxNodes,MaxCPUs,\
             MaxSubmit,MaxWall,MaxCPUMins,QOS,DefaultQOS"
        }
        (ShowWhat::User, false) => "User,DefaultAccount,AdminLevel",
        (ShowWhat::User, true) => {
            "User,DefaultAccount,AdminLevel,Cluster,Account,Partition,Share,Priority,MaxJobs,\
             MaxNodes,MaxCPUs,MaxSubmit,MaxWall,MaxCPUMins,QOS,DefaultQOS"
        }
        (ShowWhat::Cluster, _) => {
            "Cluster,ControlHost,ControlPort,RPC,Share,GrpJobs,GrpTRES,GrpSubmit,MaxJobs,\
             MaxTRES,MaxSubmit,MaxWall,QOS,DefaultQOS"
        }
        (ShowWhat::Qos, _) => {
            "Name,Priority,GraceTime,Preempt,PreemptExemptTime,PreemptMode,Flags%40,\
             UsageThreshold,UsageFactor,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpSubmit,\
             GrpWall,MaxTRES,MaxTRESPerNode,MaxTRESMins,MaxWall,MaxTRESPU,MaxJobsPU,\
             MaxSubmitPU,MaxTRESPA,MaxJobsPA,MaxSubmitPA,MinTRES"
        }
    }
}

fn any(list: &[String], v: &str) -> bool {
    list.is_empty() || list.iter().any(|x| x == v)
}

/// The rows of a listing. `control` is the controller's host and port
/// (for `show cluster`).
pub fn rows<'a>(t: &'a AcctTables, s: &Show, control: (&'a str, u16)) -> Vec<Row<'a>> {
    let c = &s.cond;
    let assoc_ok = |a: &proto::acctdb::Assoc| {
        any(&c.clusters, &a.cluster)
            && any(&c.accounts, &a.account)
            && any(&c.users, &a.user)
            && any(&c.partitions, &a.partition)
            && any(&c.parents, &a.parent)
    };
    let mut out = Vec::new();
    match s.what {
        ShowWhat::Assoc => {
            for a in fields::tree_order(t) {
                let named =
                    c.names.is_empty() || c.names.iter().any(|n| *n == a.account || *n == a.user);
                if assoc_ok(a) && named {
                    out.push(Row {
                        assoc: Some(t.effective(a)),
                        account: t.accounts.iter().find(|x| x.name == a.account),
                        user: t.user(&a.user),
                        ..Row::default()
                    });
                }
            }
        }
        ShowWhat::Account => {
            for acct in t
                .accounts
                .iter()
                .filter(|x| any(&c.names, &x.name) && any(&c.accounts, &x.name))
            {
                if s.withassoc {
                    for a in fields::tree_order(t)
                        .into_iter()
                        .filter(|a| a.account == acct.name)
                    {
                        if assoc_ok(a) {
                            out.push(Row {
                                assoc: Some(t.effective(a)),
                                account: Some(acct),
                                ..Row::default()
                            });
                        }
                    }
                } else {
                    out.push(Row {
                        account: Some(acct),
                        ..Row::default()
                    });
                }
            }
        }
        ShowWhat::User => {
            for u in t
                .users
                .iter()
                .filter(|x| any(&c.names, &x.name) && any(&c.users, &x.name))
            {
                if s.withassoc {
                    let mut mine: Vec<&proto::acctdb::Assoc> = t
                        .assocs
                        .iter()
                        .filter(|a| a.user == u.name && assoc_ok(a))
                        .collect();
                    mine.sort_by(|x, y| {
                        (&x.cluster, &x.account, &x.partition).cmp(&(
                            &y.cluster,
                            &y.account,
                            &y.partition,
                        ))
                    });
                    for a in mine {
                        out.push(Row {
                            assoc: Some(t.effective(a)),
                            user: Some(u),
                            ..Row::default()
                        });
                    }
                } else {
                    out.push(Row {
                        user: Some(u),
                        ..Row::default()
                    });
                }
            }
        }
        ShowWhat::Qos => {
            for q in t.qos.iter().filter(|q| any(&c.names, &q.name)) {
                out.push(Row {
                    qos: Some(q),
                    ..Row::default()
                });
            }
        }
        ShowWhat::Cluster => {
            for cl in t
                .clusters
                .iter()
                .filter(|x| any(&c.names, &x.name) && any(&c.clusters, &x.name))
            {
                out.push(Row {
                    cluster: &cl.name,
                    assoc: t.account_assoc(&cl.name, "root").map(|a| t.effective(a)),
                    control: Some(control),
                    ..Row::default()
                });
            }
        }
    }
    out
}

/// Parses the options; returns them and the command words. Options may
/// follow the command too (`sacctmgr show assoc -P`), as GNU getopt_long
/// permutes them in Slurm's sacctmgr.
pub fn parse_opts(args: &[String]) -> Result<(Opts, Vec<String>, bool, bool), String> {
    let items = getopt::parse(OPTIONS, args, false)
        .map_err(|e| crate::common::usage_error("sacctmgr", &e.message()))?;
    let mut o = Opts::default();
    let mut words = Vec::new();
    let (mut help, mut version) = (false, false);
    for item in items {
        match item {
            Item::Opt("associations", _) => o.withassoc = true,
            Item::Opt("immediate", _) => o.immediate = true,
            Item::Opt("noheader", _) => o.noheader = true,
            Item::Opt("parsable", _) => o.layout = Layout::Parsable,
            Item::Opt("parsable2", _) => o.layout = Layout::Parsable2,
            Item::Opt("readonly", _) => o.readonly = true,
            Item::Opt("help" | "usage", _) => help = true,
            Item::Opt("version", _) => version = true,
            Item::Opt(..) => {}
            Item::Positional(w) => words.push(w),
        }
    }
    Ok((o, words, help, version))
}

fn call(client: &client::Client, req: proto::CtldRequest) -> Result<proto::CtldResponse, String> {
    match client.call(req) {
        Ok(r) => Ok(r),
        Err(client::ClientError::Refused(e)) => Err(e.as_slurm_str().to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

fn admin(client: &client::Client, req: AdminRequest) -> Result<AdminReply, String> {
    match call(client, proto::CtldRequest::AcctAdmin(req))? {
        proto::CtldResponse::AcctAdmin(r) => Ok(r),
        _ => Err("Unexpected message received".into()),
    }
}

/// Slurm's confirmation: `y` commits, anything else (or nothing) discards.
fn confirm() -> bool {
    print_stdout("Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): ");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    print_stdout("\n");
    matches!(line.trim(), "y" | "Y")
}

/// Runs `sacctmgr`.
pub fn main(args: Vec<String>) -> i32 {
    let (o, words, help, version) = match parse_opts(&args) {
        Ok(x) => x,
        Err(e) => {
            eprint!("{e}");
            return 1;
        }
    };
    if help {
        print_stdout(HELP);
        return 0;
    }
    if version {
        print_stdout(&crate::common::version_line());
        return 0;
    }
    let cmd = match parse_command(&words, &o) {
        Ok(c) => c,
        Err(e) => {
            eprint!("{e}");
            return 1;
        }
    };
    let client = match cmd {
        Command::Help => {
            print_stdout(HELP);
            return 0;
        }
        Command::Version => {
            print_stdout(&crate::common::version_line());
            return 0;
        }
        _ => match client::Client::from_env() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("sacctmgr: error: {e}");
                return 1;
            }
        },
    };
    let result = match cmd {
        Command::Show(s) => match call(&client, proto::CtldRequest::AcctTables) {
            Ok(proto::CtldResponse::AcctTables(t)) => {
                let cfg = client.config();
                let host = cfg
                    .slurmctld_host
                    .first()
                    .map(|h| h.addr.clone().unwrap_or_else(|| h.name.clone()))
                    .unwrap_or_default();
                let port = cfg.slurmctld_port;
                let rows = rows(&t, &s, (&host, port));
                print_stdout(&fields::render(&s.columns, &rows, o.layout, !o.noheader));
                Ok(0)
            }
            Ok(_) => Err("Unexpected message received".into()),
            Err(e) => Err(e),
        },
        Command::Change(req) => admin(&client, req.clone()).and_then(|reply| {
            print_stdout(&reply.stdout);
            eprint!("{}", reply.stderr);
            if !reply.ok {
                return Ok(1);
            }
            if req.commit || !reply.changed {
                return Ok(0);
            }
            if !confirm() {
                print_stdout(" Changes Discarded\n");
                return Ok(0);
            }
            let done = admin(
                &client,
                AdminRequest {
                    commit: true,
                    ..req
                },
            )?;
            if done.ok {
                Ok(0)
            } else {
                eprint!("{}", done.stderr);
                Ok(1)
            }
        }),
        Command::ShowResv(s) => {
            let req = proto::CtldRequest::AcctReservations {
                start: s.start,
                end: s.end,
            };
            match call(&client, req) {
                Ok(proto::CtldResponse::AcctReservations(all)) => {
                    let rows = resv::select(&s, &all);
                    print_stdout(&resv::render(&s, &rows, o.layout, !o.noheader));
                    Ok(0)
                }
                Ok(_) => Err("Unexpected message received".into()),
                Err(e) => Err(e),
            }
        }
        Command::Help | Command::Version => Ok(0),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sacctmgr: error: {e}");
            1
        }
    }
}
