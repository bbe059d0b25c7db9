//! Remote sources: S3-compatible object storage, SFTP, FTP and WebDAV, read through Apache
//! OpenDAL (one storage layer for every provider: listing with sizes, times and ETags, ranged
//! streaming reads, retries with backoff and timeouts), and IMAP mailboxes through async-imap
//! (`imap.rs`: OpenDAL has no IMAP service).
//!
//! A source is named by a URL ([`SourceUrl`]): `s3://bucket/prefix`, `sftp://host/path`,
//! `ftp://host/path`, `webdav://host/path` (`webdavs://` for HTTPS). The URL never carries a
//! secret: credentials come from the environment ([`Credentials`]), and the locators of what
//! is read keep only the scheme, the bucket or host and the object's path
//! (`s3://bucket/a/b.zip!/c.pdf#page=3`).
//!
//! A sync ([`RemoteSession`]) lists the source, and the pipeline compares each object's size
//! and modification time with what the catalog holds: an unchanged object is not downloaded;
//! a changed or new one is streamed into the spool under the size limit before anything reads
//! it, then unpacked and extracted like a file on disk; what the listing no longer holds
//! leaves the index. A listing that fails removes nothing.

// The base layer, under the names the modules here have always used.
pub(crate) use ingest_base::{access, perms};

use std::io::Write;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use opendal::layers::{RetryLayer, TimeoutLayer};
use opendal::Operator;

mod destinations;
mod http;
mod imap;
mod redact;
mod registry;

pub use destinations::Destinations;
pub use redact::Secrets;
pub use registry::{check_sources, visible, RegisteredSource};

/// Longest source URL accepted.
const MAX_URL_BYTES: usize = 2048;
/// Objects one sync lists, at most: past it the listing stops and nothing is removed.
pub const MAX_LISTED_OBJECTS: usize = 1_000_000;
/// Longest object path (below the source's root) read; longer ones are counted, not kept
/// (S3 keys are at most 1024 bytes; a hostile server could send any length).
pub const MAX_OBJECT_PATH_BYTES: usize = 4096;
/// Attempts per request before an object (or the listing) is given up for this sync.
const ATTEMPTS: usize = 4;
/// How long one request may take before it is retried.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a source could not be named, opened, listed or read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The URL is not one this build reads.
    #[error("not a source URL: {0}")]
    Url(String),
    /// The provider refused or failed (after retries).
    #[error("{0}")]
    Service(String),
    /// The object is larger than the limit.
    #[error("limit: total-bytes (an object of {size} bytes; at most {max})")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The object's path is not one read ([`check_object_path`]).
    #[error("{0}")]
    Refused(String),
    /// The spool could not be written.
    #[error("cannot spool: {0}")]
    Spool(#[from] std::io::Error),
}

/// The providers a source URL may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// S3-compatible object storage (`s3://bucket/prefix`).
    S3,
    /// SFTP over SSH (`sftp://host/path`).
    Sftp,
    /// FTP (`ftp://host/path`).
    Ftp,
    /// WebDAV over HTTP (`webdav://host/path`) or HTTPS (`webdavs://`).
    Webdav {
        /// Over HTTPS.
        tls: bool,
    },
    /// An IMAP mailbox (`imap://user@host/INBOX`), over TLS with `imaps://`.
    Imap {
        /// Over TLS.
        tls: bool,
    },
}

impl Provider {
    fn scheme(self) -> &'static str {
        match self {
            Provider::S3 => "s3",
            Provider::Sftp => "sftp",
            Provider::Ftp => "ftp",
            Provider::Webdav { tls: false } => "webdav",
            Provider::Webdav { tls: true } => "webdavs",
            Provider::Imap { tls: false } => "imap",
            Provider::Imap { tls: true } => "imaps",
        }
    }
}

/// A remote source: its provider, bucket or host, and the folder (prefix) it is rooted at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceUrl {
    /// Which provider.
    pub provider: Provider,
    /// The bucket (S3) or `host[:port]`.
    pub authority: String,
    /// The folder or key prefix inside it, without leading or trailing `/` (may be empty).
    pub root: String,
    /// The user name given in the URL (`sftp://deploy@host/…`); never a password.
    pub user: Option<String>,
}

impl SourceUrl {
    /// Whether `text` names a remote source (`scheme://`), to be parsed as one rather than
    /// taken for a path.
    pub fn looks_like_one(text: &str) -> bool {
        [
            "s3://",
            "sftp://",
            "ftp://",
            "webdav://",
            "webdavs://",
            "imap://",
            "imaps://",
        ]
        .iter()
        .any(|s| {
            text.get(..s.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(s))
        })
    }

    /// The locator root of the whole source: `s3://bucket/prefix`.
    pub fn locator_root(&self) -> String {
        self.locator_of("")
    }

    /// The locator of the object at `path` (relative to the source's root).
    pub fn locator_of(&self, path: &str) -> String {
        let mut out = format!("{}://{}", self.provider.scheme(), self.authority);
        for part in [self.root.as_str(), path.trim_start_matches('/')] {
            if !part.is_empty() {
                out.push('/');
                out.push_str(part);
            }
        }
        out
    }
}

impl std::fmt::Display for SourceUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.locator_root())
    }
}

impl FromStr for SourceUrl {
    type Err = SourceError;

