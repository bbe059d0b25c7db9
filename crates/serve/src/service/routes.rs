//! The service's routes: authentication, request parsing, and the mapping of the library's
//! errors to HTTP statuses.
//!
//! | route | answer |
//! |---|---|
//! | `POST /v1/files?name=NAME[&shared=true][&tag.KEY=VALUE…]` (raw body, or multipart with one file field) | 202 `{"job", "status_url"}` |
//! | `GET /v1/jobs/{id}` | the job: state, reason, one line per file |
//! | `GET /v1/files/status?locator=L` | where a file stands (and its members) |
//! | `DELETE /v1/files?locator=L` | 200 with the ended delete job (202 if it takes over 30 s) |
//! | `POST /v1/search` `{"query", "limit", "min_score", "mode", "filters"}` | `{"hits": [...], "min_score", "note"}` (each hit's `score` the ranking's, never rising down the list; `relevance` absolute, what `min_score` bounds; `confidence` `high` or `low`; a `note` when no hit is confident or none is tied to the query: "nothing relevant") |
//! | `POST /v1/tools/{tool}` (the tool's JSON arguments) | the tool's answer, within its budget |
//! | `POST/GET/DELETE /mcp` | the same tools over MCP (streamable HTTP), each request in its key's scope, each session bound to the key that opened it |
//! | `GET /health` | liveness (`{"status":"ok"}`), no key needed, nothing else said |
//! | `GET /metrics` | Prometheus text, with the operator's `metrics_key` (or `public_metrics`) |

// Helpers return the ready error answer as their `Err`: it is the handler's reply at once.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use extractors::Scope;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::{HttpLimits, ServiceConfig, DEFAULT_MAX_QUERIES, JSON_BODY_WEIGHT};
use crate::async_uploads::AsyncUploads;
use ingest::tools::ToolHost;
use ingest::{JobId, UploadOptions, Uploads};
use ingest_base::error::{BodyCut, Error};
use ingest_base::gate::{ByteGate, Gauge, Permit};
use ingest_base::lock;

/// How long `DELETE /v1/files` waits for its job before answering 202.
const DELETE_WAIT: Duration = Duration::from_secs(30);

/// Hits `POST /v1/search` gives when its `limit` does not say (at most 50, as the tool).
const HTTP_SEARCH_LIMIT: usize = 10;

/// The one route whose body may be larger than `max_request_bytes`
/// (`max_tool_result_request_bytes`, which `paced_body` enforces).
const STORE_RESULT_PATH: &str = "/v1/tools/store_tool_result";

/// MCP sessions one key holds open when the configuration does not say.
const DEFAULT_MCP_SESSIONS_PER_KEY: usize = 16;

/// Who sent a request: its key's scope, and the key's id for logs.
#[derive(Clone)]
struct Caller {
    scope: Scope,
    /// The first 12 hex digits of blake3(key): names the key in logs and binds MCP
    /// sessions, never reveals it.
    key_id: String,
    /// The key's own share of the searches and tool calls answered at once.
    queries: Arc<tokio::sync::Semaphore>,
    /// The key's heavy tool calls answered at once (`max_heavy_per_key`).
    heavy: Arc<tokio::sync::Semaphore>,
    /// The key's own share of the request bodies held at once.
    bytes: ByteGate,
}

struct App {
    uploads: AsyncUploads,
    /// blake3 of each key → its caller (a lookup by hash: no timing leak on the key).
    keys: HashMap<[u8; 32], Caller>,
    /// blake3 of the operator's metrics key, if one is set.
    metrics_key: Option<[u8; 32]>,
    public_metrics: bool,
    tools: Arc<ToolHost>,
    queries: Arc<tokio::sync::Semaphore>,
    max_upload_bytes: u64,
    /// MCP session id → the key id of the caller that opened it.
    mcp_owners: Mutex<HashMap<String, String>>,
    /// Key id → sessions being opened now (counted with the open ones against the cap).
    mcp_opening: super::KeyedCounts<String>,
    mcp_sessions: crate::mcp::Sessions,
    max_mcp_sessions_per_key: usize,
    /// Request bodies held at once, every key together.
    bytes: ByteGate,
    limits: HttpLimits,
    /// Searches and tool calls at work (HTTP and MCP), and the most at once.
    working: Gauge,
}

type Shared = State<Arc<App>>;

/// A search or tool call's places: the caller's own and the service's.
type QuerySlot = (
    tokio::sync::OwnedSemaphorePermit,
    tokio::sync::OwnedSemaphorePermit,
);

