//! Stage 1: walk the inputs. Folders are synced (what is gone leaves the index), files whose
//! size and mtime are unchanged are answered from the catalog without reading them, and
//! everything else is unpacked (containers recursively, under one budget per tree, behind a
//! panic boundary) into [`Work`] items for extraction.

use super::quarantine;
use super::run::{unread_status, Run};
use super::{BusyTime, Expansion, IndexItem, Work};
use crate::index::{CatalogEntry, EntryStatus, ShadowedMember};
use crate::pipeline::Input;
use crate::report::{FileReport, FileStatus};
use crate::unpack::{DiskEntry, DiskWalk, Leaf, Unpacker, WalkOptions};
use crossbeam_channel::Sender;
use extractors::{Detected, FileKind, Locator, TextKind};
use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

/// The name an input's ledger line has before it is walked: for bytes from elsewhere the
/// name they are stored under when it is valid ([`crate::names::upload_name`]), so a line
/// about a panic names the input as every other line of it does.
fn input_name(input: &Input) -> String {
    match input {
        Input::Bytes { name, .. } | Input::Text { name, .. } | Input::Upload { name, .. } => {
            crate::names::upload_name(name).unwrap_or_else(|_| name.clone())
        }
        Input::Path(path) => root_path(path),
        Input::Remote(source) => Locator::root(source.url.locator_root()).to_string(),
        Input::Member { member, .. } => member.clone(),
        Input::Remove { locator } => locator.clone(),
    }
}

/// What a caught panic said.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// The path string catalog entries are compared with: canonical when it exists, else the
/// absolute path under its canonical parent (a deleted file).
fn root_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        match (absolute.parent(), absolute.file_name()) {
            (Some(parent), Some(name)) => std::fs::canonicalize(parent)
                .map(|p| p.join(name))
                .unwrap_or(absolute.clone()),
            _ => absolute,
        }
    });
    extractors::segment_from_bytes(resolved.as_os_str().as_bytes())
}

/// What the walk stage did in a run.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct WalkTally {
    /// Time walking and unpacking, `blocked` included.
    pub(super) unpack: Duration,
    /// Part of `unpack` spent waiting for the byte budget or a full channel (back-pressure,
    /// not work).
    pub(super) blocked: Duration,
}

/// What tells a top-level input from another of its name, for its quarantine mark: its size,
/// its modification time (a remote object's change stamp) and, for an upload, its body.
struct Seen<'a> {
    size: u64,
    mtime_ns: u64,
    body: &'a str,
}

/// Stage 1: takes the run's [`Input`]s one after the other; answers unchanged files from the
/// catalog, unpacks the rest (containers recursively, under one budget per tree, behind a
/// panic boundary) into [`Work`] items for extraction, records what is not extracted
/// (skipped, failed, archives) and sends the removal of what is gone.
pub(super) struct WalkStage<'r> {
    run: &'r Run<'r>,
    unpack_time: BusyTime,
    blocked_time: BusyTime,
}

impl<'r> WalkStage<'r> {
    pub(super) fn new(run: &'r Run<'r>) -> Self {
        WalkStage {
            run,
            unpack_time: BusyTime::default(),
            blocked_time: BusyTime::default(),
        }
    }

    /// Walk `inputs` until they end or the run halts.
    pub(super) fn run(
        self,
        inputs: super::Inputs<'_>,
        leaves: Sender<Work>,
        index: Sender<IndexItem>,
    ) -> WalkTally {
        self.walk(inputs, &leaves, &index);
        WalkTally {
            unpack: self.unpack_time.total(),
            blocked: self.blocked_time.total(),
        }
    }

