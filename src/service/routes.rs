//! The service's routes: authentication, request parsing, and the mapping of the library's
//! errors to HTTP statuses.
//!
//! | route | answer |
//! |---|---|
//! | `POST /v1/files?name=NAME[&shared=true][&tag.KEY=VALUE…]` (raw body, or multipart with a file field) | 202 `{"job", "status_url"}` |
//! | `GET /v1/jobs/{id}` | the job: state, reason, one line per file |
//! | `GET /v1/files/status?locator=L` | where a file stands (and its members) |
//! | `DELETE /v1/files?locator=L` | 200 with the ended delete job (202 if it takes over 30 s) |
//! | `POST /v1/search` `{"query", "limit", "min_score", "mode", "filters"}` | `{"hits": [...]}` |
//! | `POST /v1/tools/{tool}` (the tool's JSON arguments) | the tool's answer, within its budget |
//! | `POST/GET/DELETE /mcp` | the same tools over MCP (streamable HTTP), each request in its key's scope |
//! | `GET /health`, `GET /metrics` | liveness; Prometheus text |

// Helpers return the ready error answer as their `Err`: it is the handler's reply at once.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use extractors::Scope;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{ServiceConfig, DEFAULT_MAX_QUERIES};
use crate::agent::ToolHost;
use crate::error::Error;
use crate::index::{SearchFilter, SearchMode};
use crate::uploads::{AsyncUploads, JobId, UploadOptions, Uploads};

/// How long `DELETE /v1/files` waits for its job before answering 202.
const DELETE_WAIT: Duration = Duration::from_secs(30);

/// Hits a search may ask for.
const MAX_HITS: usize = 100;

struct App {
    uploads: AsyncUploads,
    /// blake3 of each key → its scope (a lookup by hash: no timing leak on the key).
    keys: HashMap<[u8; 32], Scope>,
    tools: Arc<ToolHost>,
    queries: Arc<tokio::sync::Semaphore>,
    max_upload_bytes: u64,
}

type Shared = State<Arc<App>>;

/// The service's routes over `uploads`, with `config`'s keys and bounds. Cancel `sessions`
/// to end the open MCP sessions.
pub fn router(
    uploads: Arc<Uploads>,
    config: &ServiceConfig,
    sessions: crate::mcp::CancellationToken,
) -> axum::Router {
    let keys = config
        .api_keys
        .iter()
        .map(|k| (*blake3::hash(k.key.as_bytes()).as_bytes(), k.scope()))
        .collect();
    let app = App {
        tools: Arc::new(ToolHost::with_ingestor(Arc::clone(uploads.ingestor()))),
        max_upload_bytes: uploads.config().max_upload_bytes,
        uploads: AsyncUploads::new(uploads),
        keys,
        queries: Arc::new(tokio::sync::Semaphore::new(
            config.max_queries.unwrap_or(DEFAULT_MAX_QUERIES).max(1),
        )),
    };
    let app = Arc::new(app);
    let mcp =
        crate::mcp::keyed_http_router(Arc::clone(&app.tools), Arc::clone(&app.queries), sessions)
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&app),
                mcp_scope,
            ));
    axum::Router::new()
        .route("/v1/files", post(upload).delete(delete_file))
        .route("/v1/files/status", get(file_status))
        .route("/v1/jobs/{id}", get(job))
        .route("/v1/search", post(search))
        .route("/v1/tools/{tool}", post(tool))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .with_state(app)
        .merge(mcp)
}

/// In front of `/mcp`: the request's key gives the scope its tool calls answer in (401
/// without a valid key, like every `/v1` route).
async fn mcp_scope(
    State(app): Shared,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match app.scope(request.headers()) {
        Ok(scope) => {
            request
                .extensions_mut()
                .insert(crate::mcp::RequestScope(scope));
            next.run(request).await
        }
        Err(refused) => refused,
    }
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
        Error::Upload(_) | Error::Config(_) => error(StatusCode::BAD_REQUEST, &message),
        _ => {
            tracing::error!("request failed: {message}");
            error(StatusCode::INTERNAL_SERVER_ERROR, &message)
        }
    }
}

