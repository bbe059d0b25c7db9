//! Container unpacking: folders, ZIP, TAR, GZ (every member) and TAR.GZ/TGZ, nested, under one
//! [`Budget`] per top-level tree.
//!
//! Nothing is ever written to disk: member names only become locator segments, never paths,
//! and are kept raw (`../x`, `/abs`, bytes that are not UTF-8 are escaped, not dropped). Sizes
//! are counted on bytes actually produced by the decoders, and every container's total output
//! is capped at `max_ratio` times its own size, so lying headers and nested bombs run into a
//! limit. A member that hits a limit is reported as skipped with the limit's name, and its
//! siblings go on. On top of that:
//! - ZIP entries whose bytes overlap an earlier entry's (a non-recursive bomb) are skipped, and
//!   entries with a name seen before in the same archive are reported, never silently dropped
//!   (the central directory is walked entry by entry, so duplicates are not lost in a map);
//! - an archive with the same bytes as one of its ancestors (a quine) is not opened again;
//! - tar header records (GNU long names, PAX headers) are capped before the tar reader
//!   buffers them, and sparse members are refused by their expanded size before reading;
//! - links, devices, FIFOs and encrypted entries are reported as members with the reason;
//! - every member (links, devices, duplicate names, encrypted and overlapping entries
//!   included) is charged to the tree's member limit before anything else is done with it;
//!   the member that would go past the limit ends its container's walk (and its enclosing
//!   containers' walks), whose own line then says `limit: file-count (N members read, the
//!   rest not listed)`. Members already reported stay, and no listing is collected first, so a
//!   small archive of a million headers costs `max_files` lines and no more.
//!
//! Every member yields exactly one [`Leaf`], and every container one more when it is done
//! ([`Leaf::Container`]) or could not be opened as a whole (skipped or failed). A tree thus
//! yields at most `max_files + 1` leaves.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::UNIX_EPOCH;

use std::collections::{BTreeMap, HashSet};
use std::os::unix::ffi::OsStrExt;

use extractors::{
    detect, segment_from_bytes, ContainerKind, Detected, FileKind, Locator, SNIFF_LEN,
};

use crate::config::Limits;

/// Which limit a member ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    TotalBytes,
    FileCount,
    Depth,
    CompressionRatio,
    FileSize,
    TarHeader,
}

impl Limit {
    pub fn name(self) -> &'static str {
        match self {
            Limit::TotalBytes => "total-bytes",
            Limit::FileCount => "file-count",
            Limit::Depth => "depth",
            Limit::CompressionRatio => "compression-ratio",
            Limit::FileSize => "file-size",
            Limit::TarHeader => "tar-header",
        }
    }
}

/// The shared allowance of one top-level tree. Thread-safe so that a future parallel
/// unpacker can share it.
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    bytes: AtomicU64,
    files: AtomicU64,
}

impl Budget {
    pub fn new(limits: Limits) -> Self {
        Budget {
            limits,
            bytes: AtomicU64::new(0),
            files: AtomicU64::new(0),
        }
    }

    fn take_file(&self) -> Result<(), Limit> {
        let n = self.files.fetch_add(1, Ordering::Relaxed) + 1;
        if n > self.limits.max_files {
            return Err(Limit::FileCount);
        }
        Ok(())
    }

    fn take_bytes(&self, n: u64) -> Result<(), Limit> {
        let total = self.bytes.fetch_add(n, Ordering::Relaxed) + n;
        if total > self.limits.max_total_bytes {
            return Err(Limit::TotalBytes);
        }
        Ok(())
    }
}

/// What unpacking found: a file to extract, or a member that was not read and why.
#[derive(Debug)]
pub enum Leaf {
    File {
        locator: Locator,
        bytes: Vec<u8>,
        detected: Detected,
    },
    /// Not read: a limit, a link, a special or encrypted file.
    Skipped { locator: Locator, reason: String },
    /// Could not be read: a corrupt container or member.
    Failed { locator: Locator, reason: String },
    /// A member whose name an earlier member of the same archive already has: reported, not
    /// read (its locator would name the other one).
    Shadowed { locator: Locator, reason: String },
    /// A container whose members were all reported (they come before it).
    Container {
        locator: Locator,
        /// Direct members reported (nested containers count as one each).
        members: u64,
        /// blake3 of the container's bytes.
        hash: String,
    },
}

/// A regular file found on disk by [`walk`].
#[derive(Debug, Clone)]
pub struct DiskFile {
    pub path: PathBuf,
    pub locator: Locator,
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
}

/// What [`walk`] reports for each filesystem entry.
#[derive(Debug)]
pub enum DiskEntry {
    File(DiskFile),
    Skipped {
        locator: Locator,
        reason: String,
    },
    Failed {
        locator: Locator,
        reason: String,
    },
    /// A hidden file or folder left out by [`WalkOptions::include_hidden`].
    Hidden {
        locator: Locator,
    },
}

/// What a walk of a folder leaves out.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Folders (canonical paths) left out with everything in them, without a report: the
    /// index's own data directory, when it lies inside what is ingested.
    pub except: Vec<PathBuf>,
    /// Walk into entries below the root whose name starts with `.`. When false, each is one
    /// [`DiskEntry::Hidden`] and nothing under it is read (`.git`, editor swap files,
    /// `.DS_Store`).
    pub include_hidden: bool,
}

/// Whether a file name is hidden by the Unix convention (starts with `.`).
pub fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.as_bytes().first() == Some(&b'.')
}

/// Why a hidden entry was not ingested.
pub const HIDDEN_REASON: &str = "hidden: a name starting with '.' (--hidden ingests it)";

/// Walk a file or folder without following links, depth-first in name order, calling `visit`
/// for every entry, hidden ones included. Runs in constant memory per directory level.
pub fn walk(root: &Path, visit: &mut dyn FnMut(DiskEntry)) {
    let everything = WalkOptions {
        include_hidden: true,
        ..WalkOptions::default()
    };
    walk_with(root, &everything, visit);
}