/// The service's routes over `uploads`, with `config`'s keys and bounds. Cancel `sessions`
/// to end the open MCP sessions.
pub fn router(
    uploads: Arc<Uploads>,
    config: &ServiceConfig,
    sessions: crate::mcp::CancellationToken,
) -> axum::Router {
    let limits = config.http_limits();
    let max_queries = config.max_queries.unwrap_or(DEFAULT_MAX_QUERIES).max(1);
    let per_key = config
        .max_queries_per_key
        .unwrap_or((max_queries / 2).max(1))
        .max(1);
    let heavy_per_key = config
        .max_heavy_per_key
        .unwrap_or(super::DEFAULT_MAX_HEAVY_PER_KEY)
        .clamp(1, per_key);
    let keys = config
        .api_keys
        .iter()
        .map(|k| {
            let hash = *blake3::hash(k.key.as_bytes()).as_bytes();
            let hex = blake3::Hash::from(hash).to_hex();
            let caller = Caller {
                scope: k.scope(),
                key_id: hex.get(..12).unwrap_or_default().to_string(),
                queries: Arc::new(tokio::sync::Semaphore::new(per_key)),
                heavy: Arc::new(tokio::sync::Semaphore::new(heavy_per_key)),
                bytes: ByteGate::new(limits.max_body_bytes_in_flight_per_key),
            };
            (hash, caller)
        })
        .collect();
    let tools = Arc::new(ToolHost::with_ingestor(Arc::clone(uploads.ingestor())));
    let queries = Arc::new(tokio::sync::Semaphore::new(max_queries));
    let rules = crate::mcp::HostRules {
        hosts: config.mcp_allowed_hosts.clone(),
        origins: config.mcp_allowed_origins.clone().unwrap_or_default(),
    };
    let working = Gauge::default();
    let (mcp, mcp_sessions) = crate::mcp::keyed_http_router(
        Arc::clone(&tools),
        Arc::clone(&queries),
        working.clone(),
        sessions,
        rules,
    );
    let app = App {
        tools,
        max_upload_bytes: uploads.config().max_upload_bytes,
        uploads: AsyncUploads::new(uploads),
        keys,
        metrics_key: config
            .metrics_key
            .as_ref()
            .map(|k| *blake3::hash(k.as_bytes()).as_bytes()),
        public_metrics: config.public_metrics,
        queries,
        mcp_owners: Mutex::new(HashMap::new()),
        mcp_opening: super::KeyedCounts::new(),
        mcp_sessions,
        max_mcp_sessions_per_key: config
            .max_mcp_sessions_per_key
            .unwrap_or(DEFAULT_MCP_SESSIONS_PER_KEY),
        bytes: ByteGate::new(limits.max_body_bytes_in_flight),
        limits,
        working,
    };
    let app = Arc::new(app);
    let mcp = mcp.layer(axum::middleware::from_fn_with_state(
        Arc::clone(&app),
        mcp_scope,
    ));
    axum::Router::new()
        .route("/v1/files", post(upload).delete(delete_file))
        .route("/v1/files/status", get(file_status))
        .route("/v1/jobs/{id}", get(job))
        .route("/v1/search", post(search))
        .route(
            "/v1/tools/{tool}",
            // The body's bound is `paced_body`'s (per route), not axum's default 2 MB.
            post(tool).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .with_state(Arc::clone(&app))
        .merge(mcp)
        .layer(axum::middleware::from_fn_with_state(app, admit))
}

/// What bounds a route's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyClass {
    /// No key needed, no body read (`/health`; `/metrics` checks its own key).
    Open,
    /// An upload: spooled to disk as it arrives, bounded by `max_upload_bytes` there.
    Upload,
    /// `store_tool_result`: its result is taken as raw text, never parsed into values.
    RawJson,
    /// Any other body (search, tools, MCP): JSON parsed into values.
    Json,
}

impl BodyClass {
    fn of(path: &str) -> BodyClass {
        match path {
            "/health" | "/metrics" => BodyClass::Open,
            "/v1/files" => BodyClass::Upload,
            STORE_RESULT_PATH => BodyClass::RawJson,
            _ => BodyClass::Json,
        }
    }
}

/// The bytes a request's body holds in the key's and the service's budgets: taken as the
/// body arrives (or at once, for the length it declares), and given back when the last
/// holder drops them: the request, and the work it hands them to.
#[derive(Clone)]
struct HeldBytes(Arc<Mutex<(Permit, Permit)>>);

impl HeldBytes {
    /// Nothing held yet, in `caller`'s and `app`'s budgets.
    fn new(app: &App, caller: &Caller) -> Option<HeldBytes> {
        let own = caller.bytes.try_acquire(0)?;
        let all = app.bytes.try_acquire(0)?;
        Some(HeldBytes(Arc::new(Mutex::new((own, all)))))
    }

    /// Hold `more` bytes too, if both budgets have room for them now.
    fn take(&self, more: u64) -> bool {
        let mut held = lock(&self.0);
        if !held.0.try_grow(more) {
            return false;
        }
        if !held.1.try_grow(more) {
            let back = held.0.bytes().saturating_sub(more);
            held.0.resize(back);
            return false;
        }
        true
    }
}

/// The answer when a key's (or the service's) body budget is spent.
fn bodies_busy(app: &App) -> Response {
    let message = format!(
        "as many request bodies as this key (at most {} bytes) or the service (at most {} \
         bytes) holds at once are in memory: retry when a call ends",
        app.limits.max_body_bytes_in_flight_per_key, app.limits.max_body_bytes_in_flight
    );
    retry_after(error(StatusCode::TOO_MANY_REQUESTS, &message), 1)
}

