//! The agent's tools over the Model Context Protocol (`ingest mcp`): the document and workflow
//! tools of [`ingest::tools`], served over stdio ([`serve_stdio`]) or streamable HTTP on a loopback
//! address ([`serve_http`], or [`http_router`] to mount `/mcp` in one's own axum app).
//!
//! Every call runs through a [`ToolHost`] (the daemon when one holds the data directory, else
//! this process) in the scope of the server's [`McpConfig`]: the scope is configuration,
//! never an argument the model passes (the arguments' types refuse unknown fields, so a
//! `user` or `scope` argument is an error the model reads). A call's result is the answer's
//! exact text as the one text content, and the same JSON object as `structuredContent`.
//! Arguments that do not parse are answered as tool errors (`{"error": …}`, `isError`), so
//! the model can correct them; a tool the server does not offer is a protocol error.
//!
//! Logs go to `tracing` (the `ingest` binary writes them to stderr: stdout is the protocol):
//! one line per call with the tool, the answer's size, whether it is an error and who
//! answered.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use extractors::Scope;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerInfo, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::Value;

/// What ends an HTTP server's sessions ([`http_router`]): tokio-util's, as rmcp takes it.
pub use tokio_util::sync::CancellationToken;

use ingest::tools::ToolHost;
use ingest::tools::{self, error_answer, ToolAnswer, ToolCall, DEFAULT_MAX_CHARS, TOOL_NAMES};
use ingest_base::error::{Error, Result};

/// What the server tells the model about the tools as a whole (MCP `instructions`).
pub const INSTRUCTIONS: &str = "\
These tools read the documents indexed for you: folders, archives at any depth (zip, tar.gz), PDFs, office files, spreadsheets, slides, text.
Structure first: browse_container without a locator lists the top level; browse a folder or archive to see its members, a file to see its outline (section ids such as s12, page ranges, sheets, slides).
Then read only what you need: read_section for one section, read_content_objects with pages, section, sheet + rows or slide for exact places, or with around (a hit's locator) for a hit and its neighbours.
Before citing a passage, verify_quote checks that the quoted words are in the file and says on which page. To look at a page (a chart, a scan, a table's layout), render_page gives it as an image.
search_documents finds passages by meaning and by exact words (names, codes, options: `mode` hybrid by default); narrow it with locator (a folder, archive or file) and the same filters. A hit's locator says where to read on.
Locators look like /data/outer.zip!/inner.tar.gz!/report.pdf#page=12: `!/` enters a container, `#` starts a place in the file. Pass them without the #fragment (use the filters instead).
Every answer is one JSON object of at most max_chars (default 4000). When something was left out it has `more` and a `cursor`: call again with the same arguments plus that cursor. Long texts are cut in the middle ([N chars omitted]); the cursor continues with exactly the omitted part.
extract_container_item extracts and indexes one archive member that was skipped (e.g. by a size limit), so it can then be read and searched.
Remote sources (list_sources): browse_source lists a source's folder without indexing it, pull_source indexes a file or folder of it now, search_documents with `source` searches only what came from it.
A file that is not yours says whose it is (`owner`, e.g. \"bob (shared)\"); when two files share a locator, answers list `other_owners` and the `owner` argument picks one.
Workflow tools keep one agent run's data apart from the documents, named by `workflow` (an id you choose per run): store_tool_result keeps a large tool result whole and gives a handle and a preview; recall_tool_result reads any part of it back; remember keeps entities (key, value); store_summary keeps conversation summaries; gather_context fills a round's context from the workflow's entities, its tool results and summary, then your documents and shared ones, within max_chars; end_workflow deletes it all. Only that workflow of your scope sees its data.";

/// How an MCP server answers: in which scope, with which tools.
#[derive(Debug, Clone, PartialEq)]
pub struct McpConfig {
    /// Whose documents every call reads (and, for `extract_container_item`, writes).
    pub scope: Scope,
    /// The tools listed and callable, a subset of [`TOOL_NAMES`] in its order.
    pub tools: Vec<&'static str>,
}

impl McpConfig {
    /// Every tool, in `scope`.
    pub fn new(scope: Scope) -> Self {
        McpConfig {
            scope,
            tools: TOOL_NAMES.to_vec(),
        }
    }

    /// Offer only the tools named (see [`select_tools`]).
    pub fn with_tools<S: AsRef<str>>(mut self, names: &[S]) -> Result<Self> {
        self.tools = select_tools(names)?;
        Ok(self)
    }
}

/// The tools named, in [`TOOL_NAMES`] order; a name that is not a tool is an error listing
/// the valid ones. Names may be given with surrounding blanks; an empty list is an error.
pub fn select_tools<S: AsRef<str>>(names: &[S]) -> Result<Vec<&'static str>> {
    let names: Vec<&str> = names
        .iter()
        .map(|n| n.as_ref().trim())
        .filter(|n| !n.is_empty())
        .collect();
    let unknown: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !TOOL_NAMES.contains(n))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::Config(format!(
            "unknown tool{} {}; the tools are: {}",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", "),
            TOOL_NAMES.join(", ")
        )));
    }
    if names.is_empty() {
        return Err(Error::Config(format!(
            "no tools selected; the tools are: {}",
            TOOL_NAMES.join(", ")
        )));
    }
    Ok(TOOL_NAMES
        .iter()
        .copied()
        .filter(|t| names.contains(t))
        .collect())
}

