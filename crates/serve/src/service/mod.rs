//! The HTTP ingest service (`ingest serve`): uploads, job and file status, deletes, search
//! and the agent's tools for platforms not written in Rust, over the upload queue
//! ([`ingest::Uploads`]).
//!
//! Every `/v1` route and `/mcp` need `Authorization: Bearer KEY`; each key of the
//! configuration is bound to one scope (user, feature instance, mandate), so a caller never
//! names its own scope, and what it may read is the one access rule ([`ingest::check_scope`],
//! docs/SECURITY.md): another scope's files answer 404, like missing ones. Every request is
//! bounded before it costs anything: connections ([`ServiceConfig::max_connections`]),
//! header and idle time, body size (413), body pace (a body that stalls or trickles is cut),
//! uploads being received and jobs queued, overall and per key (429 / 503 with
//! `Retry-After`, answered before the body is read). `/health` answers liveness only;
//! `/metrics` needs the operator's `metrics_key` (or `public_metrics = true`). The routes
//! are in [`routes`].

mod routes;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use extractors::Scope;
use serde::Deserialize;

use ingest::{Uploads, UploadsConfig};
use ingest_base::error::{Error, Result};

pub use routes::router;

/// Heavy tool calls answered at once for one key when the configuration does not say.
pub const DEFAULT_MAX_HEAVY_PER_KEY: usize = 1;

/// The longest upload job lease (`job_lease_secs`): a day.
pub const MAX_JOB_LEASE_SECS: u64 = 86_400;

