//! HTTP GET for fetching: redirects followed by hand (at most 10) so that
//! the hub's LFS hash is read off its first answer and `HF_TOKEN` goes only
//! to the hub's own origin over https (scheme, host and port; plain http
//! only to a loopback host), never to a CDN a redirect names, never in
//! cleartext over the network.

use std::time::{Duration, Instant};

use ureq::http::{header, Response, Uri};
use ureq::Body;

use crate::{Error, Result};

const MAX_REDIRECTS: usize = 10;

/// A download bringing fewer bytes than this in any [`STALL_WINDOW`] has
/// stalled (a server dripping a byte a second never trips the per-read
/// timeout).
pub(crate) const MIN_BYTES: u64 = 16 << 10;
/// See [`MIN_BYTES`].
pub(crate) const STALL_WINDOW: Duration = Duration::from_secs(30);

/// How long a metadata call (the hub's file list) may take in all,
/// redirects and body included.
pub(crate) const METADATA_DEADLINE: Duration = Duration::from_secs(60);

/// The HTTP client of a [`super::Fetcher`].
#[derive(Clone)]
pub(crate) struct Client {
    agent: ureq::Agent,
    /// The origin `token` may be sent to: the hub endpoint's scheme and
    /// authority, if https (or http to a loopback host).
    hub_origin: Option<(String, String)>,
    token: Option<String>,
    /// A download bringing fewer bytes than this in this time has stalled.
    pub(crate) min_rate: (u64, Duration),
    /// How long a metadata call may take in all.
    pub(crate) metadata_deadline: Duration,
}

/// A response, the URL that gave it, and the SHA-256 a hop declared
/// (the hub's `X-Linked-Etag` for LFS files).
pub(crate) struct Got {
    pub response: Response<Body>,
    pub url: String,
    pub sha256: Option<String>,
}

impl Client {
    pub(crate) fn new(hub_endpoint: &str, token: Option<String>) -> Client {
        let agent = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(30)))
            .timeout_per_read(Some(Duration::from_secs(60)))
            .user_agent(concat!("tern/", env!("CARGO_PKG_VERSION")))
            // the system's certificate store (and so a proxy's CA added to it)
            .tls_config(ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::PlatformVerifier).build())
            .build()
            .new_agent();
        let hub_origin = hub_endpoint.parse::<Uri>().ok().and_then(|u| token_origin(&u));
        let min_rate = (MIN_BYTES, STALL_WINDOW);
        Client { agent, hub_origin, token, min_rate, metadata_deadline: METADATA_DEADLINE }
    }

    /// GET `url` (from byte `from` on, if above 0), following redirects.
    /// Statuses are the caller's to judge; transport failures are errors.
    pub(crate) fn get(&self, url: &str, from: u64) -> std::result::Result<Got, Transport> {
        self.get_by(url, from, None)
    }

    /// [`Client::get`], all of it (redirects, and the body read after)
    /// done by `deadline` if one is given.
    fn get_by(&self, url: &str, from: u64, deadline: Option<Instant>) -> std::result::Result<Got, Transport> {
        let mut url = url.to_string();
        let mut sha256 = None;
        for _ in 0..=MAX_REDIRECTS {
            let uri: Uri = url.parse().map_err(|_| Transport::fatal(format!("{url:?} is not a valid URL")))?;
            let mut req = self.agent.get(&url);
            if from > 0 {
                req = req.header(header::RANGE, format!("bytes={from}-"));
            }
            if let (Some(token), Some(origin)) = (&self.token, &self.hub_origin) {
                if token_origin(&uri).as_ref() == Some(origin) {
                    req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
                }
            }
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
                req = req.config().timeout_global(Some(left)).build();
            }
            let response =
                req.call().map_err(|e| Transport { transient: transient(&e), detail: format!("GET {url}: {e}") })?;
            if sha256.is_none() {
                sha256 = declared_sha256(&response);
            }
            if !response.status().is_redirection() {
                return Ok(Got { response, url, sha256 });
            }
            let Some(loc) = response.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()) else {
                return Err(Transport::fatal(format!("GET {url}: HTTP {} without a Location", response.status())));
            };
            url = resolve(&uri, loc);
        }
        Err(Transport::fatal(format!("GET {url}: more than {MAX_REDIRECTS} redirects")))
    }

    /// GET a small document (an API answer): at most `limit` bytes.
    /// All of it within `metadata_deadline` ([`METADATA_DEADLINE`] unless
    /// set otherwise).
    pub(crate) fn get_small(&self, url: &str, limit: u64) -> Result<(u16, Vec<u8>)> {
        let deadline = Instant::now() + self.metadata_deadline;
        let mut got = self.get_by(url, 0, Some(deadline)).map_err(|t| fetch(t.detail))?;
        let status = got.response.status().as_u16();
        let body = got
            .response
            .body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| fetch(format!("GET {url}: {e}")))?;
        Ok((status, body))
    }
}

