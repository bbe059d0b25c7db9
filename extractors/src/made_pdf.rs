//! Small PDFs written byte by byte, for tests and benchmarks of hostile shapes (a page of
//! degenerate size, a file padded with a large stream no page uses, a file of very many
//! pages): not part of the API.

use std::fmt::Write as _;

/// A PDF of `objects` (each `N 0 obj … endobj`'s body, numbered from 1; object 1 the
/// catalog), with its cross-reference table.
fn assemble(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    let mut table = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
    for o in offsets {
        let _ = writeln!(table, "{o:010} 00000 n ");
    }
    let _ = write!(
        table,
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    );
    out.extend_from_slice(table.as_bytes());
    out
}

/// A stream object's body holding `data`.
fn stream(data: &[u8]) -> Vec<u8> {
    let mut s = format!("<< /Length {} >>\nstream\n", data.len()).into_bytes();
    s.extend_from_slice(data);
    s.extend_from_slice(b"\nendstream");
    s
}

/// One page of `media_box` (`[x0 y0 x1 y1]`, points) drawn by `content` (a content
/// stream: `0 0 m 100 100 l S`, or text with font `/F1`), and `padding` bytes of a stream no
/// page uses.
pub fn one_page(media_box: [f64; 4], content: &str, padding: usize) -> Vec<u8> {
    let [x0, y0, x1, y1] = media_box;
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [{x0} {y0} {x1} {y1}] /Contents 4 0 R \
             /Resources << /Font << /F1 5 0 R >> >> >>"
        )
        .into_bytes(),
        stream(content.as_bytes()),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    if padding > 0 {
        // Bytes that do not compress away and hold no `endstream`.
        let mut pad = Vec::with_capacity(padding);
        let mut x: u32 = 0x2545_f491;
        while pad.len() < padding {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            pad.push(b'a' + (x % 26) as u8);
        }
        objects.push(stream(&pad));
    }
    assemble(&objects)
}

/// A PDF of `pages` empty A4 pages in one flat page tree.
pub fn many_pages(pages: usize) -> Vec<u8> {
    let mut objects = Vec::with_capacity(pages + 2);
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    let mut kids = String::with_capacity(pages * 8);
    for i in 0..pages {
        let _ = write!(kids, "{} 0 R ", i + 3);
    }
    objects.push(format!("<< /Type /Pages /Kids [{kids}] /Count {pages} >>").into_bytes());
    for _ in 0..pages {
        objects.push(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>".to_vec());
    }
    assemble(&objects)
}
