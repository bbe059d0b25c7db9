//! Spreadsheets: XLSX and XLS through calamine, ODS through our own streaming reader.
//!
//! Each sheet becomes Markdown tables addressed by sheet and row range
//! (`book.xlsx#sheet=Q3&rows=2-40`). The sheet's first non-empty row is taken as its header
//! and repeated at the top of every table, so a chunk cut from the middle still says what its
//! columns mean. Rows are numbered as a spreadsheet shows them. A table holds consecutive
//! rows only (short gaps of empty rows are kept as empty lines, longer gaps start a new
//! table), so each Markdown line is exactly one sheet row and chunk row ranges stay exact.
//!
//! Nothing is allocated from declared dimensions: XLSX cells come from calamine's streaming
//! cell reader, ODS cells from quick-xml events (repeated empty cells and rows only advance a
//! counter; repeated non-empty ones are materialised up to a cap). Only the columns a table
//! actually uses are printed, so a cell at A1 and another at XFD1 make a two-column table.
//! calamine's XLS reader builds whole sheets in memory itself; BIFF8 caps a sheet at
//! 65 536 × 256 cells, and extraction runs in an isolated worker with a memory limit.

use std::collections::{BTreeMap, HashMap};
use std::io::Cursor;

use calamine::{Data, DataRef, Reader};
use quick_xml::events::Event;
use serde_json::json;

use crate::csv_table::{cell as escape_cell, TABLE_HEADER_LINES};
use crate::model::{ContentType, Structure, StructureNode};
use crate::objects::{short_title, ObjectSink, Place};
use crate::package::{check_package, odf_content};
use crate::pivots::{describe, ods_pivots, xlsx_pivots, Pivot};
use crate::text::BLOCK_CHARS;
use crate::xmlutil::{attr, resolve, skip_subtree};
use crate::{ExtractError, ExtractInput, Extraction, Extractor, Fragment};

pub(crate) struct Xlsx;
pub(crate) struct Xls;
pub(crate) struct Ods;

/// Empty rows kept inside one table; a longer gap starts a new table.
const MAX_GAP_ROWS: u64 = 3;
/// Columns printed per table; more are cut (and the object says so).
const MAX_COLUMNS: usize = 128;
/// Non-empty cells materialised per workbook (repeated ODS cells count each copy).
const MAX_CELLS: u64 = 2_000_000;
/// Copies of one repeated non-empty ODS row or cell that are materialised.
const MAX_REPEAT: u64 = 1_000;

/// `0 → A`, `25 → Z`, `26 → AA`.
fn column_name(mut col: u32) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'A' + (col % 26) as u8);
        if col < 26 {
            break;
        }
        col = col / 26 - 1;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

