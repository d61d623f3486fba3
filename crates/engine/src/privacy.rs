//! `PrivateData` (slurm.conf(5)): what one requester may see of others.
//!
//! ```text
//!  request (who) -> Engine::sight(who) -> Sight -> every listing answered
//!                   root, SlurmUser,      for who: jobs, steps, sprio,
//!                   AdminLevel>=Operator  sshare, nodes, partitions,
//!                   see everything        reservations, explain, and (in
//!                                         ctld) sacct, sreport, sacctmgr,
//!                                         sstat, the watch stream
//! ```
//!
//! The rule is Slurm's: root, SlurmUser and users of AdminLevel Operator or
//! Administrator see everything; anyone else does not see what a
//! `PrivateData` word hides. `jobs`: other users' jobs and steps, which are
//! answered as if they did not exist (`Invalid job id specified`); `usage`:
//! other users' usage (sshare's and sreport's rows of other users, and of
//! accounts); `nodes` and `partitions`: the node and partition listings are
//! refused (`Access/permission denied`); `reservations`: the reservations
//! the user may not use; `users`: other users' records and associations;
//! `accounts`: account definitions. Account coordinators are not modelled
//! (muster's association database has none), so they see only their own.
//!
//! Every reader (the commands, the REST API and the dashboard, which ask as
//! the user they serve, the watch stream) is answered through a `Sight`, so
//! no front-end has a path of its own.

use crate::Engine;
use conf::PrivateData;
use proto::acctdb::{AcctTables, AdminLevel, UsageReport};
use proto::{Identity, ShareRow};

/// What one requester may see: the `PrivateData` words that apply to them
/// (none for an operator) and who they are.
#[derive(Clone, Debug, PartialEq)]
pub struct Sight {
    /// The words that hide something from this requester.
    hidden: PrivateData,
    /// The requester's uid.
    uid: u32,
    /// The requester's user name.
    user: String,
    /// The accounts the requester runs under (their associations), for
    /// the reservations they may use.
    accounts: Vec<String>,
}

impl Sight {
    /// Sees everything (root, SlurmUser, operators, or no `PrivateData`).
    pub fn everything() -> Sight {
        Sight {
            hidden: PrivateData::default(),
            uid: 0,
            user: String::new(),
            accounts: Vec::new(),
        }
    }

    /// The sight of `who` under `private`: everything when `operator`,
    /// else what `private` leaves. `tables` gives the user's accounts.
    pub fn of(
        private: PrivateData,
        who: &Identity,
        operator: bool,
        tables: Option<&AcctTables>,
    ) -> Sight {
        if operator || !private.any() {
            return Sight::everything();
        }
        let accounts = if private.reservations {
            let mut a: Vec<String> = tables
                .map(|t| {
                    t.assocs
                        .iter()
                        .filter(|a| a.user == who.user)
                        .map(|a| a.account.clone())
                        .collect()
                })
                .unwrap_or_default();
            a.sort();
            a.dedup();
            a
        } else {
            Vec::new()
        };
        Sight {
            hidden: private,
            uid: who.uid,
            user: who.user.clone(),
            accounts,
        }
    }

    /// Whether anything is hidden from this requester.
    pub fn restricted(&self) -> bool {
        self.hidden.any()
    }

    /// May see the job (or step, or accounting record) of `uid`.
    pub fn job(&self, uid: u32) -> bool {
        !self.hidden.jobs || uid == self.uid
    }

    /// May see the usage of association (`account`, `user`): with
    /// `usage`, only their own user associations (an account's own row
    /// sums other users' usage); the cluster's total (both empty) stays.
    pub fn usage_of(&self, account: &str, user: &str) -> bool {
        !self.hidden.usage || user == self.user || (user.is_empty() && account.is_empty())
    }

    /// May list the nodes.
    pub fn nodes(&self) -> bool {
        !self.hidden.nodes
    }

    /// May list the partitions.
    pub fn partitions(&self) -> bool {
        !self.hidden.partitions
    }

    /// May see every reservation (else only those `admits` lets in for one
    /// of their accounts: [`Sight::resv`]).
    pub fn all_reservations(&self) -> bool {
        !self.hidden.reservations
    }

    /// May see a reservation that `admits(user, account)` describes.
    pub fn resv(&self, admits: impl Fn(&str, Option<&str>) -> bool) -> bool {
        self.all_reservations()
            || admits(&self.user, None)
            || self.accounts.iter().any(|a| admits(&self.user, Some(a)))
    }

