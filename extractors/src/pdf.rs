//! PDF: a cheap structure pre-scan with lopdf, page-accurate text with PDFium (else pdf-extract).
//!
//! The pre-scan ([`prescan_pdf`]) reads the page tree, page labels and the outline, and walks
//! each page's content stream operators without decoding fonts: text bytes shown, images
//! drawn, font sizes (for headings) and ruling (for tables). Sections come from the outline,
//! else from those headings (~0.45 ms a page).
//!
//! Text is extracted page by page, so an object never mixes two pages and one failing page
//! costs only itself. With PDFium provisioned ([`crate::ExtractOptions::pdfium_library`]) it
//! reads the text (~1 ms a page, faster than pdftotext; see `crate::pdfium`); without it, or
//! when PDFium cannot open a file, pdf-extract does, with our own `OutputDev` (~12 ms a page;
//! per-page word F1 against pdftotext 0.99+; it pins lopdf 0.42, so a PDF is parsed twice).
//! A page the text engine fails on gets lopdf's own, plainer text. Every text object says
//! which engine read it in `text_source` (`pdfium`, `pdf-extract`, `lopdf`, `ocr`).

use std::collections::{HashMap, HashSet};
use std::ops::RangeInclusive;
use std::time::Instant;

use lopdf::{Dictionary, Document, Object, ObjectId};
use serde_json::json;

use crate::model::{ContentType, PageInfo, Structure, StructureNode};
use crate::objects::{ObjectSink, Place, SECTION_SEPARATOR};
use crate::ocr::{OcrSession, OcrText};
use crate::positions::PDF_POINTS;
use crate::tidy::tidy;
use crate::{ExtractError, ExtractInput, Extraction, Extractor, Fragment, Locator};

pub(crate) struct Pdf;

/// Outline entries and name-tree nodes visited at most (cycles and bombs end here).
const MAX_OUTLINE_ITEMS: usize = 20_000;
const MAX_TREE_DEPTH: usize = 32;
/// Content stream bytes decompressed per page in the pre-scan.
const MAX_PAGE_CONTENT: usize = 64 * 1024 * 1024;

/// One outline (bookmark) entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutlineEntry {
    pub title: String,
    /// 1 for top-level entries.
    pub level: u32,
    /// 1-based target page; `None` for remote or unresolvable targets.
    pub page: Option<u32>,
}

/// What the pre-scan learned about a PDF.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PdfScan {
    pub page_count: u32,
    pub outline: Vec<OutlineEntry>,
    pub pages: Vec<PageInfo>,
    /// Sections with their page ranges: from the outline, else from headings.
    pub sections: Vec<StructureNode>,
    /// The section path of every page, index 0 for page 1.
    pub page_sections: Vec<Option<String>>,
    /// Pages with images and no text: a scan without a text layer.
    pub scanned_pages: u32,
    /// Pixel dimensions of each page's image XObjects, index 0 for page 1.
    pub page_images: Vec<Vec<(i64, i64)>>,
    /// Width and height of each page's media box in points, index 0 for page 1.
    #[serde(default)]
    pub page_sizes: Vec<Option<(f64, f64)>>,
    /// The document's Info dictionary: title, author, subject, keywords.
    #[serde(default)]
    pub properties: crate::properties::Properties,
}

/// The most pages of a PDF read: a file of more is refused before its pages are (a 100 000-page
/// file of empty pages is 6 MB, and reading it ran the worker out of memory).
pub const MAX_PDF_PAGES: usize = 20_000;

fn malformed(reason: impl ToString) -> ExtractError {
    ExtractError::Malformed {
        format: "pdf".into(),
        reason: reason.to_string(),
    }
}

fn deref<'a>(doc: &'a Document, obj: &'a Object) -> Option<&'a Object> {
    doc.dereference(obj).ok().map(|(_, o)| o)
}

fn dict_get<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a Object> {
    dict.get(key).ok().and_then(|o| deref(doc, o))
}

fn text_of(obj: &Object) -> Option<String> {
    lopdf::decode_text_string(obj)
        .ok()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
}

/// Pre-scan `bytes` without extracting text: page count, labels, outline, page map, sections.
pub fn prescan_pdf(bytes: &[u8]) -> Result<PdfScan, ExtractError> {
    let doc = Document::load_mem(bytes).map_err(malformed)?;
    let pages = doc.get_pages();
    // Counted before any page is read: each page read costs memory in the worker.
    if pages.len() > MAX_PDF_PAGES {
        return Err(malformed(format!(
            "a PDF of {} pages: at most {MAX_PDF_PAGES} pages are read",
            pages.len()
        )));
    }
    let page_of: HashMap<ObjectId, u32> = pages.iter().map(|(n, id)| (*id, *n)).collect();
    let page_count = u32::try_from(pages.len()).unwrap_or(u32::MAX);
    let labels = page_labels(&doc, page_count);
    let outline = outline(&doc, &page_of);

    let mut infos: Vec<PageInfo> = Vec::with_capacity(pages.len());
    let mut runs: Vec<(u32, f32, String)> = Vec::new();
    let mut page_images = Vec::with_capacity(pages.len());
    let mut page_sizes = Vec::with_capacity(pages.len());
    for (n, id) in &pages {
        page_sizes.push(media_box(&doc, *id));
        page_images.push(
            doc.get_page_images(*id)
                .map(|imgs| imgs.iter().map(|i| (i.width, i.height)).collect())
                .unwrap_or_default(),
        );
        let (info, page_runs) = scan_page(&doc, *n, *id);
        runs.extend(page_runs.into_iter().map(|(size, text)| (*n, size, text)));
        infos.push(PageInfo {
            label: labels
                .get((*n as usize).saturating_sub(1))
                .cloned()
                .flatten(),
            ..info
        });
    }
    assign_headings(&mut infos, &runs);

    let scanned_pages = infos
        .iter()
        .filter(|p| p.images > 0 && p.text_bytes == 0)
        .count() as u32;
    let (sections, page_sections) = sections(&outline, &infos, page_count);
    let properties = info_properties(&doc);
    Ok(PdfScan {
        page_count,
        outline,
        pages: infos,
        sections,
        page_sections,
        scanned_pages,
        page_images,
        page_sizes,
        properties,
    })
}

/// Title, author, subject and keywords from the trailer's Info dictionary.
fn info_properties(doc: &Document) -> crate::properties::Properties {
    let mut props = crate::properties::Properties::new();
    let Some(info) = doc
        .trailer
        .get(b"Info")
        .ok()
        .and_then(|o| deref(doc, o))
        .and_then(|o| o.as_dict().ok())
    else {
        return props;
    };
    for (key, name) in [
        (&b"Title"[..], "title"),
        (b"Author", "author"),
        (b"Subject", "subject"),
        (b"Keywords", "keywords"),
    ] {
        if let Some(value) = dict_get(doc, info, key).and_then(text_of) {
            crate::properties::put(&mut props, name, &value);
        }
    }
    props
}

/// A page attribute, inherited from the page's parents when the page has none.
fn inherited<'a>(doc: &'a Document, page: ObjectId, key: &[u8]) -> Option<&'a Object> {
    let mut dict = doc.get_dictionary(page).ok()?;
    for _ in 0..MAX_TREE_DEPTH {
        if let Some(value) = dict_get(doc, dict, key) {
            return Some(value);
        }
        dict = dict_get(doc, dict, b"Parent").and_then(|o| o.as_dict().ok())?;
    }
    None
}

/// A page's media box as width and height.
fn media_box(doc: &Document, page: ObjectId) -> Option<(f64, f64)> {
    let b = inherited(doc, page, b"MediaBox")?.as_array().ok()?;
    let v: Vec<f64> = b
        .iter()
        .filter_map(|o| deref(doc, o).and_then(number))
        .map(f64::from)
        .collect();
    match v.as_slice() {
        [a, b, c, d] => Some(((c - a).abs(), (d - b).abs())),
        _ => None,
    }
}

