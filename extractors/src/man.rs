//! Manual pages: troff source with the man(7) macros (and the common mdoc(7) ones) as the
//! text `man` shows, without markup: `.SH`/`.Sh` sections and `.SS`/`.Ss` subsections open
//! sections (the page's structure), filled paragraphs are joined, `.nf`/`.EX` blocks keep
//! their lines, `.TP`/`.IP` tags stand on a line of their own, font changes (`\fB`, `.BR`),
//! escapes (`\-`, `\(em`, `\*(lq`) and strings defined with `.ds` become the characters they
//! stand for, and requests that only lay out the page (`.sp`, `.in`, `.ad`, macro and
//! condition definitions) leave nothing. Objects name the source lines they came from.
//!
//! A compressed page (`ls.1.gz`) is unpacked by the container walk and arrives here as
//! `ls.1`. The conformance test compares the words with `groff -man -Tutf8`.

use std::collections::HashMap;

use serde_json::json;

use crate::model::{ContentType, Structure, StructureNode};
use crate::objects::{lines_label, short_title, ObjectSink, Place, SECTION_SEPARATOR};
use crate::text::{count_objects_per_section, section_at_line, BLOCK_CHARS};
use crate::textcodec::decode;
use crate::{ExtractError, ExtractInput, Extraction, Extractor, Fragment};

pub(crate) struct ManPage;

/// Strings a page may define with `.ds`, at most.
const MAX_STRINGS: usize = 256;
/// The longest string value kept.
const MAX_STRING_BYTES: usize = 256;
/// The most arguments of one macro line read.
const MAX_ARGS: usize = 64;

/// One rendered line and the source line it came from.
struct Out {
    text: String,
    line: u64,
}

/// The renderer's state: where text goes and how it is laid out.
struct Page {
    /// Strings from `.ds` (and the man package's own).
    strings: HashMap<String, String>,
    /// Whether lines are filled (joined) or kept as they are (`.nf`).
    fill: bool,
    /// The paragraph being filled.
    para: String,
    para_line: u64,
    /// Rendered lines of the current section.
    lines: Vec<Out>,
    /// A `.TP`: the next text line is the tag.
    tag_next: bool,
    /// The page's name, from its first `.Nm name` (mdoc).
    nm: String,
}

impl Page {
    fn new() -> Page {
        let mut strings = HashMap::new();
        for (k, v) in [
            ("lq", "\u{201c}"),
            ("rq", "\u{201d}"),
            ("R", "\u{ae}"),
            ("Tm", "\u{2122}"),
            ("Lq", "\u{201c}"),
            ("Rq", "\u{201d}"),
        ] {
            strings.insert(k.to_string(), v.to_string());
        }
        Page {
            strings,
            fill: true,
            para: String::new(),
            para_line: 0,
            lines: Vec::new(),
            tag_next: false,
            nm: String::new(),
        }
    }

    /// End the paragraph being filled.
    fn flush(&mut self) {
        let text = self.para.split_whitespace().collect::<Vec<_>>().join(" ");
        self.para.clear();
        if !text.is_empty() {
            self.lines.push(Out {
                text,
                line: self.para_line,
            });
        }
    }

    /// A text line (escapes already rendered), from source line `line`.
    fn text(&mut self, text: &str, line: u64) {
        if self.tag_next {
            self.tag_next = false;
            self.flush();
            self.lines.push(Out {
                text: text.trim().to_string(),
                line,
            });
            return;
        }
        if !self.fill {
            self.flush();
            self.lines.push(Out {
                text: text.trim_end().to_string(),
                line,
            });
            return;
        }
        if text.trim().is_empty() {
            self.flush();
            return;
        }
        if self.para.is_empty() {
            self.para_line = line;
        }
        self.para.push(' ');
        self.para.push_str(text);
    }

