//! Multifactor priority (Slurm's priority/multifactor): each pending job's
//! priority is the weighted sum of its factors (age, association, fair-share,
//! job size, partition, QOS, TRES) less its nice value; fair-share comes from
//! the association tree and the usage the engine accrues from the jobs it
//! runs, decayed with `PriorityDecayHalfLife`.
//!
//! ```text
//!   running jobs --accrue (cpu-seconds)--> usage[(account, user)] --decay,
//!                                          cleared each PriorityUsageResetPeriod-->
//!   association tree (accounting, or root/account/user from the jobs) --Fair Tree--> fair-share
//!   factors x weights --> Job::priority (at submit and every PriorityCalcPeriod)
//! ```
//!
//! Fair Tree (Slurm's default): at every level of the tree, siblings are
//! ordered by their level fair-share (normalized shares / effective usage);
//! a depth-first walk in that order ranks the users, and a user's factor is
//! its rank over the number of users (users that tie share a rank). With
//! `PriorityFlags=NO_FAIR_TREE` the classic formula 2^(-usage/shares) is
//! used instead.
//!
//! Pure: time is an argument; everything iterates in key order.

use crate::{Engine, Job};
use model::{JobId, JobState, Timestamp};
use proto::{JobPriority, PriorityFactors, PriorityList, ShareRow};
use std::collections::BTreeMap;

/// One account or user of the fair-share tree.
#[derive(Clone, Debug)]
struct TreeNode {
    account: String,
    /// Empty for an account.
    user: String,
    shares: u32,
    /// Decayed usage (CPU-seconds), the subtree's sum for an account.
    usage: f64,
    children: Vec<usize>,
}

/// The tree with its root at index 0.
struct Tree {
    nodes: Vec<TreeNode>,
}

impl Tree {
    fn add(&mut self, parent: usize, account: &str, user: &str, shares: u32) -> usize {
        self.nodes.push(TreeNode {
            account: account.to_string(),
            user: user.to_string(),
            shares,
            usage: 0.0,
            children: Vec::new(),
        });
        let i = self.nodes.len() - 1;
        self.nodes[parent].children.push(i);
        i
    }

    /// Sums the users' usage into their accounts.
    fn total(&mut self, i: usize) -> f64 {
        let children = self.nodes[i].children.clone();
        if !children.is_empty() {
            self.nodes[i].usage = children.iter().map(|c| self.total(*c)).sum();
        }
        self.nodes[i].usage
    }

    /// (normalized shares, effective usage) of each child of `i`.
    fn level(&self, i: usize) -> Vec<(usize, f64, f64)> {
        let kids = &self.nodes[i].children;
        let shares: f64 = kids.iter().map(|c| f64::from(self.nodes[*c].shares)).sum();
        let usage: f64 = kids.iter().map(|c| self.nodes[*c].usage).sum();
        kids.iter()
            .map(|c| {
                let n = &self.nodes[*c];
                let norm = if shares > 0.0 {
                    f64::from(n.shares) / shares
                } else {
                    0.0
                };
                let eff = if usage > 0.0 { n.usage / usage } else { 0.0 };
                (*c, norm, eff)
            })
            .collect()
    }
}

/// Level fair-share: normalized shares over effective usage (infinite for
/// a child with shares and no usage; 0 without shares).
fn level_fs(norm: f64, eff: f64) -> f64 {
    if norm <= 0.0 {
        0.0
    } else if eff <= 0.0 {
        f64::INFINITY
    } else {
        norm / eff
    }
}

/// The last start of a PriorityUsageResetPeriod (`DAILY`: local midnight,
/// `WEEKLY`: Sunday 00:00, `MONTHLY`, `QUARTERLY`, `YEARLY`: the first day
/// of the month, quarter, year at 00:00) in `(from, to]`, if one falls
/// there; local time is UTC plus `utc_offset` seconds.
pub(crate) fn usage_reset_between(
    period: &str,
    from: Timestamp,
    to: Timestamp,
    utc_offset: i64,
) -> Option<Timestamp> {
    const DAY: i64 = 86_400;
    if to <= from {
        return None;
    }
    let local_day = (to + utc_offset).div_euclid(DAY);
    let (y, m, _) = civil_from_days(local_day);
    let start_day = match period {
        "DAILY" => local_day,
        // 1970-01-01 was a Thursday: day 3 was a Sunday.
        "WEEKLY" => local_day - (local_day - 3).rem_euclid(7),
        "MONTHLY" => days_from_civil(y, m, 1),
        "QUARTERLY" => days_from_civil(y, (m - 1) / 3 * 3 + 1, 1),
        "YEARLY" => days_from_civil(y, 1, 1),
        _ => return None,
    };
    let start = start_day * DAY - utc_offset;
    (start > from && start <= to).then_some(start)
}