    fn from_str(text: &str) -> Result<Self, SourceError> {
        let bad = |why: &str| SourceError::Url(format!("{why} ({})", shown(text)));
        if text.len() > MAX_URL_BYTES {
            return Err(bad("longer than 2048 bytes"));
        }
        if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad("control characters or spaces"));
        }
        let (scheme, rest) = text.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let provider = match scheme.to_ascii_lowercase().as_str() {
            "s3" => Provider::S3,
            "sftp" => Provider::Sftp,
            "ftp" => Provider::Ftp,
            "webdav" => Provider::Webdav { tls: false },
            "webdavs" => Provider::Webdav { tls: true },
            "imap" => Provider::Imap { tls: false },
            "imaps" => Provider::Imap { tls: true },
            _ => {
                return Err(bad(
                    "the scheme is not s3, sftp, ftp, webdav, webdavs, imap or imaps",
                ))
            }
        };
        if rest.contains(['?', '#']) {
            return Err(bad("a query or fragment"));
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (user, host) = match authority.rsplit_once('@') {
            Some((user, _)) if user.contains(':') => {
                return Err(SourceError::Url(format!(
                    "a password is never given in a URL: set it in the environment \
                     ({scheme}://{}…)",
                    authority.rsplit_once('@').map_or("", |(_, h)| h)
                )))
            }
            Some((user, host)) => (Some(user.to_string()), host),
            None => (None, authority),
        };
        if host.is_empty()
            || !host.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']')
            })
        {
            return Err(bad("no bucket or host, or one with other characters"));
        }
        if provider == Provider::S3 && user.is_some() {
            return Err(bad("an S3 URL names a bucket, not a user"));
        }
        let root = path.trim_matches('/');
        if root.split('/').any(|p| p == ".." || p == ".") {
            return Err(bad("`.` or `..` in the path"));
        }
        Ok(SourceUrl {
            provider,
            authority: host.to_string(),
            root: root.to_string(),
            user,
        })
    }
}

/// The first 80 characters of a refused URL, for its message.
fn shown(text: &str) -> String {
    let head: String = text.chars().take(80).collect();
    if head.len() < text.len() {
        format!("{head}…")
    } else {
        head
    }
}

/// A source's credentials: those a registered source's configuration gives
/// ([`crate::RegisteredSource`]), each else from the environment — never from the URL, and
/// never written to a locator, a payload, a ledger line, a log or an answer (`Debug` shows
/// only which are set).
///
/// | provider | fields (environment variables) |
/// |---|---|
/// | S3 | `access_key_id` (`AWS_ACCESS_KEY_ID`), `secret_access_key` (`AWS_SECRET_ACCESS_KEY`), `session_token` (`AWS_SESSION_TOKEN`), `region` (`AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`), `endpoint` (`AWS_ENDPOINT_URL`) for another S3-compatible service |
/// | SFTP | `key_file` (`INGEST_SFTP_KEY`: a private key file; else the SSH agent and `~/.ssh/config`), `known_hosts` (`INGEST_SFTP_KNOWN_HOSTS`: `strict`, the default, `add` or `accept`) |
/// | FTP | `user` (`INGEST_FTP_USER`), `password` (`INGEST_FTP_PASSWORD`) (else anonymous) |
/// | WebDAV | `user` (`INGEST_WEBDAV_USER`), `password` (`INGEST_WEBDAV_PASSWORD`) or `token` (`INGEST_WEBDAV_TOKEN`) |
/// | IMAP | `user` (`INGEST_IMAP_USER`; the URL's first), `password` (`INGEST_IMAP_PASSWORD`) |
#[derive(Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// S3 access key id.
    pub access_key_id: Option<String>,
    /// S3 secret access key.
    pub secret_access_key: Option<String>,
    /// S3 session token.
    pub session_token: Option<String>,
    /// S3 region.
    pub region: Option<String>,
    /// S3-compatible endpoint (`http://127.0.0.1:9000`).
    pub endpoint: Option<String>,
    /// FTP or WebDAV user (SFTP: the URL's `user@`).
    pub user: Option<String>,
    /// FTP or WebDAV password.
    pub password: Option<String>,
    /// WebDAV bearer token.
    pub token: Option<String>,
    /// SFTP private key file.
    pub key_file: Option<String>,
    /// SFTP host key checking: `strict`, `add` or `accept`.
    pub known_hosts: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |v: &Option<String>| if v.is_some() { "set" } else { "-" };
        f.debug_struct("Credentials")
            .field("access_key_id", &set(&self.access_key_id))
            .field("secret_access_key", &set(&self.secret_access_key))
            .field("session_token", &set(&self.session_token))
            .field("region", &self.region)
            .field("endpoint", &self.endpoint)
            .field("user", &set(&self.user))
            .field("password", &set(&self.password))
            .field("token", &set(&self.token))
            .field("key_file", &set(&self.key_file))
            .field("known_hosts", &self.known_hosts)
            .finish()
    }
}

impl Credentials {
    /// `given` when set and not empty, else the environment variable `name`.
    fn or_var(given: &Option<String>, name: &str) -> Option<String> {
        given
            .clone()
            .filter(|v| !v.is_empty())
            .or_else(|| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }
}

/// What one sync reads: a source (its URL and credentials) and, for a pull of one object,
/// that object only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Where.
    pub url: SourceUrl,
    /// How to log in.
    pub credentials: Credentials,
    /// Only this object (a path below the URL's root), not the whole folder: nothing else
    /// is listed, and nothing is removed unless this object is gone.
    pub file: Option<String>,
    /// Stop after this many objects (a pull's bound): the listing is then not complete, so
    /// nothing is removed, and the source's line says where it stopped.
    pub max_objects: Option<usize>,
}

