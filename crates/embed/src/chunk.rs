//! Token-aware chunking with the embedding model's own tokenizer.
//!
//! Each text object is cut on its own, so a chunk never crosses a page, sheet, slide or
//! section boundary (those are object boundaries) and keeps its object's context reference,
//! narrowed to the lines or rows it covers. Cuts fall at word starts, preferably after a line
//! or sentence end, and consecutive chunks overlap by a few tokens. Tables repeat their header
//! in every chunk and hold only a few rows each, without overlap: mean-pooled embeddings of a
//! small model average their tokens, so a cell's text is found when its row is most of the
//! chunk (an exact-phrase query scores 0.57 against header + 1 row, 0.29 against header +
//! 3 rows and 0.12 against header + 5 rows with all-MiniLM-L6-v2).

use extractors::{ContentObject, ContentType, ContextRef, FileContentIndex, Fragment, Locator};
use serde::{Deserialize, Serialize};

use crate::junk::RunningLines;

/// How text is cut into chunks for embedding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkingConfig {
    /// Target chunk length in model tokens (special tokens excluded). Never more than the
    /// model's window minus its two special tokens.
    pub max_tokens: usize,
    /// Tokens repeated from the end of one chunk at the start of the next.
    pub overlap_tokens: usize,
    /// Body tokens (rows, header excluded) per chunk of a table; tables do not overlap.
    pub table_rows_tokens: usize,
    /// Most chunks one file may have. A file that needs more is `skipped` with
    /// `limit: chunks` before anything of it is embedded. The default (about 2.5 M tokens,
    /// some 4000 pages of prose) takes 3–7 minutes to embed at 25–50 chunks/s; chunking stops
    /// at the limit, so refusing a 100 MB one-line text costs seconds, not hours.
    pub max_file_chunks: usize,
    /// Give every indexed file a card: one more chunk with its name, place, type, properties
    /// and outline (see [`crate::card`]), so that every file is found by its name,
    /// those without text too. The card is not counted against `max_file_chunks`.
    pub file_cards: bool,
    /// Leave out of the embedded chunks what only looks like text: table-of-contents
    /// dot-leader lines, bare page numbers, running headers and footers (see
    /// [`crate::junk`]). They stay readable through the read tools.
    pub drop_junk: bool,
    /// Embed each passage behind a short header — the document's title and the passage's
    /// section path — as keyword search already matches them (see [`crate::Chunk::context`]).
    pub contextual_headers: bool,
}

impl Default for ChunkingConfig {
    fn default() -> Self {
        ChunkingConfig {
            max_tokens: 250,
            overlap_tokens: 32,
            table_rows_tokens: 48,
            max_file_chunks: 10_000,
            file_cards: true,
            drop_junk: true,
            contextual_headers: true,
        }
    }
}

/// A [`Chunker`] is built once per `ingest::Ingestor` and shared (`Arc<Chunker>`) by every
/// extraction thread: chunking takes `&self`.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Chunker>();
};

/// Tokens the model adds around every input ([CLS] and [SEP]).
const SPECIAL_TOKENS: usize = 2;

/// One piece of text to embed, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// 0-based position among the file's chunks; part of the point id.
    pub index: u32,
    /// The text that is embedded (a table chunk repeats its header row).
    pub text: String,
    /// The content object the chunk was cut from.
    pub object_id: String,
    /// The object's content type.
    pub content_type: ContentType,
    /// The object's context reference, narrowed to this chunk's lines or rows.
    pub context_ref: ContextRef,
    /// Model tokens in `text` (special tokens excluded).
    pub tokens: usize,
    /// A passage of the file's content, or the file's card.
    #[serde(default)]
    pub kind: ChunkKind,
    /// What the embedding sees before `text` (not stored, not shown): the document's title
    /// and the chunk's section path, so a passage is embedded in its context. Empty when
    /// contextual headers are off ([`ChunkingConfig::contextual_headers`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context: String,
}