/// (year, month 1-12, day 1-31) of a day counted from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The day (from 1970-01-01) of a civil date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

impl Engine {
    /// The association (account, user) a job's usage is charged to.
    fn usage_key(job: &Job) -> (String, String) {
        let account = match job.desc.account.as_deref() {
            None | Some("") => "root".to_string(),
            Some(a) => a.to_string(),
        };
        (account, job.desc.user.clone())
    }

    /// The fair-share tree: the accounting's associations of this cluster
    /// when the controller has them, otherwise root, then every account,
    /// then every user that has jobs or usage (one share each).
    fn share_tree(&self) -> Tree {
        let mut tree = Tree {
            nodes: vec![TreeNode {
                account: "root".into(),
                user: String::new(),
                shares: 1,
                usage: 0.0,
                children: Vec::new(),
            }],
        };
        let cluster = &self.settings.cluster_name;
        let mut users: BTreeMap<(String, String), u32> = BTreeMap::new();
        match self.assoc.as_deref().filter(|t| !t.assocs.is_empty()) {
            Some(t) => {
                // Accounts under their parents, breadth first from root.
                let mut at: BTreeMap<String, usize> = BTreeMap::new();
                at.insert("root".into(), 0);
                let mut todo = vec!["root".to_string()];
                while let Some(parent) = todo.pop() {
                    let p = at[&parent];
                    for a in t.assocs.iter().filter(|a| {
                        &a.cluster == cluster
                            && a.user.is_empty()
                            && a.partition.is_empty()
                            && a.parent == parent
                            && a.account != "root"
                    }) {
                        let i = tree.add(p, &a.account, "", a.shares);
                        at.insert(a.account.clone(), i);
                        todo.push(a.account.clone());
                    }
                }
                for a in t.assocs.iter().filter(|a| {
                    &a.cluster == cluster && !a.user.is_empty() && a.partition.is_empty()
                }) {
                    users.insert((a.account.clone(), a.user.clone()), a.shares);
                }
                for ((account, user), shares) in users {
                    if let Some(p) = at.get(&account).copied() {
                        tree.add(p, &account, &user, shares);
                    }
                }
            }
            None => {
                for job in self.jobs.values() {
                    users.insert(Self::usage_key(job), 1);
                }
                for key in self.usage.keys() {
                    users.insert(key.clone(), 1);
                }
                let mut accounts: BTreeMap<String, usize> = BTreeMap::new();
                for ((account, user), shares) in users {
                    let p = match accounts.get(&account) {
                        _ if account == "root" => 0,
                        Some(p) => *p,
                        None => {
                            let p = tree.add(0, &account, "", 1);
                            accounts.insert(account.clone(), p);
                            p
                        }
                    };
                    tree.add(p, &account, &user, shares);
                }
            }
        }
        for n in tree.nodes.iter_mut().filter(|n| !n.user.is_empty()) {
            n.usage = self
                .usage
                .get(&(n.account.clone(), n.user.clone()))
                .copied()
                .unwrap_or(0.0);
        }
        tree.total(0);
        tree
    }