/// The JPEG of a page that is one unrotated full-page DCT picture (a typical scan), and its
/// resolution: tesseract reads it as it is, which saves rasterising the page (measured 3.5x
/// faster on 150 ppi scans, with the same words recognised).
fn page_jpeg(doc: &Document, page: ObjectId, size_pt: Option<(f64, f64)>) -> Option<(&[u8], u32)> {
    let rotated = inherited(doc, page, b"Rotate")
        .and_then(|o| o.as_i64().ok())
        .is_some_and(|r| r.rem_euclid(360) != 0);
    if rotated {
        return None;
    }
    let images = doc.get_page_images(page).ok()?;
    let [img] = images.as_slice() else {
        return None;
    };
    let plain = img.filters.as_deref() == Some(&["DCTDecode".to_string()][..])
        && matches!(img.color_space.as_deref(), Some("DeviceGray" | "DeviceRGB"))
        && img.bits_per_component == Some(8)
        && [b"Decode".as_slice(), b"SMask", b"Mask"]
            .iter()
            .all(|k| !img.origin_dict.has(k))
        && img.content.starts_with(&[0xff, 0xd8]);
    let (w_pt, h_pt) = size_pt?;
    let (w, h) = (img.width as f64, img.height as f64);
    if !plain || w < crate::ocr::MIN_SIDE || h < crate::ocr::MIN_SIDE || w_pt <= 0.0 || h_pt <= 0.0
    {
        return None;
    }
    // The picture covers the page: the same shape (a scan placed rotated or in a corner is
    // left to the rasteriser).
    if ((w / h) / (w_pt / h_pt) - 1.0).abs() > 0.03 {
        return None;
    }
    let dpi = (w / (w_pt / 72.0)).round();
    (70.0..=1200.0)
        .contains(&dpi)
        .then_some((img.content, dpi as u32))
}

/// `/PageLabels` number tree → one label per page (`None` where no range applies).
fn page_labels(doc: &Document, page_count: u32) -> Vec<Option<String>> {
    let mut ranges: Vec<(u32, &Dictionary)> = Vec::new();
    if let Some(root) = doc
        .catalog()
        .ok()
        .and_then(|c| dict_get(doc, c, b"PageLabels"))
        .and_then(|o| o.as_dict().ok())
    {
        collect_number_tree(doc, root, 0, &mut ranges);
    }
    ranges.sort_by_key(|(start, _)| *start);
    (0..page_count)
        .map(|i| {
            let (start, d) = ranges.iter().rev().find(|(s, _)| *s <= i)?;
            let style = dict_get(doc, d, b"S").and_then(|o| o.as_name().ok());
            let prefix = dict_get(doc, d, b"P").and_then(text_of).unwrap_or_default();
            let first = dict_get(doc, d, b"St")
                .and_then(|o| o.as_i64().ok())
                .unwrap_or(1);
            let n = first.saturating_add(i64::from(i - start));
            let number = match style {
                Some(b"D") => n.to_string(),
                Some(b"R") => roman(n).to_uppercase(),
                Some(b"r") => roman(n),
                Some(b"A") => letters(n).to_uppercase(),
                Some(b"a") => letters(n),
                _ => String::new(),
            };
            let label = format!("{prefix}{number}");
            (!label.is_empty()).then_some(label)
        })
        .collect()
}

fn collect_number_tree<'a>(
    doc: &'a Document,
    node: &'a Dictionary,
    depth: usize,
    out: &mut Vec<(u32, &'a Dictionary)>,
) {
    if depth > MAX_TREE_DEPTH || out.len() > MAX_OUTLINE_ITEMS {
        return;
    }
    if let Some(nums) = dict_get(doc, node, b"Nums").and_then(|o| o.as_array().ok()) {
        for pair in nums.chunks(2) {
            if let [key, value] = pair {
                let start = key.as_i64().ok().and_then(|k| u32::try_from(k).ok());
                let dict = deref(doc, value).and_then(|o| o.as_dict().ok());
                if let (Some(start), Some(dict)) = (start, dict) {
                    out.push((start, dict));
                }
            }
        }
    }
    if let Some(kids) = dict_get(doc, node, b"Kids").and_then(|o| o.as_array().ok()) {
        for kid in kids {
            if let Some(k) = deref(doc, kid).and_then(|o| o.as_dict().ok()) {
                collect_number_tree(doc, k, depth + 1, out);
            }
        }
    }
}

/// `n` in lowercase Roman numerals (`xiv`), as page labels print them; other numbers than
/// 1–3999 in digits.
pub fn roman(n: i64) -> String {
    if !(1..4000).contains(&n) {
        return n.to_string();
    }
    let table = [
        (1000, "m"),
        (900, "cm"),
        (500, "d"),
        (400, "cd"),
        (100, "c"),
        (90, "xc"),
        (50, "l"),
        (40, "xl"),
        (10, "x"),
        (9, "ix"),
        (5, "v"),
        (4, "iv"),
        (1, "i"),
    ];
    let mut n = n;
    let mut s = String::new();
    for (v, r) in table {
        while n >= v {
            s.push_str(r);
            n -= v;
        }
    }
    s
}

fn letters(n: i64) -> String {
    // a..z, then aa..zz, as PDF viewers count.
    if n < 1 {
        return n.to_string();
    }
    let idx = (n - 1) % 26;
    let reps = (n - 1) / 26 + 1;
    let c = char::from(b'a' + idx as u8);
    std::iter::repeat_n(c, reps.min(100) as usize).collect()
}

/// Walk the outline tree ourselves: lopdf's `get_toc` gives up on a whole outline when one
/// bookmark points into another file. Remote and unresolvable targets become page-less.
fn outline(doc: &Document, page_of: &HashMap<ObjectId, u32>) -> Vec<OutlineEntry> {
    let mut out = Vec::new();
    let Some(root) = doc
        .catalog()
        .ok()
        .and_then(|c| dict_get(doc, c, b"Outlines"))
        .and_then(|o| o.as_dict().ok())
    else {
        return out;
    };
    let named = named_destinations(doc);
    let mut seen: HashSet<ObjectId> = HashSet::new();
    // (first child reference, level), walked depth-first without recursion.
    let mut stack: Vec<(Option<&Object>, u32)> = vec![(root.get(b"First").ok(), 1)];
    while let Some((next, level)) = stack.pop() {
        let Some(item_ref) = next else { continue };
        let Ok(id) = item_ref.as_reference() else {
            continue;
        };
        if !seen.insert(id) || out.len() >= MAX_OUTLINE_ITEMS || level as usize > MAX_TREE_DEPTH {
            continue;
        }
        let Ok(item) = doc.get_dictionary(id) else {
            continue;
        };
        // Siblings after this item's children.
        stack.push((item.get(b"Next").ok(), level));
        stack.push((item.get(b"First").ok(), level + 1));
        let title = dict_get(doc, item, b"Title")
            .and_then(text_of)
            .unwrap_or_default();
        let dest = dict_get(doc, item, b"Dest").or_else(|| {
            let action = dict_get(doc, item, b"A").and_then(|o| o.as_dict().ok())?;
            match dict_get(doc, action, b"S").and_then(|o| o.as_name().ok()) {
                Some(b"GoTo") => dict_get(doc, action, b"D"),
                _ => None, // GoToR (another file), URI, JavaScript: no page here
            }
        });
        let page = dest.and_then(|d| resolve_dest(doc, d, &named, page_of, 0));
        out.push(OutlineEntry { title, level, page });
    }
    out
}

fn resolve_dest(
    doc: &Document,
    dest: &Object,
    named: &HashMap<Vec<u8>, &Object>,
    page_of: &HashMap<ObjectId, u32>,
    depth: usize,
) -> Option<u32> {
    if depth > 4 {
        return None;
    }
    match dest {
        Object::Array(a) => {
            let first = a.first()?;
            match first {
                Object::Reference(id) => page_of.get(id).copied(),
                // Some writers use a 0-based page index instead of a reference.
                Object::Integer(i) => u32::try_from(*i).ok().map(|i| i + 1),
                _ => None,
            }
        }
        Object::Name(n) | Object::String(n, _) => {
            let target = named.get(n.as_slice())?;
            let target = deref(doc, target)?;
            let target = match target {
                Object::Dictionary(d) => dict_get(doc, d, b"D")?,
                other => other,
            };
            resolve_dest(doc, target, named, page_of, depth + 1)
        }
        Object::Dictionary(d) => {
            resolve_dest(doc, dict_get(doc, d, b"D")?, named, page_of, depth + 1)
        }
        Object::Reference(_) => resolve_dest(doc, deref(doc, dest)?, named, page_of, depth + 1),
        _ => None,
    }
}