    fn walk(&self, inputs: super::Inputs<'_>, leaves: &Sender<Work>, index: &Sender<IndexItem>) {
        let limits = &self.run.ing.config().limits;
        for (n, input) in inputs.enumerate() {
            if self.run.halted() {
                return;
            }
            self.run.input_started(n);
            // One input that panics the walk (a listing or a decoder beyond the boundaries
            // inside) is one failed line, not a run that never ends. What it held is not
            // taken for gone (the removals come at the end of its walk, which it did not
            // reach); its lines are all sent, so it completes (an upload's job ends).
            let name = input_name(&input);
            let walked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::failpoint::hit_for("walk.input", &name);
                match input {
                    Input::Bytes { name, bytes } => {
                        if let Some(name) = self.stored_name(&name) {
                            let locator = Locator::root(name);
                            let size = bytes.len() as u64;
                            let mut expansion = Expansion::default();
                            let seen = Seen {
                                size,
                                mtime_ns: 0,
                                body: "",
                            };
                            self.unpack_contained(&locator, &[], seen, || {
                                Unpacker::new(limits).expand_bytes(bytes, &locator, &mut |leaf| {
                                    self.route_leaf(
                                        leaf,
                                        &locator,
                                        size,
                                        0,
                                        leaves,
                                        &mut expansion,
                                    );
                                });
                            });
                        }
                    }
                    Input::Text { name, text, json } => {
                        if let Some(name) = self.stored_name(&name) {
                            let locator = Locator::root(name);
                            let size = text.len() as u64;
                            let kind = if json {
                                TextKind::Json
                            } else {
                                TextKind::Plain
                            };
                            let detected = Detected {
                                kind: FileKind::Text(kind),
                                mime: if json {
                                    "application/json"
                                } else {
                                    "text/plain"
                                }
                                .into(),
                            };
                            let leaf = Leaf::File {
                                locator: locator.clone(),
                                bytes: text.into_bytes(),
                                detected,
                            };
                            let mut expansion = Expansion::default();
                            self.route_leaf(leaf, &locator, size, 0, leaves, &mut expansion);
                        }
                    }
                    Input::Path(path) => self.sync_path(&path, leaves, index),
                    Input::Remote(source) => self.sync_remote(&source, leaves, index),
                    Input::Member { archive, member } => self.member(&archive, &member, leaves),
                    Input::Upload {
                        name,
                        path,
                        limits,
                        tags,
                    } => {
                        if let Some(name) = self.stored_name(&name) {
                            self.upload(&name, &path, limits.as_ref(), tags, leaves, index);
                        }
                    }
                    Input::Remove { locator } => self.remove(&locator, index),
                }
            }));
            if let Err(panic) = walked {
                let reason = format!("walking it panicked: {}", panic_message(&*panic));
                tracing::error!(input = %name, "{reason}");
                self.run
                    .report(&name, FileStatus::Failed, Some(reason), 0, None);
            }
            if self.run.halted() {
                return; // files of this input may be missing: it is not complete
            }
            self.run.input_walked(n);
        }
    }

    /// The name bytes from elsewhere are stored under ([`crate::names::upload_name`]), or
    /// `None` after a `failed` line saying why it is refused: a name is never a path, so it
    /// can never be taken for a file on this machine.
    fn stored_name(&self, name: &str) -> Option<String> {
        match crate::names::upload_name(name) {
            Ok(n) => Some(n),
            Err(e) => {
                self.run
                    .report(name, FileStatus::Failed, Some(e.to_string()), 0, None);
                None
            }
        }
    }

    /// An upload spooled to `path`, known as `name`: unpacked and extracted like a file on
    /// disk (an archive's members that are gone since an earlier upload of the same name are
    /// removed), never answered from the catalog as unchanged (an upload has no mtime; its
    /// identical bytes are found by hash instead, and not embedded again).
    fn upload(
        &self,
        name: &str,
        path: &Path,
        limits: Option<&crate::Limits>,
        tags: Vec<String>,
        leaves: &Sender<Work>,
        index: &Sender<IndexItem>,
    ) {
        let size = match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(e) => {
                let reason = format!("the spooled upload is unreadable: {e}");
                return self
                    .run
                    .report(name, FileStatus::Failed, Some(reason), 0, None);
            }
        };
        let file = crate::unpack::DiskFile {
            path: path.to_path_buf(),
            locator: Locator::root(name),
            size,
            mtime_ns: 0,
        };
        self.expand_disk_file(
            file,
            limits.unwrap_or(&self.run.ing.config().limits),
            tags,
            true,
            leaves,
            index,
        );
    }

    /// Remove `locator` (a file, or an archive with its members) from the catalog and the
    /// index, with everything derived from it.
    fn remove(&self, locator: &str, index: &Sender<IndexItem>) {
        let nested = format!("{locator}{}", extractors::MEMBER_SEPARATOR);
        let mut doomed: Vec<String> = self
            .run
            .catalog
            .under(&nested)
            .into_iter()
            .map(|e| e.locator)
            .chain(self.run.catalog.get(locator).map(|e| e.locator))
            .collect();
        // Members first, the file itself last.
        doomed.sort_by_key(|l| std::cmp::Reverse(l.len()));
        for locator in doomed {
            self.run.expect_line(&locator);
            self.run.send_removed(index, locator);
        }
    }

    /// Extract one member of the archive whose bytes are at `archive` (see
    /// [`Input::Member`]): the archive is known by the member locator's first segment.
    fn member(&self, archive: &Path, member: &str, leaves: &Sender<Work>) {
        let top = Locator::root(extractors::split_top(member).0);
        // Size and time describe the archive itself, which is not re-catalogued here.
        let size = match std::fs::metadata(archive) {
            Ok(m) => m.len(),
            Err(e) => {
                let reason = format!("cannot read the archive: {e}");
                return self
                    .run
                    .report(member, FileStatus::Failed, Some(reason), 0, None);
            }
        };
        let mtime_ns = 0;
        let mut limits = self.run.ing.config().limits.clone();
        // A member past the member limit can be read this way, but walking to it stays
        // bounded: a small archive of millions of headers is not walked without end.
        limits.max_files = limits.max_files.saturating_mul(100).max(1_000_000);
        let nested = format!("{member}!/");
        // The member carries its archive's tags (an upload's), as when the archive was read.
        let archive_entry = self.run.catalog.get(&top.to_string());
        let tags = archive_entry.map(|e| e.tags).unwrap_or_default();
        let mut expansion = Expansion {
            tags: tags.clone(),
            ..Expansion::default()
        };
        let body = archive.to_string_lossy();
        let seen = Seen {
            size,
            mtime_ns,
            body: &body,
        };
        self.unpack_contained(&top, &tags, seen, || {
            Unpacker::new(&limits).expand_file(archive, &top, &mut |leaf| {
                let l = match &leaf {
                    Leaf::File { locator, .. }
                    | Leaf::Skipped { locator, .. }
                    | Leaf::Failed { locator, .. }
                    | Leaf::Shadowed { locator, .. }
                    | Leaf::Container { locator, .. } => locator.to_string(),
                };
                if l == member || l.starts_with(&nested) {
                    self.route_leaf(leaf, &top, size, mtime_ns, leaves, &mut expansion);
                }
            });
        });
    }

    /// Ingest a file or folder and forget what is no longer there: catalogued files at or
    /// under `path` that the walk did not meet (deleted, renamed away) are removed, except
    /// under folders that could not be read.
    fn sync_path(&self, path: &Path, leaves: &Sender<Work>, index: &Sender<IndexItem>) {
        let exists = std::fs::symlink_metadata(path).is_ok();
        let root = root_path(path);
        let mut seen: HashSet<String> = HashSet::new();
        let mut unreadable: Vec<String> = Vec::new();
        // The index's own files are never ingested, even when it lives in the folder.
        let options = WalkOptions {
            except: std::fs::canonicalize(&self.run.ing.config().data_dir)
                .into_iter()
                .collect(),
            include_hidden: self.run.ing.config().include_hidden,
            exclusions: self.run.ing.config().exclusions.clone(),
            follow_links: self.run.ing.config().follow_links,
        };
        if exists {
            let partition = self.run.ing.config().partition;
            let theirs =
                |locator: &Locator| partition.is_some_and(|p| !p.takes(&locator.to_string()));
            for entry in DiskWalk::new(path, options) {
                // A halted run reads no further: what it left unread is not judged below.
                if self.run.halted() {
                    return;
                }
                match entry {
                    // Another node's share: as if absent (what this node held of it is removed
                    // from its catalog, and the content stays while another node holds it).
                    DiskEntry::File(f) if theirs(&f.locator) => {}
                    DiskEntry::Skipped { locator, .. } if theirs(&locator) => {}
                    DiskEntry::File(f) => {
                        seen.insert(f.locator.to_string());
                        self.disk_file(f, leaves, index);
                    }
                    DiskEntry::Skipped { locator, reason } => {
                        seen.insert(locator.to_string());
                        self.record_unread(&locator, None, &[], FileStatus::Skipped, reason);
                    }
                    // Not catalogued: what was indexed under it (with --hidden, or before it
                    // was excluded) is removed.
                    DiskEntry::Ignored { locator, reason } => {
                        self.run.report(
                            &locator.to_string(),
                            FileStatus::Ignored,
                            Some(reason),
                            0,
                            None,
                        );
                    }
                    // Not catalogued (it may come back); what is under it is not removed.
                    DiskEntry::Failed { locator, reason } => {
                        unreadable.extend(locator.segments.first().cloned());
                        self.run.report(
                            &locator.to_string(),
                            FileStatus::Failed,
                            Some(reason),
                            0,
                            None,
                        );
                    }
                }
            }
        }
        if self.run.halted() {
            return; // an unfinished walk proves nothing about what is gone
        }
        let gone: Vec<CatalogEntry> = self
            .not_seen_under(&root, &seen)
            .into_iter()
            .filter(|e| {
                let path = e
                    .locator
                    .parse::<Locator>()
                    .ok()
                    .and_then(|l| l.segments.first().cloned())
                    .unwrap_or_default();
                !unreadable
                    .iter()
                    .any(|u| path == *u || path.starts_with(&format!("{u}/")))
            })
            .collect();
        if !exists && gone.is_empty() {
            // Never indexed and not there: most likely a typo.
            self.run.report(
                &Locator::root(root).to_string(),
                FileStatus::Failed,
                Some("cannot open: no such file or folder".into()),
                0,
                None,
            );
        }
        self.remove_gone(gone, index);
    }

    /// Sync a remote source: list it, answer unchanged objects (same size and modification
    /// time) from the catalog without downloading them, stream the others into the spool
    /// and unpack them like files on disk, and forget what the listing no longer holds (only
    /// after a complete listing). A source that cannot be opened or listed is one `failed`
    /// line and removes nothing; an object that cannot be downloaded is one `failed` line and
    /// keeps what the index held of it.
    fn sync_remote(
        &self,
        source: &crate::sources::Source,
        leaves: &Sender<Work>,
        index: &Sender<IndexItem>,
    ) {
        let url = &source.url;
        let root = url.locator_root();
        let fail = |reason: String| {
            let at = Locator::root(root.clone()).to_string();
            self.run
                .report(&at, FileStatus::Failed, Some(reason), 0, None);
        };
        let spool = crate::data_dir::DataDir::at(&self.run.ing.config().data_dir).source_spool();
        let spool = match crate::sources::SyncSpool::new(&spool) {
            Ok(s) => s,
            Err(e) => return fail(format!("cannot spool: {e}")),
        };
        let session = match crate::sources::RemoteSession::open(
            source,
            &self.run.ing.config().source_destinations,
        ) {
            Ok(s) => s,
            Err(e) => return fail(format!("cannot open the source: {e}")),
        };
        let limits = &self.run.ing.config().limits;
        let partition = self.run.ing.config().partition;
        let mut seen: HashSet<String> = HashSet::new();
        let mut objects = 0usize;
        let mut sync_object = |object: crate::sources::RemoteObject| {
            if source.max_objects.is_some_and(|max| objects >= max) {
                return false;
            }
            objects += 1;
            if self.run.halted() {
                return false;
            }
            let locator = Locator::root(url.locator_of(&object.path));
            if partition.is_some_and(|p| !p.takes(&locator.to_string())) {
                return true;
            }
            let loc = locator.to_string();
            seen.insert(loc.clone());
            let known = self.run.catalog.get(&loc);
            if let Some(e) = known
                .filter(|e| object.stamp != 0 && self.is_unchanged(e, object.size, object.stamp))
            {
                self.replay_unchanged(&e);
                return true;
            }
            let file = spool.file_for(&loc);
            crate::failpoint::hit("sources.download");
            match session.download(&object.path, object.size, limits.max_total_bytes, &file) {
                Ok(size) => {
                    let f = crate::unpack::DiskFile {
                        path: file.clone(),
                        locator,
                        size,
                        mtime_ns: object.stamp,
                    };
                    self.expand_disk_file(f, limits, Vec::new(), false, leaves, index);
                }
                Err(
                    e @ (crate::sources::SourceError::TooLarge { .. }
                    | crate::sources::SourceError::Refused(_)),
                ) => {
                    self.record_unread(&locator, None, &[], FileStatus::Skipped, e.to_string());
                }
                Err(e) => {
                    self.run
                        .report(&loc, FileStatus::Failed, Some(e.to_string()), 0, None);
                }
            }
            let _ = std::fs::remove_file(&file);
            true
        };
        if let Some(path) = &source.file {
            // One object pulled: nothing else is listed, and only it may be gone.
            let locator = Locator::root(url.locator_of(path)).to_string();
            match session.stat_file(path) {
                Ok(Some(object)) => {
                    sync_object(object);
                }
                Ok(None) => {
                    let gone: Vec<CatalogEntry> =
                        self.run.catalog.get(&locator).into_iter().collect();
                    if gone.is_empty() {
                        self.run.report(
                            &locator,
                            FileStatus::Failed,
                            Some("no such object at this source".into()),
                            0,
                            None,
                        );
                    }
                    self.remove_gone(gone, index);
                }
                Err(e @ crate::sources::SourceError::Refused(_)) => {
                    self.run
                        .report(&locator, FileStatus::Skipped, Some(e.to_string()), 0, None)
                }
                Err(e) => {
                    self.run
                        .report(&locator, FileStatus::Failed, Some(e.to_string()), 0, None)
                }
            }
            return;
        }
        let listed = session.list(sync_object);
        let listing = match listed {
            Err(e) => return fail(e.to_string()),
            Ok(listing) => listing,
        };
        for (path, why) in &listing.refused {
            let at = Locator::root(url.locator_of(path)).to_string();
            self.run
                .report(&at, FileStatus::Skipped, Some(why.clone()), 0, None);
        }
        let unnamed = listing.refused_count - listing.refused.len() as u64;
        if unnamed > 0 {
            let at = Locator::root(root.clone()).to_string();
            let reason = format!("{unnamed} more objects not read: a path that is not canonical");
            self.run
                .report(&at, FileStatus::Skipped, Some(reason), 0, None);
        }
        if listing.long_paths > 0 {
            let at = Locator::root(root.clone()).to_string();
            let reason = format!(
                "limit: name-length ({} objects with a path over {} bytes not read)",
                listing.long_paths,
                crate::sources::MAX_OBJECT_PATH_BYTES
            );
            self.run
                .report(&at, FileStatus::Skipped, Some(reason), 0, None);
        }
        if !listing.complete {
            if let Some(reason) = listing.cut {
                let at = Locator::root(root.clone()).to_string();
                self.run
                    .report(&at, FileStatus::Skipped, Some(reason), 0, None);
            } else if let Some(max) = source.max_objects.filter(|_| !self.run.halted()) {
                let at = Locator::root(root.clone()).to_string();
                let reason = format!(
                    "limit: files (stopped after {max} objects; pull its subfolders, or let the source sync)"
                );
                self.run
                    .report(&at, FileStatus::Skipped, Some(reason), 0, None);
            }
            return; // stopped: what it did not reach is not gone
        }
        if self.run.halted() {
            return;
        }
        let gone = self.not_seen_under(&root, &seen);
        if seen.is_empty() && gone.is_empty() {
            // Never indexed and nothing there: most likely a typo.
            return fail(
                "nothing at this source: no such bucket, folder or prefix, or it is empty".into(),
            );
        }
        if seen.is_empty() {
            // A listing that comes back empty where files were indexed is more often a
            // service answering wrongly (an error taken for an empty folder, a retried
            // request) than a source emptied: nothing is removed on its word.
            return fail(format!(
                "the source listed nothing: its {} indexed files are kept (an empty listing \
                 is not taken as proof that everything is gone; if the source was emptied on \
                 purpose, delete them by name)",
                gone.len()
            ));
        }
        self.remove_gone(gone, index);
    }

    /// The top-level entries under `root` that a walk did not meet.
    fn not_seen_under(&self, root: &str, seen: &HashSet<String>) -> Vec<CatalogEntry> {
        let mut entries = self.run.catalog.top_level_under(root);
        entries.retain(|e| !seen.contains(&e.locator));
        entries
    }

    /// Remove `gone` entries (archives with their members) from the index.
    fn remove_gone(&self, gone: Vec<CatalogEntry>, index: &Sender<IndexItem>) {
        for e in gone {
            for m in self.run.catalog.members_of(&e.locator) {
                self.run.send_removed(index, m.locator);
            }
            self.run.send_removed(index, e.locator);
        }
    }

    fn disk_file(
        &self,
        f: crate::unpack::DiskFile,
        leaves: &Sender<Work>,
        index: &Sender<IndexItem>,
    ) {
        if self.run.halted() {
            return;
        }
        let loc = f.locator.to_string();
        let known = self.run.catalog.get(&loc);
        if let Some(e) = known.filter(|e| self.is_unchanged(e, f.size, f.mtime_ns)) {
            self.replay_unchanged(&e);
            return;
        }
        self.expand_disk_file(
            f,
            &self.run.ing.config().limits,
            Vec::new(),
            false,
            leaves,
            index,
        );
    }

    /// Unpack a file on disk (an archive recursively) under `limits` and send its files on.
    #[allow(clippy::too_many_arguments)]
    fn expand_disk_file(
        &self,
        f: crate::unpack::DiskFile,
        limits: &crate::Limits,
        tags: Vec<String>,
        upload: bool,
        leaves: &Sender<Work>,
        index: &Sender<IndexItem>,
    ) {
        let loc = f.locator.to_string();
        let mut expansion = Expansion {
            tags: tags.clone(),
            ..Expansion::default()
        };
        // An upload's body is its job's: another upload of the same name is another input.
        let body = if upload {
            f.path.to_string_lossy()
        } else {
            std::borrow::Cow::Borrowed("")
        };
        let seen = Seen {
            size: f.size,
            mtime_ns: f.mtime_ns,
            body: &body,
        };
        let unpacked = self.unpack_contained(&f.locator, &tags, seen, || {
            Unpacker::new(limits).expand_file(&f.path, &f.locator, &mut |leaf| {
                self.route_leaf(leaf, &f.locator, f.size, f.mtime_ns, leaves, &mut expansion);
            });
        });
        if !unpacked || self.run.halted() {
            return; // members were dropped: the archive is opened again next time
        }
        if let Some((hash, reason)) = expansion.opened {
            let entry = CatalogEntry::container(
                loc.clone(),
                hash,
                f.size,
                f.mtime_ns,
                reason,
                expansion.shadowed,
            )
            .with_tags(expansion.tags);
            self.run.archive_expanded(entry, expansion.seen);
        } else if let Some(previous) = self
            .run
            .catalog
            .get(&loc)
            .filter(|e| e.status == EntryStatus::Container)
        {
            // It used to be an archive: its old members are gone.
            for m in self.run.catalog.members_of(&previous.locator) {
                self.run.send_removed(index, m.locator);
            }
        }
    }

    /// Unpack one top-level input behind a panic boundary: a decoder (zip, tar, flate2) that
    /// panics costs that input one `failed` line, not the run. Members routed before the panic
    /// keep their lines and entries; the input is recorded as failed (not as an archive), so it
    /// is opened again next run. Behind a quarantine mark too ([`quarantine`]): an input the
    /// process died in twice while unpacking it is refused with a `failed` line instead. Returns
    /// whether unpacking ended normally.
    fn unpack_contained(
        &self,
        top: &Locator,
        tags: &[String],
        seen: Seen<'_>,
        unpack: impl FnOnce(),
    ) -> bool {
        let scope = self.run.scope.key();
        let locator = top.to_string();
        let input = quarantine::InputIdentity {
            scope: &scope,
            locator: &locator,
            size: seen.size,
            mtime_ns: seen.mtime_ns,
            body: seen.body,
        };
        let guard = match quarantine::enter(self.run.ing.data(), &input) {
            Ok(guard) => guard,
            Err(reason) => {
                self.record_unread(top, None, tags, FileStatus::Failed, reason);
                return false;
            }
        };
        crate::failpoint::hit_for("unpack.top", &locator);
        let t = Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(unpack));
        self.unpack_time.add(t.elapsed());
        drop(guard);
        let Err(panic) = outcome else {
            return true;
        };
        let reason = format!("unpacking panicked: {}", panic_message(&*panic));
        self.record_unread(top, None, tags, FileStatus::Failed, reason);
        false
    }

    /// Whether the file `e` describes is still the same (size and modification time, a remote
    /// object's change stamp) and need not be read, unless `--retry` asks for what it left
    /// unindexed.
    fn is_unchanged(&self, e: &CatalogEntry, size: u64, mtime_ns: u64) -> bool {
        e.size == size
            && e.mtime_ns == mtime_ns
            && !(self.run.ing.config().retry_unindexed && self.holds_unindexed(e))
    }

    /// Whether `e` failed or was skipped, or is an archive with such a member.
    fn holds_unindexed(&self, e: &CatalogEntry) -> bool {
        let unindexed = |s: EntryStatus| matches!(s, EntryStatus::Failed | EntryStatus::Skipped);
        unindexed(e.status)
            || (e.status == EntryStatus::Container
                && self
                    .run
                    .catalog
                    .members_of(&e.locator)
                    .iter()
                    .any(|m| unindexed(m.status)))
    }

    /// Report a file (or an archive and every member of it) whose size and mtime did not
    /// change.
    fn replay_unchanged(&self, e: &CatalogEntry) {
        let mut entries = vec![e.clone()];
        if e.status == EntryStatus::Container {
            entries.extend(self.run.catalog.members_of(&e.locator));
        }
        for s in &e.shadowed {
            self.run.report_shadowed(&s.locator, &s.reason);
        }
        for m in entries {
            let status = match m.status {
                EntryStatus::Indexed | EntryStatus::Container => FileStatus::Unchanged,
                EntryStatus::Failed => FileStatus::Failed,
                EntryStatus::Skipped => FileStatus::Skipped,
            };
            // A ledger line counts a file's content chunks, not an entry's own card.
            let chunks = m.content_chunks();
            self.run.send_report(
                FileReport::new(m.locator, status)
                    .reason(m.reason)
                    .chunks(chunks)
                    .hash(m.hash)
                    .archive(m.status == EntryStatus::Container),
            );
        }
    }

    /// Send a file leaf to extraction (blocking while the stage is busy); record the rest
    /// and note it in `expansion`.
    fn route_leaf(
        &self,
        leaf: Leaf,
        top: &Locator,
        size: u64,
        mtime_ns: u64,
        leaves: &Sender<Work>,
        expansion: &mut Expansion,
    ) {
        let Expansion {
            seen,
            opened,
            shadowed,
            tags,
        } = expansion;
        let top_str = top.to_string();
        let parent_of = |l: &Locator| (l != top).then(|| top_str.clone());
        let skipped = matches!(leaf, Leaf::Skipped { .. });
        match leaf {
            Leaf::File {
                locator,
                bytes,
                detected,
            } => {
                seen.push(locator.to_string());
                let is_top = &locator == top;
                let weight = bytes.len() as u64;
                let permit = self.blocked_time.time(|| self.run.gate.acquire(weight));
                let work = Work {
                    permit,
                    parent: parent_of(&locator),
                    size: if is_top { size } else { bytes.len() as u64 },
                    mtime_ns: if is_top { mtime_ns } else { 0 },
                    locator,
                    bytes,
                    detected,
                    tags: tags.clone(),
                };
                self.run.expect_line(&work.locator.to_string());
                self.run.ing.progress().found(weight);
                self.run.handoff.handed();
                self.blocked_time.time(|| {
                    if leaves.send(work).is_err() {
                        // Extraction ended (the run halted): nobody will look at it.
                        self.run.handoff.looked();
                    }
                });
            }
            Leaf::Skipped { locator, reason } | Leaf::Failed { locator, reason } => {
                let status = if skipped {
                    FileStatus::Skipped
                } else {
                    FileStatus::Failed
                };
                seen.push(locator.to_string());
                let parent = parent_of(&locator);
                self.record_unread(&locator, parent.as_deref(), tags, status, reason);
            }
            Leaf::Shadowed { locator, reason } => {
                // Its locator names an earlier member: reported, not catalogued.
                let locator = locator.to_string();
                self.run.report_shadowed(&locator, &reason);
                shadowed.push(ShadowedMember { locator, reason });
            }
            Leaf::Container {
                locator,
                members,
                hash,
                about,
            } => {
                let loc = locator.to_string();
                seen.push(loc.clone());
                let reason = about.unwrap_or_else(|| format!("archive: {members} members"));
                // The same archive as last time: its members said whether they changed.
                let same = self.run.catalog.get(&loc).is_some_and(|e| {
                    e.status == EntryStatus::Container && e.hash.as_deref() == Some(&hash)
                });
                if &locator == top {
                    // Recorded when the run ends, if all its members made it.
                    *opened = Some((hash.clone(), reason.clone()));
                } else {
                    self.record_without_content(
                        &loc,
                        Some(&top_str),
                        tags,
                        EntryStatus::Container,
                        &reason,
                        Some(&hash),
                    );
                }
                let status = if same {
                    FileStatus::Unchanged
                } else {
                    FileStatus::Indexed
                };
                self.run.send_report(
                    FileReport::new(loc, status)
                        .reason(Some(reason))
                        .hash(Some(hash))
                        .archive(true),
                );
            }
        }
    }

    /// Record a member that holds no content of its own (skipped, failed, or an archive):
    /// whatever content the locator held before is released.
    fn record_without_content(
        &self,
        loc: &str,
        parent: Option<&str>,
        tags: &[String],
        status: EntryStatus,
        reason: &str,
        archive_hash: Option<&str>,
    ) {
        let entry = CatalogEntry::without_content(
            loc,
            parent.map(str::to_string),
            archive_hash.map(str::to_string),
            status,
            reason,
        )
        .with_tags(tags.to_vec());
        let previous = self.run.catalog.put(entry);
        if let Some((hash, chunks)) = previous {
            if let Err(e) = self.run.release(&hash, chunks) {
                self.run.fail_run(e);
            }
        }
    }

    /// Record a member that was not extracted (skipped or failed) and report it.
    fn record_unread(
        &self,
        locator: &Locator,
        parent: Option<&str>,
        tags: &[String],
        status: FileStatus,
        reason: String,
    ) {
        let loc = locator.to_string();
        let status_of_entry = unread_status(status);
        self.record_without_content(&loc, parent, tags, status_of_entry, &reason, None);
        self.run.report(&loc, status, Some(reason), 0, None);
    }
}

