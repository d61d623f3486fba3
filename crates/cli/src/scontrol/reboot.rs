//! `scontrol reboot [ASAP] [nextstate=RESUME|DOWN] [reason=...] ALL|NODES`
//! and `scontrol cancel_reboot NODES`, as Slurm 22.05's scontrol takes
//! them (scontrol(1) `reboot`, `cancel_reboot`). Both print nothing when
//! done.
//!
//! ```text
//! words -> parse_reboot (RebootArgs) -> RebootNodes / CancelReboot
//! ```

use super::{fail, CmdResult, Session};
use proto::{CtldRequest, RebootNextState};

/// What `scontrol reboot` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RebootArgs {
    /// `ASAP`.
    pub asap: bool,
    /// `nextstate=`.
    pub next_state: Option<RebootNextState>,
    /// `reason=`.
    pub reason: Option<String>,
    /// The node list (None: `ALL`).
    pub nodes: Option<String>,
}

/// Parses the words after `reboot`; on refusal the complete stderr text.
pub fn parse_reboot(words: &[String]) -> Result<RebootArgs, String> {
    let mut out = RebootArgs {
        asap: false,
        next_state: None,
        reason: None,
        nodes: None,
    };
    let mut all = false;
    for w in words {
        let lower = w.to_ascii_lowercase();
        if lower == "asap" {
            out.asap = true;
        } else if let Some(v) = strip_key(w, "nextstate=") {
            out.next_state = Some(match v.to_ascii_lowercase().as_str() {
                "resume" => RebootNextState::Resume,
                "down" => RebootNextState::Down,
                _ => {
                    return Err(format!(
                        "Invalid nextstate: {v}\nValid states are RESUME and DOWN\n"
                    ))
                }
            });
        } else if let Some(v) = strip_key(w, "reason=") {
            let v = v.trim_matches('"');
            if !v.is_empty() {
                out.reason = Some(v.to_string());
            }
        } else if lower == "all" {
            all = true;
        } else if out.nodes.is_none() {
            out.nodes = Some(w.clone());
        } else {
            return Err(format!("invalid keyword: {w}\n"));
        }
    }
    if all {
        if out.nodes.is_some() {
            return Err("Specify either ALL or a node list, not both\n".to_string());
        }
    } else if out.nodes.is_none() {
        return Err("Missing node list. Specify ALL|<NodeList>\n".to_string());
    }
    Ok(out)
}

/// `key=` at the start of `word`, any case: what follows.
fn strip_key<'a>(word: &'a str, key: &str) -> Option<&'a str> {
    let head = word.get(..key.len())?;
    head.eq_ignore_ascii_case(key).then(|| &word[key.len()..])
}

fn expand(list: &str) -> Result<Vec<String>, String> {
    hostlist::expand(list).map_err(|_| format!("Invalid node name specified: {list}\n"))
}

/// `scontrol reboot ...`.
pub(super) fn cmd_reboot(s: &mut Session, rest: &[String]) -> CmdResult {
    let args = parse_reboot(rest).map_err(fail)?;
    let client = s.client("scontrol_reboot_nodes error")?;
    let nodes = match &args.nodes {
        Some(list) => expand(list).map_err(fail)?,
        None => client
            .nodes()
            .map_err(|e| fail(format!("slurm_load_node error: {e}")))?
            .into_iter()
            .map(|n| n.name)
            .collect(),
    };
    client
        .call_ok(CtldRequest::RebootNodes {
            nodes,
            asap: args.asap,
            next_state: args.next_state,
            reason: args.reason,
        })
        .map_err(|e| fail(format!("scontrol_reboot_nodes error: {e}")))?;
    Ok(String::new())
}

/// `scontrol cancel_reboot NODES`.
pub(super) fn cmd_cancel_reboot(s: &mut Session, rest: &[String]) -> CmdResult {
    let [list] = rest else {
        return Err(fail(if rest.is_empty() {
            "too few arguments for keyword:cancel_reboot"
        } else {
            "too many arguments for keyword:cancel_reboot"
        }));
    };
    let nodes = expand(list).map_err(fail)?;
    s.client("slurm_update error")?
        .call_ok(CtldRequest::CancelReboot { nodes })
        .map_err(|e| fail(format!("slurm_update error: {e}")))?;
    Ok(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn reboot_takes_its_words_in_any_order_and_case() {
        let a = parse_reboot(&words("ASAP nextstate=resume Reason=bios node[1-2]")).unwrap();
        assert_eq!(
            a,
            RebootArgs {
                asap: true,
                next_state: Some(RebootNextState::Resume),
                reason: Some("bios".into()),
                nodes: Some("node[1-2]".into()),
            }
        );
        let a = parse_reboot(&words("all NextState=DOWN")).unwrap();
        assert_eq!(a.nodes, None);
        assert_eq!(a.next_state, Some(RebootNextState::Down));
        assert!(!a.asap);
    }

    #[test]
    fn reboot_refuses_what_slurm_refuses() {
        assert_eq!(
            parse_reboot(&words("asap")).unwrap_err(),
            "Missing node list. Specify ALL|<NodeList>\n"
        );
        assert_eq!(
            parse_reboot(&words("nextstate=idle node1")).unwrap_err(),
            "Invalid nextstate: idle\nValid states are RESUME and DOWN\n"
        );
        assert!(parse_reboot(&words("node1 node2")).is_err());
    }
}