impl Chunk {
    /// The text the model embeds: [`Chunk::context`], a line break, then [`Chunk::text`].
    pub fn embedding_text(&self) -> std::borrow::Cow<'_, str> {
        if self.context.is_empty() {
            std::borrow::Cow::Borrowed(&self.text)
        } else {
            std::borrow::Cow::Owned(format!("{}\n{}", self.context, self.text))
        }
    }
}

/// The longest contextual header, in bytes (about 40 tokens: the chunk keeps most of the
/// window; what the window cuts off the chunk's end the next chunk's overlap holds).
const MAX_CONTEXT_BYTES: usize = 160;

/// What a chunk is: a passage of a file's content, or the file's card (see
/// [`crate::card`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkKind {
    /// Text cut from the file's content objects.
    #[default]
    Passage,
    /// The file's card: its name, place, type, properties and structure.
    Card,
}

impl std::str::FromStr for ChunkKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "card" => Ok(ChunkKind::Card),
            "passage" => Ok(ChunkKind::Passage),
            other => Err(format!("kind must be card or passage; not {other:?}")),
        }
    }
}

impl ChunkKind {
    /// The name payloads, filters and answers use.
    pub fn as_str(self) -> &'static str {
        match self {
            ChunkKind::Passage => "passage",
            ChunkKind::Card => "card",
        }
    }
}

/// Cuts content objects into chunks that fit the model's window. Build it once (from
/// [`crate::load_tokenizer`]) and share it: every method takes `&self`.
pub struct Chunker {
    tokenizer: tokenizers::Tokenizer,
    max_tokens: usize,
    overlap: usize,
    table_rows_tokens: usize,
    drop_junk: bool,
    file_cards: bool,
    contextual_headers: bool,
}

impl Chunker {
    /// `tokenizer` must not truncate ([`crate::load_tokenizer`] gives such a one).
    /// `max_tokens` is capped to the model's window (`window_tokens`, special tokens
    /// included).
    pub fn new(
        tokenizer: tokenizers::Tokenizer,
        config: &ChunkingConfig,
        window_tokens: usize,
    ) -> Self {
        let max_tokens = config
            .max_tokens
            .min(window_tokens.saturating_sub(SPECIAL_TOKENS));
        Chunker {
            tokenizer,
            max_tokens,
            overlap: config.overlap_tokens.min(max_tokens / 2),
            table_rows_tokens: config.table_rows_tokens.min(max_tokens).max(1),
            drop_junk: config.drop_junk,
            file_cards: config.file_cards,
            contextual_headers: config.contextual_headers,
        }
    }

