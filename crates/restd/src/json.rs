//! Answers as slurmrestd 22.05 writes them: JSON with keys in the order the
//! handlers give them, two spaces of indent, `/` escaped as `\/`, an empty
//! array as `[` and `]` on two lines, no newline at the end (the captures
//! in the reference are byte for byte this).

use hyper::body::Bytes;

/// A JSON value whose objects keep their keys' order.
#[derive(Clone, Debug, PartialEq)]
pub enum J {
    /// `null`.
    Null,
    /// `true`/`false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number with a fraction (written with at least one decimal).
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<J>),
    /// An object, in key order.
    Obj(Vec<(String, J)>),
    /// A value already written as slurmrestd writes it (UTF-8), at the
    /// indent of the place it is put in (`jobcache`: a job of a listing,
    /// kept between listings); written out as it is.
    Raw(Bytes),
}

/// An object from `(key, value)` pairs, in order.
pub fn obj<K: Into<String>>(pairs: Vec<(K, J)>) -> J {
    J::Obj(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

/// An array of strings.
pub fn strs<S: AsRef<str>>(items: &[S]) -> J {
    J::Arr(
        items
            .iter()
            .map(|s| J::Str(s.as_ref().to_string()))
            .collect(),
    )
}

impl From<&str> for J {
    fn from(s: &str) -> J {
        J::Str(s.to_string())
    }
}
impl From<String> for J {
    fn from(s: String) -> J {
        J::Str(s)
    }
}
impl From<&String> for J {
    fn from(s: &String) -> J {
        J::Str(s.clone())
    }
}
impl From<bool> for J {
    fn from(b: bool) -> J {
        J::Bool(b)
    }
}
impl From<i64> for J {
    fn from(n: i64) -> J {
        J::Int(n)
    }
}
impl From<i32> for J {
    fn from(n: i32) -> J {
        J::Int(n.into())
    }
}
impl From<u32> for J {
    fn from(n: u32) -> J {
        J::Int(n.into())
    }
}
impl From<u64> for J {
    fn from(n: u64) -> J {
        J::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}
impl From<f64> for J {
    fn from(n: f64) -> J {
        J::Float(n)
    }
}
impl<T: Into<J>> From<Option<T>> for J {
    fn from(o: Option<T>) -> J {
        o.map_or(J::Null, Into::into)
    }
}
impl From<Vec<J>> for J {
    fn from(v: Vec<J>) -> J {
        J::Arr(v)
    }
}

impl J {
    /// A value written at `level` of indent (an item of an array at
    /// `level - 1`), for [`J::Raw`].
    pub fn to_slurm_string_at(&self, level: usize) -> String {
        let mut out = String::with_capacity(4096);
        write(&mut out, self, level);
        out
    }

    /// The bytes of the [`J::Raw`] values inside, to size the answer.
    fn raw_len(&self) -> usize {
        match self {
            J::Raw(text) => text.len(),
            J::Arr(items) => items.iter().map(J::raw_len).sum(),
            J::Obj(pairs) => pairs.iter().map(|(_, v)| v.raw_len()).sum(),
            _ => 0,
        }
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Appends `key: value` to an object (nothing for other values).
    pub fn push(&mut self, key: &str, value: J) {
        if let J::Obj(pairs) = self {
            pairs.push((key.to_string(), value));
        }
    }

    /// As slurmrestd writes it.
    pub fn to_slurm_string(&self) -> String {
        let mut out = String::with_capacity(4096 + self.raw_len());
        write(&mut out, self, 0);
        out
    }

    /// [`J::to_slurm_string`] in pieces, for an answer's body: the text
    /// between [`J::Raw`] values, and each raw value as it is kept, not
    /// copied (a listing of 10,000 jobs is 30 MB of kept text).
    pub fn to_slurm_chunks(&self) -> Vec<Bytes> {
        let mut out = Chunks::default();
        write(&mut out, self, 0);
        out.finish()
    }

    /// Into `serde_json` (key order lost), for tests and comparisons.
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Int(n) => Value::from(*n),
            J::Float(f) => Value::from(*f),
            J::Str(s) => Value::String(s.clone()),
            J::Arr(a) => Value::Array(a.iter().map(J::to_value).collect()),
            J::Obj(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), v.to_value())).collect()),
            J::Raw(text) => serde_json::from_slice(text).unwrap_or(Value::Null),
        }
    }
}

