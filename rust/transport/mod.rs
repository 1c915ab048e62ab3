//! The native HTTP client: reqwest on the process's tokio runtime, with rustls (the system's
//! trust store unless told otherwise), gzip and br, HTTP/2 by ALPN, proxies from the
//! environment. No Python here: `python::client` binds it.
//!
//! A request is checked whole (URL, scheme, method, every header) before anything is sent;
//! its response is read by a task of its own into a [`Stream`].

mod error;
mod hub;
mod runtime;
mod stream;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream as _;
use tokio::time::{Instant, Sleep};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};

pub use error::{Error, Kind};
pub use hub::Hub;
pub use stream::{Head, Read, Stream};

/// How the server's certificate is checked.
#[derive(Debug, Clone)]
pub enum Verify {
    /// The system's trust store.
    System,
    /// The certificates of this PEM bundle, and only those.
    Bundle(Vec<u8>),
    /// Not at all.
    Off,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub verify: Verify,
    /// A client certificate and its private key, PEM.
    pub identity: Option<Vec<u8>>,
    /// Every request through this proxy; `None`: from the environment (`HTTPS_PROXY`,
    /// `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`).
    pub proxy: Option<String>,
    pub connect_timeout: Option<Duration>,
    pub http2: bool,
}

/// One request, as the caller gave it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Option<Vec<u8>>,
    /// The longest wait for the head, and then for each read of the body.
    pub read_timeout: Option<Duration>,
    /// Redirects followed (0: none).
    pub max_redirects: usize,
}

pub struct Client {
    config: Config,
    /// The pool, and the process it was made in (rebuilt after `fork()`, see `runtime`).
    http: Mutex<Option<(u32, reqwest::Client)>>,
}

/// Header names that carry a credential: never sent on to another origin by a redirect. The
/// providers' key headers and any other named like one, as `sf.stream` strips for httpx.
fn is_credential(name: &str) -> bool {
    const PARTS: [&str; 10] = [
        "auth",
        "api-key",
        "api_key",
        "apikey",
        "token",
        "secret",
        "password",
        "credential",
        "cookie",
        "session",
    ];
    let lower = name.to_ascii_lowercase();
    PARTS.iter().any(|part| lower.contains(part))
}

fn origin(url: &Url) -> (String, Option<String>, Option<u16>) {
    (
        url.scheme().to_owned(),
        url.host_str().map(str::to_owned),
        url.port_or_known_default(),
    )
}

/// The URL, refused unless it is an absolute `http` or `https` URL with a host.
pub fn check_url(url: &str) -> Result<Url, Error> {
    let parsed = Url::parse(url)
        .map_err(|err| Error::new(Kind::InvalidUrl, format!("invalid URL {url:?}: {err}")))?;
    match parsed.scheme() {
        "http" | "https" => {}
        other => {
            return Err(Error::new(
                Kind::UnsupportedScheme,
                format!("unsupported URL scheme {other:?} in {url:?}: only http and https"),
            ))
        }
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(Error::new(
            Kind::InvalidUrl,
            format!("invalid URL {url:?}: no host"),
        ));
    }
    Ok(parsed)
}

/// The headers, refused when a name or value cannot be sent (CR, LF, NUL, a space in a name).
pub fn check_headers(pairs: &[(String, Vec<u8>)]) -> Result<HeaderMap, Error> {
    let mut map = HeaderMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            Error::new(
                Kind::InvalidRequest,
                format!("invalid header name {name:?}: not sent"),
            )
        })?;
        let value = HeaderValue::from_bytes(value).map_err(|_| {
            Error::new(
                Kind::InvalidRequest,
                format!(
                    "invalid value for header {name:?} (CR, LF, NUL or another control \
                     character): not sent"
                ),
            )
        })?;
        map.append(header, value);
    }
    Ok(map)
}

impl Client {
    pub fn new(config: Config) -> Result<Self, Error> {
        let http = Self::build(&config)?;
        Ok(Self {
            config,
            http: Mutex::new(Some((std::process::id(), http))),
        })
    }

