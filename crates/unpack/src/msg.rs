//! The Outlook message walker: a `.msg` is a compound file (read with `cfb`) whose streams
//! are MAPI properties (`__substg1.0_IIIITTTT`: property id, type). A message's head and body
//! come from its string properties, its date from the fixed-size property table; each
//! attachment storage (`__attach_version1.0_#N`) is a member (its data stream) or, when it
//! holds an Outlook message of its own (`…3701000D`), a nested container walked the same way,
//! under the depth limit. A compound file that does not open is one failed line.

use std::io::Read;
use std::path::{Path, PathBuf};

use cfb::CompoundFile;
use extractors::Locator;

use super::mail::{bounded, MailHead, MailMember, MailWalked, MemberBody};
use super::{read_at_most, Ancestors, Leaf, Limit, Source, Unpacker};

/// Bytes of one header property read (a subject, an address list).
const MAX_HEAD_PROPERTY: u64 = 64 * 1024;
/// Attachment storages looked at per message, at most (the member limit applies too).
const MAX_ATTACHMENTS: usize = 10_000;

/// MAPI string property ids.
const SUBJECT: u16 = 0x0037;
const CONVERSATION_TOPIC: u16 = 0x0070;
const SENDER_NAME: u16 = 0x0C1A;
const SENDER_SMTP: [u16; 3] = [0x5D01, 0x0C1F, 0x0065];
const DISPLAY_CC: u16 = 0x0E03;
const DISPLAY_TO: u16 = 0x0E04;
const BODY: u16 = 0x1000;
const HTML: u16 = 0x1013;
const MESSAGE_ID: u16 = 0x1035;
const IN_REPLY_TO: u16 = 0x1042;
const ATTACH_LONG_NAME: u16 = 0x3707;
const ATTACH_NAME: u16 = 0x3704;
const ATTACH_DATA: &str = "__substg1.0_37010102";
const ATTACH_MESSAGE: &str = "__substg1.0_3701000D";
/// PT_SYSTIME properties that date a message, in order of preference.
const DATES: [u16; 2] = [0x0039, 0x0E06];

type Compound<'s> = CompoundFile<Box<dyn super::ReadSeek + 's>>;

/// Whether a compound file is an Outlook message (its root has a MAPI property table).
pub(super) fn is_outlook_message(source: &Source) -> bool {
    let Ok(reader) = source.open() else {
        return false;
    };
    CompoundFile::open(reader).is_ok_and(|cf| {
        cf.is_stream("/__properties_version1.0")
            && (cf.is_stream("/__substg1.0_0037001F") || cf.is_stream("/__substg1.0_0037001E"))
    })
}

