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
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut pairs = Vec::new();
    let skip_blanks = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_blanks(&mut i);
        if i >= chars.len() {
            break;
        }
        let start = i;
        while i < chars.len() && !chars[i].is_whitespace() && chars[i] != '=' {
            i += 1;
        }
        let key: String = chars[start..i].iter().collect();
        let mut j = i;
        skip_blanks(&mut j);
        if j >= chars.len() || chars[j] != '=' {
            return Err(format!("expected Key=Value, found {key:?}"));
        }
        if key.is_empty() {
            return Err("expected Key=Value, found \"=\" without a key".to_string());
        }
        i = j + 1;
        // A blank right after `=` means an empty value unless the next word
        // is not itself a pair (`Key = value`).
        let mut k = i;
        skip_blanks(&mut k);
        if k > i && k < chars.len() && looks_like_pair_start(&chars[k..]) {
            pairs.push(Pair {
                key,
                value: String::new(),
            });
            i = k;
            continue;
        }
        i = k;
        let mut value = String::new();
        while i < chars.len() && !chars[i].is_whitespace() {
            if chars[i] == '"' {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '"')
                    .ok_or_else(|| format!("unterminated quote in value of {key}"))?;
                value.extend(&chars[i + 1..i + 1 + close]);
                i += close + 2;
            } else {
                value.push(chars[i]);
                i += 1;
            }
        }
        pairs.push(Pair { key, value });
    }
    Ok(pairs)
}

/// Whether `rest` begins with `Word=` (so a preceding `Key=` had an empty
/// value rather than a spaced-out one).
fn looks_like_pair_start(rest: &[char]) -> bool {
    let word_len = rest
        .iter()
        .take_while(|c| !c.is_whitespace() && **c != '=' && **c != '"')
        .count();
    word_len > 0 && rest.get(word_len) == Some(&'=')
}