    fn offsets(&self, text: &str) -> Vec<(usize, usize)> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_offsets().to_vec())
            .unwrap_or_default()
    }

    /// Token count of `text` without special tokens.
    pub fn count_tokens(&self, text: &str) -> usize {
        self.offsets(text).len()
    }

    /// Every chunk of one file (`locator`, its content index and objects): its passages, at
    /// most `max_chunks` of them, each with its contextual header when those are on, then
    /// its card when cards are on (not counted against `max_chunks`). The one way the
    /// pipeline and `reindex` cut a file.
    pub fn chunk_file(
        &self,
        locator: &str,
        index: &FileContentIndex,
        objects: &[ContentObject],
        max_chunks: usize,
    ) -> Result<Vec<Chunk>, TooManyChunks> {
        let mut chunks = self.chunk_objects_limited(objects, max_chunks)?;
        if self.contextual_headers {
            let title = super::card::document_title(locator, index);
            for c in &mut chunks {
                c.context = context_header(&title, c.context_ref.section_id.as_deref());
            }
        }
        if self.file_cards {
            let text = super::card::card_text(&index.mime_type, index, objects);
            let number = u32::try_from(chunks.len()).unwrap_or(u32::MAX);
            let kind = super::card::card_content_type(objects);
            chunks.push(self.card(number, locator, &text, kind));
        }
        Ok(chunks)
    }

    /// The card chunk of file `locator`: `text` (see [`crate::card::card_text`]) cut
    /// to the model's window, numbered `index` (after the file's passages), standing for
    /// objects of `content_type`. Its locator is the file's, without a fragment.
    pub fn card(&self, index: u32, locator: &str, text: &str, content_type: ContentType) -> Chunk {
        let text = text
            .get(..text.floor_char_boundary(WINDOW_BYTES))
            .unwrap_or(text);
        let offsets = self.offsets(text);
        let (text, tokens) = match offsets.get(self.max_tokens) {
            Some(&(cut, _)) => (text.get(..cut).unwrap_or(text).trim_end(), self.max_tokens),
            None => (text, offsets.len()),
        };
        let text = text.to_string();
        Chunk {
            index,
            text,
            object_id: format!("card-{index}"),
            content_type,
            context_ref: ContextRef {
                container_path: locator.to_string(),
                location: locator.to_string(),
                ..ContextRef::default()
            },
            tokens,
            kind: ChunkKind::Card,
            context: String::new(),
        }
    }

    /// Chunk every text object of a file, numbering chunks from 0.
    pub fn chunk_objects(&self, objects: &[ContentObject]) -> Vec<Chunk> {
        // Without a limit there is no error.
        self.chunk_objects_limited(objects, usize::MAX)
            .unwrap_or_default()
    }

    /// [`Chunker::chunk_objects`], giving up as soon as the file needs more than `max_chunks`
    /// chunks: the work done is bounded by the limit, not by the file's size.
    pub fn chunk_objects_limited(
        &self,
        objects: &[ContentObject],
        max_chunks: usize,
    ) -> Result<Vec<Chunk>, TooManyChunks> {
        let mut chunks = Vec::new();
        let running = self.drop_junk.then(|| RunningLines::of(objects));
        for object in objects {
            if object.content_type != ContentType::Text || object.data.trim().is_empty() {
                continue;
            }
            self.chunk_object(object, running.as_ref(), &mut chunks, max_chunks)?;
        }
        Ok(chunks)
    }

    fn chunk_object(
        &self,
        object: &ContentObject,
        junk: Option<&RunningLines>,
        out: &mut Vec<Chunk>,
        max_chunks: usize,
    ) -> Result<(), TooManyChunks> {
        let header_lines = object
            .metadata
            .get("header_lines")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0) as usize;
        let (header, body) = split_lines(&object.data, header_lines);
        let header_tokens = if header.is_empty() {
            0
        } else if header.len() > WINDOW_BYTES {
            usize::MAX // never tokenized whole; not repeated either
        } else {
            self.count_tokens(header)
        };
        // A header that eats more than half the window is not repeated.
        let (header, header_tokens) = if header_tokens.saturating_mul(2) > self.max_tokens {
            ("", 0)
        } else {
            (header, header_tokens)
        };
        let body = if header.is_empty() {
            &object.data[..]
        } else {
            body
        };
        let is_table = header_lines > 0;
        let shape = Shape {
            junk: junk.filter(|_| !is_table),
            header,
            header_tokens,
            header_lines,
            budget: if is_table {
                self.table_rows_tokens
                    .min(self.max_tokens - header_tokens)
                    .max(1)
            } else {
                self.max_tokens - header_tokens
            },
            is_table,
            overlap: if is_table { 0 } else { self.overlap },
        };
        // The tokenizer never sees more than one window of the body: a huge object costs
        // memory bounded by the window and time linear in its length.
        let mut cursor = LineCursor::default();
        let mut offset = object.data.len() - body.len();
        let mut rest = body;
        while !rest.is_empty() {
            let cut = extractors::cut_point(rest, WINDOW_BYTES);
            let (window, tail) = rest.split_at(cut);
            self.chunk_window(object, window, offset, &shape, &mut cursor, out, max_chunks)?;
            offset += cut;
            rest = tail;
        }
        Ok(())
    }

    /// Chunk `text`, which sits at byte `offset` of `object`'s data.
    #[allow(clippy::too_many_arguments)]
    fn chunk_window(
        &self,
        object: &ContentObject,
        text: &str,
        offset: usize,
        shape: &Shape<'_>,
        cursor: &mut LineCursor,
        out: &mut Vec<Chunk>,
        max_chunks: usize,
    ) -> Result<(), TooManyChunks> {
        let Shape {
            junk,
            header,
            header_tokens,
            header_lines,
            budget,
            is_table,
            overlap,
        } = *shape;
        let offsets = self.offsets(text);
        let n = offsets.len();
        let mut start = 0usize;
        while start < n {
            let mut end = (start + budget).min(n);
            if end < n {
                end = if is_table {
                    let limit = (start + self.max_tokens - header_tokens).min(n);
                    row_cut(text, &offsets, start, end, limit)
                } else {
                    best_cut(text, &offsets, start, end)
                };
            }
            let (Some(first), Some(last)) = (offsets.get(start), offsets.get(end - 1)) else {
                break;
            };
            let (a, b) = (first.0, last.1);
            let Some(piece) = text.get(a..b) else { break };
            if out.len() >= max_chunks {
                return Err(TooManyChunks { max: max_chunks });
            }
            let text_out = if header.is_empty() {
                piece.to_string()
            } else {
                format!("{header}{piece}")
            };
            let text_out = match junk {
                None => Some(text_out),
                Some(running) => super::junk::clean(&text_out, running),
            };
            if let Some(text_out) = text_out {
                out.push(Chunk {
                    index: u32::try_from(out.len()).unwrap_or(u32::MAX),
                    tokens: header_tokens + (end - start),
                    context_ref: narrow(object, offset + a, offset + b, header_lines, cursor),
                    text: text_out,
                    object_id: object.id.clone(),
                    content_type: object.content_type,
                    kind: ChunkKind::Passage,
                    context: String::new(),
                });
            }
            if end >= n {
                break;
            }
            let from = end.saturating_sub(overlap).max(start + 1);
            start = next_start(text, &offsets, from, end, is_table);
        }
        Ok(())
    }
}

