//! Every tool, declared once: its name, its arguments (a type whose field docs are the
//! argument docs), its title and description for the model, what it changes and whether it is
//! heavy. The faces derive from here — MCP's tool list and schemas, the HTTP route
//! `/v1/tools/{name}`, the daemon socket's and `ingest tool`'s parsing, `--tools` — so a new
//! tool is one declaration here plus its handler (`super::call_until`), and a new argument
//! is one field of its arguments type plus what the handler does with it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::workflow::{
    EndArgs, GatherArgs, RecallArgs, RememberArgs, StoreResultArgs, SummaryArgs,
};
use super::{
    BrowseArgs, BrowseSourceArgs, ExtractArgs, ListSourcesArgs, PullSourceArgs, QuoteArgs,
    ReadArgs, RenderArgs, SearchArgs, SectionArgs,
};

/// What a tool changes, as MCP's annotations say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    /// It changes nothing.
    pub read_only: bool,
    /// It may delete or replace what is there.
    pub destructive: bool,
    /// The same call again changes nothing more.
    pub idempotent: bool,
    /// It reaches a remote service, which may change between calls.
    pub open_world: bool,
}

impl Effect {
    /// Reads the index and the stores; changes nothing.
    pub const READS: Effect = Effect {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// Reads a remote service (which may change between calls); changes nothing.
    pub const READS_REMOTE: Effect = Effect {
        open_world: true,
        ..Effect::READS
    };
    /// Adds to the index, deletes nothing; the same call again only finds it there.
    pub const ADDS_ONCE: Effect = Effect {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// Adds something new (a new handle) each time.
    pub const ADDS: Effect = Effect {
        idempotent: false,
        ..Effect::ADDS_ONCE
    };
    /// Replaces or deletes what a key or a workflow held.
    pub const REPLACES: Effect = Effect {
        destructive: true,
        ..Effect::ADDS_ONCE
    };
    /// Adds what it downloads, removes what the remote service no longer holds there.
    pub const SYNCS_REMOTE: Effect = Effect {
        open_world: true,
        ..Effect::REPLACES
    };
}

/// One tool's declaration.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The name every face calls it by (`search_documents`).
    pub name: &'static str,
    /// A short title for people.
    pub title: &'static str,
    /// What the model reads to decide when and how to call it.
    pub description: &'static str,
    /// What it changes.
    pub effect: Effect,
    /// Whether one call may cost seconds of CPU (rendering a page, comparing a long quote
    /// with a large file): the service answers fewer of them at once per key than other
    /// calls (`max_heavy_per_key`).
    pub heavy: bool,
    /// The JSON schema of its arguments (JSON Schema 2020-12), from the arguments type.
    pub schema: fn() -> schemars::Schema,
}

/// The schema of `T` as MCP asks for it (JSON Schema 2020-12).
fn schema_of<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
}

macro_rules! declare_tools {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident($args:ty) {
            name: $name:literal,
            title: $title:literal,
            effect: $effect:expr,
            heavy: $heavy:literal,
            description: $description:expr,
        }
    )*) => {
        /// One tool call: the tool's name and its arguments, as the socket and the faces pass
        /// it.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "tool", content = "args")]
        pub enum ToolCall {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $name)]
                $variant($args),
            )*
        }

        /// Every tool's declaration, in the order MCP lists them.
        pub const TOOLS: &[ToolSpec] = &[$(
            ToolSpec {
                name: $name,
                title: $title,
                description: $description,
                effect: $effect,
                heavy: $heavy,
                schema: schema_of::<$args>,
            },
        )*];

        /// The tools' names, as MCP lists them and `--tools` selects them.
        pub const TOOL_NAMES: &[&str] = &[$($name),*];

        impl ToolCall {
            /// The `max_chars` the call asks for, if any.
            pub fn max_chars(&self) -> Option<usize> {
                match self {
                    $(ToolCall::$variant(a) => a.max_chars,)*
                }
            }

            /// The call's `max_chars`, to change it.
            pub fn max_chars_mut(&mut self) -> &mut Option<usize> {
                match self {
                    $(ToolCall::$variant(a) => &mut a.max_chars,)*
                }
            }

            /// The tool's name (`search_documents`, …).
            pub fn name(&self) -> &'static str {
                match self {
                    $(ToolCall::$variant(_) => $name,)*
                }
            }

            /// The call of tool `name` with `args` (a JSON object), or what is wrong with them,
            /// worded for the model: what MCP, HTTP and `ingest tool` receive.
            pub fn parse(name: &str, args: Value) -> Result<ToolCall, String> {
                let invalid = |e: serde_json::Error| format!("invalid arguments for {name}: {e}");
                match name {
                    $($name => serde_json::from_value(args).map(ToolCall::$variant).map_err(invalid),)*
                    other => Err(format!("unknown tool: {other}")),
                }
            }
        }
    };
}