    fn build(config: &Config) -> Result<reqwest::Client, Error> {
        let config_error = |what: &str, err: &reqwest::Error| {
            Error::new(
                Kind::Config,
                format!("{what}: {}", Error::from_reqwest(err)),
            )
        };
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(90));
        if !config.http2 {
            builder = builder.http1_only();
        }
        if let Some(timeout) = config.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        match &config.verify {
            Verify::System => {}
            Verify::Off => builder = builder.danger_accept_invalid_certs(true),
            Verify::Bundle(pem) => {
                let certs = reqwest::Certificate::from_pem_bundle(pem)
                    .map_err(|err| config_error("the CA bundle (verify=) cannot be read", &err))?;
                if certs.is_empty() {
                    return Err(Error::new(
                        Kind::Config,
                        "the CA bundle (verify=) holds no PEM certificate",
                    ));
                }
                builder = builder.tls_built_in_root_certs(false);
                for cert in certs {
                    builder = builder.add_root_certificate(cert);
                }
            }
        }
        if let Some(pem) = &config.identity {
            let identity = reqwest::Identity::from_pem(pem).map_err(|err| {
                config_error("the client certificate (cert=) cannot be read", &err)
            })?;
            builder = builder.identity(identity);
        }
        if let Some(proxy) = &config.proxy {
            let proxy = reqwest::Proxy::all(proxy)
                .map_err(|err| config_error("invalid proxy URL (proxy=)", &err))?;
            builder = builder.proxy(proxy);
        }
        builder
            .build()
            .map_err(|err| config_error("the client cannot be made", &err))
    }

    /// The pool, rebuilt in a child process after `fork()` (its parent's connections are
    /// driven by a runtime that has no threads there).
    fn http(&self) -> Result<reqwest::Client, Error> {
        let pid = std::process::id();
        let mut slot = self.http.lock().unwrap_or_else(PoisonError::into_inner);
        match slot.as_mut() {
            None => Err(Error::new(Kind::Closed, "this client is closed")),
            Some((owner, http)) if *owner == pid => Ok(http.clone()),
            Some(entry) => {
                *entry = (pid, Self::build(&self.config)?);
                Ok(entry.1.clone())
            }
        }
    }

    /// Idle connections go when the client does; streams open keep theirs until they end.
    pub fn close(&self) {
        self.http
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// Check `request` and start it: the returned stream gets its head, then its body.
    pub fn start(&self, request: Request, hub: Option<Arc<Hub>>) -> Result<Arc<Stream>, Error> {
        let url = check_url(&request.url)?;
        let method = Method::from_bytes(request.method.as_bytes()).map_err(|_| {
            Error::new(
                Kind::InvalidRequest,
                format!("invalid HTTP method {:?}", request.method),
            )
        })?;
        let headers = check_headers(&request.headers)?;
        let http = self.http()?;
        let runtime = runtime::runtime().map_err(|err| {
            Error::new(Kind::Config, format!("cannot start the I/O runtime: {err}"))
        })?;
        let stream = Stream::new(hub);
        let outgoing = Box::new(Outgoing {
            method,
            url,
            headers,
            body: request.body,
            read_timeout: request.read_timeout,
            max_redirects: request.max_redirects,
        });
        let handle = runtime.spawn(run(http, outgoing, Arc::clone(&stream)));
        stream.set_task(handle.abort_handle());
        Ok(stream)
    }
}

async fn within<T>(
    timeout: Option<Duration>,
    waiting_for: &str,
    future: impl std::future::Future<Output = T>,
) -> Result<T, Error> {
    match timeout {
        None => Ok(future.await),
        Some(limit) => tokio::time::timeout(limit, future)
            .await
            .map_err(|_| Error::read_timeout(limit.as_secs_f64(), waiting_for)),
    }
}

fn head_of(response: &reqwest::Response) -> Head {
    let status = response.status();
    let version = match response.version() {
        reqwest::Version::HTTP_09 => "HTTP/0.9",
        reqwest::Version::HTTP_10 => "HTTP/1.0",
        reqwest::Version::HTTP_2 => "HTTP/2",
        reqwest::Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    };
    Head {
        status: status.as_u16(),
        reason: status.canonical_reason().unwrap_or("").to_owned(),
        version,
        headers: response
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
            .collect(),
        url: response.url().to_string(),
    }
}

/// A checked request, as the task takes it: one box, so that the task's own future holds a
/// pointer, not the method, URL and headers, for as long as the body streams (its size went
/// from 992 bytes to 464, measured by `size_of_val` in a release build).
struct Outgoing {
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Option<Vec<u8>>,
    read_timeout: Option<Duration>,
    max_redirects: usize,
}