/// `title › section`, cut to [`MAX_CONTEXT_BYTES`] at a character boundary; the section path
/// alone when it already starts with the title.
fn context_header(title: &str, section: Option<&str>) -> String {
    let header = match section.filter(|s| !s.trim().is_empty()) {
        Some(s) if s.starts_with(title) || title.is_empty() => s.to_string(),
        Some(s) => format!("{title}{}{s}", extractors::SECTION_SEPARATOR),
        None => title.to_string(),
    };
    header
        .get(..header.floor_char_boundary(MAX_CONTEXT_BYTES))
        .unwrap_or(&header)
        .trim_end()
        .to_string()
}

/// Longest stretch of an object's text handed to the tokenizer at once, in bytes. Longer text
/// is cut into windows (at a line end or a space when there is one, see
/// [`extractors::cut_point`]) chunked one after the other; chunks never span two windows.
pub const WINDOW_BYTES: usize = 32 * 1024;

/// A file needs more chunks than [`ChunkingConfig::max_file_chunks`] allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("limit: chunks (more than {max} in one file)")]
pub struct TooManyChunks {
    /// The per-file limit that was exceeded.
    pub max: usize,
}

/// How one object's text is cut: the same for all its windows.
#[derive(Clone, Copy)]
struct Shape<'h> {
    /// The file's running lines when junk is left out of the embedded text.
    junk: Option<&'h RunningLines>,
    header: &'h str,
    header_tokens: usize,
    header_lines: usize,
    budget: usize,
    is_table: bool,
    overlap: usize,
}

/// Line numbers of growing byte offsets in one text, counted incrementally.
#[derive(Default)]
struct LineCursor {
    pos: usize,
    /// Newlines before `pos`.
    line: u64,
}