declare_tools! {
    /// Find passages.
    SearchDocuments(SearchArgs) {
        name: "search_documents",
        title: "Search documents",
        effect: Effect::READS,
        heavy: false,
        description: SEARCH_DESCRIPTION,
    }
    /// Structure first: a container's members or a document's outline.
    BrowseContainer(BrowseArgs) {
        name: "browse_container",
        title: "Browse a folder, archive or document outline",
        effect: Effect::READS,
        heavy: false,
        description: BROWSE_DESCRIPTION,
    }
    /// Content objects of one file, filtered, in document order.
    ReadContentObjects(ReadArgs) {
        name: "read_content_objects",
        title: "Read part of a document",
        effect: Effect::READS,
        heavy: false,
        description: READ_DESCRIPTION,
    }
    /// The text of one section.
    ReadSection(SectionArgs) {
        name: "read_section",
        title: "Read one section",
        effect: Effect::READS,
        heavy: false,
        description: SECTION_DESCRIPTION,
    }
    /// Whether a quote occurs in a file, where and in which sentence.
    VerifyQuote(QuoteArgs) {
        name: "verify_quote",
        title: "Check a quote against its file",
        effect: Effect::READS,
        heavy: true,
        description: QUOTE_DESCRIPTION,
    }
    /// One PDF page (or a region), or a picture, as a PNG within a byte budget.
    RenderPage(RenderArgs) {
        name: "render_page",
        title: "Look at a page as an image",
        effect: Effect::READS,
        heavy: true,
        description: RENDER_DESCRIPTION,
    }
    /// Extract and index one archive member now.
    ExtractContainerItem(ExtractArgs) {
        name: "extract_container_item",
        title: "Extract and index an archive member",
        effect: Effect::ADDS_ONCE,
        heavy: false,
        description: EXTRACT_DESCRIPTION,
    }
    /// The registered sources the caller may use.
    ListSources(ListSourcesArgs) {
        name: "list_sources",
        title: "List the remote sources you may use",
        effect: Effect::READS,
        heavy: false,
        description: LIST_SOURCES_DESCRIPTION,
    }
    /// One folder of a source, without indexing it.
    BrowseSource(BrowseSourceArgs) {
        name: "browse_source",
        title: "Browse a folder of a remote source (without indexing)",
        effect: Effect::READS_REMOTE,
        heavy: false,
        description: BROWSE_SOURCE_DESCRIPTION,
    }
    /// Index one object or folder of a source now.
    PullSource(PullSourceArgs) {
        name: "pull_source",
        title: "Index a file or folder of a remote source now",
        effect: Effect::SYNCS_REMOTE,
        heavy: false,
        description: PULL_SOURCE_DESCRIPTION,
    }
    /// Keep a tool result whole in a workflow; a handle and a preview.
    StoreToolResult(StoreResultArgs) {
        name: "store_tool_result",
        title: "Store a tool result in a workflow",
        effect: Effect::ADDS,
        heavy: false,
        description: STORE_RESULT_DESCRIPTION,
    }
    /// Read a stored tool result back, page by page.
    RecallToolResult(RecallArgs) {
        name: "recall_tool_result",
        title: "Read a stored tool result",
        effect: Effect::READS,
        heavy: false,
        description: RECALL_DESCRIPTION,
    }
    /// Remember an entity of a workflow.
    Remember(RememberArgs) {
        name: "remember",
        title: "Remember an entity of a workflow",
        effect: Effect::REPLACES,
        heavy: false,
        description: REMEMBER_DESCRIPTION,
    }
    /// Store a conversation summary of a workflow.
    StoreSummary(SummaryArgs) {
        name: "store_summary",
        title: "Store a conversation summary",
        effect: Effect::ADDS,
        heavy: false,
        description: SUMMARY_DESCRIPTION,
    }
    /// The context of the next round: documents, entities, summary, tool results.
    GatherContext(GatherArgs) {
        name: "gather_context",
        title: "Gather the context for the next round",
        effect: Effect::READS,
        heavy: false,
        description: GATHER_DESCRIPTION,
    }
    /// Delete everything of a workflow.
    EndWorkflow(EndArgs) {
        name: "end_workflow",
        title: "End a workflow (delete its data)",
        effect: Effect::REPLACES,
        heavy: false,
        description: END_DESCRIPTION,
    }
}

/// The declaration of tool `name`, if there is one.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Whether `name` is a heavy tool ([`ToolSpec::heavy`]).
pub fn is_heavy(name: &str) -> bool {
    spec(name).is_some_and(|t| t.heavy)
}

