//! The mail walkers. A message is a container: its first member, `message.txt`, holds who
//! wrote to whom and when (the headers that matter) and the body (plain text preferred, HTML
//! converted, by `mail-parser`); every attachment follows as a member under its own name
//! (inline images too, nested messages as `.eml` members walked in turn). What the headers
//! say also becomes the message's line in the ledger (`mail: from …; subject …`), and so its
//! card.
//!
//! - `.eml` (MIME): parsed by `mail-parser` from memory, after the file-size limit and a
//!   count of MIME boundary lines that bounds the parts before any is parsed;
//! - `.mbox`: split here, streaming, on `From ` lines (mboxrd `>From ` unescaped), with no
//!   message read past the file-size limit (`mail-parser`'s own iterator buffers a message
//!   whole, however long); each message is a member `NNNN subject.eml`;
//! - `.msg` (Outlook): a compound file (`cfb`) of MAPI property streams; attachments are
//!   their data streams, an attached Outlook message is walked as a nested container.
//!
//! Every member is charged to the tree's budget like an archive's, under the same names for
//! the limits.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use extractors::{Detected, FileKind, Locator, TextKind};
use mail_parser::{Address, MessageParser, MimeHeaders};

use super::{read_at_most, Ancestors, Leaf, Limit, Source, Unpacker};

/// The member holding a message's headers and body.
pub const MESSAGE_TEXT: &str = "message.txt";
/// Characters of one header value kept (a subject, one address list).
const MAX_VALUE_CHARS: usize = 300;
/// Addresses of one list named; the rest are counted.
const MAX_ADDRESSES: usize = 20;
/// Characters of a subject kept in a member name.
const MAX_NAME_SUBJECT_CHARS: usize = 60;

/// What a mail walker found: its direct members and the message's facts for its line.
pub type MailWalked = Result<(u64, Option<String>), String>;

/// The headers of a message that say what it is, bounded.
#[derive(Debug, Default)]
pub(super) struct MailHead {
    pub(super) subject: Option<String>,
    pub(super) from: Option<String>,
    pub(super) to: Option<String>,
    pub(super) cc: Option<String>,
    pub(super) date: Option<String>,
    pub(super) message_id: Option<String>,
    pub(super) in_reply_to: Option<String>,
    pub(super) thread: Option<String>,
}