impl LineCursor {
    /// Newlines in `text` before byte `pos`.
    fn line_at(&mut self, text: &str, pos: usize) -> u64 {
        if pos < self.pos {
            *self = LineCursor::default();
        }
        self.line += text
            .as_bytes()
            .get(self.pos..pos)
            .map_or(0, |s| s.iter().filter(|c| **c == b'\n').count()) as u64;
        self.pos = pos;
        self.line
    }
}

/// The first `k` lines of `text` (with their newlines) and the rest.
fn split_lines(text: &str, k: usize) -> (&str, &str) {
    if k == 0 {
        return ("", text);
    }
    let mut at = 0usize;
    for _ in 0..k {
        match text.get(at..).and_then(|rest| rest.find('\n')) {
            Some(i) => at += i + 1,
            None => return ("", text),
        }
    }
    (text.get(..at).unwrap_or(""), text.get(at..).unwrap_or(""))
}

/// Whether token `i` starts a word (follows whitespace or starts the text).
fn is_word_start(text: &str, offsets: &[(usize, usize)], i: usize) -> bool {
    let Some(&(a, _)) = offsets.get(i) else {
        return true;
    };
    a == 0
        || text
            .get(..a)
            .and_then(|s| s.chars().next_back())
            .is_some_and(char::is_whitespace)
}

/// Whether token `i` is the first of a line.
fn is_line_start(text: &str, offsets: &[(usize, usize)], i: usize) -> bool {
    offsets
        .get(i)
        .and_then(|&(a, _)| text.get(..a))
        .is_some_and(|before| before.trim_end_matches([' ', '\t']).ends_with('\n'))
}

/// Where to end a table chunk that would end at `end`: after the last whole row before `end`,
/// else after the first row (a row longer than the budget is kept whole up to `limit`),
/// else at a word.
fn row_cut(
    text: &str,
    offsets: &[(usize, usize)],
    start: usize,
    end: usize,
    limit: usize,
) -> usize {
    ((start + 1)..=end)
        .rev()
        .find(|&i| is_line_start(text, offsets, i))
        .or_else(|| ((end + 1)..=limit).find(|&i| is_line_start(text, offsets, i)))
        .unwrap_or_else(|| {
            if limit >= offsets.len() {
                offsets.len()
            } else {
                best_cut(text, offsets, start, limit)
            }
        })
}

/// Where the next chunk starts, given the overlap window `from..end`: the first line start in
/// it, else (except for tables, which overlap by whole rows or not at all) the first word
/// start, else `end`.
fn next_start(
    text: &str,
    offsets: &[(usize, usize)],
    from: usize,
    end: usize,
    rows_only: bool,
) -> usize {
    (from..end)
        .find(|&i| is_line_start(text, offsets, i))
        .or_else(|| {
            (!rows_only)
                .then(|| (from..end).find(|&i| is_word_start(text, offsets, i)))
                .flatten()
        })
        .unwrap_or(end)
}

/// Where to end a chunk that would end at `end`: the latest word start in the second half of
/// the window, preferring one after a newline, then after a sentence end.
fn best_cut(text: &str, offsets: &[(usize, usize)], start: usize, end: usize) -> usize {
    let floor = start + (end - start) / 2;
    let preceded_by = |i: usize, pred: &dyn Fn(&str) -> bool| {
        offsets
            .get(i)
            .and_then(|&(a, _)| text.get(..a))
            .is_some_and(|before| pred(before.trim_end_matches([' ', '\t'])))
    };
    let candidates = || (floor.max(start + 1)..=end).rev();
    candidates()
        .find(|&i| i < offsets.len() && preceded_by(i, &|s| s.ends_with('\n')))
        .or_else(|| {
            candidates().find(|&i| {
                i < offsets.len()
                    && is_word_start(text, offsets, i)
                    && preceded_by(i, &|s| s.ends_with(['.', '!', '?', ';', ':']))
            })
        })
        .or_else(|| candidates().find(|&i| i < offsets.len() && is_word_start(text, offsets, i)))
        .unwrap_or(end)
}