impl From<SourceUrl> for Source {
    fn from(url: SourceUrl) -> Source {
        Source {
            url,
            credentials: Credentials::default(),
            file: None,
            max_objects: None,
        }
    }
}

/// One sync's own folder in the spool (`<pid>-<n>`), removed when it is dropped: syncs of
/// several scopes may run at once in one data directory. Folders of processes that are gone
/// (killed mid-sync) are removed when the next one is made.
pub struct SyncSpool {
    dir: std::path::PathBuf,
}

impl SyncSpool {
    /// A new folder under `spool`.
    pub fn new(spool: &Path) -> std::io::Result<SyncSpool> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        std::fs::create_dir_all(spool)?;
        for entry in std::fs::read_dir(spool)?.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.split_once('-'))
                .map(|(p, _)| p);
            let alive = pid.is_some_and(|p| Path::new("/proc").join(p).exists());
            if !alive {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = spool.join(format!("{}-{n}", std::process::id()));
        std::fs::create_dir(&dir)?;
        Ok(SyncSpool { dir })
    }

    /// Where the object at `locator` is downloaded to (a hash: a name is never a path).
    pub fn file_for(&self, locator: &str) -> std::path::PathBuf {
        self.dir
            .join(blake3::hash(locator.as_bytes()).to_hex().as_str())
    }
}

impl Drop for SyncSpool {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One object a listing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteObject {
    /// Its path relative to the source's root.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// What tells a changed object from an unchanged one of the same size, kept in the
    /// catalog where a file's modification time is: the modification time in ns, mixed with
    /// the ETag when the service gives one (an S3 object rewritten within the same second
    /// has another ETag). 0 when the service gives neither: then it is always read again.
    pub stamp: u64,
}

/// [`RemoteObject::stamp`] of an object modified at `mtime_ns` with `etag`.
fn change_stamp(mtime_ns: u64, etag: Option<&str>) -> u64 {
    let Some(etag) = etag else {
        return mtime_ns;
    };
    // Apache marks an ETag weak (`W/"…"`) while the file is less than a second old, then
    // strong: the same validator either way.
    let etag = etag.trim_start_matches("W/");
    let mut h = blake3::Hasher::new();
    h.update(&mtime_ns.to_le_bytes());
    h.update(etag.as_bytes());
    let bytes = h
        .finalize()
        .as_bytes()
        .first_chunk::<8>()
        .copied()
        .unwrap_or([1; 8]);
    // Positive as an i64 (catalogs store it signed), and never 0.
    (u64::from_le_bytes(bytes) >> 1) | 1
}

/// The [`RemoteObject`] at `path` with `meta`.
fn object_of(path: &str, meta: &opendal::Metadata) -> RemoteObject {
    let mtime_ns = meta.last_modified().map_or(0, |t| {
        std::time::SystemTime::from(t)
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(0))
    });
    RemoteObject {
        path: path.trim_matches('/').to_string(),
        size: meta.content_length(),
        stamp: change_stamp(mtime_ns, meta.etag()),
    }
}

/// Entries one folder listing reads, at most (a browse answers within a budget; past this
/// the listing says it was cut).
pub const MAX_BROWSED_ENTRIES: usize = 10_000;

/// One entry of a folder: a file or a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderEntry {
    /// Its name in the folder.
    pub name: String,
    /// Its path below the source's root.
    pub path: String,
    /// Whether it is a folder.
    pub folder: bool,
    /// A file's size as listed (0 when the service did not say).
    pub size: u64,
    /// A file's [`RemoteObject::stamp`] as listed (0 when the service did not say).
    pub stamp: u64,
}

/// What [`RemoteSession::list_folder`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FolderListing {
    /// The entries, sorted by name.
    pub entries: Vec<FolderEntry>,
    /// The folder held more than [`MAX_BROWSED_ENTRIES`].
    pub truncated: bool,
    /// Entries left out for a path longer than [`MAX_OBJECT_PATH_BYTES`].
    pub long_paths: u64,
}

/// What a listing went through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// It reached the end: what it did not hold is gone.
    pub complete: bool,
    /// Files left out for a path longer than [`MAX_OBJECT_PATH_BYTES`].
    pub long_paths: u64,
    /// Files left out for a path that is not canonical ([`check_object_path`]): the first
    /// [`MAX_REFUSED_SHOWN`] with why, each to be told as `skipped`.
    pub refused: Vec<(String, String)>,
    /// How many were left out so, those past [`MAX_REFUSED_SHOWN`] too.
    pub refused_count: u64,
    /// Why the listing did not reach its end though nobody stopped it (a bound, folders that
    /// could not be listed): told as one `skipped` line for the source.
    pub cut: Option<String>,
}

/// Folders a walked listing (WebDAV, SFTP, FTP) enters, at most.
pub const MAX_LISTED_FOLDERS: usize = 100_000;
/// Entries of every kind (files, folders, links, what is refused) a walked listing reads.
const MAX_LISTED_ENTRIES: usize = 2 * MAX_LISTED_OBJECTS + MAX_LISTED_FOLDERS;
/// Bytes of folder paths a walked listing holds waiting to be listed, at most.
const MAX_PENDING_FOLDER_BYTES: usize = 16 * 1024 * 1024;

/// How the listing of one folder of a walk ended.
enum FolderEnd {
    /// To its end.
    Listed,
    /// The whole listing ends here (the caller stopped it, or a bound).
    Stop,
    /// The folder vanished or cannot be read: why.
    Gone(String),
}

/// Refused paths one listing names, at most (the rest are counted).
pub const MAX_REFUSED_SHOWN: usize = 100;