/// A service's configuration file (`ingest serve --config ingest.toml`), TOML:
///
/// ```toml
/// listen = "127.0.0.1:8080"          # --listen overrides
/// max_upload_bytes = 1073741824      # larger uploads: 413
/// max_receiving = 16                 # bodies received at once; more: 429
/// max_receiving_per_key = 4          # of those, for one key (default: a quarter)
/// max_open_jobs = 1000               # jobs queued or running; more: 503
/// max_open_jobs_per_key = 250        # of those, for one key (default: a quarter)
/// max_scope_runs = 2                 # scopes indexed at once
/// max_queries = 8                    # searches and tool calls at once; more: 429
/// max_queries_per_key = 4            # of those, for one key (default: half)
/// max_heavy_per_key = 1              # of those, heavy tools (render_page, verify_quote) for one key
/// max_connections = 256              # open connections; more wait to be accepted
/// max_connections_per_peer = 64      # of those, from one address (behind a proxy: raise)
/// header_timeout_secs = 10           # a request's headers, and an idle connection
/// body_idle_timeout_secs = 20        # a body sending nothing this long is cut
/// min_body_bytes_per_sec = 8192      # a body slower than this (on average) is cut …
/// body_grace_secs = 30               # … once it has been sending this long
/// max_request_bytes = 1048576        # any body but an upload's (search, tools, MCP): 413
/// max_tool_result_request_bytes = 33619968  # POST /v1/tools/store_tool_result
/// max_body_bytes_in_flight = 201588736        # request bodies held at once (JSON: 16×); more: 429
/// max_body_bytes_in_flight_per_key = 50397184  # of those, one key's
/// max_kept_archive_bytes = 1073741824  # per key: uploaded archives kept for extraction on demand
/// max_files_per_key = 500000         # files and members one key's scope holds; more: 507
/// mcp_allowed_hosts = ["localhost", "127.0.0.1", "::1"]  # Host names /mcp answers
/// mcp_allowed_origins = []           # browser Origins /mcp answers (empty: any)
/// max_mcp_sessions_per_key = 16      # MCP sessions one key holds open
/// metrics_key = "m-operator-0123456789"  # /metrics needs it; or public_metrics = true
///
/// [workflow]                         # the workflow tools' limits (ingest::WorkflowConfig)
/// max_result_bytes = 16777216        # one stored tool result
/// max_items = 10000                  # tool results, entities and summaries of one workflow
/// max_workflow_bytes = 268435456     # everything one workflow keeps
/// max_workflows = 100                # workflows one key holds at once
/// ttl_secs = 604800                  # a workflow unused this long is ended
///
/// [limits]                           # every upload's archive tree (ingest::Limits)
/// max_files = 10000
/// max_total_bytes = 524288000
///
/// [[api_keys]]
/// key = "k-alice-0123456789abcdef"   # at least 16 characters
/// user = "alice"
/// feature_instance = "chat-7"        # optional
/// mandate = "acme"                   # optional: a mandate is a hard wall between tenants
/// ```
///
/// Unknown keys are errors.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    /// The address to listen on.
    pub listen: Option<SocketAddr>,
    /// The largest upload, in bytes.
    pub max_upload_bytes: Option<u64>,
    /// Upload bodies received at once.
    pub max_receiving: Option<usize>,
    /// Upload bodies received at once for one key's scope.
    pub max_receiving_per_key: Option<usize>,
    /// Jobs accepted and not ended.
    pub max_open_jobs: Option<usize>,
    /// Jobs accepted and not ended for one key's scope.
    pub max_open_jobs_per_key: Option<usize>,
    /// Scopes whose pipeline runs go at once.
    pub max_scope_runs: Option<usize>,
    /// Searches and tool calls answered at once.
    pub max_queries: Option<usize>,
    /// Searches and tool calls answered at once for one key (default: half of
    /// `max_queries`), so one caller cannot take every place.
    pub max_queries_per_key: Option<usize>,
    /// Calls of the heavy tools ([`ingest::tools::ToolSpec::heavy`]: `render_page`,
    /// `verify_quote`, each seconds of CPU at worst) answered at once for one key, over HTTP
    /// and MCP together (default [`DEFAULT_MAX_HEAVY_PER_KEY`], at most
    /// `max_queries_per_key`): a key's heavy calls cannot hold all its places, nor, with a
    /// second key, all the service's. More: 429, saying why.
    pub max_heavy_per_key: Option<usize>,
    /// Bytes of uploaded archives kept for on-demand extraction of members a limit left
    /// out, per key: a key's oldest are evicted past it, never another's (default 1 GiB; 0
    /// keeps none).
    pub max_kept_archive_bytes: Option<u64>,
    /// Where upload bodies wait for their jobs. With a shared catalog (`--catalog
    /// postgres://…`) a folder every node reads and writes (an NFS mount), required: any
    /// node may run a job another received. Default: the data dir's `uploads/spool`.
    pub spool_dir: Option<std::path::PathBuf>,
    /// With a shared catalog: how long a node's claim on an upload job lasts unless renewed
    /// (every quarter of it); a node that died gives its jobs to the others this long after
    /// its last renewal (default 30, at least 1).
    pub job_lease_secs: Option<u64>,
    /// Connections open at once; more wait in the listen backlog.
    pub max_connections: Option<usize>,
    /// Connections one peer address may hold open (default a quarter of `max_connections`;
    /// behind a reverse proxy every client is the proxy: raise it to `max_connections`).
    pub max_connections_per_peer: Option<usize>,
    /// Seconds a client has to send a request's headers; also how long an idle
    /// keep-alive connection is kept.
    pub header_timeout_secs: Option<u64>,
    /// Seconds a request body may send nothing before it is cut.
    pub body_idle_timeout_secs: Option<u64>,
    /// Average bytes per second a body must reach once it has been sending for
    /// `body_grace_secs`.
    pub min_body_bytes_per_sec: Option<u64>,
    /// Seconds a body may send before its average pace is checked.
    pub body_grace_secs: Option<u64>,
    /// The largest body of any request but an upload (search, tools, MCP), in bytes.
    pub max_request_bytes: Option<u64>,
    /// The largest body of `POST /v1/tools/store_tool_result` (a tool result as JSON), in
    /// bytes (default 34 MiB: a 16 MiB result, escaped).
    pub max_tool_result_request_bytes: Option<u64>,
    /// Bytes of request bodies (every route but uploads, which are spooled to disk) the
    /// service holds at once, from the moment they arrive until the work they carry ends; a
    /// body parsed into JSON values counts [`JSON_BODY_WEIGHT`] times its size, what parsing
    /// may cost (default: four times the per-key bound). More: 429.
    pub max_body_bytes_in_flight: Option<u64>,
    /// Of those, one key's (default: one largest `store_tool_result` body plus a largest
    /// JSON body, weighed).
    pub max_body_bytes_in_flight_per_key: Option<u64>,
    /// `Host` names (or `host:port`) `/mcp` answers; loopback names by default. Behind a
    /// reverse proxy, add the name clients use.
    pub mcp_allowed_hosts: Option<Vec<String>>,
    /// Browser `Origin`s `/mcp` answers (with scheme); empty: no Origin check.
    pub mcp_allowed_origins: Option<Vec<String>>,
    /// MCP sessions one key may hold open.
    pub max_mcp_sessions_per_key: Option<usize>,
    /// The operator's key for `/metrics` (at least 16 characters, not an API key).
    pub metrics_key: Option<String>,
    /// Answer `/metrics` without a key (only where the port is not reachable by tenants).
    #[serde(default)]
    pub public_metrics: bool,
    /// Catalog entries (files and archive members) one key's scope may hold (default
    /// 500 000); more uploads are refused with 507 until some are deleted.
    pub max_files_per_key: Option<usize>,
    /// Limits for every upload's archive tree; the defaults where not given.
    pub limits: Option<ingest::Limits>,
    /// The workflow tools' limits; the defaults where not given.
    pub workflow: Option<WorkflowLimits>,
    /// The callers: one scope per key.
    #[serde(default)]
    pub api_keys: Vec<ApiKey>,
}

