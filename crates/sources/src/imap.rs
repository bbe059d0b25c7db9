//! IMAP mailboxes as sources (`imap://[user@]host[:port]/MAILBOX`, `imaps://` over TLS),
//! through `async-imap`: a mailbox is a folder of messages, each an object named by its UID
//! and subject (`0042 Budget 2026.eml`), read as an `.eml` container like any mail file.
//!
//! A message never changes under its UID while the mailbox's UIDVALIDITY stays the same, so
//! an object's change stamp is UIDVALIDITY with the UID: an unchanged message is recognised
//! without fetching it, a new UIDVALIDITY reads every message again (their contents are
//! found by hash and not embedded again), and an expunged message is missing from the listing,
//! so it leaves the index. Messages are fetched with `BODY.PEEK[]` (the `\Seen` flag is left
//! alone), at most [`MAX_MESSAGE_BYTES`] each.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_imap::Session;
use futures_util::TryStreamExt;

use super::{change_stamp, Credentials, FolderEntry, FolderListing, RemoteObject};
use super::{Source, SourceError, MAX_BROWSED_ENTRIES, MAX_LISTED_OBJECTS};

/// Largest message fetched (IMAP sends a message whole, so it is held in memory once).
pub const MAX_MESSAGE_BYTES: u64 = 256 * 1024 * 1024;
/// How long connecting and logging in may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one command (a listing, a message) may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// The mailbox a source URL's path names, as IMAP names it on the wire: the path
/// percent-decoded as UTF-8 (`Sent%20Items`, `Entw%C3%BCrfe`, as RFC 5092 writes mailbox
/// names in URLs), then in modified UTF-7 (RFC 3501 5.1.3: `Entw&APw-rfe`); `INBOX` when empty.
/// The crate `utf7-imap` encodes (the only one on crates.io; small and no longer changed).
fn mailbox_name(path: &str) -> Result<String, SourceError> {
    if path.is_empty() {
        return Ok("INBOX".into());
    }
    let name = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| SourceError::Url(format!("mailbox {path}: not UTF-8 once percent-decoded")))?;
    if name.chars().any(char::is_control) {
        return Err(SourceError::Url(format!(
            "mailbox {path}: control characters once percent-decoded"
        )));
    }
    Ok(utf7_imap::encode_utf7_imap(name.into_owned()))
}

/// A connection, plain or TLS.
pub(super) trait Stream:
    tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + std::fmt::Debug
{
}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + std::fmt::Debug> Stream
    for T
{
}

/// A logged-in session with the mailbox selected.
pub(super) struct Mailbox {
    session: Session<Box<dyn Stream>>,
    uid_validity: u32,
    exists: u32,
}

fn service(what: &str) -> impl Fn(async_imap::error::Error) -> SourceError + '_ {
    move |e| SourceError::Service(format!("{what}: {e}"))
}

async fn timed<T>(
    limit: Duration,
    what: &str,
    work: impl std::future::Future<Output = Result<T, SourceError>>,
) -> Result<T, SourceError> {
    tokio::time::timeout(limit, work)
        .await
        .map_err(|_| SourceError::Service(format!("{what}: no answer in {} s", limit.as_secs())))?
}