    /// The association database as this requester may see it: with
    /// `users`, only their own user record and associations; with
    /// `accounts`, no account definitions (they coordinate none).
    pub fn tables(&self, mut t: AcctTables) -> AcctTables {
        if self.hidden.users {
            t.users.retain(|u| u.name == self.user);
            t.assocs.retain(|a| a.user == self.user);
        }
        if self.hidden.accounts {
            t.accounts.clear();
        }
        t
    }

    /// A usage report (sreport) as this requester may see it.
    pub fn usage(&self, mut r: UsageReport) -> UsageReport {
        r.rows.retain(|e| self.usage_of(&e.account, &e.user));
        r
    }

    /// sshare's rows as this requester may see them: with `usage`, their
    /// own user rows alone.
    pub fn shares(&self, mut rows: Vec<ShareRow>) -> Vec<ShareRow> {
        if self.hidden.usage {
            rows.retain(|r| !r.user.is_empty() && r.user == self.user);
        }
        rows
    }
}

/// The engine as one requester sees it: its brief job listings
/// (`proto::JobRowSource`) hold only the jobs `sight` may see.
pub struct SeenBy<'e> {
    pub(crate) engine: &'e Engine,
    pub(crate) sight: Sight,
}

impl SeenBy<'_> {
    /// Calls `each` with the `JobInfo` of every job `filter` selects that
    /// the requester may see, one `JobInfo` lent and written over job
    /// after job (what the controller encodes as `proto::JobWires`).
    pub fn each_job_info(
        &self,
        filter: &proto::JobFilter,
        now: model::Timestamp,
        each: impl FnMut(&proto::JobInfo),
    ) {
        self.engine
            .each_job_info_seen(filter, now, &self.sight, each);
    }

    /// How many jobs the controller holds (any state, anyone's): at least
    /// as many as a listing selects.
    pub fn job_count(&self) -> usize {
        self.engine.job_count()
    }
}

impl Engine {
    /// This engine as `who` sees it, for the brief listings the controller
    /// encodes (`proto::JobRowSource`).
    pub fn seen_by(&self, who: &Identity) -> SeenBy<'_> {
        SeenBy {
            engine: self,
            sight: self.sight(who),
        }
    }

    /// Whether `who` may see job `id` (true for a job that does not exist:
    /// its answer says so).
    pub fn sees_job(&self, who: &Identity, id: model::JobId) -> bool {
        self.settings
            .private_data
            .jobs
            .then(|| self.jobs.get(&id))
            .flatten()
            .is_none_or(|j| self.sight(who).job(j.desc.uid))
    }

    /// `scontrol show reservation` as `sight` may see it.
    pub(crate) fn resv_infos_seen(
        &self,
        now: model::Timestamp,
        sight: &Sight,
    ) -> Vec<proto::resv::ResvInfo> {
        let mut list = self.resv_infos(now);
        if !sight.all_reservations() {
            list.retain(|info| {
                self.resvs
                    .by_name
                    .get(&info.name)
                    .is_some_and(|r| sight.resv(|user, account| r.admits(user, account)))
            });
        }
        list
    }

    /// `muster explain`'s answer as `sight` may see it: other users' jobs
    /// (`jobs`) and the candidate nodes (`nodes`) left out.
    pub(crate) fn explained_for(&self, x: &mut proto::JobExplanation, sight: &Sight) {
        if !sight.restricted() {
            return;
        }
        let seen = |id: &model::JobId| self.jobs.get(id).is_none_or(|j| sight.job(j.desc.uid));
        x.ahead = x.ahead.filter(|(id, _)| seen(id));
        x.first = x.first.filter(|(id, _)| seen(id));
        x.waits_for.retain(|(id, _)| seen(id));
        for node in &mut x.candidates {
            node.jobs.retain(|(id, _)| seen(id));
        }
        if !sight.nodes() {
            x.candidates.clear();
        }
    }

    /// Whether `who` is root, SlurmUser, or of AdminLevel Operator or
    /// Administrator in the association database: sees what
    /// `PrivateData` hides from others.
    pub fn is_operator(&self, who: &Identity) -> bool {
        self.is_admin(who)
            || self.assoc_tables().is_some_and(|t| {
                t.user(&who.user)
                    .is_some_and(|u| u.admin_level >= AdminLevel::Operator)
            })
    }

    /// What `who` may see under this controller's `PrivateData`.
    pub fn sight(&self, who: &Identity) -> Sight {
        let private = self.settings.private_data;
        if !private.any() {
            return Sight::everything();
        }
        Sight::of(private, who, self.is_operator(who), self.assoc_tables())
    }
}

#[cfg(test)]
mod tests;
