//! docs/compatibility.md's generated sections: the option tables of
//! sbatch, srun and salloc (`cli::compat`) and the configuration keys
//! (`conf::effect::key_table`), each between
//! `<!-- generated: NAME -->` and `<!-- end generated -->`. The prose
//! around them is hand-written and kept. The test in `tests.rs` fails
//! when the file is stale; `UPDATE_COMPAT=1` rewrites it.

use conf::effect::KeyDisposition;

const END: &str = "<!-- end generated -->";

/// Each generated section: its marker name and its Markdown.
pub fn sections() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = cli::compat::COMMANDS
        .iter()
        .map(|cmd| (format!("{cmd} options"), cli::compat::markdown(cmd)))
        .collect();
    out.push(("configuration keys".to_string(), config_markdown()));
    out
}

/// The configuration table: one row per key muster knows.
fn config_markdown() -> String {
    let rows = conf::effect::key_table();
    let count = |f: fn(&KeyDisposition) -> bool| rows.iter().filter(|r| f(&r.disposition)).count();
    let mut out = format!(
        "{} keys: {} act, {} act only as muster does (other values warned), {} act only as muster does (other values refused), {} warned and ignored, {} read but not applied, {} obsolete, {} refused.\n\n",
        rows.len(),
        count(|d| matches!(d, KeyDisposition::Acting)),
        count(|d| matches!(d, KeyDisposition::OnlyAs(_))),
        count(|d| matches!(d, KeyDisposition::RefusedExcept(_))),
        count(|d| matches!(d, KeyDisposition::Inert)),
        count(|d| matches!(d, KeyDisposition::NotApplied(_))),
        count(|d| matches!(d, KeyDisposition::Obsolete)),
        count(|d| matches!(d, KeyDisposition::Refused(_))),
    );
    out.push_str("| file | key | decision |\n|---|---|---|\n");
    for r in rows {
        let decision = match r.disposition {
            KeyDisposition::Acting => match conf::effect::ACTING_NOTES
                .iter()
                .find(|(section, key, _)| *section == r.section && *key == r.key)
            {
                Some((_, _, note)) => format!("acts: {note}"),
                None => "acts".to_string(),
            },
            KeyDisposition::OnlyAs(values) => format!(
                "muster does only {}; other values are warned about and ignored",
                values
                    .iter()
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            KeyDisposition::Inert => {
                "warned about (check-config, daemons at start) and ignored".to_string()
            }
            KeyDisposition::NotApplied(why) => format!("read, not applied: {why}"),
            KeyDisposition::RefusedExcept(values) => format!(
                "muster does only {}; other values are refused (an error at their line)",
                values
                    .iter()
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            KeyDisposition::Obsolete => "obsolete: warned about and ignored".to_string(),
            KeyDisposition::Refused(why) => {
                format!("refused where set (the daemons do not start): {why}")
            }
        };
        out.push_str(&format!("| {} | `{}` | {decision} |\n", r.section, r.key));
    }
    out
}

/// `doc` with each generated section replaced by its current text; a
/// section without markers is appended at the end.
pub fn regenerate(doc: &str) -> String {
    let mut text = doc.to_string();
    for (name, body) in sections() {
        let begin = format!("<!-- generated: {name} -->\n");
        let block = format!("{begin}{body}{END}\n");
        match text.find(&begin) {
            Some(start) => {
                let end = text[start..]
                    .find(END)
                    .map_or(text.len(), |i| start + i + END.len());
                let end = if text[end..].starts_with('\n') {
                    end + 1
                } else {
                    end
                };
                text.replace_range(start..end, &block);
            }
            None => {
                if !text.ends_with("\n\n") {
                    text.push('\n');
                }
                text.push_str(&format!("## {name}\n\n{block}"));
            }
        }
    }
    text
}

#[cfg(test)]
mod tests;
