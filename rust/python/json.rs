//! `JsonAccumulator` and `JsonChange` for Python.
//!
//! `push` runs the validating scanner of [`crate::json::Accumulator`]. `partial` runs a second
//! scanner over the text that arrived since the previous call and extends the Python value it
//! built last time, so the preview costs what arrived, not what is there. `value` parses the
//! whole text once with jiter (which builds Python objects straight from the bytes).

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use super::errors::json_error;
use super::sse::parse_json;
use super::template::CutText;
use crate::json::{Accumulator, ErrorKind, Events, JsonError, Literal, Scanner};
use crate::surrogates;

#[cold]
fn internal(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("JsonAccumulator: {what}"))
}

fn is_high_surrogate(unit: u16) -> bool {
    surrogates::is_high(unit.into())
}

fn is_low_surrogate(unit: u16) -> bool {
    surrogates::is_low(unit.into())
}

/// Decoded string text not yet handed to Python. Lone surrogates (legal in JSON escapes, as
/// in `json.loads`) are kept in their 3-byte generalized UTF-8 form and decoded with
/// `surrogatepass`; a `\u` high surrogate waits in `high` until the next escape says whether
/// it pairs.
#[derive(Default)]
struct TextBuf {
    bytes: Vec<u8>,
    lone: bool,
    high: Option<u16>,
}

impl TextBuf {
    fn clear(&mut self) {
        self.bytes.clear();
        self.lone = false;
        self.high = None;
    }

    /// No text is waiting (a pending high surrogate aside).
    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn push_str(&mut self, s: &str) {
        self.settle();
        self.bytes.extend_from_slice(s.as_bytes());
    }

    fn push_unit(&mut self, unit: u16) {
        if let Some(high) = self.high.take() {
            if is_low_surrogate(unit) {
                let c = surrogates::combine(high.into(), unit.into());
                self.push_char(c);
                return;
            }
            self.push_lone(high);
        }
        if is_high_surrogate(unit) {
            self.high = Some(unit);
        } else if is_low_surrogate(unit) {
            self.push_lone(unit);
        } else {
            self.push_char(u32::from(unit));
        }
    }

    fn push_char(&mut self, c: u32) {
        if let Some(c) = char::from_u32(c) {
            let mut buf = [0; 4];
            self.bytes
                .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }

    /// The high surrogate waiting for a partner gets none.
    fn settle(&mut self) {
        if let Some(high) = self.high.take() {
            self.push_lone(high);
        }
    }

    fn push_lone(&mut self, unit: u16) {
        let [hi, lo] = unit.to_be_bytes();
        self.bytes.extend_from_slice(&[
            0xE0 | (hi >> 4),
            0x80 | ((hi & 0x0F) << 2) | (lo >> 6),
            0x80 | (lo & 0x3F),
        ]);
        self.lone = true;
    }

    /// The waiting text as a `str`, emptying the buffer (a pending high surrogate stays).
    fn take<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        let s = self.to_py(py)?;
        self.bytes.clear();
        self.lone = false;
        Ok(s)
    }

    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        if self.lone {
            return Ok(PyBytes::new(py, &self.bytes)
                .call_method1("decode", ("utf-8", "surrogatepass"))?
                .cast_into::<PyString>()?);
        }
        // SAFETY: without a lone surrogate the buffer only ever received `&str` bytes and
        // encoded `char`s, so it is UTF-8 (and Python checks again while decoding it).
        let text = unsafe { std::str::from_utf8_unchecked(&self.bytes) };
        Ok(PyString::new(py, text))
    }
}

/// Object keys repeat (arrays of objects): the `str` made for a key is kept in a small
/// direct-mapped cache and reused, which also makes the dict insertions cheaper. The cache
/// starts empty and doubles as distinct keys fill it, up to `SLOTS`: an accumulator whose
/// value has few keys (most tool calls) holds a few slots, not the 6 KiB of a full table.
#[derive(Default)]
struct KeyCache {
    /// A power of two long (or empty).
    slots: Vec<Option<CachedKey>>,
    filled: usize,
    /// Bytes of the cached keys' texts.
    key_bytes: usize,
}

/// A key's text and the `str` made for it.
type CachedKey = (Box<[u8]>, Py<PyString>);

