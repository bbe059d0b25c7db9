//! The TAR walker (also for the inside of a .tar.gz), and [`TarGuard`], which caps the header
//! records the tar reader would otherwise buffer whole.

use std::collections::HashSet;
use std::io::{self, Read};

use extractors::{segment_from_bytes, Locator};

use super::{unnamed_as_ordinal, Ancestors, Leaf, Limit, Unpacker, Walked};

impl Unpacker<'_> {
    pub(super) fn tar(
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
            let (name, refused) = self.member_name(unnamed_as_ordinal(name, members));
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
            if let Some(reason) = refused {
                sink(skipped(reason));
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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::tests::collect;
    use crate::zip_of;
    use crate::Limits;

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
}