impl Unpacker<'_> {
    pub(super) fn msg(
        &self,
        source: &Source,
        locator: &Locator,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) -> MailWalked {
        let reader = source.open().map_err(|e| format!("cannot read: {e}"))?;
        let mut cf = CompoundFile::open(reader).map_err(|e| format!("corrupt msg: {e}"))?;
        self.msg_storage(&mut cf, Path::new("/"), true, locator, ancestors, sink)
    }

    /// Walk the message stored at `at` (the root, or an attachment's embedded message).
    fn msg_storage(
        &self,
        cf: &mut Compound<'_>,
        at: &Path,
        top: bool,
        locator: &Locator,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) -> MailWalked {
        let text = |cf: &mut Compound<'_>, id: u16| string_property(cf, at, id, MAX_HEAD_PROPERTY);
        let sender_name = text(cf, SENDER_NAME);
        let sender_smtp = SENDER_SMTP.iter().find_map(|&id| text(cf, id));
        let from = match (sender_name, sender_smtp) {
            (Some(n), Some(a)) if n != a => Some(format!("{n} <{a}>")),
            (n, a) => n.or(a),
        };
        let head = MailHead {
            subject: text(cf, SUBJECT).as_deref().and_then(bounded),
            from: from.as_deref().and_then(bounded),
            to: text(cf, DISPLAY_TO).as_deref().and_then(bounded),
            cc: text(cf, DISPLAY_CC).as_deref().and_then(bounded),
            date: date_property(cf, at, top),
            message_id: text(cf, MESSAGE_ID).as_deref().and_then(bounded),
            in_reply_to: text(cf, IN_REPLY_TO).as_deref().and_then(bounded),
            thread: text(cf, CONVERSATION_TOPIC).as_deref().and_then(bounded),
        };
        let max_body = self.limits.max_file_bytes;
        let body = match string_property(cf, at, BODY, max_body) {
            Some(plain) => plain,
            None => {
                let html = string_property(cf, at, HTML, max_body).or_else(|| {
                    let bytes = stream(cf, &at.join("__substg1.0_10130102"), max_body)?;
                    Some(String::from_utf8_lossy(&bytes).into_owned())
                });
                html.map(|h| mail_parser::decoders::html::html_to_text(&h))
                    .unwrap_or_default()
            }
        };
        let mut storages: Vec<PathBuf> = cf
            .read_storage(at)
            .map_err(|e| format!("corrupt msg: {e}"))?
            .filter(|e| e.is_storage() && e.name().starts_with("__attach_version1.0_#"))
            .take(MAX_ATTACHMENTS)
            .map(|e| e.path().to_path_buf())
            .collect();
        storages.sort();
        let mut attachments = Vec::new();
        for (i, storage) in storages.into_iter().enumerate() {
            let name = string_property(cf, &storage, ATTACH_LONG_NAME, MAX_HEAD_PROPERTY)
                .or_else(|| string_property(cf, &storage, ATTACH_NAME, MAX_HEAD_PROPERTY));
            let embedded = storage.join(ATTACH_MESSAGE);
            if cf.is_storage(&embedded) {
                let subject = string_property(cf, &embedded, SUBJECT, MAX_HEAD_PROPERTY);
                let name = name
                    .or_else(|| subject.map(|s| format!("{}.msg", super::mail::name_part(&s))))
                    .unwrap_or_else(|| format!("part-{}.msg", i + 1));
                attachments.push(MailMember {
                    name,
                    body: MemberBody::Embedded(embedded),
                });
                continue;
            }
            let body = match read_stream(cf, &storage.join(ATTACH_DATA), self) {
                Ok(bytes) => MemberBody::Bytes(bytes),
                Err(reason) => MemberBody::Refused(reason),
            };
            attachments.push(MailMember {
                name: name.unwrap_or_else(|| format!("part-{}.bin", i + 1)),
                body,
            });
        }
        let parent_hash = ancestors.last().map(|(h, _)| *h);
        let mut embedded = |path: &Path,
                            member: &Locator,
                            ancestors: &mut Ancestors,
                            sink: &mut dyn FnMut(Leaf)| {
            self.embedded_msg(cf, path, member, parent_hash, ancestors, sink)
        };
        let names = attachments.iter().map(|m| m.name.clone()).collect();
        self.mail_members(
            head,
            body,
            names,
            attachments.into_iter(),
            locator,
            ancestors,
            sink,
            &mut embedded,
        )
    }

    /// An Outlook message attached to another: a nested container under the depth limit,
    /// its hash that of its enclosing file's bytes and its place in it.
    fn embedded_msg(
        &self,
        cf: &mut Compound<'_>,
        at: &Path,
        locator: &Locator,
        parent_hash: Option<blake3::Hash>,
        ancestors: &mut Ancestors,
        sink: &mut dyn FnMut(Leaf),
    ) {
        if locator.depth() >= self.limits.max_depth {
            return sink(Leaf::Skipped {
                locator: locator.clone(),
                reason: format!("limit: {}", Limit::Depth.name()),
            });
        }
        let mut hasher = blake3::Hasher::new();
        hasher.update(parent_hash.as_ref().map_or(&[0u8; 32], |h| h.as_bytes()));
        hasher.update(at.to_string_lossy().as_bytes());
        let hash = hasher.finalize();
        ancestors.push((hash, locator.to_string()));
        let walked = self.msg_storage(cf, at, false, locator, ancestors, sink);
        ancestors.pop();
        sink(super::container_leaf(locator, walked, hash));
    }
}

