//! The Python bindings: the only module that uses pyo3. Decoders are frozen pyclasses over a
//! mutex, so sharing one between threads serialises instead of racing, free-threaded or not.

mod client;
mod clock;
mod encode;
mod errors;
mod fastcall;
mod json;
mod learn;
mod slots;
mod spare_list;
mod sse;
mod template;
mod text;
mod text_buffer;

#[pyo3::pymodule(gil_used = false)]
mod _core {
    #[pymodule_export]
    use super::client::{NativeClient, NativeHub, NativeStream};
    #[pymodule_export]
    use super::clock::ReadClock;
    #[pymodule_export]
    use super::encode::{encode_sse, encode_sse_comment, json_frame};
    #[pymodule_export]
    use super::errors::{register_errors, register_transport_errors};
    #[pymodule_export]
    use super::json::{JsonAccumulator, JsonChange};
    #[pymodule_export]
    use super::learn::learn_cut;
    #[pymodule_export]
    use super::slots::SlotBuilder;
    #[pymodule_export]
    use super::sse::{JsonLinesDecoder, SSEDecoder, ServerSentEvent};
    #[pymodule_export]
    use super::template::{NumberedCut, TemplateCut};
    #[pymodule_export]
    use super::text::bench_str_from_utf8;
    #[pymodule_export]
    use super::text_buffer::TextBuffer;

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::PyModuleMethods;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        super::fastcall::install(m.py())
    }
}