/// Named destinations from the catalog's `/Dests` dictionary and `/Names /Dests` name tree.
fn named_destinations(doc: &Document) -> HashMap<Vec<u8>, &Object> {
    let mut out = HashMap::new();
    let Ok(catalog) = doc.catalog() else {
        return out;
    };
    if let Some(d) = dict_get(doc, catalog, b"Dests").and_then(|o| o.as_dict().ok()) {
        for (k, v) in d.iter() {
            out.insert(k.clone(), v);
        }
    }
    let tree = dict_get(doc, catalog, b"Names")
        .and_then(|o| o.as_dict().ok())
        .and_then(|n| dict_get(doc, n, b"Dests"))
        .and_then(|o| o.as_dict().ok());
    let mut stack = tree.map(|t| vec![(t, 0usize)]).unwrap_or_default();
    while let Some((node, depth)) = stack.pop() {
        if depth > MAX_TREE_DEPTH || out.len() > MAX_OUTLINE_ITEMS * 4 {
            break;
        }
        if let Some(names) = dict_get(doc, node, b"Names").and_then(|o| o.as_array().ok()) {
            for pair in names.chunks(2) {
                if let [Object::String(k, _), v] = pair {
                    out.insert(k.clone(), v);
                }
            }
        }
        if let Some(kids) = dict_get(doc, node, b"Kids").and_then(|o| o.as_array().ok()) {
            for kid in kids {
                if let Some(k) = deref(doc, kid).and_then(|o| o.as_dict().ok()) {
                    stack.push((k, depth + 1));
                }
            }
        }
    }
    out
}

fn number(o: &Object) -> Option<f32> {
    o.as_float().ok()
}

/// Walk one page's operators: text bytes, images, (font size, text) runs, ruling.
fn scan_page(doc: &Document, page: u32, id: ObjectId) -> (PageInfo, Vec<(f32, String)>) {
    let mut info = PageInfo {
        page,
        ..PageInfo::default()
    };
    let image_names = image_xobject_names(doc, id);
    let Ok(content) = doc.get_page_content_with_limit(id, MAX_PAGE_CONTENT) else {
        return (info, Vec::new());
    };
    let mut runs: Vec<(f32, String)> = Vec::new();
    let (mut font_size, mut scale) = (0f32, 1f32);
    let (mut rects, mut lines) = (0u32, 0u32);
    let mut text_bytes = 0usize;
    for op in lopdf::content::Content::decode_iter(&content).flatten() {
        match op.operator.as_str() {
            "Tf" => {
                font_size = op.operands.get(1).and_then(number).unwrap_or(0.0).abs();
            }
            "Tm" => {
                let a = op.operands.first().and_then(number).unwrap_or(1.0);
                let d = op.operands.get(3).and_then(number).unwrap_or(1.0);
                scale = (a * d).abs().sqrt();
            }
            "Tj" | "'" | "\"" | "TJ" => {
                let mut raw: Vec<u8> = Vec::new();
                for operand in &op.operands {
                    match operand {
                        Object::String(s, _) => raw.extend_from_slice(s),
                        Object::Array(parts) => {
                            for p in parts {
                                match p {
                                    Object::String(s, _) => raw.extend_from_slice(s),
                                    // A large negative kern is a word space.
                                    o if number(o).is_some_and(|k| k < -200.0) => raw.push(b' '),
                                    _ => {}
                                }
                            }
                        }
                        _ => {}
                    }
                }
                text_bytes += raw.len();
                runs.push((
                    font_size * scale,
                    raw.iter().map(|b| char::from(*b)).collect(),
                ));
            }
            "Do" => {
                if let Some(Object::Name(n)) = op.operands.first() {
                    if image_names.contains(n) {
                        info.images += 1;
                    }
                }
            }
            "BI" => info.images += 1,
            "re" => rects += 1,
            "l" => lines += 1,
            _ => {}
        }
    }
    info.text_bytes = u32::try_from(text_bytes).unwrap_or(u32::MAX);
    info.has_table = text_bytes > 0 && (rects >= 12 || lines >= 16);
    (info, runs)
}

fn image_xobject_names(doc: &Document, page: ObjectId) -> HashSet<Vec<u8>> {
    let mut names = HashSet::new();
    let Ok((own, inherited)) = doc.get_page_resources(page) else {
        return names;
    };
    let dicts = own.into_iter().chain(
        inherited
            .iter()
            .filter_map(|id| doc.get_dictionary(*id).ok()),
    );
    for res in dicts {
        let Some(xobjects) = dict_get(doc, res, b"XObject").and_then(|o| o.as_dict().ok()) else {
            continue;
        };
        for (name, obj) in xobjects.iter() {
            let is_image = deref(doc, obj)
                .and_then(|o| o.as_stream().ok())
                .and_then(|s| s.dict.get(b"Subtype").ok())
                .and_then(|o| o.as_name().ok())
                == Some(b"Image".as_slice());
            if is_image {
                names.insert(name.clone());
            }
        }
    }
    names
}

/// Headings: runs set at least 1.25× the body font size (the size most text uses), short,
/// and mostly letters (font-encoded text we cannot read without the font is skipped).
fn assign_headings(pages: &mut [PageInfo], runs: &[(u32, f32, String)]) {
    let mut weight: HashMap<i32, usize> = HashMap::new();
    for (_, size, text) in runs {
        *weight.entry((size * 2.0).round() as i32).or_default() += text.len();
    }
    let Some((&body2, _)) = weight.iter().max_by_key(|(k, w)| (**w, -**k)) else {
        return;
    };
    let body = body2 as f32 / 2.0;
    if body <= 0.0 {
        return;
    }
    // Consecutive runs of one size on a page form one heading line.
    let mut current: Option<(u32, f32, String)> = None;
    let flush = |cur: Option<(u32, f32, String)>, pages: &mut [PageInfo]| {
        let Some((page, _, text)) = cur else { return };
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let letters = text.chars().filter(|c| c.is_alphabetic()).count();
        let printable = text.chars().all(|c| !c.is_control());
        if (3..=120).contains(&text.chars().count())
            && letters * 2 >= text.chars().count()
            && printable
        {
            if let Some(p) = pages.get_mut((page as usize).saturating_sub(1)) {
                if p.headings.len() < 8 {
                    p.headings.push(text);
                }
            }
        }
    };
    for (page, size, text) in runs {
        let big = *size >= body * 1.25;
        match &mut current {
            Some((p, s, t)) if big && *p == *page && (*s - size).abs() < 0.1 => {
                t.push_str(text);
            }
            _ => {
                flush(current.take(), pages);
                if big {
                    current = Some((*page, *size, text.clone()));
                }
            }
        }
    }
    flush(current, pages);
}

/// Sections with page ranges, and the section path of each page.
fn sections(
    outline: &[OutlineEntry],
    pages: &[PageInfo],
    page_count: u32,
) -> (Vec<StructureNode>, Vec<Option<String>>) {
    // (level, title, start page) in reading order.
    let mut marks: Vec<(u32, String, u32)> = outline
        .iter()
        .filter_map(|e| Some((e.level, e.title.clone(), e.page?)))
        .collect();
    if marks.is_empty() {
        marks = pages
            .iter()
            .flat_map(|p| {
                p.headings
                    .iter()
                    .take(1)
                    .map(move |h| (1, h.clone(), p.page))
            })
            .collect();
    }
    let mut nodes = Vec::new();
    for (i, (level, title, start)) in marks.iter().enumerate() {
        let end = marks
            .iter()
            .skip(i + 1)
            .find(|(l, _, _)| l <= level)
            .map_or(page_count, |(_, _, s)| s.saturating_sub(1).max(*start));
        nodes.push(StructureNode {
            kind: "section".into(),
            title: title.clone(),
            level: *level,
            locator: String::new(),
            objects: 0,
            pages: Some((*start, end.max(*start))),
        });
    }
    // Section path per page: replay marks in page order.
    let mut order: Vec<usize> = (0..marks.len()).collect();
    order.sort_by_key(|&i| marks.get(i).map_or(0, |m| m.2));
    let mut path: Vec<(u32, String)> = Vec::new();
    let mut k = 0usize;
    let mut per_page = Vec::with_capacity(page_count as usize);
    for page in 1..=page_count {
        while let Some((level, title, start)) = order.get(k).and_then(|&i| marks.get(i)) {
            if *start > page {
                break;
            }
            while path.last().is_some_and(|(l, _)| l >= level) {
                path.pop();
            }
            path.push((*level, title.clone()));
            k += 1;
        }
        per_page.push((!path.is_empty()).then(|| {
            path.iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(SECTION_SEPARATOR)
        }));
    }
    (nodes, per_page)
}