/// In front of every route: **authenticate, reserve, then read.** The key is checked before a
/// byte of the body is read (401, the body drained briefly and the connection closed); the
/// caller goes into the request's extensions. Every body but an upload's is bounded by size
/// (413), and its bytes are held in the key's and the service's budgets before they are read
/// (the length it declares, at once; more as they come): a spent budget answers 429 without
/// reading. Every body is cut when it sends nothing for [`HttpLimits::body_idle_timeout`], or,
/// once it has been sending for [`HttpLimits::body_grace`], when its average pace is under
/// [`HttpLimits::min_body_bytes_per_sec`]: a client trickling bytes cannot hold a place.
async fn admit(
    State(app): Shared,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let class = BodyClass::of(request.uri().path());
    if class == BodyClass::Open {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let caller = match app.caller(&parts.headers) {
        Ok(c) => c,
        Err(refused) => return refuse(body, refused).await,
    };
    let limits = app.limits.clone();
    let (max_bytes, weight) = match class {
        BodyClass::Upload | BodyClass::Open => (None, 0),
        BodyClass::RawJson => (Some(limits.max_tool_result_request_bytes), 1),
        BodyClass::Json => (Some(limits.max_request_bytes), JSON_BODY_WEIGHT),
    };
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let (Some(max), Some(n)) = (max_bytes, declared) {
        if n > max {
            let message = format!("the request body is {n} bytes; at most {max} are read");
            return refuse(body, error(StatusCode::PAYLOAD_TOO_LARGE, &message)).await;
        }
    }
    let Some(held) = HeldBytes::new(&app, &caller) else {
        return refuse(body, bodies_busy(&app)).await;
    };
    let mut reserved = 0u64;
    if let Some(n) = declared.filter(|_| weight > 0) {
        if !held.take(n.saturating_mul(weight)) {
            return refuse(body, bodies_busy(&app)).await;
        }
        reserved = n.saturating_mul(weight);
    }
    parts.extensions.insert(caller);
    parts.extensions.insert(held.clone());
    let started = Instant::now();
    let stream = body.into_data_stream();
    let paced = futures_util::stream::unfold(
        (stream, 0u64, reserved, false),
        move |(mut stream, mut read, mut reserved, done)| {
            let held = held.clone();
            let limits = limits.clone();
            async move {
                if done {
                    return None;
                }
                if max_bytes.is_some_and(|max| read > max) {
                    let message =
                        format!("the request body is over {} bytes", max_bytes.unwrap_or(0));
                    return Some((
                        Err(BodyCut::TooLarge(message).into_io()),
                        (stream, read, reserved, true),
                    ));
                }
                let next = tokio::time::timeout(limits.body_idle_timeout, stream.next()).await;
                let chunk = match next {
                    Err(_) => Err(BodyCut::TooSlow(format!(
                        "the body sent nothing for {} s",
                        limits.body_idle_timeout.as_secs()
                    ))
                    .into_io()),
                    Ok(None) => return None,
                    Ok(Some(Err(e))) => Err(std::io::Error::other(e)),
                    Ok(Some(Ok(chunk))) => {
                        read += chunk.len() as u64;
                        let elapsed = started.elapsed();
                        let pace = read as f64 / elapsed.as_secs_f64().max(1e-3);
                        let weighed = read.saturating_mul(weight);
                        if weighed > reserved && !held.take(weighed - reserved) {
                            Err(BodyCut::NoRoom(
                                "as many request bodies as this key or the service holds at \
                                 once are in memory: retry when a call ends"
                                    .into(),
                            )
                            .into_io())
                        } else if elapsed > limits.body_grace
                            && pace < limits.min_body_bytes_per_sec as f64
                        {
                            Err(BodyCut::TooSlow(format!(
                                "the body came at {pace:.0} bytes/s after {} s; at least {} \
                                 bytes/s are needed",
                                elapsed.as_secs(),
                                limits.min_body_bytes_per_sec
                            ))
                            .into_io())
                        } else {
                            reserved = reserved.max(weighed);
                            Ok(chunk)
                        }
                    }
                };
                let failed = chunk.is_err();
                Some((chunk, (stream, read, reserved, failed)))
            }
        },
    );
    next.run(axum::extract::Request::from_parts(
        parts,
        Body::from_stream(paced),
    ))
    .await
}

/// Read a request's whole body (bounded by [`admit`]), or the answer saying why it could not
/// be: 408 (too slow), 413 (too large), 429 (no room in the budgets), 400.
async fn read_body(body: Body) -> Result<Bytes, Response> {
    match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => Ok(bytes),
        Err(e) => Err(match BodyCut::of(&e) {
            Some(cut) => body_cut(cut),
            None => {
                // The innermost words say what went wrong (the HTTP layers only wrap them).
                let mut message = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(inner) = source {
                    message = inner.to_string();
                    source = inner.source();
                }
                close(error(StatusCode::BAD_REQUEST, &message))
            }
        }),
    }
}

/// The answer to a body cut while it was read: 408, 429 (retry after a second) or 413, the
/// connection closed (the rest of the body is not read).
fn body_cut(cut: &BodyCut) -> Response {
    let message = cut.to_string();
    match cut {
        BodyCut::TooSlow(_) => close(error(StatusCode::REQUEST_TIMEOUT, &message)),
        BodyCut::NoRoom(_) => retry_after(close(error(StatusCode::TOO_MANY_REQUESTS, &message)), 1),
        BodyCut::TooLarge(_) => close(error(StatusCode::PAYLOAD_TOO_LARGE, &message)),
    }
}