impl Listing {
    fn refuse(&mut self, path: &str, why: String) {
        self.refused_count += 1;
        if self.refused.len() < MAX_REFUSED_SHOWN {
            self.refused.push((path.to_string(), why));
        }
    }
}

/// Whether `path` (an object's path below a source's root, as the service lists it) is
/// canonical: not empty, no empty, `.` or `..` segment, no backslash, no control character.
/// Anything else would be read from another place than the one it is listed and indexed
/// under (an HTTP client normalises `a/../../b`; a server may take `\` for `/`), so it is
/// neither read nor indexed.
pub fn check_object_path(path: &str) -> Result<(), String> {
    let why = if path.is_empty() {
        "an empty path"
    } else if path.trim() != path {
        "white space at an end of its path (the service's client would trim it)"
    } else if path.contains('\\') {
        "a backslash in its path"
    } else if path.chars().any(char::is_control) {
        "a control character in its path"
    } else if path.split('/').any(|p| p == "." || p == "..") {
        "a `.` or `..` segment in its path"
    } else if path.split('/').any(str::is_empty) {
        "an empty segment in its path (`//`, or `/` at an end)"
    } else {
        return Ok(());
    };
    Err(format!(
        "not read: {why} (it would be read from outside the place it is listed at)"
    ))
}

/// The user name (the URL's, else the credentials', else `user_var`) and the password (the
/// credentials', else `password_var`) of a source.
fn login(source: &Source, user_var: &str, password_var: &str) -> (Option<String>, Option<String>) {
    let c = &source.credentials;
    let user = source
        .url
        .user
        .clone()
        .or_else(|| Credentials::or_var(&c.user, user_var));
    (user, Credentials::or_var(&c.password, password_var))
}

/// An open source: the service's client and the runtime its requests run on.
pub struct RemoteSession {
    backend: Backend,
    runtime: tokio::runtime::Runtime,
    /// What its errors are cleaned of.
    secrets: Secrets,
}

/// `f`, a call into the service's client, with a panic in it made this source's error: the
/// client library takes some answers on trust (OpenDAL 0.59 slices a WebDAV entry's path by
/// the root's length, its check of the form a debug assertion only), and a server's odd
/// answer must fail the source, not take the process down.
fn contained<T>(f: impl FnOnce() -> Result<T, SourceError>) -> Result<T, SourceError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| Err(unfit()))
}

/// `rt.block_on(f)`, a panic in it made this source's error as in [`contained`]: for the
/// listing, whose callback (the sync's own work) runs between requests and is not the
/// client's to answer for.
fn wait<F: std::future::Future>(
    rt: &tokio::runtime::Runtime,
    f: F,
) -> Result<F::Output, SourceError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(f))).map_err(|_| unfit())
}

/// The error of a client that panicked on a server's answer.
fn unfit() -> SourceError {
    SourceError::Service("the service's client could not take the server's answer".into())
}

/// `e` with what the server said reduced by [`Secrets::reason`]: the one way a remote error
/// leaves this module.
fn clean(secrets: &Secrets, e: SourceError) -> SourceError {
    match e {
        SourceError::Service(said) => SourceError::Service(secrets.reason(&said)),
        SourceError::Url(said) => SourceError::Url(secrets.reason(&said)),
        other => other,
    }
}

/// What an OpenDAL error says: its kind, the HTTP status when there was one, and its
/// message (for an HTTP error, the start of the body, [`http::MAX_ERROR_BODY_BYTES`] at
/// most) — not its context (the request's URL and the response's headers).
fn said(e: &opendal::Error) -> String {
    let full = e.to_string();
    let status = full
        .split_once("status: ")
        .and_then(|(_, rest)| rest.get(..3))
        .filter(|code| code.bytes().all(|b| b.is_ascii_digit()))
        .map(|code| format!(" (HTTP {code})"))
        .unwrap_or_default();
    format!("{}{status}: {}", e.kind(), e.message())
}

/// The hosts the operator named for `source`: its URL's (not an S3 bucket), and the S3
/// endpoint's (configuration or environment).
fn named_hosts(source: &Source) -> Vec<String> {
    let host_of = |authority: &str| -> String {
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if let Some(rest) = authority.strip_prefix('[') {
            return rest.split_once(']').map_or(rest, |(h, _)| h).to_string();
        }
        authority
            .split_once(':')
            .map_or(authority, |(h, _)| h)
            .to_string()
    };
    let mut named = Vec::new();
    if source.url.provider == Provider::S3 {
        if let Some(endpoint) =
            Credentials::or_var(&source.credentials.endpoint, "AWS_ENDPOINT_URL")
        {
            let rest = endpoint
                .split_once("://")
                .map_or(endpoint.as_str(), |(_, r)| r);
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            named.push(host_of(authority));
        }
    } else {
        named.push(host_of(&source.url.authority));
    }
    named.retain(|h| !h.is_empty());
    named
}

/// What a session talks to.
enum Backend {
    /// Object storage and file servers, through OpenDAL.
    Dal(Operator),
    /// One IMAP mailbox, through async-imap.
    Imap(std::sync::Mutex<imap::Mailbox>),
}

/// The error of a session whose backend does not do what was asked (never expected).
fn not_this_backend() -> SourceError {
    SourceError::Service("this provider cannot do that".into())
}

impl RemoteSession {
    /// Open `source` with its credentials (else the environment's), its connections held to
    /// the deployment's `destinations` ([`Destinations`]); nothing is requested yet. What a
    /// server says in an error reaches the caller only through [`Secrets::reason`].
    pub fn open(
        source: &Source,
        destinations: &Destinations,
    ) -> Result<RemoteSession, SourceError> {
        let secrets = Secrets::of(source);
        Self::open_unclean(source, destinations, secrets.clone()).map_err(|e| clean(&secrets, e))
    }