    /// Each user association's fair-share factor (0..=1).
    fn fairshare_factors(&self, tree: &Tree) -> BTreeMap<(String, String), f64> {
        let mut out = BTreeMap::new();
        if self.settings.priority.has_flag("NO_FAIR_TREE") {
            // Classic: 2^(-effective usage / normalized shares), both taken
            // relative to the whole cluster down the path.
            fn walk(
                tree: &Tree,
                i: usize,
                norm: f64,
                eff: f64,
                out: &mut BTreeMap<(String, String), f64>,
            ) {
                for (c, n, e) in tree.level(i) {
                    let (norm, eff) = (norm * n, eff * e);
                    let node = &tree.nodes[c];
                    if node.user.is_empty() {
                        walk(tree, c, norm, eff, out);
                    } else {
                        let f = if norm > 0.0 {
                            2f64.powf(-eff / norm)
                        } else {
                            0.0
                        };
                        out.insert((node.account.clone(), node.user.clone()), f);
                    }
                }
            }
            walk(tree, 0, 1.0, 1.0, &mut out);
            return out;
        }
        // Fair Tree: users in depth-first order of descending level
        // fair-share, ties sharing a rank.
        let mut ranked: Vec<Vec<usize>> = Vec::new();
        fn order(tree: &Tree, i: usize, ranked: &mut Vec<Vec<usize>>) {
            let mut kids = tree.level(i);
            kids.sort_by(|a, b| {
                level_fs(b.1, b.2)
                    .partial_cmp(&level_fs(a.1, a.2))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let mut k = 0;
            while k < kids.len() {
                let lf = level_fs(kids[k].1, kids[k].2);
                let mut tie = Vec::new();
                while k < kids.len() && level_fs(kids[k].1, kids[k].2) == lf {
                    tie.push(kids[k].0);
                    k += 1;
                }
                // Tied users share a rank; tied accounts are walked in turn.
                let users: Vec<usize> = tie
                    .iter()
                    .copied()
                    .filter(|c| !tree.nodes[*c].user.is_empty())
                    .collect();
                if !users.is_empty() {
                    ranked.push(users);
                }
                for c in tie.into_iter().filter(|c| tree.nodes[*c].user.is_empty()) {
                    order(tree, c, ranked);
                }
            }
        }
        order(tree, 0, &mut ranked);
        let n_users: usize = ranked.iter().map(Vec::len).sum();
        let mut rank = n_users;
        for group in ranked {
            for i in &group {
                let node = &tree.nodes[*i];
                out.insert(
                    (node.account.clone(), node.user.clone()),
                    rank as f64 / n_users as f64,
                );
            }
            rank -= group.len();
        }
        out
    }

    /// A job's weighted factors as of `now`, with `fairshare` its user's
    /// fair-share factor.
    pub(crate) fn priority_factors(
        &self,
        job: &Job,
        fairshare: f64,
        now: Timestamp,
    ) -> PriorityFactors {
        let p = &self.settings.priority;
        let w = |weight: u32, factor: f64| f64::from(weight) * factor.clamp(0.0, 1.0);
        let age = if p.max_age == 0 {
            1.0
        } else {
            (now - job.eligible_time).max(0) as f64 / f64::from(p.max_age)
        };
        let total_nodes = self.nodes.len().max(1) as f64;
        let total_cpus: f64 = self
            .nodes
            .iter()
            .map(|n| f64::from(n.conf.cpus))
            .sum::<f64>()
            .max(1.0);
        let cpus = f64::from(job.ntasks * job.desc.cpus_per_task.unwrap_or(1).max(1));
        let nodes = f64::from(job.min_nodes.max(1));
        let jobsize = if p.has_flag("SMALL_RELATIVE_TO_TIME") {
            // The job's size divided by its time limit (in minutes; an
            // unlimited job counts as the longest possible, a year), over
            // the cluster's CPUs: a whole-cluster one-minute job is 1.
            let minutes = match job.time_limit {
                model::TimeLimit::Minutes(m) => f64::from(m.max(1)),
                _ => 365.0 * 24.0 * 60.0,
            };
            let relative = (cpus / minutes / total_cpus).clamp(0.0, 1.0);
            if p.favor_small {
                1.0 - relative
            } else {
                relative
            }
        } else if p.favor_small {
            ((total_nodes - nodes) / total_nodes + (total_cpus - cpus) / total_cpus) / 2.0
        } else {
            (nodes / total_nodes + cpus / total_cpus) / 2.0
        };
        let max_job_factor = self
            .parts
            .iter()
            .map(|p| p.conf.priority_job_factor)
            .max()
            .unwrap_or(1)
            .max(1);
        let partition = f64::from(self.parts[job.partition].conf.priority_job_factor)
            / f64::from(max_job_factor);
        let (qos, assoc) = match self.assoc.as_deref() {
            Some(t) => {
                let max_qos = t.qos.iter().map(|q| q.priority).max().unwrap_or(0);
                let qos_name = job.desc.qos.as_deref().unwrap_or("normal");
                let qos = t
                    .qos
                    .iter()
                    .find(|q| q.name.eq_ignore_ascii_case(qos_name))
                    .filter(|_| max_qos > 0)
                    .map_or(0.0, |q| f64::from(q.priority) / f64::from(max_qos));
                let max_assoc = t
                    .assocs
                    .iter()
                    .filter_map(|a| a.priority)
                    .max()
                    .unwrap_or(0);
                let (account, user) = Self::usage_key(job);
                let assoc = t
                    .assoc(&self.settings.cluster_name, &account, &user, "")
                    .and_then(|a| a.priority)
                    .filter(|_| max_assoc > 0)
                    .map_or(0.0, |v| f64::from(v) / f64::from(max_assoc));
                (qos, assoc)
            }
            None => (0.0, 0.0),
        };
        // TRES are counted against the job's partition, as Slurm's TRES
        // factors are (the job size factor above is the cluster's); memory
        // and GRES only asked for when weighted.
        let other_tres = p
            .weight_tres
            .iter()
            .any(|(n, _)| !n.eq_ignore_ascii_case("cpu") && !n.eq_ignore_ascii_case("node"));
        let requested = other_tres.then(|| self.requested_counts(job));
        let tres = p
            .weight_tres
            .iter()
            .map(|(name, weight)| {
                let name_lc = name.to_ascii_lowercase();
                let f = match (name_lc.as_str(), requested) {
                    ("cpu", _) => {
                        cpus / self
                            .partition_total(job.partition, |n| u64::from(n.conf.cpus))
                            .max(1) as f64
                    }
                    ("node", _) => nodes / self.parts[job.partition].nodes.len().max(1) as f64,
                    ("mem", Some((_, mem, _))) => {
                        let total = self.partition_total(job.partition, |n| n.conf.real_memory);
                        mem as f64 / total.max(1) as f64
                    }
                    ("gres/gpu", Some((_, _, gpus))) => {
                        let total = self.partition_total(job.partition, |n| {
                            n.gres
                                .iter()
                                .filter(|g| g.name == "gpu")
                                .map(|g| g.indexes.len() as u64)
                                .sum()
                        });
                        gpus as f64 / total.max(1) as f64
                    }
                    _ => 0.0,
                };
                (name.clone(), w(*weight, f))
            })
            .collect();
        PriorityFactors {
            site: 0.0,
            age: w(p.weight_age, age),
            assoc: w(p.weight_assoc, assoc),
            fairshare: w(p.weight_fairshare, fairshare),
            jobsize: w(p.weight_jobsize, jobsize),
            partition: w(p.weight_partition, partition),
            qos: w(p.weight_qos, qos),
            nice: job.desc.nice,
            tres,
        }
    }

    /// The sum of `f` over the nodes of partition `part`.
    fn partition_total(&self, part: usize, f: impl Fn(&crate::Node) -> u64) -> u64 {
        self.parts[part]
            .nodes
            .iter()
            .map(|n| f(&self.nodes[n.0 as usize]))
            .sum()
    }

    /// The priority the factors give (truncated, as Slurm does; at least 1).
    pub(crate) fn priority_from(f: &PriorityFactors) -> u32 {
        let sum = f.site
            + f.age
            + f.assoc
            + f.fairshare
            + f.jobsize
            + f.partition
            + f.qos
            + f.tres.iter().map(|(_, v)| v).sum::<f64>()
            - f64::from(f.nice);
        (sum.max(1.0).min(f64::from(u32::MAX - 1))) as u32
    }

    /// Sets a new job's multifactor priority (before it enters the table).
    pub(crate) fn prioritize_new(&mut self, job: &mut Job, now: Timestamp) {
        let key = Self::usage_key(job);
        self.usage.entry(key.clone()).or_insert(0.0);
        let tree = self.share_tree();
        let fs = self
            .fairshare_factors(&tree)
            .get(&key)
            .copied()
            .unwrap_or(0.0);
        let f = self.priority_factors(job, fs, now);
        job.base_priority = Self::priority_from(&f);
        job.prio_factors = Some(Box::new(f));
    }

    /// Charges the CPU-seconds `job` used between `from` and `to` (clipped
    /// to its run) to its association.
    fn accrue(&mut self, job: &Job, from: Timestamp, to: Timestamp) {
        let Some(start) = job.start_time else { return };
        let end = match job.state {
            JobState::Running | JobState::Suspended => to,
            _ => job.end_time.unwrap_or(to).min(to),
        };
        let secs = (end.min(to) - start.max(from)).max(0);
        if secs == 0 {
            return;
        }
        let cpus: u32 = match &job.alloc {
            Some(a) => a.nodes.iter().map(|n| n.cpus).sum(),
            None => job.ran_cpus.iter().sum(),
        };
        *self.usage.entry(Self::usage_key(job)).or_insert(0.0) += secs as f64 * f64::from(cpus);
    }

    /// Usage a job still owes when it leaves the table.
    pub(crate) fn accrue_final(&mut self, job: &Job) {
        if self.settings.priority.multifactor {
            let from = self.prio_last_calc;
            self.accrue(job, from, Timestamp::MAX);
        }
    }

    /// When the next PriorityCalcPeriod recalculation is due.
    pub(crate) fn priority_due(&self) -> Option<Timestamp> {
        self.settings
            .priority
            .multifactor
            .then(|| self.prio_last_calc + i64::from(self.settings.priority.calc_period))
    }

    /// Every PriorityCalcPeriod: usage accrued and decayed, fair-share
    /// recomputed, and every pending job's priority recalculated.
    pub(crate) fn priority_tick(&mut self, now: Timestamp) {
        if self.priority_due().is_none_or(|due| now < due) {
            return;
        }
        let mut from = self.prio_last_calc;
        if let Some(reset) = usage_reset_between(
            &self.settings.priority.usage_reset_period,
            from,
            now,
            self.utc_offset,
        ) {
            // PriorityUsageResetPeriod: what was used before the period's
            // start is forgotten.
            self.usage.clear();
            from = reset;
        }
        let ids: Vec<_> = self.jobs.keys().copied().collect();
        for id in &ids {
            let job = self.jobs[id].clone();
            self.accrue(&job, from, now);
        }
        let half = self.settings.priority.decay_half_life;
        if half > 0 {
            let k = 0.5f64.powf((now - from).max(0) as f64 / f64::from(half));
            for u in self.usage.values_mut() {
                *u *= k;
            }
        }
        self.prio_last_calc = now;
        let tree = self.share_tree();
        let fs = self.fairshare_factors(&tree);
        for id in ids {
            let job = &self.jobs[&id];
            if job.state != JobState::Pending || job.admin_priority.is_some() {
                continue;
            }
            let share = fs.get(&Self::usage_key(job)).copied().unwrap_or(0.0);
            let f = self.priority_factors(job, share, now);
            let prio = Self::priority_from(&f);
            let job = self.jobs.get_mut(&id).expect("listed");
            job.base_priority = prio;
            if job.held.is_none() {
                job.priority = prio;
            }
            job.prio_factors = Some(Box::new(f));
        }
        self.touch();
    }

    /// sprio's answer: the weights and every pending job's factors.
    pub fn priority_list(&self) -> PriorityList {
        self.priorities(None)
    }

    /// The weights and the factors of those of `job_ids` that are pending
    /// (`CtldRequest::JobPriorities`).
    pub fn priority_list_of(&self, job_ids: &[u32]) -> PriorityList {
        self.priorities(Some(job_ids))
    }

    fn priorities(&self, only: Option<&[u32]>) -> PriorityList {
        let p = &self.settings.priority;
        let weights = PriorityFactors {
            site: 0.0,
            age: f64::from(p.weight_age),
            assoc: f64::from(p.weight_assoc),
            fairshare: f64::from(p.weight_fairshare),
            jobsize: f64::from(p.weight_jobsize),
            partition: f64::from(p.weight_partition),
            qos: f64::from(p.weight_qos),
            nice: 0,
            tres: p
                .weight_tres
                .iter()
                .map(|(n, w)| (n.clone(), f64::from(*w)))
                .collect(),
        };
        let picked: Vec<&Job> = match only {
            None => self.jobs.values().map(|j| &**j).collect(),
            Some(ids) => ids
                .iter()
                .filter_map(|id| self.jobs.get(&JobId(*id)))
                .map(|j| &**j)
                .collect(),
        };
        let jobs = picked
            .into_iter()
            .filter(|j| j.state == JobState::Pending)
            .map(|j| JobPriority {
                job_id: j.id,
                partition: self.parts[j.partition].conf.name.clone(),
                user: j.desc.user.clone(),
                uid: j.desc.uid,
                priority: j.priority,
                factors: j.prio_factors.as_deref().cloned().unwrap_or_default(),
            })
            .collect();
        PriorityList {
            multifactor: p.multifactor,
            weights,
            jobs,
        }
    }

    /// sshare's rows: the tree depth first, each level in name order.
    pub fn share_rows(&self) -> Vec<ShareRow> {
        let tree = self.share_tree();
        let fs = self.fairshare_factors(&tree);
        let mut rows = vec![ShareRow {
            account: "root".into(),
            user: String::new(),
            depth: 0,
            raw_shares: None,
            norm_shares: 0.0,
            raw_usage: tree.nodes[0].usage,
            effective_usage: 1.0,
            fairshare: None,
        }];
        fn walk(
            tree: &Tree,
            i: usize,
            depth: u32,
            fs: &BTreeMap<(String, String), f64>,
            rows: &mut Vec<ShareRow>,
        ) {
            let mut kids = tree.level(i);
            // Users first, then accounts, each by name (sshare's order).
            kids.sort_by(|a, b| {
                let (x, y) = (&tree.nodes[a.0], &tree.nodes[b.0]);
                x.user
                    .is_empty()
                    .cmp(&y.user.is_empty())
                    .then_with(|| x.account.cmp(&y.account))
                    .then_with(|| x.user.cmp(&y.user))
            });
            for (c, norm, eff) in kids {
                let n = &tree.nodes[c];
                let is_user = !n.user.is_empty();
                rows.push(ShareRow {
                    account: n.account.clone(),
                    user: n.user.clone(),
                    depth,
                    raw_shares: Some(n.shares),
                    norm_shares: norm,
                    raw_usage: n.usage,
                    effective_usage: eff,
                    fairshare: is_user
                        .then(|| fs.get(&(n.account.clone(), n.user.clone())).copied())
                        .flatten(),
                });
                if !is_user {
                    walk(tree, c, depth + 1, fs, rows);
                }
            }
        }
        walk(&tree, 0, 1, &fs, &mut rows);
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(spec: &[(&str, &str, u32, f64)]) -> Tree {
        // (parent account, name, shares, usage): a user when the name starts with '@'.
        let mut t = Tree {
            nodes: vec![TreeNode {
                account: "root".into(),
                user: String::new(),
                shares: 1,
                usage: 0.0,
                children: vec![],
            }],
        };
        let mut at: BTreeMap<String, usize> = BTreeMap::new();
        at.insert("root".into(), 0);
        for (parent, name, shares, usage) in spec {
            let p = at[*parent];
            let i = match name.strip_prefix('@') {
                Some(user) => t.add(p, parent, user, *shares),
                None => {
                    let i = t.add(p, name, "", *shares);
                    at.insert(name.to_string(), i);
                    i
                }
            };
            t.nodes[i].usage = *usage;
        }
        t.total(0);
        t
    }

    #[test]
    fn fair_tree_ranks_users_as_the_reference_sshare_shows() {
        // ../shared/reference/slurm-22.05/sshare_a.out
        let t = tree(&[
            ("root", "@root", 1, 0.0),
            ("root", "ml", 1, 0.0),
            ("root", "research", 1, 0.0),
            ("ml", "@nobody", 1, 0.0),
            ("ml", "@root", 1, 0.0),
            ("ml", "@sauser", 1, 38.0),
            ("research", "@root", 1, 984.0),
            ("research", "@sauser", 1, 5265.0),
        ]);
        let conf = conf::parse_str(
            "ClusterName=c\nSlurmctldHost=h\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n",
            std::path::Path::new("/x"),
            &mut |_| Err(std::io::Error::other("none")),
        )
        .unwrap()
        .config;
        let e = Engine::new(&conf, 0);
        let fs = e.fairshare_factors(&t);
        let get = |a: &str, u: &str| fs[&(a.to_string(), u.to_string())];
        let close = |x: f64, y: f64| (x - y).abs() < 1e-6;
        assert!(close(get("root", "root"), 1.0));
        assert!(close(get("ml", "nobody"), 5.0 / 6.0));
        assert!(close(get("ml", "root"), 5.0 / 6.0));
        assert!(close(get("ml", "sauser"), 0.5));
        assert!(close(get("research", "root"), 2.0 / 6.0));
        assert!(close(get("research", "sauser"), 1.0 / 6.0));
    }
}