/// The `[workflow]` table: the workflow layer's limits ([`ingest::WorkflowConfig`]), each
/// the default where not given.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowLimits {
    /// The largest tool result stored, in bytes.
    pub max_result_bytes: Option<u64>,
    /// The most items (tool results, entities, summaries) one workflow holds.
    pub max_items: Option<usize>,
    /// The most bytes one workflow keeps (tool results with their arguments, entities,
    /// summaries).
    pub max_workflow_bytes: Option<u64>,
    /// The most workflows one key holds at once.
    pub max_workflows: Option<usize>,
    /// Seconds a workflow may go unused before it is ended.
    pub ttl_secs: Option<u64>,
}

impl WorkflowLimits {
    /// `config` with these limits where given.
    pub fn apply(&self, config: &mut ingest::WorkflowConfig) {
        if let Some(v) = self.max_result_bytes {
            config.max_result_bytes = v;
        }
        if let Some(v) = self.max_items {
            config.max_items = v;
        }
        if let Some(v) = self.max_workflow_bytes {
            config.max_workflow_bytes = v;
        }
        if let Some(v) = self.max_workflows {
            config.max_workflows = v;
        }
        if let Some(v) = self.ttl_secs {
            config.ttl = std::time::Duration::from_secs(v);
        }
    }
}

/// The service's bounds on connections and requests, with the defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpLimits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Connections one peer address may hold open.
    pub max_connections_per_peer: usize,
    /// A request's headers (and an idle connection).
    pub header_timeout: std::time::Duration,
    /// A body sending nothing.
    pub body_idle_timeout: std::time::Duration,
    /// Average pace a body keeps once it has been sending for `body_grace`.
    pub min_body_bytes_per_sec: u64,
    /// How long a body may send before its average pace is checked.
    pub body_grace: std::time::Duration,
    /// The largest body of any request but an upload.
    pub max_request_bytes: u64,
    /// The largest body of `POST /v1/tools/store_tool_result`.
    pub max_tool_result_request_bytes: u64,
    /// Body bytes held at once, every key together (weighed: [`JSON_BODY_WEIGHT`]).
    pub max_body_bytes_in_flight: u64,
    /// Body bytes one key holds at once (weighed).
    pub max_body_bytes_in_flight_per_key: u64,
}

/// How many times its size a request body parsed into JSON values counts against the bytes
/// in flight: what the values may cost at most ([`ingest_base::bounded_json`] refuses texts with
/// more values than that). A body taken as raw text (a stored tool result) counts once.
pub const JSON_BODY_WEIGHT: u64 = 16;

/// One `[[api_keys]]` table: a key and the scope it reads and writes.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    /// The secret the caller sends as `Authorization: Bearer KEY`.
    pub key: String,
    /// The user the key acts for.
    pub user: String,
    /// The feature instance, if the scope has one.
    pub feature_instance: Option<String>,
    /// The mandate (tenant), if the scope has one.
    pub mandate: Option<String>,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("key", &"…")
            .field("user", &self.user)
            .field("feature_instance", &self.feature_instance)
            .field("mandate", &self.mandate)
            .finish()
    }
}