/// Collects pdf-extract's characters into one string per page, spacing as its plain-text
/// output does.
struct PageText {
    text: String,
    last_end: f64,
    last_y: f64,
    first_char: bool,
    flip: pdf_extract::Transform,
}

impl pdf_extract::OutputDev for PageText {
    fn begin_page(
        &mut self,
        _page: u32,
        media_box: &pdf_extract::MediaBox,
        _art: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), pdf_extract::OutputError> {
        self.flip =
            pdf_extract::Transform::row_major(1., 0., 0., -1., 0., media_box.ury - media_box.lly);
        Ok(())
    }
    fn end_page(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }
    fn output_character(
        &mut self,
        trm: &pdf_extract::Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        ch: &str,
    ) -> Result<(), pdf_extract::OutputError> {
        let position = trm.post_transform(&self.flip);
        let v = trm.transform_vector(euclid::vec2(font_size, font_size));
        let size = (v.x * v.y).abs().sqrt();
        let (x, y) = (position.m31, position.m32);
        if self.first_char {
            if (y - self.last_y).abs() > size * 1.5
                || (x < self.last_end && (y - self.last_y).abs() > size * 0.5)
            {
                self.text.push('\n');
            } else if x > self.last_end + size * 0.1 {
                self.text.push(' ');
            }
        }
        self.text.push_str(ch);
        self.first_char = false;
        self.last_y = y;
        self.last_end = x + width * size;
        Ok(())
    }
    fn begin_word(&mut self) -> Result<(), pdf_extract::OutputError> {
        self.first_char = true;
        Ok(())
    }
    fn end_word(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }
    fn end_line(&mut self) -> Result<(), pdf_extract::OutputError> {
        Ok(())
    }
}

pub use crate::pdfium::PageTextResult;

/// The text of each page in `pages` (1-based), page by page: a page that fails or panics
/// yields `Err(reason)` and the others go on.
pub fn pdf_page_texts(
    bytes: &[u8],
    pages: RangeInclusive<u32>,
) -> Result<Vec<PageTextResult>, ExtractError> {
    let mut doc = pdf_extract::Document::load_mem(bytes).map_err(malformed)?;
    if doc.is_encrypted() {
        doc.decrypt("")
            .map_err(|e| malformed(format!("encrypted: {e}")))?;
    }
    let available = doc.get_pages();
    let mut out = Vec::new();
    for page in pages {
        if !available.contains_key(&page) {
            continue;
        }
        let mut dev = PageText {
            text: String::new(),
            last_end: 100_000.0,
            last_y: 0.0,
            first_char: false,
            flip: pdf_extract::Transform::identity(),
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pdf_extract::output_doc_page(&doc, &mut dev, page)
        }));
        let text = match result {
            Ok(Ok(())) => Ok(tidy(&dev.text)),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("text extraction panicked on this page".to_string()),
        };
        out.push((page, text));
    }
    Ok(out)
}

/// A page's text through lopdf's own (plainer) extraction, for pages pdf-extract fails on.
fn lopdf_page_text(doc: &Document, page: u32) -> Option<String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| doc.extract_text(&[page])))
        .ok()?
        .ok()
        .map(|t| tidy(&t))
        .filter(|t| !t.is_empty())
}

/// The text engines, as `text_source` names them.
const PDFIUM: &str = "pdfium";
const PDF_EXTRACT: &str = "pdf-extract";

/// Page texts and the engine that read them.
struct PageTexts {
    texts: Vec<PageTextResult>,
    /// Where PDFium placed each page's words and pictures (empty for pdf-extract).
    geometry: HashMap<u32, crate::pdfium::PageGeometry>,
    engine: &'static str,
    /// Why PDFium was not used although it was configured.
    pdfium_error: Option<String>,
}

/// The text of pages `range` (of `page_count`): through PDFium when it is configured and opens
/// the file, else through pdf-extract.
fn page_texts(
    input: &ExtractInput<'_>,
    range: RangeInclusive<u32>,
    page_count: u32,
) -> Result<PageTexts, ExtractError> {
    let mut pdfium_error = None;
    if let Some(path) = &input.options.pdfium_library {
        let read = crate::pdfium::library(path).and_then(|lib| {
            let doc = crate::pdfium::open(lib, input.bytes)?;
            Ok(doc.page_texts(*range.start()..=(*range.end()).min(page_count)))
        });
        match read {
            Ok((texts, geometry)) => {
                return Ok(PageTexts {
                    texts,
                    geometry,
                    engine: PDFIUM,
                    pdfium_error: None,
                })
            }
            Err(e) => pdfium_error = Some(e),
        }
    }
    Ok(PageTexts {
        texts: pdf_page_texts(input.bytes, range)?,
        geometry: HashMap::new(),
        engine: PDF_EXTRACT,
        pdfium_error,
    })
}