/// In front of `/mcp`: the request's key gives the scope its tool calls answer in (401
/// without a valid key, like every `/v1` route), and a session belongs to the key that
/// opened it: another key's session id is answered as an unknown one, and a key holds at
/// most `max_mcp_sessions_per_key` sessions.
async fn mcp_scope(
    State(app): Shared,
    Extension(caller): Extension<Caller>,
    Extension(held): Extension<HeldBytes>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    // A message's values are counted before the MCP server parses it into values.
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    if !bytes.is_empty() {
        let budget = ingest_base::bounded_json::value_budget(bytes.len());
        if let Err(e) = ingest_base::bounded_json::check_values(&bytes, budget) {
            return error(StatusCode::BAD_REQUEST, &format!("the MCP message: {e}"));
        }
    }
    let mut request = axum::extract::Request::from_parts(parts, Body::from(bytes));
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(id) = &session {
        let owner = lock(&app.mcp_owners).get(id).cloned();
        if owner.as_deref() != Some(caller.key_id.as_str()) {
            // Ask for a session nobody has: the answer is exactly a missing one's.
            let nobody = format!("{:032x}", ingest_base::access::random_u128());
            if let Ok(v) = HeaderValue::from_str(&nobody) {
                request.headers_mut().insert("mcp-session-id", v);
            }
        }
    }
    let opening = session.is_none() && request.method() == axum::http::Method::POST;
    // Sessions that ended are forgotten first; then the open ones and those being opened
    // now are counted and this one taken in one step, so that requests racing each other
    // cannot all pass the cap. The place is given back however the request ends (a client
    // gone mid-request drops this future).
    let _opening_place = if opening {
        app.forget_ended_sessions(&caller.key_id).await;
        let open = lock(&app.mcp_owners)
            .values()
            .filter(|k| **k == caller.key_id)
            .count();
        let max = app.max_mcp_sessions_per_key;
        let place = app.mcp_opening.take(caller.key_id.clone(), |being_opened| {
            open + being_opened < max
        });
        if place.is_none() {
            let message = format!(
                "this key holds {max} MCP sessions, the most it may: end one (DELETE /mcp with \
                 its Mcp-Session-Id) or let one expire"
            );
            return retry_after(error(StatusCode::TOO_MANY_REQUESTS, &message), 5);
        }
        place
    } else {
        None
    };
    let ending = request.method() == axum::http::Method::DELETE;
    request.extensions_mut().insert(crate::mcp::RequestScope {
        scope: caller.scope.clone(),
        key_id: caller.key_id.clone(),
        slots: Some(Arc::clone(&caller.queries)),
        heavy: Some(Arc::clone(&caller.heavy)),
        held: Some(Arc::new(held)),
    });
    let response = next.run(request).await;
    let mut owners = lock(&app.mcp_owners);
    match (&session, response.headers().get("mcp-session-id")) {
        (None, Some(new)) => {
            if let Ok(new) = new.to_str() {
                owners.insert(new.to_string(), caller.key_id.clone());
            }
        }
        (Some(id), _)
            if ending
                && response.status().is_success()
                && owners.get(id) == Some(&caller.key_id) =>
        {
            owners.remove(id);
        }
        _ => {}
    }
    response
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    json_response(status, &json!({ "error": message }))
}

fn retry_after(mut response: Response, secs: u64) -> Response {
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

/// The HTTP answer to a library error.
fn error_of(e: &Error) -> Response {
    let message = e.to_string();
    match e {
        Error::NotFound(_) => error(StatusCode::NOT_FOUND, &message),
        Error::Forbidden(_) => error(StatusCode::FORBIDDEN, &message),
        Error::Quota(_) => error(StatusCode::INSUFFICIENT_STORAGE, &message),
        Error::TooLarge { .. } => error(StatusCode::PAYLOAD_TOO_LARGE, &message),
        Error::Busy {
            retry_after_secs, ..
        } => retry_after(
            error(StatusCode::TOO_MANY_REQUESTS, &message),
            *retry_after_secs,
        ),
        Error::QueueFull {
            retry_after_secs, ..
        } => retry_after(
            error(StatusCode::SERVICE_UNAVAILABLE, &message),
            *retry_after_secs,
        ),
        Error::ShuttingDown => retry_after(error(StatusCode::SERVICE_UNAVAILABLE, &message), 5),
        Error::BodyCut(cut) => body_cut(cut),
        Error::Upload(_) | Error::Config(_) | Error::Scope(_) | Error::Request(_) => {
            error(StatusCode::BAD_REQUEST, &message)
        }
        _ => {
            // The details (paths of the data directory, the store's words) go to the log,
            // never to the caller; the id matches the two.
            let id = format!("{:08x}", ingest_base::access::random_u128() as u32);
            tracing::error!(error_id = %id, "request failed: {message}");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("the service could not complete the request (logged as {id})"),
            )
        }
    }
}