/// [`walk`] with what `options` leaves out.
pub fn walk_with(root: &Path, options: &WalkOptions, visit: &mut dyn FnMut(DiskEntry)) {
    let root = match std::fs::canonicalize(root) {
        Ok(p) => p,
        Err(e) => {
            visit(DiskEntry::Failed {
                locator: Locator::root(root.to_string_lossy()),
                reason: format!("cannot open: {e}"),
            });
            return;
        }
    };
    let mut stack = vec![root];
    while let Some(path) = stack.pop() {
        let locator = Locator::root(segment_from_bytes(path.as_os_str().as_bytes()));
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                visit(DiskEntry::Failed {
                    locator,
                    reason: format!("cannot stat: {e}"),
                });
                continue;
            }
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            visit(DiskEntry::Skipped {
                locator,
                reason: "link: not followed".into(),
            });
        } else if ft.is_dir() {
            match std::fs::read_dir(&path) {
                Ok(rd) => {
                    let mut children: Vec<PathBuf> = rd
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| !options.except.contains(p))
                        .collect();
                    children.sort();
                    if !options.include_hidden {
                        children.retain(|child| {
                            let hidden = child.file_name().is_some_and(is_hidden);
                            if hidden {
                                visit(DiskEntry::Hidden {
                                    locator: Locator::root(segment_from_bytes(
                                        child.as_os_str().as_bytes(),
                                    )),
                                });
                            }
                            !hidden
                        });
                    }
                    stack.extend(children.into_iter().rev());
                }
                Err(e) => visit(DiskEntry::Failed {
                    locator,
                    reason: format!("cannot read folder: {e}"),
                }),
            }
        } else if ft.is_file() {
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            visit(DiskEntry::File(DiskFile {
                path,
                locator,
                size: meta.len(),
                mtime_ns,
            }));
        } else {
            visit(DiskEntry::Skipped {
                locator,
                reason: "special file (device, FIFO or socket)".into(),
            });
        }
    }
}

/// Counts what a decoder produces and refuses to go past the container's caps.
/// Bytes it produced are charged to the tree's budget by whoever reads them; the bytes of the
/// read that trips a cap are charged here, so a bomb's inflated bytes all count and its
/// siblings find the budget as spent as it really is.
struct Meter<'b, R> {
    inner: R,
    budget: &'b Budget,
    produced: u64,
    /// Output allowed before the ratio check applies, and the ratio cap past it.
    ratio_cap: u64,
    hard_cap: u64,
    tripped: Option<Limit>,
}

impl<R: Read> Read for Meter<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.produced += n as u64;
        let limit = if self.produced > self.hard_cap {
            Some(Limit::TotalBytes)
        } else if self.produced > self.ratio_cap {
            Some(Limit::CompressionRatio)
        } else {
            None
        };
        if let Some(l) = limit {
            self.tripped = Some(l);
            let _ = self.budget.take_bytes(n as u64);
            return Err(io::Error::other(format!("limit: {}", l.name())));
        }
        Ok(n)
    }
}

/// Unpacks containers into leaves under one budget.
pub struct Unpacker<'a> {
    limits: &'a Limits,
    budget: Budget,
}

enum Source {
    Disk(PathBuf),
    Memory(Vec<u8>),
}

trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

impl Source {
    fn open(&self) -> io::Result<Box<dyn ReadSeek + '_>> {
        Ok(match self {
            Source::Disk(p) => Box::new(BufReader::new(File::open(p)?)),
            Source::Memory(b) => Box::new(Cursor::new(b.as_slice())),
        })
    }

    fn len(&self) -> io::Result<u64> {
        match self {
            Source::Disk(p) => Ok(std::fs::metadata(p)?.len()),
            Source::Memory(b) => Ok(b.len() as u64),
        }
    }

    fn head(&self) -> io::Result<Vec<u8>> {
        read_at_most(self.open()?, SNIFF_LEN as u64)
    }

    /// blake3 of the whole source (streamed for a file on disk).
    fn hash(&self) -> io::Result<blake3::Hash> {
        match self {
            Source::Memory(b) => Ok(blake3::hash(b)),
            Source::Disk(p) => {
                let mut hasher = blake3::Hasher::new();
                hasher.update_reader(File::open(p)?)?;
                Ok(hasher.finalize())
            }
        }
    }
}

/// The archives enclosing the one being opened: (blake3 of its bytes, locator).
type Ancestors = Vec<(blake3::Hash, String)>;

/// Outcome of walking one container: its direct members reported, or why the walk stopped.
type Walked = Result<u64, String>;

impl<'a> Unpacker<'a> {
    /// An unpacker with a fresh budget: use one per top-level file.
    pub fn new(limits: &'a Limits) -> Self {
        Unpacker {
            limits,
            budget: Budget::new(limits.clone()),
        }
    }

    /// Expand the file at `path`: a container yields its leaves (recursively), any other file
    /// yields itself.
    pub fn expand_file(&self, path: &Path, locator: &Locator, sink: &mut dyn FnMut(Leaf)) {
        self.expand(
            Source::Disk(path.to_path_buf()),
            locator,
            &mut Vec::new(),
            sink,
        );
    }

    /// Expand in-memory bytes named by `locator`, as [`Unpacker::expand_file`] does.
    pub fn expand_bytes(&self, bytes: Vec<u8>, locator: &Locator, sink: &mut dyn FnMut(Leaf)) {
        self.expand(Source::Memory(bytes), locator, &mut Vec::new(), sink);
    }

