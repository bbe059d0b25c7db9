//! Line-addressed text: plain text, Markdown (sections from ATX headings) and JSON.
//!
//! Objects keep the source lines verbatim, so an object's `#line=a-b` and any sub-range of it
//! point at exactly those lines of the file. Objects are paragraph groups of up to
//! [`BLOCK_CHARS`]; chunking cuts them further to the embedding model's window.

use serde_json::json;

use crate::model::{ContentType, Structure, StructureNode};
use crate::objects::{lines_label, short_title, ObjectSink, Place, SECTION_SEPARATOR};
use crate::textcodec::decode;
use crate::{ExtractError, ExtractInput, Extraction, Extractor, Fragment};

/// Soft upper bound on the characters of one text object.
pub(crate) const BLOCK_CHARS: usize = 4000;

pub(crate) struct PlainText;
pub(crate) struct Markdown;
pub(crate) struct Json;

impl Extractor for PlainText {
    fn name(&self) -> &'static str {
        "text"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let decoded = decode(input.bytes);
        let lines: Vec<&str> = decoded.text.lines().collect();
        let mut sink = ObjectSink::new(input.locator, input.file_hash);
        push_blocks(&mut sink, &lines, 1, None, decoded.encoding);
        Ok(Extraction {
            objects: sink.objects,
            structure: Structure {
                nodes: Vec::new(),
                line_count: Some(lines.len() as u64),
                ..Structure::default()
            },
        })
    }
}

impl Extractor for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let mut extraction = PlainText.extract(input)?;
        let valid = serde_json::from_slice::<serde::de::IgnoredAny>(input.bytes).is_ok();
        for o in &mut extraction.objects {
            o.metadata.insert("valid_json".into(), valid.into());
        }
        Ok(extraction)
    }
}

impl Extractor for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let decoded = decode(input.bytes);
        let lines: Vec<&str> = decoded.text.lines().collect();
        let mut sink = ObjectSink::new(input.locator, input.file_hash);
        let mut nodes = Vec::new();
        // (level, title) of the headings enclosing the current line.
        let mut path: Vec<(usize, String)> = Vec::new();
        let mut section_start = 0usize;
        let mut in_fence = false;

        let section_name = |path: &[(usize, String)]| {
            (!path.is_empty()).then(|| {
                path.iter()
                    .map(|(_, t)| t.as_str())
                    .collect::<Vec<_>>()
                    .join(SECTION_SEPARATOR)
            })
        };

        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                in_fence = !in_fence;
                continue;
            }
            if in_fence {
                continue;
            }
            let Some((level, title)) = atx_heading(line) else {
                continue;
            };
            let before = lines.get(section_start..i).unwrap_or(&[]);
            // A heading directly followed by a sub-heading has no body of its own: its title
            // lives on in the structure and in the section path of what follows.
            let body_lines = before.iter().filter(|l| !l.trim().is_empty()).count();
            let heading_only =
                body_lines == 1 && before.first().is_some_and(|l| atx_heading(l).is_some());
            let before = if heading_only { &[][..] } else { before };
            push_blocks(
                &mut sink,
                before,
                section_start as u64 + 1,
                section_name(&path),
                decoded.encoding,
            );
            while path.last().is_some_and(|(l, _)| *l >= level) {
                path.pop();
            }
            let title = short_title(title);
            path.push((level, title.clone()));
            nodes.push(StructureNode {
                kind: "section".into(),
                title,
                level: level as u32,
                locator: input
                    .locator
                    .with_fragment(Fragment {
                        lines: Some((i as u64 + 1, i as u64 + 1)),
                        ..Fragment::default()
                    })
                    .to_string(),
                objects: 0,
                pages: None,
            });
            section_start = i;
        }
        let rest = lines.get(section_start..).unwrap_or(&[]);
        push_blocks(
            &mut sink,
            rest,
            section_start as u64 + 1,
            section_name(&path),
            decoded.encoding,
        );
        count_objects_per_section(&mut nodes, &sink);
        Ok(Extraction {
            objects: sink.objects,
            structure: Structure {
                nodes,
                line_count: Some(lines.len() as u64),
                ..Structure::default()
            },
        })
    }
}

/// A section heading at source line `line` of the file at `locator`, as a structure node.
pub(crate) fn section_at_line(
    locator: &crate::Locator,
    title: String,
    level: usize,
    line: u64,
) -> StructureNode {
    StructureNode {
        kind: "section".into(),
        title,
        level: level as u32,
        locator: locator
            .with_fragment(Fragment {
                lines: Some((line, line)),
                ..Fragment::default()
            })
            .to_string(),
        objects: 0,
        pages: None,
    }
}

/// Fill each section node's object count from the objects' line ranges.
pub(crate) fn count_objects_per_section(nodes: &mut [StructureNode], sink: &ObjectSink<'_>) {
    let starts: Vec<u64> = nodes
        .iter()
        .map(|n| {
            n.locator
                .parse::<crate::Locator>()
                .ok()
                .and_then(|l| l.fragment.lines)
                .map_or(0, |(a, _)| a)
        })
        .collect();
    for o in &sink.objects {
        let Some((first, _)) = o
            .context_ref
            .location
            .parse::<crate::Locator>()
            .ok()
            .and_then(|l| l.fragment.lines)
        else {
            continue;
        };
        if let Some(idx) = starts.iter().rposition(|s| *s <= first && *s > 0) {
            if let Some(n) = nodes.get_mut(idx) {
                n.objects += 1;
            }
        }
    }
}