/// `response` with `Connection: close`: the request's body was not read to its end, so the
/// connection cannot carry another request.
fn close(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

impl App {
    /// Forget the MCP sessions of key `key_id` that ended or expired.
    async fn forget_ended_sessions(&self, key_id: &str) {
        let mine: Vec<String> = lock(&self.mcp_owners)
            .iter()
            .filter(|(_, k)| k.as_str() == key_id)
            .map(|(id, _)| id.clone())
            .collect();
        let live = self.mcp_sessions.sessions.read().await;
        let gone: Vec<String> = mine
            .into_iter()
            .filter(|id| !live.contains_key(id.as_str()))
            .collect();
        drop(live);
        let mut owners = lock(&self.mcp_owners);
        for id in gone {
            owners.remove(&id);
        }
    }

    /// One of the `max_queries` slots and one of the caller's own, if both are free.
    fn query_slot(&self, caller: &Caller) -> Option<QuerySlot> {
        let own = Arc::clone(&caller.queries).try_acquire_owned().ok()?;
        let all = Arc::clone(&self.queries).try_acquire_owned().ok()?;
        Some((own, all))
    }

    /// The caller of the request's key, or the 401 answer.
    fn caller(&self, headers: &HeaderMap) -> Result<Caller, Response> {
        match bearer(headers).and_then(|k| self.keys.get(blake3::hash(k.as_bytes()).as_bytes())) {
            Some(caller) => Ok(caller.clone()),
            None => {
                let mut r = error(
                    StatusCode::UNAUTHORIZED,
                    "a valid API key is needed: Authorization: Bearer KEY",
                );
                r.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                Err(r)
            }
        }
    }
}

/// The `Authorization: Bearer KEY` of a request.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// One of the caller's places for a heavy tool call ([`ingest::tools::ToolSpec::heavy`]), if
/// `tool` is one; `Err` with the refusal when all are taken.
fn heavy_slot(
    caller: &Caller,
    tool: &str,
) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Error> {
    if !ingest::tools::is_heavy(tool) {
        return Ok(None);
    }
    Arc::clone(&caller.heavy)
        .try_acquire_owned()
        .map(Some)
        .map_err(|_| Error::Busy {
            reason: ingest::tools::heavy_busy(tool),
            retry_after_secs: 2,
        })
}

/// The answer when every query slot is taken.
fn queries_busy() -> Error {
    Error::Busy {
        reason: "as many searches and tool calls as the service answers at once".into(),
        retry_after_secs: 1,
    }
}

fn query(raw: Option<String>) -> HashMap<String, String> {
    form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

fn flag(q: &HashMap<String, String>, name: &str) -> bool {
    q.get(name)
        .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "yes"))
}

fn accepted(id: &JobId) -> Response {
    let url = format!("/v1/jobs/{id}");
    let mut r = json_response(
        StatusCode::ACCEPTED,
        &json!({ "job": id, "status_url": url }),
    );
    if let Ok(v) = HeaderValue::from_str(&url) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// A refusal before the body was read: drain what the client is still sending for a moment
/// (so a fast client reads the answer, not a broken pipe), never longer than
/// two seconds, then answer and close the connection.
async fn refuse(body: Body, response: Response) -> Response {
    crate::async_uploads::drain(body.into_data_stream()).await;
    close(response)
}

async fn upload(
    State(app): Shared,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let caller = match app.caller(&headers) {
        Ok(c) => c,
        Err(r) => return refuse(body, r).await,
    };
    let q = query(raw);
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > app.max_upload_bytes) {
        app.uploads.blocking().refused_too_large();
        let too_large = error_of(&Error::TooLarge {
            limit: app.max_upload_bytes,
        });
        return refuse(body, too_large).await;
    }
    let options = UploadOptions {
        shared: flag(&q, "shared"),
        tags: q
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("tag.")?.to_string(), v.clone())))
            .collect(),
        ..UploadOptions::default()
    };
    if let Err(e) = ingest::encode_tags(&options.tags) {
        return refuse(body, error_of(&e)).await;
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if !content_type.starts_with("multipart/form-data") && !q.contains_key("name") {
        let unnamed = error(
            StatusCode::BAD_REQUEST,
            "name the upload: POST /v1/files?name=NAME",
        );
        return refuse(body, unnamed).await;
    }
    // A place to receive it, before a byte of the body is read: a refusal costs nothing.
    let reservation = match app.uploads.reserve(caller.scope.clone()).await {
        Ok(r) => r,
        Err(e) => return refuse(body, error_of(&e)).await,
    };
    if !content_type.starts_with("multipart/form-data") {
        let name = q.get("name").cloned().unwrap_or_default();
        let submitted = app
            .uploads
            .submit_reserved(reservation, name, body.into_data_stream(), options)
            .await;
        return match submitted {
            Ok(id) => {
                tracing::info!(face = "http", key = %caller.key_id, job = %id, "upload accepted");
                accepted(&id)
            }
            Err(e) => error_of(&e),
        };
    }
    multipart(&app, &caller, &q, &content_type, body, reservation, options).await
}

/// The most bytes a multipart part's headers may take.
const MAX_PART_HEADER_BYTES: usize = 16 * 1024;

/// Watches a multipart body go by: after every boundary, the part's headers must end (a blank
/// line) within [`MAX_PART_HEADER_BYTES`]. Bytes pass through unchanged; only a little of the
/// last chunk is kept, to find what lies across two chunks.
struct PartHeaders {
    /// `--BOUNDARY`.
    delimiter: Vec<u8>,
    /// The end of the previous chunk, where a delimiter or a blank line may have begun.
    tail: Vec<u8>,
    /// Header bytes seen since the last delimiter, while its headers have not ended.
    in_headers: Option<usize>,
}