fn number(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

fn datetime(dt: &calamine::ExcelDateTime) -> String {
    if dt.is_duration() {
        return format!("{} days", number(dt.as_f64()));
    }
    let (y, mo, d, h, mi, s, _) = dt.to_ymd_hms_milli();
    if (h, mi, s) == (0, 0, 0) {
        format!("{y:04}-{mo:02}-{d:02}")
    } else {
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
    }
}

fn data_text(value: &Data) -> String {
    match value {
        Data::Int(i) => i.to_string(),
        Data::Float(f) => number(*f),
        Data::String(s) | Data::DateTimeIso(s) | Data::DurationIso(s) => s.clone(),
        Data::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Data::DateTime(dt) => datetime(dt),
        Data::Error(e) => e.to_string(),
        Data::Empty => String::new(),
    }
}

fn data_ref_text(value: &DataRef<'_>) -> String {
    match value {
        DataRef::SharedString(s) => (*s).to_string(),
        DataRef::String(s) => s.clone(),
        other => data_text(&Data::from(other.clone())),
    }
}

/// One row of a sheet: its non-empty cells by column.
type Row = BTreeMap<u32, String>;

/// Turns the rows of one sheet, arriving in order, into Markdown table objects.
struct SheetWriter {
    name: String,
    header: Option<(u64, Row)>,
    /// Rows of the table being built, with their 1-based row numbers (gaps filled).
    rows: Vec<(u64, Row)>,
    chars: usize,
    objects: u32,
    last_row: u64,
    truncated_columns: bool,
}

impl SheetWriter {
    fn new(name: &str) -> Self {
        SheetWriter {
            name: name.to_string(),
            header: None,
            rows: Vec::new(),
            chars: 0,
            objects: 0,
            last_row: 0,
            truncated_columns: false,
        }
    }

    /// Add row `number` (1-based); empty rows are ignored.
    fn row(&mut self, sink: &mut ObjectSink<'_>, number: u64, row: Row) {
        if row.values().all(|v| v.is_empty()) {
            return;
        }
        if self.header.is_none() {
            self.header = Some((number, row));
            self.last_row = number;
            return;
        }
        let gap = number.saturating_sub(self.last_row).saturating_sub(1);
        if !self.rows.is_empty() && (gap > MAX_GAP_ROWS || number <= self.last_row) {
            self.flush(sink);
        }
        if !self.rows.is_empty() {
            for empty in self.last_row + 1..number {
                self.rows.push((empty, Row::new()));
            }
        }
        self.chars += row.values().map(|v| v.len() + 3).sum::<usize>();
        self.rows.push((number, row));
        self.last_row = number;
        if self.chars >= BLOCK_CHARS {
            self.flush(sink);
        }
    }

    fn flush(&mut self, sink: &mut ObjectSink<'_>) {
        let (Some((first, _)), Some((last, _))) = (self.rows.first(), self.rows.last()) else {
            return;
        };
        let (first, last) = (*first, *last);
        let header = self.header.as_ref().map(|(_, h)| h);
        let mut columns: Vec<u32> = header
            .into_iter()
            .flat_map(|h| h.keys())
            .chain(self.rows.iter().flat_map(|(_, r)| r.keys()))
            .copied()
            .collect();
        columns.sort_unstable();
        columns.dedup();
        if columns.len() > MAX_COLUMNS {
            columns.truncate(MAX_COLUMNS);
            self.truncated_columns = true;
        }
        let mut table = header_line(&columns, header);
        for (_, row) in &self.rows {
            table.push_str(&row_line(&columns, row));
        }
        self.push(sink, table, first, last);
        self.rows.clear();
        self.chars = 0;
    }

    fn push(&mut self, sink: &mut ObjectSink<'_>, table: String, first: u64, last: u64) {
        let label = format!("{} rows {first}-{last}", self.name);
        let facts = json!({ "header_lines": TABLE_HEADER_LINES, "columns_truncated": self.truncated_columns });
        self.push_at(sink, table, Some((first, last)), label, facts);
    }

    /// One object of this sheet (its rows when it has them).
    fn push_at(
        &mut self,
        sink: &mut ObjectSink<'_>,
        text: String,
        rows: Option<(u64, u64)>,
        label: String,
        facts: serde_json::Value,
    ) {
        let place = Place {
            fragment: Fragment {
                sheet: Some(self.name.clone()),
                rows,
                ..Fragment::default()
            },
            label: Some(label),
            section: Some(self.name.clone()),
        };
        sink.push(ContentType::Text, text, place, facts);
        self.objects += 1;
    }

    /// Flush what is left, add what its pivot tables (taken from `pivots`) summarise, and
    /// describe the sheet.
    fn finish(mut self, book: &mut Workbook<'_>, pivots: &mut HashMap<String, Vec<Pivot>>) {
        self.flush(&mut book.sink);
        if self.objects == 0 {
            if let Some((n, h)) = self.header.take() {
                // A sheet with a single row still says what it holds.
                let columns: Vec<u32> = h.keys().copied().take(MAX_COLUMNS).collect();
                self.push(&mut book.sink, header_line(&columns, Some(&h)), n, n);
            }
        }
        for pivot in pivots.remove(&self.name).unwrap_or_default() {
            let label = format!("{} pivot table", self.name);
            self.push_at(
                &mut book.sink,
                describe(&pivot),
                None,
                label,
                json!({ "pivot_table": true }),
            );
        }
        let locator = book
            .input
            .locator
            .with_fragment(Fragment {
                sheet: Some(self.name.clone()),
                ..Fragment::default()
            })
            .to_string();
        book.nodes.push(StructureNode {
            kind: "sheet".into(),
            title: self.name,
            level: 1,
            locator,
            objects: self.objects,
            pages: None,
        });
    }
}

fn header_line(columns: &[u32], header: Option<&Row>) -> String {
    let names: Vec<String> = columns
        .iter()
        .map(|c| {
            header
                .and_then(|h| h.get(c))
                .filter(|v| !v.is_empty())
                // Repeated on every object: a giant header cell must not be.
                .map(|v| short_title(v))
                .unwrap_or_else(|| column_name(*c))
        })
        .collect();
    format!(
        "| {} |\n|{}|\n",
        names.join(" | "),
        vec!["---"; names.len().max(1)].join("|")
    )
}

fn row_line(columns: &[u32], row: &Row) -> String {
    let cells: Vec<&str> = columns
        .iter()
        .map(|c| row.get(c).map_or("", String::as_str))
        .collect();
    format!("| {} |\n", cells.join(" | "))
}

/// The extraction of a whole workbook, sheet after sheet.
struct Workbook<'a> {
    input: &'a ExtractInput<'a>,
    sink: ObjectSink<'a>,
    nodes: Vec<StructureNode>,
    /// Non-empty cells materialised so far.
    cells: u64,
    /// Sheets that could not be read, with the reason.
    skipped: Vec<String>,
}

