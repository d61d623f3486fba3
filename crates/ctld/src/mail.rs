//! `--mail-type`: runs slurm.conf's `MailProg` (default `/bin/mail`) as
//! `MailProg -s SUBJECT USER` for the engine's `Command::Mail`, off the
//! engine task (a blocking-pool thread starts the program and reaps it).

use std::path::PathBuf;
use tracing::{debug, warn};

/// slurm.conf's mail settings.
pub(crate) struct Mailer {
    /// MailProg.
    prog: PathBuf,
    /// MailDomain: qualifies a user name given by default.
    domain: Option<String>,
    /// A missing MailProg was logged already.
    missing_logged: bool,
}

impl Mailer {
    pub(crate) fn from_config(cfg: &conf::Config) -> Mailer {
        let get = |k: &str| {
            cfg.other
                .get(k)
                .map(|(_, v)| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        Mailer {
            prog: get("mailprog").map_or_else(|| PathBuf::from("/bin/mail"), PathBuf::from),
            domain: get("maildomain"),
            missing_logged: false,
        }
    }

    /// The address: a default user name gets `@MailDomain` when set.
    fn address(&self, user: String, default_user: bool) -> String {
        match &self.domain {
            Some(d) if default_user && !user.contains('@') => format!("{user}@{d}"),
            _ => user,
        }
    }

    /// Starts `MailProg -s SUBJECT USER`; does not wait for it.
    pub(crate) fn send(&mut self, user: String, default_user: bool, subject: String) {
        if !self.prog.exists() {
            if !self.missing_logged {
                warn!(prog = %self.prog.display(), "MailProg not found: no job mail is sent");
                self.missing_logged = true;
            }
            return;
        }
        let to = self.address(user, default_user);
        let prog = self.prog.clone();
        debug!(%to, %subject, "mail");
        tokio::task::spawn_blocking(move || {
            let run = std::process::Command::new(&prog)
                .arg("-s")
                .arg(&subject)
                .arg(&to)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
            match run {
                Ok(s) if !s.success() => warn!(prog = %prog.display(), %s, "MailProg failed"),
                Err(e) => warn!(prog = %prog.display(), "MailProg: {e}"),
                Ok(_) => {}
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_user_gets_the_mail_domain() {
        let m = Mailer {
            prog: "/bin/mail".into(),
            domain: Some("example.org".into()),
            missing_logged: false,
        };
        assert_eq!(m.address("alice".into(), true), "alice@example.org");
        assert_eq!(m.address("bob".into(), false), "bob");
        assert_eq!(m.address("c@d".into(), true), "c@d");
    }
}