/// FNV-1a.
fn key_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl KeyCache {
    const SLOTS: usize = 256;
    const FIRST: usize = 8;
    const LONGEST: usize = 64;

    fn index(hash: u64, len: usize) -> usize {
        usize::try_from(hash % (len.max(1) as u64)).unwrap_or(0)
    }

    /// Double the table (rehashing what it holds) once it is half full.
    fn grow(&mut self) {
        let len = (self.slots.len() * 2).clamp(Self::FIRST, Self::SLOTS);
        let old = std::mem::take(&mut self.slots);
        self.slots = (0..len).map(|_| None).collect();
        self.filled = 0;
        self.key_bytes = 0;
        for (bytes, key) in old.into_iter().flatten() {
            let at = Self::index(key_hash(&bytes), len);
            if let Some(slot) = self.slots.get_mut(at) {
                if let Some((gone, _)) = slot.as_ref() {
                    self.key_bytes -= gone.len();
                } else {
                    self.filled += 1;
                }
                self.key_bytes += bytes.len();
                *slot = Some((bytes, key));
            }
        }
    }

    fn key<'py>(&mut self, py: Python<'py>, buf: &TextBuf) -> PyResult<Bound<'py, PyString>> {
        if buf.lone || buf.bytes.len() > Self::LONGEST {
            return buf.to_py(py);
        }
        if self.filled * 2 >= self.slots.len() && self.slots.len() < Self::SLOTS {
            self.grow();
        }
        let index = Self::index(key_hash(&buf.bytes), self.slots.len());
        let Some(slot) = self.slots.get_mut(index) else {
            return buf.to_py(py);
        };
        if let Some((bytes, key)) = slot {
            if **bytes == *buf.bytes {
                return Ok(key.bind(py).clone());
            }
            self.key_bytes -= bytes.len();
        } else {
            self.filled += 1;
        }
        let key = buf.to_py(py)?;
        self.key_bytes += buf.bytes.len();
        *slot = Some((buf.bytes.clone().into_boxed_slice(), key.clone().unbind()));
        Ok(key)
    }

    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Option<CachedKey>>() + self.key_bytes
    }
}

/// Where a value sits: the root, a member of the innermost object, an item of the innermost
/// array.
enum Slot {
    Root,
    Key(Py<PyString>),
    Index(usize),
}

enum Container {
    Dict(Py<PyDict>),
    List(Py<PyList>),
}

struct Frame {
    container: Container,
    /// Where this container sits in its parent.
    slot: Slot,
    /// Objects: the key of the member being read.
    key: Option<Py<PyString>>,
    /// Arrays: the items so far.
    len: usize,
    /// The container's path, built the first time a change inside it is reported.
    path: Option<Py<PyTuple>>,
}

/// The string being read; `slot` is `None` until it is placed in its container.
struct OpenString {
    slot: Option<Slot>,
}

/// The Python value under construction.
#[derive(Default)]
struct Tree {
    root: Option<Py<PyAny>>,
    frames: Vec<Frame>,
    in_key: bool,
    key: TextBuf,
    keys: KeyCache,
    string: TextBuf,
    open: Option<OpenString>,
    number: String,
}

impl Tree {
    /// Heap bytes held by the builder itself (the Python objects it made aside).
    fn heap_bytes(&self) -> usize {
        self.frames.capacity() * std::mem::size_of::<Frame>()
            + self.key.bytes.capacity()
            + self.string.bytes.capacity()
            + self.number.capacity()
            + self.keys.heap_bytes()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChangeKind {
    Set,
    Grew,
    Completed,
}

impl ChangeKind {
    fn name(self) -> &'static str {
        match self {
            ChangeKind::Set => "set",
            ChangeKind::Grew => "grew",
            ChangeKind::Completed => "completed",
        }
    }
}

/// One change to the value returned by `JsonAccumulator.partial()`, since the previous call.
///
/// ``kind`` is one of:
///
/// - ``"set"``: a value appeared at ``path`` (a new member or item, the root, or a duplicate
///   key's new value replacing the old one). Read it from the partial value.
/// - ``"grew"``: the string at ``path``, reported before, got longer; ``text`` is what was
///   appended (so a view can append it instead of re-reading the string).
/// - ``"completed"``: the value at ``path`` is finished and will not change again: a string
///   closed, an array or object closed, or a number or literal read (those are reported
///   ``"set"`` and ``"completed"`` together).
///
/// ``path`` is a tuple of object keys (``str``) and array indices (``int``); ``()`` is the
/// root.
#[pyclass(frozen, module = "streamfold")]
pub struct JsonChange {
    path: Py<PyTuple>,
    kind: ChangeKind,
    text: Option<Py<PyString>>,
}

#[pymethods]
impl JsonChange {
    #[new]
    #[pyo3(signature = (path, kind, text = None))]
    fn new(
        path: Bound<'_, PyTuple>,
        kind: &str,
        text: Option<Bound<'_, PyString>>,
    ) -> PyResult<Self> {
        let kind = match kind {
            "set" => ChangeKind::Set,
            "grew" => ChangeKind::Grew,
            "completed" => ChangeKind::Completed,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "kind must be 'set', 'grew' or 'completed', not {kind:?}"
                )))
            }
        };
        Ok(JsonChange {
            path: path.unbind(),
            kind,
            text: text.map(Bound::unbind),
        })
    }

    #[getter]
    fn path<'py>(&self, py: Python<'py>) -> Bound<'py, PyTuple> {
        self.path.bind(py).clone()
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// For ``"grew"``: the text appended to the string; otherwise ``None``.
    #[getter]
    fn text<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyString>> {
        self.text.as_ref().map(|t| t.bind(py).clone())
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(other) = other.cast::<JsonChange>() else {
            return Ok(false);
        };
        let other = other.get();
        if self.kind != other.kind || !self.path.bind(py).eq(other.path.bind(py))? {
            return Ok(false);
        }
        match (&self.text, &other.text) {
            (None, None) => Ok(true),
            (Some(a), Some(b)) => a.bind(py).as_any().eq(b.bind(py)),
            _ => Ok(false),
        }
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        let text = self
            .text(py)
            .map_or_else(|| py.None().into_bound(py), Bound::into_any);
        (self.path.bind(py), self.kind.name(), text)
            .into_pyobject(py)?
            .hash()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let path = self.path.bind(py).repr()?;
        Ok(match &self.text {
            Some(t) => format!(
                "JsonChange(path={path}, kind='{}', text={})",
                self.kind.name(),
                t.bind(py).repr()?
            ),
            None => format!("JsonChange(path={path}, kind='{}')", self.kind.name()),
        })
    }
}