    fn open_unclean(
        source: &Source,
        destinations: &Destinations,
        secrets: Secrets,
    ) -> Result<RemoteSession, SourceError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let named = named_hosts(source);
        let policy = destinations.compile(&named).map_err(SourceError::Url)?;
        // The deny list refuses an operator-named host too (SFTP and FTP connect by name
        // inside their clients: this is their check).
        for host in &named {
            policy.check_host(host).map_err(SourceError::Service)?;
        }
        // TLS (S3, WebDAV, IMAP) with ring's primitives; a provider installed earlier stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        if let Provider::Imap { tls } = source.url.provider {
            let mailbox = runtime.block_on(imap::Mailbox::open(source, tls, &policy))?;
            return Ok(RemoteSession {
                backend: Backend::Imap(std::sync::Mutex::new(mailbox)),
                runtime,
                secrets,
            });
        }
        let url = &source.url;
        let c = &source.credentials;
        let var = Credentials::or_var;
        let service = |e: opendal::Error| SourceError::Service(said(&e));
        let root = format!("/{}", url.root);
        let op = match url.provider {
            Provider::S3 => {
                let mut b = opendal::services::S3::default()
                    .bucket(&url.authority)
                    .root(&root)
                    .disable_config_load()
                    .disable_ec2_metadata();
                let region = var(&c.region, "AWS_REGION")
                    .or_else(|| var(&None, "AWS_DEFAULT_REGION"))
                    .unwrap_or_else(|| "us-east-1".into());
                b = b.region(&region);
                if let Some(endpoint) = var(&c.endpoint, "AWS_ENDPOINT_URL") {
                    b = b.endpoint(&endpoint);
                }
                match (
                    var(&c.access_key_id, "AWS_ACCESS_KEY_ID"),
                    var(&c.secret_access_key, "AWS_SECRET_ACCESS_KEY"),
                ) {
                    (Some(id), Some(secret)) => {
                        b = b.access_key_id(&id).secret_access_key(&secret);
                        if let Some(token) = var(&c.session_token, "AWS_SESSION_TOKEN") {
                            b = b.session_token(&token);
                        }
                    }
                    _ => b = b.skip_signature(),
                }
                Operator::new(b).map_err(service)?
            }
            Provider::Sftp => {
                let mut b = opendal::services::Sftp::default()
                    .endpoint(&format!("ssh://{}", url.authority))
                    .root(&root)
                    .known_hosts_strategy(
                        &var(&c.known_hosts, "INGEST_SFTP_KNOWN_HOSTS").unwrap_or("strict".into()),
                    );
                if let Some(user) = &url.user {
                    b = b.user(user);
                }
                if let Some(key) = var(&c.key_file, "INGEST_SFTP_KEY") {
                    b = b.key(&key);
                }
                Operator::new(b).map_err(service)?
            }
            Provider::Ftp => {
                let mut b = opendal::services::Ftp::default()
                    .endpoint(&format!("ftp://{}", url.authority))
                    .root(&root);
                let (user, password) = login(source, "INGEST_FTP_USER", "INGEST_FTP_PASSWORD");
                if let Some(user) = user {
                    b = b.user(&user);
                }
                if let Some(password) = password {
                    b = b.password(&password);
                }
                Operator::new(b).map_err(service)?
            }
            Provider::Webdav { tls } => {
                let scheme = if tls { "https" } else { "http" };
                let mut b = opendal::services::Webdav::default()
                    .endpoint(&format!("{scheme}://{}", url.authority))
                    .root(&root);
                let (user, password) =
                    login(source, "INGEST_WEBDAV_USER", "INGEST_WEBDAV_PASSWORD");
                if let Some(user) = user {
                    b = b.username(&user);
                }
                if let Some(password) = password {
                    b = b.password(&password);
                }
                if let Some(token) = var(&c.token, "INGEST_WEBDAV_TOKEN") {
                    b = b.token(&token);
                }
                Operator::new(b).map_err(service)?
            }
            Provider::Imap { .. } => return Err(not_this_backend()),
        };
        let notify = secrets.clone();
        // S3 and WebDAV: the checked client, not a process default.
        let transport = http::CheckedTransport::new(policy).map_err(SourceError::Service)?;
        let op = op
            .with_context(
                opendal::OperationContext::new()
                    .with_http_transport(opendal::HttpTransporter::new(transport)),
            )
            .layer(TimeoutLayer::new().with_timeout(REQUEST_TIMEOUT))
            .layer(
                RetryLayer::new()
                    .with_max_times(ATTEMPTS - 1)
                    .with_jitter()
                    .with_min_delay(Duration::from_millis(200))
                    .with_max_delay(Duration::from_secs(5))
                    // Its default logs the whole error (the server's text, the response's
                    // headers): only the cleaned reason is logged.
                    .with_notify(move |event: opendal::layers::RetryEvent<'_>| {
                        tracing::warn!(
                            operation = ?event.op,
                            attempt = event.attempt,
                            "a source's request failed, retried in {:.1} s: {}",
                            event.retry_after.as_secs_f64(),
                            notify.reason(&said(event.err))
                        );
                    }),
            );
        Ok(RemoteSession {
            backend: Backend::Dal(op),
            runtime,
            secrets,
        })
    }

    /// List every file under the source's root (recursively), handing each to `found` until
    /// it returns `false` or [`MAX_LISTED_OBJECTS`] are listed; files whose path is longer
    /// than [`MAX_OBJECT_PATH_BYTES`] are only counted.
    pub fn list(&self, found: impl FnMut(RemoteObject) -> bool) -> Result<Listing, SourceError> {
        self.list_raw(found).map_err(|e| clean(&self.secrets, e))
    }

    /// The object at `path` (below the root), or `None` when there is none; a folder there is
    /// an error.
    pub fn stat_file(&self, path: &str) -> Result<Option<RemoteObject>, SourceError> {
        contained(|| self.stat_file_raw(path)).map_err(|e| clean(&self.secrets, e))
    }

    /// Whether `path` (below the root; empty: the root) is a folder: `Some(true)`, a file:
    /// `Some(false)`, or nothing at all: `None`.
    pub fn kind_of(&self, path: &str) -> Result<Option<bool>, SourceError> {
        contained(|| self.kind_of_raw(path)).map_err(|e| clean(&self.secrets, e))
    }

    /// The entries of the folder `path` (below the root; empty: the root), not recursively,
    /// sorted by name: at most [`MAX_BROWSED_ENTRIES`] are read from the service.
    pub fn list_folder(&self, path: &str) -> Result<FolderListing, SourceError> {
        contained(|| self.list_folder_raw(path)).map_err(|e| clean(&self.secrets, e))
    }

    /// Stream the object at `path` into the file `to`, at most `max` bytes (refused before
    /// the download when its listed `size` is larger, and cut off when more arrives).
    pub fn download(&self, path: &str, size: u64, max: u64, to: &Path) -> Result<u64, SourceError> {
        contained(|| self.download_raw(path, size, max, to)).map_err(|e| clean(&self.secrets, e))
    }

    /// The IMAP mailbox, when this session is one.
    fn mailbox(&self) -> Option<std::sync::MutexGuard<'_, imap::Mailbox>> {
        match &self.backend {
            Backend::Imap(m) => Some(m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)),
            Backend::Dal(_) => None,
        }
    }

    /// The OpenDAL operator, when this session is one.
    fn op(&self) -> Result<&Operator, SourceError> {
        match &self.backend {
            Backend::Dal(op) => Ok(op),
            Backend::Imap(_) => Err(not_this_backend()),
        }
    }

    /// [`Self::list`], its errors not cleaned yet.
    fn list_raw(
        &self,
        mut found: impl FnMut(RemoteObject) -> bool,
    ) -> Result<Listing, SourceError> {
        use futures_util::TryStreamExt;
        if let Some(mut mailbox) = self.mailbox() {
            // The whole listing first: `found` fetches messages on the same connection.
            let objects = wait(&self.runtime, mailbox.list())??;
            drop(mailbox);
            for object in objects {
                if !found(object) {
                    return Ok(Listing::default());
                }
            }
            return Ok(Listing {
                complete: true,
                ..Listing::default()
            });
        }
        let op = self.op()?;
        let service =
            |e: opendal::Error| SourceError::Service(format!("cannot list: {}", said(&e)));
        // Each request is one `block_on`: `found` runs outside the runtime (it downloads).
        let rt = &self.runtime;
        let mut listed = 0usize;
        let mut listing = Listing::default();
        // One listed file: refused, counted or handed to `found`; `false` ends the listing.
        let mut take = |entry: &opendal::Entry, listing: &mut Listing| {
            if entry.path().len() > MAX_OBJECT_PATH_BYTES {
                listing.long_paths += 1;
                return Ok(true);
            }
            if let Err(why) = check_object_path(entry.path()) {
                listing.refuse(entry.path(), why);
                return Ok(true);
            }
            // Some services list names only: ask for the rest.
            let meta = entry.metadata();
            let meta = if meta.last_modified().is_none() || meta.content_length() == 0 {
                wait(rt, op.stat(entry.path()))?.map_err(service)?
            } else {
                meta.clone()
            };
            listed += 1;
            if !found(object_of(entry.path(), &meta)) {
                return Ok(false);
            }
            if listed >= MAX_LISTED_OBJECTS {
                listing.cut = Some(format!(
                    "limit: files (the listing stopped after {MAX_LISTED_OBJECTS} objects)"
                ));
                return Ok(false);
            }
            Ok::<bool, SourceError>(true)
        };
        if op.info().scheme() == "s3" {
            // S3 lists a whole tree itself, in pages resumed by a token.
            let mut lister =
                wait(rt, async { op.lister_with("/").recursive(true).await })?.map_err(service)?;
            while let Some(entry) = wait(rt, lister.try_next())?.map_err(service)? {
                if entry.metadata().is_file() && !take(&entry, &mut listing)? {
                    return Ok(listing);
                }
            }
            listing.complete = true;
            return Ok(listing);
        }
        // Folder by folder (WebDAV, SFTP, FTP), each listing retried on its own: OpenDAL's
        // simulated recursive listing loses a folder whose listing failed once and was
        // retried (a connection the server had closed), and the sync would then take its
        // files for deleted. Only folders (not links) strictly below the one listed are
        // entered, in name order, at most MAX_LISTED_FOLDERS; anything left out makes the
        // listing incomplete (nothing is then taken for gone) and says why.
        let mut folders = vec![String::from("/")];
        // Bytes of the paths in `folders`, folders entered, entries read.
        let (mut pending, mut entered, mut entries) = (1usize, 0usize, 0usize);
        // Folders left out (vanished, unreadable, named outside), and the first of them.
        let (mut unlisted, mut first_unlisted) = (0usize, None::<String>);
        while let Some(dir) = folders.pop() {
            pending = pending.saturating_sub(dir.len());
            entered += 1;
            let mut below: Vec<String> = Vec::new();
            // The first entry the server named outside the folder listed (another case or
            // form of its name): not entered, and the listing is not complete.
            let mut outside: Option<String> = None;
            // A folder gone or unreadable below the root (FTP says 550 for both) is left
            // out and the rest listed; any other error fails the listing.
            let gone_or_failed = |e: opendal::Error| {
                if dir != "/" && e.kind() == opendal::ErrorKind::NotFound {
                    Ok(FolderEnd::Gone(said(&e)))
                } else {
                    Err(service(e))
                }
            };
            let end = (|| {
                let mut lister = match wait(rt, op.lister(&dir))? {
                    Ok(l) => l,
                    Err(e) => return gone_or_failed(e),
                };
                loop {
                    let entry = match wait(rt, lister.try_next())? {
                        Ok(Some(entry)) => entry,
                        Ok(None) => return Ok(FolderEnd::Listed),
                        Err(e) => return gone_or_failed(e),
                    };
                    entries += 1;
                    if entries > MAX_LISTED_ENTRIES {
                        listing.cut = Some(format!(
                            "limit: entries (the listing stopped after {MAX_LISTED_ENTRIES})"
                        ));
                        return Ok(FolderEnd::Stop);
                    }
                    let (path, meta) = (entry.path(), entry.metadata());
                    if meta.is_file() {
                        if !take(&entry, &mut listing)? {
                            return Ok(FolderEnd::Stop);
                        }
                        continue;
                    }
                    if !meta.is_dir() || path == dir || path == "/" {
                        continue; // a link or another kind of entry; the folder itself
                    }
                    if path.len() > MAX_OBJECT_PATH_BYTES {
                        listing.long_paths += 1;
                    } else if !(dir == "/" || path.starts_with(&dir)) {
                        outside.get_or_insert_with(|| format!("{path} listed in it"));
                    } else if let Err(why) = check_object_path(path.trim_end_matches('/')) {
                        listing.refuse(path, why);
                    } else {
                        pending += path.len();
                        if entered + folders.len() + below.len() >= MAX_LISTED_FOLDERS
                            || pending > MAX_PENDING_FOLDER_BYTES
                        {
                            listing.cut = Some(format!(
                                "limit: folders (the listing stopped at {MAX_LISTED_FOLDERS})"
                            ));
                            return Ok(FolderEnd::Stop);
                        }
                        below.push(path.to_string());
                    }
                }
            })()?;
            let left_out = match end {
                FolderEnd::Listed => outside,
                FolderEnd::Stop => return Ok(listing),
                FolderEnd::Gone(why) => Some(why),
            };
            if let Some(why) = left_out {
                unlisted += 1;
                first_unlisted.get_or_insert_with(|| format!("{dir}: {why}"));
            }
            below.sort_unstable();
            folders.extend(below.into_iter().rev());
        }
        if let Some(first) = first_unlisted {
            listing.cut = Some(format!(
                "{unlisted} folders not listed, so nothing under them is taken for gone: {first}"
            ));
            return Ok(listing);
        }
        listing.complete = true;
        Ok(listing)
    }

    /// [`Self::stat_file`], its errors not cleaned yet.
    fn stat_file_raw(&self, path: &str) -> Result<Option<RemoteObject>, SourceError> {
        check_object_path(path).map_err(SourceError::Refused)?;
        if let Some(mut mailbox) = self.mailbox() {
            return self.runtime.block_on(mailbox.stat(path));
        }
        match self.runtime.block_on(self.op()?.stat(path)) {
            Ok(meta) if meta.is_file() => Ok(Some(object_of(path, &meta))),
            Ok(_) => Err(SourceError::Service(format!("{path} is a folder"))),
            Err(e) if e.kind() == opendal::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SourceError::Service(format!(
                "cannot read {path}: {}",
                said(&e)
            ))),
        }
    }

    /// [`Self::kind_of`], its errors not cleaned yet.
    fn kind_of_raw(&self, path: &str) -> Result<Option<bool>, SourceError> {
        let path = path.trim_matches('/');
        if path.is_empty() {
            return Ok(Some(true));
        }
        if self.mailbox().is_some() {
            // A mailbox has no folders: a message, or nothing.
            return Ok(self.stat_file_raw(path)?.map(|_| false));
        }
        match self.stat_file_raw(path) {
            Ok(Some(_)) => return Ok(Some(false)),
            Ok(None) | Err(SourceError::Service(_)) => {}
            Err(e) => return Err(e),
        }
        match self.runtime.block_on(self.op()?.stat(&format!("{path}/"))) {
            Ok(meta) if meta.is_dir() => Ok(Some(true)),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == opendal::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SourceError::Service(format!(
                "cannot read {path}: {}",
                said(&e)
            ))),
        }
    }

    /// [`Self::list_folder`], its errors not cleaned yet.
    fn list_folder_raw(&self, path: &str) -> Result<FolderListing, SourceError> {
        use futures_util::TryStreamExt;
        if let Some(mut mailbox) = self.mailbox() {
            if !path.trim_matches('/').is_empty() {
                return Ok(FolderListing::default());
            }
            return self.runtime.block_on(mailbox.folder());
        }
        let op = self.op()?;
        let service =
            |e: opendal::Error| SourceError::Service(format!("cannot list: {}", said(&e)));
        let rt = &self.runtime;
        let dir = match path.trim_matches('/') {
            "" => "/".to_string(),
            p => format!("{p}/"),
        };
        let mut lister = rt.block_on(op.lister(&dir)).map_err(service)?;
        let mut listing = FolderListing::default();
        while let Some(entry) = rt.block_on(lister.try_next()).map_err(service)? {
            let name = entry
                .path()
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default();
            // The folder itself (some services list it first), and names past the bound.
            if name.is_empty() || entry.path().trim_matches('/') == dir.trim_matches('/') {
                continue;
            }
            if entry.path().len() > MAX_OBJECT_PATH_BYTES {
                listing.long_paths += 1;
                continue;
            }
            // What would be read from elsewhere is not shown (a sync says why).
            if check_object_path(entry.path().trim_end_matches('/')).is_err() {
                continue;
            }
            if listing.entries.len() >= MAX_BROWSED_ENTRIES {
                listing.truncated = true;
                break;
            }
            let meta = entry.metadata();
            let object = object_of(entry.path(), meta);
            listing.entries.push(FolderEntry {
                name: name.to_string(),
                folder: meta.is_dir(),
                size: object.size,
                stamp: object.stamp,
                path: object.path,
            });
        }
        listing.entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(listing)
    }

    /// [`Self::download`], its errors not cleaned yet.
    fn download_raw(&self, path: &str, size: u64, max: u64, to: &Path) -> Result<u64, SourceError> {
        use futures_util::TryStreamExt;
        if size > max {
            return Err(SourceError::TooLarge { size, max });
        }
        check_object_path(path).map_err(SourceError::Refused)?;
        if let Some(mut mailbox) = self.mailbox() {
            return self.runtime.block_on(mailbox.download(path, size, max, to));
        }
        let op = self.op()?;
        let service =
            |e: opendal::Error| SourceError::Service(format!("cannot download: {}", said(&e)));
        self.runtime.block_on(async {
            let reader = op.reader(path).await.map_err(service)?;
            let mut stream = reader.into_bytes_stream(..).await.map_err(service)?;
            let mut file = crate::perms::create_file(to)
                .map_err(|e| SourceError::Spool(std::io::Error::other(e.to_string())))?;
            let mut written = 0u64;
            while let Some(chunk) = stream.try_next().await.map_err(|e| {
                let said = e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<opendal::Error>())
                    .map_or_else(|| e.to_string(), said);
                SourceError::Service(format!("cannot download: {said}"))
            })? {
                written += chunk.len() as u64;
                if written > max {
                    return Err(SourceError::TooLarge { size: written, max });
                }
                file.write_all(&chunk)?;
            }
            file.sync_data()?;
            Ok(written)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_urls_name_a_provider_a_place_and_never_a_secret() {
        let s3: SourceUrl = "s3://reports/2026/q1/".parse().unwrap();
        assert_eq!(s3.provider, Provider::S3);
        assert_eq!(s3.locator_root(), "s3://reports/2026/q1");
        assert_eq!(s3.locator_of("a/b.zip"), "s3://reports/2026/q1/a/b.zip");
        let sftp: SourceUrl = "sftp://deploy@files.example:2222/srv/docs".parse().unwrap();
        assert_eq!(sftp.user.as_deref(), Some("deploy"));
        assert_eq!(sftp.locator_root(), "sftp://files.example:2222/srv/docs");
        let dav: SourceUrl = "webdavs://dav.example/team".parse().unwrap();
        assert_eq!(dav.provider, Provider::Webdav { tls: true });
        let bucket: SourceUrl = "s3://bucket".parse().unwrap();
        assert_eq!(bucket.locator_of("x.pdf"), "s3://bucket/x.pdf");
        for refused in [
            "ftp://user:secret@host/x",
            "http://host/x",
            "s3://",
            "s3://b/../etc",
            "s3://b/x?versionId=1",
            "sftp://host name/x",
            "s3://user@bucket/x",
        ] {
            let e = refused.parse::<SourceUrl>().unwrap_err().to_string();
            assert!(!e.contains("secret"), "{e}");
        }
        assert!(SourceUrl::looks_like_one("S3://b/x"));
        assert!(!SourceUrl::looks_like_one("/data/s3://x"));
        let long = format!("s3://b/{}", "x".repeat(3000));
        assert!(long.parse::<SourceUrl>().is_err());
    }

    #[test]
    fn an_object_path_is_read_only_where_it_is_listed() {
        for fine in ["a.txt", "docs/part 1/notes .txt", "ü/ß.md"] {
            assert_eq!(check_object_path(fine), Ok(()), "{fine}");
        }
        // OpenDAL trims a path's ends; `..`, `//` and `\` would be read elsewhere too.
        for odd in [
            " x/a.txt", "x/a.txt ", "\tx", "a/../b", "a//b", "a\\b", "a/", "",
        ] {
            assert!(check_object_path(odd).is_err(), "{odd:?}");
        }
    }

    #[test]
    fn a_change_stamp_tells_changes_and_not_a_weak_etag() {
        let t = 1_772_445_600_000_000_000;
        let strong = change_stamp(t, Some("\"5-61a\""));
        assert_eq!(change_stamp(t, Some("W/\"5-61a\"")), strong);
        assert_ne!(change_stamp(t, Some("\"5-61b\"")), strong, "another ETag");
        assert_ne!(
            change_stamp(t + 1, Some("\"5-61a\"")),
            strong,
            "another time"
        );
        assert_eq!(change_stamp(t, None), t, "no ETag: the time");
        assert!(strong != 0 && i64::try_from(strong).is_ok());
    }
}