/// A stream's bytes, at most `max` (`None`: absent, unreadable or longer).
fn stream(cf: &mut Compound<'_>, path: &Path, max: u64) -> Option<Vec<u8>> {
    let s = cf.open_stream(path).ok()?;
    let bytes = read_at_most(s, max + 1).ok()?;
    (bytes.len() as u64 <= max).then_some(bytes)
}

/// An attachment's data, charged to the tree's budget like any member's bytes.
fn read_stream(
    cf: &mut Compound<'_>,
    path: &Path,
    unpacker: &Unpacker<'_>,
) -> Result<Vec<u8>, String> {
    let mut s = cf
        .open_stream(path)
        .map_err(|e| format!("corrupt msg attachment: {e}"))?;
    if s.len() > unpacker.limits.max_file_bytes {
        return Err(format!("limit: {}", Limit::FileSize.name()));
    }
    let mut reader: &mut dyn Read = &mut s;
    unpacker.read_member(&mut reader)
}

/// A string property of the message at `at`: UTF-16 (`001F`) or 8-bit (`001E`), without its
/// terminating NULs; `None` when absent, empty or longer than `max` bytes.
fn string_property(cf: &mut Compound<'_>, at: &Path, id: u16, max: u64) -> Option<String> {
    let wide = at.join(format!("__substg1.0_{id:04X}001F"));
    let text = match stream(cf, &wide, max) {
        Some(bytes) => {
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .filter_map(|c| Some(u16::from_le_bytes(c.try_into().ok()?)))
                .collect();
            String::from_utf16_lossy(&units)
        }
        None => {
            let narrow = at.join(format!("__substg1.0_{id:04X}001E"));
            String::from_utf8_lossy(&stream(cf, &narrow, max)?).into_owned()
        }
    };
    let text = text.trim_end_matches('\0').to_string();
    (!text.trim().is_empty()).then_some(text)
}

/// The message's date from its property table (`__properties_version1.0`: a header of 32
/// bytes for the top message, 24 for an embedded one, then 16-byte entries: tag, flags,
/// value), as RFC 3339.
fn date_property(cf: &mut Compound<'_>, at: &Path, top: bool) -> Option<String> {
    const PT_SYSTIME: u32 = 0x0040;
    let table = stream(cf, &at.join("__properties_version1.0"), 1 << 20)?;
    let entries = table.get(if top { 32 } else { 24 }..)?;
    let mut found: Vec<(u16, u64)> = Vec::new();
    for entry in entries.chunks_exact(16) {
        let tag = u32::from_le_bytes(entry.get(..4)?.try_into().ok()?);
        let value = u64::from_le_bytes(entry.get(8..16)?.try_into().ok()?);
        if tag & 0xFFFF == PT_SYSTIME {
            found.push(((tag >> 16) as u16, value));
        }
    }
    let filetime = DATES
        .iter()
        .find_map(|id| found.iter().find(|(i, _)| i == id).map(|(_, v)| *v))?;
    // 100 ns ticks since 1601-01-01.
    let seconds = i64::try_from(filetime / 10_000_000).ok()? - 11_644_473_600;
    Some(mail_parser::DateTime::from_timestamp(seconds).to_rfc3339())
}

#[cfg(test)]
pub mod tests {
    use std::io::{Cursor, Write};

    use super::*;
    use crate::tests::{assert_locators, collect};
    use crate::Limits;

    fn put(cf: &mut CompoundFile<Cursor<Vec<u8>>>, path: &str, bytes: &[u8]) {
        cf.create_stream(path).unwrap().write_all(bytes).unwrap();
    }