/// An MCP server's configuration file (`ingest mcp --config FILE`), TOML:
///
/// ```toml
/// tools = ["search_documents", "browse_container"]   # default: all five
/// max_answer_chars = 20000                           # the server's ceiling per answer
///
/// [scope]
/// user = "alice"
/// feature_instance = "chat-7"
/// mandate = "acme"
/// shared = false          # extracted content shared within the mandate
///
/// [http]
/// listen = "127.0.0.1:8765"   # serve streamable HTTP at /mcp instead of stdio
/// ```
///
/// Every key is optional; command-line flags override the file. Unknown keys are errors.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The scope the server answers in.
    #[serde(default)]
    pub scope: FileScope,
    /// The tools offered (default: all).
    pub tools: Option<Vec<String>>,
    /// The largest answer, in chars (UTF-8 bytes), whatever a call's `max_chars` asks.
    pub max_answer_chars: Option<usize>,
    /// Serving over HTTP.
    #[serde(default)]
    pub http: FileHttp,
}

/// `[scope]` of a [`FileConfig`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileScope {
    /// The user whose documents are read.
    pub user: Option<String>,
    /// The feature instance.
    pub feature_instance: Option<String>,
    /// The mandate (tenant).
    pub mandate: Option<String>,
    /// Whether what `extract_container_item` indexes is shared within the mandate.
    pub shared: Option<bool>,
}

/// `[http]` of a [`FileConfig`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileHttp {
    /// A loopback address to serve streamable HTTP on (path `/mcp`).
    pub listen: Option<SocketAddr>,
}

impl FileConfig {
    /// Read and parse `path`.
    pub fn load(path: &Path) -> Result<Self> {
        ingest::load_toml(path, Self::parse)
    }

    /// Parse a configuration file's text.
    pub fn parse(text: &str) -> Result<Self> {
        toml::from_str(text).map_err(|e| Error::Config(e.to_string().trim_end().to_string()))
    }
}

/// Refuse an address that is not loopback: the tools answer with the scope's documents to
/// anyone who connects, and the server has no authentication.
pub fn check_loopback(addr: &SocketAddr) -> Result<()> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "refusing to serve MCP over HTTP on {addr}: only loopback addresses (127.0.0.1, ::1) \
             are served, because anyone who connects reads this scope's documents"
        )))
    }
}

