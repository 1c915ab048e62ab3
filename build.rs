//! The bindings read the interpreter's cfgs (`Py_GIL_DISABLED`: a free-threaded build) as pyo3
//! does; the Rust-only build (`cargo test`) needs none.
fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
