//! The catalog: what the index holds, per scope and locator (hash, size, mtime, status,
//! chunks), persisted as one JSON file beside the shard and replaced atomically on save.
//! Content indexes live in `content/<hash>.json`, written once per content hash.

// Internal: reachable from outside only through the hidden `testing` module.
#![allow(missing_docs)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use extractors::{FileContentIndex, Scope};
use serde::{Deserialize, Serialize};

use super::objects::ContentRecord;
use super::Holders;
use crate::error::{Error, Result};

const CATALOG_FILE: &str = "catalog.json";

/// The most files a stored point names as holding its content (`locators`).
pub const MAX_HOLDERS: usize = 64;
/// The most tags a stored point carries (the union of its files' tags).
pub const MAX_HOLDER_TAGS: usize = 256;
const CONTENT_DIR: &str = "content";
const VERSION: u32 = 1;

/// Where a catalogued file stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryStatus {
    Indexed,
    Failed,
    Skipped,
    /// An archive on disk; its members are entries of their own, with it as `parent`.
    Container,
}

impl EntryStatus {
    /// Its name, as the catalog file writes it (`indexed`, `failed`, `skipped`, `container`).
    pub fn as_str(self) -> &'static str {
        match self {
            EntryStatus::Indexed => "indexed",
            EntryStatus::Failed => "failed",
            EntryStatus::Skipped => "skipped",
            EntryStatus::Container => "container",
        }
    }
}

/// One file or archive member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub locator: String,
    /// The top-level archive a member was found in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Content hash (blake3, hex); `None` for containers and unread members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    pub size: u64,
    /// Nanoseconds since the epoch, for files on disk; 0 for archive members.
    #[serde(default)]
    pub mtime_ns: u64,
    pub status: EntryStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub chunks: u32,
    /// The type detected from its bytes (a MIME type), for files that were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// User tags (`key=value`, sorted) given with the file at upload; an archive's members
    /// carry the archive's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// For a top-level archive: its members hidden by an earlier member of the same name.
    /// They are not catalogued (their locator is the earlier member's), but their ledger
    /// lines are replayed when the unchanged archive is skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shadowed: Vec<ShadowedMember>,
}

/// A ledger line for an archive member that shares its name with an earlier member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowedMember {
    pub locator: String,
    pub reason: String,
}

impl CatalogEntry {
    /// A file or member whose content is indexed as `chunks` chunks (none for an empty file).
    pub fn indexed(
        locator: impl Into<String>,
        parent: Option<String>,
        hash: impl Into<String>,
        size: u64,
        mtime_ns: u64,
        chunks: u32,
    ) -> Self {
        CatalogEntry {
            locator: locator.into(),
            parent,
            hash: Some(hash.into()),
            size,
            mtime_ns,
            status: EntryStatus::Indexed,
            reason: None,
            chunks,
            mime: None,
            tags: Vec::new(),
            shadowed: Vec::new(),
        }
    }

    /// The same entry with its detected type.
    pub fn with_mime(mut self, mime: Option<String>) -> Self {
        self.mime = mime;
        self
    }

    /// The same entry with these user tags.
    pub fn with_tags(mut self, tags: Vec<String>) -> Self {
        self.tags = tags;
        self
    }

    /// A file or member that was read (its content hash is known) but whose content is not
    /// indexed: `status` is [`EntryStatus::Failed`] or [`EntryStatus::Skipped`], for `reason`.
    pub fn unindexed(
        locator: impl Into<String>,
        parent: Option<String>,
        hash: impl Into<String>,
        size: u64,
        mtime_ns: u64,
        status: EntryStatus,
        reason: impl Into<String>,
    ) -> Self {
        CatalogEntry {
            reason: Some(reason.into()),
            status,
            ..CatalogEntry::indexed(locator, parent, hash, size, mtime_ns, 0)
        }
    }

