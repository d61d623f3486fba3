//! Slurm's config file syntax, below the level of keys: physical lines are
//! joined at a trailing backslash, `#` starts a comment (`\#` is a literal
//! `#`), and what remains is split into `Key=Value` pairs, where a value may
//! be quoted with `"..."` to hold spaces.
//!
//! ```text
//! text -> logical_lines() -> [LogicalLine] -> tokenize() -> [(Key, Value)]
//! ```

/// One logical line: comments stripped, continuations joined, trimmed,
/// never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogicalLine {
    /// 1-based number of the first physical line, which is what error
    /// messages cite.
    pub line: usize,
    /// The text, without comments.
    pub text: String,
}

/// Removes a comment from one physical line. A `#` inside a quoted value is
/// kept, and `\#` stands for a literal `#` (slurm.conf(5) allows the escape).
fn strip_comment(raw: &str) -> String {
    if !raw.contains('#') {
        return raw.to_string();
    }
    let mut out = String::with_capacity(raw.len());
    let mut in_quote = false;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'#') => {
                out.push('#');
                chars.next();
            }
            '"' => {
                in_quote = !in_quote;
                out.push(c);
            }
            '#' if !in_quote => break,
            _ => out.push(c),
        }
    }
    out
}

/// Splits `text` into logical lines. A physical line whose last non-blank
/// character is a backslash continues on the next one; comments are removed
/// from each physical line first, so a comment cannot swallow the next line.
pub(crate) fn logical_lines(text: &str) -> Vec<LogicalLine> {
    let mut out = Vec::new();
    let mut pending: Option<LogicalLine> = None;
    for (idx, raw) in text.split('\n').enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let stripped = strip_comment(raw);
        let trimmed = stripped.trim_end();
        let (body, continues) = match trimmed.strip_suffix('\\') {
            Some(body) => (body, true),
            None => (trimmed, false),
        };
        let current = pending.get_or_insert_with(|| LogicalLine {
            line: idx + 1,
            text: String::new(),
        });
        let body = body.trim();
        if !current.text.is_empty() && !body.is_empty() {
            current.text.push(' ');
        }
        current.text.push_str(body);
        if !continues {
            let done = pending.take().expect("pending line was just set");
            if !done.text.is_empty() {
                out.push(done);
            }
        }
    }
    if let Some(done) = pending.take() {
        if !done.text.is_empty() {
            out.push(done);
        }
    }
    out
}

/// If `text` is an `Include path` line, returns the path (unquoted).
pub(crate) fn include_target(text: &str) -> Option<String> {
    let head = text.get(..7)?;
    if !head.eq_ignore_ascii_case("include") {
        return None;
    }
    let rest = &text[7..];
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim();
    let rest = rest
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(rest);
    Some(rest.to_string())
}

/// One `Key=Value` pair as written (value unquoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pair {
    /// The key, with the case it was written in.
    pub key: String,
    /// The value, quotes removed; may be empty (`Key=`).
    pub value: String,
}

/// Splits a logical line into `Key=Value` pairs separated by blanks. Blanks
/// around `=` are tolerated. A word without `=` or an unterminated quote is
/// a syntax error, returned as the reason.
pub(crate) fn tokenize(text: &str) -> Result<Vec<Pair>, String> {
    // Slices of `text`, not a vector of its chars: every command parses
    // slurm.conf before its request, and this is most of that parse.
    let is_blank = char::is_whitespace;
    let mut pairs = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let key_end = rest
            .find(|c: char| is_blank(c) || c == '=')
            .unwrap_or(rest.len());
        let key = &rest[..key_end];
        let Some(after_eq) = rest[key_end..].trim_start().strip_prefix('=') else {
            return Err(format!("expected Key=Value, found {key:?}"));
        };
        if key.is_empty() {
            return Err("expected Key=Value, found \"=\" without a key".to_string());
        }
        // A blank right after `=` means an empty value unless the next word
        // is not itself a pair (`Key = value`).
        rest = after_eq.trim_start();
        if rest.len() < after_eq.len() && !rest.is_empty() && looks_like_pair_start(rest) {
            pairs.push(Pair {
                key: key.to_string(),
                value: String::new(),
            });
            continue;
        }
        let mut value = String::new();
        loop {
            let end = rest
                .find(|c: char| is_blank(c) || c == '"')
                .unwrap_or(rest.len());
            value.push_str(&rest[..end]);
            rest = &rest[end..];
            let Some(quoted) = rest.strip_prefix('"') else {
                break;
            };
            let close = quoted
                .find('"')
                .ok_or_else(|| format!("unterminated quote in value of {key}"))?;
            value.push_str(&quoted[..close]);
            rest = &quoted[close + 1..];
        }
        pairs.push(Pair {
            key: key.to_string(),
            value,
        });
    }
    Ok(pairs)
}

/// Whether `rest` begins with `Word=` (so a preceding `Key=` had an empty
/// value rather than a spaced-out one).
fn looks_like_pair_start(rest: &str) -> bool {
    let word_len = rest
        .find(|c: char| c.is_whitespace() || c == '=' || c == '"')
        .unwrap_or(rest.len());
    word_len > 0 && rest[word_len..].starts_with('=')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Result<Vec<(String, String)>, String> {
        tokenize(text).map(|ps| ps.into_iter().map(|p| (p.key, p.value)).collect())
    }

    fn ok(list: &[(&str, &str)]) -> Result<Vec<(String, String)>, String> {
        Ok(list
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    #[test]
    fn pairs_split_at_blanks_with_quotes_and_spaced_equals() {
        assert_eq!(
            pairs("NodeName=n[1-4] CPUs=2  RealMemory=100"),
            ok(&[("NodeName", "n[1-4]"), ("CPUs", "2"), ("RealMemory", "100")])
        );
        assert_eq!(pairs("Key = value"), ok(&[("Key", "value")]));
        assert_eq!(pairs("Key=\tvalue"), ok(&[("Key", "value")]));
        assert_eq!(pairs("A= B=1"), ok(&[("A", ""), ("B", "1")]));
        assert_eq!(pairs("A="), ok(&[("A", "")]));
        assert_eq!(pairs("A= \"B=1\""), ok(&[("A", "B=1")]));
        assert_eq!(
            pairs("Desc=\"two words\" X=a\"b c\"d\"\"e"),
            ok(&[("Desc", "two words"), ("X", "ab cde")])
        );
        // Unicode blanks separate as ASCII ones do; other characters are
        // kept as written.
        assert_eq!(
            pairs("K\u{2003}=\u{a0}v\u{2003}L=é"),
            ok(&[("K", "v"), ("L", "é")])
        );
        assert_eq!(pairs("   "), ok(&[]));
    }

    #[test]
    fn malformed_pairs_say_why() {
        assert_eq!(
            pairs("Key=1 word"),
            Err("expected Key=Value, found \"word\"".to_string())
        );
        assert_eq!(
            pairs("=1"),
            Err("expected Key=Value, found \"=\" without a key".to_string())
        );
        assert_eq!(
            pairs("Desc=\"open"),
            Err("unterminated quote in value of Desc".to_string())
        );
    }

    #[test]
    fn comments_are_stripped_outside_quotes() {
        assert_eq!(strip_comment("A=1 # c"), "A=1 ");
        assert_eq!(strip_comment("A=\"x#y\" # c"), "A=\"x#y\" ");
        assert_eq!(strip_comment("A=x\\#y"), "A=x#y");
        assert_eq!(strip_comment("A=1"), "A=1");
    }
}