fn number_object<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    if !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        if let Ok(i) = text.parse::<i64>() {
            return i.into_bound_py_any(py);
        }
        // Python's own `int()`, with its digit limit, exactly as json.loads.
        return py.get_type::<PyInt>().call1((text,));
    }
    // Rust and Python both round decimal text to the nearest double, ties to even.
    let f: f64 = text
        .parse()
        .map_err(|_| internal(&format!("unreadable number {text:?}")))?;
    Ok(PyFloat::new(py, f).into_any())
}

fn literal_object(py: Python<'_>, literal: Literal) -> Bound<'_, PyAny> {
    match literal {
        Literal::True => PyBool::new(py, true).to_owned().into_any(),
        Literal::False => PyBool::new(py, false).to_owned().into_any(),
        Literal::Null => py.None().into_bound(py),
        Literal::NaN => PyFloat::new(py, f64::NAN).into_any(),
        Literal::Infinity => PyFloat::new(py, f64::INFINITY).into_any(),
        Literal::NegInfinity => PyFloat::new(py, f64::NEG_INFINITY).into_any(),
    }
}

/// `left + right`, in place when `left` is referenced only by us: `CPython` then resizes the
/// string instead of copying it, which keeps a long string grown by small pieces linear.
fn append<'py>(
    left: Bound<'py, PyAny>,
    right: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = left.py();
    let mut ptr = left.cast_into::<PyString>()?.into_ptr();
    // SAFETY: `ptr` is a strong reference to a `str`, which `PyUnicode_Append` consumes and
    // replaces with a strong reference to the result, or with NULL and a Python exception.
    unsafe {
        pyo3::ffi::PyUnicode_Append(&raw mut ptr, right.as_ptr());
        Bound::from_owned_ptr_or_err(py, ptr)
    }
}

/// The [`Events`] sink that extends a [`Tree`]; the first Python error stops it.
struct Build<'a, 'py> {
    py: Python<'py>,
    tree: &'a mut Tree,
    changes: Option<&'a mut Vec<JsonChange>>,
    err: Option<PyErr>,
}