    fn wide(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    /// An Outlook message as Outlook lays it out: string properties, a property table with
    /// the submit time, one attachment and an attached message.
    pub fn outlook_message(subject: &str, body: &str, attachment: (&str, &[u8])) -> Vec<u8> {
        let mut cf = CompoundFile::create(Cursor::new(Vec::new())).unwrap();
        put(&mut cf, "/__substg1.0_0037001F", &wide(subject));
        put(&mut cf, "/__substg1.0_0C1A001F", &wide("Erin Example"));
        put(&mut cf, "/__substg1.0_5D01001F", &wide("erin@example.org"));
        put(&mut cf, "/__substg1.0_0E04001F", &wide("Frank; Grace"));
        put(&mut cf, "/__substg1.0_1000001F", &wide(body));
        let mut table = vec![0u8; 32];
        table.extend_from_slice(&((0x0039u32 << 16) | 0x0040).to_le_bytes());
        table.extend_from_slice(&0u32.to_le_bytes());
        // 2026-03-02T10:00:00Z as FILETIME.
        let ft = (1_772_445_600u64 + 11_644_473_600) * 10_000_000;
        table.extend_from_slice(&ft.to_le_bytes());
        put(&mut cf, "/__properties_version1.0", &table);
        cf.create_storage("/__attach_version1.0_#00000000").unwrap();
        put(
            &mut cf,
            "/__attach_version1.0_#00000000/__substg1.0_3707001F",
            &wide(attachment.0),
        );
        put(
            &mut cf,
            "/__attach_version1.0_#00000000/__substg1.0_37010102",
            attachment.1,
        );
        cf.create_storage("/__attach_version1.0_#00000001").unwrap();
        cf.create_storage("/__attach_version1.0_#00000001/__substg1.0_3701000D")
            .unwrap();
        put(
            &mut cf,
            "/__attach_version1.0_#00000001/__substg1.0_3701000D/__substg1.0_0037001F",
            &wide("Earlier thread"),
        );
        put(
            &mut cf,
            "/__attach_version1.0_#00000001/__substg1.0_3701000D/__substg1.0_1000001F",
            &wide("the earlier words"),
        );
        cf.flush().unwrap();
        cf.into_inner().into_inner()
    }

    #[test]
    fn an_outlook_message_holds_its_text_attachments_and_attached_messages() {
        let msg = outlook_message(
            "Site visit",
            "See the plan attached.",
            ("plan.txt", b"floor plan"),
        );
        let got = collect(&Limits::default(), "visit.msg", msg);
        assert_locators(
            &got,
            &[
                "visit.msg!/message.txt",
                "visit.msg!/plan.txt",
                "visit.msg!/Earlier thread.msg!/message.txt",
                "visit.msg!/Earlier thread.msg",
                "visit.msg",
            ],
        );
        assert!(
            got[0].1.starts_with("Subject: Site visit\nFrom: Erin Example <erin@example.org>\nTo: Frank; Grace\nDate: 2026-03-02T10:00:00Z\n"),
            "{}",
            got[0].1
        );
        assert!(
            got[0].1.ends_with("\n\nSee the plan attached."),
            "{}",
            got[0].1
        );
        assert_eq!(got[1].1, "floor plan");
        assert!(got[2].1.contains("the earlier words"));
    }

    #[test]
    fn a_broken_compound_file_is_one_failed_line() {
        let mut msg = outlook_message("x", "y", ("a.txt", b"a"));
        // Break the directory: point the first directory sector past the end of the file.
        msg[48..52].copy_from_slice(&0x00FF_FFF0u32.to_le_bytes());
        let got = collect(&Limits::default(), "broken.msg", msg.clone());
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].1.starts_with("failed: corrupt msg"), "{got:?}");
        // Truncated.
        msg.truncate(700);
        let got = collect(&Limits::default(), "cut.msg", msg);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].1.starts_with("failed: corrupt msg"), "{got:?}");
    }
}