impl<'a> Workbook<'a> {
    fn new(input: &'a ExtractInput<'a>) -> Self {
        Workbook {
            input,
            sink: ObjectSink::new(input.locator, input.file_hash),
            nodes: Vec::new(),
            cells: 0,
            skipped: Vec::new(),
        }
    }

    /// Count `n` more materialised cells; false once the workbook cap is passed.
    fn take_cells(&mut self, n: u64) -> bool {
        self.cells = self.cells.saturating_add(n);
        self.cells <= MAX_CELLS
    }

    fn finish(mut self) -> Extraction {
        let truncated = self.cells > MAX_CELLS;
        for o in &mut self.sink.objects {
            if truncated {
                o.metadata.insert("cells_truncated".into(), json!(true));
            }
            if !self.skipped.is_empty() {
                o.metadata
                    .insert("unreadable_sheets".into(), json!(self.skipped));
            }
        }
        Extraction {
            objects: self.sink.objects,
            structure: Structure {
                nodes: self.nodes,
                ..Structure::default()
            },
        }
    }
}

impl Extractor for Xlsx {
    fn name(&self) -> &'static str {
        "xlsx"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        check_package("xlsx", input.bytes)?;
        let mut book: calamine::Xlsx<_> = calamine::Xlsx::new(Cursor::new(input.bytes))
            .map_err(|e| ExtractError::malformed("xlsx", e))?;
        let mut out = Workbook::new(input);
        let mut pivots = xlsx_pivots(input.bytes);
        for name in book.sheet_names() {
            let mut reader = match book.worksheet_cells_reader(&name) {
                Ok(r) => r,
                Err(e) => {
                    // Chart sheets and unreadable parts: the others still count.
                    out.skipped.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let mut writer = SheetWriter::new(&name);
            let (mut current, mut row): (Option<u32>, Row) = (None, Row::new());
            loop {
                let cell = match reader.next_cell() {
                    Ok(Some(c)) => c,
                    Ok(None) => break,
                    Err(e) => {
                        out.skipped.push(format!("{name}: {e}"));
                        break;
                    }
                };
                let (r, c) = cell.get_position();
                let text = escape_cell(&data_ref_text(cell.get_value()));
                if text.is_empty() {
                    continue;
                }
                if current != Some(r) {
                    if let Some(prev) = current {
                        writer.row(&mut out.sink, u64::from(prev) + 1, std::mem::take(&mut row));
                    }
                    current = Some(r);
                }
                row.insert(c, text);
                if !out.take_cells(1) {
                    break;
                }
            }
            if let Some(prev) = current {
                writer.row(&mut out.sink, u64::from(prev) + 1, row);
            }
            writer.finish(&mut out, &mut pivots);
            if out.cells > MAX_CELLS {
                break;
            }
        }
        Ok(out.finish())
    }
}

/// Run a call into calamine's XLS reader, turning its panic into an error message: the
/// reader indexes sectors by the sizes a file declares and panics on some truncated files
/// (`slice index starts at 4096 but ends at 2304` in `cfb.rs`). A dependency's panic is
/// one file's error, like any other malformed input.
fn contained<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        format!("the XLS reader cannot read this file ({message})")
    })
}