/// A request that failed before any status came back.
pub(crate) struct Transport {
    pub detail: String,
    /// Worth retrying: the connection broke or timed out (not a name that
    /// does not resolve, a refused connection or a certificate).
    pub transient: bool,
}

impl Transport {
    fn fatal(detail: String) -> Transport {
        Transport { detail, transient: false }
    }
}

fn transient(e: &ureq::Error) -> bool {
    use std::io::ErrorKind::*;
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => {
            matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | UnexpectedEof | TimedOut | BrokenPipe | Interrupted
            )
        }
        _ => false,
    }
}

/// The SHA-256 a response declares for the file: the hub's
/// `X-Linked-Etag` (an LFS object's hash), else an `ETag` of 64 hex digits.
fn declared_sha256(r: &Response<Body>) -> Option<String> {
    ["x-linked-etag", "etag"].iter().find_map(|h| {
        let v = r.headers().get(*h)?.to_str().ok()?;
        let v = v.trim_start_matches("W/").trim_matches('"');
        (v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit())).then(|| v.to_ascii_lowercase())
    })
}

/// The origin (scheme, authority) of `u` if a token may go there: https,
/// or http to a loopback host (the traffic never leaves the machine).
fn token_origin(u: &Uri) -> Option<(String, String)> {
    let scheme = u.scheme_str()?.to_ascii_lowercase();
    let authority = u.authority()?;
    let loopback = matches!(authority.host(), "127.0.0.1" | "localhost" | "[::1]" | "::1");
    (scheme == "https" || scheme == "http" && loopback).then(|| (scheme, authority.as_str().to_ascii_lowercase()))
}

/// A Location header against the URL that sent it.
fn resolve(base: &Uri, loc: &str) -> String {
    if loc.contains("://") {
        return loc.to_string();
    }
    let origin = format!("{}://{}", base.scheme_str().unwrap_or("https"), base.authority().map_or("", |a| a.as_str()));
    if loc.starts_with('/') {
        return format!("{origin}{loc}");
    }
    let dir = base.path().rsplit_once('/').map_or("", |(d, _)| d);
    format!("{origin}{dir}/{loc}")
}

pub(crate) fn fetch(detail: String) -> Error {
    Error::Fetch { detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_against_the_url_that_sent_them() {
        let base: Uri = "http://127.0.0.1:8/o/r/resolve/main/x.gguf".parse().unwrap();
        assert_eq!(resolve(&base, "https://cdn.example/b"), "https://cdn.example/b");
        assert_eq!(resolve(&base, "/cdn/abc"), "http://127.0.0.1:8/cdn/abc");
        assert_eq!(resolve(&base, "y.gguf"), "http://127.0.0.1:8/o/r/resolve/main/y.gguf");
    }

    #[test]
    fn the_token_goes_over_https_to_the_hubs_origin_only() {
        let c = Client::new("https://huggingface.co", Some("hf_x".into()));
        let sends = |url: &str| token_origin(&url.parse().unwrap()) == c.hub_origin;
        assert!(sends("https://huggingface.co/o/r/resolve/main/x.gguf"));
        assert!(sends("HTTPS://HuggingFace.co/api/models/o/r"));
        for url in [
            "http://huggingface.co/o/r/resolve/main/x.gguf",
            "https://huggingface.co:8443/o/r",
            "https://cdn-lfs.huggingface.co/x",
            "http://127.0.0.1:8/o/r",
        ] {
            assert!(!sends(url), "{url}");
        }
        // a hub endpoint in cleartext gets no token unless it is this machine
        assert_eq!(Client::new("http://hub.example", Some("t".into())).hub_origin, None);
        let local = Client::new("http://127.0.0.1:8", Some("t".into()));
        assert_eq!(token_origin(&"http://127.0.0.1:8/x".parse().unwrap()), local.hub_origin);
    }
}