impl<'py> Build<'_, 'py> {
    fn run(&mut self, step: impl FnOnce(&mut Self) -> PyResult<()>) {
        if self.err.is_none() {
            if let Err(e) = step(self) {
                self.err = Some(e);
            }
        }
    }

    fn top(&mut self) -> PyResult<&mut Frame> {
        self.tree
            .frames
            .last_mut()
            .ok_or_else(|| internal("no open container"))
    }

    /// Put a new value in its place (a duplicate key replaces the old value, as in
    /// json.loads).
    fn place(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Slot> {
        let py = self.py;
        let Some(frame) = self.tree.frames.last_mut() else {
            self.tree.root = Some(value.clone().unbind());
            return Ok(Slot::Root);
        };
        match &frame.container {
            Container::Dict(dict) => {
                let key = frame
                    .key
                    .as_ref()
                    .ok_or_else(|| internal("member without a key"))?;
                dict.bind(py).set_item(key, value)?;
                Ok(Slot::Key(key.clone_ref(py)))
            }
            Container::List(list) => {
                list.bind(py).append(value)?;
                frame.len += 1;
                Ok(Slot::Index(frame.len - 1))
            }
        }
    }

    /// Replace the open string with itself plus `delta`, taking it out of its container
    /// first so that, unless the caller kept a reference, ours is the only one.
    fn grow(&mut self, slot: &Slot, delta: &Bound<'py, PyString>) -> PyResult<()> {
        let py = self.py;
        let none = py.None().into_bound(py);
        match slot {
            Slot::Root => {
                let old = self.tree.root.take().ok_or_else(|| internal("no root"))?;
                self.tree.root = Some(append(old.into_bound(py), delta)?.unbind());
            }
            Slot::Key(key) => {
                let Container::Dict(dict) = &self.top()?.container else {
                    return Err(internal("member of a non-object"));
                };
                let dict = dict.bind(py).clone();
                let old = dict.get_item(key)?.ok_or_else(modified)?;
                dict.set_item(key, &none)?;
                dict.set_item(key, append(old, delta)?)?;
            }
            Slot::Index(index) => {
                let Container::List(list) = &self.top()?.container else {
                    return Err(internal("item of a non-array"));
                };
                let list = list.bind(py).clone();
                let old = list.get_item(*index).map_err(|_| modified())?;
                list.set_item(*index, &none)?;
                list.set_item(*index, append(old, delta)?)?;
            }
        }
        Ok(())
    }

    fn extend(&self, parent: &Bound<'py, PyTuple>, slot: &Slot) -> PyResult<Bound<'py, PyTuple>> {
        let py = self.py;
        let last = match slot {
            Slot::Root => return Ok(parent.clone()),
            Slot::Key(key) => key.bind(py).clone().into_any(),
            Slot::Index(index) => index.into_bound_py_any(py)?,
        };
        let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(parent.len() + 1);
        items.extend(parent.iter());
        items.push(last);
        PyTuple::new(py, items)
    }

    fn frame_path(&mut self, depth: usize) -> PyResult<Bound<'py, PyTuple>> {
        let py = self.py;
        let frame = self
            .tree
            .frames
            .get(depth)
            .ok_or_else(|| internal("no such frame"))?;
        if let Some(path) = &frame.path {
            return Ok(path.bind(py).clone());
        }
        let parent = match depth.checked_sub(1) {
            Some(up) => self.frame_path(up)?,
            None => PyTuple::empty(py),
        };
        let frame = self
            .tree
            .frames
            .get(depth)
            .ok_or_else(|| internal("no such frame"))?;
        let path = self.extend(&parent, &frame.slot)?;
        if let Some(frame) = self.tree.frames.get_mut(depth) {
            frame.path = Some(path.clone().unbind());
        }
        Ok(path)
    }

    /// The path of a value in the innermost container.
    fn value_path(&mut self, slot: &Slot) -> PyResult<Bound<'py, PyTuple>> {
        match self.tree.frames.len().checked_sub(1) {
            Some(top) => {
                let parent = self.frame_path(top)?;
                self.extend(&parent, slot)
            }
            None => Ok(PyTuple::empty(self.py)),
        }
    }

    fn record(
        &mut self,
        kind: ChangeKind,
        path: &Bound<'py, PyTuple>,
        text: Option<&Bound<'py, PyString>>,
    ) {
        if let Some(changes) = self.changes.as_deref_mut() {
            changes.push(JsonChange {
                path: path.clone().unbind(),
                kind,
                text: text.map(|t| t.clone().unbind()),
            });
        }
    }

    fn collecting(&self) -> bool {
        self.changes.is_some()
    }

    fn open_container(&mut self, container: Container) -> PyResult<()> {
        let py = self.py;
        let value = match &container {
            Container::Dict(d) => d.bind(py).clone().into_any(),
            Container::List(l) => l.bind(py).clone().into_any(),
        };
        let slot = self.place(&value)?;
        let path = if self.collecting() {
            let path = self.value_path(&slot)?;
            self.record(ChangeKind::Set, &path, None);
            Some(path.unbind())
        } else {
            None
        };
        self.tree.frames.push(Frame {
            container,
            slot,
            key: None,
            len: 0,
            path,
        });
        Ok(())
    }

    fn close_container(&mut self) -> PyResult<()> {
        if self.collecting() {
            let top = self.tree.frames.len().saturating_sub(1);
            let path = self.frame_path(top)?;
            self.record(ChangeKind::Completed, &path, None);
        }
        self.tree.frames.pop();
        Ok(())
    }

    /// A finished number or literal.
    fn scalar(&mut self, value: &Bound<'py, PyAny>) -> PyResult<()> {
        let slot = self.place(value)?;
        if self.collecting() {
            let path = self.value_path(&slot)?;
            self.record(ChangeKind::Set, &path, None);
            self.record(ChangeKind::Completed, &path, None);
        }
        Ok(())
    }

    /// Hand the open string's new text to Python: place it, or append to it in place.
    fn flush_string(&mut self, done: bool) -> PyResult<()> {
        let Some(open) = self.tree.open.take() else {
            return Ok(());
        };
        let slot = match open.slot {
            None => {
                let text = self.tree.string.take(self.py)?;
                let slot = self.place(text.as_any())?;
                if self.collecting() {
                    let path = self.value_path(&slot)?;
                    self.record(ChangeKind::Set, &path, None);
                }
                slot
            }
            Some(slot) => {
                if !self.tree.string.is_empty() {
                    let delta = self.tree.string.take(self.py)?;
                    self.grow(&slot, &delta)?;
                    if self.collecting() {
                        let path = self.value_path(&slot)?;
                        self.record(ChangeKind::Grew, &path, Some(&delta));
                    }
                }
                slot
            }
        };
        if done {
            if self.collecting() {
                let path = self.value_path(&slot)?;
                self.record(ChangeKind::Completed, &path, None);
            }
        } else {
            self.tree.open = Some(OpenString { slot: Some(slot) });
        }
        Ok(())
    }
}