/// Extract pages `range` of a PDF (all pages with `None`) into objects.
pub fn extract_pdf(
    input: &ExtractInput<'_>,
    range: Option<RangeInclusive<u32>>,
) -> Result<Extraction, ExtractError> {
    let started = Instant::now();
    let mut scan = prescan_pdf(input.bytes)?;
    let range = range.unwrap_or(1..=scan.page_count.max(1));
    let PageTexts {
        texts,
        geometry,
        engine,
        pdfium_error,
    } = page_texts(input, range.clone(), scan.page_count)?;
    let mut ocr = ocr_pages(input, &scan, &texts, started);
    for page in ocr.texts.keys() {
        if let Some(info) = scan.pages.get_mut((*page as usize).saturating_sub(1)) {
            info.ocr = true;
        }
    }
    let mut sink = ObjectSink::new(input.locator, input.file_hash);
    let page_place = |page: u32, scan: &PdfScan| {
        let label = scan
            .pages
            .get((page as usize).saturating_sub(1))
            .and_then(|p| p.label.clone())
            .map_or_else(|| format!("page {page}"), |l| format!("page {page} ({l})"));
        Place {
            fragment: Fragment {
                page: Some(page),
                ..Fragment::default()
            },
            label: Some(label),
            section: scan
                .page_sections
                .get((page as usize).saturating_sub(1))
                .cloned()
                .flatten(),
        }
    };
    let mut failed_pages = Vec::new();
    // Loaded only if the text engine fails on a page: lopdf's plainer text beats none.
    let mut fallback: Option<Option<Document>> = None;
    let error_key = format!("{}_error", engine.replace('-', "_"));
    // Words hyphenated across a line break are joined, judged by the words the document
    // writes whole (`crate::hyphen`); the joins are kept in the object's metadata.
    let vocabulary = crate::hyphen::Vocabulary::of(
        texts
            .iter()
            .filter_map(|(_, t)| t.as_ref().ok().map(String::as_str)),
    );
    for (page, text) in texts {
        let page_geometry = geometry.get(&page);
        let page_size = page_geometry.map(|g| g.size).or_else(|| {
            scan.page_sizes
                .get((page as usize).saturating_sub(1))
                .copied()
                .flatten()
                .map(|(w, h)| [w as f32, h as f32])
        });
        match text {
            Ok(t) if !t.is_empty() => {
                let (t, joins) = crate::hyphen::join_hyphens(&t, &vocabulary);
                let meta = if joins.is_empty() {
                    json!({ "text_source": engine })
                } else {
                    json!({ "text_source": engine, "hyphen_joins": joins })
                };
                let first = sink.objects.len();
                sink.push(ContentType::Text, t, page_place(page, &scan), meta);
                if let Some(g) = page_geometry {
                    place_lines(
                        sink.objects.get_mut(first..).unwrap_or_default(),
                        &g.words,
                        PDF_POINTS,
                        Some(g.size),
                    );
                }
            }
            Ok(_) => {
                if let Some(t) = ocr.texts.remove(&page) {
                    let meta = t.metadata(&input.options.ocr);
                    let words = page_size.map(|s| t.words_on_page(s)).unwrap_or_default();
                    let first = sink.objects.len();
                    sink.push(ContentType::Text, t.text, page_place(page, &scan), meta);
                    place_lines(
                        sink.objects.get_mut(first..).unwrap_or_default(),
                        &words,
                        PDF_POINTS,
                        page_size,
                    );
                }
            }
            Err(reason) => {
                let doc = fallback.get_or_insert_with(|| Document::load_mem(input.bytes).ok());
                match doc.as_ref().and_then(|d| lopdf_page_text(d, page)) {
                    Some(t) => sink.push(
                        ContentType::Text,
                        t,
                        page_place(page, &scan),
                        json!({ "text_source": "lopdf", error_key.as_str(): reason }),
                    ),
                    None => failed_pages.push(json!({ "page": page, "reason": reason })),
                }
            }
        }
        let images = scan
            .page_images
            .get((page as usize).saturating_sub(1))
            .map_or(&[][..], Vec::as_slice);
        // PDFium's image objects are this page's pictures when it counts as many (lopdf lists
        // the page's image resources; a form XObject's pictures are not PDFium's top level).
        let image_boxes = page_geometry
            .map(|g| g.images.as_slice())
            .filter(|b| b.len() == images.len())
            .unwrap_or(&[]);
        for (i, (w, h)) in images.iter().enumerate() {
            let info = scan.pages.get((page as usize).saturating_sub(1));
            let scanned = info.is_some_and(|p| p.text_bytes == 0);
            let status = ocr
                .status
                .get(&page)
                .map_or("not performed", String::as_str);
            sink.push(
                ContentType::Image,
                String::new(),
                page_place(page, &scan),
                json!({ "width": w, "height": h, "scanned_page": scanned, "ocr": status }),
            );
            if let (Some(b), Some(o)) = (image_boxes.get(i), sink.objects.last_mut()) {
                o.positions = Some(crate::positions::Positions {
                    unit: PDF_POINTS.0.into(),
                    origin: PDF_POINTS.1.into(),
                    page_size: page_size.map(|s| s.map(f64::from)),
                    bbox: Some(crate::positions::round_box(*b)),
                    lines: Vec::new(),
                });
            }
        }
    }
    if !failed_pages.is_empty() {
        for o in &mut sink.objects {
            o.metadata
                .insert("failed_pages".into(), json!(failed_pages.len()));
        }
        if sink.objects.is_empty() {
            return Err(malformed(format!(
                "no page could be read ({} failed)",
                failed_pages.len()
            )));
        }
    }
    let mut nodes: Vec<StructureNode> = scan
        .sections
        .iter()
        .cloned()
        .map(|mut n| {
            let start = n.pages.map_or(1, |p| p.0);
            n.locator = locate(input.locator, start);
            n.objects = sink
                .objects
                .iter()
                .filter(|o| {
                    o.context_ref
                        .page_index
                        .is_some_and(|p| n.pages.is_some_and(|(a, b)| (a..=b).contains(&p)))
                })
                .count() as u32;
            n
        })
        .collect();
    nodes.extend(
        scan.outline
            .iter()
            .filter(|e| e.page.is_none())
            .map(|e| StructureNode {
                kind: "outline-external".into(),
                title: e.title.clone(),
                level: e.level,
                locator: input.locator.to_string(),
                objects: 0,
                pages: None,
            }),
    );
    if scan.scanned_pages > 0 {
        for o in &mut sink.objects {
            o.metadata
                .insert("scanned_pages".into(), json!(scan.scanned_pages));
        }
    }
    ocr.note_on(&mut sink.objects);
    if let Some(e) = pdfium_error {
        // PDFium was configured but not used: say why (pdf-extract read the text).
        for o in &mut sink.objects {
            o.metadata.insert("pdfium_error".into(), json!(e));
        }
    }
    Ok(Extraction {
        objects: sink.objects,
        structure: Structure {
            nodes,
            line_count: None,
            page_count: Some(scan.page_count),
            pages: scan.pages,
            properties: scan.properties,
        },
    })
}

/// Give `objects` (the consecutive pieces of one page's text) the boxes of their lines.
fn place_lines(
    objects: &mut [crate::ContentObject],
    words: &[crate::positions::Word],
    system: (&str, &str),
    page_size: Option<[f32; 2]>,
) {
    if words.is_empty() {
        return;
    }
    let mut aligner = crate::positions::Aligner::new(words);
    for o in objects {
        let lines = aligner.lines(&o.data);
        o.positions = crate::positions::of_lines(lines, system, page_size);
    }
}

/// What OCR did for a PDF's image-only pages.
#[derive(Default)]
struct PdfOcr {
    /// Recognised text by page.
    texts: HashMap<u32, OcrText>,
    /// By page: what OCR did, for the page's image objects (`text`, `no text found`,
    /// `disabled`, `skipped: …`, `failed: …`).
    status: HashMap<u32, String>,
    /// Image-only pages left out (page cap or time budget), and why.
    skipped: Vec<u32>,
    skip_reason: Option<String>,
    /// The first error (a missing program, a timeout).
    error: Option<String>,
}

impl PdfOcr {
    /// File-level notes on every object: pages skipped, the first error.
    fn note_on(&self, objects: &mut [crate::ContentObject]) {
        if !self.skipped.is_empty() {
            // The pipeline logs it (worker processes have no log of their own).
            let reason = self.skip_reason.as_deref().unwrap_or("");
            for o in objects.iter_mut() {
                o.metadata
                    .insert("ocr_pages_skipped".into(), json!(self.skipped.len()));
                o.metadata.insert("ocr_note".into(), json!(reason));
            }
        }
        if let Some(e) = &self.error {
            for o in objects.iter_mut() {
                o.metadata.insert("ocr_error".into(), json!(e));
            }
        }
        if !self.status.is_empty() {
            let done = self.status.values().filter(|s| *s == "text").count();
            for o in objects.iter_mut() {
                o.metadata.insert("ocr_pages".into(), json!(done));
            }
        }
    }
}

/// OCR the pages in `texts` that have images, no text layer and no extracted text, at most
/// `max_pages_per_file` of them and within the file's time budget.
fn ocr_pages(
    input: &ExtractInput<'_>,
    scan: &PdfScan,
    texts: &[PageTextResult],
    started: Instant,
) -> PdfOcr {
    let opts = &input.options.ocr;
    let mut out = PdfOcr::default();
    let candidates: Vec<u32> = texts
        .iter()
        .filter(|(page, text)| {
            matches!(text, Ok(t) if t.is_empty())
                && scan
                    .pages
                    .get((*page as usize).saturating_sub(1))
                    .is_some_and(|p| p.images > 0 && p.text_bytes == 0)
        })
        .map(|(page, _)| *page)
        .collect();
    if candidates.is_empty() {
        return out;
    }
    if !opts.enabled {
        for p in candidates {
            out.status.insert(p, "disabled".into());
        }
        return out;
    }
    let mut session = match OcrSession::new(opts, started) {
        Ok(s) => s,
        Err(e) => {
            for p in candidates {
                out.status.insert(p, format!("failed: {e}"));
            }
            out.error = Some(e.to_string());
            return out;
        }
    };
    // For pages that are one JPEG scan (see `page_jpeg`).
    let doc = Document::load_mem(input.bytes).ok();
    let page_ids = doc.as_ref().map(Document::get_pages).unwrap_or_default();
    let cap = opts.max_pages_per_file as usize;
    let mut given_up: Option<String> = None;
    for (i, page) in candidates.into_iter().enumerate() {
        if let Some(e) = &given_up {
            out.status.insert(page, format!("failed: {e}"));
            continue;
        }
        if i >= cap {
            out.skipped.push(page);
            out.skip_reason = Some(format!(
                "past ocr.max_pages_per_file ({cap}): pages after the first {cap} image-only pages were not OCR'd"
            ));
            out.status
                .insert(page, "skipped: ocr.max_pages_per_file".into());
            continue;
        }
        if session.time_left().is_none() {
            out.skipped.push(page);
            out.skip_reason
                .get_or_insert_with(|| "the file's OCR time budget ran out".into());
            out.status.insert(page, "skipped: time budget".into());
            continue;
        }
        let size = scan
            .page_sizes
            .get((page as usize).saturating_sub(1))
            .copied()
            .flatten();
        let jpeg = doc.as_ref().and_then(|d| {
            let id = page_ids.get(&page)?;
            page_jpeg(d, *id, size)
        });
        let result = match jpeg {
            Some((bytes, dpi)) => match session.image_at(bytes, "jpg", Some(dpi)) {
                // A JPEG tesseract cannot read: let poppler render the page.
                Err(crate::OcrError::Failed { .. }) => session.pdf_page(input.bytes, page, size),
                other => other,
            },
            None => session.pdf_page(input.bytes, page, size),
        };
        match result {
            Ok(Some(t)) => {
                tracing::debug!(page, seconds = t.seconds, words = t.words, "OCR'd a page");
                out.status.insert(page, "text".into());
                out.texts.insert(page, t);
            }
            Ok(None) => {
                out.status.insert(page, "no text found".into());
            }
            Err(e) => {
                out.status.insert(page, format!("failed: {e}"));
                out.error.get_or_insert_with(|| e.to_string());
                if e.is_missing() {
                    given_up = Some(e.to_string());
                }
            }
        }
    }
    out
}

