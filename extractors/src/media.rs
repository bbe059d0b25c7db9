//! Images, audio and video: one object each, with what the headers tell cheaply.
//!
//! Images: format and pixel size (imagesize reads only headers; SVG from its root element,
//! plus its title, description and text labels as line-addressed text).
//! Audio: duration, sample rate and channels from WAV/FLAC/Ogg headers, and an estimate for
//! MP3 from its first frame. Video: duration and size from MP4 (`mvhd`/`tkhd`), AVI (`avih`),
//! WebM/Matroska (`Info`, `Tracks`) and MPEG program streams (video time stamps and the
//! sequence header). Nothing is decoded; a header we cannot read leaves the field out.
//! Pictures in formats tesseract reads are OCR'd (see [`crate::ocr`]): recognised text becomes
//! a text object after the image object, at the same locator, with `ocr: true`.

use serde_json::{json, Map, Value};

use crate::model::{ContentType, Structure};
use crate::objects::{ObjectSink, Place};
use crate::ocr::{image_extension, OcrSession, OcrText, MAX_PIXELS, MIN_SIDE};
use crate::{ExtractError, ExtractInput, Extraction, Extractor, FileKind};
use std::time::Instant;

pub(crate) struct Media;

impl Extractor for Media {
    fn name(&self) -> &'static str {
        "media"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let b = input.bytes;
        let mime = input.detected.mime.as_str();
        let mut meta = Map::new();
        meta.insert("mime".into(), json!(mime));
        meta.insert("size".into(), json!(b.len()));
        let content_type = match input.detected.kind {
            FileKind::Image => {
                let dims = if mime == "image/svg+xml" {
                    svg_size(b)
                } else {
                    imagesize::blob_size(b)
                        .ok()
                        .map(|s| (s.width as f64, s.height as f64))
                };
                if let Some((w, h)) = dims {
                    meta.insert("width".into(), json!(w));
                    meta.insert("height".into(), json!(h));
                }
                ContentType::Image
            }
            FileKind::Audio => {
                let facts = wav(b)
                    .or_else(|| flac(b))
                    .or_else(|| ogg(b))
                    .or_else(|| mp3(b));
                merge(&mut meta, facts);
                ContentType::Audiostream
            }
            _ => {
                merge(
                    &mut meta,
                    mp4(b)
                        .or_else(|| avi(b))
                        .or_else(|| matroska(b))
                        .or_else(|| mpeg_ps(b)),
                );
                ContentType::Videostream
            }
        };
        let ocr = if input.detected.kind == FileKind::Image {
            ocr_picture(input, &mut meta)
        } else {
            None
        };
        let mut sink = ObjectSink::new(input.locator, input.file_hash);
        let place = Place {
            label: Some(input.locator.file_name().to_string()),
            ..Place::default()
        };
        sink.push(
            content_type,
            String::new(),
            place.clone(),
            Value::Object(meta),
        );
        if let Some(t) = ocr {
            let meta = t.metadata(&input.options.ocr);
            let first = sink.objects.len();
            sink.push(ContentType::Text, t.text, place, meta);
            let mut aligner = crate::positions::Aligner::new(&t.boxes);
            for o in sink.objects.get_mut(first..).unwrap_or_default() {
                let lines = aligner.lines(&o.data);
                o.positions =
                    crate::positions::of_lines(lines, crate::positions::PIXELS, t.image_size);
            }
        }
        if mime == "image/svg+xml" {
            // Titles, descriptions and labels of a drawing are text worth finding.
            if let Ok(text) = crate::markup::Xml.extract(input) {
                sink.append(text.objects);
            }
        }
        Ok(Extraction {
            objects: sink.objects,
            structure: Structure::default(),
        })
    }
}

