//! Configuration changes while the controller runs: `scontrol reconfigure`
//! (a configuration the controller read again, [`Engine::rebuilt`]) and
//! `scontrol update/create/delete partition`.
//!
//! Both rebuild the engine under the changed configuration the way a
//! restart does (`persist`: the state as a snapshot would save it, restored
//! under the new configuration), so jobs keep their ids, allocations and
//! states, and the tables built once from the configuration (partitions,
//! their scheduler views, the queue) are built again. The partition
//! requests are journaled like every other request and replay the same
//! way; the controller writes a snapshot right after a reconfigure, so a
//! recovery never replays a record across one.
//!
//! Runtime partition changes last, as Slurm's do without `slurmctld -R`,
//! until the next reconfigure or restart, which take the partitions from
//! slurm.conf again.

use crate::{Engine, RestoreError};
use proto::{Identity, PartitionUpdate, SlurmError};
use std::collections::BTreeSet;
use std::sync::Arc;

impl Engine {
    /// The configuration in force.
    pub fn config(&self) -> &Arc<conf::Config> {
        &self.cfg
    }

    /// The partitions that jobs the controller still holds (pending,
    /// running, or ended but not yet purged) name.
    pub fn partitions_in_use(&self) -> Vec<String> {
        let mut used = BTreeSet::new();
        for j in self.jobs.values() {
            used.insert(j.partition);
            used.extend(j.partitions.iter().copied());
        }
        used.into_iter()
            .filter_map(|p| self.parts.get(p).map(|p| p.conf.name.clone()))
            .collect()
    }

    /// This engine's jobs and node states under `cfg`, as a restart with
    /// `cfg` would give them (refused as a restart would be: nodes other
    /// than added after the last one, or a partition a job uses gone).
    /// Take it over with [`Engine::take_over`].
    pub fn rebuilt(&self, cfg: &conf::Config) -> Result<Engine, RestoreError> {
        let mut e = Engine::restore(cfg, self.persistent_state(), self.boot_time)?;
        // The restore marks nodes with running jobs busy "now" (its boot
        // time): here they keep what they had, so a replay, whose boot
        // time differs, rebuilds the same.
        for (i, old) in self.nodes.iter().enumerate() {
            if e.nodes[i].last_busy != old.last_busy {
                e.nodes[i].last_busy = old.last_busy;
            }
        }
        e.utc_offset = self.utc_offset;
        e.simulated = self.simulated;
        e.full_passes = self.full_passes;
        e.prefix_passes_off = self.prefix_passes_off;
        e.walk_passes_off = self.walk_passes_off;
        e.prefix_min_left_out = self.prefix_min_left_out;
        Ok(e)
    }

    /// Becomes `new` (from [`Engine::rebuilt`]), keeping what is this
    /// process's own and not part of the state: the commands not yet
    /// taken, the statistics, the mails sent, `scontrol show config`'s
    /// text (with the new configuration).
    pub fn take_over(&mut self, mut new: Engine) {
        new.outbox = std::mem::take(&mut self.outbox);
        new.pass_stats = std::mem::take(&mut self.pass_stats);
        new.mail_seen = std::mem::take(&mut self.mail_seen);
        new.show_config = self.show_config.take().map(|mut s| {
            s.cfg = new.cfg.clone();
            s
        });
        *self = new;
    }

    /// Tells every registered node daemon that is not down that the
    /// controller reconfigured (`Command::ReconfigureNode`): configless
    /// ones fetch the files again.
    pub fn reconfigure_nodes(&mut self) {
        for n in &self.nodes {
            if n.registered && n.state.base != model::NodeBase::Down {
                self.outbox.push(crate::Command::ReconfigureNode {
                    node: n.conf.name.clone(),
                    addr: n.daemon_addr.clone(),
                });
            }
        }
    }

    /// Marks the partitions as differing from slurm.conf's, so that
    /// snapshots save them (a reconfigure that kept a partition the files
    /// dropped, because jobs still use it).
    pub fn set_partitions_changed(&mut self) {
        self.parts_changed = true;
    }