fn locate(file: &Locator, page: u32) -> String {
    file.with_fragment(Fragment {
        page: Some(page),
        ..Fragment::default()
    })
    .to_string()
}

impl Extractor for Pdf {
    fn name(&self) -> &'static str {
        "pdf"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        extract_pdf(input, None)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use lopdf::content::{Content, Operation};
    use lopdf::{dictionary, Stream};

    /// A small PDF with `pages` (each a list of (font size, text) lines) and an outline of
    /// (title, level, page) entries, built with lopdf.
    pub(crate) fn pdf_fixture(pages: &[&[(i64, &str)]], outline: &[(&str, u32, u32)]) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        });
        let resources_id = doc.add_object(dictionary! {
            "Font" => dictionary! { "F1" => font_id },
        });
        let mut kids = Vec::new();
        for lines in pages {
            let mut ops = vec![Operation::new("BT", vec![])];
            let mut y = 760;
            for (size, text) in lines.iter() {
                ops.push(Operation::new("Tf", vec!["F1".into(), (*size).into()]));
                ops.push(Operation::new("Td", vec![72.into(), y.into()]));
                ops.push(Operation::new("Tj", vec![Object::string_literal(*text)]));
                ops.push(Operation::new("Td", vec![(-72).into(), (-y).into()]));
                y -= 30;
            }
            ops.push(Operation::new("ET", vec![]));
            let content = Content { operations: ops };
            let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
            let page_id = doc.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
                "Resources" => resources_id, "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            });
            kids.push(page_id);
        }
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages",
                "Kids" => kids.iter().map(|k| Object::Reference(*k)).collect::<Vec<_>>(),
                "Count" => kids.len() as i64,
            }),
        );
        let mut catalog = dictionary! { "Type" => "Catalog", "Pages" => pages_id };
        if !outline.is_empty() {
            // Flat list of top-level items; level-2 items become children of the previous
            // level-1 item.
            let outlines_id = doc.new_object_id();
            let ids: Vec<ObjectId> = outline.iter().map(|_| doc.new_object_id()).collect();
            let mut parents: Vec<Option<usize>> = Vec::new();
            let mut last_top = None;
            for (i, (_, level, _)) in outline.iter().enumerate() {
                if *level == 1 {
                    parents.push(None);
                    last_top = Some(i);
                } else {
                    parents.push(last_top);
                }
            }
            for (i, (title, _, page)) in outline.iter().enumerate() {
                let parent = parents[i];
                let siblings: Vec<usize> = (0..outline.len())
                    .filter(|j| parents[*j] == parent)
                    .collect();
                let pos = siblings.iter().position(|j| *j == i).unwrap();
                let children: Vec<usize> = (0..outline.len())
                    .filter(|j| parents[*j] == Some(i))
                    .collect();
                let mut d = dictionary! {
                    "Title" => Object::string_literal(*title),
                    "Parent" => parent.map_or(outlines_id, |p| ids[p]),
                    "Dest" => vec![Object::Reference(kids[(*page - 1) as usize]), "Fit".into()],
                };
                if let Some(n) = siblings.get(pos + 1) {
                    d.set("Next", ids[*n]);
                }
                if let (Some(f), Some(l)) = (children.first(), children.last()) {
                    d.set("First", ids[*f]);
                    d.set("Last", ids[*l]);
                }
                doc.objects.insert(ids[i], Object::Dictionary(d));
            }
            let tops: Vec<usize> = (0..outline.len())
                .filter(|j| parents[*j].is_none())
                .collect();
            doc.objects.insert(
                outlines_id,
                Object::Dictionary(dictionary! {
                    "Type" => "Outlines",
                    "First" => ids[tops[0]],
                    "Last" => ids[*tops.last().unwrap()],
                }),
            );
            catalog.set("Outlines", outlines_id);
        }
        let catalog_id = doc.add_object(catalog);
        doc.trailer.set("Root", catalog_id);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    fn run(bytes: &[u8]) -> Extraction {
        run_with(bytes, crate::ExtractOptions::defaults())
    }

    fn run_with(bytes: &[u8], options: &crate::ExtractOptions) -> Extraction {
        let loc = Locator::root("r.pdf");
        let det = crate::detect(bytes, "r.pdf");
        crate::extract(&ExtractInput {
            bytes,
            locator: &loc,
            file_hash: "abcdef",
            detected: &det,
            options,
        })
        .unwrap()
    }

    /// The provisioned PDFium (`make models` puts it in the model folder).
    pub(crate) fn with_pdfium() -> crate::ExtractOptions {
        let lib = crate::testing::crate_dir().join("../.models/all-minilm-l6-v2-int8/libpdfium.so");
        assert!(
            lib.is_file(),
            "{} missing: run `make models`",
            lib.display()
        );
        crate::ExtractOptions {
            pdfium_library: Some(lib),
            ..crate::ExtractOptions::default()
        }
    }

    /// Whether `want`'s chars occur in `have` in order.
    fn in_order(want: &[char], have: &[char]) -> bool {
        let mut have = have.iter();
        want.iter().all(|c| have.any(|h| h == c))
    }

    fn counted_chars(s: &str) -> Vec<char> {
        s.chars()
            .filter(|c| crate::positions::counted(*c))
            .collect()
    }

    /// Every line box PDFium's text gets holds its line: PDFium's own text inside the box
    /// (`FPDFText_GetBoundedText`) has the line's characters in order, on the fixtures' PDF,
    /// on a page with words hyphenated across lines (joined, so their box reaches the next
    /// printed line) and on a page long enough to be cut into several objects; every
    /// character of every text object is on some line with a box; pictures get their box.
    #[test]
    fn every_line_box_holds_its_text_as_pdfium_reads_it_inside_the_box() {
        let options = with_pdfium();
        let lib = crate::pdfium::library(options.pdfium_library.as_ref().unwrap()).unwrap();
        let long_line = "lanterns and lenses ".repeat(40);
        let long_page: Vec<(i64, &str)> = (0..25).map(|_| (4, long_line.as_str())).collect();
        let generated = pdf_fixture(
            &[
                &[
                    (24, "Harbour lights"),
                    (11, "The keepers trimmed the wicks of the remark-"),
                    (11, "able lamps at dusk and polished the lenses"),
                    (11, "of the light-"),
                    (11, "house before the fog-"),
                    (11, "bound ships came in."),
                ],
                &long_page,
            ],
            &[],
        );
        let survey = std::fs::read(
            crate::testing::crate_dir().join("../fixtures/formats/survey-report.pdf"),
        )
        .unwrap();
        let mut lines_checked = 0;
        for (name, bytes) in [("generated", &generated), ("survey-report.pdf", &survey)] {
            let e = run_with(bytes, &options);
            let doc = crate::pdfium::open(lib, bytes).unwrap();
            let texts: Vec<_> = e
                .objects
                .iter()
                .filter(|o| o.content_type == ContentType::Text)
                .collect();
            assert!(!texts.is_empty(), "{name}");
            for o in texts {
                let p = o.positions.as_ref().unwrap_or_else(|| {
                    panic!("{name}: no positions on {}", o.context_ref.location)
                });
                assert_eq!((p.unit.as_str(), p.origin.as_str()), ("pt", "bottom-left"));
                let page = o.context_ref.page_index.unwrap();
                let chars: Vec<char> = o.data.chars().collect();
                let mut on_lines = 0;
                for l in &p.lines {
                    let line: String = chars[l.start as usize..l.end as usize].iter().collect();
                    assert!(
                        !line.contains('\n') && line.trim() == line,
                        "{name}: {line:?}"
                    );
                    let [x0, y0, x1, y1] = l.bbox.map(|v| v as f32);
                    assert!(x0 <= x1 && y0 <= y1, "{name}: {:?}", l.bbox);
                    let inside = doc.text_inside(page, [x0, y0, x1, y1]).unwrap();
                    assert!(
                        in_order(&counted_chars(&line), &counted_chars(&inside)),
                        "{name} page {page}: line {line:?} not inside its box {:?}: {inside:?}",
                        l.bbox
                    );
                    // The check can fail: the box moved off the page holds nothing.
                    let away = doc
                        .text_inside(page, [x0, y0 - 2000.0, x1, y1 - 2000.0])
                        .unwrap();
                    assert!(counted_chars(&away).is_empty(), "{name}: {away:?}");
                    on_lines += counted_chars(&line).len();
                    lines_checked += 1;
                }
                assert_eq!(
                    on_lines,
                    counted_chars(&o.data).len(),
                    "{name}: a character without a line"
                );
            }
        }
        assert!(lines_checked >= 30, "{lines_checked}");
        eprintln!("{lines_checked} line boxes checked");
        // The joined words' lines reach the next printed line.
        let e = run_with(&generated, &options);
        let first = &e.objects[0];
        assert!(first.data.contains("remarkable"), "{}", first.data);
        let p = first.positions.as_ref().unwrap();
        let joined = p
            .lines
            .iter()
            .find(|l| {
                first
                    .data
                    .chars()
                    .skip(l.start as usize)
                    .take((l.end - l.start) as usize)
                    .collect::<String>()
                    .contains("remarkable")
            })
            .unwrap();
        assert!(joined.bbox[3] - joined.bbox[1] > 30.0, "{:?}", joined.bbox);
        // The long page is cut into pieces, each with its own lines, offsets in the piece.
        let long: Vec<_> = e
            .objects
            .iter()
            .filter(|o| o.context_ref.page_index == Some(2))
            .collect();
        assert!(long.len() >= 2, "{}", long.len());
        assert!(long
            .iter()
            .all(|o| o.positions.as_ref().is_some_and(|p| p.lines[0].start == 0)));
    }

    fn sources(e: &Extraction) -> Vec<&str> {
        e.objects
            .iter()
            .filter(|o| o.content_type == ContentType::Text)
            .map(|o| o.metadata["text_source"].as_str().unwrap())
            .collect()
    }

    /// PDFium reads the text when it is provisioned, page by page; without it (or when it
    /// cannot be loaded) pdf-extract does, with the same words and the reason noted.
    #[test]
    fn pdfium_reads_page_text_when_provisioned_else_pdf_extract() {
        let pdf = pdf_fixture(
            &[
                &[(24, "Introduction"), (11, "Lighthouses guide ships.")],
                &[(11, "Keepers trimmed the wicks at dusk.")],
            ],
            &[("Introduction", 1, 1)],
        );
        let fast = run_with(&pdf, &with_pdfium());
        assert_eq!(sources(&fast), ["pdfium", "pdfium"]);
        assert!(fast
            .objects
            .iter()
            .all(|o| !o.metadata.contains_key("pdfium_error")));
        let texts: Vec<_> = fast.objects.iter().map(|o| o.data.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Introduction\nLighthouses guide ships.",
                "Keepers trimmed the wicks at dusk."
            ]
        );
        assert_eq!(fast.objects[1].context_ref.location, "r.pdf#page=2");
        assert_eq!(
            fast.objects[1].context_ref.section_id.as_deref(),
            Some("Introduction")
        );

        let fallback = run(&pdf);
        assert_eq!(sources(&fallback), ["pdf-extract", "pdf-extract"]);
        assert_eq!(words(&fallback.objects[0].data), words(texts[0]));
        assert_eq!(fallback.structure, fast.structure);

        let missing = crate::ExtractOptions {
            pdfium_library: Some("/nonexistent/libpdfium.so".into()),
            ..crate::ExtractOptions::default()
        };
        let e = run_with(&pdf, &missing);
        assert_eq!(sources(&e), ["pdf-extract", "pdf-extract"]);
        let why = e.objects[0].metadata["pdfium_error"].as_str().unwrap();
        assert!(why.contains("/nonexistent/libpdfium.so"), "{why}");
    }

    #[test]
    fn outline_sections_and_page_accurate_text() {
        let pdf = pdf_fixture(
            &[
                &[(24, "Introduction"), (11, "Lighthouses guide ships.")],
                &[(11, "Keepers trimmed the wicks at dusk.")],
                &[(24, "Installation"), (11, "Mount the lens on mercury.")],
            ],
            &[
                ("1 Introduction", 1, 1),
                ("1.1 Keepers", 2, 2),
                ("2 Installation", 1, 3),
            ],
        );
        let scan = prescan_pdf(&pdf).unwrap();
        assert_eq!(scan.page_count, 3);
        let titles: Vec<_> = scan
            .sections
            .iter()
            .map(|n| (n.title.as_str(), n.level, n.pages))
            .collect();
        assert_eq!(
            titles,
            vec![
                ("1 Introduction", 1, Some((1, 2))),
                ("1.1 Keepers", 2, Some((2, 2))),
                ("2 Installation", 1, Some((3, 3)))
            ]
        );
        assert_eq!(scan.pages[0].headings, vec!["Introduction"]);
        let e = run(&pdf);
        let texts: Vec<_> = e
            .objects
            .iter()
            .map(|o| {
                (
                    o.context_ref.location.as_str(),
                    o.context_ref.section_id.as_deref(),
                    o.data.as_str(),
                )
            })
            .collect();
        assert_eq!(texts[1].0, "r.pdf#page=2");
        assert_eq!(texts[1].1, Some("1 Introduction › 1.1 Keepers"));
        assert!(
            texts[1].2.contains("Keepers trimmed the wicks"),
            "{texts:?}"
        );
        assert!(!texts[1].2.contains("Lighthouses"), "{texts:?}");
        assert_eq!(e.structure.page_count, Some(3));
    }

    #[test]
    fn without_an_outline_sections_come_from_large_type() {
        let pdf = pdf_fixture(
            &[
                &[(20, "Chapter One"), (10, "Body text body text body text.")],
                &[(10, "More body text here.")],
            ],
            &[],
        );
        let scan = prescan_pdf(&pdf).unwrap();
        assert!(scan.outline.is_empty());
        assert_eq!(
            scan.sections.first().map(|s| s.title.as_str()),
            Some("Chapter One")
        );
        assert_eq!(
            scan.page_sections.get(1).cloned().flatten().as_deref(),
            Some("Chapter One")
        );
    }

    #[test]
    fn on_demand_pages_read_only_those_pages() {
        let pages: Vec<Vec<(i64, String)>> = (1..=10)
            .map(|i| vec![(11, format!("This is page {i}."))])
            .collect();
        let refs: Vec<Vec<(i64, &str)>> = pages
            .iter()
            .map(|p| p.iter().map(|(s, t)| (*s, t.as_str())).collect())
            .collect();
        let slices: Vec<&[(i64, &str)]> = refs.iter().map(Vec::as_slice).collect();
        let pdf = pdf_fixture(&slices, &[]);
        let texts = pdf_page_texts(&pdf, 5..=8).unwrap();
        let got: Vec<u32> = texts.iter().map(|(p, _)| *p).collect();
        assert_eq!(got, vec![5, 6, 7, 8]);
        assert!(texts[0].1.as_ref().unwrap().contains("page 5"));
    }

    fn words(s: &str) -> std::collections::BTreeSet<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    }

    /// Page accuracy against poppler: for five generated documents, the text object of page
    /// N carries page N and has the words `pdftotext -f N -l N` finds on that page.
    #[test]
    fn page_text_matches_pdftotext_page_by_page() {
        let vocab = [
            "tide", "gauge", "harbour", "ledger", "buoy", "ferry", "beacon", "survey", "anchor",
            "keeper",
        ];
        let dir = std::env::temp_dir().join(format!("ingest-pdftotext-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for doc in 0..5usize {
            let page_count = 2 + doc * 2;
            let pages: Vec<Vec<(i64, String)>> = (1..=page_count)
                .map(|p| {
                    let mut lines = vec![(18, format!("Chapter {p} of document {doc}"))];
                    for l in 0..(3 + doc) {
                        let w: Vec<&str> = (0..8)
                            .map(|k| vocab[(p * 7 + l * 3 + k + doc) % vocab.len()])
                            .collect();
                        lines.push((11, format!("marker{p}x{l} {}", w.join(" "))));
                    }
                    lines
                })
                .collect();
            let refs: Vec<Vec<(i64, &str)>> = pages
                .iter()
                .map(|p| p.iter().map(|(s, t)| (*s, t.as_str())).collect())
                .collect();
            let slices: Vec<&[(i64, &str)]> = refs.iter().map(Vec::as_slice).collect();
            let bytes = pdf_fixture(&slices, &[("Start", 1, 1)]);
            let path = dir.join(format!("doc{doc}.pdf"));
            std::fs::write(&path, &bytes).unwrap();
            for (engine, e) in [
                ("pdfium", run_with(&bytes, &with_pdfium())),
                ("pdf-extract", run(&bytes)),
            ] {
                assert_eq!(sources(&e).len(), page_count, "{engine}");
                assert!(sources(&e).iter().all(|s| *s == engine), "{engine}");
                for p in 1..=page_count as u32 {
                    let ours: Vec<_> = e
                        .objects
                        .iter()
                        .filter(|o| {
                            o.context_ref.page_index == Some(p)
                                && o.content_type == ContentType::Text
                        })
                        .collect();
                    assert_eq!(ours.len(), 1, "doc {doc} page {p}");
                    assert_eq!(ours[0].context_ref.location, format!("r.pdf#page={p}"));
                    let out = std::process::Command::new("pdftotext")
                    .args(["-f", &p.to_string(), "-l", &p.to_string(), "-layout"])
                    .arg(&path)
                    .arg("-")
                    .output()
                    .expect(
                        "pdftotext (Debian poppler-utils) must be installed: make test installs it",
                    );
                    let theirs = words(&String::from_utf8_lossy(&out.stdout));
                    let mine = words(&ours[0].data);
                    let common = mine.intersection(&theirs).count() as f64;
                    let f1 = 2.0 * common / (mine.len() + theirs.len()) as f64;
                    assert!(
                    f1 > 0.95,
                    "doc {doc} page {p} ({engine}): F1 {f1:.3}\nours: {mine:?}\npoppler: {theirs:?}"
                );
                    assert!(
                        mine.iter()
                            .filter(|w| w.starts_with("marker"))
                            .all(|w| w.starts_with(&format!("marker{p}x"))),
                        "doc {doc} page {p} mixes pages ({engine})"
                    );
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn letter_with(ocr: crate::OcrOptions) -> Extraction {
        let bytes = std::fs::read(
            crate::testing::crate_dir().join("../fixtures/formats/scanned-letter.pdf"),
        )
        .unwrap();
        let loc = Locator::root("letter.pdf");
        let det = crate::detect(&bytes, "letter.pdf");
        let options = crate::ExtractOptions {
            ocr,
            ..crate::ExtractOptions::default()
        };
        crate::extract(&ExtractInput {
            bytes: &bytes,
            locator: &loc,
            file_hash: "abcdef",
            detected: &det,
            options: &options,
        })
        .unwrap()
    }

    fn ocr_texts(e: &Extraction) -> Vec<(&str, &str)> {
        e.objects
            .iter()
            .filter(|o| o.content_type == ContentType::Text)
            .map(|o| (o.context_ref.location.as_str(), o.data.as_str()))
            .collect()
    }

    /// Image-only pages get a text object at the page's locator, with its label, marked
    /// `ocr: true`; the image objects stay and say what OCR did.
    #[test]
    fn image_only_pages_are_ocrd_into_page_text_objects() {
        let e = letter_with(crate::OcrOptions::default());
        let texts = ocr_texts(&e);
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert_eq!(texts[0].0, "letter.pdf#page=1");
        assert!(texts[0].1.contains("barnacle inspection"), "{texts:?}");
        assert!(texts[1].1.contains("cormorant colony"), "{texts:?}");
        // Page 1 is a 1-bit Flate scan (rendered by pdftoppm), page 2 a greyscale JPEG read
        // as it is.
        let inputs: Vec<_> = e
            .objects
            .iter()
            .filter(|o| o.content_type == ContentType::Text)
            .map(|o| o.metadata["ocr_input"].as_str().unwrap())
            .collect();
        assert_eq!(inputs, ["rendered page", "page JPEG"]);
        let first = &e.objects[0];
        assert_eq!(first.metadata["ocr"], true);
        assert_eq!(first.metadata["ocr_lang"], "eng+deu");
        assert_eq!(first.context_ref.label.as_deref(), Some("page 1"));
        assert!(first.metadata["ocr_confidence"]
            .as_f64()
            .is_some_and(|c| c > 50.0));
        let images: Vec<_> = e
            .objects
            .iter()
            .filter(|o| o.content_type == ContentType::Image)
            .collect();
        assert_eq!(images.len(), 2);
        assert!(images.iter().all(|o| o.metadata["ocr"] == "text"));
        assert!(e.structure.pages.iter().all(|p| p.ocr && p.text_bytes == 0));
        // Tesseract's boxes, moved from the picture's pixels to the page's points: every
        // line with text has one, on the page, the first line above the last.
        for o in e
            .objects
            .iter()
            .filter(|o| o.content_type == ContentType::Text)
        {
            let p = o.positions.as_ref().expect("OCR text has positions");
            assert_eq!((p.unit.as_str(), p.origin.as_str()), ("pt", "bottom-left"));
            let [w, h] = p.page_size.unwrap();
            let with_text = o
                .data
                .lines()
                .filter(|l| l.chars().any(crate::positions::counted))
                .count();
            assert_eq!(p.lines.len(), with_text, "{:?}", o.data);
            for l in &p.lines {
                let [x0, y0, x1, y1] = l.bbox;
                assert!(
                    0.0 <= x0 && x0 < x1 && x1 <= w + 0.5 && 0.0 <= y0 && y0 < y1 && y1 <= h + 0.5,
                    "{:?} on {w}x{h}",
                    l.bbox
                );
            }
            assert!(
                p.lines[0].bbox[1] > p.lines.last().unwrap().bbox[3],
                "{:?}",
                p.lines
            );
        }
    }

    #[test]
    fn ocr_off_a_page_cap_and_a_missing_program_leave_the_file_readable() {
        let off = letter_with(crate::OcrOptions {
            enabled: false,
            ..crate::OcrOptions::default()
        });
        assert!(ocr_texts(&off).is_empty());
        assert!(off.objects.iter().all(|o| o.metadata["ocr"] == "disabled"));
        assert!(off.structure.pages.iter().all(|p| !p.ocr));

        let capped = letter_with(crate::OcrOptions {
            max_pages_per_file: 1,
            ..crate::OcrOptions::default()
        });
        let texts = ocr_texts(&capped);
        assert_eq!(texts.len(), 1, "{texts:?}");
        assert_eq!(texts[0].0, "letter.pdf#page=1");
        for o in &capped.objects {
            assert_eq!(o.metadata["ocr_pages_skipped"], 1);
            assert!(o.metadata["ocr_note"]
                .as_str()
                .unwrap()
                .contains("max_pages_per_file"));
        }

        let missing = letter_with(crate::OcrOptions {
            tesseract: "/nonexistent/tesseract".into(),
            ..crate::OcrOptions::default()
        });
        assert!(ocr_texts(&missing).is_empty());
        assert_eq!(missing.objects.len(), 2, "both pictures still there");
        for o in &missing.objects {
            let error = o.metadata["ocr_error"].as_str().unwrap();
            assert!(
                error.contains("/nonexistent/tesseract not found"),
                "{error}"
            );
        }
    }

    #[test]
    fn labels_roman_and_letters() {
        assert_eq!(roman(4), "iv");
        assert_eq!(roman(1994), "mcmxciv");
        assert_eq!(letters(1), "a");
        assert_eq!(letters(28), "bb");
    }
}