    /// Render the escapes of `s`: fonts and sizes dropped, characters and strings put in.
    fn render(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = chars.next() else { break };
            match e {
                // A comment runs to the end of the line.
                '"' | '#' => break,
                'f' | 's' | 'F' | 'm' | 'M' | 'n' | 'g' | 'k' | 'z' | 'Y' | '$' => {
                    // A font, size, register, …: one char, `(xx` or `[name]` (sizes may
                    // carry a sign and two digits).
                    if e == 's' {
                        while chars.peek().is_some_and(|c| *c == '+' || *c == '-') {
                            chars.next();
                        }
                    }
                    let name = escape_name(&mut chars);
                    if e == 's' {
                        while chars.peek().is_some_and(char::is_ascii_digit) {
                            chars.next();
                        }
                    }
                    drop(name);
                }
                '(' => {
                    let name: String = chars.by_ref().take(2).collect();
                    out.push_str(special(&name).unwrap_or(""));
                }
                '[' => {
                    let name: String = chars.by_ref().take_while(|c| *c != ']').collect();
                    match special(&name) {
                        Some(c) => out.push_str(c),
                        None => out.extend(unicode_name(&name)),
                    }
                }
                '*' => {
                    let name = escape_name(&mut chars);
                    if let Some(v) = self.strings.get(&name) {
                        out.push_str(v);
                    }
                }
                // Quoted arguments of layout escapes: dropped with them.
                'h' | 'v' | 'w' | 'X' | 'b' | 'l' | 'L' | 'D' | 'o' | 'x' | 'A' | 'B' | 'C'
                | 'N' | 'R' | 'Z' => {
                    if let Some(q) = chars.next() {
                        let inner: String = chars.by_ref().take_while(|c| *c != q).collect();
                        // `\o'…'` overstrikes, `\Z'…'` prints without moving: the text stays.
                        if e == 'o' || e == 'Z' {
                            out.push_str(&self.render(&inner));
                        } else if e == 'C' {
                            out.push_str(special(&inner).unwrap_or(""));
                        }
                    }
                }
                '-' => out.push('-'),
                'e' | '\\' => out.push('\\'),
                '.' => out.push('.'),
                '\'' => out.push('\u{b4}'),
                '`' => out.push('`'),
                ' ' | '~' | '0' | '_' => out.push(' '),
                // Zero-width marks, italic corrections, breaks and hyphenation points.
                '&' | '|' | '^' | '%' | ':' | ')' | '!' | 'c' | 'p' | 'd' | 'u' | 'r' | 'a'
                | 't' | '{' | '}' | ',' | '/' | '\n' => {}
                other => out.push(other),
            }
        }
        out
    }

    /// The words of a macro's arguments (quoted ones kept whole), rendered; at most
    /// [`MAX_ARGS`] (the macros called among mdoc arguments nest that deep at most).
    fn args(&self, rest: &str) -> Vec<String> {
        split_args(rest)
            .iter()
            .take(MAX_ARGS)
            .map(|a| self.render(a))
            .collect()
    }
}

/// A name after an escape: one character, `(xx`, or `[name]`.
fn escape_name(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    match chars.next() {
        Some('(') => chars.by_ref().take(2).collect(),
        Some('[') => chars.by_ref().take_while(|c| *c != ']').collect(),
        Some(c) => c.to_string(),
        None => String::new(),
    }
}

/// A `\[u00E9]` character; anything else unknown is left out.
fn unicode_name(name: &str) -> Option<char> {
    let hex = name.strip_prefix('u')?;
    if !(4..=6).contains(&hex.len()) {
        return None;
    }
    u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
}

