//! Licenses (slurm.conf `Licenses=`, `-L`): cluster-wide counters a job
//! holds from its start to its end (COMPLETING included), as slurm.conf(5)
//! describes local licenses.
//!
//! A job's licenses are checked at submission (an unknown name, or more
//! than the total: `Invalid license specification`) and before each pass
//! (`Engine::license_blocked`): the pending jobs are walked in priority
//! order, and each job that asks for licenses either has them free, after
//! what the running jobs and every job let through before it hold, and is
//! let through (counted against the jobs after it whether it starts or
//! not), or waits with reason `Licenses`. So the pass never starts more
//! than is free, and a lower-priority job never takes the licenses a
//! higher-priority job that waits for nodes needs (the backfill plan itself
//! does not know licenses: a job the walk lets through is planned on its
//! nodes as any other). A job a QOS or association limit holds, a held
//! job, and one waiting for its begin time or a dependency keep nothing.
//! Where licenses are configured, every pass goes over the whole queue
//! (`Engine::licenses_on`): the shortcuts over part of it do not know them.

use crate::limits::LimitCheck;
use crate::{Engine, Job};
use model::licenses::{self, Licenses};
use model::{JobState, PendingReason, Timestamp};
use proto::{JobDesc, LicenseInfo, SlurmError};

/// A job's licenses (its description's, checked at submission).
pub(crate) fn of_job(job: &Job) -> Licenses {
    job.desc
        .licenses
        .as_deref()
        .and_then(|s| licenses::parse(s).ok())
        .unwrap_or_default()
}

/// Reads `Licenses=` from slurm.conf (None where it does not parse; the
/// configuration check reports it).
pub(crate) fn from_config(cfg: &conf::Config) -> Licenses {
    cfg.other
        .get("licenses")
        .and_then(|(_, v)| licenses::parse(v).ok())
        .unwrap_or_default()
}

impl Engine {
    /// Whether slurm.conf configures any license.
    pub(crate) fn licenses_on(&self) -> bool {
        !self.settings.licenses.is_empty()
    }

    /// Checks and normalises a submission's `-L` (`foo:1,bar:2`): every
    /// license configured, none asked for beyond its total.
    pub(crate) fn check_licenses(&self, desc: &mut JobDesc) -> Result<(), SlurmError> {
        let Some(spec) = desc.licenses.as_deref() else {
            return Ok(());
        };
        let asked = licenses::parse(spec).map_err(|_| SlurmError::InvalidLicenses)?;
        for (name, n) in &asked {
            match self.settings.licenses.get(name) {
                Some(total) if n <= total => {}
                _ => return Err(SlurmError::InvalidLicenses),
            }
        }
        desc.licenses = (!asked.is_empty()).then(|| licenses::format(&asked));
        Ok(())
    }

    /// What the jobs holding an allocation (running or completing; a
    /// suspended job holds none) hold of each license.
    pub(crate) fn licenses_used(&self) -> Licenses {
        let mut used = Licenses::new();
        for job in self.jobs.values() {
            if job.alloc.is_none() || job.desc.licenses.is_none() {
                continue;
            }
            for (name, n) in of_job(job) {
                *used.entry(name).or_insert(0) += n;
            }
        }
        used
    }

    /// `scontrol show licenses`: every configured license, in name order.
    pub fn license_infos(&self) -> Vec<LicenseInfo> {
        let used = self.licenses_used();
        self.settings
            .licenses
            .iter()
            .map(|(name, &total)| LicenseInfo {
                name: name.clone(),
                total,
                used: used.get(name).copied().unwrap_or(0),
                reserved: 0,
            })
            .collect()
    }

    /// After a pass: the array records the licenses cut short that the
    /// pass left waiting for nodes wait for Licenses.
    pub(crate) fn tell_license_cut(&mut self, check: &LimitCheck, now: Timestamp) {
        for id in &check.license_cut {
            let waits_on_nodes = self.jobs.get(id).is_some_and(|j| {
                j.state == JobState::Pending
                    && matches!(j.reason, PendingReason::Resources | PendingReason::Priority)
            });
            if waits_on_nodes {
                self.jobs.tell_reason(id, PendingReason::Licenses, now);
            }
        }
    }

    /// Adds to `check` the pending jobs that wait for licenses (see the
    /// module doc), and notes a job told `Licenses` that no longer waits
    /// (`LimitCheck::released`).
    pub(crate) fn license_blocked(&self, check: &mut LimitCheck, now: Timestamp) {
        if !self.licenses_on() {
            return;
        }
        let mut free = self.settings.licenses.clone();
        for (name, n) in self.licenses_used() {
            if let Some(f) = free.get_mut(&name) {
                *f = f.saturating_sub(n);
            }
        }
        let mut pending: Vec<&Job> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Pending && j.desc.licenses.is_some())
            .map(|j| &**j)
            .collect();
        pending.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.id.cmp(&b.id)));
        for job in pending {
            let waits_elsewhere = job.held.is_some()
                || check.blocked.contains_key(&job.id)
                || job.desc.begin_time.is_some_and(|b| now < b)
                || job.dep_status != crate::DepStatus::Clear;
            if waits_elsewhere {
                continue;
            }
            let asked = of_job(job);
            // How many of it may start: one, or for an array's pending
            // record as many tasks as the licenses (and limits) allow.
            let most = match job.array.as_ref().filter(|a| a.is_meta()) {
                Some(a) => {
                    let pending = a.pending.len().min(u64::from(u32::MAX)) as u32;
                    check.array_room.get(&job.id).copied().unwrap_or(pending)
                }
                None => 1,
            };
            let room = asked
                .iter()
                .map(|(name, n)| free.get(name).map_or(0, |f| f / n.max(&1)))
                .min()
                .unwrap_or(most)
                .min(most);
            if room == 0 {
                check.blocked.insert(job.id, PendingReason::Licenses);
                continue;
            }
            for (name, n) in &asked {
                if let Some(f) = free.get_mut(name) {
                    *f -= n * room;
                }
            }
            if job.array.as_ref().is_some_and(|a| a.is_meta()) {
                check.array_room.insert(job.id, room);
                if room < most {
                    check.license_cut.push(job.id);
                }
            }
            check.released |= job.reason == PendingReason::Licenses;
        }
    }
}