impl Extractor for Xls {
    fn name(&self) -> &'static str {
        "xls"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let mut book: calamine::Xls<_> = contained(|| calamine::Xls::new(Cursor::new(input.bytes)))
            .and_then(|r| r.map_err(|e| e.to_string()))
            .map_err(|e| ExtractError::malformed("xls", e))?;
        let mut out = Workbook::new(input);
        for name in book.sheet_names() {
            let range = match contained(|| book.worksheet_range(&name)) {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => {
                    out.skipped.push(format!("{name}: {e}"));
                    continue;
                }
                Err(e) => {
                    out.skipped.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let (r0, c0) = range.start().unwrap_or((0, 0));
            let mut writer = SheetWriter::new(&name);
            for (i, dense) in range.rows().enumerate() {
                let row: Row = dense
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| !matches!(v, Data::Empty))
                    .filter_map(|(j, v)| {
                        let text = escape_cell(&data_text(v));
                        let col = c0.saturating_add(u32::try_from(j).ok()?);
                        (!text.is_empty()).then_some((col, text))
                    })
                    .collect();
                if !out.take_cells(row.len() as u64) {
                    break;
                }
                writer.row(&mut out.sink, u64::from(r0) + i as u64 + 1, row);
            }
            writer.finish(&mut out, &mut HashMap::new());
            if out.cells > MAX_CELLS {
                break;
            }
        }
        Ok(out.finish())
    }
}

/// Where the ODS reader is inside `content.xml`.
#[derive(Default)]
struct OdsCursor {
    /// 1-based number of the last row read in the current sheet.
    row_number: u64,
    row_repeat: u64,
    row: Row,
    /// 0-based column of the next cell.
    col: u64,
    /// The open cell: its column repeat and its value attribute.
    cell: Option<(u64, String)>,
    text: String,
    in_para: bool,
}

impl Extractor for Ods {
    fn name(&self) -> &'static str {
        "ods"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let xml = odf_content("ods", input.bytes)?;
        let mut reader = quick_xml::Reader::from_reader(xml.as_slice());
        let mut buf = Vec::new();
        let mut out = Workbook::new(input);
        let mut sheet: Option<SheetWriter> = None;
        let mut at = OdsCursor::default();
        // Data pilots follow the sheets in content.xml: read first, given to their sheets.
        let mut pivots = ods_pivots(&xml);