#[cold]
fn modified() -> PyErr {
    PyRuntimeError::new_err(
        "JsonAccumulator: the value returned by partial() was modified; copy it before changing it",
    )
}

impl Events for Build<'_, '_> {
    fn begin_object(&mut self) {
        self.run(|b| b.open_container(Container::Dict(PyDict::new(b.py).unbind())));
    }
    fn end_object(&mut self) {
        self.run(Build::close_container);
    }
    fn begin_array(&mut self) {
        self.run(|b| b.open_container(Container::List(PyList::empty(b.py).unbind())));
    }
    fn end_array(&mut self) {
        self.run(Build::close_container);
    }
    fn begin_key(&mut self) {
        self.tree.in_key = true;
        self.tree.key.clear();
    }
    fn end_key(&mut self) {
        self.run(|b| {
            b.tree.in_key = false;
            b.tree.key.settle();
            let key = b.tree.keys.key(b.py, &b.tree.key)?.unbind();
            b.tree.key.clear();
            b.top()?.key = Some(key);
            Ok(())
        });
    }
    fn begin_string(&mut self) {
        self.tree.string.clear();
        self.tree.open = Some(OpenString { slot: None });
    }
    fn end_string(&mut self) {
        self.run(|b| {
            b.tree.string.settle();
            b.flush_string(true)
        });
    }
    fn text(&mut self, text: &str) {
        if self.tree.in_key {
            self.tree.key.push_str(text);
        } else {
            self.tree.string.push_str(text);
        }
    }
    fn code_unit(&mut self, unit: u16) {
        if self.tree.in_key {
            self.tree.key.push_unit(unit);
        } else {
            self.tree.string.push_unit(unit);
        }
    }
    fn number(&mut self, piece: &str) {
        self.tree.number.push_str(piece);
    }
    fn end_number(&mut self) {
        self.run(|b| {
            let value = number_object(b.py, &b.tree.number);
            b.tree.number.clear();
            b.scalar(&value?)
        });
    }
    fn literal(&mut self, literal: Literal) {
        self.run(|b| {
            b.tree.number.clear();
            b.scalar(&literal_object(b.py, literal))
        });
    }
}

/// The partial view: a scanner of its own, how much of the text it has read, the value.
#[derive(Default)]
struct PartialView {
    scanner: Scanner,
    consumed: usize,
    tree: Tree,
    /// A Python error met while building (only Python's int digit limit can cause one on
    /// valid JSON); every later call raises it again.
    failed: Option<PyErr>,
}

impl PartialView {
    /// Read `text` (the part after what was read before) into the tree.
    fn advance(
        &mut self,
        py: Python<'_>,
        text: &str,
        changes: Option<&mut Vec<JsonChange>>,
    ) -> PyResult<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone_ref(py));
        }
        let mut build = Build {
            py,
            tree: &mut self.tree,
            changes,
            err: None,
        };
        let scanned = self.scanner.feed(text, &mut build);
        build.run(|b| b.flush_string(false));
        self.consumed += text.len();
        let failure = match (build.err, scanned) {
            (Some(e), _) => e,
            (None, Err(e)) => internal(&format!("text validated earlier failed to scan: {e}")),
            (None, Ok(())) => return Ok(()),
        };
        self.failed = Some(failure.clone_ref(py));
        Err(failure)
    }

    fn value<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        match &self.tree.root {
            Some(root) => root.bind(py).clone(),
            None => py.None().into_bound(py),
        }
    }
}

