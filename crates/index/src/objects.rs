//! The object pack: every content object of one content, persisted beside its content index
//! (`content/<hash>.pack`) so that the agent's read tools answer from disk without parsing
//! the file again.
//!
//! ```text
//! "INGPACK1" | u64 LE: directory length D | D bytes: deflate(JSON [PackedObject]) | frames
//! ```
//!
//! Each object's text is its own deflate frame, addressed by the directory (offset, length),
//! so reading page 47 of a 1 000-page PDF reads the directory and that page's frames, not
//! the file. The directory holds fragments only (`page=47`), never the first-seen file's
//! locator or name: identical bytes in two scopes share a pack, and each scope sees its own
//! locators. ARCHITECTURE.md gives the figures behind this choice.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use extractors::{ContentObject, ContentType, FileContentIndex};
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"INGPACK1";

/// The largest directory a pack may declare (a guard against a corrupt length).
const MAX_DIRECTORY_BYTES: u64 = 256 * 1024 * 1024;

/// What the store stage writes for a new content: its content index and its object pack.
#[derive(Debug, Clone)]
pub struct ContentRecord {
    /// Structure and object summary (`content/<hash>.json`).
    pub index: FileContentIndex,
    /// The encoded pack (`content/<hash>.pack`), see [`pack`].
    pub pack: Vec<u8>,
}

