//! Text tidied line by line: what every engine's page text goes through (pdf-extract,
//! lopdf, PDFium, OCR).

/// Trim trailing spaces and collapse runs of blank lines.
pub(crate) fn tidy(text: &str) -> String {
    tidy_lines(text, str::trim_end)
}

/// Each line cut down by `trim`, runs of blank lines collapsed to one, the whole trimmed.
pub(crate) fn tidy_lines(text: &str, trim: impl Fn(&str) -> &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = trim(line);
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}
