//! Pivot tables, said in words. A pivot table's cells hold only its results ("8", "15.1"
//! under "Row Labels"); what it summarises — its row, column and filter fields and its values
//! ("Average of mpg") — is in its definition. [`xlsx_pivots`] reads the definitions of an
//! XLSX workbook (each sheet's pivot tables, their cache's field names), [`ods_pivots`] the
//! data pilots of an ODS `content.xml`, and [`describe`] makes one line of each, which the
//! sheet's extraction adds as an object of that sheet, so a question in those words finds it.
//!
//! Bounded: at most [`MAX_PIVOTS`] tables per workbook and [`MAX_FIELDS`] names per list, each
//! name cut to a title's length; parts are read through the package's part cap.

use std::collections::{HashMap, HashSet};
use std::io::Cursor;

use quick_xml::events::{BytesStart, Event};

use crate::objects::short_title;
use crate::package::{join, part, relationships};
use crate::xmlutil::{attr, local};

/// Pivot tables described per workbook; more are left out.
pub(crate) const MAX_PIVOTS: usize = 64;
/// Field names listed per kind (rows, columns, filters, values) of one pivot table.
pub(crate) const MAX_FIELDS: usize = 32;
/// Sheets of a workbook whose relationships are looked at.
const MAX_SHEETS: usize = 4096;
/// Bytes of parts read for one workbook's pivot tables (relationships, definitions, caches).
const MAX_PIVOT_BYTES: usize = 64 * 1024 * 1024;

/// One pivot table: its name and the names of what it summarises.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Pivot {
    pub name: String,
    pub rows: Vec<String>,
    pub columns: Vec<String>,
    pub filters: Vec<String>,
    /// The values, as the table names them ("Average of mpg"), with how each is computed
    /// from which field when that differs ("average of mpg").
    pub values: Vec<String>,
}

fn push_name(list: &mut Vec<String>, name: &str) {
    let name = name.trim();
    if !name.is_empty() && list.len() < MAX_FIELDS && !list.iter().any(|n| n == name) {
        list.push(short_title(name));
    }
}

/// The line a pivot table is found by: `Pivot table PivotTable1: rows cyl; columns gear;
/// filters am; values Average of mpg (average of mpg).`
pub(crate) fn describe(pivot: &Pivot) -> String {
    let mut parts = Vec::new();
    for (what, names) in [
        ("rows", &pivot.rows),
        ("columns", &pivot.columns),
        ("filters", &pivot.filters),
        ("values", &pivot.values),
    ] {
        if !names.is_empty() {
            parts.push(format!("{what} {}", names.join(", ")));
        }
    }
    let name = if pivot.name.is_empty() {
        String::new()
    } else {
        format!(" {}", short_title(&pivot.name))
    };
    if parts.is_empty() {
        return format!("Pivot table{name}.");
    }
    format!("Pivot table{name}: {}.", parts.join("; "))
}

/// `xl/worksheets/sheet1.xml` → `xl/worksheets/_rels/sheet1.xml.rels`.
fn rels_of(part_name: &str) -> String {
    match part_name.rsplit_once('/') {
        Some((dir, file)) => format!("{dir}/_rels/{file}.rels"),
        None => format!("_rels/{part_name}.rels"),
    }
}

/// A package's parts read within a byte budget for the whole workbook's pivot tables.
struct Parts<'a> {
    zip: crate::package::Zip<'a>,
    read: usize,
}

impl Parts<'_> {
    fn get(&mut self, name: &str) -> Option<Vec<u8>> {
        if self.read > MAX_PIVOT_BYTES {
            return None;
        }
        let bytes = part(&mut self.zip, name)?;
        self.read += bytes.len();
        Some(bytes)
    }
}

/// The targets of `part_name`'s relationships of a type ending in `kind`, in Id order.
fn related(parts: &mut Parts<'_>, part_name: &str, kind: &str) -> Vec<String> {
    let Some(rels) = parts.get(&rels_of(part_name)) else {
        return Vec::new();
    };
    let mut found: Vec<(String, String)> = relationships(&rels)
        .into_iter()
        .filter(|(_, (_, t))| t.ends_with(kind))
        .map(|(id, (target, _))| (id, join(part_name, &target)))
        .collect();
    found.sort();
    found.into_iter().map(|(_, t)| t).collect()
}

/// Each element of `xml` with its parent's local name, handed to `each`.
fn walk(xml: &[u8], mut each: impl FnMut(&[u8], &BytesStart<'_>)) {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut stack: Vec<Vec<u8>> = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => {
                each(stack.last().map_or(&[][..], Vec::as_slice), &e);
                stack.push(local(e.name().as_ref()).to_vec());
            }
            Ok(Event::Empty(e)) => each(stack.last().map_or(&[][..], Vec::as_slice), &e),
            Ok(Event::End(_)) => {
                stack.pop();
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
        buf.clear();
    }
}