    fn expand(
        &self,
        source: Source,
        locator: &Locator,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) {
        let fail = |sink: &mut dyn FnMut(Leaf), reason: String| {
            sink(Leaf::Failed {
                locator: locator.clone(),
                reason,
            })
        };
        let skip = |sink: &mut dyn FnMut(Leaf), reason: String| {
            sink(Leaf::Skipped {
                locator: locator.clone(),
                reason,
            })
        };
        let head = match source.head() {
            Ok(h) => h,
            Err(e) => return fail(sink, format!("cannot read: {e}")),
        };
        let mut detected = detect(&head, locator.file_name());
        if detected.kind == FileKind::Container(ContainerKind::Zip) {
            if let Some(document) = office_package(&source, self.limits.max_files) {
                detected = document;
            }
        }
        let FileKind::Container(kind) = detected.kind else {
            return self.leaf(source, locator, detected, sink);
        };
        if locator.depth() >= self.limits.max_depth {
            return skip(sink, format!("limit: {}", Limit::Depth.name()));
        }
        let hash = match source.hash() {
            Ok(h) => h,
            Err(e) => return fail(sink, format!("cannot read: {e}")),
        };
        if let Some((_, ancestor)) = ancestors.iter().find(|(h, _)| *h == hash) {
            return skip(
                sink,
                format!("recursive archive: same bytes as {ancestor}, not opened again"),
            );
        }
        ancestors.push((hash, locator.to_string()));
        let walked = match kind {
            ContainerKind::Zip => self.zip(&source, locator, ancestors, sink),
            ContainerKind::Tar => source
                .open()
                .map_err(|e| e.to_string())
                .and_then(|r| self.tar(r, locator, ancestors, sink)),
            ContainerKind::Gzip => self.gzip(&source, locator, ancestors, sink),
        };
        ancestors.pop();
        match walked {
            Ok(members) => sink(Leaf::Container {
                locator: locator.clone(),
                members,
                hash: hash.to_hex().to_string(),
            }),
            // A limit tripped while walking the container's own stream: the rest of it is
            // skipped, under that limit's name.
            Err(reason) => match reason.find("limit: ") {
                Some(at) => skip(sink, reason.get(at..).unwrap_or(&reason).to_string()),
                None => fail(sink, reason),
            },
        }
    }

    fn leaf(
        &self,
        source: Source,
        locator: &Locator,
        detected: Detected,
        sink: &mut dyn FnMut(Leaf),
    ) {
        let bytes = match source {
            Source::Memory(b) => b,
            Source::Disk(p) => {
                match std::fs::metadata(&p) {
                    Ok(m) if m.len() > self.limits.max_file_bytes => {
                        return sink(Leaf::Skipped {
                            locator: locator.clone(),
                            reason: format!("limit: {}", Limit::FileSize.name()),
                        })
                    }
                    _ => {}
                }
                match File::open(&p).and_then(|f| read_at_most(f, self.limits.max_file_bytes + 1)) {
                    Ok(buf) => buf,
                    Err(e) => {
                        return sink(Leaf::Failed {
                            locator: locator.clone(),
                            reason: format!("cannot read: {e}"),
                        })
                    }
                }
            }
        };
        if bytes.len() as u64 > self.limits.max_file_bytes {
            return sink(Leaf::Skipped {
                locator: locator.clone(),
                reason: format!("limit: {}", Limit::FileSize.name()),
            });
        }
        sink(Leaf::File {
            locator: locator.clone(),
            bytes,
            detected,
        });
    }