/// OCR a picture in a format tesseract reads, noting what happened in `meta["ocr"]` (and
/// `meta["ocr_error"]`); the text when enough words were recognised.
fn ocr_picture(input: &ExtractInput<'_>, meta: &mut Map<String, Value>) -> Option<OcrText> {
    let opts = &input.options.ocr;
    let ext = image_extension(&input.detected.mime)?;
    if !opts.enabled {
        meta.insert("ocr".into(), json!("disabled"));
        return None;
    }
    let w = meta.get("width").and_then(Value::as_f64);
    let h = meta.get("height").and_then(Value::as_f64);
    if let (Some(w), Some(h)) = (w, h) {
        if w < MIN_SIDE || h < MIN_SIDE {
            meta.insert("ocr".into(), json!("skipped: too small"));
            return None;
        }
        if w * h > MAX_PIXELS {
            meta.insert("ocr".into(), json!("skipped: too large"));
            return None;
        }
    }
    let result = OcrSession::new(opts, Instant::now()).and_then(|s| s.image(input.bytes, ext));
    match result {
        Ok(Some(t)) => {
            meta.insert("ocr".into(), json!("text"));
            Some(t)
        }
        Ok(None) => {
            meta.insert("ocr".into(), json!("no text found"));
            None
        }
        Err(e) => {
            meta.insert("ocr".into(), json!(format!("failed: {e}")));
            meta.insert("ocr_error".into(), json!(e.to_string()));
            None
        }
    }
}

fn merge(meta: &mut Map<String, Value>, facts: Option<Value>) {
    if let Some(Value::Object(m)) = facts {
        meta.extend(m);
    }
}