// What the model reads about each tool.

pub(crate) const SEARCH_DESCRIPTION: &str = "\
Find passages by meaning and exact words in the indexed documents (`mode`: hybrid by default, `keyword` for a name, code or option to match literally, `dense` for meaning only). Use it when you do not know where something is; when you know the file, browse its outline and read the section or pages instead.
Each hit has a locator (file and place, e.g. /data/outer.zip!/report.pdf#page=12), a score (in the default hybrid mode relative to the best hit: 1 = the best, about 0.5 = found by one of meaning and words only, or middling by both), a snippet, the section and page label when known, and also_in (identical copies elsewhere).
Every file also has a card (kind \"card\": its name, folder, type, title, author, outline, sheets, a picture's size, a recording's length), so a file is found by its name or what it is, pictures and recordings without text too; kind \"card\" searches only cards (which files are about X?), kind \"passage\" only text inside files.
Narrow with locator (a folder, an archive at any depth, or one file, without #fragment), source (a name from list_sources: only what was indexed from it) and with content_type, kind, pages (\"40-47\"), section (an id from browse_container for that file), sheet or slide.
The answer is at most max_chars (default 4000); when hits were left out, call again with the same arguments plus the answer's cursor.";

pub(crate) const BROWSE_DESCRIPTION: &str = "\
See what there is before reading. Without a locator: the top-level folders and files you can read. With a folder or archive locator (archives nest: outer.zip!/inner.tar.gz): its members, with kind, type, size, status (indexed, skipped with a reason, failed) and chunk counts.
With a file locator: the document's overview: type, pages, page labels, which pages have images or tables, object counts and its outline (sections with ids such as s12, levels, page ranges; sheets with rows and columns; slides). Entries with `hidden` have more under them: browse again with section set to that id.
Then use read_section or read_content_objects for exactly the part you need. Long listings come with a cursor: call again with the same arguments plus cursor.";

pub(crate) const READ_DESCRIPTION: &str = "\
Read the content objects of one file (text blocks, tables, image and media entries) in document order, each with its exact locator (page, sheet and rows, slide, lines) to cite.
Select what you need with the filters: pages (\"47\" or \"40-47\", 1-based physical pages), section (an id from browse_container), content_type (text, image, videostream, audiostream, other), sheet and rows (\"1-50\"), slide. Without filters you get the file from its beginning.
To read around a search hit, give around: the hit's locator (report.pdf#page=12). You get the object holding it (hit: true) with before objects ahead and after objects behind (default 2 each; unit \"chars\" counts chars of text instead), and earlier / later: the arguments that read on in either direction.
positions: true adds each object's place on its page (PDF and OCR text: a box [x0, y0, x1, y1] per line, in PDF points from the page's bottom-left corner, with the line's char offsets; a picture's box), what render_page takes as region.
The answer is at most max_chars (default 4000): a text too long is cut in the middle (head[N chars omitted]tail, with offset, end and omitted char ranges). Call again with the same arguments plus the answer's cursor to get exactly what was left out, then the next objects.";

pub(crate) const QUOTE_DESCRIPTION: &str = "\
Check that a quote you want to cite really is in a file, before you cite it: whether it occurs (white space, line breaks, hyphens split across lines, ligatures, typographic quotes and case are not held against it), on which page(s) or at which locators, and the exact sentence around each place. In PDFs each place also has boxes: the lines holding it on the page (render_page with that box as region shows them).
When it does not occur, found is false and closest is the most similar passage of the file with a score (1 = identical): cite that passage's words instead, or do not cite. A changed word, number or letter is not the quote.
Give the file's locator (from a search hit, without the #fragment) and the quote (at most 4000 chars). The answer is at most max_chars (default 4000); match_count says how many places hold the quote when not all fit.";

pub(crate) const RENDER_DESCRIPTION: &str = "\
Look at a page: one page of a PDF, or a region of it, or a picture, as a PNG image (image content) for when the text is not enough: a chart, a diagram, a scanned table, a layout. Give the locator (a search hit's report.pdf#page=12 names the page; or page), optionally dpi (default 100) and region [x0, y0, x1, y1] (a box from read_content_objects positions or verify_quote, PDF points from the page's bottom-left corner; a picture's pixels from its top-left).
The image is at most max_bytes (default 1000000): a larger rendering is scaled down until it fits, and the answer says so (dpi, note). The text part (locator, width, height, bytes, dpi) is at most max_chars.";

pub(crate) const SECTION_DESCRIPTION: &str = "\
Read the whole text of one section of a file: its objects' texts joined by blank lines, with the section's title and pages. Take the section id (s12) from browse_container's outline of that file.
The answer is at most max_chars (default 4000); a longer section is cut in the middle ([N chars omitted]) and the answer's cursor (call again with the same arguments plus cursor) continues with exactly the omitted part.";

pub(crate) const EXTRACT_DESCRIPTION: &str = "\
Extract and index one archive member now, typically one that browse_container shows as skipped (a size or count limit) or that was not listed. The locator names the member inside its archive(s): /data/outer.zip!/docs/big.pdf.
It can take a while for large files. The answer is what browse_container shows for that member (a document's overview and outline, or an archive's members) plus `extracted` (status, chunks, reason). Afterwards the member can be read and searched. Calling it again on an indexed member changes nothing.";

pub(crate) const LIST_SOURCES_DESCRIPTION: &str = "\
The remote sources (S3 buckets, SFTP, FTP and WebDAV folders) registered for you: each with its name, provider, locator root (s3://bucket/prefix), how many of its files are indexed (indexed_files), whether it is kept in sync (synced), and whose it is when not yours. Use a name with browse_source, pull_source and search_documents' source argument. No source: only indexed documents can be read.";

pub(crate) const BROWSE_SOURCE_DESCRIPTION: &str = "\
List one folder of a source as the remote service holds it now, without downloading or indexing anything: folders (name ending in /) and files with size and `indexed` (indexed, changed since indexed, not indexed). `path` is a folder below the source's root (absent: the root); browse a folder entry's path to go down. Pages of at most 200 entries: call again with the same arguments plus cursor for the rest.";

pub(crate) const PULL_SOURCE_DESCRIPTION: &str = "\
Download and index one file or folder of a source now (path as browse_source shows it; absent: the whole source), so it can be searched and read at once: archives are unpacked, unchanged files are not downloaded again, files the service no longer holds there leave the index. At most 1000 files per call (pull subfolders for more). The answer counts what was read, indexed, unchanged, skipped and failed (with reasons) and says how to search it (search_documents with source, or the locator). It can take a while for large files.";

pub(crate) const STORE_RESULT_DESCRIPTION: &str = "\
Keep a tool's result whole in a workflow (one agent run, named by `workflow`) instead of putting all of it in the context: the answer is a handle (tr_3) plus a preview of the result's head and tail within max_chars ([N chars omitted] in the middle) and its size.
The result (`content`: a string, kept exactly, or any JSON value) is also indexed, so gather_context finds its passages; recall_tool_result with the handle reads any part of it later. With extract_entities true, amounts, dates, IBANs, e-mail addresses and document ids found in it are remembered as entities of the workflow.
Only this workflow of your scope sees what is stored; end_workflow deletes it.";

pub(crate) const RECALL_DESCRIPTION: &str = "\
Read a tool result stored with store_tool_result, by its handle and workflow: exactly the stored text, from its beginning or only `lines` (\"120-180\", 1-based), page by page.
Each answer has offset and end (char offsets) and, when more remains, a cursor: call again with the same arguments plus that cursor to continue exactly where it stopped. Concatenating the texts gives the result back byte for byte. A handle not stored in this workflow is answered as not found.";

pub(crate) const REMEMBER_DESCRIPTION: &str = "\
Remember an entity of the workflow: a key (customer, invoice_total, deadline) and its value, with its source (a handle, a locator). Remembering a key again replaces its value.
Entities are searchable and come back in gather_context (second in priority, after your own documents).";

pub(crate) const SUMMARY_DESCRIPTION: &str = "\
Store a conversation summary of the workflow (written by you or your host), with what it covers (\"rounds 1-12\"). gather_context includes the latest summary; end_workflow with keep_summary true keeps summaries and deletes the rest.";

pub(crate) const GATHER_DESCRIPTION: &str = "\
Before a round: one call that gathers the context for `query` from every layer, within max_chars, in priority order: all the workflow's entities, its working facts, whatever the query (10, most recently set first), relevant passages of its stored tool results, its 3 newest results first (5), the workflow's latest summary, then your own documents (limit 15, min_score 0.45) and documents shared in your mandate (10, 0.5); `layers` in the answer states each layer's share. `layers` changes any of these limits per layer, e.g. {\"shared\": {\"limit\": 3}}.
Each item has its layer and what to read on with: a locator (read_content_objects), a handle (recall_tool_result) or a key. A passage found in two layers appears once. Items that did not fit are named in left_out, counted in left_out_count, and the cursor continues with them (call again with the same arguments plus cursor); an item cut to fit says omitted_chars.";

pub(crate) const END_DESCRIPTION: &str = "\
End a workflow: delete everything stored in it (tool results, entities, summaries, their index entries). With keep_summary true its summaries stay (and stay searchable) and the rest is deleted. Ending a workflow that holds nothing is not an error.";
