//! The HTTP ingest service (`ingest serve`): uploads, job and file status, deletes, search
//! and the agent's tools for platforms not written in Rust, over the upload queue
//! ([`crate::Uploads`]).
//!
//! Every `/v1` route needs `Authorization: Bearer KEY`; each key of the configuration is
//! bound to one scope (user, feature instance, mandate), so a caller never names its own
//! scope and never sees another key's files (they answer 404, like missing ones). Bodies are
//! bounded (413), receiving and queueing are bounded (429 / 503 with `Retry-After`), nothing
//! waits in an unbounded queue. `/health` and `/metrics` need no key (they hold no document
//! data). The routes are in [`routes`].

mod routes;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use extractors::Scope;
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::uploads::{Uploads, UploadsConfig};

pub use routes::router;

/// A service's configuration file (`ingest serve --config ingest.toml`), TOML:
///
/// ```toml
/// listen = "127.0.0.1:8080"          # --listen overrides
/// max_upload_bytes = 1073741824      # larger uploads: 413
/// max_receiving = 16                 # bodies received at once; more: 429
/// max_open_jobs = 1000               # jobs queued or running; more: 503
/// max_scope_runs = 2                 # scopes indexed at once
/// max_queries = 8                    # searches and tool calls at once; more: 429
///
/// [[api_keys]]
/// key = "k-alice-0123456789abcdef"   # at least 16 characters
/// user = "alice"
/// feature_instance = "chat-7"        # optional
/// mandate = "acme"                   # optional
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
    /// Jobs accepted and not ended.
    pub max_open_jobs: Option<usize>,
    /// Scopes whose pipeline runs go at once.
    pub max_scope_runs: Option<usize>,
    /// Searches and tool calls answered at once.
    pub max_queries: Option<usize>,
    /// The callers: one scope per key.
    #[serde(default)]
    pub api_keys: Vec<ApiKey>,
}

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
        }
    }
}

/// Searches and tool calls at once when the file does not say.
pub const DEFAULT_MAX_QUERIES: usize = 8;

/// Shortest key accepted.
const MIN_KEY_CHARS: usize = 16;

impl ServiceConfig {
    /// Read, parse and check `path`.
    pub fn load(path: &Path) -> Result<Self> {
        crate::config::load_toml(path, Self::parse)
    }

    /// Parse and check a configuration file's text.
    pub fn parse(text: &str) -> Result<Self> {
        let config: ServiceConfig = toml::from_str(text)
            .map_err(|e| Error::Config(e.to_string().trim_end().to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Keys present, long enough, distinct; users named.
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
        }
        Ok(())
    }

    /// The upload queue's bounds: the file's, else the defaults.
    pub fn uploads(&self) -> UploadsConfig {
        let d = UploadsConfig::default();
        UploadsConfig {
            max_upload_bytes: self.max_upload_bytes.unwrap_or(d.max_upload_bytes),
            max_receiving: self.max_receiving.unwrap_or(d.max_receiving),
            max_open_jobs: self.max_open_jobs.unwrap_or(d.max_open_jobs),
            max_scope_runs: self.max_scope_runs.unwrap_or(d.max_scope_runs),
            keep_ended: d.keep_ended,
        }
    }
}

/// Serve `uploads` on `listener` until `stop` resolves: then stop taking requests, finish
/// the ones under way, and stop the queue (what is in flight is stored; jobs not ended are
/// queued again at the next start). Needs a tokio runtime.
pub async fn serve(
    uploads: Arc<Uploads>,
    config: &ServiceConfig,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    // Open MCP sessions end with the server, or graceful shutdown would wait for them.
    let sessions = crate::mcp::CancellationToken::new();
    let app = router(Arc::clone(&uploads), config, sessions.clone());
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            stop.await;
            sessions.cancel();
        })
        .await
        .map_err(|e| Error::Serve(format!("HTTP server: {e}")))?;
    tracing::info!("no more requests; storing what is in flight");
    let queue = Arc::clone(&uploads);
    tokio::task::spawn_blocking(move || queue.shutdown())
        .await
        .map_err(|e| Error::Serve(format!("stopping the queue: {e}")))
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
}