#[cfg(test)]
mod tests {
    use super::super::handoff::Looked;
    use super::super::testkit::{statuses, Bench};
    use super::*;
    use crate::report::FileStatus;
    use crossbeam_channel::{bounded, unbounded};
    use std::sync::atomic::AtomicBool;

    /// What one walk stage over `inputs` handed on: the locators sent to extraction, the
    /// removals, the ledger lines.
    struct Walked {
        leaves: Vec<String>,
        removed: Vec<String>,
        lines: Vec<(String, FileStatus)>,
    }

    /// Run a walk stage of `run` over `inputs` on its own thread; `before` sees the leaf
    /// channel before it is drained. The leaves (locator and tags), each looked at as the
    /// extract stage would (so removals may go on), and what went to the index side.
    fn drive(
        run: &Run<'_>,
        inputs: Vec<Input>,
        before: impl FnOnce(&crossbeam_channel::Receiver<Work>),
    ) -> (Vec<(String, Vec<String>)>, Vec<IndexItem>) {
        let (leaf_tx, leaf_rx) = bounded(1);
        let (index_tx, index_rx) = unbounded();
        let stage = WalkStage::new(run);
        let leaves = std::thread::scope(|s| {
            s.spawn(move || stage.run(Box::new(inputs.into_iter()), leaf_tx, index_tx));
            before(&leaf_rx);
            leaf_rx
                .iter()
                .map(|work: Work| {
                    drop(Looked::new(&run.handoff));
                    (work.locator.to_string(), work.tags)
                })
                .collect::<Vec<_>>()
        });
        (leaves, index_rx.try_iter().collect())
    }

