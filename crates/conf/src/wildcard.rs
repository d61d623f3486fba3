//! Shell-style wildcards for one file name, as slurm.conf's script keys use
//! them (`Prolog=/etc/slurm/prolog.d/*`): shared by the node daemon's and
//! the controller's script runners, which list the directory themselves.

/// Shell-style matching of one name: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`.
/// A leading dot is matched only by a leading dot, as the shell does.
pub fn wildcard(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    matches_from(&p, &n)
}

fn matches_from(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).any(|i| matches_from(&p[1..], &n[i..])),
        Some('?') => !n.is_empty() && matches_from(&p[1..], &n[1..]),
        Some('[') => {
            let Some(end) = p.iter().skip(2).position(|&c| c == ']').map(|i| i + 2) else {
                return n.first() == Some(&'[') && matches_from(&p[1..], &n[1..]);
            };
            let Some(&c) = n.first() else {
                return false;
            };
            let mut set = &p[1..end];
            let negate = matches!(set.first(), Some('!') | Some('^'));
            if negate {
                set = &set[1..];
            }
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != negate && matches_from(&p[end + 1..], &n[1..])
        }
        Some(&c) => n.first() == Some(&c) && matches_from(&p[1..], &n[1..]),
    }
}
