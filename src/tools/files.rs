//! The files a scope may read, as one list (`ingest files`): by the same view every tool
//! reads through, so a file of another scope is not listed.

use extractors::Scope;
use serde::Serialize;
use serde_json::Map;

use super::view::{normalize, View};
use crate::ingestor::Ingestor;

/// One file, archive or archive member the scope may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListedFile {
    /// Its locator.
    pub locator: String,
    /// `indexed`, `failed`, `skipped`, or `container` for an archive.
    pub status: &'static str,
    /// Chunks stored for it (its card included).
    pub chunks: u32,
    /// Its size in bytes.
    pub bytes: u64,
    /// The type detected from its bytes (a MIME type), for files that were read.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// Why it failed or was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whose file it is, when not the reader's own (`bob (shared)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// Every entry `scope` may read, in locator order; only those at or under `under` (a
/// folder, archive or file locator) when given.
pub fn list_files(ingestor: &Ingestor, scope: &Scope, under: Option<&str>) -> Vec<ListedFile> {
    let view = View::of(ingestor, scope, None);
    let under = under.map(normalize).filter(|u| !u.is_empty() && u != "/");
    let inside = |locator: &str| match &under {
        None => true,
        Some(u) => {
            locator == u
                || locator
                    .strip_prefix(u.as_str())
                    .is_some_and(|rest| rest.starts_with('/') || rest.starts_with("!/"))
        }
    };
    view.entries
        .values()
        .filter(|e| inside(&e.locator))
        .map(|e| {
            let mut note = Map::new();
            view.note_owner(&mut note, &e.locator);
            ListedFile {
                locator: e.locator.clone(),
                status: e.status.as_str(),
                chunks: e.chunks,
                bytes: e.size,
                mime: e.mime.clone(),
                reason: e.reason.clone(),
                owner: note
                    .get("owner")
                    .and_then(|o| o.as_str())
                    .map(str::to_string),
            }
        })
        .collect()
}