    fn walk(b: &Bench, inputs: Vec<Input>) -> Walked {
        let stop = AtomicBool::new(false);
        let (run, events) = b.run(&stop);
        let (leaves, index) = drive(&run, inputs, |_| {});
        let removed = index
            .into_iter()
            .map(|item| match item {
                IndexItem::Removed { locator } => locator,
                _ => panic!("the walk stage sends only removals to the index side"),
            })
            .collect();
        Walked {
            leaves: leaves
                .iter()
                .map(|(l, _)| extractors::file_name_part(l).to_string())
                .collect(),
            removed,
            lines: statuses(&events),
        }
    }

    #[test]
    fn each_file_and_each_archive_member_is_one_leaf_and_the_archive_one_line() {
        let b = Bench::new();
        b.write("a.md", "The tinker mends pots.\n");
        let zip = crate::unpack::zip_of(&[
            ("c.md", b"The cooper hoops barrels.\n"),
            ("sub/d.md", b"The chandler pours candles.\n"),
        ]);
        std::fs::write(b.docs.join("b.zip"), zip).unwrap();
        let mut w = walk(&b, vec![Input::Path(b.docs.clone())]);
        w.leaves.sort();
        assert_eq!(w.leaves, ["a.md", "c.md", "d.md"]);
        assert_eq!(w.lines, [("b.zip".to_string(), FileStatus::Indexed)]);
        assert!(w.removed.is_empty());
    }