impl PartHeaders {
    fn new(boundary: &str) -> Self {
        PartHeaders {
            delimiter: format!("--{boundary}").into_bytes(),
            tail: Vec::new(),
            in_headers: None,
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> Result<(), String> {
        let mut data = std::mem::take(&mut self.tail);
        data.extend_from_slice(chunk);
        let mut at = 0;
        loop {
            let rest = data.get(at..).unwrap_or_default();
            match self.in_headers {
                Some(seen) => match memchr::memmem::find(rest, b"\r\n\r\n") {
                    Some(i) => {
                        self.in_headers = None;
                        at += i + 4;
                    }
                    None => {
                        let keep = rest.len().min(3);
                        let seen = seen + rest.len() - keep;
                        if seen > MAX_PART_HEADER_BYTES {
                            return Err(format!(
                                "multipart: a part's headers are over {MAX_PART_HEADER_BYTES} bytes"
                            ));
                        }
                        self.in_headers = Some(seen);
                        self.tail = rest.get(rest.len() - keep..).unwrap_or_default().to_vec();
                        return Ok(());
                    }
                },
                None => match memchr::memmem::find(rest, &self.delimiter) {
                    Some(i) => {
                        self.in_headers = Some(0);
                        at += i + self.delimiter.len();
                    }
                    None => {
                        let keep = rest.len().min(self.delimiter.len().saturating_sub(1));
                        self.tail = rest.get(rest.len() - keep..).unwrap_or_default().to_vec();
                        return Ok(());
                    }
                },
            }
        }
    }
}

/// A multipart upload: every file field is an upload of its own (named by its file name,
/// the first by `?name=` when given), each taking its own place to be received. One file:
/// the answer of a plain upload. Several: that, for the first, and `files` with each one's
/// job or why it was refused.
async fn multipart(
    app: &App,
    caller: &Caller,
    q: &HashMap<String, String>,
    content_type: &str,
    body: Body,
    first: ingest::Reservation,
    options: UploadOptions,
) -> Response {
    let boundary = match multer::parse_boundary(content_type) {
        Ok(b) => b,
        Err(e) => return close(error(StatusCode::BAD_REQUEST, &format!("multipart: {e}"))),
    };
    // The whole body, every part and the parts between them, is one upload's size at most.
    let whole =
        multer::SizeLimit::new().whole_stream(app.max_upload_bytes.saturating_add(64 << 10));
    let constraints = multer::Constraints::new().size_limit(whole);
    // Every part's headers end within MAX_PART_HEADER_BYTES, or the body is cut: multer
    // itself keeps reading a header that never ends.
    let mut guard = PartHeaders::new(&boundary);
    // multer reports a stream error without its words or kind: keep them to answer with.
    let cut: Arc<Mutex<Option<Error>>> = Arc::default();
    let why = Arc::clone(&cut);
    let stream = body.into_data_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| {
            let e = std::io::Error::other(e);
            if let Some(kind) = BodyCut::of(&e) {
                *lock(&why) = Some(Error::BodyCut(kind.clone()));
            }
            e
        })?;
        if let Err(e) = guard.feed(&chunk) {
            *lock(&why) = Some(Error::Upload(e.clone()));
            return Err(std::io::Error::other(e));
        }
        Ok::<_, std::io::Error>(chunk)
    });
    let mut parts = multer::Multipart::with_constraints(stream, boundary, constraints);
    let mut reservation = Some(first);
    let mut files: Vec<Value> = Vec::new();
    let mut first_outcome: Option<Result<JobId, Error>> = None;
    loop {
        let field = match parts.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                let e = lock(&cut)
                    .take()
                    .unwrap_or_else(|| Error::Upload(format!("multipart: {e}")));
                if first_outcome.is_none() {
                    return close(error_of(&e));
                }
                files.push(json!({ "error": e.to_string() }));
                break;
            }
        };
        if field.file_name().is_none() && field.name() != Some("file") {
            continue;
        }
        let name = match (files.is_empty(), q.get("name")) {
            (true, Some(n)) => Some(n.clone()),
            _ => field.file_name().map(str::to_string),
        };
        let Some(name) = name else {
            let e = Error::Upload("a file field has no file name: add ?name=NAME".into());
            if first_outcome.is_none() {
                return close(error_of(&e));
            }
            files.push(json!({ "error": e.to_string() }));
            continue;
        };
        let place = match reservation.take() {
            Some(r) => Ok(r),
            None => app.uploads.reserve(caller.scope.clone()).await,
        };
        let outcome = match place {
            Ok(r) => {
                app.uploads
                    .submit_reserved(r, name.clone(), field, options.clone())
                    .await
            }
            // Not read: the stream skips the field when the next one is asked for.
            Err(e) => Err(e),
        };
        if let Ok(id) = &outcome {
            tracing::info!(face = "http", key = %caller.key_id, job = %id, "upload accepted");
        }
        files.push(match &outcome {
            Ok(id) => json!({ "name": name, "job": id, "status_url": format!("/v1/jobs/{id}") }),
            Err(e) => json!({ "name": name, "error": e.to_string() }),
        });
        if first_outcome.is_none() {
            first_outcome = Some(outcome);
        }
    }
    match first_outcome {
        None => close(error(
            StatusCode::BAD_REQUEST,
            "the multipart body has no file field",
        )),
        Some(Err(e)) if files.len() == 1 => error_of(&e),
        Some(first) => {
            let mut r = match &first {
                Ok(id) => accepted(id),
                Err(_) => json_response(StatusCode::ACCEPTED, &json!({})),
            };
            if files.len() > 1 {
                let mut v: Value = match &first {
                    Ok(id) => json!({ "job": id, "status_url": format!("/v1/jobs/{id}") }),
                    Err(_) => json!({}),
                };
                if let Some(m) = v.as_object_mut() {
                    m.insert("files".into(), Value::Array(files));
                }
                let location = r.headers().get(header::LOCATION).cloned();
                r = json_response(StatusCode::ACCEPTED, &v);
                if let Some(l) = location {
                    r.headers_mut().insert(header::LOCATION, l);
                }
            }
            r
        }
    }
}

