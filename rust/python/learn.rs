//! `learn_cut`: where a chunk template cuts a payload (`providers/_chunk_template.py`), found
//! and proved in one call.
//!
//! A template is `prefix` + JSON string body + `rest`, cut around the one string of a parsed
//! chunk that varies from chunk to chunk (a text delta, an argument fragment). The cut is
//! proved, not assumed: the payload with `probe` put in the body's place must parse to the
//! chunk with only the string at `path` changed (and, for a padded chunk, only the padding
//! value beside it), or no template is made. Python's `_learn_cut` finds the same cuts with
//! `json.loads` and dictionary compares; a stream learns its templates while its first
//! deltas arrive, so that cost was a good part of a short stream's whole.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyString};

use jiter::JsonValue;

/// One step of the path to the varying string: an object key or an array index.
pub enum PathStep {
    Key(String),
    Index(usize),
}

impl PathStep {
    /// A `str` or a non-negative `int` (without the exceptions an extraction that tries one
    /// type, then the other, would raise and drop: they cost more than the learning).
    fn of(item: &Bound<'_, PyAny>) -> Option<Self> {
        if let Ok(key) = item.cast::<PyString>() {
            return key.to_str().ok().map(|k| PathStep::Key(k.to_owned()));
        }
        item.cast::<PyInt>()
            .ok()?
            .extract::<usize>()
            .ok()
            .map(PathStep::Index)
    }
}

/// `(prefix, rest, mode, padding_end)` as `_chunk_template._Cut` has them.
type Cut = (String, String, u8, String);

const EXACT: u8 = 0;
const PADDED_VALUE: u8 = 1;
const PADDED_END: u8 = 2;

/// The cut of `data` around the string `text` found at `path` of the chunk `data` parses to,
/// or `None` when there is none this can prove. `padding_keys` are the top-level string
/// fields a chunk may vary on every chunk (`obfuscation`, `p`).
#[pyfunction]
#[allow(clippy::needless_pass_by_value)] // extracted from Python: a Vec either way
pub fn learn_cut(
    py: Python<'_>,
    data: &[u8],
    path: &Bound<'_, PyAny>,
    text: &Bound<'_, PyString>,
    padding_keys: Vec<String>,
) -> PyResult<Option<Cut>> {
    let Some(path) = path
        .try_iter()?
        .map(|item| item.ok().as_ref().and_then(PathStep::of))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let (Some(PathStep::Key(key)), Ok(data), Ok(plain)) =
        (path.last(), std::str::from_utf8(data), text.to_str())
    else {
        return Ok(None); // a lone surrogate, bytes that are not UTF-8: never read by a cut
    };
    let Some(body) = readable_body(py, text, plain)? else {
        return Ok(None);
    };
    let Ok(chunk) = JsonValue::parse(data.as_bytes(), false) else {
        return Ok(None);
    };
    for separator in [":", ": "] {
        let marker = format!("\"{key}\"{separator}\"{body}\"");
        let Some(at) = unique(data, &marker) else {
            continue;
        };
        let start = at + marker.len() - body.len() - 1;
        let (prefix, rest) = (&data[..start], &data[start + body.len()..]);
        let edit = Edit {
            path: &path,
            value: "probe",
        };
        if !parses_to(&format!("{prefix}probe{rest}"), &chunk, &[edit]) {
            return Ok(None);
        }
        if let Some(cut) = padded_value(prefix, rest, separator, &chunk, &path, &padding_keys) {
            return Ok(Some(cut));
        }
        if let Some(core) = rest.strip_suffix(" }").map(|r| r.trim_end_matches(' ')) {
            let spaced = ["}", "   }"]
                .iter()
                .all(|end| parses_to(&format!("{prefix}probe{core}{end}"), &chunk, &[edit]));
            if spaced {
                return Ok(Some((
                    prefix.into(),
                    core.into(),
                    PADDED_END,
                    String::new(),
                )));
            }
        }
        return Ok(Some((prefix.into(), rest.into(), EXACT, String::new())));
    }
    Ok(None)
}