/// Serve the tools over stdin/stdout until the client closes stdin. Needs a tokio runtime.
pub async fn serve_stdio(host: Arc<ToolHost>, config: McpConfig) -> Result<()> {
    let server = IngestMcp::new(host, config);
    tracing::info!(tools = ?server.config.tools, "MCP server on stdio");
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Error::Mcp(format!("handshake: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| Error::Mcp(format!("session: {e}")))?;
    Ok(())
}

/// An axum router serving the tools as streamable HTTP at `/mcp` (sessions kept in memory).
/// Only `Host: localhost / 127.0.0.1 / ::1` requests are answered (DNS rebinding). Cancel
/// `stop` to end open sessions.
pub fn http_router(
    host: Arc<ToolHost>,
    config: McpConfig,
    stop: CancellationToken,
) -> axum::Router {
    mcp_router(IngestMcp::new(host, config), stop, HostRules::default()).0
}

/// The scope of one HTTP request, put into the request's extensions by whoever
/// authenticated it (the upload service, from the API key): [`keyed_http_router`]'s calls
/// answer in it. `key_id` names the key in logs (a hash prefix, never the key).
#[derive(Debug, Clone)]
pub(crate) struct RequestScope {
    pub scope: Scope,
    pub key_id: String,
    /// The caller's own share of the calls answered at once, when bounded.
    pub slots: Option<Arc<tokio::sync::Semaphore>>,
    /// The caller's own heavy tool calls ([`ingest::tools::ToolSpec::heavy`]) answered at once,
    /// when bounded.
    pub heavy: Option<Arc<tokio::sync::Semaphore>>,
    /// What the request holds while it is answered (its body's bytes in the service's
    /// budgets): a call takes it into its work, so it is held until the work ends.
    pub held: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

/// The sessions of an MCP HTTP server, shared with whoever binds them to callers.
pub(crate) type Sessions =
    Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>;

/// Which requests an MCP HTTP router answers: `Host` names (DNS rebinding) and browser
/// `Origin`s (empty: any).
#[derive(Debug, Clone, Default)]
pub(crate) struct HostRules {
    pub hosts: Option<Vec<String>>,
    pub origins: Vec<String>,
}

/// [`http_router`] for a server whose callers are authenticated per request: every call
/// answers in the [`RequestScope`] of its HTTP request, and a request without one is refused
/// (the scope never falls back to a default). A call finding every one of `slots` taken is
/// answered at once with a tool error asking to retry. Returns the router and its sessions.
pub(crate) fn keyed_http_router(
    host: Arc<ToolHost>,
    slots: Arc<tokio::sync::Semaphore>,
    working: ingest_base::gate::Gauge,
    stop: CancellationToken,
    rules: HostRules,
) -> (axum::Router, Sessions) {
    let mut server = IngestMcp::new(host, McpConfig::new(Scope::user("")));
    server.scope_per_request = true;
    server.slots = Some(slots);
    server.working = working;
    mcp_router(server, stop, rules)
}

fn mcp_router(
    server: IngestMcp,
    stop: CancellationToken,
    rules: HostRules,
) -> (axum::Router, Sessions) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let mut http = StreamableHttpServerConfig::default();
    http.cancellation_token = stop;
    if let Some(hosts) = rules.hosts {
        http.allowed_hosts = hosts;
    }
    http.allowed_origins = rules.origins;
    let sessions: Sessions = Arc::new(LocalSessionManager::default());
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::clone(&sessions), http);
    (axum::Router::new().nest_service("/mcp", service), sessions)
}

/// Serve the tools as streamable HTTP at `http://ADDR/mcp` until SIGINT or SIGTERM. `addr`
/// must be a loopback address ([`check_loopback`]). Needs a tokio runtime.
pub async fn serve_http(host: Arc<ToolHost>, config: McpConfig, addr: SocketAddr) -> Result<()> {
    check_loopback(&addr)?;
    let stop = CancellationToken::new();
    let tools = config.tools.clone();
    let router = http_router(host, config, stop.clone());
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Mcp(format!("binding {addr}: {e}")))?;
    let bound = listener.local_addr().unwrap_or(addr);
    tracing::info!(tools = ?tools, "MCP server on http://{bound}/mcp");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            stop_signal().await;
            stop.cancel();
        })
        .await
        .map_err(|e| Error::Mcp(format!("streamable HTTP: {e}")))
}

