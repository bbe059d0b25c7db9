//! What one scope sees: the catalog entries it may read (the one access rule,
//! [`crate::access`], as every search applies it), and the documents behind them. Every tool
//! resolves locators here, so a locator of another scope is answered as one that does not
//! exist.
//!
//! Two readable files may have the same locator: a user's own `notes.md` and a colleague's
//! shared one, or one in each of the user's feature instances. They stay distinct: a bare
//! locator means the file closest to the reader (its own first, [`crate::access::closeness`]),
//! an `owner` argument picks another, and every answer about a file that is not the reader's
//! own says whose it is (`owner`) and which other owners have a file of the same locator
//! (`other_owners`).

use std::collections::BTreeMap;

use extractors::{FileContentIndex, Scope};
use serde_json::{json, Map, Value};

use super::ToolError;
use crate::access::{closeness, owner_label, readable_owners};
use crate::index::objects::PackReader;
use crate::index::{Catalog, CatalogEntry, EntryStatus};
use crate::ingestor::Ingestor;

/// The entries a scope may read, by locator: for each, the closest owner's.
pub(crate) struct View {
    reader: Scope,
    pub entries: BTreeMap<String, CatalogEntry>,
    /// Who owns each entry of `entries`, and the other readable owners holding an entry of
    /// the same locator (closest first).
    owners: BTreeMap<String, (Scope, Vec<Scope>)>,
}

/// A document a scope may read: its entry, its content's hash, and who owns it.
pub(crate) struct Document {
    pub entry: CatalogEntry,
    pub hash: String,
    pub owner: Scope,
    /// Other readable owners with a file of the same locator.
    pub others: Vec<Scope>,
}

/// `locator` without a `#fragment` and without trailing `/`.
pub(crate) fn normalize(locator: &str) -> String {
    let l = locator.trim();
    let l = extractors::file_part(l);
    let trimmed = l.trim_end_matches('/');
    if trimmed.is_empty() && l.starts_with('/') {
        "/".to_string()
    } else {
        trimmed.to_string()
    }
}

/// Add `owner` (whose the file is) when it is not the reader's own exact scope, and
/// `other_owners` when others hold a file of the same locator, to an answer `m`.
pub(crate) fn note_owner(
    m: &mut Map<String, Value>,
    reader: &Scope,
    owner: &Scope,
    others: &[Scope],
) {
    if closeness(reader, owner) > 0 {
        m.insert("owner".into(), json!(owner_label(owner)));
    }
    if !others.is_empty() {
        let labels: Vec<String> = others.iter().map(owner_label).collect();
        m.insert("other_owners".into(), json!(labels));
    }
}

impl View {
    /// Whose view it is.
    pub fn reader(&self) -> &Scope {
        &self.reader
    }

    /// What `scope` may read now; only `owner`'s files when a call names one.
    pub fn of(ingestor: &Ingestor, scope: &Scope, owner: Option<&str>) -> View {
        View::in_catalog(ingestor.catalog(), scope, owner)
    }

    /// What `scope` may read in `catalog`; only `owner`'s files when a call names one.
    pub fn in_catalog(catalog: &dyn Catalog, scope: &Scope, owner: Option<&str>) -> View {
        let mut entries = BTreeMap::new();
        let mut owners: BTreeMap<String, (Scope, Vec<Scope>)> = BTreeMap::new();
        for o in readable_owners(catalog.scopes(), scope, owner) {
            for e in catalog.entries(&o) {
                match owners.get_mut(&e.locator) {
                    Some((_, others)) => others.push(o.clone()),
                    None => {
                        owners.insert(e.locator.clone(), (o.clone(), Vec::new()));
                        entries.insert(e.locator.clone(), e);
                    }
                }
            }
        }
        View {
            reader: scope.clone(),
            entries,
            owners,
        }
    }

    /// The entry at `locator`, if this scope may read it.
    pub fn entry(&self, locator: &str) -> Option<&CatalogEntry> {
        self.entries.get(locator)
    }

    /// Add whose the entry at `locator` is to an answer (see [`note_owner`]).
    pub fn note_owner(&self, m: &mut Map<String, Value>, locator: &str) {
        if let Some((owner, others)) = self.owners.get(locator) {
            note_owner(m, &self.reader, owner, others);
        }
    }