/// One object in a pack's directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackedObject {
    /// Its type.
    #[serde(rename = "t")]
    pub content_type: ContentType,
    /// Its locator's fragment, without `#` (`page=47`, `sheet=Budget&rows=1-40`), or empty.
    #[serde(rename = "f", default)]
    pub fragment: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The section path (` › `-joined headings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slide: Option<u32>,
    /// Length of the text in chars (Unicode scalar values).
    #[serde(rename = "c")]
    pub chars: u64,
    /// Length of the text in bytes.
    #[serde(rename = "b")]
    pub bytes: u64,
    /// Where its frame starts, from the start of the frames.
    #[serde(rename = "o")]
    pub offset: u64,
    /// The frame's length (0 for an object without text).
    #[serde(rename = "l")]
    pub frame_len: u64,
    /// Format facts (dimensions, duration, …).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub meta: serde_json::Map<String, serde_json::Value>,
    /// The length of its positions frame (the JSON of its [`extractors::Positions`],
    /// deflated), right after its text frame; 0 without positions. Its own frame, so a read
    /// that does not ask for positions does not pay for them.
    #[serde(rename = "p", default, skip_serializing_if = "is_zero")]
    pub positions_len: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The largest positions frame inflated (a page of 10 000 lines is ~600 KB).
const MAX_POSITIONS_BYTES: u64 = 16 * 1024 * 1024;

fn deflate(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut e = DeflateEncoder::new(Vec::new(), Compression::fast());
    e.write_all(bytes)
        .and_then(|()| e.finish())
        .map_err(|e| Error::ObjectPack(format!("compressing: {e}")))
}

/// Encode `objects` (one file's, in document order) as a pack.
pub fn pack(objects: &[ContentObject]) -> Result<Vec<u8>> {
    let mut frames = Vec::new();
    let mut directory = Vec::with_capacity(objects.len());
    for o in objects {
        let frame = if o.data.is_empty() {
            Vec::new()
        } else {
            deflate(o.data.as_bytes())?
        };
        let positions = match &o.positions {
            Some(p) => deflate(
                &serde_json::to_vec(p)
                    .map_err(|e| Error::ObjectPack(format!("encoding positions: {e}")))?,
            )?,
            None => Vec::new(),
        };
        let ctx = &o.context_ref;
        directory.push(PackedObject {
            content_type: o.content_type,
            fragment: extractors::split_fragment(&ctx.location).1.to_string(),
            label: ctx.label.clone(),
            page: ctx.page_index,
            section: ctx.section_id.clone(),
            sheet: ctx.sheet_name.clone(),
            slide: ctx.slide_index,
            chars: o.data.chars().count() as u64,
            bytes: o.data.len() as u64,
            offset: frames.len() as u64,
            frame_len: frame.len() as u64,
            meta: o.metadata.clone(),
            positions_len: positions.len() as u64,
        });
        frames.extend_from_slice(&frame);
        frames.extend_from_slice(&positions);
    }
    let dir =
        serde_json::to_vec(&directory).map_err(|e| Error::ObjectPack(format!("encoding: {e}")))?;
    let dir = deflate(&dir)?;
    let mut out = Vec::with_capacity(16 + dir.len() + frames.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(dir.len() as u64).to_le_bytes());
    out.extend_from_slice(&dir);
    out.extend_from_slice(&frames);
    Ok(out)
}

/// An open pack: its directory read, its frames read on demand.
pub struct PackReader {
    file: File,
    frames_start: u64,
    /// The objects, in document order.
    pub objects: Vec<PackedObject>,
    /// Bytes read from the file so far (header, directory, frames).
    pub bytes_read: u64,
}

impl PackReader {
    /// Open the pack at `path` and read its directory.
    pub fn open(path: &Path) -> Result<Self> {
        let corrupt = |why: &str| Error::Catalog {
            path: path.to_path_buf(),
            reason: format!("object pack: {why}"),
        };
        let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut header = [0u8; 16];
        file.read_exact(&mut header)
            .map_err(|_| corrupt("no header"))?;
        let (magic, len) = header.split_at(8);
        if magic != MAGIC {
            return Err(corrupt("not a pack"));
        }
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(len);
        let dir_len = u64::from_le_bytes(len_bytes);
        if dir_len > MAX_DIRECTORY_BYTES {
            return Err(corrupt("directory too large"));
        }
        let dir = read_at_most(&mut file, dir_len).map_err(|e| Error::io(path, e))?;
        if dir.len() as u64 != dir_len {
            return Err(corrupt("truncated directory"));
        }
        let json = read_at_most(DeflateDecoder::new(dir.as_slice()), MAX_DIRECTORY_BYTES)
            .map_err(|e| corrupt(&e.to_string()))?;
        let objects: Vec<PackedObject> =
            serde_json::from_slice(&json).map_err(|e| corrupt(&e.to_string()))?;
        Ok(PackReader {
            file,
            frames_start: 16 + dir_len,
            objects,
            bytes_read: 16 + dir_len,
        })
    }

    /// The text of object `i` (empty for objects without text).
    pub fn text(&mut self, i: usize) -> Result<String> {
        let Some(o) = self.objects.get(i) else {
            return Ok(String::new());
        };
        if o.frame_len == 0 {
            return Ok(String::new());
        }
        let (offset, frame_len, bytes) = (o.offset, o.frame_len, o.bytes);
        let bad = |why: String| Error::ObjectPack(why);
        self.file
            .seek(SeekFrom::Start(self.frames_start + offset))
            .map_err(|e| bad(e.to_string()))?;
        let frame = read_at_most(&mut self.file, frame_len).map_err(|e| bad(e.to_string()))?;
        self.bytes_read += frame.len() as u64;
        let text = read_at_most(DeflateDecoder::new(frame.as_slice()), bytes)
            .map_err(|e| bad(e.to_string()))?;
        String::from_utf8(text).map_err(|e| bad(e.to_string()))
    }
}

impl PackReader {
    /// Where object `i` is on its page (`None` for objects without positions, and in packs
    /// written before positions were kept).
    pub fn positions(&mut self, i: usize) -> Result<Option<extractors::Positions>> {
        let Some(o) = self.objects.get(i).filter(|o| o.positions_len > 0) else {
            return Ok(None);
        };
        let (at, len) = (o.offset + o.frame_len, o.positions_len);
        let bad = |why: String| Error::ObjectPack(format!("positions: {why}"));
        self.file
            .seek(SeekFrom::Start(self.frames_start + at))
            .map_err(|e| bad(e.to_string()))?;
        let frame = read_at_most(&mut self.file, len).map_err(|e| bad(e.to_string()))?;
        self.bytes_read += frame.len() as u64;
        let json = read_at_most(DeflateDecoder::new(frame.as_slice()), MAX_POSITIONS_BYTES)
            .map_err(|e| bad(e.to_string()))?;
        serde_json::from_slice(&json)
            .map(Some)
            .map_err(|e| bad(e.to_string()))
    }

    /// Every object of content `hash` as extraction made it (ids, text, context, format
    /// facts), placed in file `locator`: what `reindex` cuts again.
    pub fn content_objects(&mut self, hash: &str, locator: &str) -> Result<Vec<ContentObject>> {
        let prefix = hash.get(..16).unwrap_or(hash);
        let mut out = Vec::with_capacity(self.objects.len());
        for i in 0..self.objects.len() {
            let data = self.text(i)?;
            let positions = self.positions(i)?;
            let Some(o) = self.objects.get(i) else { break };
            let location = if o.fragment.is_empty() {
                locator.to_string()
            } else {
                format!("{locator}#{}", o.fragment)
            };
            out.push(ContentObject {
                id: format!("{prefix}:{i}"),
                file_id: hash.to_string(),
                content_type: o.content_type,
                data,
                context_ref: extractors::ContextRef {
                    container_path: locator.to_string(),
                    location,
                    label: o.label.clone(),
                    page_index: o.page,
                    section_id: o.section.clone(),
                    sheet_name: o.sheet.clone(),
                    slide_index: o.slide,
                },
                metadata: o.meta.clone(),
                sequence: u32::try_from(i).unwrap_or(u32::MAX),
                positions,
            });
        }
        Ok(out)
    }
}

/// Read at most `limit` bytes of `reader`.
#[allow(clippy::disallowed_methods)] // bounded by `take`
fn read_at_most(reader: impl Read, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    reader.take(limit).read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use extractors::{ContextRef, Fragment, Locator};

    fn object(seq: u32, text: &str, page: u32) -> ContentObject {
        let loc = Locator::root("/secret/alice/report.pdf").with_fragment(Fragment {
            page: Some(page),
            ..Fragment::default()
        });
        let mut ctx = ContextRef::at(&loc);
        ctx.section_id = Some("1 Intro".into());
        ContentObject {
            id: format!("h:{seq}"),
            file_id: "h".into(),
            content_type: if text.is_empty() {
                ContentType::Image
            } else {
                ContentType::Text
            },
            data: text.into(),
            context_ref: ctx,
            metadata: Default::default(),
            sequence: seq,
            positions: None,
        }
    }

    #[test]
    fn objects_come_back_one_by_one_without_the_first_seen_locator() {
        let dir = tempfile::tempdir().unwrap();
        let mut objects = vec![
            object(0, "first page, ünïcödé", 1),
            object(1, "", 2),
            object(2, &"x".repeat(100_000), 3),
        ];
        let positions = extractors::Positions {
            unit: "pt".into(),
            origin: "bottom-left".into(),
            page_size: Some([612.0, 792.0]),
            bbox: Some([72.0, 700.0, 300.0, 712.5]),
            lines: (0..400)
                .map(|i| extractors::LineBox {
                    start: i,
                    end: i + 1,
                    bbox: [72.0, 700.0 - f64::from(i), 300.0, 712.5],
                })
                .collect(),
        };
        objects[0].positions = Some(positions.clone());
        let bytes = pack(&objects).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("secret"));
        let path = dir.path().join("h.pack");
        std::fs::write(&path, &bytes).unwrap();
        let mut r = PackReader::open(&path).unwrap();
        assert_eq!(r.objects.len(), 3);
        assert_eq!(r.objects[0].fragment, "page=1");
        assert_eq!(r.objects[0].chars, 19);
        let before = r.bytes_read;
        assert_eq!(r.text(1).unwrap(), "");
        assert_eq!(r.text(0).unwrap(), "first page, ünïcödé");
        assert!(
            r.bytes_read - before < 100,
            "one small frame read, not the positions"
        );
        assert_eq!(r.positions(0).unwrap(), Some(positions));
        assert_eq!(r.positions(1).unwrap(), None);
        assert_eq!(r.text(2).unwrap(), "x".repeat(100_000));
        assert_eq!(r.text(2).unwrap(), "x".repeat(100_000));
        assert_eq!(r.text(9).unwrap(), "");
    }

    #[test]
    fn a_pack_gives_back_the_objects_it_was_made_of_placed_in_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let hash = "0123456789abcdef0123";
        let mut objects = vec![object(0, "first page", 1), object(1, "", 2)];
        for (i, o) in objects.iter_mut().enumerate() {
            o.id = format!("0123456789abcdef:{i}");
            o.file_id = hash.into();
            o.metadata.insert("header_lines".into(), 2.into());
        }
        let path = dir.path().join("h.pack");
        std::fs::write(&path, pack(&objects).unwrap()).unwrap();
        let back = PackReader::open(&path)
            .unwrap()
            .content_objects(hash, "/secret/alice/report.pdf")
            .unwrap();
        assert_eq!(back, objects);
        let moved = PackReader::open(&path)
            .unwrap()
            .content_objects(hash, "/b/copy.pdf")
            .unwrap();
        assert_eq!(moved[0].context_ref.location, "/b/copy.pdf#page=1");
        assert_eq!(moved[0].context_ref.container_path, "/b/copy.pdf");
    }

    #[test]
    fn corrupt_packs_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.pack");
        std::fs::write(&path, b"INGPACK1\xff\xff\xff\xff\xff\xff\xff\x7f").unwrap();
        assert!(PackReader::open(&path).is_err());
        std::fs::write(&path, b"nope").unwrap();
        assert!(PackReader::open(&path).is_err());
    }
}