impl MailHead {
    fn fields(&self) -> [(&'static str, &Option<String>); 8] {
        [
            ("Subject", &self.subject),
            ("From", &self.from),
            ("To", &self.to),
            ("Cc", &self.cc),
            ("Date", &self.date),
            ("Message-ID", &self.message_id),
            ("In-Reply-To", &self.in_reply_to),
            ("Thread", &self.thread),
        ]
    }

    /// The ledger line's facts: `from …; to …; subject "…"; date …`.
    fn summary(&self, attachments: usize) -> String {
        let mut parts: Vec<String> = self
            .fields()
            .iter()
            .filter_map(|(name, value)| {
                let value = value.as_deref()?;
                Some(match *name {
                    "Subject" => format!("subject \"{value}\""),
                    other => format!("{} {value}", other.to_ascii_lowercase()),
                })
            })
            .collect();
        let plural = if attachments == 1 { "" } else { "s" };
        parts.push(format!("{attachments} attachment{plural}"));
        format!("mail: {}", parts.join("; "))
    }

    /// `message.txt`: the headers as lines, the attachments' names, a blank line, the body.
    fn text(&self, attachments: &[String], body: &str) -> Vec<u8> {
        let mut out = String::new();
        for (name, value) in self.fields() {
            if let Some(value) = value {
                out.push_str(&format!("{name}: {value}\n"));
            }
        }
        if !attachments.is_empty() {
            out.push_str(&format!("Attachments: {}\n", attachments.join(", ")));
        }
        out.push('\n');
        out.push_str(body);
        out.into_bytes()
    }
}

/// `value` on one line, at most [`MAX_VALUE_CHARS`] characters (`…` says it was cut).
pub(super) fn bounded(value: &str) -> Option<String> {
    let one_line: String = value
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let trimmed = one_line.split_whitespace().collect::<Vec<_>>().join(" ");
    if trimmed.is_empty() {
        return None;
    }
    if trimmed.chars().count() <= MAX_VALUE_CHARS {
        return Some(trimmed);
    }
    let mut cut: String = trimmed.chars().take(MAX_VALUE_CHARS).collect();
    cut.push('…');
    Some(cut)
}

/// An address list as `Name <addr>, …`, the first [`MAX_ADDRESSES`] named.
fn addresses(list: Option<&Address<'_>>) -> Option<String> {
    let list = list?;
    let mut shown = Vec::new();
    let mut total = 0usize;
    for addr in list.iter() {
        total += 1;
        if shown.len() < MAX_ADDRESSES {
            shown.push(match (addr.name(), addr.address()) {
                (Some(name), Some(address)) => format!("{name} <{address}>"),
                (Some(name), None) => name.to_string(),
                (None, Some(address)) => address.to_string(),
                (None, None) => continue,
            });
        }
    }
    if total > shown.len() && !shown.is_empty() {
        shown.push(format!("and {} more", total - shown.len()));
    }
    bounded(&shown.join(", "))
}

/// A message's member name in a mailbox: its position and subject, `0007 Budget 2025.eml`.
pub fn mailbox_member_name(position: u64, subject: Option<&str>) -> String {
    let subject = subject.map(name_part).unwrap_or_default();
    if subject.is_empty() {
        format!("{position:04}.eml")
    } else {
        format!("{position:04} {subject}.eml")
    }
}

/// A subject as part of a member name: one line, no `/` (a name, not folders), at most
/// [`MAX_NAME_SUBJECT_CHARS`] characters.
pub(super) fn name_part(subject: &str) -> String {
    let cleaned: String = subject
        .chars()
        .map(|c| match c {
            '/' | '\\' => '-',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    let words = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    words
        .chars()
        .take(MAX_NAME_SUBJECT_CHARS)
        .collect::<String>()
}

/// An attachment's name: its own, or `part-N` with the extension its type suggests.
fn attachment_name(given: Option<&str>, position: usize, mime: Option<(&str, &str)>) -> String {
    if let Some(name) = given.map(str::trim).filter(|n| !n.is_empty()) {
        return name.to_string();
    }
    let ext = match mime {
        Some((t, s)) => extension_of(&t.to_ascii_lowercase(), &s.to_ascii_lowercase()),
        None => "bin",
    };
    format!("part-{position}.{ext}")
}

fn extension_of(ctype: &str, subtype: &str) -> &'static str {
    match (ctype, subtype) {
        ("message", "rfc822" | "global") => "eml",
        ("text", "html") => "html",
        ("text", "csv") => "csv",
        ("text", "markdown") => "md",
        ("text", _) => "txt",
        ("image", "png") => "png",
        ("image", "jpeg" | "jpg") => "jpg",
        ("image", "gif") => "gif",
        ("image", "webp") => "webp",
        ("image", "tiff") => "tif",
        ("application", "pdf") => "pdf",
        ("application", "zip") => "zip",
        ("application", "gzip") => "gz",
        ("application", "json") => "json",
        ("application", "xml") => "xml",
        _ => "bin",
    }
}

/// At most this many `message/*` parts in one mail, however they nest. `mail-parser` builds
/// a message/rfc822 part without boundary lines as a message *inside* the part before it, so
/// one such header per line makes a tree as deep as the mail is long; its parser walks that
/// iteratively, but the tree costs memory per level and every walk of it (ours, a `Drop`) must
/// be iterative too ([`FlatDrop`]). A real mail forwards a handful; a digest a few hundred.
pub const MAX_NESTED_MESSAGES: u64 = 1_000;

/// What bounds a MIME message's parts, from a cheap scan of its bytes before any parsing: the
/// lines that can be boundaries (`--…`: every multipart part needs one) and the `message/`
/// media types (a message/rfc822 or message/global part, which nests without a boundary line).
/// Both over-count (a body line starting with `--`, the words in a body), never under-count:
/// a `multipart/digest`'s parts are messages without saying so, but each has a boundary line.
pub fn mime_parts_bound(raw: &[u8]) -> (u64, u64) {
    let boundary_lines = raw
        .split(|&b| b == b'\n')
        .filter(|line| line.starts_with(b"--"))
        .count() as u64;
    let nested = raw
        .windows(MESSAGE_TYPE.len())
        .filter(|w| w.eq_ignore_ascii_case(MESSAGE_TYPE))
        .count() as u64;
    (boundary_lines, nested)
}

const MESSAGE_TYPE: &[u8] = b"message/";

/// A parsed message dropped without recursion. `mail-parser`'s `Message` holds a nested
/// message inside its part, so the derived `Drop` recurses once per level: a mail of 60 000
/// nested messages (1.8 MB) overflowed the walk thread's stack and took the process down.
/// Dropping takes every nested message out of its part first and drops them one by one.
pub struct FlatDrop<'x>(pub mail_parser::Message<'x>);

impl Drop for FlatDrop<'_> {
    fn drop(&mut self) {
        fn take_nested<'x>(
            message: &mut mail_parser::Message<'x>,
            stack: &mut Vec<mail_parser::Message<'x>>,
        ) {
            for part in &mut message.parts {
                if matches!(part.body, mail_parser::PartType::Message(_)) {
                    if let mail_parser::PartType::Message(inner) = std::mem::take(&mut part.body) {
                        stack.push(inner);
                    }
                }
            }
        }
        let mut stack = Vec::new();
        take_nested(&mut self.0, &mut stack);
        while let Some(mut message) = stack.pop() {
            take_nested(&mut message, &mut stack);
            drop(message);
        }
    }
}

