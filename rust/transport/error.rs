//! What can go wrong making a request or reading its body, as plain Rust values; the binding
//! turns each kind into its Python exception.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The URL does not parse, or has no host.
    InvalidUrl,
    /// A scheme other than `http` or `https`.
    UnsupportedScheme,
    /// A header name or value HTTP cannot carry (CR, LF, NUL...), or a bad method.
    InvalidRequest,
    /// The client's own settings: an unreadable CA bundle, a bad proxy URL, a bad certificate.
    Config,
    /// The connection could not be made (refused, DNS, TLS handshake): nothing was sent.
    Connect,
    /// The connection took longer than the connect timeout.
    ConnectTimeout,
    /// Nothing arrived for the read timeout (the head, or the next bytes of the body).
    ReadTimeout,
    /// The connection failed after the request may have been sent (reset, closed mid-body,
    /// a protocol error).
    Read,
    /// The body's content encoding (gzip, br) broke.
    Decode,
    /// More redirects than allowed.
    TooManyRedirects,
    /// The stream or its client was closed.
    Closed,
}

#[derive(Debug, Clone)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
    /// For `ReadTimeout`: the timeout that fired, in seconds.
    pub timeout: Option<f64>,
}

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            timeout: None,
        }
    }

    pub fn read_timeout(seconds: f64, waiting_for: &str) -> Self {
        Self {
            kind: Kind::ReadTimeout,
            message: format!("no {waiting_for} for {seconds} s (read timeout)"),
            timeout: Some(seconds),
        }
    }

    /// A reqwest error, classified, its message carrying the whole chain of causes (reqwest's
    /// own says only "error sending request").
    pub fn from_reqwest(err: &reqwest::Error) -> Self {
        let mut message = err.to_string();
        let mut source = std::error::Error::source(err);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        let kind = if err.is_connect() {
            if err.is_timeout() {
                Kind::ConnectTimeout
            } else {
                Kind::Connect
            }
        } else if err.is_decode() {
            Kind::Decode
        } else if err.is_builder() {
            Kind::InvalidRequest
        } else {
            Kind::Read
        };
        Self::new(kind, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