    /// `scontrol update PartitionName=...` (`create`: `scontrol create
    /// partition`): Slurm's checks and errors.
    pub(crate) fn on_update_partition(
        &mut self,
        u: PartitionUpdate,
        create: bool,
        who: &Identity,
    ) -> Result<(), SlurmError> {
        if !self.is_super(who) {
            return Err(SlurmError::InvalidUserId);
        }
        let mut cfg = (*self.cfg).clone();
        let at = cfg.partitions.iter().position(|p| p.name == u.name);
        let idx = match (at, create) {
            (Some(_), true) | (None, false) => return Err(SlurmError::InvalidPartitionName),
            (Some(i), false) => i,
            (None, true) => {
                if u.name.is_empty()
                    || u.name.contains(',')
                    || u.name.eq_ignore_ascii_case("DEFAULT")
                {
                    return Err(SlurmError::InvalidPartitionName);
                }
                cfg.partitions.push(new_partition(&u.name));
                cfg.partitions.len() - 1
            }
        };
        if let Some(names) = &u.nodes {
            if names.iter().any(|n| cfg.nodes.iter().all(|c| &c.name != n)) {
                return Err(SlurmError::InvalidNodeName);
            }
        }
        if let Some(state) = &u.state {
            if !["UP", "DOWN", "DRAIN", "INACTIVE"].contains(&state.as_str()) {
                return Err(SlurmError::InvalidRequest);
            }
        }
        if u.default == Some(true) {
            for p in cfg.partitions.iter_mut() {
                p.default = false;
            }
        }
        let order: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
        let p = &mut cfg.partitions[idx];
        if let Some(names) = u.nodes {
            // In node-definition order without repeats, as slurm.conf's.
            p.nodes = order.into_iter().filter(|n| names.contains(n)).collect();
        }
        if let Some(d) = u.default {
            p.default = d;
        }
        if let Some(t) = u.max_time {
            p.max_time = t;
        }
        if let Some(t) = u.default_time {
            p.default_time = t;
        }
        if let Some(n) = u.max_nodes {
            p.max_nodes = n;
        }
        if let Some(n) = u.min_nodes {
            p.min_nodes = n;
        }
        if let Some(s) = u.state {
            p.state = s;
        }
        if let Some(t) = u.priority_tier {
            p.priority_tier = t;
        }
        if let Some(f) = u.priority_job_factor {
            p.priority_job_factor = f;
        }
        if let Some(a) = u.allow_accounts {
            p.allow_accounts = a;
        }
        if let Some(g) = u.allow_groups {
            p.allow_groups = g;
        }
        if let Some(o) = u.oversubscribe {
            p.oversubscribe = o;
        }
        for (key, mut value) in u.other {
            let lower = key.to_ascii_lowercase();
            if !value.is_empty()
                && conf::effect::REFUSED_PARTITION_KEYS
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case(&key))
            {
                return Err(SlurmError::NotSupported);
            }
            // The values the scheduler reads, as slurm.conf's parser
            // writes them.
            match lower.as_str() {
                "lln" if !value.is_empty() => {
                    value = match value.to_ascii_lowercase().as_str() {
                        "yes" | "y" | "true" | "1" => "YES".into(),
                        "no" | "n" | "false" | "0" => "NO".into(),
                        _ => return Err(SlurmError::InvalidRequest),
                    }
                }
                "maxcpuspernode" if !value.is_empty() => {
                    if value.eq_ignore_ascii_case("UNLIMITED") || value == "-1" {
                        value = "UNLIMITED".into();
                    } else {
                        let n: u32 = value.parse().map_err(|_| SlurmError::InvalidRequest)?;
                        value = n.to_string();
                    }
                }
                "gracetime" if !value.is_empty() => {
                    let n: u32 = value.parse().map_err(|_| SlurmError::InvalidRequest)?;
                    value = n.to_string();
                }
                _ => {}
            }
            if let Some((_, allowed)) = conf::effect::REFUSED_PARTITION
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(&key))
            {
                if !allowed.iter().any(|v| v.eq_ignore_ascii_case(&value)) {
                    return Err(SlurmError::NotSupported);
                }
            }
            if value.is_empty() {
                p.other.remove(&lower);
            } else {
                p.other.insert(lower, (key, value));
            }
        }
        self.run_with(cfg)
    }

    /// `scontrol delete PartitionName=NAME`: refused while jobs use it.
    pub(crate) fn on_delete_partition(
        &mut self,
        name: &str,
        who: &Identity,
    ) -> Result<(), SlurmError> {
        if !self.is_super(who) {
            return Err(SlurmError::InvalidUserId);
        }
        if self.cfg.partition(name).is_none() {
            return Err(SlurmError::InvalidPartitionName);
        }
        if self.partitions_in_use().iter().any(|p| p == name) {
            return Err(SlurmError::PartitionInUse);
        }
        let mut cfg = (*self.cfg).clone();
        cfg.partitions.retain(|p| p.name != name);
        self.run_with(cfg)
    }

    fn run_with(&mut self, cfg: conf::Config) -> Result<(), SlurmError> {
        // Partitions only: nodes and the jobs' partitions stay, so the
        // rebuild cannot be refused; a refusal changes nothing.
        let mut new = self.rebuilt(&cfg).map_err(|_| SlurmError::PartitionInUse)?;
        new.parts_changed = true;
        self.take_over(new);
        Ok(())
    }
}

