//! Flowing documents (DOCX, ODT): body blocks grouped into text objects under the path of the
//! headings above them.
//!
//! Blocks are the document's non-empty paragraphs, headings and tables, numbered from 1 in
//! document order; an object's locator names the blocks it holds (`#para=12-19`), and a
//! section's node points at its heading's block. A heading starts a new object (so no object
//! spans two sections) and its title opens that object's text. Tables are Markdown with their
//! first row as header. Pictures become `image` objects at the block they sit in, pushed after
//! the text object holding that block so objects stay in document order.

use serde_json::{json, Value};

use crate::model::{ContentType, Structure, StructureNode};
use crate::objects::{short_title, ObjectSink, Place, SECTION_SEPARATOR};
use crate::text::BLOCK_CHARS;
use crate::{Extraction, Fragment, Locator};

pub(crate) struct FlowWriter<'a> {
    locator: &'a Locator,
    sink: ObjectSink<'a>,
    nodes: Vec<StructureNode>,
    /// (level, title) of the headings enclosing the current block.
    path: Vec<(u32, String)>,
    /// Text of the object being built and the blocks it holds.
    text: String,
    range: Option<(u64, u64)>,
    /// Blocks numbered so far.
    blocks: u64,
    /// Pictures waiting for the text object of their block: (block, label, metadata).
    images: Vec<(u64, String, Value)>,
}

impl<'a> FlowWriter<'a> {
    pub fn new(locator: &'a Locator, file_hash: &'a str) -> Self {
        FlowWriter {
            locator,
            sink: ObjectSink::new(locator, file_hash),
            nodes: Vec::new(),
            path: Vec::new(),
            text: String::new(),
            range: None,
            blocks: 0,
            images: Vec::new(),
        }
    }

    fn section(&self) -> Option<String> {
        (!self.path.is_empty()).then(|| {
            self.path
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(SECTION_SEPARATOR)
        })
    }

    fn place(&self, range: (u64, u64), label: Option<String>) -> Place {
        let section = self.section();
        Place {
            fragment: Fragment {
                paras: Some(range),
                ..Fragment::default()
            },
            label: label
                .or_else(|| section.clone())
                .or_else(|| Some("body".into())),
            section,
        }
    }

    /// Append one block of `text` to the object being built.
    fn append(&mut self, text: &str) {
        self.blocks += 1;
        let n = self.blocks;
        self.range = Some(self.range.map_or((n, n), |(a, _)| (a, n)));
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(text);
    }

    /// Push the object being built, then the pictures that sat in its blocks.
    fn flush(&mut self) {
        if let Some(range) = self.range.take() {
            let text = std::mem::take(&mut self.text);
            let place = self.place(range, None);
            self.sink.push(ContentType::Text, text, place, json!({}));
            if let Some(n) = self.nodes.last_mut() {
                n.objects += 1;
            }
        }
        for (block, label, metadata) in std::mem::take(&mut self.images) {
            let place = self.place((block, block), Some(label));
            self.sink
                .push(ContentType::Image, String::new(), place, metadata);
            if let Some(n) = self.nodes.last_mut() {
                n.objects += 1;
            }
        }
    }

    /// A heading of `level` (1 = top) opens a section.
    pub fn heading(&mut self, level: u32, title: &str) {
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        if title.is_empty() {
            return;
        }
        self.flush();
        let level = level.max(1);
        while self.path.last().is_some_and(|(l, _)| *l >= level) {
            self.path.pop();
        }
        self.path.push((level, short_title(&title)));
        self.append(&title);
        self.nodes.push(StructureNode {
            kind: "section".into(),
            title: short_title(&title),
            level,
            locator: self
                .locator
                .with_fragment(Fragment {
                    paras: Some((self.blocks, self.blocks)),
                    ..Fragment::default()
                })
                .to_string(),
            objects: 0,
            pages: None,
        });
    }

    /// A body paragraph; blank ones are not blocks.
    pub fn paragraph(&mut self, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.append(text);
        if self.text.len() >= BLOCK_CHARS {
            self.flush();
        }
    }

    /// A table, as Markdown with its first row as header.
    pub fn table(&mut self, rows: &[Vec<String>]) {
        let rows: Vec<&Vec<String>> = rows
            .iter()
            .filter(|r| r.iter().any(|c| !c.trim().is_empty()))
            .collect();
        let Some(width) = rows.iter().map(|r| r.len()).max() else {
            return;
        };
        if self.text.len() >= BLOCK_CHARS / 2 {
            self.flush();
        }
        let line = |r: &Vec<String>| {
            let cells: Vec<String> = (0..width)
                .map(|i| crate::csv_table::cell(r.get(i).map_or("", String::as_str)))
                .collect();
            format!("| {} |", cells.join(" | "))
        };
        let mut table = Vec::with_capacity(rows.len() + 1);
        for (i, r) in rows.iter().enumerate() {
            table.push(line(r));
            if i == 0 {
                table.push(format!("|{}|", vec!["---"; width].join("|")));
            }
        }
        self.append(&table.join("\n"));
        if self.text.len() >= BLOCK_CHARS {
            self.flush();
        }
    }

    /// A picture in the current block (or the next one, before any text).
    pub fn image(&mut self, label: String, metadata: Value) {
        self.images.push((self.blocks.max(1), label, metadata));
    }

    pub fn finish(mut self) -> Extraction {
        self.flush();
        Extraction {
            objects: self.sink.objects,
            structure: Structure {
                nodes: self.nodes,
                ..Structure::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_open_sections_and_blocks_are_numbered() {
        let loc = Locator::root("d.docx");
        let mut w = FlowWriter::new(&loc, "aa");
        w.paragraph("Preface");
        w.heading(1, "Safety");
        w.paragraph("Wear a vest.");
        w.image("pic".into(), json!({"width": 4}));
        w.heading(2, "Boats");
        w.table(&[
            vec!["Item".into(), "Count".into()],
            vec!["Oar | pair".into(), "2".into()],
        ]);
        let e = w.finish();
        assert_eq!(
            crate::testing::placed(&e),
            vec![
                ("d.docx#para=1", None, "Preface"),
                ("d.docx#para=2-3", Some("Safety"), "Safety\nWear a vest."),
                ("d.docx#para=3", Some("Safety"), ""),
                (
                    "d.docx#para=4-5",
                    Some("Safety › Boats"),
                    "Boats\n| Item | Count |\n|---|---|\n| Oar \\| pair | 2 |"
                ),
            ]
        );
        let nodes: Vec<_> = e
            .structure
            .nodes
            .iter()
            .map(|n| (n.title.as_str(), n.level, n.locator.as_str(), n.objects))
            .collect();
        assert_eq!(
            nodes,
            vec![
                ("Safety", 1, "d.docx#para=2", 2),
                ("Boats", 2, "d.docx#para=4", 1)
            ]
        );
    }
}