    #[test]
    fn an_unchanged_file_is_answered_from_the_catalog_and_a_gone_one_removed() {
        let b = Bench::new();
        b.write("a.md", "The thatcher roofs the barn.\n");
        b.write("b.md", "The wheelwright bends the rim.\n");
        assert_eq!(b.sync().summary.indexed, 2);
        std::fs::remove_file(b.docs.join("b.md")).unwrap();
        let w = walk(&b, vec![Input::Path(b.docs.clone())]);
        assert!(w.leaves.is_empty(), "nothing is read again: {:?}", w.leaves);
        assert_eq!(w.lines, [("a.md".to_string(), FileStatus::Unchanged)]);
        assert_eq!(w.removed, [b.locator("b.md").to_string()]);
    }

    #[test]
    fn a_name_from_elsewhere_is_never_a_path() {
        let b = Bench::new();
        let w = walk(
            &b,
            vec![
                Input::Bytes {
                    name: "../../etc/passwd".into(),
                    bytes: b"root:x:0:0".to_vec(),
                },
                Input::Bytes {
                    name: "notes/plan.md".into(),
                    bytes: b"The plan.\n".to_vec(),
                },
            ],
        );
        assert_eq!(w.leaves, ["plan.md"]);
        assert_eq!(w.lines.len(), 1, "{:?}", w.lines);
        assert_eq!(w.lines[0].1, FileStatus::Failed);
    }