/// The field names of a pivot cache definition, in order.
fn cache_fields(xml: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    walk(xml, |parent, e| {
        if parent == b"cacheFields" && local(e.name().as_ref()) == b"cacheField" {
            names.push(attr(e, b"name").unwrap_or_default());
        }
    });
    names
}

/// A pivot table definition read with its cache's field names.
fn pivot_table(xml: &[u8], fields: &[String]) -> Pivot {
    let mut pivot = Pivot::default();
    let field = |x: Option<String>| -> Option<&String> {
        let i: usize = x?.parse().ok()?;
        fields.get(i)
    };
    walk(xml, |parent, e| {
        let qname = e.name();
        match (parent, local(qname.as_ref())) {
            (_, b"pivotTableDefinition") => pivot.name = attr(e, b"name").unwrap_or_default(),
            (b"rowFields", b"field") => {
                if let Some(f) = field(attr(e, b"x")) {
                    push_name(&mut pivot.rows, f);
                }
            }
            (b"colFields", b"field") => {
                if let Some(f) = field(attr(e, b"x")) {
                    push_name(&mut pivot.columns, f);
                }
            }
            (b"pageFields", b"pageField") => {
                if let Some(f) = field(attr(e, b"fld")) {
                    push_name(&mut pivot.filters, f);
                }
            }
            (b"dataFields", b"dataField") => {
                let source = field(attr(e, b"fld")).cloned().unwrap_or_default();
                let how = attr(e, b"subtotal").unwrap_or_else(|| "sum".into());
                let shown = attr(e, b"name").unwrap_or_default();
                let computed = format!("{how} of {source}");
                let value = match (shown.trim().is_empty(), source.is_empty()) {
                    (true, _) => computed,
                    (false, true) => shown,
                    (false, false) if shown.eq_ignore_ascii_case(&computed) => shown,
                    (false, false) => format!("{} ({computed})", short_title(&shown)),
                };
                push_name(&mut pivot.values, &value);
            }
            _ => {}
        }
    });
    pivot
}

/// The pivot tables of an XLSX workbook (already checked as a package), per sheet name.
pub(crate) fn xlsx_pivots(bytes: &[u8]) -> HashMap<String, Vec<Pivot>> {
    let mut out: HashMap<String, Vec<Pivot>> = HashMap::new();
    let Ok(zip) = zip::ZipArchive::new(Cursor::new(bytes)) else {
        return out;
    };
    let mut parts = Parts { zip, read: 0 };
    let Some(workbook) = parts.get("xl/workbook.xml") else {
        return out;
    };
    let rels = parts
        .get("xl/_rels/workbook.xml.rels")
        .map(|x| relationships(&x))
        .unwrap_or_default();
    let mut sheets = Vec::new();
    walk(&workbook, |_, e| {
        if local(e.name().as_ref()) == b"sheet" && sheets.len() < MAX_SHEETS {
            if let (Some(name), Some(id)) = (attr(e, b"name"), attr(e, b"r:id")) {
                sheets.push((name, id));
            }
        }
    });
    let mut seen_sheets = HashSet::new();
    let mut caches: HashMap<String, Vec<String>> = HashMap::new();
    let mut left = MAX_PIVOTS;
    for (sheet, id) in sheets {
        let Some((target, _)) = rels.get(&id) else {
            continue;
        };
        let sheet_part = join("xl/workbook.xml", target);
        if !seen_sheets.insert(sheet_part.clone()) {
            continue; // two sheets naming one part: read once
        }
        for table in related(&mut parts, &sheet_part, "/pivotTable") {
            if left == 0 {
                return out;
            }
            left -= 1;
            let Some(xml) = parts.get(&table) else {
                continue;
            };
            let cache = related(&mut parts, &table, "/pivotCacheDefinition")
                .into_iter()
                .next()
                .unwrap_or_default();
            if !caches.contains_key(&cache) {
                let fields = parts
                    .get(&cache)
                    .map(|x| cache_fields(&x))
                    .unwrap_or_default();
                caches.insert(cache.clone(), fields);
            }
            let fields = caches.get(&cache).map(Vec::as_slice).unwrap_or_default();
            out.entry(sheet.clone())
                .or_default()
                .push(pivot_table(&xml, fields));
        }
    }
    out
}

/// The sheet of an ODS cell range address: `Pivot.A1:Pivot.D8`, `$Sheet1.$A$1:.$D$8` and
/// `'It''s here'.A1:B5` give `Pivot`, `Sheet1` and `It's here`.
fn range_sheet(address: &str) -> String {
    let address = address.trim().trim_start_matches('$');
    if let Some(quoted) = address.strip_prefix('\'') {
        let mut name = String::new();
        let mut chars = quoted.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() != Some(&'\'') {
                    break;
                }
                chars.next();
            }
            name.push(c);
        }
        return name;
    }
    address.split('.').next().unwrap_or_default().to_string()
}