impl ApiKey {
    /// The scope the key is bound to (private; `?shared=true` on an upload shares it).
    pub fn scope(&self) -> Scope {
        Scope {
            user_id: self.user.clone(),
            feature_instance_id: self.feature_instance.clone(),
            mandate_id: self.mandate.clone(),
            is_shared: false,
            workflow_id: None,
        }
    }
}

/// The largest `store_tool_result` body when the file does not say: a tool result of the
/// default largest size (16 MiB) as JSON, escaped, with its other arguments.
pub const DEFAULT_TOOL_RESULT_REQUEST_BYTES: u64 = 2 * 16 * 1024 * 1024 + 64 * 1024;

/// Searches and tool calls at once when the file does not say.
pub const DEFAULT_MAX_QUERIES: usize = 8;

/// Shortest key accepted.
const MIN_KEY_CHARS: usize = 16;

impl ServiceConfig {
    /// Read, parse and check `path`.
    pub fn load(path: &Path) -> Result<Self> {
        ingest::load_toml(path, Self::parse)
    }

    /// Parse and check a configuration file's text.
    pub fn parse(text: &str) -> Result<Self> {
        let config: ServiceConfig = toml::from_str(text)
            .map_err(|e| Error::Config(e.to_string().trim_end().to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Keys present, long enough, distinct; every scope's ids unambiguous
    /// ([`ingest::check_scope`]); no user name both with and without a mandate (a mandate is
    /// a hard wall, so those would be two people under one name).
    pub fn validate(&self) -> Result<()> {
        if self.api_keys.is_empty() {
            return Err(Error::Config(
                "no [[api_keys]]: the service answers only callers with a key".into(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (n, k) in self.api_keys.iter().enumerate() {
            if k.key.chars().count() < MIN_KEY_CHARS {
                return Err(Error::Config(format!(
                    "api_keys[{n}] (user {:?}): a key needs at least {MIN_KEY_CHARS} characters",
                    k.user
                )));
            }
            if k.user.trim().is_empty() {
                return Err(Error::Config(format!("api_keys[{n}]: user is empty")));
            }
            if !seen.insert(k.key.as_str()) {
                return Err(Error::Config(format!(
                    "api_keys[{n}] (user {:?}): the same key twice",
                    k.user
                )));
            }
            ingest_base::access::check_scope(&k.scope())
                .map_err(|e| Error::Config(format!("api_keys[{n}] (user {:?}): {e}", k.user)))?;
        }
        for (n, k) in self.api_keys.iter().enumerate() {
            let other = self
                .api_keys
                .iter()
                .find(|o| o.user == k.user && o.mandate.is_some() != k.mandate.is_some());
            if let (Some(o), None) = (other, &k.mandate) {
                return Err(Error::Config(format!(
                    "api_keys[{n}]: user {:?} has a key without a mandate and one in mandate \
                     {:?}; a key without a mandate sees only content without one, so these are \
                     two different users under one name: give every key of a multi-tenant \
                     service a mandate, or the users distinct names",
                    k.user,
                    o.mandate.as_deref().unwrap_or_default()
                )));
            }
        }
        if let Some(m) = &self.metrics_key {
            if m.chars().count() < MIN_KEY_CHARS {
                return Err(Error::Config(format!(
                    "metrics_key: a key needs at least {MIN_KEY_CHARS} characters"
                )));
            }
            if seen.contains(m.as_str()) {
                return Err(Error::Config(
                    "metrics_key is also an API key: the operator's key must be its own".into(),
                ));
            }
        }
        if let Some(w) = &self.workflow {
            let mut config = ingest::WorkflowConfig::default();
            w.apply(&mut config);
            config
                .validate()
                .map_err(|e| Error::Config(format!("[workflow]: {e}")))?;
        }
        let limits = self.http_limits();
        let largest = limits
            .max_tool_result_request_bytes
            .max(limits.max_request_bytes.saturating_mul(JSON_BODY_WEIGHT));
        if limits.max_body_bytes_in_flight_per_key < largest {
            return Err(Error::Config(format!(
                "max_body_bytes_in_flight_per_key is {}: one key could never send its largest \
                 body ({largest} bytes weighed: max_tool_result_request_bytes, or \
                 max_request_bytes × {JSON_BODY_WEIGHT})",
                limits.max_body_bytes_in_flight_per_key
            )));
        }
        if limits.max_body_bytes_in_flight < limits.max_body_bytes_in_flight_per_key {
            return Err(Error::Config(
                "max_body_bytes_in_flight must be at least max_body_bytes_in_flight_per_key".into(),
            ));
        }
        for (name, value) in [
            ("max_connections", self.max_connections.map(|v| v as u64)),
            (
                "max_connections_per_peer",
                self.max_connections_per_peer.map(|v| v as u64),
            ),
            ("header_timeout_secs", self.header_timeout_secs),
            ("body_idle_timeout_secs", self.body_idle_timeout_secs),
            ("max_receiving", self.max_receiving.map(|v| v as u64)),
            (
                "max_receiving_per_key",
                self.max_receiving_per_key.map(|v| v as u64),
            ),
            ("max_open_jobs", self.max_open_jobs.map(|v| v as u64)),
            (
                "max_open_jobs_per_key",
                self.max_open_jobs_per_key.map(|v| v as u64),
            ),
            ("max_queries", self.max_queries.map(|v| v as u64)),
            ("job_lease_secs", self.job_lease_secs),
            (
                "max_queries_per_key",
                self.max_queries_per_key.map(|v| v as u64),
            ),
            (
                "max_mcp_sessions_per_key",
                self.max_mcp_sessions_per_key.map(|v| v as u64),
            ),
            (
                "max_heavy_per_key",
                self.max_heavy_per_key.map(|v| v as u64),
            ),
        ] {
            if value == Some(0) {
                return Err(Error::Config(format!("{name} must be at least 1")));
            }
        }
        // A lease longer than a day would leave a dead node's jobs waiting that long.
        if let Some(secs) = self.job_lease_secs.filter(|&s| s > MAX_JOB_LEASE_SECS) {
            return Err(Error::Config(format!(
                "job_lease_secs is {secs}: at most {MAX_JOB_LEASE_SECS} (a dead node's jobs \
                 wait that long before another node takes them)"
            )));
        }
        Ok(())
    }

    /// The connection and request bounds: the file's, else the defaults.
    pub fn http_limits(&self) -> HttpLimits {
        use std::time::Duration;
        let max_request_bytes = self.max_request_bytes.unwrap_or(1 << 20);
        let max_tool_result_request_bytes = self
            .max_tool_result_request_bytes
            .unwrap_or(DEFAULT_TOOL_RESULT_REQUEST_BYTES);
        let per_key = self.max_body_bytes_in_flight_per_key.unwrap_or(
            max_tool_result_request_bytes
                .saturating_add(max_request_bytes.saturating_mul(JSON_BODY_WEIGHT)),
        );
        HttpLimits {
            max_connections: self.max_connections.unwrap_or(256),
            max_connections_per_peer: self
                .max_connections_per_peer
                .unwrap_or((self.max_connections.unwrap_or(256) / 4).max(1)),
            header_timeout: Duration::from_secs(self.header_timeout_secs.unwrap_or(10)),
            body_idle_timeout: Duration::from_secs(self.body_idle_timeout_secs.unwrap_or(20)),
            min_body_bytes_per_sec: self.min_body_bytes_per_sec.unwrap_or(8 * 1024),
            body_grace: Duration::from_secs(self.body_grace_secs.unwrap_or(30)),
            max_request_bytes,
            max_tool_result_request_bytes,
            max_body_bytes_in_flight: self
                .max_body_bytes_in_flight
                .unwrap_or(per_key.saturating_mul(4)),
            max_body_bytes_in_flight_per_key: per_key,
        }
    }

    /// The upload queue's bounds: the file's, else the defaults.
    pub fn uploads(&self) -> UploadsConfig {
        let d = UploadsConfig::default();
        UploadsConfig {
            max_upload_bytes: self.max_upload_bytes.unwrap_or(d.max_upload_bytes),
            max_receiving: self.max_receiving.unwrap_or(d.max_receiving),
            max_receiving_per_scope: self
                .max_receiving_per_key
                .unwrap_or_else(|| (self.max_receiving.unwrap_or(d.max_receiving) / 4).max(1)),
            max_open_jobs: self.max_open_jobs.unwrap_or(d.max_open_jobs),
            max_open_jobs_per_scope: self
                .max_open_jobs_per_key
                .unwrap_or_else(|| (self.max_open_jobs.unwrap_or(d.max_open_jobs) / 4).max(1)),
            max_scope_runs: self.max_scope_runs.unwrap_or(d.max_scope_runs),
            keep_ended: d.keep_ended,
            max_kept_bytes: self.max_kept_archive_bytes.unwrap_or(d.max_kept_bytes),
            max_files_per_scope: self.max_files_per_key.unwrap_or(d.max_files_per_scope),
            limits: self.limits.clone(),
            spool_dir: self.spool_dir.clone(),
            job_lease: self
                .job_lease_secs
                .map_or(d.job_lease, std::time::Duration::from_secs),
        }
    }
}

/// How many of something each key holds now (connections per peer address, MCP sessions
/// being opened per API key): a [`Counted`] place is taken under one lock, checked against
/// a cap in the same step, and given back when it is dropped, however its holder ends.
pub(crate) struct KeyedCounts<K: std::hash::Hash + Eq + Clone> {
    counts: Arc<std::sync::Mutex<std::collections::HashMap<K, usize>>>,
}

impl<K: std::hash::Hash + Eq + Clone> KeyedCounts<K> {
    pub(crate) fn new() -> Self {
        KeyedCounts {
            counts: Arc::default(),
        }
    }

    /// One more place for `key`, if `admit` allows it given how many `key` holds now.
    pub(crate) fn take(&self, key: K, admit: impl FnOnce(usize) -> bool) -> Option<Counted<K>> {
        let mut map = ingest_base::lock(&self.counts);
        let n = map.entry(key.clone()).or_default();
        if !admit(*n) {
            if *n == 0 {
                map.remove(&key);
            }
            return None;
        }
        *n += 1;
        Some(Counted {
            counts: Arc::clone(&self.counts),
            key,
        })
    }
}

/// A place taken from [`KeyedCounts`], counted while it lives.
pub(crate) struct Counted<K: std::hash::Hash + Eq + Clone> {
    counts: Arc<std::sync::Mutex<std::collections::HashMap<K, usize>>>,
    key: K,
}

impl<K: std::hash::Hash + Eq + Clone> Drop for Counted<K> {
    fn drop(&mut self) {
        let mut map = ingest_base::lock(&self.counts);
        if let Some(n) = map.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.key);
            }
        }
    }
}

/// Serve `uploads` on `listener` until `stop` resolves: then stop taking requests, finish
/// the ones under way, and stop the queue (what is in flight is stored; jobs not ended are
/// queued again at the next start). Needs a tokio runtime.
///
/// The accept loop is this crate's rather than `axum::serve`'s so that every connection is
/// bounded: at most [`HttpLimits::max_connections`] at once (the rest wait in the kernel's
/// backlog), headers within [`HttpLimits::header_timeout`] (which also closes idle
/// keep-alive connections), and at most 64 KiB of headers.
pub async fn serve(
    uploads: Arc<Uploads>,
    config: &ServiceConfig,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    let limits = config.http_limits();
    // Open MCP sessions end with the server, or graceful shutdown would wait for them.
    let sessions = crate::mcp::CancellationToken::new();
    let app = router(Arc::clone(&uploads), config, sessions.clone());
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let (closing, _) = tokio::sync::watch::channel(());
    let mut stop = std::pin::pin!(stop);
    let mut connections = tokio::task::JoinSet::new();
    let peers = KeyedCounts::new();
    loop {
        let permit = tokio::select! {
            () = &mut stop => break,
            p = Arc::clone(&slots).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors and the like: wait a moment, do not spin.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // One address holds at most `max_connections_per_peer` of the places: a flood of
        // idle connections from one peer cannot shut the others out.
        let max = limits.max_connections_per_peer;
        let Some(peer_slot) = peers.take(peer.ip(), |held| held < max) else {
            tracing::debug!(peer = %peer.ip(), "connection refused: too many from this address");
            drop(stream);
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let mut closing = closing.subscribe();
        let header_timeout = limits.header_timeout;
        connections.spawn(async move {
            let _permit = permit;
            let _peer_slot = peer_slot;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(64 * 1024);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!("connection ended: {e}");
                    }
                    return;
                }
                _ = closing.changed() => conn.as_mut().graceful_shutdown(),
            }
            let _ = conn.await;
        });
        // Reap finished connections so the set does not grow with the server's age.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    sessions.cancel();
    let _ = closing.send(());
    while connections.join_next().await.is_some() {}
    tracing::info!("no more requests; storing what is in flight");
    let queue = Arc::clone(&uploads);
    tokio::task::spawn_blocking(move || queue.shutdown())
        .await
        .map_err(|e| Error::Service(format!("stopping the queue: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_needs_distinct_long_keys() {
        let ok = r#"
            listen = "127.0.0.1:8080"
            max_upload_bytes = 1000
            [[api_keys]]
            key = "k-alice-0123456789"
            user = "alice"
            mandate = "acme"
        "#;
        let c = ServiceConfig::parse(ok).unwrap();
        assert_eq!(c.uploads().max_upload_bytes, 1000);
        assert_eq!(c.api_keys[0].scope().mandate_id.as_deref(), Some("acme"));
        assert!(!format!("{:?}", c.api_keys[0]).contains("0123456789"));
        for bad in [
            "listen = \"127.0.0.1:1\"",
            "[[api_keys]]\nkey = \"short\"\nuser = \"a\"",
            "[[api_keys]]\nkey = \"k-0123456789abcdef\"\nuser = \"a\"\n[[api_keys]]\nkey = \"k-0123456789abcdef\"\nuser = \"b\"",
            "[[api_keys]]\nkey = \"k-0123456789abcdef\"\nuser = \"a\"\nscope = \"x\"",
        ] {
            assert!(ServiceConfig::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn body_budgets_and_workflow_limits_are_checked() {
        let keys = "[[api_keys]]\nkey = \"k-alice-0123456789\"\nuser = \"alice\"\n";
        let c = ServiceConfig::parse(keys).unwrap();
        let l = c.http_limits();
        // One largest store_tool_result body and one largest JSON body, weighed.
        assert_eq!(
            l.max_body_bytes_in_flight_per_key,
            DEFAULT_TOOL_RESULT_REQUEST_BYTES + JSON_BODY_WEIGHT * (1 << 20)
        );
        assert_eq!(
            l.max_body_bytes_in_flight,
            4 * l.max_body_bytes_in_flight_per_key
        );
        for bad in [
            // A key could never send its largest body.
            "max_body_bytes_in_flight_per_key = 1000000",
            // The service's budget below one key's.
            "max_body_bytes_in_flight_per_key = 60000000\nmax_body_bytes_in_flight = 50000000",
            // A workflow smaller than one result.
            "[workflow]\nmax_result_bytes = 2000\nmax_workflow_bytes = 1000",
            "[workflow]\nmax_items = 0",
            "[workflow]\nbogus = 1",
            // A dead node's jobs would wait past a day, or forever.
            "job_lease_secs = 86401",
            "job_lease_secs = 0",
        ] {
            let text = if bad.starts_with('[') {
                format!("{keys}{bad}")
            } else {
                format!("{bad}\n{keys}")
            };
            assert!(ServiceConfig::parse(&text).is_err(), "{bad}");
        }
        let c = ServiceConfig::parse(&format!("{keys}[workflow]\nmax_items = 7\nttl_secs = 60"))
            .unwrap();
        let mut w = ingest::WorkflowConfig::default();
        c.workflow.unwrap().apply(&mut w);
        assert_eq!((w.max_items, w.ttl.as_secs()), (7, 60));
    }

    #[test]
    fn keyed_counts_cap_each_key_and_give_places_back_when_dropped() {
        let counts = KeyedCounts::new();
        let a1 = counts.take("a", |n| n < 2);
        let a2 = counts.take("a", |n| n < 2);
        assert!(a1.is_some() && a2.is_some());
        assert!(
            counts.take("a", |n| n < 2).is_none(),
            "a third place past a cap of 2"
        );
        assert!(
            counts.take("b", |n| n < 2).is_some(),
            "another key has its own count"
        );
        drop(a1);
        let a3 = counts.take("a", |n| n < 2);
        assert!(a3.is_some(), "a dropped place is given back");
        drop((a2, a3));
        assert!(
            ingest_base::lock(&counts.counts).is_empty(),
            "keys holding nothing are forgotten"
        );
    }
}
