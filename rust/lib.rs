//! streamfold's native core: spec-exact SSE and JSON-lines framing, incremental JSON
//! accumulation, and the byte cuts of chunk templates. Nothing here depends on Python; the bindings live in [`python`], behind the
//! `python` feature, so `cargo test` and the benches run without an interpreter.

pub mod json;
pub mod jsonl;
pub mod sse;
pub mod surrogates;
pub mod template;
pub mod text_bytes;
pub mod timing;
#[cfg(feature = "transport")]
pub mod transport;
pub mod utf8;

#[cfg(feature = "python")]
mod python;