    /// A meter over `inner` for a container of `container_len` bytes.
    fn meter<R: Read>(&self, inner: R, container_len: u64) -> Meter<'_, R> {
        let remaining = self
            .limits
            .max_total_bytes
            .saturating_sub(self.budget.bytes.load(Ordering::Relaxed));
        Meter {
            inner,
            budget: &self.budget,
            produced: 0,
            ratio_cap: container_len
                .saturating_mul(self.limits.max_ratio)
                .max(self.limits.ratio_grace_bytes),
            hard_cap: remaining,
            tripped: None,
        }
    }

    /// Charge one member to the tree's member limit, before anything else is done with it.
    /// `Err` (the limit's reason, naming the `listed` members of this container) ends the
    /// container's walk: past the limit no member gets a line, so a ledger never grows past
    /// it however many headers a small archive holds.
    fn take_member(&self, listed: u64) -> Result<(), String> {
        self.budget.take_file().map_err(|l| {
            format!(
                "limit: {} ({listed} members read, the rest not listed)",
                l.name()
            )
        })?;
        crate::failpoint::hit("unpack.member");
        Ok(())
    }

    /// Read one member's bytes (already charged by [`Unpacker::take_member`]) through
    /// `reader`, charging the budget; `Err` names the limit.
    fn read_member(&self, reader: &mut dyn Read) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.to_string()),
            };
            self.budget
                .take_bytes(n as u64)
                .map_err(|l| format!("limit: {}", l.name()))?;
            if out.len() as u64 + n as u64 > self.limits.max_file_bytes {
                return Err(format!("limit: {}", Limit::FileSize.name()));
            }
            out.extend_from_slice(buf.get(..n).unwrap_or(&[]));
        }
        Ok(out)
    }

    /// Report a member read result: recurse into its bytes, or skip/fail it.
    fn member_done(
        &self,
        locator: Locator,
        read: Result<Vec<u8>, String>,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) {
        match read {
            Ok(bytes) => self.expand(Source::Memory(bytes), &locator, ancestors, sink),
            Err(reason) if reason.starts_with("limit: ") => sink(Leaf::Skipped { locator, reason }),
            Err(reason) => sink(Leaf::Failed { locator, reason }),
        }
    }

    fn zip(
        &self,
        source: &Source,
        locator: &Locator,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) -> Walked {
        let len = source.len().map_err(|e| e.to_string())?;
        let reader = source.open().map_err(|e| e.to_string())?;
        let mut archive =
            zip::unstable::read::ZipIterable::try_new(reader, zip::read::Config::default())
                .map_err(|e| format!("corrupt zip: {e}"))?;
        let mut body = source.open().map_err(|e| e.to_string())?;
        let entries = archive.files().map_err(|e| format!("corrupt zip: {e}"))?;
        // One meter for the whole archive: lying sizes still add up.
        let mut produced_total = 0u64;
        let mut members = 0u64;
        let mut names: HashSet<String> = HashSet::new();
        // Byte ranges (local header to end of data) of the entries read so far, by start.
        let mut ranges: BTreeMap<u64, (u64, String)> = BTreeMap::new();
        for (i, entry) in entries.enumerate() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    // The central directory cannot be walked further.
                    return Err(format!("corrupt zip: entry {i}: {e}"));
                }
            };
            if entry.is_dir() {
                continue;
            }
            self.take_member(members)?;
            members += 1;
            let utf8_flag = entry.flags().as_u16() & 0x0800 != 0;
            let raw = entry.name_raw();
            let name = if utf8_flag || std::str::from_utf8(raw).is_ok() {
                segment_from_bytes(raw)
            } else {
                // No UTF-8 flag: the name is CP437, as the format says.
                entry
                    .name()
                    .map_or_else(|_| segment_from_bytes(raw), |n| n.into_owned())
            };
            let name = unnamed_as_ordinal(name, members);
            let member = locator.member(name.clone());
            let skipped = |reason: String| Leaf::Skipped {
                locator: member.clone(),
                reason,
            };
            if !names.insert(name.clone()) {
                sink(Leaf::Shadowed {
                    locator: member,
                    reason: format!(
                        "duplicate name: entry {} has the same name as an earlier entry",
                        i + 1
                    ),
                });
                continue;
            }
            if entry.is_symlink() {
                sink(skipped("link: not followed".into()));
                continue;
            }
            if entry.encrypted() {
                sink(skipped("encrypted".into()));
                continue;
            }
            let header_start = entry.header_start();
            let compressed = entry.compressed_size();
            let read = match entry.with_reader(&mut body, zip::read::ZipReadOptions::new()) {
                Ok(file) => {
                    let end = file
                        .data_start()
                        .unwrap_or(header_start)
                        .saturating_add(compressed);
                    if let Some(owner) = overlap(&ranges, header_start, end) {
                        sink(skipped(format!(
                            "overlapping entry: shares bytes with {owner} (zip bomb)"
                        )));
                        continue;
                    }
                    ranges.insert(header_start, (end, name.clone()));
                    let mut meter = self.meter(file, len);
                    meter.produced = produced_total;
                    meter.hard_cap = meter.hard_cap.saturating_add(produced_total);
                    let r = self.read_member(&mut meter);
                    produced_total = meter.produced;
                    r
                }
                Err(e) => Err(format!("corrupt zip entry: {e}")),
            };
            self.member_done(member, read, ancestors, sink);
        }
        Ok(members)
    }

    fn tar(
        &self,
        reader: impl Read,
        locator: &Locator,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) -> Walked {
        let guarded = TarGuard::new(reader, MAX_TAR_RECORD);
        let mut archive = tar::Archive::new(guarded);
        let entries = archive.entries().map_err(|e| format!("corrupt tar: {e}"))?;
        let mut members = 0u64;
        let mut names: HashSet<String> = HashSet::new();
        for entry in entries {
            let mut entry = entry.map_err(|e| format!("corrupt tar: {e}"))?;
            let kind = entry.header().entry_type();
            use tar::EntryType as T;
            if matches!(
                kind,
                T::Directory | T::XGlobalHeader | T::XHeader | T::GNULongName | T::GNULongLink
            ) {
                continue;
            }
            self.take_member(members)?;
            members += 1;
            let name = segment_from_bytes(&entry.path_bytes());
            let name = name.strip_prefix("./").map(str::to_string).unwrap_or(name);
            let name = unnamed_as_ordinal(name, members);
            let member = locator.member(name.clone());
            let skipped = |reason: String| Leaf::Skipped {
                locator: member.clone(),
                reason,
            };
            if !names.insert(name) {
                sink(Leaf::Shadowed {
                    locator: member,
                    reason: "duplicate name: an earlier member has the same name".into(),
                });
                continue;
            }
            match kind {
                T::Symlink | T::Link => {
                    sink(skipped("link: not followed".into()));
                    continue;
                }
                T::Char | T::Block | T::Fifo => {
                    sink(skipped("special file (device or FIFO)".into()));
                    continue;
                }
                _ => {}
            }
            // Declared sizes can only be trusted to refuse: a sparse member's expanded size
            // says what reading it would produce.
            if entry.header().size().unwrap_or(0) > self.limits.max_file_bytes {
                sink(skipped(format!("limit: {}", Limit::FileSize.name())));
                continue;
            }
            let read = self.read_member(&mut entry);
            let corrupt = matches!(&read, Err(r) if !r.starts_with("limit: "));
            self.member_done(member, read, ancestors, sink);
            if corrupt {
                // The stream position is unknown after a failed read: stop this tar.
                return Err("corrupt tar: truncated member".into());
            }
        }
        Ok(members)
    }

    fn gzip(
        &self,
        source: &Source,
        locator: &Locator,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) -> Walked {
        let len = source.len().map_err(|e| e.to_string())?;
        let reader = source.open().map_err(|e| e.to_string())?;
        let decoder = flate2::read::MultiGzDecoder::new(reader);
        let inner_name = decoder
            .header()
            .and_then(|h| h.filename())
            .map(segment_from_bytes);
        let mut meter = self.meter(decoder, len);
        let head = read_at_most(&mut meter, SNIFF_LEN as u64).map_err(|e| match meter.tripped {
            Some(l) => format!("limit: {}", l.name()),
            None => format!("corrupt gzip: {e}"),
        })?;
        let is_tar = matches!(
            detect(&head, "").kind,
            FileKind::Container(ContainerKind::Tar)
        );
        let stream = Cursor::new(head).chain(meter);
        if is_tar {
            // A .tar.gz is one container: its members sit directly under the .gz segment.
            return self.tar(stream, locator, ancestors, sink);
        }
        let name = inner_name
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| gunzipped_name(locator.file_name()));
        let member = locator.member(name);
        self.take_member(0)?;
        let mut stream = stream;
        let read = self.read_member(&mut stream);
        self.member_done(member, read, ancestors, sink);
        Ok(1)
    }
}