/// Resolves on SIGINT or SIGTERM (a server's graceful shutdown). Needs a tokio runtime.
pub async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let term = async {
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

/// The MCP server: one per connection (cheap to clone).
#[derive(Clone)]
struct IngestMcp {
    host: Arc<ToolHost>,
    config: Arc<McpConfig>,
    tools: Arc<Vec<Tool>>,
    /// Answer in each HTTP request's [`RequestScope`], not in `config.scope`.
    scope_per_request: bool,
    /// Calls answered at once, when bounded.
    slots: Option<Arc<tokio::sync::Semaphore>>,
    /// Calls at work.
    working: ingest_base::gate::Gauge,
}

impl IngestMcp {
    fn new(host: Arc<ToolHost>, config: McpConfig) -> Self {
        let tools = config.tools.iter().filter_map(|n| definition(n)).collect();
        IngestMcp {
            host,
            config: Arc::new(config),
            tools: Arc::new(tools),
            scope_per_request: false,
            slots: None,
            working: ingest_base::gate::Gauge::default(),
        }
    }

    /// The scope a call answers in (the server's, or its HTTP request's), as its HTTP
    /// request gave it (with the caller's key id for the log and its own call slots).
    fn scope_of(&self, context: &RequestContext<RoleServer>) -> Option<RequestScope> {
        if !self.scope_per_request {
            return Some(RequestScope {
                scope: self.config.scope.clone(),
                key_id: "-".into(),
                slots: None,
                heavy: None,
                held: None,
            });
        }
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        parts.extensions.get::<RequestScope>().cloned()
    }

    /// Answer `request` in `scope`; `held` (the caller's places and request bytes) is held
    /// by the call's work until it ends, however this future ends.
    async fn run(
        &self,
        request: CallToolRequestParams,
        scope: Scope,
        key_id: &str,
        held: impl Send + 'static,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        let name = request.name.to_string();
        if !self.config.tools.contains(&name.as_str()) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool: {name} (this server offers: {})",
                    self.config.tools.join(", ")
                ),
                None,
            ));
        }
        let ceiling = self.host.max_answer_chars();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let (answer, via) = match ToolCall::parse(&name, args) {
            Err(message) => (
                error_answer(&message, DEFAULT_MAX_CHARS.min(ceiling)),
                "none",
            ),
            Ok(call) => {
                let budget = call.budget(ceiling);
                let host = Arc::clone(&self.host);
                let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let _cancel = ingest::tools::StopOnDrop(Arc::clone(&stop));
                let working = self.working.clone();
                let work = move || {
                    let _held = held;
                    let _counted = working.enter();
                    host.call_until(&scope, &call, &stop)
                };
                match tokio::task::spawn_blocking(work).await {
                    Ok(Ok((answer, via))) => (answer, via.as_str()),
                    Ok(Err(e)) => (error_answer(&e.to_string(), budget), "none"),
                    Err(e) => (
                        error_answer(&format!("the tool stopped: {e}"), budget),
                        "none",
                    ),
                }
            }
        };
        tracing::info!(
            face = "mcp",
            key = key_id,
            tool = %name,
            chars = answer.text.len(),
            answer_hash = %ingest::tools::short_hash(&answer.text),
            is_error = answer.is_error,
            answered_by = via,
            "tool call"
        );
        Ok(result_of(answer))
    }
}

