//! JSON records with their line numbers, and field access whose errors name the
//! file, the line and the field path (`hits[3].docid`).

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::{io, Error, Result};

/// One JSON value of a file and the 1-based line where it starts.
pub(crate) struct Record {
    pub line: usize,
    pub value: Value,
}

/// Reads a file of JSON records: one JSON array (each element a record) when the
/// text starts with `[`, otherwise JSON lines (blank lines skipped).
pub(crate) fn read_records(path: &Path) -> Result<Vec<Record>> {
    parse_records(path, &io::read_text(path)?)
}

fn parse_records(path: &Path, text: &str) -> Result<Vec<Record>> {
    if !text.trim_start().starts_with('[') {
        return (text.lines().enumerate())
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| match serde_json::from_str(l) {
                Ok(value) => Ok(Record { line: i + 1, value }),
                Err(e) => Err(syntax_error(path, i, &e)),
            })
            .collect();
    }
    let raws: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| syntax_error(path, 0, &e))?;
    // Each raw value borrows its text from `text`: its offset gives its line.
    let (mut line, mut pos) = (1, 0);
    raws.into_iter()
        .map(|raw| {
            let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
            line += text.as_bytes()[pos..start]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            pos = start;
            let value =
                serde_json::from_str(raw.get()).map_err(|e| syntax_error(path, line - 1, &e))?;
            Ok(Record { line, value })
        })
        .collect()
}

/// A serde_json error at `line_offset` + its own line, with the column kept in
/// the message (serde_json's " at line L column C" suffix is replaced).
fn syntax_error(path: &Path, line_offset: usize, e: &serde_json::Error) -> Error {
    let msg = e.to_string();
    let msg = msg.rfind(" at line ").map_or(&msg[..], |i| &msg[..i]);
    Error::parse(
        path,
        line_offset + e.line(),
        "json",
        format!("{msg} (column {})", e.column()),
    )
}

/// What a JSON value is, for messages: `string "x"`, `number 5`, `an array`.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.chars().count() <= 40 => format!("string {s:?}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A JSON object inside a record, with the path that leads to it.
pub(crate) struct Obj<'a> {
    path: &'a Path,
    line: usize,
    prefix: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    /// The record itself, which must be an object.
    pub(crate) fn new(path: &'a Path, record: &'a Record) -> Result<Self> {
        Self::at(path, record.line, String::new(), &record.value)
    }

    fn at(path: &'a Path, line: usize, prefix: String, v: &'a Value) -> Result<Self> {
        match v {
            Value::Object(map) => Ok(Obj {
                path,
                line,
                prefix,
                map,
            }),
            other => {
                let field = if prefix.is_empty() { "record" } else { &prefix };
                let msg = format!("expected an object, found {}", describe(other));
                Err(Error::parse(path, line, field, msg))
            }
        }
    }

    pub(crate) fn line(&self) -> usize {
        self.line
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// The full path of `key` (`hits[3].docid`).
    pub(crate) fn field(&self, key: &str) -> String {
        match self.prefix.as_str() {
            "" => key.to_owned(),
            prefix => format!("{prefix}.{key}"),
        }
    }

    /// An error about `key` of this object.
    pub(crate) fn error(&self, key: &str, message: impl std::fmt::Display) -> Error {
        Error::parse(self.path, self.line, self.field(key), message)
    }

    /// The value of `key`; missing or null is an error.
    pub(crate) fn value(&self, key: &str) -> Result<&'a Value> {
        match self.map.get(key) {
            None | Some(Value::Null) => Err(self.error(key, "missing")),
            Some(v) => Ok(v),
        }
    }

    /// Deserializes `v`, reporting failures against `key` (relative to this object).
    pub(crate) fn parse<T: DeserializeOwned>(&self, key: &str, v: &Value) -> Result<T> {
        T::deserialize(v).map_err(|e| self.error(key, e))
    }

    pub(crate) fn get<T: DeserializeOwned>(&self, key: &str) -> Result<T> {
        self.parse(key, self.value(key)?)
    }

    /// Missing or null is `None`.
    pub(crate) fn opt<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => self.parse(key, v).map(Some),
        }
    }

    /// An id: a string, or a number taken by its JSON text (`264014` -> "264014").
    pub(crate) fn id(&self, key: &str) -> Result<String> {
        match self.value(key)? {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            other => Err(self.error(
                key,
                format!("expected a string or a number, found {}", describe(other)),
            )),
        }
    }

    pub(crate) fn array(&self, key: &str) -> Result<&'a [Value]> {
        match self.value(key)? {
            Value::Array(items) => Ok(items),
            other => Err(self.error(key, format!("expected an array, found {}", describe(other)))),
        }
    }

    /// The elements of array `key`, each an object (`key[i]`).
    pub(crate) fn objects(&self, key: &str) -> Result<Vec<Obj<'a>>> {
        (self.array(key)?.iter().enumerate())
            .map(|(i, v)| Obj::at(self.path, self.line, self.field(&format!("{key}[{i}]")), v))
            .collect()
    }
}
