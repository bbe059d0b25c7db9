//! What one scope sees: the catalog entries it may read (its own, and content shared within
//! its mandate, exactly as search filters points), and the documents behind them. Every tool
//! resolves locators here, so a locator of another scope is answered as one that does not
//! exist.

use std::collections::BTreeMap;

use extractors::{FileContentIndex, Scope};

use super::ToolError;
use crate::index::objects::PackReader;
use crate::index::{CatalogEntry, EntryStatus};
use crate::ingestor::Ingestor;
use crate::lock;

/// Whether `reader` may read what was stored in scope `owner` (mirrors the search filter:
/// the user's own content, narrowed by feature instance and mandate when the reader has
/// them, plus content shared within the reader's mandate).
pub(crate) fn readable(reader: &Scope, owner: &Scope) -> bool {
    let own = owner.user_id == reader.user_id
        && reader
            .feature_instance_id
            .as_ref()
            .is_none_or(|f| owner.feature_instance_id.as_ref() == Some(f))
        && reader
            .mandate_id
            .as_ref()
            .is_none_or(|m| owner.mandate_id.as_ref() == Some(m));
    let shared =
        owner.is_shared && reader.mandate_id.is_some() && owner.mandate_id == reader.mandate_id;
    own || shared
}

/// The entries a scope may read, by locator.
pub(crate) struct View {
    pub entries: BTreeMap<String, CatalogEntry>,
}

/// A document a scope may read: its entry and its content's hash.
pub(crate) struct Document {
    pub entry: CatalogEntry,
    pub hash: String,
}

/// `locator` without a `#fragment` and without trailing `/`.
pub(crate) fn normalize(locator: &str) -> String {
    let l = locator.trim();
    let l = l.split_once('#').map_or(l, |(a, _)| a);
    let trimmed = l.trim_end_matches('/');
    if trimmed.is_empty() && l.starts_with('/') {
        "/".to_string()
    } else {
        trimmed.to_string()
    }
}

impl View {
    /// What `scope` may read now.
    pub fn of(ingestor: &Ingestor, scope: &Scope) -> View {
        let catalog = lock(&ingestor.catalog);
        let mut entries = BTreeMap::new();
        for owner in catalog.scopes() {
            if readable(scope, &owner) {
                for e in catalog.entries(&owner) {
                    entries.entry(e.locator.clone()).or_insert(e);
                }
            }
        }
        View { entries }
    }

    /// The entry at `locator`, if this scope may read it.
    pub fn entry(&self, locator: &str) -> Option<&CatalogEntry> {
        self.entries.get(locator)
    }

    /// Whether some entry's locator starts with `prefix` (a folder's `dir/`, an archive's
    /// `a.zip!/`).
    pub fn has_under(&self, prefix: &str) -> bool {
        self.entries
            .range(prefix.to_string()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(prefix))
    }

    /// Whether `locator` names something this scope holds: a file, an archive, or a folder
    /// (inside an archive too) with entries under it.
    pub fn knows(&self, locator: &str) -> bool {
        self.entry(locator).is_some()
            || self.has_under(&format!("{}/", locator.trim_end_matches('/')))
            || self.has_under(&format!("{locator}!/"))
    }

    /// The document at `locator` with its content, or `NotFound`, or why it has none.
    pub fn document(&self, locator: &str) -> Result<Document, ToolError> {
        let loc = normalize(locator);
        classify(&loc, self.entry(&loc))
    }
}

/// The entry at `locator` (normalized) that `scope` may read, looked up scope by scope:
/// what a read needs, without copying every entry as [`View::of`] does.
fn lookup(ingestor: &Ingestor, scope: &Scope, locator: &str) -> Option<CatalogEntry> {
    let catalog = lock(&ingestor.catalog);
    catalog
        .scopes()
        .iter()
        .filter(|owner| readable(scope, owner))
        .find_map(|owner| catalog.get(owner, locator).cloned())
}

/// The document at `locator` that `scope` may read (see [`View::document`]).
pub(crate) fn document(
    ingestor: &Ingestor,
    scope: &Scope,
    locator: &str,
) -> Result<Document, ToolError> {
    let loc = normalize(locator);
    classify(&loc, lookup(ingestor, scope, &loc).as_ref())
}

/// The document `entry` at `loc` is, or why it is none (missing, an archive, no content).
fn classify(loc: &str, entry: Option<&CatalogEntry>) -> Result<Document, ToolError> {
    let entry = entry.ok_or_else(|| ToolError::NotFound(loc.to_string()))?;
    match (&entry.status, &entry.hash) {
        (EntryStatus::Container, _) => Err(ToolError::Invalid(format!(
            "{loc} is an archive: browse_container lists its members"
        ))),
        (EntryStatus::Indexed, Some(hash)) => Ok(Document {
            entry: entry.clone(),
            hash: hash.clone(),
        }),
        (status, _) => Err(ToolError::Invalid(format!(
            "{loc} has no content to read: {}{}",
            match status {
                EntryStatus::Failed => "extraction failed",
                _ => "it was skipped",
            },
            entry
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ))),
    }
}

/// The content index of `hash`, or an error when the data dir lacks it.
pub(crate) fn content_index(
    ingestor: &Ingestor,
    hash: &str,
) -> Result<FileContentIndex, ToolError> {
    lock(&ingestor.catalog).content_index(hash)?.ok_or_else(|| {
        ToolError::Invalid("the structure of this file is not stored; ingest it again".into())
    })
}

/// The object pack of `hash`.
pub(crate) fn pack(ingestor: &Ingestor, hash: &str) -> Result<PackReader, ToolError> {
    let path = lock(&ingestor.catalog).pack_path(hash);
    if !path.is_file() {
        return Err(ToolError::Invalid(
            "the content of this file is not stored (indexed by an older version); ingest it again"
                .into(),
        ));
    }
    Ok(PackReader::open(&path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_read_their_own_and_their_mandates_shared_content() {
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        assert!(readable(&alice, &alice));
        assert!(!readable(&alice, &bob));
        let in_m = |u: &str, shared: bool| Scope {
            user_id: u.into(),
            mandate_id: Some("m".into()),
            is_shared: shared,
            ..Scope::default()
        };
        assert!(readable(&in_m("alice", false), &in_m("bob", true)));
        assert!(!readable(&in_m("alice", false), &in_m("bob", false)));
        assert!(
            !readable(&alice, &in_m("bob", true)),
            "no mandate, no shared content"
        );
        let fi = Scope {
            feature_instance_id: Some("f1".into()),
            ..Scope::user("alice")
        };
        assert!(!readable(&fi, &alice), "narrowed to a feature instance");
        assert!(readable(&alice, &fi));
    }

    #[test]
    fn locators_are_normalized() {
        assert_eq!(normalize("/a/b.pdf#page=3"), "/a/b.pdf");
        assert_eq!(normalize("/a/dir/"), "/a/dir");
        assert_eq!(normalize("/"), "/");
        assert_eq!(normalize(""), "");
    }
}