        loop {
            let event = reader
                .read_event_into(&mut buf)
                .map_err(|e| ExtractError::malformed("ods", e))?;
            match event {
                Event::Start(ref e) | Event::Empty(ref e) => {
                    let empty = matches!(event, Event::Empty(_));
                    match e.name().as_ref() {
                        b"table:table" if !empty => {
                            if sheet.is_some() {
                                skip_subtree("ods", &mut reader, e)?; // a table inside a cell
                            } else {
                                let name = attr(e, b"table:name").unwrap_or_default();
                                sheet = Some(SheetWriter::new(&name));
                                at = OdsCursor::default();
                            }
                        }
                        b"table:table-row" if sheet.is_some() => {
                            at.row_repeat = repeat(e, b"table:number-rows-repeated");
                            at.row.clear();
                            at.col = 0;
                            if empty {
                                at.row_number = at.row_number.saturating_add(at.row_repeat);
                            }
                        }
                        b"table:table-cell" | b"table:covered-table-cell" if sheet.is_some() => {
                            let n = repeat(e, b"table:number-columns-repeated");
                            let value = attr(e, b"office:value")
                                .or_else(|| attr(e, b"office:date-value"))
                                .or_else(|| attr(e, b"office:time-value"))
                                .or_else(|| attr(e, b"office:boolean-value"))
                                .unwrap_or_default();
                            if empty {
                                place(&mut at, n, &value);
                            } else {
                                at.cell = Some((n, value));
                                at.text.clear();
                            }
                        }
                        b"office:annotation" if !empty => skip_subtree("ods", &mut reader, e)?,
                        b"text:p" | b"text:h" if at.cell.is_some() && !empty => {
                            if !at.text.is_empty() {
                                at.text.push(' ');
                            }
                            at.in_para = true;
                        }
                        b"text:s" | b"text:tab" | b"text:line-break" if at.in_para => {
                            at.text.push(' ')
                        }
                        _ => {}
                    }
                }
                Event::End(ref e) => match e.name().as_ref() {
                    b"table:table" => {
                        if let Some(writer) = sheet.take() {
                            writer.finish(&mut out, &mut pivots);
                        }
                    }
                    b"table:table-row" => {
                        if let Some(writer) = sheet.as_mut() {
                            let first = at.row_number.saturating_add(1);
                            at.row_number = at.row_number.saturating_add(at.row_repeat);
                            if !at.row.is_empty() {
                                let copies = at.row_repeat.min(MAX_REPEAT);
                                let row = std::mem::take(&mut at.row);
                                for k in 0..copies {
                                    if !out.take_cells(row.len() as u64) {
                                        break;
                                    }
                                    let Some(number) = first.checked_add(k) else {
                                        break;
                                    };
                                    writer.row(&mut out.sink, number, row.clone());
                                }
                            }
                        }
                    }
                    b"table:table-cell" | b"table:covered-table-cell" => {
                        if let Some((n, value)) = at.cell.take() {
                            let shown = at.text.split_whitespace().collect::<Vec<_>>().join(" ");
                            let shown = if shown.is_empty() { value } else { shown };
                            place(&mut at, n, &shown);
                        }
                    }
                    b"text:p" | b"text:h" => at.in_para = false,
                    _ => {}
                },
                Event::Text(t) if at.in_para => {
                    if let Ok(s) = t.decode() {
                        at.text.push_str(&s);
                    }
                }
                Event::GeneralRef(r) if at.in_para => at.text.push_str(&resolve(&r)),
                Event::Eof => break,
                _ => {}
            }
            buf.clear();
        }
        if let Some(writer) = sheet.take() {
            writer.finish(&mut out, &mut pivots);
        }
        Ok(out.finish())
    }
}

/// `n` copies of `value` from the cursor's column on (empty cells only move the column on).
fn place(at: &mut OdsCursor, n: u64, value: &str) {
    let value = escape_cell(value.trim());
    if !value.is_empty() {
        let copies = n.min(MAX_COLUMNS as u64);
        for k in 0..copies {
            if let Some(c) = at.col.checked_add(k).and_then(|c| u32::try_from(c).ok()) {
                at.row.insert(c, value.clone());
            }
        }
    }
    at.col = at.col.saturating_add(n);
}