/// Send the request (following at most `max_redirects` redirects, each credential header
/// dropped once the request leaves its origin) and wait for the response's head.
async fn send(http: &reqwest::Client, outgoing: Box<Outgoing>) -> Result<reqwest::Response, Error> {
    let Outgoing {
        mut method,
        mut url,
        mut headers,
        mut body,
        read_timeout,
        max_redirects,
    } = *outgoing;
    let first = origin(&url);
    let mut hops = 0;
    loop {
        let mut builder = http
            .request(method.clone(), url.clone())
            .headers(headers.clone());
        if let Some(bytes) = &body {
            builder = builder.body(bytes.clone());
        }
        let response = within(read_timeout, "response", builder.send())
            .await?
            .map_err(|err| Error::from_reqwest(&err))?;
        let status = response.status();
        if max_redirects == 0 || !status.is_redirection() {
            return Ok(response);
        }
        let Some(location) = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| url.join(value).ok())
        else {
            return Ok(response);
        };
        if hops >= max_redirects {
            return Err(Error::new(
                Kind::TooManyRedirects,
                format!("more than {max_redirects} redirects"),
            ));
        }
        hops += 1;
        check_url(location.as_str())?;
        if origin(&location) != first {
            let names: Vec<HeaderName> = headers
                .keys()
                .filter(|name| is_credential(name.as_str()))
                .cloned()
                .collect();
            for name in names {
                headers.remove(name);
            }
        }
        // 303, and 301/302 after a POST, become a GET without a body (as browsers and httpx).
        let code = status.as_u16();
        if code == 303 || ((code == 301 || code == 302) && method == Method::POST) {
            if method != Method::HEAD {
                method = Method::GET;
            }
            body = None;
            headers.remove(reqwest::header::CONTENT_TYPE);
            headers.remove(reqwest::header::CONTENT_LENGTH);
        }
        url = location;
    }
}

async fn run(http: reqwest::Client, outgoing: Box<Outgoing>, stream: Arc<Stream>) {
    let read_timeout = outgoing.read_timeout;
    // Boxed: the request's state (the largest part of this task's) is freed once the head
    // came, rather than kept in the task for as long as the body streams.
    let sending = Box::pin(send(&http, outgoing));
    let response = match sending.await {
        Ok(response) => response,
        Err(err) => {
            stream.put_head(Err(err));
            return;
        }
    };
    stream.put_head(Ok(head_of(&response)));
    // Only the body is read from now on: the headers (whose values hold hyper's first read
    // buffer, the head's bytes), the URL and the extensions go, and an open stream holds
    // none of them.
    let mut body = std::pin::pin!(response.bytes_stream());
    let mut idle = read_timeout.map(Idle::new);
    loop {
        if let Some(idle) = &mut idle {
            idle.since = Instant::now();
        }
        let next = std::future::poll_fn(|cx| {
            if let Poll::Ready(item) = body.as_mut().poll_next(cx) {
                return Poll::Ready(Ok(item));
            }
            idle.as_mut()
                .map_or(Poll::Pending, |idle| idle.poll_expired(cx).map(Err))
        })
        .await;
        match next {
            Ok(Some(Ok(bytes))) => {
                if !stream.put(&bytes).await {
                    return;
                }
            }
            Ok(None) => {
                stream.put_end(Ok(()));
                return;
            }
            Ok(Some(Err(err))) => {
                stream.put_end(Err(Error::from_reqwest(&err)));
                return;
            }
            Err(err) => {
                stream.put_end(Err(err));
                return;
            }
        }
    }
}

/// The read timeout of a body: one timer for all its reads. A read moves the deadline on (a
/// time taken, `since`, rather than a timer made, or moved in the timer wheel, per read); the
/// timer, when it fires before the deadline (reads came meanwhile), is set for the deadline.
struct Idle {
    limit: Duration,
    /// When the wait for the next read began.
    since: Instant,
    timer: Pin<Box<Sleep>>,
}

impl Idle {
    fn new(limit: Duration) -> Self {
        let since = Instant::now();
        Self {
            limit,
            since,
            timer: Box::pin(tokio::time::sleep_until(since + limit)),
        }
    }

    /// `Ready` with the timeout's error once `limit` passed since the wait began.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Error> {
        while self.timer.as_mut().poll(cx).is_ready() {
            let deadline = self.since + self.limit;
            if Instant::now() >= deadline {
                return Poll::Ready(Error::read_timeout(self.limit.as_secs_f64(), "bytes"));
            }
            self.timer.as_mut().reset(deadline);
        }
        Poll::Pending
    }
}