    /// Whether the entry at `locator` is another owner's file while the reader has files of
    /// its own (closer to it) under `locator/`: then the bare locator means the folder.
    pub fn own_folder_hidden_by_file(&self, locator: &str) -> bool {
        let Some(file_owner) = self.owner_of(locator) else {
            return false;
        };
        let rank = closeness(&self.reader, file_owner);
        let folder = format!("{locator}/");
        rank > 0
            && self
                .owners
                .range(folder.clone()..)
                .take_while(|(k, _)| k.starts_with(&folder))
                .any(|(_, (o, _))| closeness(&self.reader, o) < rank)
    }

    /// The owner of the entry at `locator` that a bare locator means.
    pub fn owner_of(&self, locator: &str) -> Option<&Scope> {
        self.owners.get(locator).map(|(o, _)| o)
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
        let (owner, others) = self
            .owners
            .get(&loc)
            .cloned()
            .ok_or_else(|| ToolError::NotFound(loc.clone()))?;
        classify(&loc, self.entry(&loc), owner, others)
    }
}

/// The document at `locator` that `scope` may read, `owner`'s when a call names one (see
/// [`View::document`]); looked up owner by owner, without copying every entry as
/// [`View::of`] does.
pub(crate) fn document(
    ingestor: &Ingestor,
    scope: &Scope,
    locator: &str,
    owner: Option<&str>,
) -> Result<Document, ToolError> {
    document_in(ingestor.catalog(), scope, locator, owner)
}

/// [`document`] in `catalog`.
pub(crate) fn document_in(
    catalog: &dyn Catalog,
    scope: &Scope,
    locator: &str,
    owner: Option<&str>,
) -> Result<Document, ToolError> {
    let loc = normalize(locator);
    let mut found = readable_owners(catalog.scopes(), scope, owner)
        .into_iter()
        .filter_map(|o| catalog.get(&o, &loc).map(|e| (o, e)));
    let Some((owner, entry)) = found.next() else {
        return Err(ToolError::NotFound(loc));
    };
    let others = found.map(|(o, _)| o).collect();
    classify(&loc, Some(&entry), owner, others)
}

/// The document `entry` at `loc` is, or why it is none (missing, an archive, no content).
fn classify(
    loc: &str,
    entry: Option<&CatalogEntry>,
    owner: Scope,
    others: Vec<Scope>,
) -> Result<Document, ToolError> {
    let entry = entry.ok_or_else(|| ToolError::NotFound(loc.to_string()))?;
    match (&entry.status, &entry.hash) {
        (EntryStatus::Container, _) => Err(ToolError::Invalid(format!(
            "{loc} is an archive: browse_container lists its members"
        ))),
        (EntryStatus::Indexed, Some(hash)) => Ok(Document {
            entry: entry.clone(),
            hash: hash.clone(),
            owner,
            others,
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

impl Document {
    /// Add whose this document is to an answer (see [`note_owner`]).
    pub fn note_owner(&self, m: &mut Map<String, Value>, reader: &Scope) {
        note_owner(m, reader, &self.owner, &self.others);
    }
}

/// The content index of `hash`, or an error when the data dir lacks it.
pub(crate) fn content_index(
    ingestor: &Ingestor,
    hash: &str,
) -> Result<FileContentIndex, ToolError> {
    ingestor.catalog().content_index(hash)?.ok_or_else(|| {
        ToolError::Invalid("the structure of this file is not stored; ingest it again".into())
    })
}

/// The object pack of `hash`.
pub(crate) fn pack(ingestor: &Ingestor, hash: &str) -> Result<PackReader, ToolError> {
    ingestor.catalog().pack(hash)?.ok_or_else(|| {
        ToolError::Invalid(
            "the content of this file is not stored (indexed by an older version); ingest it again"
                .into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locators_are_normalized() {
        assert_eq!(normalize("/a/b.pdf#page=3"), "/a/b.pdf");
        assert_eq!(normalize("/a/dir/"), "/a/dir");
        assert_eq!(normalize("/"), "/");
        assert_eq!(normalize(""), "");
    }
}