impl Engine {
    /// Who may submit to a partition (slurm.conf's access keys), checked
    /// at submission with Slurm's errors: `RootOnly=YES` (root and
    /// SlurmUser only) and `DisableRootJobs=YES` (not root):
    /// `Access/permission denied`; `AllowGroups` (the submitter's groups,
    /// as the controller looked them up, `JobDesc::user_groups`): `User's
    /// group not permitted to use this partition`; `AllowAccounts` and
    /// `DenyAccounts` (the job's account, an account being needed where
    /// `AllowAccounts` is not ALL and one was given or defaulted):
    /// `Invalid account or account/partition combination specified`;
    /// `AllowQos` and `DenyQos` (the job's QOS, `normal` when none):
    /// `Invalid qos specification`.
    pub(crate) fn part_access(
        &self,
        part: &conf::PartitionConf,
        desc: &proto::JobDesc,
        who: &Identity,
    ) -> Result<(), SlurmError> {
        let other = |key: &str| part.other.get(key).map(|(_, v)| v.trim());
        let yes = |key: &str| other(key).is_some_and(|v| v.eq_ignore_ascii_case("YES"));
        let list = |key: &str| -> Option<Vec<&str>> {
            other(key)
                .filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case("ALL"))
                .map(|v| v.split(',').map(str::trim).collect())
        };
        if yes("rootonly") && !self.is_super(who) {
            return Err(SlurmError::AccessDenied);
        }
        if yes("disablerootjobs") && desc.uid == 0 {
            return Err(SlurmError::AccessDenied);
        }
        if let Some(groups) = &part.allow_groups {
            if !groups.iter().any(|g| desc.user_groups.contains(g)) && !self.is_super(who) {
                return Err(SlurmError::PartitionGroupRequired);
            }
        }
        if let Some(account) = &desc.account {
            if let Some(allowed) = &part.allow_accounts {
                if !allowed.iter().any(|x| x == account) {
                    return Err(SlurmError::InvalidAccount);
                }
            }
            if list("denyaccounts").is_some_and(|d| d.contains(&account.as_str())) {
                return Err(SlurmError::InvalidAccount);
            }
        }
        let qos = desc.qos.as_deref().unwrap_or("normal");
        if list("allowqos").is_some_and(|a| !a.contains(&qos)) {
            return Err(SlurmError::InvalidQos);
        }
        if list("denyqos").is_some_and(|d| d.contains(&qos)) {
            return Err(SlurmError::InvalidQos);
        }
        Ok(())
    }
}

/// A partition as `scontrol create partition` makes it before its keys:
/// slurm.conf's defaults.
fn new_partition(name: &str) -> conf::PartitionConf {
    conf::PartitionConf {
        name: name.to_string(),
        nodes: Vec::new(),
        default: false,
        max_time: model::TimeLimit::Unlimited,
        default_time: None,
        max_nodes: None,
        min_nodes: 0,
        state: "UP".into(),
        priority_tier: 1,
        priority_job_factor: 1,
        oversubscribe: "NO".into(),
        allow_accounts: None,
        allow_groups: None,
        def_mem_per_cpu: None,
        max_mem_per_node: None,
        other: Default::default(),
        line: 0,
    }
}