/// Build the value of a complete text without jiter (the fallback of `value()`).
fn build_whole<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let mut view = PartialView::default();
    view.advance(py, text, None)?;
    let mut build = Build {
        py,
        tree: &mut view.tree,
        changes: None,
        err: None,
    };
    let finished = view.scanner.finish(&mut build);
    if let Some(e) = build.err {
        return Err(e);
    }
    finished.map_err(|e| json_error(py, &e))?;
    Ok(view.value(py))
}

struct Inner {
    acc: Accumulator,
    /// A high surrogate that ended the last fragment (a UTF-16 pair split between two
    /// fragments); it joins the text with its partner.
    high: Option<u16>,
    /// What pushes refused after a lone surrogate, left out of `acc` (whose text is UTF-8):
    /// the fragment from that surrogate on, then every later fragment. `text` ends with
    /// them, so the text is still every fragment joined, as after any other invalid
    /// character.
    tail: Vec<Py<PyString>>,
    view: PartialView,
}

/// Fragments of one JSON text in (tool-call arguments as they stream), its value out.
///
/// ``push(fragment)`` costs the length of the fragment: the text is validated as it arrives,
/// so ``is_complete`` is known at once and the first character that can never be part of valid
/// JSON raises :class:`InvalidJsonError` from the ``push`` that brings it (``offset`` is its
/// byte offset in the UTF-8 encoding of ``text``, ``expected`` says what could have come
/// there). That fragment is still kept in ``text``; after it the accumulator is broken: every
/// further ``push``, ``value()`` and ``partial()`` raises the same error, and each further
/// fragment is still appended to ``text`` (every fragment joined: nothing is lost). The accepted language is that of ``json.loads``: RFC 8259 plus ``NaN``,
/// ``Infinity`` and ``-Infinity``, no raw control characters in strings, whitespace limited to
/// space, tab, LF and CR, and at most 512 nested arrays and objects. Trailing whitespace after
/// the value is fine; anything else after it is invalid.
///
/// ``value()`` parses the whole text once (each call parses anew and returns a new object)
/// and equals ``json.loads(text)``: big integers, floats, escapes, surrogate pairs and lone
/// surrogates, duplicate keys (the last wins, in the first one's position). It raises
/// :class:`IncompleteJsonError` while the text is a valid prefix of a value (the empty text
/// included) and :class:`InvalidJsonError` once it can never be one. An integer longer than
/// Python's ``int`` digit limit raises Python's ``ValueError``, as in ``json.loads``.
///
/// ``partial()`` is the best current value of the text so far, for live views:
///
/// - finished members and items are present, in text order;
/// - an unfinished string appears as its prefix (an escape cut in the middle, or a ``\uD8xx``
///   escape whose low half has not arrived yet, is left out until it is complete);
/// - an unfinished number or literal is left out (``12`` may still become ``123``), at the top
///   level too: a bare top-level number shows once something follows it;
/// - an object member appears as soon as its value has begun (``""``, ``[]``, ``{}`` or a
///   finished scalar); a key whose value has not begun is left out; a duplicate key's new value
///   replaces the old one when it appears;
/// - ``None`` before any value has begun.
///
/// It never raises on a valid prefix but in one case: an integer longer than Python's ``int``
/// digit limit, once it has ended, raises the ``ValueError`` that ``value()`` raises for it (as
/// ``json.loads`` does): no value of the text can be read then, and leaving the number out would
/// show a wrong value. A fold reports it on the call (``ToolCall.error``).
///
/// Its cost is proportional to what arrived since the previous call, not to the whole text:
/// the value is built once and extended in place, so
/// ``partial()`` returns the same live object every time (the same ``dict`` or ``list``,
/// growing). Do not modify it; copy it (``copy.deepcopy``) to keep a snapshot. Strings are
/// immutable, so the open string is replaced by a longer one at each call; this is done by
/// appending in place (no copy) whenever nothing else holds a reference to the previous
/// string, which keeps a long string streamed in small pieces linear overall.
///
/// ``partial_with_changes()`` returns ``(partial(), changes)``: the :class:`JsonChange` list
/// (``set``, ``grew`` with the appended text, ``completed``) describing how the value changed
/// since the previous ``partial()`` or ``partial_with_changes()`` call, in text order, so a
/// view can update only those paths.
///
/// ``push`` takes ``str``. A UTF-16 surrogate pair split across two fragments is joined; any
/// other lone surrogate character (one that is not a ``\uXXXX`` escape) has no UTF-8 form and
/// raises :class:`InvalidJsonError`. The object is thread-safe (calls are serialized).
#[pyclass(frozen, module = "streamfold")]
pub struct JsonAccumulator {
    inner: Mutex<Inner>,
}