impl App {
    /// One of the `max_queries` slots, if free.
    fn query_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        Arc::clone(&self.queries).try_acquire_owned().ok()
    }

    /// The scope of the request's key, or the 401 answer.
    fn scope(&self, headers: &HeaderMap) -> Result<Scope, Response> {
        let key = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        match key.and_then(|k| self.keys.get(blake3::hash(k.as_bytes()).as_bytes())) {
            Some(scope) => Ok(scope.clone()),
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

async fn upload(
    State(app): Shared,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // A refusal before the body is read drains it first (up to a bound), so that a client
    // still sending reads the answer instead of a broken pipe.
    let scope = match app.scope(&headers) {
        Ok(s) => s,
        Err(r) => {
            crate::uploads::drain(body.into_data_stream()).await;
            return r;
        }
    };
    let q = query(raw);
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > app.max_upload_bytes) {
        app.uploads.blocking().refused_too_large();
        crate::uploads::drain(body.into_data_stream()).await;
        return error_of(&Error::TooLarge {
            limit: app.max_upload_bytes,
        });
    }
    let options = UploadOptions {
        shared: flag(&q, "shared"),
        tags: q
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("tag.")?.to_string(), v.clone())))
            .collect(),
        ..UploadOptions::default()
    };
    if let Err(e) = crate::uploads::encode_tags(&options.tags) {
        crate::uploads::drain(body.into_data_stream()).await;
        return error_of(&e);
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let submitted = if content_type.starts_with("multipart/form-data") {
        let boundary = match multer::parse_boundary(content_type) {
            Ok(b) => b,
            Err(e) => return error(StatusCode::BAD_REQUEST, &format!("multipart: {e}")),
        };
        let mut parts = multer::Multipart::new(body.into_data_stream(), boundary);
        loop {
            match parts.next_field().await {
                Ok(Some(field)) => {
                    if field.file_name().is_none() && field.name() != Some("file") {
                        continue;
                    }
                    let Some(name) = q
                        .get("name")
                        .cloned()
                        .or_else(|| field.file_name().map(str::to_string))
                    else {
                        return error(
                            StatusCode::BAD_REQUEST,
                            "the file field has no file name: add ?name=NAME",
                        );
                    };
                    break app.uploads.submit(name, field, scope, options).await;
                }
                Ok(None) => {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "the multipart body has no file field",
                    )
                }
                Err(e) => return error(StatusCode::BAD_REQUEST, &format!("multipart: {e}")),
            }
        }
    } else {
        let Some(name) = q.get("name").cloned() else {
            crate::uploads::drain(body.into_data_stream()).await;
            return error(
                StatusCode::BAD_REQUEST,
                "name the upload: POST /v1/files?name=NAME",
            );
        };
        app.uploads
            .submit(name, body.into_data_stream(), scope, options)
            .await
    };
    match submitted {
        Ok(id) => accepted(&id),
        Err(e) => error_of(&e),
    }
}

async fn job(State(app): Shared, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let scope = match app.scope(&headers) {
        Ok(s) => s,
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
) -> Result<(String, Scope), Response> {
    let mut scope = app.scope(headers)?;
    let q = query(raw);
    scope.is_shared = flag(&q, "shared");
    match q.get("locator").filter(|l| !l.is_empty()) {
        Some(l) => Ok((l.clone(), scope)),
        None => Err(error(
            StatusCode::BAD_REQUEST,
            "which file? add ?locator=LOCATOR",
        )),
    }
}

async fn file_status(State(app): Shared, RawQuery(raw): RawQuery, headers: HeaderMap) -> Response {
    let (locator, scope) = match locator_and_scope(&app, &headers, raw) {
        Ok(x) => x,
        Err(r) => return r,
    };
    match app.uploads.file_status(locator.clone(), scope).await {
        Some(state) => json_response(StatusCode::OK, &json!(state)),
        None => error(StatusCode::NOT_FOUND, &format!("no file {locator}")),
    }
}

async fn delete_file(State(app): Shared, RawQuery(raw): RawQuery, headers: HeaderMap) -> Response {
    let (locator, scope) = match locator_and_scope(&app, &headers, raw) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let id = match app.uploads.delete(locator, scope.clone()).await {
        Ok(id) => id,
        Err(e) => return error_of(&e),
    };
    match app.uploads.wait(id.clone(), scope, DELETE_WAIT).await {
        Some(status) if status.state.is_final() => json_response(StatusCode::OK, &json!(status)),
        _ => accepted(&id),
    }
}

/// `POST /v1/search`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchRequest {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    min_score: Option<f32>,
    #[serde(default)]
    mode: Option<SearchMode>,
    #[serde(default)]
    filters: SearchFilters,
}

