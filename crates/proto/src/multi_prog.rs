//! `srun --multi-prog`: the configuration file (srun(1) "MULTIPLE PROGRAM
//! CONFIGURATION"). Each line is `RANKS PROGRAM [ARGS...]`: RANKS a comma
//! list of task ranks and ranges (`0-3,5`) or `*` (every task no earlier
//! line names); `%t` in the program or its arguments is the task's rank,
//! `%o` its offset within the line's ranks. `#` starts a comment; blank
//! lines are skipped; single or double quotes keep spaces in an argument.
//! srun checks the file (`parse`); each node's supervisor picks its tasks'
//! lines (`task_argv`).

/// One line: its ranks (None: `*`) and its words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// The ranks it names, in order (None: `*`).
    pub ranks: Option<Vec<u32>>,
    /// The program and its arguments, before `%t`/`%o`.
    pub words: Vec<String>,
}

/// Parses the file's text; the error is the line number (1-based) and
/// what is wrong with it.
pub fn parse(text: &str) -> Result<Vec<Line>, (usize, String)> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let words = split_words(raw).map_err(|e| (n, e))?;
        let Some((ranks, rest)) = words.split_first() else {
            continue;
        };
        if rest.is_empty() {
            return Err((n, format!("no program for tasks {ranks}")));
        }
        let ranks = if ranks == "*" {
            None
        } else {
            Some(
                parse_ranks(ranks)
                    .ok_or_else(|| format!("invalid task ranks {ranks}"))
                    .map_err(|e| (n, e))?,
            )
        };
        lines.push(Line {
            ranks,
            words: rest.to_vec(),
        });
    }
    Ok(lines)
}

/// `0-3,5` to its ranks; None where a part is no rank or range (or a
/// range runs backwards).
fn parse_ranks(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if a > b || b - a > 1_000_000 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// A line's words: split on blanks, quotes kept together, `#` to the end
/// of the line a comment.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c == '#' && !in_word => break,
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            None => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("unbalanced quote".into());
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// The command task `task` runs: the first line naming it, else the first
/// `*` line; None where no line does.
pub fn task_argv(lines: &[Line], task: u32) -> Option<Vec<String>> {
    let (line, offset) = lines
        .iter()
        .find_map(|l| {
            l.ranks
                .as_ref()?
                .iter()
                .position(|r| *r == task)
                .map(|p| (l, p as u32))
        })
        .or_else(|| lines.iter().find(|l| l.ranks.is_none()).map(|l| (l, task)))?;
    Some(
        line.words
            .iter()
            .map(|w| substitute(w, task, offset))
            .collect(),
    )
}

fn substitute(word: &str, task: u32, offset: u32) -> String {
    let mut out = String::new();
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('%', Some('t')) => {
                chars.next();
                out.push_str(&task.to_string());
            }
            ('%', Some('o')) => {
                chars.next();
                out.push_str(&offset.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_ranges_star_and_substitutions() {
        let text =
            "# a comment\n\n0 echo first %t\n1-2,4 printf '%o of %t\\n'\n* hostname # rest\n";
        let lines = parse(text).expect("a valid file");
        assert_eq!(lines.len(), 3);
        assert_eq!(task_argv(&lines, 0).unwrap(), ["echo", "first", "0"]);
        assert_eq!(task_argv(&lines, 2).unwrap(), ["printf", "1 of 2\\n"]);
        assert_eq!(task_argv(&lines, 4).unwrap(), ["printf", "2 of 4\\n"]);
        assert_eq!(task_argv(&lines, 3).unwrap(), ["hostname"]);
    }

    #[test]
    fn a_task_no_line_names_has_no_program() {
        let lines = parse("0-1 true\n").unwrap();
        assert_eq!(task_argv(&lines, 2), None);
    }

    #[test]
    fn bad_lines_name_their_number() {
        assert_eq!(parse("0 true\n3-1 true\n").unwrap_err().0, 2);
        assert_eq!(parse("x true\n").unwrap_err().0, 1);
        assert_eq!(parse("0\n").unwrap_err().0, 1);
        assert_eq!(parse("0 'open\n").unwrap_err().0, 1);
    }
}