/// `# Title` → (1, "Title"). Up to three leading spaces, 1–6 hashes, then a space or the end.
fn atx_heading(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = line.trim_start_matches(' ');
    let level = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = rest.get(level..)?;
    if !(after.is_empty() || after.starts_with(' ') || after.starts_with('\t')) {
        return None;
    }
    let title = after.trim().trim_end_matches('#').trim();
    (!title.is_empty()).then_some((level, title))
}

/// Split `lines` (the first being line number `first_line`) into paragraph groups of at most
/// about [`BLOCK_CHARS`] characters and push one text object per group. Blank-only groups are
/// skipped; a single overlong line becomes its own object, split by the sink into pieces of at
/// most [`crate::MAX_TEXT_OBJECT_BYTES`] that all name that line.
pub(crate) fn push_blocks(
    sink: &mut ObjectSink<'_>,
    lines: &[&str],
    first_line: u64,
    section: Option<String>,
    encoding: &str,
) {
    let mut start: Option<usize> = None;
    let mut chars = 0usize;
    let mut last_blank_cut: Option<usize> = None;

    let flush = |sink: &mut ObjectSink<'_>, from: usize, to: usize| {
        // Trim blank lines at both ends so the range names only lines with content.
        let slice = lines.get(from..to).unwrap_or(&[]);
        let Some(a) = slice.iter().position(|l| !l.trim().is_empty()) else {
            return;
        };
        let b = slice
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .unwrap_or(a);
        let (l1, l2) = (
            first_line + (from + a) as u64,
            first_line + (from + b) as u64,
        );
        let place = Place {
            fragment: Fragment {
                lines: Some((l1, l2)),
                ..Fragment::default()
            },
            label: Some(lines_label(l1, l2)),
            section: section.clone(),
        };
        let metadata = json!({ "encoding": encoding, "line_exact": true });
        match slice.get(a..=b).unwrap_or(&[]) {
            // One line (perhaps 100 MB of it): split without copying it whole first.
            [line] => sink.push_text(line, place, metadata),
            block => sink.push(ContentType::Text, block.join("\n"), place, metadata),
        }
    };

    for (i, line) in lines.iter().enumerate() {
        if line.len() >= BLOCK_CHARS {
            // An overlong line is an object (or several) of its own.
            if let Some(s) = start.take() {
                flush(sink, s, i);
            }
            flush(sink, i, i + 1);
            chars = 0;
            last_blank_cut = None;
            continue;
        }
        let s = *start.get_or_insert(i);
        if line.trim().is_empty() {
            last_blank_cut = Some(i);
        }
        chars += line.len() + 1;
        if chars >= BLOCK_CHARS {
            // Cut at the last blank line if there is one in this block, else here.
            let cut = match last_blank_cut {
                Some(c) if c > s => c,
                _ => i + 1,
            };
            flush(sink, s, cut);
            start = if cut <= i { Some(cut) } else { None };
            chars = lines
                .get(cut..=i)
                .map_or(0, |ls| ls.iter().map(|l| l.len() + 1).sum());
            last_blank_cut = None;
        }
    }
    if let Some(s) = start {
        flush(sink, s, lines.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{detect, Locator};

    fn run(name: &str, text: &str) -> Extraction {
        let loc = Locator::root(name);
        let det = detect(text.as_bytes(), name);
        crate::extract(&ExtractInput {
            bytes: text.as_bytes(),
            locator: &loc,
            file_hash: "0123456789abcdef0123",
            detected: &det,
            options: crate::ExtractOptions::defaults(),
        })
        .unwrap()
    }

    #[test]
    fn plain_text_objects_carry_exact_line_ranges() {
        let e = run("a.txt", "\nfirst para\nstill first\n\n\nsecond\n");
        let locs: Vec<_> = e
            .objects
            .iter()
            .map(|o| o.context_ref.location.as_str())
            .collect();
        assert_eq!(locs, vec!["a.txt#line=2-6"]);
        assert_eq!(e.objects[0].data, "first para\nstill first\n\n\nsecond");
    }

    #[test]
    fn long_text_is_cut_at_blank_lines() {
        let para = "word ".repeat(100);
        let text = format!("{para}\n\n{para}\n\n{para}\n\n{para}\n\n{para}\n\n{para}\n\n{para}\n\n{para}\n\n{para}\n\n{para}\n");
        let e = run("long.txt", &text);
        assert!(e.objects.len() >= 2);
        for o in &e.objects {
            assert!(o.data.len() <= BLOCK_CHARS + 600, "{}", o.data.len());
            let l: Locator = o.context_ref.location.parse().unwrap();
            let (a, b) = l.fragment.lines.unwrap();
            let source: Vec<&str> = text.lines().collect();
            assert_eq!(source[(a - 1) as usize..b as usize].join("\n"), o.data);
        }
    }

    #[test]
    fn markdown_sections_nest_and_name_objects() {
        let md =
            "intro\n# One\nalpha\n## One.Two\nbeta\n```\n# not a heading\n```\n# Three\ngamma\n";
        let e = run("r.md", md);
        let titles: Vec<_> = e
            .structure
            .nodes
            .iter()
            .map(|n| (n.level, n.title.as_str()))
            .collect();
        assert_eq!(titles, vec![(1, "One"), (2, "One.Two"), (1, "Three")]);
        let sections: Vec<_> = e
            .objects
            .iter()
            .map(|o| o.context_ref.section_id.as_deref())
            .collect();
        assert_eq!(
            sections,
            vec![None, Some("One"), Some("One › One.Two"), Some("Three")]
        );
        assert_eq!(e.objects[2].context_ref.location, "r.md#line=4-8");
    }
}