/// A member with an empty name is named by its position (`#3`): a locator segment cannot be
/// empty. Should a real member carry that name too, the later one is reported as a duplicate.
fn unnamed_as_ordinal(name: String, position: u64) -> String {
    if name.is_empty() {
        format!("#{position}")
    } else {
        name
    }
}

/// The name of an earlier entry whose byte range overlaps `start..end`, if any.
fn overlap(ranges: &BTreeMap<u64, (u64, String)>, start: u64, end: u64) -> Option<String> {
    let before = ranges
        .range(..=start)
        .next_back()
        .filter(|(_, (e, _))| *e > start);
    let after = ranges
        .range(start..)
        .find(|(s, _)| **s < end)
        .filter(|(s, _)| **s >= start);
    before.or(after).map(|(_, (_, name))| name.clone())
}

/// Largest tar header record (GNU long name or link, PAX extended header) read.
const MAX_TAR_RECORD: u64 = 1024 * 1024;

/// Follows a tar stream's 512-byte blocks as the tar reader consumes them and refuses header
/// records larger than a cap (the tar crate buffers a GNU long name whole, so a small .tgz can
/// make it allocate hundreds of MiB). When the stream stops looking like tar (a header with a
/// bad checksum), the guard steps aside and the tar reader reports the corruption.
struct TarGuard<R> {
    inner: R,
    cap: u64,
    header: [u8; 512],
    filled: usize,
    /// Bytes of data (or extension headers) still to pass before the next header.
    skip: u64,
    /// Sparse extension headers expected before the data.
    ext_headers: bool,
    pending_data: u64,
    synced: bool,
}

impl<R: Read> TarGuard<R> {
    fn new(inner: R, cap: u64) -> Self {
        TarGuard {
            inner,
            cap,
            header: [0; 512],
            filled: 0,
            skip: 0,
            ext_headers: false,
            pending_data: 0,
            synced: true,
        }
    }

    /// A full 512-byte block arrived where a header or extension header was expected.
    fn block(&mut self) -> io::Result<()> {
        let h = &self.header;
        if self.ext_headers {
            // GNU sparse extension header: another one follows while byte 504 is set.
            self.ext_headers = h.get(504).is_some_and(|b| *b != 0);
            if !self.ext_headers {
                self.skip = self.pending_data;
            }
            return Ok(());
        }
        if h.iter().all(|b| *b == 0) {
            return Ok(()); // end-of-archive padding
        }
        if !extractors::tar_checksum_ok(h) {
            self.synced = false;
            return Ok(());
        }
        let size = tar_size(h.get(124..136).unwrap_or(&[]));
        let typeflag = h.get(156).copied().unwrap_or(0);
        if matches!(typeflag, b'L' | b'K' | b'x' | b'g') && size > self.cap {
            return Err(io::Error::other(format!(
                "limit: {} (a {size}-byte {} record; limit {})",
                Limit::TarHeader.name(),
                match typeflag {
                    b'L' => "GNU long name",
                    b'K' => "GNU long link",
                    _ => "PAX header",
                },
                self.cap
            )));
        }
        let padded = size.div_ceil(512).saturating_mul(512);
        if typeflag == b'S' && h.get(482).is_some_and(|b| *b != 0) {
            self.ext_headers = true;
            self.pending_data = padded;
        } else {
            self.skip = padded;
        }
        Ok(())
    }
}

impl<R: Read> Read for TarGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut data = buf.get(..n).unwrap_or(&[]);
        while self.synced && !data.is_empty() {
            if self.skip > 0 {
                let take = usize::try_from(self.skip)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                self.skip -= take as u64;
                data = data.get(take..).unwrap_or(&[]);
                continue;
            }
            let take = (512 - self.filled).min(data.len());
            if let (Some(dst), Some(src)) = (
                self.header.get_mut(self.filled..self.filled + take),
                data.get(..take),
            ) {
                dst.copy_from_slice(src);
            }
            self.filled += take;
            data = data.get(take..).unwrap_or(&[]);
            if self.filled == 512 {
                self.filled = 0;
                self.block()?;
            }
        }
        Ok(n)
    }
}

/// A tar size field: octal digits, or GNU base-256 when the high bit of the first byte is set.
fn tar_size(field: &[u8]) -> u64 {
    match field.first() {
        Some(b) if b & 0x80 != 0 => field.iter().skip(1).fold(u64::from(b & 0x7f), |acc, x| {
            acc.saturating_mul(256).saturating_add(u64::from(*x))
        }),
        _ => field
            .iter()
            .skip_while(|b| **b == b' ')
            .take_while(|b| (b'0'..=b'7').contains(*b))
            .fold(0u64, |acc, d| {
                acc.saturating_mul(8).saturating_add(u64::from(d - b'0'))
            }),
    }
}

/// An OOXML/ODF document that the first bytes did not reveal (its parts come in another
/// order than Office's), told by the central directory's part names or the `mimetype` member.
/// Looks at the first `max_parts` entries only, one at a time: the listing of a zip holding
/// a million names is never collected.
fn office_package(source: &Source, max_parts: u64) -> Option<Detected> {
    let mut archive = zip::unstable::read::ZipIterable::try_new(
        source.open().ok()?,
        zip::read::Config::default(),
    )
    .ok()?;
    let mut body = source.open().ok()?;
    let mut names: Vec<String> = Vec::new();
    let mut mimetype: Option<String> = None;
    let cap = usize::try_from(max_parts).unwrap_or(usize::MAX);
    for entry in archive.files().ok()?.take(cap) {
        let Ok(entry) = entry else { break };
        let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
        if mimetype.is_none() && name == "mimetype" {
            mimetype = entry
                .with_reader(&mut body, zip::read::ZipReadOptions::new())
                .ok()
                .and_then(|m| read_at_most(m, 256).ok())
                .map(|m| String::from_utf8_lossy(&m).into_owned());
        }
        names.push(name);
    }
    extractors::package_kind(names.iter().map(String::as_str), mimetype.as_deref())
}

