//! Test-only fault injection, for the end-to-end tests of what a crash at
//! an exact moment leaves behind. Off unless the controller starts with
//! `MUSTER_TEST_FAULT` set; never set it on a real cluster.
//!
//! `MUSTER_TEST_FAULT=exit_after_submit_commit`: the controller exits
//! (status [`FAULT_EXIT`]) right after the first batch holding an accepted
//! submission is on disk, before any answer leaves: the job is journaled
//! and its client gets no answer, as when the controller dies between the
//! two (issue 34: a lost reply is not a lost or doubled job).

use proto::CtldResponse;
use std::sync::OnceLock;
use tracing::warn;

/// The controller's exit status when a fault hook ends it.
pub const FAULT_EXIT: i32 = 86;

/// The faults a test can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Exit after committing a batch with an accepted submission, before
    /// answering it.
    ExitAfterSubmitCommit,
}

static FAULT: OnceLock<Option<Fault>> = OnceLock::new();

/// Reads `MUSTER_TEST_FAULT` (once, at start); logs a hook that is on.
pub fn init() {
    FAULT.get_or_init(|| {
        let text = std::env::var("MUSTER_TEST_FAULT").ok()?;
        let fault = match text.as_str() {
            "exit_after_submit_commit" => Fault::ExitAfterSubmitCommit,
            other => {
                warn!("MUSTER_TEST_FAULT={other}: no such test fault, ignored");
                return None;
            }
        };
        warn!("test fault hook on: MUSTER_TEST_FAULT={text} (never on a real cluster)");
        Some(fault)
    });
}

/// Called once a batch is on disk and before its answers leave: ends the
/// process when the hook asks for it and the batch's `answers` hold an
/// accepted submission.
pub fn after_commit<'a>(answers: impl IntoIterator<Item = &'a CtldResponse>) {
    if FAULT.get().copied().flatten() != Some(Fault::ExitAfterSubmitCommit) {
        return;
    }
    let submitted = answers
        .into_iter()
        .any(|r| matches!(r, CtldResponse::Submitted(s) if s.test_only.is_none()));
    if submitted {
        warn!("test fault hook: exiting after the commit of a submission, before its answer");
        std::process::exit(FAULT_EXIT);
    }
}