impl ServerHandler for IngestMcp {
    fn get_info(&self) -> ServerInfo {
        let mut info = ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(INSTRUCTIONS);
        info.server_info = Implementation::new("ingest", env!("CARGO_PKG_VERSION"))
            .with_title("ingest: document browsing, reading and search");
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let Some(caller) = self.scope_of(&context) else {
            return Err(ErrorData::invalid_request(
                "this request carries no authenticated scope",
                None,
            ));
        };
        // The caller's own share first, then the server's: one key cannot take every place.
        let take = |s: Option<&Arc<tokio::sync::Semaphore>>| match s {
            Some(s) => Arc::clone(s).try_acquire_owned().map(Some),
            None => Ok(None),
        };
        let slots =
            take(caller.slots.as_ref()).and_then(|own| Ok((own, take(self.slots.as_ref())?)));
        // A heavy tool takes one of the caller's heavy places too.
        let heavy = if tools::is_heavy(&request.name) {
            match take(caller.heavy.as_ref()) {
                Ok(h) => h,
                Err(_) => {
                    let busy = ingest::tools::heavy_busy(&request.name);
                    return Ok(result_of(error_answer(&busy, DEFAULT_MAX_CHARS)).into());
                }
            }
        } else {
            None
        };
        let Ok(slots) = slots else {
            let busy = "the server is answering as many calls as it takes at once: call again \
                        in a second";
            return Ok(result_of(error_answer(busy, DEFAULT_MAX_CHARS)).into());
        };
        let held = (slots, heavy, caller.held);
        self.run(request, caller.scope, &caller.key_id, held)
            .await
            .map(CallToolResponse::from)
    }
}

/// The MCP result of an answer: its exact text as the one text content, and the same JSON
/// object as structured content.
fn result_of(answer: ToolAnswer) -> CallToolResult {
    let structured = serde_json::from_str::<Value>(&answer.text)
        .ok()
        .filter(Value::is_object);
    let mut content = vec![ContentBlock::text(answer.text)];
    if let Some(image) = answer.image {
        content.push(ContentBlock::image(image.base64, image.mime_type));
    }
    let mut result = if answer.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = structured;
    result
}

/// The JSON schema of a tool's arguments (JSON Schema 2020-12, as MCP asks).
fn input_schema(spec: &tools::ToolSpec) -> JsonObject {
    match serde_json::to_value((spec.schema)()) {
        Ok(Value::Object(mut object)) => {
            object.remove("$schema");
            object
        }
        _ => {
            let mut object = JsonObject::new();
            object.insert("type".into(), Value::String("object".into()));
            object
        }
    }
}