/// One member a mail walker hands on: its name and what it holds.
pub(super) struct MailMember {
    pub(super) name: String,
    pub(super) body: MemberBody,
}

/// What a mail's member holds.
pub(super) enum MemberBody {
    Bytes(Vec<u8>),
    /// Not read, and why (a limit's name starts it).
    Refused(String),
    /// An Outlook message stored inside the same compound file, at this storage.
    Embedded(PathBuf),
}

/// Walks an embedded message (a [`MemberBody::Embedded`]) at its locator.
pub(super) type EmbeddedWalk<'w> =
    dyn FnMut(&Path, &Locator, &mut Ancestors, &mut dyn FnMut(Leaf)) + 'w;

impl Unpacker<'_> {
    /// The whole of a mail's bytes, within the file-size limit.
    fn mail_bytes<'s>(&self, source: &'s Source) -> Result<Cow<'s, [u8]>, String> {
        let limit = self.limits.max_file_bytes;
        let bytes = match source {
            Source::Memory(b) => Cow::Borrowed(b.as_slice()),
            Source::Disk(_) => {
                let reader = source.open().map_err(|e| format!("cannot read: {e}"))?;
                Cow::Owned(
                    read_at_most(reader, limit + 1).map_err(|e| format!("cannot read: {e}"))?,
                )
            }
        };
        if bytes.len() as u64 > limit {
            return Err(format!("limit: {}", Limit::FileSize.name()));
        }
        Ok(bytes)
    }

    /// A MIME message (`.eml`): `message.txt`, then every attachment.
    pub(super) fn eml(
        &self,
        source: &Source,
        locator: &Locator,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) -> MailWalked {
        let raw = self.mail_bytes(source)?;
        // Parts are bounded before parsing (see `mime_parts_bound`): a part costs the parser
        // memory whether or not it is ever a member, and nested messages are a tree.
        let (boundary_lines, nested) = mime_parts_bound(&raw);
        let max_lines = self.limits.max_files.saturating_mul(2).saturating_add(16);
        if boundary_lines > max_lines {
            return Err(format!(
                "limit: {} ({boundary_lines} MIME boundary lines; at most {max_lines})",
                Limit::FileCount.name()
            ));
        }
        if nested > MAX_NESTED_MESSAGES {
            return Err(format!(
                "limit: {} ({nested} message/* parts, each a message inside the one before \
                 or beside it; at most {MAX_NESTED_MESSAGES})",
                Limit::Depth.name()
            ));
        }
        let parser = MessageParser::default();
        let message = FlatDrop(
            parser
                .parse(raw.as_ref())
                .ok_or_else(|| "corrupt mail: no message headers".to_string())?,
        );
        let message = &message.0;
        let head = MailHead {
            subject: message.subject().and_then(bounded),
            from: addresses(message.from()),
            to: addresses(message.to()),
            cc: addresses(message.cc()),
            date: message.date().map(|d| d.to_rfc3339()),
            message_id: message.message_id().and_then(bounded),
            in_reply_to: message.in_reply_to().as_text().and_then(bounded),
            thread: message.thread_name().and_then(bounded),
        };
        let name_of = |(i, part): (usize, &mail_parser::MessagePart<'_>)| {
            let mime = part
                .content_type()
                .map(|ct| (ct.ctype(), ct.subtype().unwrap_or("")));
            let given = part
                .attachment_name()
                .map(str::to_string)
                .or_else(|| {
                    let nested = part.message()?;
                    Some(format!("{}.eml", name_part(nested.subject()?)))
                })
                .filter(|n| n != ".eml");
            attachment_name(given.as_deref(), i + 1, mime)
        };
        let names: Vec<String> = message.attachments().enumerate().map(name_of).collect();
        // One attachment's bytes copied at a time, as it is reported.
        let members = message
            .attachments()
            .zip(names.clone())
            .map(|(part, name)| MailMember {
                name,
                body: MemberBody::Bytes(part.contents().to_vec()),
            });
        let mut body = String::new();
        for i in 0..message.text_body_count() {
            if let Some(text) = message.body_text(i) {
                if !body.is_empty() {
                    body.push_str("\n\n");
                }
                body.push_str(&text);
            }
        }
        self.mail_members(
            head,
            body,
            names,
            members,
            locator,
            ancestors,
            sink,
            &mut |_, at, _, sink| {
                sink(Leaf::Failed {
                    locator: at.clone(),
                    reason: "an embedded Outlook message outside a .msg".into(),
                })
            },
        )
    }

    /// Report `message.txt` and the attachments of a message, in that order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn mail_members(
        &self,
        head: MailHead,
        body: String,
        names: Vec<String>,
        attachments: impl Iterator<Item = MailMember>,
        locator: &Locator,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
        embedded: &mut EmbeddedWalk<'_>,
    ) -> MailWalked {
        let summary = head.summary(names.len());
        // Our own rendering, plain text whatever its header lines look like: never detected.
        self.take_member(0)?;
        let at = locator.member(MESSAGE_TEXT);
        match self.charge(head.text(&names, &body)) {
            Ok(bytes) => sink(Leaf::File {
                locator: at,
                bytes,
                detected: Detected {
                    kind: FileKind::Text(TextKind::Plain),
                    mime: "text/plain".into(),
                },
            }),
            Err(reason) => self.member_done(at, Err(reason), ancestors, sink),
        }
        drop(body);
        let mut seen: HashSet<String> = HashSet::from([MESSAGE_TEXT.to_string()]);
        let mut count = 1u64;
        for member in attachments {
            self.take_member(count)?;
            count += 1;
            let (name, refused) = self.member_name(member.name);
            let at = locator.member(name.clone());
            if !seen.insert(name) {
                sink(Leaf::Shadowed {
                    locator: at,
                    reason: format!(
                        "duplicate name: part {count} has the same name as an earlier part"
                    ),
                });
                continue;
            }
            if let Some(reason) = refused {
                sink(Leaf::Skipped {
                    locator: at,
                    reason,
                });
                continue;
            }
            match member.body {
                MemberBody::Bytes(b) => {
                    let read = self.charge(b);
                    self.member_done(at, read, ancestors, sink);
                }
                MemberBody::Refused(reason) => self.member_done(at, Err(reason), ancestors, sink),
                MemberBody::Embedded(path) => embedded(&path, &at, ancestors, sink),
            }
        }
        Ok((count, Some(summary)))
    }

    /// A mailbox (`.mbox`): every message, split on its `From ` line, as a member.
    pub(super) fn mbox(
        &self,
        source: &Source,
        locator: &Locator,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) -> MailWalked {
        let reader = source.open().map_err(|e| format!("cannot read: {e}"))?;
        let mut split = MboxSplit::new(BufReader::new(reader), self.limits.max_file_bytes);
        let mut count = 0u64;
        while let Some(message) = split
            .next_message()
            .map_err(|e| format!("cannot read: {e}"))?
        {
            self.take_member(count)?;
            count += 1;
            let read = match message {
                Ok(bytes) => {
                    let subject = subject_of(&bytes);
                    let name = mailbox_member_name(count, subject.as_deref());
                    Ok((name, bytes))
                }
                Err(reason) => Err((mailbox_member_name(count, None), reason)),
            };
            match read {
                Ok((name, bytes)) => {
                    let (name, refused) = self.member_name(name);
                    let at = locator.member(name);
                    if let Some(reason) = refused {
                        sink(Leaf::Skipped {
                            locator: at,
                            reason,
                        });
                        continue;
                    }
                    let read = self.charge(bytes);
                    self.member_done(at, read, ancestors, sink);
                }
                Err((name, reason)) => sink(Leaf::Skipped {
                    locator: locator.member(name),
                    reason,
                }),
            }
        }
        let plural = if count == 1 { "" } else { "s" };
        Ok((count, Some(format!("mailbox: {count} message{plural}"))))
    }
}

