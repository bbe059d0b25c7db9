//! Container unpacking: folders, ZIP, TAR, GZ (every member) and TAR.GZ/TGZ, e-mail (a message
//! with its attachments, a mailbox of messages, an Outlook message), nested, under one
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
//!
//! The files: this one holds the budget ([`Budget`], [`Limit`], the decoders' meter), what a
//! walk yields ([`Leaf`]) and the [`Unpacker`]'s dispatch (detect, recurse, read a member under
//! the budget); `disk.rs` walks folders, `zip.rs`, `tar.rs` (with its header-record guard),
//! `gzip.rs`, `mail.rs` (MIME messages and mailboxes) and `msg.rs` (Outlook) each walk one
//! container format.

// Internal: reachable from outside only through the hidden `testing` module.
#![allow(missing_docs)]

// The base layer, under the name the modules here have always used.
pub(crate) use ingest_base::failpoint;

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use extractors::{detect, ContainerKind, Detected, FileKind, Locator, SNIFF_LEN};

mod disk;
mod exclude;
mod gzip;
mod limits;
mod mail;
mod msg;
mod tar;
mod zip;

use self::zip::office_package;
pub use disk::{is_hidden, mtime_ns, DiskEntry, DiskFile, DiskWalk, WalkOptions};
pub use exclude::{Exclusions, MAX_GLOBS};
pub use limits::Limits;
pub use mail::mailbox_member_name;

/// Which limit a member ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    TotalBytes,
    FileCount,
    Depth,
    CompressionRatio,
    FileSize,
    TarHeader,
    NameLength,
    PathDepth,
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
            Limit::NameLength => "name-length",
            Limit::PathDepth => "path-depth",
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
        /// What a message's headers say (from, to, subject, date…), or a mailbox's count;
        /// `None` for an archive.
        about: Option<String>,
    },
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
        if detected.mime == "application/x-ole-storage" && msg::is_outlook_message(&source) {
            detected = Detected {
                kind: FileKind::Container(ContainerKind::Msg),
                mime: "application/vnd.ms-outlook".into(),
            };
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
        let archive = |walked: Walked| walked.map(|members| (members, None));
        let walked = match kind {
            ContainerKind::Zip => archive(self.zip(&source, locator, ancestors, sink)),
            ContainerKind::Tar => archive(
                source
                    .open()
                    .map_err(|e| e.to_string())
                    .and_then(|r| self.tar(r, locator, ancestors, sink)),
            ),
            ContainerKind::Gzip => archive(self.gzip(&source, locator, ancestors, sink)),
            ContainerKind::Mail => self.eml(&source, locator, ancestors, sink),
            ContainerKind::Mbox => self.mbox(&source, locator, ancestors, sink),
            ContainerKind::Msg => self.msg(&source, locator, ancestors, sink),
        };
        ancestors.pop();
        sink(container_leaf(locator, walked, hash));
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

    /// Charge bytes already in memory (a mail's decoded part) to the budget, as
    /// [`Unpacker::read_member`] charges what it reads, without copying them.
    fn charge(&self, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
        self.budget
            .take_bytes(bytes.len() as u64)
            .map_err(|l| format!("limit: {}", l.name()))?;
        if bytes.len() as u64 > self.limits.max_file_bytes {
            return Err(format!("limit: {}", Limit::FileSize.name()));
        }
        Ok(bytes)
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
}

/// The leaf that ends a container's walk: the container with its members, or (the walk
/// stopped) why: a limit tripped while walking the container's own stream skips the rest of
/// it under that limit's name; anything else fails it.
fn container_leaf(locator: &Locator, walked: mail::MailWalked, hash: blake3::Hash) -> Leaf {
    let locator = locator.clone();
    match walked {
        Ok((members, about)) => Leaf::Container {
            locator,
            members,
            hash: hash.to_hex().to_string(),
            about,
        },
        Err(reason) => match reason.find("limit: ") {
            Some(at) => Leaf::Skipped {
                locator,
                reason: reason.get(at..).unwrap_or(&reason).to_string(),
            },
            None => Leaf::Failed { locator, reason },
        },
    }
}

/// Bytes of a too-long member name kept in its shortened locator segment.
const SHORT_NAME_BYTES: usize = 200;

impl Unpacker<'_> {
    /// A member's locator segment and, when its name breaks a limit, why it is skipped: a
    /// name longer than `max_member_name_bytes` is shortened to its first bytes, `…` and a
    /// hash of the whole name (distinct names stay distinct); a path with more than
    /// `max_member_folders` folders keeps its name but is not read.
    fn member_name(&self, name: String) -> (String, Option<String>) {
        let max = self.limits.max_member_name_bytes;
        if name.len() > max {
            let mut cut = SHORT_NAME_BYTES.min(max);
            while !name.is_char_boundary(cut) {
                cut -= 1;
            }
            let hash = blake3::hash(name.as_bytes()).to_hex();
            let short = format!(
                "{}…{}",
                name.get(..cut).unwrap_or_default(),
                hash.get(..16).unwrap_or_default()
            );
            let reason = format!(
                "limit: {} (a {}-byte name; at most {max})",
                Limit::NameLength.name(),
                name.len()
            );
            return (short, Some(reason));
        }
        let folders = name.trim_end_matches('/').matches('/').count();
        if folders > self.limits.max_member_folders {
            let reason = format!(
                "limit: {} ({folders} folders deep; at most {})",
                Limit::PathDepth.name(),
                self.limits.max_member_folders
            );
            return (name, Some(reason));
        }
        (name, None)
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

/// Read at most `limit` bytes of `reader`.
#[allow(clippy::disallowed_methods)] // bounded by `take`
pub fn read_at_most(reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    reader.take(limit).read_to_end(&mut out)?;
    Ok(out)
}

/// A ZIP archive of `entries` (name, bytes), deflated, in memory.
#[cfg(any(test, feature = "testing"))]
#[allow(clippy::unwrap_used)] // a test helper: writing to memory does not fail
pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write;
    let mut w = ::zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in entries {
        w.start_file(*name, ::zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zip_of;
    use std::io::Write;

    pub(super) fn tar_gz_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = ::tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut h = ::tar::Header::new_gnu();
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

    /// The locators of what [`collect`] found, in order, are `want`.
    pub(super) fn assert_locators(got: &[(String, String)], want: &[&str]) {
        let locators: Vec<&str> = got.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(locators, want, "{got:?}");
    }

    pub(super) fn collect(limits: &Limits, name: &str, bytes: Vec<u8>) -> Vec<(String, String)> {
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
}
