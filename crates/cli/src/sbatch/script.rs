//! The batch script: where it comes from (a file, `--wrap`, or standard
//! input), the checks sbatch makes before sending it, and its `#SBATCH`
//! directives.
//!
//! Directives follow `sbatch(1)`: a line that starts with `#SBATCH` (in column
//! one) carries options; blank lines and other `#` lines are skipped; the first
//! other line (the first command) ends the scan. Within a directive, words are
//! split at blanks, `'...'` and `"..."` group words, a backslash escapes the
//! next character, and an unquoted `#` starts a comment.

use super::SbatchError;

/// The text `--wrap` turns into a script (`sbatch(1) --wrap`).
pub fn wrap_script(command: &str) -> String {
    format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{command}\n")
}

/// Checks a script's bytes as sbatch does before submitting, and returns it
/// as text.
pub fn check_script(bytes: &[u8]) -> Result<String, SbatchError> {
    if bytes.is_empty() {
        return Err(SbatchError::error(&["Batch script is empty!"]));
    }
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(SbatchError::error(&[
            "Batch script contains only whitespace!",
        ]));
    }
    if !bytes.starts_with(b"#!") {
        return Err(SbatchError::error(&[
            "This does not look like a batch script.  The first",
            "line must start with #! followed by the path to an interpreter.",
            "For instance: #!/bin/sh",
        ]));
    }
    if bytes.contains(&0) {
        return Err(SbatchError::error(&[
            "The Slurm controller does not allow scripts that",
            "contain a NULL character '\\0'.",
        ]));
    }
    if bytes.windows(2).any(|w| w == b"\r\n") {
        return Err(SbatchError::error(&[
            "Batch script contains DOS line breaks (\\r\\n)",
            "instead of expected UNIX line breaks (\\n).",
        ]));
    }
    // The controller stores text; invalid UTF-8 is replaced rather than refused.
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// The words of every `#SBATCH` directive, in order, up to the first command.
/// `name` is the script's name for the message about an unmatched quote.
pub fn directives(script: &str, name: &str) -> Result<Vec<String>, SbatchError> {
    let mut words = Vec::new();
    for (idx, line) in script.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("#SBATCH") {
            split_directive(rest, &mut words).map_err(|quote| {
                SbatchError::fatal(&format!(
                    "{name}: line {}: Unmatched `{quote}` in [{line}]",
                    idx + 1
                ))
            })?;
            continue;
        }
        let first = line.trim_start();
        if first.is_empty() || first.starts_with('#') {
            continue;
        }
        break;
    }
    Ok(words)
}

/// Splits one directive's text into words; `Err(quote)` for an unmatched quote.
fn split_directive(text: &str, out: &mut Vec<String>) -> Result<(), char> {
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(());
        }
        let mut word = String::new();
        let mut quote: Option<char> = None;
        let mut comment = false;
        while let Some(&c) = chars.peek() {
            if quote.is_none() && c.is_whitespace() {
                break;
            }
            chars.next();
            match (quote, c) {
                (_, '\\') => {
                    if let Some(next) = chars.next() {
                        word.push(next);
                    }
                }
                (Some(q), c) if c == q => quote = None,
                (Some(_), c) => word.push(c),
                (None, '\'' | '"') => quote = Some(c),
                (None, '#') => {
                    comment = true;
                    break;
                }
                (None, c) => word.push(c),
            }
        }
        if let Some(q) = quote {
            return Err(q);
        }
        if !word.is_empty() {
            out.push(word);
        }
        if comment {
            return Ok(());
        }
    }
}