/// The data pilots (pivot tables) of an ODS `content.xml`, per sheet name (of the range each
/// writes its results to).
pub(crate) fn ods_pivots(content: &[u8]) -> HashMap<String, Vec<Pivot>> {
    // A second pass over content.xml only when it holds one (most spreadsheets do not).
    if !content
        .windows(b"data-pilot-table".len())
        .any(|w| w == b"data-pilot-table")
    {
        return HashMap::new();
    }
    let mut found: Vec<(String, Pivot)> = Vec::new();
    // Whether the data pilot being read is one of those kept (the first MAX_PIVOTS).
    let mut kept = false;
    walk(content, |parent, e| match local(e.name().as_ref()) {
        b"data-pilot-table" => {
            kept = found.len() < MAX_PIVOTS;
            if kept {
                let target = attr(e, b"table:target-range-address").unwrap_or_default();
                let pivot = Pivot {
                    name: attr(e, b"table:name").unwrap_or_default(),
                    ..Pivot::default()
                };
                found.push((range_sheet(&target), pivot));
            }
        }
        b"data-pilot-field" if parent == b"data-pilot-table" && kept => {
            let Some((_, pivot)) = found.last_mut() else {
                return;
            };
            let name = attr(e, b"table:source-field-name").unwrap_or_default();
            match attr(e, b"table:orientation").as_deref() {
                Some("row") => push_name(&mut pivot.rows, &name),
                Some("column") => push_name(&mut pivot.columns, &name),
                Some("page") => push_name(&mut pivot.filters, &name),
                Some("data") => {
                    let how = attr(e, b"table:function").unwrap_or_else(|| "sum".into());
                    push_name(&mut pivot.values, &format!("{how} of {name}"));
                }
                _ => {}
            }
        }
        _ => {}
    });
    let mut out: HashMap<String, Vec<Pivot>> = HashMap::new();
    for (sheet, pivot) in found {
        out.entry(sheet).or_default().push(pivot);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pivot_is_said_by_its_fields_and_values() {
        let fields: Vec<String> = ["mpg", "cyl", "gear", "am"].map(String::from).to_vec();
        let xml = br#"<pivotTableDefinition xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" name="PivotTable1" cacheId="1">
            <location ref="A3:B7" firstHeaderRow="1" firstDataRow="1" firstDataCol="1"/>
            <pivotFields count="4"><pivotField dataField="1"/><pivotField axis="axisRow"/><pivotField axis="axisCol"/><pivotField axis="axisPage"/></pivotFields>
            <rowFields count="1"><field x="1"/></rowFields>
            <colFields count="2"><field x="2"/><field x="-2"/></colFields>
            <pageFields count="1"><pageField fld="3" hier="-1"/></pageFields>
            <dataFields count="2"><dataField name="Average of mpg" fld="0" subtotal="average"/><dataField name="Fuel" fld="0"/></dataFields>
        </pivotTableDefinition>"#;
        let pivot = pivot_table(xml, &fields);
        assert_eq!(
            describe(&pivot),
            "Pivot table PivotTable1: rows cyl; columns gear; filters am; values Average of mpg, \
             Fuel (sum of mpg)."
        );
        // Indexes out of range and hostile names are left out, not trusted.
        let odd = br#"<pivotTableDefinition name="P"><rowFields><field x="99"/><field x="-2"/></rowFields></pivotTableDefinition>"#;
        assert_eq!(describe(&pivot_table(odd, &fields)), "Pivot table P.");
    }

    #[test]
    fn ods_data_pilots_are_read_per_target_sheet() {
        let xml = br#"<office:document-content xmlns:office="o" xmlns:table="t"><office:body><office:spreadsheet>
            <table:data-pilot-tables><table:data-pilot-table table:name="DataPilot1" table:target-range-address="'Fuel by cylinders'.A1:'Fuel by cylinders'.B5">
              <table:data-pilot-field table:source-field-name="cyl" table:orientation="row"/>
              <table:data-pilot-field table:source-field-name="mpg" table:orientation="data" table:function="average"/>
            </table:data-pilot-table></table:data-pilot-tables></office:spreadsheet></office:body></office:document-content>"#;
        let found = &ods_pivots(xml)["Fuel by cylinders"];
        for (address, sheet) in [
            ("Pivot.A1:Pivot.D8", "Pivot"),
            ("$Sheet1.$A$1:.$D$8", "Sheet1"),
            ("'It''s here'.A1:B5", "It's here"),
            ("'a.b'.A1:'a.b'.C3", "a.b"),
        ] {
            assert_eq!(range_sheet(address), sheet, "{address}");
        }
        assert_eq!(
            describe(&found[0]),
            "Pivot table DataPilot1: rows cyl; values average of mpg."
        );
    }
}