impl JsonAccumulator {
    /// `push`.
    fn push_fragment(&self, py: Python<'_>, fragment: &Bound<'_, PyString>) -> PyResult<()> {
        let mut inner = self.lock(py)?;
        if inner.high.is_none() && inner.tail.is_empty() {
            if let Ok(text) = fragment.to_str() {
                return inner.acc.push(text).map_err(|e| json_error(py, &e));
            }
        }
        if let Some(e) = inner.acc.error() {
            let e = json_error(py, e);
            inner.tail.push(fragment.clone().unbind());
            return Err(e);
        }
        let Decoded {
            text,
            trailing: high,
            lone,
            rest,
        } = decode_surrogates(fragment, inner.high.take())?;
        if let Err(e) = inner.acc.push(&text) {
            if !rest.is_empty() {
                inner.tail.push(units_to_str(py, &rest)?.unbind());
            }
            return Err(json_error(py, &e));
        }
        let error = match (lone, high) {
            (Some(unit), _) => JsonError {
                kind: ErrorKind::LoneSurrogate { unit },
                offset: inner.acc.text().len(),
                expected: "a character with a UTF-8 form (escape lone surrogates as \\uXXXX)",
            },
            // Half of a character that only string text can hold: wait for the other half.
            (None, Some(high)) if inner.acc.scanner().in_string_text() => {
                inner.high = Some(high);
                return Ok(());
            }
            (None, Some(unit)) => JsonError {
                kind: ErrorKind::LoneSurrogate { unit },
                offset: inner.acc.text().len(),
                expected: "an ASCII character (non-ASCII text belongs in strings)",
            },
            (None, None) => return Ok(()),
        };
        inner.acc.poison(error.clone());
        inner.tail.push(units_to_str(py, &rest)?.unbind());
        Err(json_error(py, &error))
    }

    /// Push what the decoder's folding path cut from a frame: printable ASCII straight from
    /// the frame's bytes, with no `str` made, unless a half character waits or text was
    /// refused already (then, as any fragment, through `push_fragment`).
    pub(super) fn take(&self, py: Python<'_>, text: &CutText<'_, '_>) -> PyResult<()> {
        if let CutText::Ascii(bytes) = text {
            let mut inner = self.lock(py)?;
            if inner.high.is_none() && inner.tail.is_empty() {
                if let Ok(ascii) = std::str::from_utf8(bytes) {
                    return inner.acc.push(ascii).map_err(|e| json_error(py, &e));
                }
            }
        }
        self.push_fragment(py, &text.to_str(py))
    }

    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Inner>> {
        self.inner
            .lock_py_attached(py)
            .map_err(|_| PyRuntimeError::new_err("JsonAccumulator is unusable after a panic"))
    }

    fn partial_impl<'py>(
        &self,
        py: Python<'py>,
        changes: Option<&mut Vec<JsonChange>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut guard = self.lock(py)?;
        let Inner { acc, view, .. } = &mut *guard;
        if let Some(e) = acc.error() {
            return Err(json_error(py, e));
        }
        let new = acc.text().get(view.consumed..).unwrap_or_default();
        view.advance(py, new, changes)?;
        Ok(view.value(py))
    }
}

/// A fragment split by `decode_surrogates`.
struct Decoded {
    /// The UTF-8 text up to the first lone surrogate (all of it when there is none).
    text: String,
    /// A high surrogate ending the fragment (half of a pair whose other half is in the next
    /// fragment), when there is no lone surrogate before it.
    trailing: Option<u16>,
    /// The first lone surrogate.
    lone: Option<u16>,
    /// The UTF-16 units from the first lone surrogate on (or the trailing high surrogate).
    rest: Vec<u16>,
}