/// One tool as MCP lists it: its declaration ([`tools::TOOLS`]) — name, title, description
/// for the model, argument schema — with its effect as MCP annotations.
fn definition(name: &str) -> Option<Tool> {
    let spec = tools::spec(name)?;
    let effect = spec.effect;
    let mut annotations = ToolAnnotations::new()
        .read_only(effect.read_only)
        .destructive(effect.destructive)
        .idempotent(effect.idempotent)
        .open_world(effect.open_world);
    annotations.title = Some(spec.title.to_string());
    Some(
        Tool::new(
            name.to_string(),
            spec.description,
            Arc::new(input_schema(spec)),
        )
        .with_title(spec.title)
        .with_annotations(annotations),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_selected_by_name_and_unknown_names_list_the_valid_ones() {
        assert_eq!(
            select_tools(&["read_section", " search_documents"]).unwrap(),
            vec!["search_documents", "read_section"]
        );
        let e = select_tools(&["search_documents", "delete_everything"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown tool delete_everything"), "{e}");
        for name in TOOL_NAMES {
            assert!(e.contains(name), "{e}");
        }
        assert!(select_tools::<&str>(&[]).is_err());
    }

    #[test]
    fn the_config_file_has_scope_tools_ceiling_and_http() {
        let file = FileConfig::parse(
            r#"
            tools = ["search_documents", "browse_container"]
            max_answer_chars = 20000
            [scope]
            user = "alice"
            feature_instance = "chat-7"
            mandate = "acme"
            [http]
            listen = "127.0.0.1:8765"
            "#,
        )
        .unwrap();
        assert_eq!(file.scope.user.as_deref(), Some("alice"));
        assert_eq!(file.scope.mandate.as_deref(), Some("acme"));
        assert_eq!(file.max_answer_chars, Some(20000));
        assert_eq!(file.tools.unwrap().len(), 2);
        assert_eq!(
            file.http.listen,
            Some("127.0.0.1:8765".parse::<SocketAddr>().unwrap())
        );
        assert_eq!(FileConfig::parse("").unwrap(), FileConfig::default());
        let e = FileConfig::parse("[scope]\nuser_id = \"bob\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("user_id"), "{e}");
    }

    #[test]
    fn only_loopback_is_served() {
        assert!(check_loopback(&"127.0.0.1:1".parse().unwrap()).is_ok());
        assert!(check_loopback(&"[::1]:1".parse().unwrap()).is_ok());
        let e = check_loopback(&"0.0.0.0:8765".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
    }

    #[test]
    fn arguments_are_parsed_strictly_and_errors_are_worded_for_the_model() {
        let call = ToolCall::parse(
            "read_content_objects",
            serde_json::json!({"locator": "/d/a.pdf", "pages": "40-47", "max_chars": 900}),
        )
        .unwrap();
        assert_eq!(call.name(), "read_content_objects");
        assert_eq!(call.budget(100_000), 900);
        assert_eq!(call.budget(500), 500);
        // A scope cannot come from the model.
        let e = ToolCall::parse(
            "search_documents",
            serde_json::json!({"query": "q", "user": "bob"}),
        )
        .unwrap_err();
        assert!(e.contains("unknown field `user`"), "{e}");
        let e = ToolCall::parse("read_section", serde_json::json!({"locator": "/d/a.pdf"}))
            .unwrap_err();
        assert!(e.contains("missing field `section`"), "{e}");
    }

    #[test]
    fn error_answers_fit_their_budget() {
        let long = "é\"".repeat(500);
        let a = error_answer(&long, 200);
        assert!(a.is_error);
        assert!(a.text.len() <= 200, "{}", a.text.len());
        let v: Value = serde_json::from_str(&a.text).unwrap();
        assert!(v["error"].as_str().unwrap().starts_with("é\""));
        assert!(
            a.text.len() > 190,
            "as much of the message as fits: {}",
            a.text
        );
        let short = error_answer("no such file", 200);
        assert_eq!(short.text, r#"{"error":"no such file"}"#);
    }

    #[test]
    fn results_carry_the_exact_text_and_the_same_object() {
        let text = r#"{"hits":[],"size":{"chars":30,"tokens":8}}"#;
        let r = result_of(ToolAnswer {
            text: text.into(),
            is_error: false,
            image: None,
        });
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.content.len(), 1);
        assert_eq!(r.content[0].as_text().map(|t| t.text.as_str()), Some(text));
        assert_eq!(
            r.structured_content,
            Some(serde_json::from_str::<Value>(text).unwrap())
        );
    }

    #[test]
    fn every_tool_has_a_definition_with_an_object_schema() {
        for name in TOOL_NAMES {
            let tool = definition(name).unwrap();
            assert_eq!(tool.input_schema.get("type"), Some(&Value::from("object")));
            assert!(tool.description.as_deref().is_some_and(|d| d.len() > 200));
            let a = tool.annotations.unwrap();
            let reads = matches!(
                *name,
                "search_documents"
                    | "browse_container"
                    | "read_content_objects"
                    | "read_section"
                    | "verify_quote"
                    | "render_page"
                    | "recall_tool_result"
                    | "gather_context"
                    | "list_sources"
                    | "browse_source"
            );
            assert_eq!(a.read_only_hint, Some(reads), "{name}");
            // Only the source tools reach a service outside the index.
            let open = matches!(*name, "browse_source" | "pull_source");
            assert_eq!(a.open_world_hint, Some(open), "{name}");
            // Only the tools that delete or replace what was stored are destructive (a pull
            // removes what the service no longer holds there).
            let destructive = matches!(*name, "end_workflow" | "remember" | "pull_source");
            assert_eq!(a.destructive_hint, Some(destructive), "{name}");
        }
        let search = definition("search_documents").unwrap();
        let props = search.input_schema.get("properties").unwrap();
        assert!(props.get("query").is_some() && props.get("max_chars").is_some());
    }
}
