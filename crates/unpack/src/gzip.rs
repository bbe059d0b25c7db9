//! The GZIP walker: every member of a multi-member stream as one file, or a .tar.gz/.tgz as
//! one tar container under the .gz segment.

use std::io::{Cursor, Read};

use extractors::{detect, segment_from_bytes, ContainerKind, FileKind, Locator, SNIFF_LEN};

use super::{read_at_most, Ancestors, Leaf, Source, Unpacker, Walked};

impl Unpacker<'_> {
    pub(super) fn gzip(
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
    use std::io::Write;

    use crate::tests::collect;
    use crate::Limits;

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
}
