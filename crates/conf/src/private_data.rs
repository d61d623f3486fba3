//! `PrivateData` (slurm.conf(5)): what regular users may not see of
//! others. This module only reads and prints the key; the controller
//! enforces it (`engine::privacy`), for every reader at once.
//!
//! Slurm matches the words loosely (`job` and `jobs` both hide jobs, `all`
//! is every word); so does this. A word that names nothing is reported by
//! [`PrivateData::unknown_words`] (`muster check-config` warns about it).

use serde::{Deserialize, Serialize};

/// Which kinds of information `PrivateData` hides from users who are not
/// root, SlurmUser, or of AdminLevel Operator or Administrator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateData {
    /// `accounts`: account definitions (sacctmgr, slurmdb REST).
    pub accounts: bool,
    /// `cloud`: powered-down cloud nodes are shown (muster powers no node
    /// down, so every node is always shown).
    pub cloud: bool,
    /// `events`: cluster and node events (muster keeps no event records).
    pub events: bool,
    /// `jobs`: other users' jobs and steps (squeue, scontrol, sacct,
    /// sstat, sprio, the REST API, the dashboard and the watch stream).
    pub jobs: bool,
    /// `nodes`: node state (sinfo, scontrol show node).
    pub nodes: bool,
    /// `partitions`: partition state (sinfo, scontrol show partition).
    pub partitions: bool,
    /// `reservations`: reservations the user may not use.
    pub reservations: bool,
    /// `usage`: other users' usage (sshare, sreport).
    pub usage: bool,
    /// `users`: other users' records and associations (sacctmgr).
    pub users: bool,
}

/// (word Slurm prints, the stems that select it), in Slurm's order.
const WORDS: &[(&str, &[&str])] = &[
    ("accounts", &["account"]),
    ("cloud", &["cloud"]),
    ("events", &["event"]),
    ("jobs", &["job"]),
    ("nodes", &["node"]),
    ("partitions", &["partition"]),
    ("reservations", &["reservation", "resv"]),
    ("usage", &["usage"]),
    ("users", &["user"]),
];

impl PrivateData {
    /// Every kind hidden (`PrivateData=all`).
    pub const ALL: PrivateData = PrivateData {
        accounts: true,
        cloud: true,
        events: true,
        jobs: true,
        nodes: true,
        partitions: true,
        reservations: true,
        usage: true,
        users: true,
    };

    /// Parses the value of `PrivateData=`: comma-separated words, any
    /// case, singular or plural; `all` is every word, `none` or empty
    /// nothing.
    pub fn parse(value: &str) -> PrivateData {
        let mut p = PrivateData::default();
        for word in words(value) {
            if word == "all" {
                return PrivateData::ALL;
            }
            for (name, stems) in WORDS {
                if stems.iter().any(|s| word.contains(s)) {
                    *p.flag_mut(name) = true;
                }
            }
        }
        p
    }

    /// The words of `value` that name nothing (neither a kind, `all` nor
    /// `none`), as written.
    pub fn unknown_words(value: &str) -> Vec<String> {
        value
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .filter(|w| {
                let l = w.to_ascii_lowercase();
                l != "all"
                    && l != "none"
                    && !WORDS
                        .iter()
                        .any(|(_, stems)| stems.iter().any(|s| l.contains(s)))
            })
            .map(str::to_string)
            .collect()
    }

    /// The configured value: `PrivateData` of `cfg` (nothing hidden when
    /// absent).
    pub fn of(cfg: &crate::Config) -> PrivateData {
        cfg.other
            .get("privatedata")
            .map_or_else(PrivateData::default, |(_, v)| PrivateData::parse(v))
    }

    /// As `scontrol show config` prints it: the words in Slurm's order,
    /// comma-separated, or `none`.
    pub fn as_slurm_string(&self) -> String {
        let on: Vec<&str> = WORDS
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| self.flag(name))
            .collect();
        if on.is_empty() {
            "none".to_string()
        } else {
            on.join(",")
        }
    }

    /// Whether anything is hidden.
    pub fn any(&self) -> bool {
        *self != PrivateData::default()
    }

    fn flag(&self, name: &str) -> bool {
        match name {
            "accounts" => self.accounts,
            "cloud" => self.cloud,
            "events" => self.events,
            "jobs" => self.jobs,
            "nodes" => self.nodes,
            "partitions" => self.partitions,
            "reservations" => self.reservations,
            "usage" => self.usage,
            _ => self.users,
        }
    }

    fn flag_mut(&mut self, name: &str) -> &mut bool {
        match name {
            "accounts" => &mut self.accounts,
            "cloud" => &mut self.cloud,
            "events" => &mut self.events,
            "jobs" => &mut self.jobs,
            "nodes" => &mut self.nodes,
            "partitions" => &mut self.partitions,
            "reservations" => &mut self.reservations,
            "usage" => &mut self.usage,
            _ => &mut self.users,
        }
    }
}

fn words(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split(',')
        .map(|w| w.trim().to_ascii_lowercase())
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_in_any_case_and_number_select_their_kind() {
        let p = PrivateData::parse("Jobs, usage,node,RESV");
        assert!(p.jobs && p.usage && p.nodes && p.reservations);
        assert!(!p.accounts && !p.users && !p.partitions && !p.cloud && !p.events);
        assert_eq!(p.as_slurm_string(), "jobs,nodes,reservations,usage");
    }

    #[test]
    fn all_is_every_kind_and_nothing_prints_none() {
        assert_eq!(PrivateData::parse("all"), PrivateData::ALL);
        assert_eq!(
            PrivateData::ALL.as_slurm_string(),
            "accounts,cloud,events,jobs,nodes,partitions,reservations,usage,users"
        );
        assert_eq!(PrivateData::parse("").as_slurm_string(), "none");
        assert_eq!(PrivateData::parse("none"), PrivateData::default());
        assert!(!PrivateData::default().any());
    }

    #[test]
    fn words_that_name_nothing_are_reported() {
        assert_eq!(
            PrivateData::unknown_words("jobs,secrets,none, all ,Usage"),
            vec!["secrets"]
        );
        assert!(PrivateData::unknown_words("accounts,users").is_empty());
    }
}