    /// An entry without content, nor size or time: a member that was not read, or an
    /// archive member recorded with its archive's hash (`hash`), with `status` for `reason`.
    pub fn without_content(
        locator: impl Into<String>,
        parent: Option<String>,
        hash: Option<String>,
        status: EntryStatus,
        reason: impl Into<String>,
    ) -> Self {
        CatalogEntry {
            locator: locator.into(),
            parent,
            hash,
            size: 0,
            mtime_ns: 0,
            status,
            reason: Some(reason.into()),
            chunks: 0,
            mime: None,
            tags: Vec::new(),
            shadowed: Vec::new(),
        }
    }

    /// A top-level archive on disk (hash of its bytes, opened for `reason`), with the members
    /// its earlier members of the same name hid.
    pub fn container(
        locator: impl Into<String>,
        hash: impl Into<String>,
        size: u64,
        mtime_ns: u64,
        reason: impl Into<String>,
        shadowed: Vec<ShadowedMember>,
    ) -> Self {
        CatalogEntry {
            status: EntryStatus::Container,
            reason: Some(reason.into()),
            shadowed,
            ..CatalogEntry::indexed(locator, None, hash, size, mtime_ns, 0)
        }
    }

    /// The content this locator holds in the index, with its chunk count: only indexed
    /// files hold content (an archive's hash names the archive, not indexed content).
    pub fn content(&self) -> Option<(String, u32)> {
        match (self.status, &self.hash) {
            (EntryStatus::Indexed, Some(h)) => Some((h.clone(), self.chunks)),
            _ => None,
        }
    }

    /// The entry's own card in the index, once stored: an entry without content of its own
    /// (failed, skipped, an archive) is found by one card point keyed by its locator
    /// ([`entry_card_key`]); its `chunks` is 1 once that point is stored, 0 before.
    pub fn card(&self) -> Option<(String, u32)> {
        (self.status != EntryStatus::Indexed && self.chunks > 0)
            .then(|| (entry_card_key(&self.locator), self.chunks))
    }

    /// The points the entry stands for in the index, by the key they are stored under (their
    /// `content_hash`) and their count: its content's chunks, or its own card.
    pub fn points(&self) -> Option<(String, u32)> {
        self.content().or_else(|| self.card())
    }

    /// The chunks of the entry's content (0 for an entry without content, whose `chunks`
    /// counts its own card): what a ledger line or a file status says.
    pub fn content_chunks(&self) -> u32 {
        self.content().map_or(0, |(_, chunks)| chunks)
    }

    /// Whether the entry wants a card of its own and has none stored yet.
    pub fn wants_card(&self) -> bool {
        self.status != EntryStatus::Indexed && self.chunks == 0
    }
}

/// What the `content_hash` of an entry card starts with; no content hash (hex) does.
const ENTRY_CARD_PREFIX: &str = "entry-";

/// The key the card of the entry at `locator` is stored under, in place of a content hash:
/// one card per locator and scope, never shared with (nor inherited by) content of the same
/// bytes indexed later.
pub fn entry_card_key(locator: &str) -> String {
    format!(
        "{ENTRY_CARD_PREFIX}{}",
        blake3::hash(locator.as_bytes()).to_hex()
    )
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ScopeEntries {
    scope: Scope,
    entries: BTreeMap<String, CatalogEntry>,
    /// content hash → indexed locators holding it (derived, rebuilt on load).
    #[serde(skip)]
    by_hash: HashMap<String, BTreeSet<String>>,
}

impl ScopeEntries {
    fn index(&mut self, e: &CatalogEntry) {
        if let (EntryStatus::Indexed, Some(h)) = (e.status, &e.hash) {
            self.by_hash
                .entry(h.clone())
                .or_default()
                .insert(e.locator.clone());
        }
    }

    fn unindex(&mut self, e: &CatalogEntry) {
        if let Some(h) = &e.hash {
            if let Some(set) = self.by_hash.get_mut(h) {
                set.remove(&e.locator);
                if set.is_empty() {
                    self.by_hash.remove(h);
                }
            }
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    scopes: Vec<ScopeEntries>,
    #[serde(default)]
    last_run: Option<LastRun>,
}

/// [`OnDisk`] borrowed from the live catalog, so saving copies nothing.
#[derive(Serialize)]
struct OnDiskRef<'a> {
    version: u32,
    scopes: Vec<&'a ScopeEntries>,
    last_run: Option<&'a LastRun>,
}

/// When the last run ended and what it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastRun {
    /// Seconds since the Unix epoch.
    pub finished_at: u64,
    pub summary: crate::report::Summary,
}

/// The in-memory catalog. Not thread-safe by itself: the ingestor keeps it behind a mutex.
#[derive(Debug)]
pub struct Catalog {
    dir: PathBuf,
    scopes: HashMap<String, ScopeEntries>,
    last_run: Option<LastRun>,
}

/// Totals for `ingest status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogStats {
    pub files: u64,
    pub indexed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub containers: u64,
    pub chunks: u64,
    pub distinct_contents: u64,
}

