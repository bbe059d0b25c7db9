//! DOCX through docx-rs: paragraphs grouped into sections by heading styles, tables as
//! Markdown, pictures as `image` objects, the section path on every object.
//!
//! A paragraph is a heading when it (or its style) has an outline level, or its style is one
//! of Word's built-in "heading N" styles (whose names are stored in English whatever the UI
//! language). The package is checked ([`check_package`]) before docx-rs reads it, because
//! docx-rs pre-allocates each part's declared size. Image previews are not generated (that
//! would decode every picture).

use std::collections::HashMap;

use docx_rs::{
    DocumentChild, DrawingData, InsertChild, MoveToChild, Paragraph, ParagraphChild,
    ReadDocxOptions, Run, RunChild, StructuredDataTagChild, Table, TableCellContent, TableChild,
    TableRowChild,
};
use serde_json::json;

use crate::flow::FlowWriter;
use crate::package::check_package;
use crate::{ExtractError, ExtractInput, Extraction, Extractor};

pub(crate) struct Docx;

/// Outline levels beyond this are body text (Word uses 9 for "body text").
const MAX_OUTLINE_LEVEL: usize = 8;
/// Nesting of tables and content controls followed; deeper content is flattened away.
const MAX_NESTING: usize = 16;
/// EMUs per pixel at 96 dpi.
const EMU_PER_PIXEL: u32 = 9525;

impl Extractor for Docx {
    fn name(&self) -> &'static str {
        "docx"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        check_package("docx", input.bytes)?;
        let docx = docx_rs::read_docx_with_options(
            input.bytes,
            ReadDocxOptions::default().with_image_previews(false),
        )
        .map_err(|e| ExtractError::malformed("docx", e))?;
        let mut walker = Walker {
            out: FlowWriter::new(input.locator, input.file_hash),
            levels: heading_styles(&docx.styles),
            media: docx
                .images
                .iter()
                .map(|(id, path, image, _)| {
                    let size = imagesize::blob_size(&image.0)
                        .ok()
                        .map(|s| (s.width, s.height));
                    (id.clone(), (path.clone(), size))
                })
                .collect(),
        };
        for child in &docx.document.children {
            walker.block(child, 0);
        }
        Ok(walker.out.finish())
    }
}

/// Style id → heading level (1-based) for the styles that are headings.
fn heading_styles(styles: &docx_rs::Styles) -> HashMap<String, u32> {
    styles
        .styles
        .iter()
        .filter_map(|s| {
            let level = s
                .paragraph_property
                .outline_lvl
                .as_ref()
                .map(|o| o.v)
                .filter(|v| *v <= MAX_OUTLINE_LEVEL)
                .map(|v| v + 1)
                .or_else(|| s.name.get_heading_number())
                .or_else(|| s.name.starts_with("Title").then_some(1))?;
            Some((s.style_id.clone(), u32::try_from(level).ok()?))
        })
        .collect()
}

/// A picture found in a run: its relationship id and its extent in EMU.
struct Picture {
    id: String,
    extent: (u32, u32),
}

struct Walker<'a> {
    out: FlowWriter<'a>,
    levels: HashMap<String, u32>,
    /// Relationship id → (media part, pixel size read from the image's header).
    media: HashMap<String, (String, Option<(usize, usize)>)>,
}