/// Split a `str` holding surrogate code points (after `high`, the waiting half of a pair)
/// into UTF-8 text, a trailing high surrogate and the first lone surrogate.
#[cold]
fn decode_surrogates(fragment: &Bound<'_, PyString>, high: Option<u16>) -> PyResult<Decoded> {
    let encoded = fragment.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let bytes = encoded.cast::<PyBytes>()?.as_bytes();
    let mut units: Vec<u16> = high.into_iter().collect();
    units.extend(
        bytes
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]])),
    );
    let trailing = units.last().copied().filter(|&u| is_high_surrogate(u));
    let end = units.len() - usize::from(trailing.is_some());
    let mut text = String::with_capacity(end);
    let mut at = 0;
    for c in char::decode_utf16(units[..end].iter().copied()) {
        match c {
            Ok(c) => {
                text.push(c);
                at += c.len_utf16();
            }
            Err(e) => {
                return Ok(Decoded {
                    text,
                    trailing: None,
                    lone: Some(e.unpaired_surrogate()),
                    rest: units[at..].to_vec(),
                })
            }
        }
    }
    Ok(Decoded {
        text,
        trailing,
        lone: None,
        rest: units[end..].to_vec(),
    })
}

/// UTF-16 units (lone surrogates kept) as a Python `str`.
fn units_to_str<'py>(py: Python<'py>, units: &[u16]) -> PyResult<Bound<'py, PyString>> {
    let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
    Ok(PyBytes::new(py, &bytes)
        .call_method1("decode", ("utf-16-le", "surrogatepass"))?
        .cast_into::<PyString>()?)
}

#[pymethods]
impl JsonAccumulator {
    #[new]
    fn new() -> Self {
        JsonAccumulator {
            inner: Mutex::new(Inner {
                acc: Accumulator::new(),
                high: None,
                tail: Vec::new(),
                view: PartialView::default(),
            }),
        }
    }

    /// Append a fragment of the JSON text; raises ``InvalidJsonError`` at the first character
    /// that can never be valid (and for every push after it, whose text is still appended).
    fn push(&self, py: Python<'_>, fragment: &Bound<'_, PyString>) -> PyResult<()> {
        self.push_fragment(py, fragment)
    }

    /// Everything pushed so far (a surrogate pair's first half waits for its second).
    #[getter]
    fn text<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        let inner = self.lock(py)?;
        let text = PyString::new(py, inner.acc.text());
        if inner.tail.is_empty() {
            return Ok(text);
        }
        let pieces = std::iter::once(text).chain(inner.tail.iter().map(|t| t.bind(py).clone()));
        Ok(PyString::new(py, "")
            .call_method1("join", (PyList::new(py, pieces)?,))?
            .cast_into::<PyString>()?)
    }

    /// Whether the text is one complete JSON value (trailing whitespace allowed). A bare
    /// top-level number is complete although more digits could extend it.
    #[getter]
    fn is_complete(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = self.lock(py)?;
        Ok(inner.high.is_none() && inner.acc.is_complete())
    }

    /// The parsed value (a new object each call), equal to ``json.loads(self.text)``.
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.lock(py)?;
        inner.acc.status().map_err(|e| json_error(py, &e))?;
        let text = inner.acc.text();
        // jiter refuses what json.loads accepts in three corners (lone surrogate escapes,
        // nesting deeper than 200, integers over 4300 digits); the builder does as json.loads.
        parse_json(py, text.as_bytes()).or_else(|_| build_whole(py, text))
    }

    /// The best current value of the text so far: a live object extended in place (see the
    /// class documentation).
    fn partial<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.partial_impl(py, None)
    }

    /// ``(partial(), changes)``: the value and the list of :class:`JsonChange` since the
    /// previous ``partial()`` or ``partial_with_changes()``.
    fn partial_with_changes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let mut changes = Vec::new();
        let value = self.partial_impl(py, Some(&mut changes))?;
        let changes = PyList::new(
            py,
            changes
                .into_iter()
                .map(|c| Bound::new(py, c))
                .collect::<PyResult<Vec<_>>>()?,
        )?;
        PyTuple::new(py, [value, changes.into_any()])
    }

    /// The object and the memory it holds: what was pushed (and the partial view's state),
    /// not a reservation made up front.
    fn __sizeof__(&self, py: Python<'_>) -> PyResult<usize> {
        let inner = self.lock(py)?;
        Ok(std::mem::size_of::<Self>()
            + inner.acc.heap_bytes()
            + inner.tail.capacity() * std::mem::size_of::<Py<PyString>>()
            + inner.view.scanner.heap_bytes()
            + inner.view.tree.heap_bytes())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let inner = self.lock(py)?;
        let state = match inner.acc.status() {
            Ok(()) => "complete",
            Err(e) if e.is_invalid() => "invalid",
            Err(_) => "incomplete",
        };
        Ok(format!(
            "<JsonAccumulator {} bytes, {state}>",
            inner.acc.text().len()
        ))
    }
}
