//! ODT: headings (`text:h` with their outline level) open sections, paragraphs and tables
//! between them are grouped into objects by the [`FlowWriter`], as for DOCX.

use quick_xml::events::Event;

use crate::flow::FlowWriter;
use crate::package::odf_content;
use crate::xmlutil::{attr, resolve, skip_subtree};
use crate::{ExtractError, ExtractInput, Extraction, Extractor};

pub(crate) struct Odt;

/// What the reader is inside of.
#[derive(Default)]
struct OdtCursor {
    in_body: bool,
    /// Open `text:p`/`text:h` elements (they nest inside frames and notes).
    depth_p: u32,
    heading: Option<u32>,
    para: String,
    /// Open tables: the rows read so far of each, innermost last.
    tables: Vec<Vec<Vec<String>>>,
    /// Text of the open cell, when in a table.
    cell: Option<String>,
}

impl Extractor for Odt {
    fn name(&self) -> &'static str {
        "odt"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let xml = odf_content("odt", input.bytes)?;
        let mut reader = quick_xml::Reader::from_reader(xml.as_slice());
        let mut buf = Vec::new();
        let mut out = FlowWriter::new(input.locator, input.file_hash);
        let mut at = OdtCursor::default();
        loop {
            let event = reader
                .read_event_into(&mut buf)
                .map_err(|e| ExtractError::malformed("odt", e))?;
            match event {
                Event::Start(e) => match e.name().as_ref() {
                    b"office:text" => at.in_body = true,
                    b"office:annotation" | b"text:tracked-changes" => {
                        skip_subtree("odt", &mut reader, &e)?
                    }
                    b"text:h" if at.in_body => {
                        at.heading = Some(
                            attr(&e, b"text:outline-level")
                                .and_then(|l| l.parse().ok())
                                .unwrap_or(1),
                        );
                        at.depth_p += 1;
                    }
                    b"text:p" if at.in_body => at.depth_p += 1,
                    b"table:table" if at.in_body => at.tables.push(Vec::new()),
                    b"table:table-row" => {
                        if let Some(t) = at.tables.last_mut() {
                            t.push(Vec::new());
                        }
                    }
                    b"table:table-cell" if !at.tables.is_empty() => at.cell = Some(String::new()),
                    _ => {}
                },
                Event::Empty(e)
                    if at.depth_p > 0
                        && matches!(
                            e.name().as_ref(),
                            b"text:s" | b"text:tab" | b"text:line-break"
                        ) =>
                {
                    at.para.push(' ')
                }
                Event::End(e) => match e.name().as_ref() {
                    b"office:text" => at.in_body = false,
                    b"text:h" | b"text:p" if at.depth_p > 0 => {
                        at.depth_p -= 1;
                        let text = at.para.split_whitespace().collect::<Vec<_>>().join(" ");
                        at.para.clear();
                        if let Some(cell) = at.cell.as_mut() {
                            if !cell.is_empty() && !text.is_empty() {
                                cell.push(' ');
                            }
                            cell.push_str(&text);
                            at.heading = None;
                        } else if let Some(level) = at.heading.take() {
                            out.heading(level, &text);
                        } else {
                            out.paragraph(&text);
                        }
                    }
                    b"table:table-cell" => {
                        if let (Some(cell), Some(row)) = (
                            at.cell.take(),
                            at.tables.last_mut().and_then(|t| t.last_mut()),
                        ) {
                            row.push(cell);
                        }
                    }
                    b"table:table" => {
                        if let Some(rows) = at.tables.pop() {
                            match at.tables.last_mut().and_then(|t| t.last_mut()) {
                                // A table inside a cell: its text joins the outer cell.
                                Some(_) => {
                                    let flat: Vec<String> =
                                        rows.iter().map(|r| r.join(" ")).collect();
                                    at.cell = Some(flat.join(" "));
                                }
                                None => out.table(&rows),
                            }
                        }
                    }
                    _ => {}
                },
                Event::Text(t) if at.depth_p > 0 => {
                    if let Ok(s) = t.decode() {
                        at.para.push_str(&s);
                    }
                }
                Event::GeneralRef(r) if at.depth_p > 0 => at.para.push_str(&resolve(&r)),
                Event::Eof => break,
                _ => {}
            }
            buf.clear();
        }
        Ok(out.finish())
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{extract_as, placed, zip_parts};
    use crate::{DocumentKind, FileKind};

    #[test]
    fn odt_headings_make_sections_and_tables_are_markdown() {
        let content = "<office:document-content xmlns:office=\"o\" xmlns:text=\"t\" xmlns:table=\"tb\"><office:body><office:text>\
            <text:h text:outline-level=\"1\">Intro</text:h><text:p>Hello <text:span>world</text:span><office:annotation><text:p>a comment</text:p></office:annotation></text:p>\
            <text:h text:outline-level=\"2\">Detail</text:h><text:p>Fine print</text:p>\
            <table:table><table:table-row><table:table-cell><text:p>Gauge</text:p></table:table-cell><table:table-cell><text:p>Depth</text:p></table:table-cell></table:table-row>\
            <table:table-row><table:table-cell><text:p>North pier</text:p></table:table-cell><table:table-cell><text:p>4 m</text:p></table:table-cell></table:table-row></table:table>\
            </office:text></office:body></office:document-content>";
        let odt = zip_parts(&[
            ("mimetype", "application/vnd.oasis.opendocument.text"),
            ("content.xml", content),
        ]);
        let e = extract_as("a.odt", &odt, Some(FileKind::Document(DocumentKind::Odt))).unwrap();
        assert_eq!(
            placed(&e),
            vec![
                ("a.odt#para=1-2", Some("Intro"), "Intro\nHello world"),
                (
                    "a.odt#para=3-5",
                    Some("Intro › Detail"),
                    "Detail\nFine print\n| Gauge | Depth |\n|---|---|\n| North pier | 4 m |"
                )
            ]
        );
    }
}