impl Walker<'_> {
    fn block(&mut self, child: &DocumentChild, depth: usize) {
        match child {
            DocumentChild::Paragraph(p) => self.paragraph(p),
            DocumentChild::Table(t) => {
                let rows = table_rows(t, depth);
                self.out.table(&rows);
            }
            DocumentChild::StructuredDataTag(sdt) if depth < MAX_NESTING => {
                for c in &sdt.children {
                    match c {
                        StructuredDataTagChild::Paragraph(p) => self.paragraph(p),
                        StructuredDataTagChild::Table(t) => {
                            let rows = table_rows(t, depth + 1);
                            self.out.table(&rows);
                        }
                        StructuredDataTagChild::Run(r) => {
                            let mut text = String::new();
                            run_text(r, &mut text, &mut Vec::new());
                            self.out.paragraph(&text);
                        }
                        StructuredDataTagChild::StructuredDataTag(inner) => {
                            self.block(&DocumentChild::StructuredDataTag(inner.clone()), depth + 1)
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn level(&self, p: &Paragraph) -> Option<u32> {
        if let Some(o) = &p.property.outline_lvl {
            return (o.v <= MAX_OUTLINE_LEVEL).then(|| o.v as u32 + 1);
        }
        let style = p.property.style.as_ref()?;
        self.levels.get(&style.val).copied()
    }

    fn paragraph(&mut self, p: &Paragraph) {
        let mut text = String::new();
        let mut pictures = Vec::new();
        paragraph_text(&p.children, &mut text, &mut pictures, 0);
        match self.level(p) {
            Some(level) => self.out.heading(level, &text),
            None => self.out.paragraph(&text),
        }
        for pic in pictures {
            let (media, pixels) = self
                .media
                .get(&pic.id)
                .cloned()
                .unwrap_or_else(|| (String::new(), None));
            let (w, h) = pixels.unwrap_or((
                (pic.extent.0 / EMU_PER_PIXEL) as usize,
                (pic.extent.1 / EMU_PER_PIXEL) as usize,
            ));
            let name = media.rsplit('/').next().unwrap_or_default().to_string();
            let format = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
            let label = if name.is_empty() {
                "picture".into()
            } else {
                name
            };
            self.out.image(
                label,
                json!({
                    "width": w,
                    "height": h,
                    "format": format,
                    "part": media,
                    "extent_emu": [pic.extent.0, pic.extent.1],
                }),
            );
        }
    }
}

fn paragraph_text(
    children: &[ParagraphChild],
    text: &mut String,
    pictures: &mut Vec<Picture>,
    depth: usize,
) {
    if depth > MAX_NESTING {
        return;
    }
    for child in children {
        match child {
            ParagraphChild::Run(r) => run_text(r, text, pictures),
            ParagraphChild::Insert(ins) => {
                for c in &ins.children {
                    if let InsertChild::Run(r) = c {
                        run_text(r, text, pictures);
                    }
                }
            }
            ParagraphChild::MoveTo(m) => {
                for c in &m.children {
                    if let MoveToChild::Run(r) = c {
                        run_text(r, text, pictures);
                    }
                }
            }
            ParagraphChild::Hyperlink(h) => paragraph_text(&h.children, text, pictures, depth + 1),
            ParagraphChild::StructuredDataTag(sdt) => {
                for c in &sdt.children {
                    match c {
                        StructuredDataTagChild::Run(r) => run_text(r, text, pictures),
                        StructuredDataTagChild::Paragraph(p) => {
                            paragraph_text(&p.children, text, pictures, depth + 1)
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

fn run_text(run: &Run, text: &mut String, pictures: &mut Vec<Picture>) {
    for child in &run.children {
        match child {
            RunChild::Text(t) => text.push_str(&t.text),
            RunChild::Tab(_) | RunChild::PTab(_) => text.push('\t'),
            RunChild::Break(_) | RunChild::CarriageReturn(_) => text.push('\n'),
            RunChild::Drawing(d) => {
                if let Some(DrawingData::Pic(pic)) = &d.data {
                    pictures.push(Picture {
                        id: pic.id.clone(),
                        extent: pic.size,
                    });
                }
            }
            _ => {}
        }
    }
}

/// A table's rows of cell texts; nested tables are flattened into their cell's text.
fn table_rows(table: &Table, depth: usize) -> Vec<Vec<String>> {
    table
        .rows
        .iter()
        .map(|TableChild::TableRow(row)| {
            row.cells
                .iter()
                .map(|TableRowChild::TableCell(cell)| {
                    let mut parts = Vec::new();
                    for content in &cell.children {
                        match content {
                            TableCellContent::Paragraph(p) => {
                                let mut t = String::new();
                                paragraph_text(&p.children, &mut t, &mut Vec::new(), depth);
                                parts.push(t);
                            }
                            TableCellContent::Table(inner) if depth < MAX_NESTING => {
                                for r in table_rows(inner, depth + 1) {
                                    parts.push(r.join(" "));
                                }
                            }
                            _ => {}
                        }
                    }
                    parts
                        .join(" ")
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::{extract_as, placed, zip_parts};
    use crate::{DocumentKind, FileKind};

    const W: &str = "xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"";

    /// A DOCX whose body is `body` (WordprocessingML inside `<w:body>`), with Heading1 and
    /// Heading2 styles.
    pub(crate) fn docx_fixture(body: &str) -> Vec<u8> {
        let styles = format!(
            "<w:styles {W}>\
             <w:style w:type=\"paragraph\" w:styleId=\"Heading1\"><w:name w:val=\"heading 1\"/><w:pPr><w:outlineLvl w:val=\"0\"/></w:pPr></w:style>\
             <w:style w:type=\"paragraph\" w:styleId=\"Heading2\"><w:name w:val=\"heading 2\"/></w:style>\
             </w:styles>"
        );
        let document = format!("<w:document {W}><w:body>{body}</w:body></w:document>");
        zip_parts(&[
            ("[Content_Types].xml", "<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\"><Default Extension=\"xml\" ContentType=\"application/xml\"/><Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/><Override PartName=\"/word/document.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/></Types>"),
            ("_rels/.rels", "<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"word/document.xml\"/></Relationships>"),
            ("word/_rels/document.xml.rels", "<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rIdS\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles\" Target=\"styles.xml\"/></Relationships>"),
            ("word/styles.xml", &styles),
            ("word/document.xml", &document),
        ])
    }

    pub(crate) fn p(style: Option<&str>, text: &str) -> String {
        let ppr = style
            .map(|s| format!("<w:pPr><w:pStyle w:val=\"{s}\"/></w:pPr>"))
            .unwrap_or_default();
        format!("<w:p>{ppr}<w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
    }

    fn run(bytes: &[u8]) -> Extraction {
        extract_as(
            "h.docx",
            bytes,
            Some(FileKind::Document(DocumentKind::Docx)),
        )
        .unwrap()
    }

    #[test]
    fn heading_styles_make_sections_and_tables_become_markdown() {
        let table = "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Item</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Count</w:t></w:r></w:p></w:tc></w:tr>\
                     <w:tr><w:tc><w:p><w:r><w:t>Brass sextant</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>2</w:t></w:r></w:p></w:tc></w:tr></w:tbl>";
        let body = format!(
            "{}{}{}{}{}",
            p(Some("Heading1"), "Safety"),
            p(None, "Wear a vest &amp; gloves."),
            p(Some("Heading2"), "Boats"),
            p(None, "Check the bilge."),
            table
        );
        let e = run(&docx_fixture(&body));
        assert_eq!(
            placed(&e),
            vec![
                (
                    "h.docx#para=1-2",
                    Some("Safety"),
                    "Safety\nWear a vest & gloves."
                ),
                (
                    "h.docx#para=3-5",
                    Some("Safety › Boats"),
                    "Boats\nCheck the bilge.\n| Item | Count |\n|---|---|\n| Brass sextant | 2 |"
                ),
            ]
        );
        let nodes: Vec<_> = e
            .structure
            .nodes
            .iter()
            .map(|n| (n.title.as_str(), n.level))
            .collect();
        assert_eq!(nodes, vec![("Safety", 1), ("Boats", 2)]);
    }
}