/// The characters of troff's special-character names that manual pages use.
fn special(name: &str) -> Option<&'static str> {
    Some(match name {
        "em" => "\u{2014}",
        "en" => "\u{2013}",
        "hy" | "mi" | "-" => "-",
        "bu" => "\u{2022}",
        "aq" => "'",
        "dq" => "\"",
        "lq" | "Lq" => "\u{201c}",
        "rq" | "Rq" => "\u{201d}",
        "oq" => "\u{2018}",
        "cq" => "\u{2019}",
        "co" => "\u{a9}",
        "rg" => "\u{ae}",
        "tm" => "\u{2122}",
        "mu" => "\u{d7}",
        "di" => "\u{f7}",
        "+-" => "\u{b1}",
        "<=" => "\u{2264}",
        ">=" => "\u{2265}",
        "!=" => "\u{2260}",
        "->" => "\u{2192}",
        "<-" => "\u{2190}",
        "de" => "\u{b0}",
        "ga" => "`",
        "aa" => "\u{b4}",
        "ti" | "ap" => "~",
        "ha" | "a^" => "^",
        "rs" | "\\" => "\\",
        "sl" => "/",
        "ba" | "or" => "|",
        "at" => "@",
        "sh" => "#",
        "Do" => "$",
        "lB" => "[",
        "rB" => "]",
        "lC" => "{",
        "rC" => "}",
        "la" => "\u{27e8}",
        "ra" => "\u{27e9}",
        "ss" => "\u{df}",
        ":a" => "\u{e4}",
        ":o" => "\u{f6}",
        ":u" => "\u{fc}",
        ":A" => "\u{c4}",
        ":O" => "\u{d6}",
        ":U" => "\u{dc}",
        "'e" => "\u{e9}",
        "`e" => "\u{e8}",
        "'a" => "\u{e1}",
        "`a" => "\u{e0}",
        "ff" => "ff",
        "fi" => "fi",
        "fl" => "fl",
        "Fi" => "ffi",
        "Fl" => "ffl",
        "sq" => "\u{25a1}",
        "lh" => "\u{261c}",
        "rh" => "\u{261e}",
        "pc" => "\u{b7}",
        "ua" => "\u{2191}",
        "da" => "\u{2193}",
        "eq" => "=",
        "pl" => "+",
        "ul" | "ru" => "_",
        "br" => "\u{2502}",
        "dg" => "\u{2020}",
        _ => return None,
    })
}

/// A macro line's arguments: split at spaces, `"quoted words"` kept whole (`""` inside for
/// a quote).
fn split_args(rest: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        let mut arg = String::new();
        if c == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                        arg.push('"');
                        continue;
                    }
                    break;
                }
                arg.push(c);
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' || c == '\t' {
                    break;
                }
                arg.push(c);
                chars.next();
                // An escaped space stays in the argument.
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        arg.push(n);
                    }
                }
            }
        }
        args.push(arg);
    }
    args
}

/// mdoc macros that may stand among another macro's arguments (`.Op Fl n Ar count`).
const MDOC_CALLABLE: &[&str] = &[
    "Fl", "Ar", "Op", "Oo", "Oc", "Dq", "Sq", "Ql", "Pq", "Aq", "Brq", "Xr", "Nm", "Cm", "Ic",
    "Ev", "Pa", "Va", "Fn", "Fa", "Ft", "Em", "Sy", "Li", "Dv", "Er", "Ad", "Ns", "No", "Pf",
];

