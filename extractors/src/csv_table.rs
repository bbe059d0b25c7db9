//! CSV/TSV: records grouped into Markdown tables, each addressed by its row range.
//!
//! Rows are numbered as a spreadsheet shows them: record 1 is the header. Every object repeats
//! the header, so a chunk cut from the middle of a table still says what its columns mean.

use serde_json::json;

use crate::model::{ContentType, Structure};
use crate::objects::{ObjectSink, Place};
use crate::text::BLOCK_CHARS;
use crate::textcodec::decode;
use crate::{ExtractError, ExtractInput, Extraction, Extractor, Fragment};

/// Lines of the Markdown header (column names and the `---` rule) at the top of every object.
pub const TABLE_HEADER_LINES: u64 = 2;

pub(crate) struct Csv {
    pub delimiter: u8,
}

impl Extractor for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let decoded = decode(input.bytes);
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(self.delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(decoded.text.as_bytes());
        let mut sink = ObjectSink::new(input.locator, input.file_hash);
        let mut header: Option<Vec<String>> = None;
        let mut body = String::new();
        let mut first_row = 0u64;
        let mut row = 0u64;

        let flush = |sink: &mut ObjectSink<'_>, header: &[String], body: &mut String, a, b| {
            if body.is_empty() {
                return;
            }
            let table = format!("{}{}", header_lines(header), body);
            body.clear();
            sink.push(
                ContentType::Text,
                table,
                Place {
                    fragment: Fragment {
                        rows: Some((a, b)),
                        ..Fragment::default()
                    },
                    label: Some(format!("rows {a}-{b}")),
                    section: None,
                },
                json!({ "encoding": decoded.encoding, "header_lines": TABLE_HEADER_LINES }),
            );
        };

        for record in reader.records() {
            let record = record.map_err(|e| ExtractError::Malformed {
                format: "csv".into(),
                reason: e.to_string(),
            })?;
            row += 1;
            let cells: Vec<String> = record.iter().map(cell).collect();
            let Some(h) = &header else {
                header = Some(cells);
                continue;
            };
            if body.is_empty() {
                first_row = row;
            }
            body.push_str(&format!("| {} |\n", cells.join(" | ")));
            if body.len() >= BLOCK_CHARS {
                flush(&mut sink, h, &mut body, first_row, row);
            }
        }
        if let Some(h) = &header {
            flush(&mut sink, h, &mut body, first_row, row);
            if sink.objects.is_empty() {
                // A header-only file still says what it holds.
                let table = header_lines(h);
                sink.push(
                    ContentType::Text,
                    table,
                    Place {
                        fragment: Fragment {
                            rows: Some((1, 1)),
                            ..Fragment::default()
                        },
                        label: Some("header".into()),
                        section: None,
                    },
                    json!({ "encoding": decoded.encoding, "header_lines": TABLE_HEADER_LINES }),
                );
            }
        }
        Ok(Extraction {
            objects: sink.objects,
            structure: Structure {
                nodes: Vec::new(),
                line_count: Some(row),
                ..Structure::default()
            },
        })
    }
}

/// A cell's text for a Markdown table: pipes escaped, on one line.
pub(crate) fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ").trim().to_string()
}

fn header_lines(header: &[String]) -> String {
    format!(
        "| {} |\n|{}|\n",
        header.join(" | "),
        vec!["---"; header.len().max(1)].join("|")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{detect, Locator};

    #[test]
    fn rows_become_markdown_tables_with_row_ranges() {
        let text = "name,city\nAda,London\nGrace,\"New\nYork\"\n";
        let loc = Locator::root("people.csv");
        let det = detect(text.as_bytes(), "people.csv");
        let e = crate::extract(&ExtractInput {
            bytes: text.as_bytes(),
            locator: &loc,
            file_hash: "ffff",
            detected: &det,
        })
        .unwrap();
        assert_eq!(e.objects.len(), 1);
        let o = &e.objects[0];
        assert_eq!(o.context_ref.location, "people.csv#rows=2-3");
        assert_eq!(
            o.data,
            "| name | city |\n|---|---|\n| Ada | London |\n| Grace | New York |\n"
        );
    }
}