/// A message's subject, read from its header block only.
fn subject_of(message: &[u8]) -> Option<String> {
    let end = message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .or_else(|| message.windows(2).position(|w| w == b"\n\n"))
        .map_or(message.len(), |at| at + 2);
    let headers = message.get(..end.min(64 * 1024))?;
    let parsed = MessageParser::new()
        .with_minimal_headers()
        .parse_headers(headers)?;
    parsed.subject().and_then(bounded)
}

/// Splits an mbox into messages as it reads: a line starting `From ` begins the next one;
/// `>From ` (any number of `>`) loses one `>` (mboxrd). A message longer than `max` bytes is
/// read past, not kept, and reported by its position.
struct MboxSplit<R> {
    reader: R,
    max: u64,
    /// The `From ` line that began the message to read next was consumed.
    started: bool,
    done: bool,
    /// The last piece read ended a line (a line longer than `max` comes in pieces, and only
    /// a line's start can begin a message).
    at_line_start: bool,
}

impl<R: BufRead> MboxSplit<R> {
    fn new(reader: R, max: u64) -> Self {
        MboxSplit {
            reader,
            max,
            started: false,
            done: false,
            at_line_start: true,
        }
    }

    /// The next message: its bytes, or (`Err`) why it was not kept. `None` at the end.
    fn next_message(&mut self) -> std::io::Result<Option<Result<Vec<u8>, String>>> {
        if self.done {
            return Ok(None);
        }
        let mut message = Vec::new();
        let mut too_long = false;
        let mut line = Vec::new();
        loop {
            line.clear();
            // A line is read at most `max + 1` bytes at a time: a file without newlines
            // never sits in memory whole.
            let n = (&mut self.reader)
                .take(self.max.saturating_add(1))
                .read_until(b'\n', &mut line)?;
            if n == 0 {
                self.done = true;
                break;
            }
            let line_start = std::mem::replace(&mut self.at_line_start, line.ends_with(b"\n"));
            if line_start && line.starts_with(b"From ") {
                if self.started {
                    break;
                }
                self.started = true;
                continue;
            }
            if !self.started {
                // Text before the first `From ` line belongs to no message.
                continue;
            }
            if too_long {
                continue;
            }
            let unescaped = match line.iter().position(|&b| b != b'>') {
                Some(gt)
                    if line_start
                        && gt > 0
                        && line.get(gt..).is_some_and(|l| l.starts_with(b"From ")) =>
                {
                    line.get(1..).unwrap_or_default()
                }
                _ => line.as_slice(),
            };
            if message.len() as u64 + unescaped.len() as u64 > self.max {
                too_long = true;
                message = Vec::new();
                continue;
            }
            message.extend_from_slice(unescaped);
        }
        if !self.started {
            return Ok(None);
        }
        if too_long {
            return Ok(Some(Err(format!("limit: {}", Limit::FileSize.name()))));
        }
        // The blank line before the next `From ` line separates messages: it is the
        // format's, not the message's (an IMAP server sends the message without it).
        if message.ends_with(b"\r\n\r\n") {
            message.truncate(message.len() - 2);
        } else if message.ends_with(b"\n\n") {
            message.truncate(message.len() - 1);
        }
        Ok(Some(Ok(message)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{assert_locators, collect};
    use crate::zip_of;
    use crate::Limits;

    fn eml(subject: &str, attachments: &[(&str, &str, &[u8])]) -> Vec<u8> {
        use base64::Engine;
        let mut m = format!(
            "From: Alice Example <alice@example.org>\r\nTo: bob@example.org\r\nSubject: {subject}\r\nDate: Mon, 2 Mar 2026 10:00:00 +0000\r\nMessage-ID: <{}@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello Bob, the figures are attached.\r\n",
            subject.replace(' ', "-")
        );
        for (name, mime, data) in attachments {
            let encoded = base64::engine::general_purpose::STANDARD.encode(data);
            m.push_str(&format!(
                "--b1\r\nContent-Type: {mime}; name=\"{name}\"\r\nContent-Disposition: attachment; filename=\"{name}\"\r\nContent-Transfer-Encoding: base64\r\n\r\n{encoded}\r\n"
            ));
        }
        m.push_str("--b1--\r\n");
        m.into_bytes()
    }

    #[test]
    fn a_message_holds_its_text_and_its_attachments_recursively() {
        let zip = zip_of(&[("inner.txt", b"zipped words")]);
        let mail = eml(
            "Quarterly figures",
            &[
                ("notes.txt", "text/plain", b"attached notes"),
                ("pack.zip", "application/zip", &zip),
            ],
        );
        let got = collect(&Limits::default(), "m.eml", mail);
        assert_locators(
            &got,
            &[
                "m.eml!/message.txt",
                "m.eml!/notes.txt",
                "m.eml!/pack.zip!/inner.txt",
                "m.eml!/pack.zip",
                "m.eml",
            ],
        );
        let text = &got[0].1;
        assert!(text.starts_with("Subject: Quarterly figures\nFrom: Alice Example <alice@example.org>\nTo: bob@example.org\nDate: 2026-03-02T10:00:00Z\nMessage-ID: Quarterly-figures@example.org\n"), "{text}");
        assert!(
            text.contains("Attachments: notes.txt, pack.zip\n\nHello Bob"),
            "{text}"
        );
        assert_eq!(got[1].1, "attached notes");
        assert_eq!(got[2].1, "zipped words");
        assert_eq!(got[4].1, "archive: 3");
    }

    #[test]
    fn a_nested_message_is_walked_and_an_html_body_is_converted() {
        let inner = b"From: carol@example.org\r\nSubject: Original offer\r\nContent-Type: text/html\r\n\r\n<html><body><p>The <b>offer</b> stands.</p></body></html>\r\n";
        let outer = format!(
            "From: dave@example.org\r\nSubject: Fwd: offer\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"x\"\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nSee below.\r\n--x\r\nContent-Type: message/rfc822\r\n\r\n{}\r\n--x--\r\n",
            String::from_utf8_lossy(inner)
        );
        let got = collect(&Limits::default(), "f.eml", outer.into_bytes());
        assert_locators(
            &got,
            &[
                "f.eml!/message.txt",
                "f.eml!/Original offer.eml!/message.txt",
                "f.eml!/Original offer.eml",
                "f.eml",
            ],
        );
        assert!(got[1].1.contains("The offer stands."), "{}", got[1].1);
        assert!(!got[1].1.contains("<b>"), "{}", got[1].1);
    }

    #[test]
    fn a_mailbox_holds_its_messages_named_by_position_and_subject() {
        let mut mbox = Vec::new();
        for (i, subject) in ["First / hello", "Second"].iter().enumerate() {
            mbox.extend_from_slice(b"From alice@example.org Mon Jan  1 00:00:00 2024\n");
            mbox.extend_from_slice(
                format!("From: alice@example.org\nSubject: {subject}\n\nbody {i}\n>From here on, quoted\n\n")
                    .as_bytes(),
            );
        }
        let got = collect(&Limits::default(), "box.mbox", mbox);
        assert_locators(
            &got,
            &[
                "box.mbox!/0001 First - hello.eml!/message.txt",
                "box.mbox!/0001 First - hello.eml",
                "box.mbox!/0002 Second.eml!/message.txt",
                "box.mbox!/0002 Second.eml",
                "box.mbox",
            ],
        );
        assert!(
            got[0].1.contains("body 0\nFrom here on, quoted"),
            "{}",
            got[0].1
        );
        assert_eq!(got[4].1, "archive: 2");
    }

    #[test]
    fn hostile_mail_is_bounded() {
        // A MIME bomb: more boundary lines than parts allowed, refused before parsing.
        let limits = Limits {
            max_files: 10,
            ..Limits::default()
        };
        let mut bomb = b"From: a@x.org\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n".to_vec();
        for _ in 0..100 {
            bomb.extend_from_slice(b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n");
        }
        let got = collect(&limits, "bomb.eml", bomb);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0]
                .1
                .starts_with("skipped: limit: file-count (100 MIME boundary lines"),
            "{got:?}"
        );

        // Deep multipart nesting: parsed without a stack overflow, its parts bounded.
        let mut deep = b"From: a@x.org\r\nMIME-Version: 1.0\r\n".to_vec();
        for d in 0..5_000 {
            deep.extend_from_slice(
                format!("Content-Type: multipart/mixed; boundary=\"b{d}\"\r\n\r\n--b{d}\r\n")
                    .as_bytes(),
            );
        }
        deep.extend_from_slice(b"Content-Type: text/plain\r\n\r\ndeepest\r\n");
        let got = collect(&Limits::default(), "deep.eml", deep);
        assert_eq!(got.last().unwrap().0, "deep.eml", "{got:?}");

        // A huge header and bad encodings: a bounded, readable message.txt.
        let mut huge = b"From: a@x.org\r\nSubject: =?utf-8?B?!!!notbase64?= ".to_vec();
        huge.extend(std::iter::repeat_n(b'x', 2 << 20));
        huge.extend_from_slice(b"\r\nTo: \xff\xfe bad bytes\r\nContent-Type: text/plain; charset=no-such-charset\r\n\r\n\xff\xfe body\r\n");
        let got = collect(&Limits::default(), "huge.eml", huge);
        assert_eq!(got[0].0, "huge.eml!/message.txt", "{got:?}");
        let subject = got[0].1.lines().next().unwrap();
        assert!(
            subject.chars().count() < MAX_VALUE_CHARS + 20,
            "{}",
            subject.len()
        );

        // An mbox message past the file-size limit is read past; its neighbours stay.
        let limits = Limits {
            max_file_bytes: 1024,
            ..Limits::default()
        };
        let mut mbox = b"From a Mon Jan  1 00:00:00 2024\nFrom: a@x.org\nSubject: big\n\n".to_vec();
        mbox.extend(std::iter::repeat_n(b'y', 10_000));
        mbox.extend_from_slice(
            b"\nFrom b Mon Jan  1 00:00:00 2024\nFrom: b@x.org\nSubject: small\n\nok\n",
        );
        let got = collect(&limits, "b.mbox", mbox);
        assert_eq!(
            got[0],
            (
                "b.mbox!/0001.eml".into(),
                "skipped: limit: file-size".into()
            )
        );
        assert_eq!(got[1].0, "b.mbox!/0002 small.eml!/message.txt");
    }

    /// A message whose body is a message/rfc822 part, `levels` deep, without boundary lines
    /// (the crafted mail that took the service down: 60 000 levels in 1.8 MB).
    pub fn nested_mail(levels: usize) -> Vec<u8> {
        let mut m = b"From: a@x.org\r\nSubject: nest\r\n".to_vec();
        for _ in 0..levels {
            m.extend_from_slice(b"Content-Type: message/rfc822\r\n\r\n");
        }
        m.extend_from_slice(b"Subject: deepest\r\n\r\nthe bottom\r\n");
        m
    }

    #[test]
    fn a_deeply_nested_message_is_refused_before_parsing_and_dropped_flat_when_parsed() {
        // Refused by the scan, before a part is built, with the limit and the count.
        let got = collect(&Limits::default(), "nest.eml", nested_mail(60_000));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "nest.eml");
        assert!(
            got[0]
                .1
                .starts_with("skipped: limit: depth (60000 message/* parts"),
            "{got:?}"
        );
        // Parsed whole (the scan's bound lifted): the tree is 200 000 levels deep, and its
        // drop must not recurse. Without `FlatDrop` this overflows the stack and aborts the
        // test process (revert-checked), in a thread with a 2 MiB stack like the walk's.
        let raw = nested_mail(200_000);
        let depth = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let parsed = FlatDrop(MessageParser::default().parse(&raw).unwrap());
                let mut depth = 0;
                let mut at = &parsed.0;
                while let Some(inner) = at.parts.iter().find_map(|p| match &p.body {
                    mail_parser::PartType::Message(m) => Some(m),
                    _ => None,
                }) {
                    depth += 1;
                    at = inner;
                }
                depth
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(depth, 200_000);
        // Within the bound, the nested messages are members down to the depth limit.
        let got = collect(&Limits::default(), "few.eml", nested_mail(20));
        assert_eq!(got.last().unwrap().0, "few.eml", "{got:?}");
        assert!(
            got.iter()
                .any(|(l, r)| l.ends_with("!/message.txt") && r.contains("Subject")),
            "{got:?}"
        );
    }

    #[test]
    fn only_a_line_start_begins_a_mailbox_message() {
        // A line longer than the limit is read in pieces; a piece that happens to start with
        // `From ` is no message of its own.
        let limits = Limits {
            max_file_bytes: 16,
            ..Limits::default()
        };
        let mut mbox = b"From a Mon\nSubject: long\n\n".to_vec();
        // 17 bytes: one piece of `max + 1`, the next starting with `From `.
        mbox.extend(std::iter::repeat_n(b'y', 17));
        mbox.extend_from_slice(b"From fake here\nFrom b Mon\nSubject: b\n\nok\n");
        let got = collect(&limits, "l.mbox", mbox);
        assert_locators(
            &got,
            &[
                "l.mbox!/0001.eml",
                "l.mbox!/0002 b.eml!/message.txt",
                "l.mbox!/0002 b.eml",
                "l.mbox",
            ],
        );
    }

    #[test]
    fn member_names_are_bounded_and_never_empty() {
        assert_eq!(
            attachment_name(None, 3, Some(("image", "PNG"))),
            "part-3.png"
        );
        assert_eq!(attachment_name(Some("  "), 1, None), "part-1.bin");
        assert_eq!(mailbox_member_name(12, Some("a/b\tc")), "0012 a-b c.eml");
        assert_eq!(
            mailbox_member_name(1, Some(&"z".repeat(500)))
                .chars()
                .count(),
            5 + 60 + 4
        );
    }
}