/// An mdoc macro's text: its own arguments, with the prefix or brackets it prints, and the
/// macros called among them (`nm`: the page's name, for a bare `.Nm`).
fn mdoc_inline(name: &str, args: &[String], nm: &str) -> Option<String> {
    let split = args
        .iter()
        .position(|a| MDOC_CALLABLE.contains(&a.as_str()))
        .unwrap_or(args.len());
    let (own, rest) = args.split_at(split);
    let nested = rest
        .split_first()
        .and_then(|(m, r)| mdoc_inline(m, r, nm))
        .unwrap_or_default();
    let joined = own.join(" ");
    let with = |text: String| -> String {
        match (text.is_empty(), nested.is_empty()) {
            (_, true) => text,
            (true, false) => nested.clone(),
            (false, false) => format!("{text} {nested}"),
        }
    };
    Some(match name {
        "Fl" => with(if own.is_empty() {
            "-".to_string()
        } else {
            own.iter()
                .map(|a| {
                    if a.chars().all(|c| c.is_ascii_punctuation()) {
                        a.clone()
                    } else {
                        format!("-{a}")
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        }),
        "Op" | "Oo" => format!("[{}]", with(joined)),
        "Dq" | "Do" => format!("\u{201c}{}\u{201d}", with(joined)),
        "Sq" | "So" | "Ql" => format!("\u{2018}{}\u{2019}", with(joined)),
        "Pq" | "Po" => format!("({})", with(joined)),
        "Aq" | "Ao" => format!("<{}>", with(joined)),
        "Brq" | "Bro" => format!("{{{}}}", with(joined)),
        "Xr" => with(match own {
            [page, section, tail @ ..] => format!("{page}({section}){}", tail.concat()),
            _ => joined,
        }),
        "Nd" => format!("\u{2014} {}", with(joined)),
        "Nm" if own.is_empty() => with(nm.to_string()),
        "Ar" if own.is_empty() => with("file ...".to_string()),
        "Nm" | "Ar" | "Cm" | "Ic" | "Ev" | "Pa" | "Va" | "Fn" | "Fa" | "Ft" | "Em" | "Sy"
        | "Li" | "Dv" | "Er" | "Ad" | "An" | "Lk" | "Mt" | "Ms" | "Ux" | "Bx" | "St" | "Tn"
        | "No" | "Ns" | "Pf" | "Qo" | "Qc" | "Dc" | "Sc" | "Pc" | "Ac" | "Oc" | "Brc" | "It"
        | "At" | "Fx" | "Nx" | "Ox" | "Bsx" | "Dx" | "%A" | "%T" | "%B" | "%D" => with(joined),
        _ => return None,
    })
}

/// Requests that only lay out the page, or define things: nothing of them is text.
const SILENT: &[&str] = &[
    "sp", "br", "in", "ti", "ad", "na", "ne", "hy", "nh", "ft", "ps", "vs", "ls", "ll", "pl", "bp",
    "so", "nr", "rr", "rm", "rn", "tr", "cc", "c2", "ec", "eo", "mk", "rt", "ns", "rs", "ta", "tc",
    "lc", "fc", "pc", "lt", "po", "cu", "ul", "uf", "ss", "cs", "bd", "fp", "hc", "hw", "nm", "nn",
    "ev", "ch", "wh", "dt", "it", "em", "pm", "fl", "ab", "ex", "lf", "tm", "mso", "PD", "DT",
    "UC", "AT", "ig", "IX", "Dd", "Dt", "Os", "Bl", "El", "Bd", "Ed", "Ek", "Bk", "Pp", "Lp", "Ud",
    "Sm", "Bf", "Ef", "RS", "RE", "ce", "hlm", "hym", "hys", "cflags", "char", "ftr", "fschar",
    "schar", "tkf", "shc", "pso", "open", "close", "write", "sy", "ec", "opena", "do", "blm",
    "lsm", "kern", "sizes", "trf", "vpt", "warn", "linetabs",
];

impl Extractor for ManPage {
    fn name(&self) -> &'static str {
        "man"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let decoded = decode(input.bytes);
        let source: Vec<&str> = decoded.text.lines().collect();
        let mut sink = ObjectSink::new(input.locator, input.file_hash);
        let mut nodes: Vec<StructureNode> = Vec::new();
        let mut page = Page::new();
        let mut path: Vec<(usize, String)> = Vec::new();
        let mut title: Option<String> = None;
        // `.de`/`.ig` bodies, and the blocks of conditions (`\{ … \}`), are skipped.
        let mut skip_until: Option<String> = None;
        let mut brace_depth = 0usize;
        let mut pending = String::new();
        let mut pending_line = 0u64;

        let push_section =
            |page: &mut Page, path: &[(usize, String)], sink: &mut ObjectSink<'_>| {
                page.flush();
                let section = (!path.is_empty()).then(|| {
                    path.iter()
                        .map(|(_, t)| t.as_str())
                        .collect::<Vec<_>>()
                        .join(SECTION_SEPARATOR)
                });
                push_lines(
                    sink,
                    &std::mem::take(&mut page.lines),
                    section,
                    decoded.encoding,
                );
            };

        for (i, raw) in source.iter().enumerate() {
            let line = i as u64 + 1;
            // A line ending in `\` continues on the next.
            if let Some(head) = raw.strip_suffix('\\').filter(|h| !h.ends_with('\\')) {
                if pending.is_empty() {
                    pending_line = line;
                }
                pending.push_str(head);
                continue;
            }
            let joined;
            let (text, line) = if pending.is_empty() {
                (*raw, line)
            } else {
                pending.push_str(raw);
                joined = std::mem::take(&mut pending);
                (joined.as_str(), pending_line)
            };
            if let Some(end) = &skip_until {
                if text.trim_start().starts_with(end.as_str()) {
                    skip_until = None;
                }
                continue;
            }
            if brace_depth > 0 {
                brace_depth += text.matches("\\{").count();
                brace_depth = brace_depth.saturating_sub(text.matches("\\}").count());
                continue;
            }
            let is_request = text.starts_with('.') || text.starts_with('\'');
            if !is_request {
                let rendered = page.render(text);
                page.text(&rendered, line);
                continue;
            }
            // A request's comment (`\"` to the end of the line) is no argument.
            let body = text.get(1..).unwrap_or("");
            let body = body
                .find("\\\"")
                .map_or(body, |at| body.get(..at).unwrap_or(body));
            let body = body.trim_start();
            let (name, rest) = body.split_once([' ', '\t']).unwrap_or((body, ""));
            match name {
                "" | "\\\"" => {}
                n if n.starts_with("\\\"") => {}
                "TH" | "Dt" => {
                    let args = page.args(rest);
                    let t = match args.as_slice() {
                        [name, section, ..] => format!("{name}({section})"),
                        [name] => name.clone(),
                        [] => String::new(),
                    };
                    if !t.is_empty() && title.is_none() {
                        title = Some(short_title(&t));
                    }
                }
                "SH" | "SS" | "Sh" | "Ss" => {
                    let level = if matches!(name, "SH" | "Sh") { 1 } else { 2 };
                    push_section(&mut page, &path, &mut sink);
                    let mut heading = page.args(rest).join(" ");
                    if heading.is_empty() {
                        // `.SH` alone: the heading is the next line.
                        if let Some(next) = source.get(i + 1) {
                            heading = page.render(next);
                        }
                    }
                    let heading = short_title(heading.trim());
                    if heading.is_empty() {
                        continue;
                    }
                    while path.last().is_some_and(|(l, _)| *l >= level) {
                        path.pop();
                    }
                    path.push((level, heading.clone()));
                    nodes.push(section_at_line(input.locator, heading.clone(), level, line));
                    page.lines.push(Out {
                        text: heading,
                        line,
                    });
                    page.fill = true;
                }
                "PP" | "LP" | "P" | "HP" | "sp" | "Pp" | "Lp" => {
                    page.flush();
                    page.tag_next = false;
                }
                "br" => page.flush(),
                "TP" | "TQ" => {
                    page.flush();
                    page.tag_next = true;
                }
                "IP" | "It" => {
                    page.flush();
                    let args = page.args(rest);
                    let tag = if name == "It" {
                        mdoc_inline("It", &args, &page.nm).unwrap_or_default()
                    } else {
                        args.first().cloned().unwrap_or_default()
                    };
                    if !tag.trim().is_empty() {
                        page.lines.push(Out {
                            text: tag.trim().to_string(),
                            line,
                        });
                    }
                }
                "nf" | "EX" | "Bd" => {
                    page.flush();
                    page.fill = false;
                }
                "fi" | "EE" | "Ed" => {
                    page.flush();
                    page.fill = true;
                }
                "B" | "I" | "SM" | "SB" | "UR" | "MT" => {
                    let args = page.args(rest);
                    if args.is_empty() {
                        continue; // the font applies to the next line, which comes as text
                    }
                    let t = args.join(" ");
                    page.text(&t, line);
                }
                "BR" | "RB" | "BI" | "IB" | "IR" | "RI" => {
                    let t = page.args(rest).concat();
                    page.text(&t, line);
                }
                "UE" | "ME" => {
                    let t = page.args(rest).concat();
                    if !t.is_empty() {
                        page.text(&t, line);
                    }
                }
                "ds" | "ds1" => {
                    let (key, value) = rest.trim_start().split_once(' ').unwrap_or((rest, ""));
                    let value = value.strip_prefix('"').unwrap_or(value);
                    if page.strings.len() < MAX_STRINGS && value.len() <= MAX_STRING_BYTES {
                        let v = page.render(value);
                        page.strings.insert(key.trim().to_string(), v);
                    }
                }
                "de" | "de1" | "am" | "ig" | "dei" | "ami" => {
                    let end = split_args(rest)
                        .get(if name == "ig" { 0 } else { 1 })
                        .map_or_else(|| "..".to_string(), |e| format!(".{e}"));
                    skip_until = Some(end);
                }
                "if" | "ie" | "el" | "while" => {
                    if rest.contains("\\{") {
                        brace_depth = rest.matches("\\{").count();
                        brace_depth = brace_depth.saturating_sub(rest.matches("\\}").count());
                    }
                }
                n if SILENT.contains(&n) => {}
                n => {
                    let args = page.args(rest);
                    if n == "Nm" && page.nm.is_empty() {
                        if let Some(first) = args.first() {
                            page.nm = first.clone();
                        }
                    }
                    match mdoc_inline(n, &args, &page.nm) {
                        Some(t) => page.text(&t, line),
                        // An unknown macro: its words are kept, the macro's name is not.
                        None if n.chars().all(|c| c.is_ascii_alphabetic()) && !args.is_empty() => {
                            page.text(&args.join(" "), line);
                        }
                        None => {}
                    }
                }
            }
        }
        push_section(&mut page, &path, &mut sink);
        count_objects_per_section(&mut nodes, &sink);
        if let Some(t) = &title {
            for o in &mut sink.objects {
                o.metadata.insert("title".into(), t.clone().into());
            }
        }
        Ok(Extraction {
            objects: sink.objects,
            structure: Structure {
                nodes,
                line_count: Some(source.len() as u64),
                ..Structure::default()
            },
        })
    }
}

/// Push rendered lines as text objects of about [`BLOCK_CHARS`], each naming the source lines
/// its text came from.
fn push_lines(sink: &mut ObjectSink<'_>, lines: &[Out], section: Option<String>, encoding: &str) {
    let mut text = String::new();
    let mut range: Option<(u64, u64)> = None;
    let mut flush = |text: &mut String, range: &mut Option<(u64, u64)>| {
        let Some((a, b)) = range.take() else { return };
        sink.push(
            ContentType::Text,
            std::mem::take(text),
            Place {
                fragment: Fragment {
                    lines: Some((a, b)),
                    ..Fragment::default()
                },
                label: Some(lines_label(a, b)),
                section: section.clone(),
            },
            json!({ "encoding": encoding, "line_exact": false, "format": "man" }),
        );
    };
    for l in lines {
        if l.text.trim().is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&l.text);
        range = Some(match range {
            Some((a, b)) => (a.min(l.line), b.max(l.line)),
            None => (l.line, l.line),
        });
        if text.len() >= BLOCK_CHARS {
            flush(&mut text, &mut range);
        }
    }
    flush(&mut text, &mut range);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect;
    use crate::detect::is_man_page;

    pub(crate) fn run(name: &str, text: &str) -> Extraction {
        assert_eq!(detect(text.as_bytes(), name).mime, "text/troff", "{name}");
        crate::testing::extract_as(name, text.as_bytes(), None).unwrap()
    }

    pub(crate) const LS: &str = r#".\" Copyright notice
.TH LS "1" "March 2024" "GNU coreutils 9.4" "User Commands"
.ds Ex example
.de XX
.B hidden macro body
..
.SH NAME
ls \- list directory contents
.SH SYNOPSIS
.B ls
[\fI\,OPTION\/\fR]... [\fI\,FILE\/\fR]...
.SH DESCRIPTION
.\" Add any additional description here
.PP
List information about the FILEs (the current directory by default).
Sort entries alphabetically if none of
\fB\-cftuvSUX\fR nor \fB\-\-sort\fR is specified.
.TP
\fB\-a\fR, \fB\-\-all\fR
do not ignore entries starting with .
.TP
.BR \-L ", " \-\-dereference
when showing file information for a symbolic link, show \(lqinformation\(rq
for the file the link references \(em an \*(Ex.
.SS "Exit status:"
.nf
0   if OK,
1   if minor problems
.fi
.SH "SEE ALSO"
.BR dir (1),
.IR vdir (1)
"#;

    #[test]
    fn a_man_page_is_its_text_with_sections_and_no_markup() {
        let e = run("ls.1", LS);
        let text = crate::testing::all_text(&e);
        for residue in [
            "\\f",
            "\\-",
            ".TP",
            ".B ",
            "\\(",
            "\\*",
            "hidden macro",
            ".\\\"",
        ] {
            assert!(!text.contains(residue), "{residue:?} in {text}");
        }
        assert!(text.contains("ls - list directory contents"), "{text}");
        assert!(text.contains("ls [OPTION]... [FILE]..."), "{text}");
        assert!(
            text.contains("-a, --all\ndo not ignore entries starting with ."),
            "{text}"
        );
        assert!(text.contains("-L, --dereference\n"), "{text}");
        assert!(
            text.contains("show \u{201c}information\u{201d} for the file the link references \u{2014} an example."),
            "{text}"
        );
        assert!(text.contains("0   if OK,\n1   if minor problems"), "{text}");
        assert!(text.contains("dir(1), vdir(1)"), "{text}");
        let titles: Vec<(&str, u32)> = e
            .structure
            .nodes
            .iter()
            .map(|n| (n.title.as_str(), n.level))
            .collect();
        assert_eq!(
            titles,
            [
                ("NAME", 1),
                ("SYNOPSIS", 1),
                ("DESCRIPTION", 1),
                ("Exit status:", 2),
                ("SEE ALSO", 1)
            ]
        );
        let exit = e.objects.iter().find(|o| o.data.contains("if OK")).unwrap();
        assert_eq!(
            exit.context_ref.section_id.as_deref(),
            Some(format!("DESCRIPTION{SECTION_SEPARATOR}Exit status:").as_str())
        );
        assert_eq!(e.objects[0].metadata["title"], "LS(1)");
    }

    /// A BSD-style page (mdoc macros).
    const MDOC: &str = r#".Dd March 3, 2024
.Dt TOOL 8
.Os
.Sh NAME
.Nm tool
.Nd rotate the harbour logs
.Sh SYNOPSIS
.Nm
.Op Fl v
.Op Fl n Ar count
.Ar file ...
.Sh DESCRIPTION
The
.Nm
utility rotates each
.Ar file
once a night.
.Bl -tag -width Ds
.It Fl v
Say what is rotated.
.It Fl n Ar count
Keep
.Ar count
old logs.
.El
.Sh SEE ALSO
.Xr logrotate 8
"#;

    /// A page as pod2man writes them: strings and macros defined up front, conditions.
    const POD: &str = r#".\" Automatically generated by Pod::Man 4.14
.de Sp \" Vertical space (when we can't use .PP)
.if t .sp .5v
.if n .sp
..
.de Vb \" Begin verbatim text
.ft CW
.nf
.ne \\$1
..
.de Ve \" End verbatim text
.ft R
.fi
..
.ie n \{\
.    ds C` ""
.    ds C' ""
'br\}
.el\{\
.    ds C`
.    ds C'
'br\}
.IX Title "Harbour::Tide 3pm"
.TH Harbour::Tide 3pm "2024-03-03" "perl v5.36.0" "User Contributed Perl Documentation"
.SH "NAME"
Harbour::Tide \- tide tables for the harbour master
.SH "SYNOPSIS"
.IX Header "SYNOPSIS"
.Vb 2
\&  use Harbour::Tide;
\&  my $t = Harbour::Tide\->new(port => "Skerry");
.Ve
.SH "DESCRIPTION"
.IX Header "DESCRIPTION"
This module reads the \f(CW\*(C`tides.csv\*(C'\fR file and answers \fIwhen\fR the next
high tide comes.
.SS "Methods"
.IX Subsection "Methods"
.IP "\fBnext_high\fR" 4
.IX Item "next_high"
Returns the time of the next high tide.
"#;

    fn words(s: &str) -> HashMap<String, usize> {
        let mut m = HashMap::new();
        for w in s
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            *m.entry(w.to_lowercase()).or_insert(0) += 1;
        }
        m
    }

    /// Conformance: the words of each page as `groff -mandoc -Tutf8` renders it (its running
    /// header and footer left out), and ours: the same multiset, to an F1 of 0.97.
    #[test]
    fn man_pages_read_as_groff_renders_them() {
        let dir = tempfile::tempdir().unwrap();
        for (name, page) in [("ls.1", LS), ("tool.8", MDOC), ("Harbour::Tide.3pm", POD)] {
            let path = dir.path().join(name);
            std::fs::write(&path, page).unwrap();
            let out = std::process::Command::new("groff")
                .args(["-mandoc", "-Tutf8", "-rHY=0", "-rLL=300n"])
                .args(["-P-c", "-P-b", "-P-o", "-P-u"])
                .arg(&path)
                .output()
                .expect("groff (Debian groff-base) must be installed: make test installs it");
            let rendered = String::from_utf8_lossy(&out.stdout);
            let lines: Vec<&str> = rendered.lines().filter(|l| !l.trim().is_empty()).collect();
            let body = lines
                .get(1..lines.len().saturating_sub(1))
                .unwrap_or(&[])
                .join("\n");
            let theirs = words(&body);
            let e = run(name, page);
            let ours_text = crate::testing::all_text(&e);
            let ours = words(&ours_text);
            let common: usize = ours
                .iter()
                .map(|(w, n)| (*n).min(theirs.get(w).copied().unwrap_or(0)))
                .sum();
            let total = ours.values().sum::<usize>() + theirs.values().sum::<usize>();
            let f1 = 2.0 * common as f64 / total as f64;
            assert!(
                f1 >= 0.97,
                "{name}: F1 {f1:.3}\nours:\n{ours_text}\ngroff:\n{body}"
            );
            for residue in ["\\f", "\\(", "\\*", ".IX", ".Vb", ".Nm", ".Op", "ds C"] {
                assert!(
                    !ours_text.contains(residue),
                    "{name}: {residue} in {ours_text}"
                );
            }
        }
    }

    #[test]
    fn man_pages_are_told_from_other_text() {
        assert!(is_man_page(LS, "ls.1"));
        assert!(is_man_page(LS, "notes.txt"), "a .TH opens it");
        assert!(is_man_page(".Dd May 1\n.Dt X 1\n.Sh NAME\n", "x.8"));
        assert!(!is_man_page(
            "Chapter 1\n.SH is how a section starts\n",
            "notes.txt"
        ));
        assert!(!is_man_page("just text\n", "x.1"));
        assert!(!is_man_page(".TH\n", "x.10000"));
        assert!(!is_man_page("v1.0 notes\n", "release.0"));
    }

    #[test]
    fn hostile_troff_stays_bounded_and_never_panics() {
        let mut s = String::from(".TH X 1\n");
        for i in 0..2000 {
            s.push_str(&format!(".ds s{i} {}\n", "y".repeat(300)));
        }
        s.push_str(&format!(".Op {}\n", "Fl Op ".repeat(50_000)));
        s.push_str("\\\\\\f\\(\\[\\*\\s\\h'\\\n");
        s.push_str(".SH\n");
        s.push_str(".if n \\{\\\n.SH hidden\n");
        s.push_str(".de A\n.SH never\n");
        let e = run("x.1", &s);
        assert!(e.structure.nodes.is_empty(), "{:?}", e.structure.nodes);
    }
}