/// The `filters` of a search: every one given must hold.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchFilters {
    /// Under this locator (a file, an archive at any depth).
    locator: Option<String>,
    /// `text`, `image`, `videostream`, `audiostream`, `other`.
    content_type: Option<String>,
    /// `"12"` or `"10-14"` (1-based physical pages).
    pages: Option<String>,
    /// A section path (`2 Setup › 2.1 Install`).
    section: Option<String>,
    sheet: Option<String>,
    slide: Option<u32>,
    /// User tags the file was uploaded with: `{"team": "ops"}`; every one must be present.
    #[serde(default)]
    tags: std::collections::BTreeMap<String, String>,
}

impl SearchFilters {
    fn filter(&self) -> Result<SearchFilter, String> {
        Ok(SearchFilter {
            locator_prefix: self.locator.clone(),
            content_type: self
                .content_type
                .as_deref()
                .map(crate::tools::parse_type)
                .transpose()
                .map_err(|e| e.to_string())?,
            pages: self
                .pages
                .as_deref()
                .map(crate::tools::parse_pages)
                .transpose()
                .map_err(|e| e.to_string())?,
            section_path: self.section.clone(),
            sheet: self.sheet.clone(),
            slide: self.slide,
            tags: crate::uploads::encode_tags(&self.tags).map_err(|e| e.to_string())?,
        })
    }
}

async fn search(State(app): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let scope = match app.scope(&headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let request: SearchRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("search request: {e}")),
    };
    let filter = match request.filters.filter() {
        Ok(f) => f,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    let Some(_permit) = app.query_slot() else {
        return error_of(&queries_busy());
    };
    let ingestor = Arc::clone(app.uploads.blocking().ingestor());
    let limit = request.limit.unwrap_or(10).min(MAX_HITS);
    let found = tokio::task::spawn_blocking(move || {
        ingestor.search_filtered(
            &request.query,
            &scope,
            limit,
            request.min_score,
            &filter,
            request.mode.unwrap_or_default(),
        )
    })
    .await;
    match found {
        Ok(Ok(hits)) => json_response(StatusCode::OK, &json!({ "hits": hits })),
        Ok(Err(e)) => error_of(&e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

async fn tool(
    State(app): Shared,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let scope = match app.scope(&headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    if !crate::tools::TOOL_NAMES.contains(&name.as_str()) {
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "no tool {name}; the tools are {}",
                crate::tools::TOOL_NAMES.join(", ")
            ),
        );
    }
    let args: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => return error(StatusCode::BAD_REQUEST, &format!("arguments: {e}")),
        }
    };
    let call = match crate::mcp::parse_call(&name, args) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    let Some(_permit) = app.query_slot() else {
        return error_of(&queries_busy());
    };
    let host = Arc::clone(&app.tools);
    match tokio::task::spawn_blocking(move || host.call(&scope, &call)).await {
        Ok(Ok(answer)) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            answer.text,
        )
            .into_response(),
        Ok(Err(e)) => error_of(&e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

async fn health(State(app): Shared) -> Response {
    let uploads = Arc::clone(app.uploads.blocking());
    let open = tokio::task::spawn_blocking(move || uploads.open_jobs())
        .await
        .unwrap_or_default();
    json_response(
        StatusCode::OK,
        &json!({ "status": "ok", "open_jobs": open }),
    )
}

async fn metrics(State(app): Shared) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.uploads.metrics().await,
    )
        .into_response()
}