async fn job(State(app): Shared, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let scope = match app.caller(&headers) {
        Ok(c) => c.scope,
        Err(r) => return r,
    };
    let Ok(id) = id.parse::<JobId>() else {
        return error(StatusCode::NOT_FOUND, &format!("no job {id}"));
    };
    match app.uploads.job(id.clone(), scope).await {
        Some(status) => json_response(StatusCode::OK, &json!(status)),
        None => error(StatusCode::NOT_FOUND, &format!("no job {id}")),
    }
}

/// The `locator` query parameter and the scope (shared with `?shared=true`).
fn locator_and_scope(
    app: &App,
    headers: &HeaderMap,
    raw: Option<String>,
) -> Result<(String, Scope, Caller), Response> {
    let caller = app.caller(headers)?;
    let mut scope = caller.scope.clone();
    let q = query(raw);
    scope.is_shared = flag(&q, "shared");
    match q.get("locator").filter(|l| !l.is_empty()) {
        Some(l) => Ok((l.clone(), scope, caller)),
        None => Err(error(
            StatusCode::BAD_REQUEST,
            "which file? add ?locator=LOCATOR",
        )),
    }
}

async fn file_status(State(app): Shared, RawQuery(raw): RawQuery, headers: HeaderMap) -> Response {
    let (locator, scope, _) = match locator_and_scope(&app, &headers, raw) {
        Ok(x) => x,
        Err(r) => return r,
    };
    match app.uploads.file_status(locator.clone(), scope).await {
        Some(state) => json_response(StatusCode::OK, &json!(state)),
        None => error(StatusCode::NOT_FOUND, &format!("no file {locator}")),
    }
}

async fn delete_file(State(app): Shared, RawQuery(raw): RawQuery, headers: HeaderMap) -> Response {
    let (locator, scope, caller) = match locator_and_scope(&app, &headers, raw) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let id = match app.uploads.delete(locator, scope.clone()).await {
        Ok(id) => {
            tracing::info!(face = "http", key = %caller.key_id, job = %id, "delete accepted");
            id
        }
        Err(e) => return error_of(&e),
    };
    match app.uploads.wait(id.clone(), scope, DELETE_WAIT).await {
        Some(status) if status.state.is_final() => json_response(StatusCode::OK, &json!(status)),
        _ => accepted(&id),
    }
}

/// Run `work` on the blocking pool holding `held` (the caller's query places and body bytes)
/// until it ends, whatever becomes of the request: a client that goes away frees no place
/// while its work still runs. `work` is told when the request was dropped.
async fn run_held<T: Send + 'static>(
    app: &App,
    held: impl Send + 'static,
    work: impl FnOnce(&std::sync::atomic::AtomicBool) -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _cancel = ingest::tools::StopOnDrop(Arc::clone(&stop));
    let working = app.working.clone();
    tokio::task::spawn_blocking(move || {
        let _held = held;
        let _counted = working.enter();
        work(&stop)
    })
    .await
}