fn u16le(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32le(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u32be(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64be(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}
fn u64le(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// `facts[key] = value` for a facts object (indexing a `Value` could panic on a non-object).
fn set(facts: &mut Value, key: &str, value: Value) {
    if let Some(map) = facts.as_object_mut() {
        map.insert(key.to_string(), value);
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `width`/`height` attributes of the root `<svg>`, else its `viewBox`.
fn svg_size(b: &[u8]) -> Option<(f64, f64)> {
    let mut reader = quick_xml::Reader::from_reader(b);
    let mut buf = Vec::new();
    for _ in 0..64 {
        match reader.read_event_into(&mut buf).ok()? {
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e)
                if e.local_name().as_ref() == b"svg" =>
            {
                let attr = |name: &[u8]| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == name)
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned())
                };
                let num = |s: String| {
                    s.trim_end_matches(|c: char| c.is_alphabetic() || c == '%')
                        .trim()
                        .parse::<f64>()
                        .ok()
                };
                if let (Some(w), Some(h)) =
                    (attr(b"width").and_then(num), attr(b"height").and_then(num))
                {
                    return Some((w, h));
                }
                let vb: Vec<f64> = attr(b"viewBox")?
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter_map(|p| p.parse().ok())
                    .collect();
                return Some((*vb.get(2)?, *vb.get(3)?));
            }
            quick_xml::events::Event::Eof => return None,
            _ => {}
        }
        buf.clear();
    }
    None
}

/// RIFF/WAVE: `fmt ` gives rate and channels, `data` the length.
fn wav(b: &[u8]) -> Option<Value> {
    if b.get(0..4)? != b"RIFF" || b.get(8..12)? != b"WAVE" {
        return None;
    }
    let (mut at, mut fmt, mut data) = (12usize, None, None);
    while at + 8 <= b.len() {
        let id = b.get(at..at + 4)?;
        let len = u32le(b, at + 4)? as usize;
        match id {
            b"fmt " => fmt = Some((u16le(b, at + 10)?, u32le(b, at + 12)?, u32le(b, at + 16)?)),
            b"data" => data = Some(len),
            _ => {}
        }
        at = at.checked_add(8 + len + (len & 1))?;
    }
    let (channels, rate, byte_rate) = fmt?;
    let mut facts = json!({ "sample_rate": rate, "channels": channels });
    if let (Some(len), true) = (data, byte_rate > 0) {
        set(
            &mut facts,
            "duration_seconds",
            json!(round3(len as f64 / f64::from(byte_rate))),
        );
    }
    Some(facts)
}

/// FLAC STREAMINFO: sample rate (20 bits), channels (3), total samples (36).
fn flac(b: &[u8]) -> Option<Value> {
    if b.get(0..4)? != b"fLaC" {
        return None;
    }
    let si = b.get(8..8 + 34)?;
    let rate = (u32::from(*si.get(10)?) << 12)
        | (u32::from(*si.get(11)?) << 4)
        | (u32::from(*si.get(12)?) >> 4);
    let channels = ((si.get(12)? >> 1) & 0x7) + 1;
    let total = (u64::from(si.get(13)? & 0x0F) << 32) | u64::from(u32be(si, 14)?);
    let mut facts = json!({ "sample_rate": rate, "channels": channels });
    if rate > 0 && total > 0 {
        set(
            &mut facts,
            "duration_seconds",
            json!(round3(total as f64 / f64::from(rate))),
        );
    }
    Some(facts)
}

/// Ogg Vorbis/Opus: rate and channels from the identification header, duration from the last
/// page's granule position.
fn ogg(b: &[u8]) -> Option<Value> {
    if b.get(0..4)? != b"OggS" {
        return None;
    }
    let segments = usize::from(*b.get(26)?);
    let body = 27 + segments;
    let (rate, channels, skip) = if b.get(body..body + 7)? == b"\x01vorbis" {
        (u32le(b, body + 12)?, *b.get(body + 11)?, 0u64)
    } else if b.get(body..body + 8)? == b"OpusHead" {
        (48_000, *b.get(body + 9)?, u64::from(u16le(b, body + 10)?))
    } else if b.get(body..body + 7)? == b"\x80theora" {
        return Some(json!({ "codec": "theora" }));
    } else {
        return None;
    };
    let tail_from = b.len().saturating_sub(64 * 1024);
    let tail = b.get(tail_from..)?;
    let last = tail.windows(4).rposition(|w| w == b"OggS")?;
    let granule = u64le(tail, last + 6)?;
    let mut facts = json!({ "sample_rate": rate, "channels": channels });
    if rate > 0 && granule != u64::MAX {
        set(
            &mut facts,
            "duration_seconds",
            json!(round3(
                granule.saturating_sub(skip) as f64 / f64::from(rate)
            )),
        );
    }
    Some(facts)
}

/// MP3: the first frame header after any ID3v2 tag; duration estimated as constant bitrate.
fn mp3(b: &[u8]) -> Option<Value> {
    let mut at = 0usize;
    if b.get(0..3)? == b"ID3" {
        let size = b
            .get(6..10)?
            .iter()
            .fold(0usize, |acc, x| (acc << 7) | usize::from(x & 0x7f));
        at = 10 + size;
    }
    let end = (at + 64 * 1024).min(b.len());
    let window = b.get(at..end)?;
    let off = window
        .windows(2)
        .position(|w| w.first() == Some(&0xFF) && w.get(1).is_some_and(|x| x & 0xE0 == 0xE0))?;
    let h = window.get(off..off + 4)?;
    let version = (h.get(1)? >> 3) & 0x3; // 3 = MPEG1
    let bitrate_idx = usize::from(h.get(2)? >> 4);
    let rate_idx = usize::from((h.get(2)? >> 2) & 0x3);
    let channels = if (h.get(3)? >> 6) == 3 { 1 } else { 2 };
    let kbps = if version == 3 {
        [
            0u32, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0,
        ]
    } else {
        [
            0u32, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0,
        ]
    };
    let rates = match version {
        3 => [44_100, 48_000, 32_000],
        2 => [22_050, 24_000, 16_000],
        _ => [11_025, 12_000, 8_000],
    };
    let bitrate = *kbps.get(bitrate_idx)? * 1000;
    let rate = *rates.get(rate_idx)?;
    let audio_bytes = b.len().saturating_sub(at + off);
    let mut facts = json!({ "sample_rate": rate, "channels": channels, "bitrate": bitrate });
    // A Xing/Info frame (LAME writes one first) counts the frames: an exact duration, where
    // its own bitrate says nothing of the audio's.
    let layer = (h.get(1)? >> 1) & 0x3; // 3 = I, 2 = II, 1 = III
    let per_frame: u32 = match (layer, version) {
        (3, _) => 384,
        (1, v) if v != 3 => 576,
        _ => 1152,
    };
    let frame = window.get(off..(off + 200).min(window.len()))?;
    let xing = frame
        .windows(4)
        .position(|w| w == b"Xing" || w == b"Info")
        .and_then(|p| frame.get(p + 4..p + 12));
    let be = |s: &[u8]| s.iter().fold(0u32, |acc, x| (acc << 8) | u32::from(*x));
    if let Some(x) = xing.filter(|x| be(x.get(..4).unwrap_or_default()) & 1 == 1) {
        let frames = be(x.get(4..8).unwrap_or_default());
        if frames > 0 && rate > 0 {
            let seconds = f64::from(frames) * f64::from(per_frame) / f64::from(rate);
            set(&mut facts, "duration_seconds", json!(round3(seconds)));
            return Some(facts);
        }
    }
    if bitrate > 0 {
        set(
            &mut facts,
            "duration_seconds",
            json!(round3(audio_bytes as f64 * 8.0 / f64::from(bitrate))),
        );
        set(&mut facts, "duration_estimated", json!(true));
    }
    Some(facts)
}

/// MP4/QuickTime: `moov/mvhd` (timescale, duration) and the first `trak/tkhd` with a size.
fn mp4(b: &[u8]) -> Option<Value> {
    if b.get(4..8)? != b"ftyp" {
        return None;
    }
    let mut facts = json!({});
    let mut stack = vec![(0usize, b.len(), 0u8)];
    let mut visited = 0;
    while let Some((mut at, end, depth)) = stack.pop() {
        while at + 8 <= end && visited < 10_000 {
            visited += 1;
            let mut size = u32be(b, at)? as usize;
            let kind = b.get(at + 4..at + 8)?;
            let mut header = 8;
            if size == 1 {
                size = usize::try_from(u64be(b, at + 8)?).ok()?;
                header = 16;
            } else if size == 0 {
                size = end - at;
            }
            if size < header || at + size > end {
                break;
            }
            match kind {
                b"moov" | b"trak" if depth < 4 => stack.push((at + header, at + size, depth + 1)),
                b"mvhd" => {
                    let v = *b.get(at + header)?;
                    let (scale, duration) = if v == 1 {
                        (u32be(b, at + header + 20)?, u64be(b, at + header + 24)?)
                    } else {
                        (
                            u32be(b, at + header + 12)?,
                            u64::from(u32be(b, at + header + 16)?),
                        )
                    };
                    if scale > 0 {
                        set(
                            &mut facts,
                            "duration_seconds",
                            json!(round3(duration as f64 / f64::from(scale))),
                        );
                    }
                }
                b"tkhd" if facts.get("width").is_none() => {
                    let v = *b.get(at + header)?;
                    let wh = at + header + if v == 1 { 88 } else { 76 };
                    let (w, h) = (u32be(b, wh)? >> 16, u32be(b, wh + 4)? >> 16);
                    if w > 0 && h > 0 {
                        set(&mut facts, "width", json!(w));
                        set(&mut facts, "height", json!(h));
                    }
                }
                _ => {}
            }
            at += size;
        }
    }
    Some(facts)
}

/// AVI: the `avih` main header (microseconds per frame, frames, size).
fn avi(b: &[u8]) -> Option<Value> {
    if b.get(0..4)? != b"RIFF" || b.get(8..12)? != b"AVI " {
        return None;
    }
    let at = b
        .get(..4096.min(b.len()))?
        .windows(4)
        .position(|w| w == b"avih")?
        + 8;
    let us_per_frame = u32le(b, at)?;
    let frames = u32le(b, at + 16)?;
    let (w, h) = (u32le(b, at + 32)?, u32le(b, at + 36)?);
    Some(json!({
        "duration_seconds": round3(f64::from(frames) * f64::from(us_per_frame) / 1e6),
        "width": w,
        "height": h,
    }))
}

/// An EBML variable-length integer at `at`: (value, length). `None` when malformed; the
/// all-ones "unknown size" comes back as `u64::MAX`.
fn vint(b: &[u8], at: usize, keep_marker: bool) -> Option<(u64, usize)> {
    let first = *b.get(at)?;
    let len = first.leading_zeros() as usize + 1;
    if len > 8 {
        return None;
    }
    let mut value = if keep_marker {
        u64::from(first)
    } else {
        u64::from(first) & ((1u64 << (8 - len)) - 1)
    };
    let mut all_ones = value == (1u64 << (8 - len)) - 1;
    for i in 1..len {
        let byte = *b.get(at + i)?;
        all_ones &= byte == 0xFF;
        value = (value << 8) | u64::from(byte);
    }
    Some((
        if all_ones && !keep_marker {
            u64::MAX
        } else {
            value
        },
        len,
    ))
}

fn ebml_uint(data: &[u8]) -> Option<u64> {
    (data.len() <= 8).then(|| data.iter().fold(0u64, |acc, x| (acc << 8) | u64::from(*x)))
}

fn ebml_float(data: &[u8]) -> Option<f64> {
    match data.len() {
        4 => Some(f64::from(f32::from_be_bytes(data.try_into().ok()?))),
        8 => Some(f64::from_be_bytes(data.try_into().ok()?)),
        _ => None,
    }
}

/// WebM/Matroska: `Segment/Info` (timestamp scale, duration) and the first video and audio
/// `TrackEntry` (pixel size, sampling rate, channels). Clusters are skipped by size.
fn matroska(b: &[u8]) -> Option<Value> {
    if b.get(0..4)? != [0x1A, 0x45, 0xDF, 0xA3] {
        return None;
    }
    const SEGMENT: u64 = 0x1853_8067;
    const INFO: u64 = 0x1549_A966;
    const TRACKS: u64 = 0x1654_AE6B;
    const TRACK_ENTRY: u64 = 0xAE;
    const VIDEO: u64 = 0xE0;
    const AUDIO: u64 = 0xE1;
    let (mut scale, mut duration) = (1_000_000u64, None);
    let mut facts = json!({});
    // (start, end) of the element bodies still to walk; masters are walked in place.
    let mut stack = vec![(0usize, b.len())];
    let mut visited = 0;
    while let Some((mut at, end)) = stack.pop() {
        while at < end && visited < 100_000 {
            visited += 1;
            let (id, id_len) = vint(b, at, true)?;
            let (size, size_len) = vint(b, at + id_len, false)?;
            let body = at + id_len + size_len;
            let body_end = if size == u64::MAX {
                end
            } else {
                body.checked_add(usize::try_from(size).ok()?)?.min(end)
            };
            let data = b.get(body..body_end).unwrap_or(&[]);
            match id {
                SEGMENT | INFO | TRACKS | TRACK_ENTRY | VIDEO | AUDIO => {
                    // Walk the master's children next, then go on after it.
                    if body_end < end {
                        stack.push((body_end, end));
                    }
                    stack.push((body, body_end));
                    break;
                }
                0x2A_D7B1 => scale = ebml_uint(data).filter(|s| *s > 0).unwrap_or(scale),
                0x4489 => duration = ebml_float(data),
                0xB0 if facts.get("width").is_none() => {
                    set(&mut facts, "width", json!(ebml_uint(data)?))
                }
                0xBA if facts.get("height").is_none() => {
                    set(&mut facts, "height", json!(ebml_uint(data)?))
                }
                0xB5 if facts.get("sample_rate").is_none() => {
                    set(&mut facts, "sample_rate", json!(ebml_float(data)?))
                }
                0x9F if facts.get("channels").is_none() => {
                    set(&mut facts, "channels", json!(ebml_uint(data)?))
                }
                // A cluster of unknown size runs to the end: nothing after it is a header.
                0x1F43_B675 if size == u64::MAX => break,
                _ => {}
            }
            at = body_end;
        }
    }
    if let Some(d) = duration.filter(|d| d.is_finite() && *d >= 0.0) {
        set(
            &mut facts,
            "duration_seconds",
            json!(round3(d * scale as f64 / 1e9)),
        );
    }
    Some(facts)
}

/// The presentation time stamp (90 kHz) of the PES packet starting at `at`, MPEG-1 or
/// MPEG-2 syntax.
fn pes_pts(b: &[u8], at: usize) -> Option<u64> {
    let mut p = at + 6;
    let pts_at = if b.get(p)? & 0xC0 == 0x80 {
        // MPEG-2: flags, then the header data with the PTS first.
        (b.get(p + 1)? & 0x80 != 0).then_some(p + 3)?
    } else {
        // MPEG-1: stuffing, an optional buffer size, then the PTS marker.
        let mut stuffing = 0;
        while *b.get(p)? == 0xFF && stuffing < 16 {
            p += 1;
            stuffing += 1;
        }
        if b.get(p)? & 0xC0 == 0x40 {
            p += 2;
        }
        (b.get(p)? & 0xE0 == 0x20).then_some(p)?
    };
    let &[b0, b1, b2, b3, b4] = b.get(pts_at..pts_at + 5)? else {
        return None;
    };
    let [b0, b1, b2, b3, b4] = [b0, b1, b2, b3, b4].map(u64::from);
    Some(((b0 >> 1) & 7) << 30 | b1 << 22 | (b2 >> 1) << 15 | b3 << 7 | b4 >> 1)
}

/// MPEG program stream: duration from the video packets' time stamps (first to last, plus
/// one frame), size and frame rate from the sequence header. Only the first and last
/// 256 KiB are searched.
fn mpeg_ps(b: &[u8]) -> Option<Value> {
    if b.get(0..4)? != [0, 0, 1, 0xBA] {
        return None;
    }
    const WINDOW: usize = 256 * 1024;
    let starts = |from: usize, to: usize| {
        let window = b.get(from..to).unwrap_or(&[]);
        window
            .windows(4)
            .enumerate()
            .filter(|(_, w)| {
                w.get(..3) == Some(&[0, 0, 1]) && w.get(3).is_some_and(|c| c & 0xF0 == 0xE0)
            })
            .map(move |(i, _)| from + i)
    };
    let mut facts = json!({});
    let head_end = b.len().min(WINDOW);
    let mut frame_rate = None;
    if let Some(at) = b
        .get(..head_end)?
        .windows(4)
        .position(|w| w == [0, 0, 1, 0xB3])
    {
        if let Some(&[s0, s1, s2, s3]) = b.get(at + 4..at + 8) {
            let [s0, s1, s2] = [s0, s1, s2].map(u32::from);
            set(&mut facts, "width", json!((s0 << 4) | (s1 >> 4)));
            set(&mut facts, "height", json!(((s1 & 0x0F) << 8) | s2));
            const RATES: [f64; 9] = [
                0.0,
                24_000.0 / 1001.0,
                24.0,
                25.0,
                30_000.0 / 1001.0,
                30.0,
                50.0,
                60_000.0 / 1001.0,
                60.0,
            ];
            frame_rate = RATES
                .get(usize::from(s3 & 0x0F))
                .copied()
                .filter(|r| *r > 0.0);
        }
    }
    let first = starts(0, head_end).filter_map(|at| pes_pts(b, at)).min();
    let last = starts(b.len().saturating_sub(WINDOW), b.len())
        .filter_map(|at| pes_pts(b, at))
        .max();
    if let (Some(first), Some(last)) = (first, last) {
        if last >= first {
            let frame = frame_rate.map_or(0.0, |r| 1.0 / r);
            set(
                &mut facts,
                "duration_seconds",
                json!(round3((last - first) as f64 / 90_000.0 + frame)),
            );
            if let Some(r) = frame_rate {
                set(&mut facts, "frame_rate", json!(round3(r)));
            }
        }
    }
    Some(facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{detect, Locator};

    fn meta(name: &str, bytes: &[u8]) -> Map<String, Value> {
        let loc = Locator::root(name);
        let det = detect(bytes, name);
        let e = crate::extract(&ExtractInput {
            bytes,
            locator: &loc,
            file_hash: "ab",
            detected: &det,
            options: crate::ExtractOptions::defaults(),
        })
        .unwrap();
        e.objects[0].metadata.clone()
    }

    /// A picture with words gets a text object after its image object, at the file's
    /// locator, marked `ocr: true`; a picture without words gets none.
    #[test]
    fn pictures_with_words_are_ocrd() {
        let dir = crate::testing::crate_dir().join("../fixtures/formats");
        let bytes = std::fs::read(dir.join("whiteboard.png")).unwrap();
        let e = crate::testing::extract_as("whiteboard.png", &bytes, None).unwrap();
        assert_eq!(e.objects.len(), 2);
        assert_eq!(e.objects[0].content_type, ContentType::Image);
        assert_eq!(e.objects[0].metadata["ocr"], "text");
        let text = &e.objects[1];
        assert_eq!(text.content_type, ContentType::Text);
        assert_eq!(text.context_ref.location, "whiteboard.png");
        assert_eq!(text.metadata["ocr"], true);
        assert!(text.data.contains("Wasserstandsmeldung"), "{}", text.data);
        let pier = std::fs::read(dir.join("pier.jpg")).unwrap();
        let e = crate::testing::extract_as("pier.jpg", &pier, None).unwrap();
        assert_eq!(e.objects.len(), 1);
        assert_eq!(e.objects[0].metadata["ocr"], "no text found");
    }

    #[test]
    fn wav_duration_and_format() {
        let rate = 8000u32;
        let data = vec![0u8; 16_000]; // 2 s of 8-bit mono
        let mut w = Vec::new();
        w.extend(b"RIFF");
        w.extend(&(36 + data.len() as u32).to_le_bytes());
        w.extend(b"WAVEfmt ");
        w.extend(&16u32.to_le_bytes());
        w.extend(&1u16.to_le_bytes());
        w.extend(&1u16.to_le_bytes());
        w.extend(&rate.to_le_bytes());
        w.extend(&rate.to_le_bytes());
        w.extend(&1u16.to_le_bytes());
        w.extend(&8u16.to_le_bytes());
        w.extend(b"data");
        w.extend(&(data.len() as u32).to_le_bytes());
        w.extend(&data);
        let m = meta("tone.wav", &w);
        assert_eq!(m["duration_seconds"], 2.0);
        assert_eq!(m["sample_rate"], 8000);
        assert_eq!(m["channels"], 1);
    }

    #[test]
    fn image_and_svg_sizes() {
        // A 3x2 PNG header is enough for imagesize.
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(&3u32.to_be_bytes());
        png.extend(&2u32.to_be_bytes());
        png.extend(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        let m = meta("a.png", &png);
        assert_eq!(
            (m["width"].clone(), m["height"].clone()),
            (json!(3.0), json!(2.0))
        );
        let m = meta("a.svg", b"<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 120 80\"></svg>");
        assert_eq!(
            (m["width"].clone(), m["height"].clone()),
            (json!(120.0), json!(80.0))
        );
    }
}