/// Read at most `limit` bytes of `reader`.
#[allow(clippy::disallowed_methods)] // bounded by `take`
fn read_at_most(reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    reader.take(limit).read_to_end(&mut out)?;
    Ok(out)
}

/// `notes.txt.gz` → `notes.txt`, `a.tgz` → `a.tar`, anything else → `name` without `.gz`.
fn gunzipped_name(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".tgz") {
        format!("{}.tar", name.get(..name.len() - 4).unwrap_or(name))
    } else if lower.ends_with(".gz") && name.len() > 3 {
        name.get(..name.len() - 3).unwrap_or(name).to_string()
    } else {
        format!("{name}.out")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data) in entries {
            w.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn tar_gz_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        let tar = b.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    fn collect(limits: &Limits, name: &str, bytes: Vec<u8>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        Unpacker::new(limits).expand_bytes(bytes, &Locator::root(name), &mut |leaf| {
            out.push(match leaf {
                Leaf::File { locator, bytes, .. } => (
                    locator.to_string(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                ),
                Leaf::Skipped { locator, reason } => {
                    (locator.to_string(), format!("skipped: {reason}"))
                }
                Leaf::Failed { locator, reason } => {
                    (locator.to_string(), format!("failed: {reason}"))
                }
                Leaf::Shadowed { locator, reason } => {
                    (locator.to_string(), format!("shadowed: {reason}"))
                }
                Leaf::Container {
                    locator, members, ..
                } => (locator.to_string(), format!("archive: {members}")),
            })
        });
        out
    }

    #[test]
    fn nested_zip_tar_gz_members_get_full_locators() {
        let inner = tar_gz_of(&[("notes/a.txt", b"alpha"), ("b.md", b"# beta")]);
        let outer = zip_of(&[("docs/inner.tar.gz", &inner), ("top.txt", b"top")]);
        let got = collect(&Limits::default(), "outer.zip", outer);
        assert_eq!(
            got,
            vec![
                (
                    "outer.zip!/docs/inner.tar.gz!/notes/a.txt".into(),
                    "alpha".into()
                ),
                ("outer.zip!/docs/inner.tar.gz!/b.md".into(), "# beta".into()),
                ("outer.zip!/docs/inner.tar.gz".into(), "archive: 2".into()),
                ("outer.zip!/top.txt".into(), "top".into()),
                ("outer.zip".into(), "archive: 2".into()),
            ]
        );
    }

    #[test]
    fn every_gzip_member_is_read() {
        let mut data = Vec::new();
        for part in [&b"first "[..], b"second"] {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(part).unwrap();
            data.extend(gz.finish().unwrap());
        }
        let got = collect(&Limits::default(), "two.txt.gz", data);
        assert_eq!(
            got,
            vec![
                ("two.txt.gz!/two.txt".into(), "first second".into()),
                ("two.txt.gz".into(), "archive: 1".into())
            ]
        );
    }

    #[test]
    fn limits_skip_members_and_keep_siblings() {
        let limits = Limits {
            max_files: 2,
            ..Limits::default()
        };
        let z = zip_of(&[("a.txt", b"a"), ("b.txt", b"b"), ("c.txt", b"c")]);
        let got = collect(&limits, "z.zip", z);
        assert_eq!(
            got,
            vec![
                ("z.zip!/a.txt".into(), "a".into()),
                ("z.zip!/b.txt".into(), "b".into()),
                (
                    "z.zip".into(),
                    "skipped: limit: file-count (2 members read, the rest not listed)".into()
                ),
            ]
        );

        let limits = Limits {
            max_ratio: 2,
            ratio_grace_bytes: 1024,
            ..Limits::default()
        };
        let zeros = vec![0u8; 1 << 20];
        let z = zip_of(&[("small.txt", b"fine"), ("bomb.bin", &zeros)]);
        let got = collect(&limits, "z.zip", z);
        assert_eq!(got[0].1, "fine");
        assert_eq!(
            got[1],
            (
                "z.zip!/bomb.bin".into(),
                "skipped: limit: compression-ratio".into()
            )
        );
    }

    /// A zip laid out by hand: stored entries, each with its own local header unless `at`
    /// points its central entry at an earlier entry's header (an overlap).
    struct RawEntry<'a> {
        name: &'a str,
        data: &'a [u8],
        flags: u16,
        unix_mode: Option<u32>,
        at: Option<usize>,
    }

    fn raw(name: &'static str, data: &'static [u8]) -> RawEntry<'static> {
        RawEntry {
            name,
            data,
            flags: 0,
            unix_mode: None,
            at: None,
        }
    }

    fn crc(data: &[u8]) -> u32 {
        let mut c = flate2::Crc::new();
        c.update(data);
        c.sum()
    }

    fn raw_zip(entries: &[RawEntry<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut offsets = Vec::new();
        for e in entries {
            offsets.push(out.len() as u32);
            if e.at.is_some() {
                continue;
            }
            out.extend(0x0403_4b50u32.to_le_bytes());
            out.extend(20u16.to_le_bytes());
            out.extend(e.flags.to_le_bytes());
            out.extend([0u8; 6]); // stored, time, date
            out.extend(crc(e.data).to_le_bytes());
            out.extend((e.data.len() as u32).to_le_bytes());
            out.extend((e.data.len() as u32).to_le_bytes());
            out.extend((e.name.len() as u16).to_le_bytes());
            out.extend(0u16.to_le_bytes());
            out.extend(e.name.as_bytes());
            out.extend(e.data);
        }
        let cd_start = out.len() as u32;
        for (i, e) in entries.iter().enumerate() {
            let (data, offset) = match e.at {
                Some(j) => (entries[j].data, offsets[j]),
                None => (e.data, offsets[i]),
            };
            out.extend(0x0201_4b50u32.to_le_bytes());
            let made_by: u16 = if e.unix_mode.is_some() {
                3 << 8 | 20
            } else {
                20
            };
            out.extend(made_by.to_le_bytes());
            out.extend(20u16.to_le_bytes());
            out.extend(e.flags.to_le_bytes());
            out.extend([0u8; 6]);
            out.extend(crc(data).to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((e.name.len() as u16).to_le_bytes());
            out.extend([0u8; 8]); // extra, comment, disk, internal attributes
            out.extend((e.unix_mode.unwrap_or(0) << 16).to_le_bytes());
            out.extend(offset.to_le_bytes());
            out.extend(e.name.as_bytes());
        }
        let cd_size = out.len() as u32 - cd_start;
        out.extend(0x0605_4b50u32.to_le_bytes());
        out.extend([0u8; 4]);
        out.extend((entries.len() as u16).to_le_bytes());
        out.extend((entries.len() as u16).to_le_bytes());
        out.extend(cd_size.to_le_bytes());
        out.extend(cd_start.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out
    }

    #[test]
    fn links_encrypted_duplicate_and_overlapping_zip_entries_count_as_members() {
        let entries = [
            raw("a.txt", b"alpha"),
            RawEntry {
                unix_mode: Some(0o120_777),
                ..raw("link", b"/etc/passwd")
            },
            RawEntry {
                flags: 1,
                ..raw("sealed.txt", b"not really encrypted")
            },
            raw("a.txt", b"second a"),
            RawEntry {
                at: Some(0),
                ..raw("copy.txt", b"")
            },
            raw("late.txt", b"late"),
        ];
        let z = raw_zip(&entries);
        let listed = |limits: &Limits| collect(limits, "z.zip", z.clone());
        let first_five: Vec<(String, String)> = vec![
            ("z.zip!/a.txt".into(), "alpha".into()),
            ("z.zip!/link".into(), "skipped: link: not followed".into()),
            ("z.zip!/sealed.txt".into(), "skipped: encrypted".into()),
            (
                "z.zip!/a.txt".into(),
                "shadowed: duplicate name: entry 4 has the same name as an earlier entry".into(),
            ),
            (
                "z.zip!/copy.txt".into(),
                "skipped: overlapping entry: shares bytes with a.txt (zip bomb)".into(),
            ),
        ];
        let mut all = first_five.clone();
        all.push(("z.zip!/late.txt".into(), "late".into()));
        all.push(("z.zip".into(), "archive: 6".into()));
        assert_eq!(listed(&Limits::default()), all);
        let five = Limits {
            max_files: 5,
            ..Limits::default()
        };
        let mut capped = first_five;
        capped.push((
            "z.zip".into(),
            "skipped: limit: file-count (5 members read, the rest not listed)".into(),
        ));
        assert_eq!(listed(&five), capped);
    }

    #[test]
    fn links_devices_and_duplicate_tar_members_count_as_members() {
        let mut b = tar::Builder::new(Vec::new());
        let file = |b: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]| {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_cksum();
            b.append_data(&mut h, name, data).unwrap();
        };
        file(&mut b, "a.txt", b"alpha");
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        b.append_link(&mut h, "sym", "/etc/passwd").unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Link);
        h.set_size(0);
        b.append_link(&mut h, "hard", "a.txt").unwrap();
        for (name, kind) in [
            ("null", tar::EntryType::Char),
            ("loop0", tar::EntryType::Block),
            ("pipe", tar::EntryType::Fifo),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_size(0);
            h.set_cksum();
            b.append_data(&mut h, name, &b""[..]).unwrap();
        }
        file(&mut b, "a.txt", b"second a");
        file(&mut b, "late.txt", b"late");
        let t = b.into_inner().unwrap();
        let special = "skipped: special file (device or FIFO)";
        let mut want: Vec<(String, String)> = vec![
            ("t.tar!/a.txt".into(), "alpha".into()),
            ("t.tar!/sym".into(), "skipped: link: not followed".into()),
            ("t.tar!/hard".into(), "skipped: link: not followed".into()),
            ("t.tar!/null".into(), special.into()),
            ("t.tar!/loop0".into(), special.into()),
            ("t.tar!/pipe".into(), special.into()),
            (
                "t.tar!/a.txt".into(),
                "shadowed: duplicate name: an earlier member has the same name".into(),
            ),
        ];
        let seven = Limits {
            max_files: 7,
            ..Limits::default()
        };
        let mut all = want.clone();
        all.push(("t.tar!/late.txt".into(), "late".into()));
        all.push(("t.tar".into(), "archive: 8".into()));
        assert_eq!(collect(&Limits::default(), "t.tar", t.clone()), all);
        want.push((
            "t.tar".into(),
            "skipped: limit: file-count (7 members read, the rest not listed)".into(),
        ));
        assert_eq!(collect(&seven, "t.tar", t), want);
    }

    fn symlink_flood_tar(links: usize, last: (&str, &[u8])) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for i in 0..links {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            b.append_link(&mut h, format!("l{i}"), "/etc/passwd")
                .unwrap();
        }
        let mut h = tar::Header::new_gnu();
        h.set_size(last.1.len() as u64);
        h.set_cksum();
        b.append_data(&mut h, last.0, last.1).unwrap();
        b.into_inner().unwrap()
    }

    #[test]
    fn a_tar_of_many_more_headers_than_the_limit_yields_at_most_limit_plus_one_leaves() {
        let limits = Limits {
            max_files: 100,
            ..Limits::default()
        };
        let tar = symlink_flood_tar(5_000, ("late.txt", b"late"));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).unwrap();
        let got = collect(&limits, "flood.tar.gz", gz.finish().unwrap());
        assert_eq!(got.len(), 101, "{:?}", got.get(..3));
        assert_eq!(got[99].0, "flood.tar.gz!/l99");
        assert_eq!(
            got[100],
            (
                "flood.tar.gz".into(),
                "skipped: limit: file-count (100 members read, the rest not listed)".into()
            )
        );

        // Nested: the inner tar uses up the tree's allowance; the outer zip stops at its
        // next member, and each says how far it got.
        let inner = symlink_flood_tar(5_000, ("inner-late.txt", b"inner late"));
        let outer = zip_of(&[
            ("first.txt", b"first"),
            ("inner.tar", &inner),
            ("after.txt", b"after"),
        ]);
        let got = collect(&limits, "o.zip", outer);
        assert_eq!(got.len(), 101, "{:?}", &got[95..]);
        assert_eq!(
            got[99],
            (
                "o.zip!/inner.tar".into(),
                "skipped: limit: file-count (98 members read, the rest not listed)".into()
            )
        );
        assert_eq!(
            got[100],
            (
                "o.zip".into(),
                "skipped: limit: file-count (2 members read, the rest not listed)".into()
            )
        );
    }

    #[test]
    fn a_zip_of_sixty_thousand_members_stops_listing_at_the_limit() {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for i in 0..60_000 {
            w.start_file(format!("m{i}.txt"), stored).unwrap();
            w.write_all(format!("{i}").as_bytes()).unwrap();
        }
        let z = w.finish().unwrap().into_inner();
        let limits = Limits::default();
        let mut leaves = 0u64;
        let mut last = None;
        Unpacker::new(&limits).expand_bytes(z, &Locator::root("big.zip"), &mut |leaf| {
            leaves += 1;
            last = Some(leaf);
        });
        assert_eq!(leaves, limits.max_files + 1);
        match last {
            Some(Leaf::Skipped { locator, reason }) => {
                assert_eq!(locator.to_string(), "big.zip");
                assert_eq!(
                    reason,
                    "limit: file-count (10000 members read, the rest not listed)"
                );
            }
            other => panic!("last leaf: {other:?}"),
        }
    }

    #[test]
    fn depth_limit_applies_to_nested_archives() {
        let limits = Limits {
            max_depth: 1,
            ..Limits::default()
        };
        let inner = zip_of(&[("deep.txt", b"deep")]);
        let outer = zip_of(&[("inner.zip", &inner), ("ok.txt", b"ok")]);
        let got = collect(&limits, "o.zip", outer);
        assert_eq!(
            got[0],
            ("o.zip!/inner.zip".into(), "skipped: limit: depth".into())
        );
        assert_eq!(got[1].1, "ok");
    }

    #[test]
    fn links_and_devices_are_reported_not_followed() {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        b.append_link(&mut h, "link.txt", "/etc/passwd").unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Fifo);
        h.set_size(0);
        h.set_cksum();
        b.append_data(&mut h, "pipe", &b""[..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_cksum();
        b.append_data(&mut h, "ok.txt", &b"ok"[..]).unwrap();
        let got = collect(&Limits::default(), "t.tar", b.into_inner().unwrap());
        assert_eq!(
            got,
            vec![
                (
                    "t.tar!/link.txt".into(),
                    "skipped: link: not followed".into()
                ),
                (
                    "t.tar!/pipe".into(),
                    "skipped: special file (device or FIFO)".into()
                ),
                ("t.tar!/ok.txt".into(), "ok".into()),
                ("t.tar".into(), "archive: 3".into()),
            ]
        );
    }

    #[test]
    fn a_member_without_a_name_is_named_by_its_position() {
        // Found by the `unpack` fuzz target: an empty name made an unparsable locator.
        let z = zip_of(&[("", b"anonymous"), ("b.txt", b"named")]);
        let got = collect(&Limits::default(), "z.zip", z);
        assert_eq!(got[0], ("z.zip!/%231".into(), "anonymous".into()));
        for (loc, _) in &got {
            assert_eq!(loc.parse::<Locator>().unwrap().to_string(), *loc);
        }
    }

    #[test]
    fn garbage_containers_fail_cleanly() {
        let got = collect(&Limits::default(), "bad.zip", b"PK\x03\x04garbage".to_vec());
        assert_eq!(got.len(), 1);
        assert!(got[0].1.starts_with("failed: corrupt zip"), "{got:?}");
        let got = collect(
            &Limits::default(),
            "bad.gz",
            vec![0x1f, 0x8b, 8, 0, 1, 2, 3],
        );
        assert!(got[0].1.starts_with("failed:"), "{got:?}");
    }

    #[test]
    fn hidden_entries_are_one_skipped_line_unless_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for (rel, text) in [
            (".git/objects/ab/cdef", "blob"),
            (".git/config", "[core]"),
            ("a.txt", "a"),
            ("sub/.DS_Store", "x"),
            ("sub/b.txt", "b"),
        ] {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let names = |options: &WalkOptions| {
            let mut got = Vec::new();
            walk_with(&root, options, &mut |e| {
                let (loc, what) = match e {
                    DiskEntry::File(f) => (f.locator, "file".to_string()),
                    DiskEntry::Skipped { locator, reason } => (locator, reason),
                    DiskEntry::Failed { locator, reason } => (locator, reason),
                    DiskEntry::Hidden { locator } => (locator, HIDDEN_REASON.to_string()),
                };
                let rel = loc.to_string();
                let rel = rel.strip_prefix(&format!("{}/", root.display())).unwrap();
                got.push(format!("{rel}: {what}"));
            });
            got
        };
        assert_eq!(
            names(&WalkOptions::default()),
            [
                format!(".git: {HIDDEN_REASON}"),
                "a.txt: file".into(),
                format!("sub/.DS_Store: {HIDDEN_REASON}"),
                "sub/b.txt: file".into(),
            ]
        );
        let all = WalkOptions {
            include_hidden: true,
            ..WalkOptions::default()
        };
        assert_eq!(names(&all).len(), 5);
        // A hidden folder given as the root is walked; only what is below it is judged.
        let mut files = 0;
        walk_with(&root.join(".git"), &WalkOptions::default(), &mut |e| {
            files += usize::from(matches!(e, DiskEntry::File(_)));
        });
        assert_eq!(files, 2);
    }
}
