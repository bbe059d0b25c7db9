//! CSV/TSV: records grouped into Markdown tables, each addressed by its row range.
//!
//! Rows are numbered as a spreadsheet shows them: record 1 is the header. Every object repeats
//! the header, so a chunk cut from the middle of a table still says what its columns mean.

use serde_json::json;

use crate::model::{ContentType, Structure};
use crate::objects::{ObjectSink, Place, MAX_TEXT_OBJECT_BYTES};
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

        // The Markdown header repeated on every object; `None` when it is too long to repeat
        // (a giant header cell): then it is an object of its own and the rows follow bare.
        let mut repeated: Option<String> = None;
        let flush =
            |sink: &mut ObjectSink<'_>, header: &Option<String>, body: &mut String, a, b| {
                if body.is_empty() {
                    return;
                }
                let place = Place {
                    fragment: Fragment {
                        rows: Some((a, b)),
                        ..Fragment::default()
                    },
                    label: Some(format!("rows {a}-{b}")),
                    section: None,
                };
                match header {
                    Some(h) => {
                        let mut table = String::with_capacity(h.len() + body.len());
                        table.push_str(h);
                        table.push_str(body);
                        body.clear();
                        sink.push(
                        ContentType::Text,
                        table,
                        place,
                        json!({ "encoding": decoded.encoding, "header_lines": TABLE_HEADER_LINES }),
                    );
                    }
                    None => {
                        sink.push_text(body, place, json!({ "encoding": decoded.encoding }));
                        body.clear();
                    }
                }
            };

        for record in reader.records() {
            let record = record.map_err(|e| ExtractError::Malformed {
                format: "csv".into(),
                reason: e.to_string(),
            })?;
            row += 1;
            let cells: Vec<String> = record.iter().map(cell).collect();
            if header.is_none() {
                let text = header_lines(&cells);
                if text.len() <= MAX_TEXT_OBJECT_BYTES / 2 {
                    repeated = Some(text);
                } else {
                    sink.push_text(
                        &text,
                        Place {
                            fragment: Fragment {
                                rows: Some((1, 1)),
                                ..Fragment::default()
                            },
                            label: Some("header".into()),
                            section: None,
                        },
                        json!({ "encoding": decoded.encoding }),
                    );
                }
                header = Some(cells);
                continue;
            };
            if body.is_empty() {
                first_row = row;
            }
            body.push_str("| ");
            for (i, c) in cells.iter().enumerate() {
                if i > 0 {
                    body.push_str(" | ");
                }
                body.push_str(c);
            }
            body.push_str(" |\n");
            if body.len() >= BLOCK_CHARS {
                flush(&mut sink, &repeated, &mut body, first_row, row);
            }
        }
        if let Some(h) = &header {
            flush(&mut sink, &repeated, &mut body, first_row, row);
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
            options: crate::ExtractOptions::defaults(),
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