impl Catalog {
    /// Load the catalog in `data_dir`, or start an empty one.
    pub fn load(data_dir: &Path) -> Result<Self> {
        let path = data_dir.join(CATALOG_FILE);
        let err = |reason: String| Error::Catalog {
            path: path.clone(),
            reason,
        };
        let mut scopes = HashMap::new();
        let mut last_run = None;
        match std::fs::read(&path) {
            Ok(bytes) => {
                let disk: OnDisk =
                    serde_json::from_slice(&bytes).map_err(|e| err(e.to_string()))?;
                if disk.version != VERSION {
                    return Err(err(format!("unsupported catalog version {}", disk.version)));
                }
                last_run = disk.last_run;
                for mut s in disk.scopes {
                    let entries: Vec<CatalogEntry> = s.entries.values().cloned().collect();
                    for e in &entries {
                        s.index(e);
                    }
                    scopes.insert(s.scope.key(), s);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
        Ok(Catalog {
            dir: data_dir.to_path_buf(),
            scopes,
            last_run,
        })
    }

    /// Write the catalog atomically (temporary file, fsync, rename).
    pub fn save(&self) -> Result<()> {
        let path = self.dir.join(CATALOG_FILE);
        let tmp = self.dir.join(format!("{CATALOG_FILE}.tmp"));
        let mut scopes: Vec<&ScopeEntries> = self.scopes.values().collect();
        scopes.sort_by_key(|s| s.scope.key());
        let disk = OnDiskRef {
            version: VERSION,
            scopes,
            last_run: self.last_run.as_ref(),
        };
        let f = crate::perms::create_file(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        serde_json::to_writer(&mut w, &disk).map_err(|e| Error::Catalog {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let f = w
            .into_inner()
            .map_err(|e| Error::io(&tmp, e.into_error()))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        crate::failpoint::hit("catalog.save");
        Ok(())
    }

    /// The last run that ended, if any.
    pub fn last_run(&self) -> Option<&LastRun> {
        self.last_run.as_ref()
    }

    pub fn set_last_run(&mut self, run: LastRun) {
        self.last_run = Some(run);
    }

    pub fn get(&self, scope: &Scope, locator: &str) -> Option<&CatalogEntry> {
        self.scopes.get(&scope.key())?.entries.get(locator)
    }

    /// Insert or replace an entry.
    pub fn put(&mut self, scope: &Scope, entry: CatalogEntry) {
        let s = self
            .scopes
            .entry(scope.key())
            .or_insert_with(|| ScopeEntries {
                scope: scope.clone(),
                ..ScopeEntries::default()
            });
        if let Some(old) = s.entries.remove(&entry.locator) {
            s.unindex(&old);
        }
        s.index(&entry);
        s.entries.insert(entry.locator.clone(), entry);
    }

    /// Drop the entry of `locator`; a scope left without entries is dropped too (nothing
    /// of it stays in the catalog, e.g. of an ended workflow).
    pub fn remove(&mut self, scope: &Scope, locator: &str) -> Option<CatalogEntry> {
        let key = scope.key();
        let s = self.scopes.get_mut(&key)?;
        let old = s.entries.remove(locator)?;
        s.unindex(&old);
        if s.entries.is_empty() {
            self.scopes.remove(&key);
        }
        Some(old)
    }

    /// Indexed locators holding content `hash`, in locator order.
    pub fn locators_with_hash(&self, scope: &Scope, hash: &str) -> Vec<String> {
        self.scopes
            .get(&scope.key())
            .and_then(|s| s.by_hash.get(hash))
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The files of `scope` holding content `hash` as its points name them: the first
    /// [`MAX_HOLDERS`] in locator order (every one stays in the catalog), and the union of
    /// all their tags (at most [`MAX_HOLDER_TAGS`]). A payload's size never grows with the
    /// number of copies of a file, so an archive of ten thousand identical members costs ten
    /// thousand small writes, not a quadratic amount.
    pub fn holders(&self, scope: &Scope, hash: &str) -> Holders {
        let mut locators = self.locators_with_hash(scope, hash);
        let mut tags = self.tags_of(scope, &locators);
        tags.truncate(MAX_HOLDER_TAGS);
        locators.truncate(MAX_HOLDERS);
        Holders { tags, locators }
    }

    /// The union of the tags of the entries at `locators` in `scope`, sorted.
    pub fn tags_of(&self, scope: &Scope, locators: &[String]) -> Vec<String> {
        let tags: BTreeSet<&String> = locators
            .iter()
            .filter_map(|l| self.get(scope, l))
            .flat_map(|e| &e.tags)
            .collect();
        tags.into_iter().cloned().collect()
    }

    /// The scopes with entries.
    pub fn scopes(&self) -> Vec<Scope> {
        let mut scopes: Vec<Scope> = self.scopes.values().map(|s| s.scope.clone()).collect();
        scopes.sort_by_key(Scope::key);
        scopes
    }

    /// Every top-level entry of every scope (files and archives as they were given or
    /// uploaded): its scope and locator.
    pub fn top_level(&self) -> Vec<(Scope, String)> {
        self.scopes
            .values()
            .flat_map(|s| {
                s.entries
                    .values()
                    .filter(|e| e.parent.is_none())
                    .map(|e| (s.scope.clone(), e.locator.clone()))
            })
            .collect()
    }

    /// Every entry of `scope`, in locator order.
    pub fn entries(&self, scope: &Scope) -> Vec<CatalogEntry> {
        self.scopes
            .get(&scope.key())
            .map(|s| s.entries.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The entries of `scope` that want a card of their own ([`CatalogEntry::wants_card`]).
    pub fn wanting_cards(&self, scope: &Scope) -> Vec<CatalogEntry> {
        self.scopes
            .get(&scope.key())
            .map(|s| {
                s.entries
                    .values()
                    .filter(|e| e.wants_card())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Record that the card of `entry` is stored (its `chunks` becomes 1), if the catalog
    /// still holds `entry` as it was; whether it did.
    pub fn set_card_stored(&mut self, scope: &Scope, entry: &CatalogEntry) -> bool {
        let current = self
            .scopes
            .get_mut(&scope.key())
            .and_then(|s| s.entries.get_mut(&entry.locator));
        match current {
            Some(e) if e == entry && e.wants_card() => {
                e.chunks = 1;
                true
            }
            _ => false,
        }
    }

    /// Record that the card of the entry at `locator` is not stored (its `chunks` becomes 0,
    /// so the next run writes it).
    pub fn set_card_missing(&mut self, scope: &Scope, locator: &str) {
        let current = self
            .scopes
            .get_mut(&scope.key())
            .and_then(|s| s.entries.get_mut(locator));
        if let Some(e) = current.filter(|e| e.status != EntryStatus::Indexed) {
            e.chunks = 0;
        }
    }

    /// The names of the members under archive `locator` (relative to it, in locator order,
    /// at most `max`) and how many there are.
    pub fn member_names(&self, scope: &Scope, locator: &str, max: usize) -> (Vec<String>, usize) {
        let Some(s) = self.scopes.get(&scope.key()) else {
            return (Vec::new(), 0);
        };
        let prefix = format!("{locator}{}", extractors::MEMBER_SEPARATOR);
        let mut names = Vec::new();
        let mut count = 0;
        for (k, _) in s
            .entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
        {
            count += 1;
            if names.len() < max {
                names.push(k.get(prefix.len()..).unwrap_or_default().to_string());
            }
        }
        (names, count)
    }

    /// Drop `locator` so the next sync indexes it again; an archive member also drops its
    /// archive's entry, so that the archive is opened again rather than taken as unchanged.
    pub fn forget(&mut self, scope: &Scope, locator: &str) {
        if let Some(e) = self.remove(scope, locator) {
            if let Some(parent) = e.parent {
                self.remove(scope, &parent);
            }
        }
    }

    /// Top-level entries (files given on disk, not archive members) at `root` or inside the
    /// folder `root` (an unescaped path).
    pub fn top_level_under(&self, scope: &Scope, root: &str) -> Vec<CatalogEntry> {
        let Some(s) = self.scopes.get(&scope.key()) else {
            return Vec::new();
        };
        let folder = format!("{}/", root.trim_end_matches('/'));
        // Locators are escaped character by character, so every locator under `root` starts
        // with its escaped form (but for a final `!`, escaped only when a `/` follows).
        let escaped = extractors::Locator::root(root.trim_end_matches('/')).to_string();
        let prefix = escaped.trim_end_matches('!').to_string();
        s.entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(_, e)| e)
            .filter(|e| e.parent.is_none())
            .filter(|e| {
                e.locator
                    .parse::<extractors::Locator>()
                    .ok()
                    .and_then(|l| l.segments.first().cloned())
                    .is_some_and(|path| path == root || path.starts_with(&folder))
            })
            .cloned()
            .collect()
    }

    /// Entries whose parent is `parent`.
    /// Entries of `scope` whose locator starts with `prefix`, in locator order (a range of
    /// the sorted map: the cost is what is found, not the scope's size).
    pub fn under(&self, scope: &Scope, prefix: &str) -> Vec<CatalogEntry> {
        let Some(s) = self.scopes.get(&scope.key()) else {
            return Vec::new();
        };
        s.entries
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, e)| e.clone())
            .collect()
    }

    /// How many entries (files, archives, members) `scope` holds.
    pub fn len_of(&self, scope: &Scope) -> usize {
        self.scopes.get(&scope.key()).map_or(0, |s| s.entries.len())
    }

    /// Whether `scope` holds `locator` or anything under `locator!/`.
    pub fn holds(&self, scope: &Scope, locator: &str) -> bool {
        let nested = format!("{locator}{}", extractors::MEMBER_SEPARATOR);
        self.get(scope, locator).is_some()
            || self.scopes.get(&scope.key()).is_some_and(|s| {
                s.entries
                    .range(nested.clone()..)
                    .next()
                    .is_some_and(|(k, _)| k.starts_with(&nested))
            })
    }

    pub fn members_of(&self, scope: &Scope, parent: &str) -> Vec<CatalogEntry> {
        let Some(s) = self.scopes.get(&scope.key()) else {
            return Vec::new();
        };
        let prefix = format!("{parent}{}", extractors::MEMBER_SEPARATOR);
        s.entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter(|(_, e)| e.parent.as_deref() == Some(parent))
            .map(|(_, e)| e.clone())
            .collect()
    }

    pub fn stats(&self, scope: Option<&Scope>) -> CatalogStats {
        let mut st = CatalogStats::default();
        let mut hashes = BTreeSet::new();
        let scopes = self
            .scopes
            .values()
            .filter(|s| scope.is_none_or(|sc| sc.key() == s.scope.key()));
        for s in scopes {
            for e in s.entries.values() {
                match e.status {
                    EntryStatus::Container => st.containers += 1,
                    EntryStatus::Indexed => {
                        st.indexed += 1;
                        if let Some(h) = &e.hash {
                            if hashes.insert((s.scope.key(), h.clone())) {
                                st.chunks += u64::from(e.chunks);
                            }
                        }
                    }
                    EntryStatus::Failed => st.failed += 1,
                    EntryStatus::Skipped => st.skipped += 1,
                }
                if let Some((_, cards)) = e.card() {
                    st.chunks += u64::from(cards);
                }
                if e.status != EntryStatus::Container {
                    st.files += 1;
                }
            }
        }
        st.distinct_contents = hashes.len() as u64;
        st
    }

    fn content_path(&self, hash: &str) -> PathBuf {
        self.dir.join(CONTENT_DIR).join(format!("{hash}.json"))
    }

    /// Where the object pack of content `hash` lives (see `super::objects`).
    pub fn pack_path(&self, hash: &str) -> PathBuf {
        self.dir.join(CONTENT_DIR).join(format!("{hash}.pack"))
    }

    /// Store the content index and the object pack of `hash` (once; identical bytes have
    /// identical indexes). The pack is written first: a content index on disk means its pack
    /// is there too.
    pub(crate) fn write_content(&self, hash: &str, record: &ContentRecord) -> Result<()> {
        let path = self.content_path(hash);
        if path.is_file() {
            return Ok(());
        }
        crate::perms::create_dir(&self.dir.join(CONTENT_DIR))?;
        let pack = self.pack_path(hash);
        let tmp = pack.with_extension("pack.tmp");
        crate::perms::write_file(&tmp, &record.pack)?;
        std::fs::rename(&tmp, &pack).map_err(|e| Error::io(&pack, e))?;
        let bytes = serde_json::to_vec(&record.index).map_err(|e| Error::Catalog {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let tmp = path.with_extension("json.tmp");
        crate::perms::write_file(&tmp, &bytes)?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        crate::failpoint::hit("content.written");
        Ok(())
    }

    /// The content index of `hash`, if stored. It is shared by every scope holding these
    /// bytes: its `file_name` and `container_path` are the first holder's, never to be shown.
    pub fn content_index(&self, hash: &str) -> Result<Option<FileContentIndex>> {
        let path = self.content_path(hash);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Catalog {
                path,
                reason: e.to_string(),
            })
    }

    /// Whether an entry of any scope holds content `hash` (content indexes are shared by
    /// every scope with the same bytes).
    pub fn held_anywhere(&self, hash: &str) -> bool {
        self.scopes.values().any(|s| s.by_hash.contains_key(hash))
    }

    /// Delete the content index of `hash` unless an entry of some scope still holds it;
    /// whether a file was deleted. Called wherever a content's points are deleted, so that
    /// content indexes do not outlive their content.
    pub fn drop_content_index(&self, hash: &str) -> Result<bool> {
        if self.held_anywhere(hash) {
            return Ok(false);
        }
        let pack = self.pack_path(hash);
        match std::fs::remove_file(&pack) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&pack, e)),
        }
        let path = self.content_path(hash);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Delete every content index no entry holds, and temporary files a crash left in
    /// `content/`; how many files were deleted.
    pub fn drop_unheld_content_indexes(&self) -> Result<u64> {
        let dir = self.dir.join(CONTENT_DIR);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(&dir, e)),
        };
        let mut deleted = 0;
        for entry in entries {
            let path = entry.map_err(|e| Error::io(&dir, e))?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stale = match name
                .strip_suffix(".json")
                .or_else(|| name.strip_suffix(".pack"))
            {
                Some(hash) => !self.held_anywhere(hash),
                None => name.ends_with(".json.tmp") || name.ends_with(".pack.tmp"),
            };
            if stale {
                match std::fs::remove_file(&path) {
                    Ok(()) => deleted += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(&path, e)),
                }
            }
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(locator: &str, hash: &str, parent: Option<&str>) -> CatalogEntry {
        CatalogEntry::indexed(locator, parent.map(str::to_string), hash, 1, 0, 2)
    }

    #[test]
    fn points_name_at_most_max_holders_and_every_tag() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::load(dir.path()).unwrap();
        let scope = Scope::user("u");
        for n in 0..(MAX_HOLDERS + 10) {
            let e = CatalogEntry::indexed(format!("/d/copy-{n:03}.txt"), None, "h", 1, 1, 1)
                .with_tags(vec![format!("n={n}")]);
            c.put(&scope, e);
        }
        let h = c.holders(&scope, "h");
        assert_eq!(h.locators.len(), MAX_HOLDERS);
        assert_eq!(h.locators[0], "/d/copy-000.txt");
        assert_eq!(h.tags.len(), MAX_HOLDERS + 10, "tags of every holder");
        assert_eq!(c.locators_with_hash(&scope, "h").len(), MAX_HOLDERS + 10);
    }

    #[test]
    fn round_trips_and_tracks_hashes_and_members() {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::user("u");
        let mut c = Catalog::load(dir.path()).unwrap();
        c.put(&scope, entry("a.zip!/x.txt", "h1", Some("a.zip")));
        c.put(&scope, entry("a.zip!/y.txt", "h1", Some("a.zip")));
        c.put(&scope, entry("a.zipper", "h2", None));
        assert_eq!(c.locators_with_hash(&scope, "h1").len(), 2);
        assert_eq!(c.members_of(&scope, "a.zip").len(), 2);
        c.save().unwrap();
        let mut c = Catalog::load(dir.path()).unwrap();
        assert_eq!(c.locators_with_hash(&scope, "h1").len(), 2);
        c.remove(&scope, "a.zip!/x.txt");
        assert_eq!(c.locators_with_hash(&scope, "h1"), vec!["a.zip!/y.txt"]);
        assert_eq!(c.stats(None).chunks, 4);
        assert!(c.get(&Scope::user("other"), "a.zipper").is_none());
    }

    #[test]
    fn content_indexes_go_when_no_scope_holds_their_content() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (Scope::user("a"), Scope::user("b"));
        let mut c = Catalog::load(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("content")).unwrap();
        for h in ["h1", "h2", "h3"] {
            std::fs::write(dir.path().join(format!("content/{h}.json")), b"{}").unwrap();
        }
        std::fs::write(dir.path().join("content/h9.json.tmp"), b"partial").unwrap();
        c.put(&a, entry("/a.txt", "h1", None));
        c.put(&b, entry("/b.txt", "h1", None));
        c.put(&a, entry("/c.txt", "h2", None));
        let present = |h: &str| dir.path().join(format!("content/{h}.json")).is_file();
        // Held by scope b still.
        c.remove(&a, "/a.txt");
        assert!(!c.drop_content_index("h1").unwrap());
        assert!(present("h1"));
        c.remove(&b, "/b.txt");
        assert!(c.drop_content_index("h1").unwrap());
        assert!(!present("h1"));
        assert!(!c.drop_content_index("h1").unwrap(), "already gone");
        // The sweep: h3 (no holder) and the leftover temporary file go, h2 stays.
        assert_eq!(c.drop_unheld_content_indexes().unwrap(), 2);
        assert!(present("h2") && !present("h3"));
        assert!(!dir.path().join("content/h9.json.tmp").exists());
    }

    #[test]
    fn top_level_entries_under_a_folder_and_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::user("u");
        let mut c = Catalog::load(dir.path()).unwrap();
        for (loc, parent) in [
            ("/in/a.txt", None),
            ("/in/sub/b.txt", None),
            ("/in/c.zip", None),
            ("/in/c.zip!/m.txt", Some("/in/c.zip")),
            ("/inbox/d.txt", None),
            ("/in!/e.txt", None),
            ("/i/g.txt", None),
        ] {
            // Top-level locators are paths, escaped: a folder named `in!` is `in%21/`.
            let loc = match parent {
                None => extractors::Locator::root(loc).to_string(),
                Some(_) => loc.to_string(),
            };
            c.put(&scope, entry(&loc, "h", parent));
        }
        let under = |root: &str| -> Vec<String> {
            c.top_level_under(&scope, root)
                .into_iter()
                .map(|e| e.locator)
                .collect()
        };
        assert_eq!(under("/in"), ["/in/a.txt", "/in/c.zip", "/in/sub/b.txt"]);
        assert_eq!(under("/in/"), under("/in"));
        assert_eq!(under("/in/a.txt"), ["/in/a.txt"]);
        assert_eq!(under("/in!"), ["/in%21/e.txt"]);
        assert!(under("/nowhere").is_empty());
    }
}
