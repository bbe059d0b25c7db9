//! The HTTP client of the S3 and WebDAV sources: no redirect followed, every destination
//! checked by [`Policy`] (the URL's host before the request, each resolved address at
//! connect time), and what a server answers bounded — an error's body to
//! [`MAX_ERROR_BODY_BYTES`] read within [`ERROR_BODY_TIME`], a listing's to
//! [`MAX_LISTING_BODY_BYTES`] — whatever it claims to send.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use opendal::raw::oio::ReadStream;
use opendal::{Buffer, ErrorKind, HttpBody, HttpTransport};

use super::destinations::Policy;

/// Bytes of an error answer's body read, at most: enough for a service's error code; the
/// rest is never read (the connection is dropped).
pub const MAX_ERROR_BODY_BYTES: usize = 4096;
/// How long reading an error answer's body may take.
pub const ERROR_BODY_TIME: Duration = Duration::from_secs(5);
/// Bytes of a listing's answer (a WebDAV `PROPFIND`, an S3 `ListObjects` page) read, at
/// most: past it the listing fails.
pub const MAX_LISTING_BODY_BYTES: u64 = 64 * 1024 * 1024;
/// How long connecting may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long an idle connection to a source is kept for the next request: below the shortest
/// keep-alive servers commonly give (Apache's 5 s).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(3);

/// Resolves a host name, keeping only the addresses [`Policy`] allows.
struct CheckedResolver {
    policy: Arc<Policy>,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let kept = super::destinations::resolve(&policy, &host, 0).await?;
            let addrs: reqwest::dns::Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

/// OpenDAL's HTTP transport for one source: a reqwest client that follows no redirect and
/// resolves through [`CheckedResolver`], the URL's host checked before each request, and
/// the bodies bounded.
pub(super) struct CheckedTransport {
    client: opendal_http_transport_reqwest::ReqwestTransport,
    policy: Arc<Policy>,
}

impl CheckedTransport {
    /// The transport of a source with `policy`.
    pub(super) fn new(policy: Arc<Policy>) -> Result<CheckedTransport, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            // A connection idle longer is not used again: the runtime runs only while a
            // request does, so a server's close of an idle connection (Apache after 5 s) is
            // not seen before the next request would be sent on it and fail.
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            // Straight to the destination checked, never through an environment's proxy.
            .no_proxy()
            .dns_resolver(CheckedResolver {
                policy: policy.clone(),
            })
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(CheckedTransport {
            client: opendal_http_transport_reqwest::ReqwestTransport::new(client),
            policy,
        })
    }
}

impl HttpTransport for CheckedTransport {
    async fn fetch(&self, req: http::Request<Buffer>) -> opendal::Result<http::Response<HttpBody>> {
        let host = req.uri().host().unwrap_or_default().to_string();
        self.policy
            .check_host(&host)
            .map_err(|e| opendal::Error::new(ErrorKind::PermissionDenied, e))?;
        let listing = req.method().as_str() == "PROPFIND" || req.uri().query().is_some();
        let resp = self.client.fetch(req).await?;
        let (parts, body) = resp.into_parts();
        let body = if !parts.status.is_success() {
            error_body(body).await
        } else if listing {
            capped(body, MAX_LISTING_BODY_BYTES)
        } else {
            body
        };
        Ok(http::Response::from_parts(parts, body))
    }
}

/// The first [`MAX_ERROR_BODY_BYTES`] of an error answer's body that arrive within
/// [`ERROR_BODY_TIME`], as a body of its own; the rest is dropped unread.
async fn error_body(mut body: HttpBody) -> HttpBody {
    let mut kept: Vec<u8> = Vec::new();
    let read = async {
        while kept.len() < MAX_ERROR_BODY_BYTES {
            match body.read().await {
                Ok(chunk) if !chunk.is_empty() => {
                    let room = MAX_ERROR_BODY_BYTES - kept.len();
                    let bytes = chunk.to_bytes();
                    kept.extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(ERROR_BODY_TIME, read).await;
    let size = kept.len() as u64;
    let chunk: opendal::Result<Buffer> = Ok(Buffer::from(kept));
    HttpBody::new(futures_util::stream::iter([chunk]), Some(size))
}

/// `body`, failing once more than `max` bytes arrived.
fn capped(body: HttpBody, max: u64) -> HttpBody {
    body.map_inner(|stream| {
        let mut seen = 0u64;
        Box::new(stream.map(move |chunk| {
            let chunk = chunk?;
            seen += chunk.len() as u64;
            if seen > max {
                return Err(opendal::Error::new(
                    ErrorKind::Unexpected,
                    format!("limit: an answer of more than {max} bytes"),
                ));
            }
            Ok(chunk)
        }))
    })
}