/// The object's context reference narrowed to bytes `a..b` of its text: line ranges for
/// verbatim line-addressed objects, row ranges for tables.
fn narrow(
    object: &ContentObject,
    a: usize,
    b: usize,
    header_lines: usize,
    cursor: &mut LineCursor,
) -> ContextRef {
    let mut ctx = object.context_ref.clone();
    let Ok(locator) = ctx.location.parse::<Locator>() else {
        return ctx;
    };
    let la = cursor.line_at(&object.data, a);
    let lb = la
        + object
            .data
            .as_bytes()
            .get(a..b.saturating_sub(1).max(a))
            .map_or(0, |s| s.iter().filter(|c| **c == b'\n').count()) as u64;
    let exact = object
        .metadata
        .get("line_exact")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let mut fragment: Fragment = locator.fragment.clone();
    if let (Some((first, last)), true) = (fragment.lines, exact) {
        fragment.lines = Some(((first + la).min(last), (first + lb).min(last)));
    } else if let Some((first, last)) = fragment.rows {
        let skip = header_lines as u64;
        let ra = first + la.saturating_sub(skip);
        let rb = first + lb.saturating_sub(skip);
        fragment.rows = Some((ra.min(last), rb.min(last).max(ra.min(last))));
    } else {
        return ctx;
    }
    let narrowed = locator.with_fragment(fragment);
    ctx.location = narrowed.to_string();
    ctx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_SEQ_TOKENS;
    use extractors::{detect, ExtractInput};

    /// The real model's tokenizer (run `make models` first).
    fn chunker(max_tokens: usize, overlap_tokens: usize) -> Chunker {
        let dir = crate::find_model_dir(None).expect("model provisioned: run `make models`");
        Chunker::new(
            crate::load_tokenizer(&dir).unwrap(),
            &ChunkingConfig {
                max_tokens,
                overlap_tokens,
                table_rows_tokens: 24,
                ..ChunkingConfig::default()
            },
            MAX_SEQ_TOKENS,
        )
    }

    fn objects(name: &str, text: &str) -> Vec<ContentObject> {
        let loc = Locator::root(name);
        let det = detect(text.as_bytes(), name);
        extractors::extract(&ExtractInput {
            bytes: text.as_bytes(),
            locator: &loc,
            file_hash: "feedfacefeedface",
            detected: &det,
            options: extractors::ExtractOptions::defaults(),
        })
        .unwrap()
        .objects
    }

    #[test]
    fn a_file_is_cut_into_passages_in_context_without_junk_then_its_card() {
        let c = chunker(250, 32);
        let toc: String = (1..=12)
            .map(|i| format!("{i} Chapter number {i} . . . . . . . . . . {}\n", i * 7))
            .collect();
        let text = format!(
            "# Contents\n\n{toc}\n# Priming\n\nOpen the bleed screw and fill the pump housing with water before the first start.\n\n42\n"
        );
        let objs = objects("pump-manual.md", &text);
        let name = "/d/pump-manual.md";
        let index = FileContentIndex {
            id: "h".into(),
            file_name: "pump-manual.md".into(),
            mime_type: "text/markdown".into(),
            container_path: name.into(),
            total_objects: 0,
            total_size: 0,
            structure: Default::default(),
            object_summary: vec![],
            extracted_at: 0,
            status: extractors::IndexStatus::Extracted,
            error: None,
        };
        let chunks = c.chunk_file(name, &index, &objs, 100).unwrap();
        let (card, passages) = chunks.split_last().unwrap();
        assert!(!passages.is_empty());
        for p in passages {
            assert_eq!(p.kind, ChunkKind::Passage);
            assert!(
                !p.text.contains(". . . ."),
                "a TOC chunk was embedded: {p:?}"
            );
            assert!(!p.text.lines().any(|l| l.trim() == "42"), "{p:?}");
            assert!(p.context.starts_with("pump manual"), "{p:?}");
            assert!(p.embedding_text().starts_with(&p.context));
        }
        assert!(
            passages
                .iter()
                .any(|p| p.context == "pump manual › Priming"),
            "{passages:?}"
        );
        assert_eq!(card.kind, ChunkKind::Card);
        assert_eq!(card.index as usize, passages.len());
        assert_eq!(card.context_ref.location, name);
        assert!(card.text.starts_with("Markdown text"), "{card:?}");
        // The limit counts passages only.
        assert!(c.chunk_file(name, &index, &objs, passages.len()).is_ok());
        assert!(c
            .chunk_file(name, &index, &objs, passages.len() - 1)
            .is_err());
    }

    #[test]
    fn chunks_fit_the_model_window_and_point_at_their_lines() {
        let c = chunker(250, 32);
        let text: String = (1..=120)
            .map(|i| format!("Line {i} says the survey boat anchored near buoy number {i}.\n"))
            .collect();
        let objs = objects("log.txt", &text);
        let chunks = c.chunk_objects(&objs);
        assert!(chunks.len() > 3, "{}", chunks.len());
        let source: Vec<&str> = text.lines().collect();
        for (i, ch) in chunks.iter().enumerate() {
            assert_eq!(ch.index as usize, i);
            let tokens = c.count_tokens(&ch.text);
            assert!(tokens + SPECIAL_TOKENS <= MAX_SEQ_TOKENS, "{tokens}");
            let loc: Locator = ch.context_ref.location.parse().unwrap();
            let (a, b) = loc.fragment.lines.unwrap();
            let lines = source[(a - 1) as usize..b as usize].join("\n");
            assert!(
                lines.contains(ch.text.trim()),
                "chunk {i} not within lines {a}-{b}"
            );
        }
        // Consecutive chunks overlap.
        let first_end = chunks[0].text.lines().last().unwrap();
        assert!(chunks[1]
            .text
            .contains(first_end.split(' ').next_back().unwrap()));
    }

    #[test]
    fn table_chunks_repeat_the_header_and_name_their_rows() {
        let c = chunker(64, 8);
        let mut csv = String::from("station,observer,remark\n");
        for i in 1..=60 {
            csv.push_str(&format!("S{i},observer {i},calm sea and light wind\n"));
        }
        let chunks = c.chunk_objects(&objects("obs.csv", &csv));
        assert!(chunks.len() > 2);
        for ch in &chunks {
            assert!(
                ch.text.starts_with("| station | observer | remark |"),
                "{}",
                ch.text
            );
            let loc: Locator = ch.context_ref.location.parse().unwrap();
            let (a, b) = loc.fragment.rows.unwrap();
            assert!(
                ch.text.contains(&format!("| S{} |", a - 1)),
                "rows {a}-{b}: {}",
                ch.text
            );
            assert!(
                ch.text.contains(&format!("| S{} |", b - 1)),
                "rows {a}-{b}: {}",
                ch.text
            );
        }
    }

    #[test]
    fn a_row_wider_than_the_table_budget_stays_whole() {
        let c = chunker(250, 32);
        let wide: Vec<String> = (0..30).map(|i| format!("word{i}")).collect();
        let mut csv = String::from("key,text,tail\n");
        for i in 1..=4 {
            csv.push_str(&format!("r{i},{},end{i}\n", wide.join(" ")));
        }
        let chunks = c.chunk_objects(&objects("wide.csv", &csv));
        assert_eq!(chunks.len(), 4, "{chunks:#?}");
        for (i, ch) in chunks.iter().enumerate() {
            let row = ch.text.lines().nth(2).unwrap();
            assert!(row.starts_with(&format!("| r{} |", i + 1)), "{}", ch.text);
            assert!(row.ends_with(&format!("| end{} |", i + 1)), "{}", ch.text);
            assert!(ch
                .context_ref
                .location
                .ends_with(&format!("#rows={}", i + 2)));
        }
    }

    /// One text object holding `data` at lines `1-n` (built directly: no extractor split).
    fn one_object(data: String) -> ContentObject {
        let lines = data.lines().count().max(1) as u64;
        let mut o = objects("x.txt", "placeholder\n").remove(0);
        o.context_ref.location = format!("x.txt#line=1-{lines}");
        o.data = data;
        o
    }

    /// `n` bytes of base64-looking text: no whitespace, `+` and `/` now and then.
    fn base64ish(n: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ALPHABET[(x % 64) as usize] as char
            })
            .collect()
    }

    #[test]
    fn a_huge_string_without_spaces_is_tokenized_in_windows() {
        let c = chunker(250, 32);
        let blob = base64ish(1_000_000);
        let chunks = c.chunk_objects(&[one_object(blob.clone())]);
        assert!(chunks.len() > 100, "{}", chunks.len());
        for ch in &chunks {
            assert!(ch.tokens <= 250, "{} tokens", ch.tokens);
            // Cut between word pieces, a chunk may tokenize a little differently on its own:
            // it must still fit the model's window.
            let tokens = c.count_tokens(&ch.text);
            assert!(tokens + SPECIAL_TOKENS <= MAX_SEQ_TOKENS, "{tokens} tokens");
        }
        assert!(blob.starts_with(&chunks[0].text));
        assert!(blob.ends_with(&chunks[chunks.len() - 1].text));

        // One 200 kB "word" is a single unknown token to the model: still cut per window.
        let word = "0123456789abcdef".repeat(12_500);
        let chunks = c.chunk_objects(&[one_object(word.clone())]);
        assert!(
            chunks.len() >= word.len() / WINDOW_BYTES,
            "{}",
            chunks.len()
        );
        assert!(chunks.iter().all(|ch| ch.text.len() <= WINDOW_BYTES));
    }

    #[test]
    fn lines_stay_exact_across_windows_of_a_huge_object() {
        let c = chunker(250, 32);
        let text: String = (1..=40_000)
            .map(|i| format!("Line {i} says the survey boat anchored near buoy {i}.\n"))
            .collect();
        assert!(text.len() > 4 * WINDOW_BYTES);
        let chunks = c.chunk_objects(&[one_object(text.clone())]);
        let source: Vec<&str> = text.lines().collect();
        let mut last_start = 0;
        for ch in &chunks {
            let loc: Locator = ch.context_ref.location.parse().unwrap();
            let (a, b) = loc.fragment.lines.unwrap();
            assert!(a >= last_start, "chunks go forward");
            last_start = a;
            let lines = source[(a - 1) as usize..b as usize].join("\n");
            assert!(
                lines.contains(ch.text.trim()),
                "{} not in lines {a}-{b}",
                ch.text
            );
            assert!(ch.tokens <= 250);
        }
        assert!(last_start > 39_000, "{last_start}");
    }

    #[test]
    fn chunking_stops_at_the_file_limit() {
        let c = chunker(64, 8);
        let text: String = (1..=2000)
            .map(|i| format!("Sentence number {i} is about tides.\n"))
            .collect();
        let objs = [one_object(text)];
        let all = c.chunk_objects(&objs).len();
        assert!(all > 20, "{all}");
        assert_eq!(
            c.chunk_objects_limited(&objs, 20),
            Err(TooManyChunks { max: 20 })
        );
        assert_eq!(
            c.chunk_objects_limited(&objs, all).map(|v| v.len()),
            Ok(all)
        );
    }

    #[test]
    fn split_lines_takes_whole_lines() {
        assert_eq!(split_lines("a\nb\nc", 2), ("a\nb\n", "c"));
        assert_eq!(split_lines("a", 2), ("", "a"));
        assert_eq!(split_lines("a\nb", 0), ("", "a\nb"));
    }
}