fn repeat(e: &quick_xml::events::BytesStart<'_>, key: &[u8]) -> u64 {
    attr(e, key)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1)
        .max(1)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::{extract_as, zip_parts};
    use crate::{DocumentKind, FileKind};

    pub(crate) fn xlsx_fixture(sheets: &[(&str, &[(&str, &str)])]) -> Vec<u8> {
        zip_parts(&xlsx_parts(sheets))
    }

    /// The parts of [`xlsx_fixture`]'s workbook, for a test to add to.
    fn xlsx_parts(sheets: &[(&str, &[(&str, &str)])]) -> Vec<(String, String)> {
        let mut parts: Vec<(String, String)> = vec![
            ("[Content_Types].xml".into(), "<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\"><Default Extension=\"xml\" ContentType=\"application/xml\"/><Override PartName=\"/xl/workbook.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml\"/></Types>".into()),
            ("_rels/.rels".into(), "<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"xl/workbook.xml\"/></Relationships>".into()),
        ];
        let mut wb = String::new();
        let mut rels = String::new();
        for (i, (name, cells)) in sheets.iter().enumerate() {
            let n = i + 1;
            wb.push_str(&format!(
                "<sheet name=\"{name}\" sheetId=\"{n}\" r:id=\"rId{n}\"/>"
            ));
            rels.push_str(&format!("<Relationship Id=\"rId{n}\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" Target=\"worksheets/sheet{n}.xml\"/>"));
            let mut rows: BTreeMap<u32, String> = BTreeMap::new();
            for (r, v) in cells.iter() {
                let row: u32 = r.trim_start_matches(char::is_alphabetic).parse().unwrap();
                rows.entry(row).or_default().push_str(&format!(
                    "<c r=\"{r}\" t=\"inlineStr\"><is><t>{v}</t></is></c>"
                ));
            }
            let data: String = rows
                .iter()
                .map(|(r, c)| format!("<row r=\"{r}\">{c}</row>"))
                .collect();
            parts.push((
                format!("xl/worksheets/sheet{n}.xml"),
                format!("<worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\"><dimension ref=\"A1:XFD1048576\"/><sheetData>{data}</sheetData></worksheet>"),
            ));
        }
        parts.push(("xl/workbook.xml".into(), format!("<workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\"><sheets>{wb}</sheets></workbook>")));
        parts.push((
            "xl/_rels/workbook.xml.rels".into(),
            format!("<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">{rels}</Relationships>"),
        ));
        parts
    }

    #[test]
    fn a_pivot_tables_sheet_says_what_it_summarises() {
        let mut parts = xlsx_parts(&[
            (
                "Cars",
                &[
                    ("A1", "mpg"),
                    ("B1", "cyl"),
                    ("A2", "21"),
                    ("B2", "6"),
                    ("A3", "22.8"),
                    ("B3", "4"),
                ],
            ),
            (
                "Summary",
                &[
                    ("A3", "Row Labels"),
                    ("B3", "Average of mpg"),
                    ("A4", "4"),
                    ("B4", "22.8"),
                ],
            ),
        ]);
        const RELS: &str = "http://schemas.openxmlformats.org/package/2006/relationships";
        const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
        parts.push((
            "xl/worksheets/_rels/sheet2.xml.rels".into(),
            format!("<Relationships xmlns=\"{RELS}\"><Relationship Id=\"rId1\" Type=\"{REL}/pivotTable\" Target=\"../pivotTables/pivotTable1.xml\"/></Relationships>"),
        ));
        parts.push((
            "xl/pivotTables/pivotTable1.xml".into(),
            "<pivotTableDefinition xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" name=\"FuelByCylinders\" cacheId=\"1\"><location ref=\"A3:B6\" firstHeaderRow=\"1\" firstDataRow=\"1\" firstDataCol=\"1\"/><rowFields count=\"1\"><field x=\"1\"/></rowFields><dataFields count=\"1\"><dataField name=\"Average of mpg\" fld=\"0\" subtotal=\"average\"/></dataFields></pivotTableDefinition>".into(),
        ));
        parts.push((
            "xl/pivotTables/_rels/pivotTable1.xml.rels".into(),
            format!("<Relationships xmlns=\"{RELS}\"><Relationship Id=\"rId1\" Type=\"{REL}/pivotCacheDefinition\" Target=\"../pivotCache/pivotCacheDefinition1.xml\"/></Relationships>"),
        ));
        parts.push((
            "xl/pivotCache/pivotCacheDefinition1.xml".into(),
            "<pivotCacheDefinition xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\"><cacheFields count=\"2\"><cacheField name=\"mpg\" numFmtId=\"0\"/><cacheField name=\"cyl\" numFmtId=\"0\"><sharedItems/></cacheField></cacheFields></pivotCacheDefinition>".into(),
        ));
        let out = run("cars.xlsx", &zip_parts(&parts), DocumentKind::Xlsx);
        let pivot: Vec<_> = out
            .objects
            .iter()
            .filter(|o| o.metadata.get("pivot_table").is_some())
            .collect();
        assert_eq!(pivot.len(), 1, "{:#?}", out.objects);
        assert_eq!(
            pivot[0].data,
            "Pivot table FuelByCylinders: rows cyl; values Average of mpg."
        );
        assert!(
            pivot[0].context_ref.location.ends_with("#sheet=Summary"),
            "{}",
            pivot[0].context_ref.location
        );
        let summary = out
            .structure
            .nodes
            .iter()
            .find(|n| n.title == "Summary")
            .unwrap();
        assert_eq!(summary.objects, 2, "the table and the pivot's line");
    }

    fn run(name: &str, bytes: &[u8], kind: DocumentKind) -> Extraction {
        extract_as(name, bytes, Some(FileKind::Document(kind))).unwrap()
    }

    #[test]
    fn column_names() {
        assert_eq!(column_name(0), "A");
        assert_eq!(column_name(25), "Z");
        assert_eq!(column_name(26), "AA");
        assert_eq!(column_name(16383), "XFD");
    }

    #[test]
    fn xlsx_sheets_become_tables_with_sheet_and_rows() {
        let book = xlsx_fixture(&[
            (
                "Q3",
                &[
                    ("A1", "Item"),
                    ("B1", "Cost"),
                    ("A2", "Paint"),
                    ("B2", "12"),
                ],
            ),
            (
                "Q4",
                &[("A1", "Item"), ("A3", "Rope"), ("A9", "Lamp &amp; wick")],
            ),
        ]);
        let e = run("b.xlsx", &book, DocumentKind::Xlsx);
        assert_eq!(
            crate::testing::located(&e),
            vec![
                (
                    "b.xlsx#sheet=Q3&rows=2",
                    "| Item | Cost |\n|---|---|\n| Paint | 12 |\n"
                ),
                ("b.xlsx#sheet=Q4&rows=3", "| Item |\n|---|\n| Rope |\n"),
                (
                    "b.xlsx#sheet=Q4&rows=9",
                    "| Item |\n|---|\n| Lamp & wick |\n"
                ),
            ]
        );
        let sheets: Vec<_> = e
            .structure
            .nodes
            .iter()
            .map(|n| (n.title.as_str(), n.locator.as_str(), n.objects))
            .collect();
        assert_eq!(
            sheets,
            vec![("Q3", "b.xlsx#sheet=Q3", 1), ("Q4", "b.xlsx#sheet=Q4", 2)]
        );
    }

    #[test]
    fn far_apart_cells_do_not_allocate_the_space_between() {
        // A1 and XFD1048576, with a dimension that claims the whole grid.
        let book = xlsx_fixture(&[("S", &[("A1", "corner"), ("XFD1048576", "far")])]);
        let e = run("wide.xlsx", &book, DocumentKind::Xlsx);
        assert_eq!(e.objects.len(), 1);
        assert_eq!(
            e.objects[0].context_ref.location,
            "wide.xlsx#sheet=S&rows=1048576"
        );
        assert_eq!(
            e.objects[0].data,
            "| corner | XFD |\n|---|---|\n|  | far |\n"
        );
    }

    #[test]
    fn short_gaps_stay_in_one_table_so_rows_map_to_lines() {
        let book = xlsx_fixture(&[("S", &[("A1", "h"), ("A2", "a"), ("A4", "b"), ("A20", "c")])]);
        let e = run("g.xlsx", &book, DocumentKind::Xlsx);
        assert_eq!(
            crate::testing::located(&e),
            vec![
                (
                    "g.xlsx#sheet=S&rows=2-4",
                    "| h |\n|---|\n| a |\n|  |\n| b |\n"
                ),
                ("g.xlsx#sheet=S&rows=20", "| h |\n|---|\n| c |\n"),
            ]
        );
    }

    #[test]
    fn ods_repeats_are_counted_not_materialised() {
        let content = "<office:document-content><office:body><office:spreadsheet>\
            <table:table table:name=\"Q4\">\
            <table:table-row><table:table-cell office:value-type=\"string\"><text:p>Item</text:p></table:table-cell><table:table-cell table:number-columns-repeated=\"16383\"/></table:table-row>\
            <table:table-row table:number-rows-repeated=\"1000000\"><table:table-cell table:number-columns-repeated=\"16384\"/></table:table-row>\
            <table:table-row><table:table-cell office:value-type=\"float\" office:value=\"3\"/><table:table-cell table:number-columns-repeated=\"2\" office:value-type=\"string\"><text:p>Rope <text:span>coil</text:span></text:p><office:annotation><text:p>ignore me</text:p></office:annotation></table:table-cell></table:table-row>\
            </table:table></office:spreadsheet></office:body></office:document-content>";
        let ods = zip_parts(&[
            ("mimetype", "application/vnd.oasis.opendocument.spreadsheet"),
            ("content.xml", content),
        ]);
        let e = run("b.ods", &ods, DocumentKind::Ods);
        assert_eq!(
            crate::testing::located(&e),
            vec![(
                "b.ods#sheet=Q4&rows=1000002",
                "| Item | B | C |\n|---|---|---|\n| 3 | Rope coil | Rope coil |\n"
            )]
        );
    }
}
