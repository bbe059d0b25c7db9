//! The ZIP walker: the central directory entry by entry (entries sharing a name are all
//! seen), overlapping entries refused, and the office-package check that tells an OOXML/ODF
//! document from a plain archive.

use std::collections::{BTreeMap, HashSet};

use extractors::{segment_from_bytes, Detected, Locator};

use super::{read_at_most, unnamed_as_ordinal, Ancestors, Leaf, Source, Unpacker, Walked};

impl Unpacker<'_> {
    pub(super) fn zip(
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
            let (name, refused) = self.member_name(unnamed_as_ordinal(name, members));
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
            if let Some(reason) = refused {
                sink(skipped(reason));
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

/// An OOXML/ODF document that the first bytes did not reveal (its parts come in another
/// order than Office's), told by the central directory's part names or the `mimetype` member.
/// Looks at the first `max_parts` entries only, one at a time: the listing of a zip holding
/// a million names is never collected.
pub(super) fn office_package(source: &Source, max_parts: u64) -> Option<Detected> {
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

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write};

    use super::*;
    use crate::tests::collect;
    use crate::Limits;

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
}