impl Mailbox {
    /// Connect, log in and select the source's mailbox (its root; `INBOX` when empty).
    pub(super) async fn open(
        source: &Source,
        tls: bool,
        policy: &super::destinations::Policy,
    ) -> Result<Mailbox, SourceError> {
        let url = &source.url;
        let c = &source.credentials;
        let (host, port) = match url.authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h.trim_matches(['[', ']']).to_string(),
                p.parse::<u16>()
                    .map_err(|_| SourceError::Url(format!("bad port in {}", url.authority)))?,
            ),
            _ => (url.authority.clone(), if tls { 993 } else { 143 }),
        };
        let user = url
            .user
            .clone()
            .or_else(|| Credentials::or_var(&c.user, "INGEST_IMAP_USER"))
            .ok_or_else(|| {
                SourceError::Service(
                    "no IMAP user: give it in the URL (imap://user@host/INBOX), the source's \
                     credentials or INGEST_IMAP_USER"
                        .into(),
                )
            })?;
        let password = Credentials::or_var(&c.password, "INGEST_IMAP_PASSWORD").unwrap_or_default();
        let mailbox = mailbox_name(&url.root)?;
        timed(CONNECT_TIMEOUT, "cannot connect", async {
            let addrs = super::destinations::resolve(policy, &host, port)
                .await
                .map_err(SourceError::Service)?;
            let tcp = tokio::net::TcpStream::connect(addrs.as_slice())
                .await
                .map_err(|e| {
                    SourceError::Service(format!("cannot connect to {host}:{port}: {e}"))
                })?;
            let stream: Box<dyn Stream> = if tls {
                use rustls_platform_verifier::ConfigVerifierExt;
                let config = rustls::ClientConfig::with_platform_verifier()
                    .map_err(|e| SourceError::Service(format!("TLS: {e}")))?;
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| SourceError::Url(format!("{host}: {e}")))?;
                let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
                Box::new(
                    connector
                        .connect(name, tcp)
                        .await
                        .map_err(|e| SourceError::Service(format!("TLS with {host}: {e}")))?,
                )
            } else {
                Box::new(tcp)
            };
            let mut client = async_imap::Client::new(stream);
            client
                .read_response()
                .await
                .map_err(|e| SourceError::Service(format!("no greeting: {e}")))?
                .ok_or_else(|| SourceError::Service("the server closed the connection".into()))?;
            // The login's error names neither the user's password nor the user.
            let mut session = client
                .login(&user, &password)
                .await
                .map_err(|(e, _)| SourceError::Service(format!("login refused: {e}")))?;
            let selected = session
                .examine(&mailbox)
                .await
                .map_err(service("cannot open the mailbox"))?;
            Ok(Mailbox {
                session,
                uid_validity: selected.uid_validity.unwrap_or(0),
                exists: selected.exists,
            })
        })
        .await
    }

    /// The messages whose UIDs are in `set` (`1:*`, `42`), at most `max`.
    async fn objects(&mut self, set: &str, max: usize) -> Result<Vec<RemoteObject>, SourceError> {
        if self.exists == 0 {
            return Ok(Vec::new());
        }
        let uid_validity = self.uid_validity;
        timed(COMMAND_TIMEOUT, "cannot list", async {
            let mut fetches = self
                .session
                .uid_fetch(set, "(UID RFC822.SIZE ENVELOPE)")
                .await
                .map_err(service("cannot list"))?;
            let mut found = Vec::new();
            while let Some(f) = fetches.try_next().await.map_err(service("cannot list"))? {
                let Some(uid) = f.uid else { continue };
                let subject = f
                    .envelope()
                    .and_then(|e| e.subject.as_deref())
                    .map(decoded_subject);
                found.push(RemoteObject {
                    path: ingest_unpack::mailbox_member_name(u64::from(uid), subject.as_deref()),
                    size: u64::from(f.size.unwrap_or(0)),
                    stamp: change_stamp(
                        (u64::from(uid_validity) << 32) | u64::from(uid),
                        Some("imap"),
                    ),
                });
                if found.len() >= max {
                    break;
                }
            }
            Ok(found)
        })
        .await
    }

    /// Every message of the mailbox, handed to `found` in UID order.
    pub(super) async fn list(&mut self) -> Result<Vec<RemoteObject>, SourceError> {
        self.objects("1:*", MAX_LISTED_OBJECTS).await
    }

    /// The message at `path` (`0042 Subject.eml`), if the mailbox still holds it.
    pub(super) async fn stat(&mut self, path: &str) -> Result<Option<RemoteObject>, SourceError> {
        let Some(uid) = uid_of(path) else {
            return Ok(None);
        };
        let found = self.objects(&uid.to_string(), 1).await?;
        Ok(found.into_iter().find(|o| o.path == path))
    }

    /// The mailbox's messages as one folder's entries.
    pub(super) async fn folder(&mut self) -> Result<FolderListing, SourceError> {
        let objects = self.objects("1:*", MAX_BROWSED_ENTRIES + 1).await?;
        let truncated = objects.len() > MAX_BROWSED_ENTRIES;
        let mut entries: Vec<FolderEntry> = objects
            .into_iter()
            .take(MAX_BROWSED_ENTRIES)
            .map(|o| FolderEntry {
                name: o.path.clone(),
                path: o.path,
                folder: false,
                size: o.size,
                stamp: o.stamp,
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(FolderListing {
            entries,
            truncated,
            long_paths: 0,
        })
    }

    /// Fetch the message at `path` into `to`, at most `max` bytes.
    pub(super) async fn download(
        &mut self,
        path: &str,
        size: u64,
        max: u64,
        to: &Path,
    ) -> Result<u64, SourceError> {
        let max = max.min(MAX_MESSAGE_BYTES);
        if size > max {
            return Err(SourceError::TooLarge { size, max });
        }
        let uid = uid_of(path).ok_or_else(|| {
            SourceError::Service(format!("{path}: not a message of this mailbox"))
        })?;
        timed(COMMAND_TIMEOUT, "cannot download", async {
            let mut fetches = self
                .session
                .uid_fetch(uid.to_string(), "BODY.PEEK[]")
                .await
                .map_err(service("cannot download"))?;
            let mut written = None;
            while let Some(f) = fetches
                .try_next()
                .await
                .map_err(service("cannot download"))?
            {
                if f.uid != Some(uid) {
                    continue;
                }
                let body = f.body().unwrap_or_default();
                if body.len() as u64 > max {
                    return Err(SourceError::TooLarge {
                        size: body.len() as u64,
                        max,
                    });
                }
                let mut file = crate::perms::create_file(to)
                    .map_err(|e| SourceError::Spool(std::io::Error::other(e.to_string())))?;
                file.write_all(body)?;
                file.sync_data()?;
                written = Some(body.len() as u64);
            }
            written.ok_or_else(|| {
                SourceError::Service(format!("cannot download {path}: expunged meanwhile"))
            })
        })
        .await
    }
}

/// The UID a message's name starts with.
fn uid_of(path: &str) -> Option<u32> {
    let digits: String = path.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|&u: &u32| u > 0)
}