/// Where an answer is written: one string, or [`Chunks`].
trait Sink: std::fmt::Write {
    fn text(&mut self, s: &str);
    fn raw(&mut self, text: &Bytes);
}

impl Sink for String {
    fn text(&mut self, s: &str) {
        self.push_str(s);
    }
    fn raw(&mut self, text: &Bytes) {
        self.push_str(std::str::from_utf8(text).unwrap_or("null"));
    }
}

/// An answer in pieces ([`J::to_slurm_chunks`]).
#[derive(Default)]
struct Chunks {
    parts: Vec<Bytes>,
    text: String,
}

impl Chunks {
    fn flush(&mut self) {
        if !self.text.is_empty() {
            self.parts.push(Bytes::from(std::mem::take(&mut self.text)));
        }
    }

    fn finish(mut self) -> Vec<Bytes> {
        self.flush();
        self.parts
    }
}

impl std::fmt::Write for Chunks {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

impl Sink for Chunks {
    fn text(&mut self, s: &str) {
        self.text.push_str(s);
    }
    fn raw(&mut self, text: &Bytes) {
        self.flush();
        self.parts.push(text.clone());
    }
}

fn indent(out: &mut impl Sink, level: usize) {
    for _ in 0..level {
        out.text("  ");
    }
}

fn write_str(out: &mut impl Sink, s: &str) {
    out.text("\"");
    // Runs of characters that need no escape are copied at once; every
    // character escaped is ASCII, so `start..i` are character boundaries.
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'/' => "\\/",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            b if b < 0x20 => {
                out.text(&s[start..i]);
                let _ = write!(out, "\\u{:04x}", b);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.text(&s[start..i]);
        out.text(escaped);
        start = i + 1;
    }
    out.text(&s[start..]);
    out.text("\"");
}

fn write(out: &mut impl Sink, v: &J, level: usize) {
    match v {
        J::Null => out.text("null"),
        J::Bool(b) => out.text(if *b { "true" } else { "false" }),
        J::Int(n) => {
            let _ = write!(out, "{n}");
        }
        J::Float(f) if f.is_finite() => {
            let s = f.to_string();
            out.text(&s);
            if !s.contains(['.', 'e', 'E']) {
                out.text(".0");
            }
        }
        J::Float(_) => out.text("null"),
        J::Str(s) => write_str(out, s),
        J::Raw(text) => out.raw(text),
        J::Arr(items) => {
            out.text("[\n");
            for (i, item) in items.iter().enumerate() {
                indent(out, level + 1);
                write(out, item, level + 1);
                if i + 1 < items.len() {
                    out.text(",");
                }
                out.text("\n");
            }
            indent(out, level);
            out.text("]");
        }
        J::Obj(pairs) => {
            out.text("{\n");
            for (i, (k, item)) in pairs.iter().enumerate() {
                indent(out, level + 1);
                write_str(out, k);
                out.text(": ");
                write(out, item, level + 1);
                if i + 1 < pairs.len() {
                    out.text(",");
                }
                out.text("\n");
            }
            indent(out, level);
            out.text("}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_slurmrestd_writes() {
        let v = obj(vec![
            ("type", J::from("openapi/v0.0.38")),
            ("errors", J::Arr(vec![])),
            ("w", J::Float(2.0)),
        ]);
        assert_eq!(
            v.to_slurm_string(),
            "{\n  \"type\": \"openapi\\/v0.0.38\",\n  \"errors\": [\n  ],\n  \"w\": 2.0\n}"
        );
    }
}