/// `POST /v1/search`: the arguments of the `search_documents` tool (`tools::SearchArgs`:
/// the same fields, filters and checks on every face), answered with each hit's whole chunk
/// instead of the tool's budgeted snippets — so `max_chars` and `cursor`, which page that
/// budget, are refused here. `limit` defaults to 10.
async fn search(
    State(app): Shared,
    Extension(caller): Extension<Caller>,
    Extension(held): Extension<HeldBytes>,
    body: Body,
) -> Response {
    let scope = caller.scope.clone();
    let Some(slot) = app.query_slot(&caller) else {
        return refuse(body, error_of(&queries_busy())).await;
    };
    let body = match read_body(body).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    let args: ingest::tools::SearchArgs = match ingest_base::bounded_json::parse(&body) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("search request: {e}")),
    };
    drop(body);
    if args.max_chars.is_some() || args.cursor.is_some() {
        return error(
            StatusCode::BAD_REQUEST,
            "max_chars and cursor page the tool's budgeted answer (POST \
             /v1/tools/search_documents); /v1/search answers whole chunks, `limit` of them",
        );
    }
    let ingestor = Arc::clone(app.uploads.blocking().ingestor());
    let found = run_held(&app, (slot, held), move |_| {
        let hits = ingest::tools::search_hits(&ingestor, &scope, &args, HTTP_SEARCH_LIMIT)?;
        let boxes = ingest::tools::boxes_of(&ingestor, &args, &hits, 0);
        Ok::<_, ingest::tools::ToolError>((hits, boxes, args.min_score))
    })
    .await;
    let response = match found {
        Ok(Ok((hits, boxes, floor))) => {
            let hits_json: Vec<Value> = hits
                .iter()
                .zip(boxes)
                .map(|(h, boxes)| {
                    let mut v = json!(h);
                    if let Some(m) = v.as_object_mut() {
                        ingest::tools::note_owner(m, &caller.scope, &h.owner);
                        if let Some(boxes) = boxes {
                            m.insert("boxes".into(), boxes);
                        }
                    }
                    v
                })
                .collect();
            let note = ingest::tools::search_note(&hits, floor);
            let mut answer = json!({ "hits": hits_json });
            if let Some(m) = answer.as_object_mut() {
                if let Some(floor) = floor {
                    m.insert("min_score".into(), json!(floor));
                }
                if let Some(note) = note {
                    m.insert("note".into(), json!(note));
                }
            }
            json_response(StatusCode::OK, &answer)
        }
        Ok(Err(ingest::tools::ToolError::Internal(e))) => error_of(&e),
        Ok(Err(e @ ingest::tools::ToolError::NotFound(_))) => {
            error(StatusCode::NOT_FOUND, &e.to_string())
        }
        Ok(Err(e)) => error(StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    tracing::info!(
        face = "http",
        key = %caller.key_id,
        route = "search",
        status = response.status().as_u16(),
        "search"
    );
    response
}

/// `POST /v1/tools/{tool}`: the caller's places are taken before its arguments are read, and
/// held by the call's work until it ends.
async fn tool(
    State(app): Shared,
    Path(name): Path<String>,
    Extension(caller): Extension<Caller>,
    Extension(held): Extension<HeldBytes>,
    body: Body,
) -> Response {
    let scope = caller.scope.clone();
    if !ingest::tools::TOOL_NAMES.contains(&name.as_str()) {
        let missing = error(
            StatusCode::NOT_FOUND,
            &format!(
                "no tool {name}; the tools are {}",
                ingest::tools::TOOL_NAMES.join(", ")
            ),
        );
        return refuse(body, missing).await;
    }
    let heavy = match heavy_slot(&caller, &name) {
        Ok(h) => h,
        Err(e) => return refuse(body, error_of(&e)).await,
    };
    let Some(slot) = app.query_slot(&caller) else {
        return refuse(body, error_of(&queries_busy())).await;
    };
    let body = match read_body(body).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    let call = match ingest::tools::ToolCall::from_json(&name, &body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    drop(body);
    let host = Arc::clone(&app.tools);
    let answered = run_held(&app, (slot, heavy, held), move |stop| {
        host.call_until(&scope, &call, stop)
    })
    .await;
    match answered {
        Ok(Ok((answer, _))) => {
            // Like an MCP call's line: who, which tool, how much, a hash; never the text.
            tracing::info!(
                face = "http",
                key = %caller.key_id,
                tool = %name,
                chars = answer.text.len(),
                answer_hash = %ingest::tools::short_hash(&answer.text),
                is_error = answer.is_error,
                "tool call"
            );
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                answer.to_json_text(),
            )
                .into_response()
        }
        Ok(Err(e)) => error_of(&e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// Liveness only: no key is needed, so nothing about the service's work is said.
async fn health() -> Response {
    json_response(StatusCode::OK, &json!({ "status": "ok" }))
}

/// Counters of every tenant's work together: for the operator's `metrics_key` only (or for
/// anyone with `public_metrics`), never for an API key.
async fn metrics(State(app): Shared, headers: HeaderMap) -> Response {
    if !app.public_metrics {
        let Some(expected) = app.metrics_key else {
            return error(
                StatusCode::NOT_FOUND,
                "metrics are off: set metrics_key (or public_metrics) in the configuration",
            );
        };
        let given = bearer(&headers).map(|k| *blake3::hash(k.as_bytes()).as_bytes());
        if given != Some(expected) {
            let mut r = error(
                StatusCode::UNAUTHORIZED,
                "the metrics key is needed: Authorization: Bearer METRICS_KEY",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    let (working, peak) = app.working.read();
    let text = format!(
        "{}# HELP ingest_queries_working Searches and tool calls at work now (HTTP and MCP).\n\
         # TYPE ingest_queries_working gauge\ningest_queries_working {working}\n\
         # HELP ingest_queries_working_peak The most searches and tool calls at work at once since the start.\n\
         # TYPE ingest_queries_working_peak gauge\ningest_queries_working_peak {peak}\n",
        app.uploads.metrics().await
    );
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        text,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_headers_must_end_soon_after_each_boundary() {
        let body = b"--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n\
                     data data\r\n--XYZ\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\nv\r\n--XYZ--\r\n";
        // Whole, and in every split into two chunks (boundaries across chunks).
        for cut in 0..body.len() {
            let mut g = PartHeaders::new("XYZ");
            g.feed(&body[..cut]).unwrap();
            g.feed(&body[cut..]).unwrap();
        }
        // Long data is fine; a header that never ends is cut.
        let mut g = PartHeaders::new("XYZ");
        g.feed(b"--XYZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n")
            .unwrap();
        for _ in 0..100 {
            g.feed(&[b'A'; 64 * 1024]).unwrap();
        }
        let mut g = PartHeaders::new("XYZ");
        g.feed(b"--XYZ\r\nX-Long: ").unwrap();
        let mut failed = false;
        for _ in 0..10 {
            if g.feed(&[b'A'; 4096]).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "an endless header passed");
    }
}