/// An ENVELOPE subject (raw, maybe MIME encoded words) as text.
fn decoded_subject(raw: &[u8]) -> String {
    let mut header = b"Subject: ".to_vec();
    header.extend(raw.iter().take(4096).filter(|&&b| b != b'\r' && b != b'\n'));
    header.extend_from_slice(b"\r\n\r\n");
    mail_parser::MessageParser::default()
        .parse_headers(&header)
        .and_then(|m| m.subject().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(raw).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_named_by_uid_and_subject_and_found_by_its_uid() {
        assert_eq!(uid_of("0042 Budget.eml"), Some(42));
        assert_eq!(uid_of("7.eml"), Some(7));
        assert_eq!(uid_of("Budget.eml"), None);
        assert_eq!(uid_of("0000.eml"), None);
        assert_eq!(decoded_subject(b"=?utf-8?q?Gr=C3=BC=C3=9Fe?="), "Grüße");
        assert_eq!(decoded_subject(b"Plain subject"), "Plain subject");
    }

    #[test]
    fn a_mailbox_path_is_percent_decoded_and_sent_in_modified_utf7() {
        assert_eq!(mailbox_name("").unwrap(), "INBOX");
        assert_eq!(mailbox_name("Archive/2026").unwrap(), "Archive/2026");
        assert_eq!(mailbox_name("Sent%20Items").unwrap(), "Sent Items");
        assert_eq!(mailbox_name("Entw%C3%BCrfe").unwrap(), "Entw&APw-rfe");
        assert_eq!(mailbox_name("Q%26A").unwrap(), "Q&-A");
        assert_eq!(
            mailbox_name(
                "%D0%9E%D1%82%D0%BF%D1%80%D0%B0%D0%B2%D0%BB%D0%B5%D0%BD%D0%BD%D1%8B%D0%B5"
            )
            .unwrap(),
            "&BB4EQgQ,BEAEMAQyBDsENQQ9BD0ESwQ1-"
        );
        assert!(mailbox_name("%FF%FE").is_err());
        assert!(mailbox_name("a%0Ab").is_err());
    }
}