    #[test]
    fn a_halted_run_reads_no_further_and_removes_nothing() {
        let b = Bench::new();
        b.write("gone.md", "The fuller beats the cloth.\n");
        assert_eq!(b.sync().summary.indexed, 1);
        std::fs::remove_file(b.docs.join("gone.md")).unwrap();
        b.write("a.md", "The tinker mends pots.\n");
        b.write("b.md", "The cooper hoops barrels.\n");
        std::fs::create_dir(b.docs.join("c")).unwrap();
        b.write("c/.hidden", "a hidden note\n");
        std::os::unix::fs::symlink(b.docs.join("a.md"), b.docs.join("d.md")).unwrap();
        let stop = AtomicBool::new(false);
        let (run, events) = b.run(&stop);
        let (leaves, index) = drive(&run, vec![Input::Path(b.docs.clone())], |leaf_rx| {
            // The first leaf waits in the channel: the walk is inside the folder. Halt it
            // there; it can at most finish handing on the file it holds.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while leaf_rx.is_empty() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "no leaf came (hang guard)"
                );
                std::thread::yield_now();
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let leaves: Vec<&str> = leaves
            .iter()
            .map(|(l, _)| extractors::file_name_part(l))
            .collect();
        assert!(
            leaves == ["a.md"] || leaves == ["a.md", "b.md"],
            "{leaves:?}"
        );
        // Neither the hidden file nor the link after it was looked at, and the catalogued
        // file the walk did not reach is not taken for gone.
        assert_eq!(statuses(&events), []);
        assert!(index.is_empty());
    }

    #[test]
    fn an_uploads_tags_reach_every_member_read_or_not() {
        let b = Bench::new();
        let inner = crate::unpack::zip_of(&[("b.md", b"The sawyer cuts planks.\n")]);
        let big = "The long text of a member past the size limit. ".repeat(10);
        let upload = crate::unpack::zip_of(&[
            ("a.md", b"The tanner cures hides.\n"),
            ("big.md", big.as_bytes()),
            ("inner.zip", &inner),
        ]);
        let spooled = b.docs.join("spooled");
        std::fs::write(&spooled, upload).unwrap();
        let tags = vec!["batch=7".to_string()];
        let limits = crate::Limits {
            max_file_bytes: 300,
            ..crate::Limits::default()
        };
        let stop = AtomicBool::new(false);
        let (run, events) = b.run(&stop);
        let upload = Input::Upload {
            name: "batch.zip".into(),
            path: spooled,
            limits: Some(limits),
            tags: tags.clone(),
        };
        let (sent, _) = drive(&run, vec![upload], |_| {});
        assert_eq!(
            sent,
            [
                ("batch.zip!/a.md".to_string(), tags.clone()),
                ("batch.zip!/inner.zip!/b.md".to_string(), tags.clone()),
            ]
        );
        // Those the walk records itself: a member past a limit and a nested archive.
        let mut lines = statuses(&events);
        lines.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            lines,
            [
                ("batch.zip".to_string(), FileStatus::Indexed),
                ("big.md".to_string(), FileStatus::Skipped),
                ("inner.zip".to_string(), FileStatus::Indexed),
            ]
        );
        for member in ["batch.zip!/big.md", "batch.zip!/inner.zip"] {
            let entry = run.catalog.get(member).expect(member);
            assert_eq!(entry.tags, tags, "{member}");
        }
    }
}