/// The cut of a chunk whose top-level padding value (one of `padding_keys`) lies in `rest`:
/// `rest` up to that value, and what follows it.
fn padded_value(
    prefix: &str,
    rest: &str,
    separator: &str,
    chunk: &JsonValue<'_>,
    path: &[PathStep],
    padding_keys: &[String],
) -> Option<Cut> {
    let JsonValue::Object(fields) = chunk else {
        return None;
    };
    for padding in padding_keys {
        let Some((_, JsonValue::Str(value))) = fields.iter().rev().find(|(k, _)| k == padding)
        else {
            continue;
        };
        let opening = format!("\"{padding}\"{separator}\"{value}\"");
        let Some(at) = unique(rest, &opening) else {
            continue;
        };
        let cut = at + opening.len() - value.len() - 1;
        let (head, tail) = (&rest[..cut], &rest[cut + value.len()..]);
        let key_path = [PathStep::Key(padding.clone())];
        let edits = [
            Edit {
                path,
                value: "probe",
            },
            Edit {
                path: &key_path,
                value: "Zz9",
            },
        ];
        if parses_to(&format!("{prefix}probe{head}Zz9{tail}"), chunk, &edits) {
            return Some((prefix.into(), head.into(), PADDED_VALUE, tail.into()));
        }
    }
    None
}

/// `text` as JSON writes it between quotes (`json.encoder.encode_basestring`), when the
/// template's reader decodes that body back to `text` (`_chunk_template.decode_body`): not
/// empty, no `\u` escape, and printable by Python's rule when nothing is escaped.
fn readable_body(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    plain: &str,
) -> PyResult<Option<String>> {
    if plain.is_empty() {
        return Ok(None);
    }
    let mut body = String::with_capacity(plain.len() + 8);
    let mut escaped = false;
    for c in plain.chars() {
        let escape = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            '\0'..='\u{1f}' => return Ok(None), // a `\u` escape: left to the parser
            _ => {
                body.push(c);
                continue;
            }
        };
        escaped = true;
        body.push_str(escape);
    }
    if !escaped {
        let printable = if plain.is_ascii() {
            plain.bytes().all(|b| (b' '..=b'~').contains(&b))
        } else {
            text.call_method0(intern!(py, "isprintable"))?.is_truthy()?
        };
        if !printable {
            return Ok(None);
        }
    }
    Ok(Some(body))
}

/// Where `needle` is in `haystack`, when it is there exactly once.
fn unique(haystack: &str, needle: &str) -> Option<usize> {
    let at = haystack.find(needle)?;
    haystack[at + 1..].find(needle).is_none().then_some(at)
}

/// A string of the chunk replaced: the string at `path` becomes `value`.
#[derive(Clone, Copy)]
struct Edit<'a> {
    path: &'a [PathStep],
    value: &'a str,
}

/// Whether `probe` parses to `chunk` with the `edits` made and nothing else changed.
fn parses_to(probe: &str, chunk: &JsonValue<'_>, edits: &[Edit<'_>]) -> bool {
    JsonValue::parse(probe.as_bytes(), false).is_ok_and(|value| same(chunk, &value, edits))
}

/// `a` with `edits` made is `b`. Objects compare key by key in order (the probe only changes
/// a string, so its keys come in the same order), which is stricter than a dictionary compare
/// and so never proves a cut that one would refuse.
fn same(old: &JsonValue<'_>, new: &JsonValue<'_>, edits: &[Edit<'_>]) -> bool {
    if let Some(edit) = edits.iter().find(|e| e.path.is_empty()) {
        return matches!((old, new), (JsonValue::Str(_), JsonValue::Str(v)) if v == edit.value);
    }
    let below = |matches: &dyn Fn(&PathStep) -> bool| -> Vec<Edit<'_>> {
        edits
            .iter()
            .filter(|e| matches(&e.path[0]))
            .map(|e| Edit {
                path: &e.path[1..],
                value: e.value,
            })
            .collect()
    };
    match (old, new) {
        (JsonValue::Object(olds), JsonValue::Object(news)) => {
            olds.len() == news.len()
                && olds
                    .iter()
                    .zip(news.iter())
                    .all(|((key, old), (new_key, new))| {
                        let here = below(&|step| matches!(step, PathStep::Key(k) if k == key));
                        key == new_key && same(old, new, &here)
                    })
        }
        (JsonValue::Array(olds), JsonValue::Array(news)) => {
            olds.len() == news.len()
                && olds
                    .iter()
                    .zip(news.iter())
                    .enumerate()
                    .all(|(at, (old, new))| {
                        let here = below(&|step| matches!(step, PathStep::Index(i) if *i == at));
                        same(old, new, &here)
                    })
        }
        _ => edits.is_empty() && old == new,
    }
}
