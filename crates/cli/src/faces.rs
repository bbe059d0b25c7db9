//! The agent's tools on the command line (`browse`, `read`, `read-section`, `extract`, and
//! `search` with filters) and over MCP (`mcp`). Each builds a `ToolCall` and runs it through
//! a `ToolHost`: the daemon when `ingest watch` holds the data directory, else this process.

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use ingest::tools::{self, ToolCall};
use ingest::{Scope, ToolHost};
use ingest_serve::mcp::{FileConfig, McpConfig};

use crate::cli::{
    BrowseArgs, Common, ExtractItemArgs, McpArgs, ReadArgs, ReadSectionArgs, RenderPageArgs,
    SearchArgs, SourceCommand, ToolArgs, VerifyQuoteArgs,
};
use crate::exit::{self, Usage};
use crate::render;
use crate::settings::{config, scope};

/// The locator a person means by `typed` (a path as typed at the shell, or a locator), in
/// this process's working directory.
pub(crate) fn locator(typed: &str) -> anyhow::Result<String> {
    let cwd = std::env::current_dir().context("the working directory")?;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    Ok(crate::place::locator_for(typed, &cwd, home.as_deref()))
}

/// `search`: the `search_documents` tool with the flags, its answer printed (one JSON shape
/// with `--json`); exits 1 when nothing relevant was found.
pub(crate) fn search(common: &Common, args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let call = ToolCall::SearchDocuments(tools::SearchArgs {
        query: args.query.join(" "),
        locator: args.tool.locator.as_deref().map(locator).transpose()?,
        ..args.tool.clone()
    });
    run(common, &call, crate::linger::host(common)?, false)
}

pub(crate) fn browse(common: &Common, args: &BrowseArgs) -> anyhow::Result<ExitCode> {
    let call = ToolCall::BrowseContainer(tools::BrowseArgs {
        locator: args.locator.as_deref().map(locator).transpose()?,
        owner: args.owner.clone(),
        section: args.section.clone(),
        max_chars: args.budget.max_chars,
        cursor: args.budget.cursor.clone(),
    });
    run(common, &call, crate::linger::host(common)?, false)
}

pub(crate) fn read(common: &Common, args: &ReadArgs) -> anyhow::Result<ExitCode> {
    let whole = locator(&args.locator)?;
    let (file, fragment) = extractors::split_fragment(&whole);
    let mut read = tools::ReadArgs {
        locator: file.to_string(),
        owner: args.owner.clone(),
        pages: args.pages.clone(),
        section: args.section.clone(),
        content_type: args.content_type.clone(),
        sheet: args.sheet.clone(),
        rows: args.rows.clone(),
        slide: args.slide,
        around: None,
        before: args.before,
        after: args.after,
        unit: args.chars.then(|| "chars".to_string()),
        positions: args.positions,
        max_chars: args.budget.max_chars,
        cursor: args.budget.cursor.clone(),
    };
    if args.around {
        if fragment.is_empty() {
            return Err(Usage(
                "--around reads around a place: give the search hit's locator with its \
                 #fragment (report.pdf#page=12)"
                    .into(),
            )
            .into());
        }
        read.around = Some(fragment.to_string());
    } else if !fragment.is_empty() {
        // The tool reads exactly the place the fragment names (page, sheet and rows, lines,
        // paragraphs, slide), where no flag said otherwise.
        read.locator = whole.clone();
    }
    let call = ToolCall::ReadContentObjects(read);
    run(common, &call, crate::linger::host(common)?, false)
}

pub(crate) fn verify_quote(common: &Common, args: &VerifyQuoteArgs) -> anyhow::Result<ExitCode> {
    let quote = if args.quote == "-" {
        use std::io::Read;
        let mut text = String::new();
        std::io::stdin()
            .take(tools::MAX_QUOTE_CHARS as u64 * 4 + 1)
            .read_to_string(&mut text)
            .context("reading the quote from stdin")?;
        text
    } else {
        args.quote.clone()
    };
    let call = ToolCall::VerifyQuote(tools::QuoteArgs {
        locator: extractors::file_part(&locator(&args.locator)?).to_string(),
        quote,
        owner: args.owner.clone(),
        max_chars: args.max_chars,
    });
    run(common, &call, crate::linger::host(common)?, false)
}

/// `render-page`: the `render_page` tool; the PNG written to `--output`, what it shows
/// printed (or the JSON without the image with `--json`).
pub(crate) fn render_page(common: &Common, args: &RenderPageArgs) -> anyhow::Result<ExitCode> {
    let region = args
        .region
        .as_deref()
        .map(|r| <[f64; 4]>::try_from(r).map_err(|_| Usage("--region takes X0,Y0,X1,Y1".into())))
        .transpose()?;
    let call = ToolCall::RenderPage(tools::RenderArgs {
        locator: locator(&args.locator)?,
        page: args.page,
        dpi: args.dpi,
        region,
        max_bytes: args.max_bytes,
        owner: args.owner.clone(),
        max_chars: None,
    });
    run_with(
        common,
        &call,
        crate::linger::host(common)?,
        false,
        Some(&args.output),
    )
}

/// Write a tool's image to `to` (`-`: standard output).
fn write_image(image: &tools::ToolImage, to: &std::path::Path) -> anyhow::Result<()> {
    use base64::Engine as _;
    use std::io::Write;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&image.base64)
        .context("the image is not base64")?;
    if to == std::path::Path::new("-") {
        std::io::stdout().lock().write_all(&bytes)?;
    } else {
        std::fs::write(to, &bytes).with_context(|| format!("writing {}", to.display()))?;
    }
    Ok(())
}

pub(crate) fn read_section(common: &Common, args: &ReadSectionArgs) -> anyhow::Result<ExitCode> {
    let call = ToolCall::ReadSection(tools::SectionArgs {
        locator: extractors::file_part(&locator(&args.locator)?).to_string(),
        owner: args.owner.clone(),
        section: args.section.clone(),
        max_chars: args.budget.max_chars,
        cursor: args.budget.cursor.clone(),
    });
    run(common, &call, crate::linger::host(common)?, false)
}

pub(crate) fn extract(common: &Common, args: &ExtractItemArgs) -> anyhow::Result<ExitCode> {
    let call = ToolCall::ExtractContainerItem(tools::ExtractArgs {
        locator: locator(&args.locator)?,
        max_chars: args.budget.max_chars,
        cursor: args.budget.cursor.clone(),
    });
    let host = ToolHost::new(config(common, Some(&args.extract))?);
    run(common, &call, host, args.shared)
}

/// `source list|browse|pull`: the source tools.
pub(crate) fn source(common: &Common, command: &SourceCommand) -> anyhow::Result<ExitCode> {
    let (call, extract) = match command {
        SourceCommand::List { budget } => (
            ToolCall::ListSources(tools::ListSourcesArgs {
                max_chars: budget.max_chars,
                cursor: budget.cursor.clone(),
            }),
            None,
        ),
        SourceCommand::Browse { name, path, budget } => (
            ToolCall::BrowseSource(tools::BrowseSourceArgs {
                source: name.clone(),
                path: path.clone(),
                max_chars: budget.max_chars,
                cursor: budget.cursor.clone(),
            }),
            None,
        ),
        SourceCommand::Pull {
            name,
            path,
            max_chars,
            extract,
        } => (
            ToolCall::PullSource(tools::PullSourceArgs {
                source: name.clone(),
                path: path.clone(),
                max_chars: *max_chars,
            }),
            Some(extract),
        ),
    };
    let host = ToolHost::new(config(common, extract)?);
    run(common, &call, host, false)
}

/// The most bytes of arguments read from stdin or a file.
const MAX_TOOL_ARGS_BYTES: u64 = 64 * 1024 * 1024;

pub(crate) fn tool(common: &Common, args: &ToolArgs) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    let text = match args.args.as_deref() {
        None => "{}".to_string(),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .take(MAX_TOOL_ARGS_BYTES)
                .read_to_string(&mut s)
                .context("reading the arguments from stdin")?;
            s
        }
        Some(a) if a.starts_with('@') => {
            let path = a.trim_start_matches('@');
            let mut s = String::new();
            std::fs::File::open(path)
                .with_context(|| format!("opening {path}"))?
                .take(MAX_TOOL_ARGS_BYTES)
                .read_to_string(&mut s)
                .with_context(|| format!("reading {path}"))?;
            s
        }
        Some(a) => a.to_string(),
    };
    let mut value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Usage(format!("the arguments are not a JSON object: {e}")))?;
    if let Some(object) = value.as_object_mut() {
        if let Some(n) = args.budget.max_chars {
            object.insert("max_chars".into(), n.into());
        }
        if let Some(c) = &args.budget.cursor {
            object.insert("cursor".into(), c.clone().into());
        }
    }
    let call = ToolCall::parse(&args.name, value).map_err(|e| Usage(e.to_string()))?;
    run(common, &call, crate::linger::host(common)?, false)
}

/// A tool's error for a person at a terminal: the tools' model-facing advice ("Call
/// browse_container…") said as the commands that do it.
fn for_person(message: &str) -> String {
    match message.strip_prefix("no such locator in this scope: ") {
        Some(rest) => {
            let locator = rest
                .split_once(". Call browse_container")
                .map_or(rest, |(l, _)| l);
            format!(
                "nothing indexed at {locator} (in this scope): `ingest files` lists what is, `ingest {}` indexes it",
                extractors::split_top(locator).0
            )
        }
        None => message.to_string(),
    }
}

/// Run `call` and print its answer: the JSON text as is (`--json`), or rendered for a
/// reader. A tool error is printed on stderr for a person and exits 3; a search that found
/// nothing relevant exits 1.
fn run(common: &Common, call: &ToolCall, host: ToolHost, shared: bool) -> anyhow::Result<ExitCode> {
    run_with(common, call, host, shared, None)
}

/// [`run`], an image in the answer written to `image_to` (else it is in `--json`'s object).
fn run_with(
    common: &Common,
    call: &ToolCall,
    host: ToolHost,
    shared: bool,
    image_to: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let scope = scope(common, shared)?;
    let (answer, by) = host
        .call_traced(&scope, call)
        .with_context(|| format!("running {}", call.name()))?;
    tracing::info!(
        tool = call.name(),
        chars = answer.text.len(),
        is_error = answer.is_error,
        answered_by = by.as_str(),
        "tool answered"
    );
    let value: serde_json::Value =
        serde_json::from_str(&answer.text).context("the tool's answer is not JSON")?;
    if let (Some(image), Some(to)) = (&answer.image, image_to) {
        write_image(image, to)?;
    }
    // The PNG went to standard output: nothing else goes there.
    let to_stdout = image_to.is_some_and(|t| t == std::path::Path::new("-"));
    let mut out = std::io::stdout().lock();
    if common.json && !to_stdout {
        use std::io::Write;
        match image_to {
            Some(_) => writeln!(out, "{}", answer.text)?,
            None => writeln!(out, "{}", answer.to_json_text())?,
        }
    }
    if answer.is_error {
        let message = value
            .get("error")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(&answer.text);
        eprintln!("error: {}", for_person(message));
        return Ok(ExitCode::from(exit::ERROR));
    }
    if !common.json && !to_stdout {
        render::answer(
            &mut out,
            call,
            &value,
            &continue_command,
            &crate::output::Paint::stdout(common.color),
        )?;
    }
    let nothing = (matches!(call, ToolCall::SearchDocuments(_))
        && value
            .get("hits")
            .and_then(serde_json::Value::as_array)
            .is_some_and(Vec::is_empty))
        || (matches!(call, ToolCall::VerifyQuote(_)) && value.get("found") == Some(&false.into()));
    Ok(if nothing {
        ExitCode::from(exit::NOTHING_FOUND)
    } else {
        ExitCode::SUCCESS
    })
}

/// The command line that continues an answer: this one with `--cursor CURSOR` (replacing
/// one given), quoted for a POSIX shell.
fn continue_command(cursor: &str) -> String {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut kept: Vec<String> = vec!["ingest".into()];
    let mut skip_next = false;
    for arg in &args {
        let arg = arg.to_string_lossy();
        if skip_next {
            skip_next = false;
            continue;
        }
        if arg == "--cursor" {
            skip_next = true;
            continue;
        }
        if arg.starts_with("--cursor=") {
            continue;
        }
        kept.push(shell_quote(&arg));
    }
    kept.push("--cursor".into());
    kept.push(shell_quote(cursor));
    kept.join(" ")
}

/// `s` as one word for a POSIX shell.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `ingest mcp`: the scope, the tools and the ceiling from the flags, else the `--config`
/// file; stdio, or HTTP with `--http` (or `[http] listen`).
pub(crate) fn mcp(common: &Common, args: &McpArgs) -> anyhow::Result<ExitCode> {
    let file = match &args.config {
        Some(path) => FileConfig::load(path)?,
        None => FileConfig::default(),
    };
    let scope = Scope {
        user_id: common
            .user
            .clone()
            .or(file.scope.user.clone())
            .unwrap_or_else(|| "local".into()),
        feature_instance_id: common
            .feature_instance
            .clone()
            .or(file.scope.feature_instance.clone()),
        mandate_id: common.mandate.clone().or(file.scope.mandate.clone()),
        is_shared: args.shared || file.scope.shared.unwrap_or(false),
        workflow_id: None,
    };
    ingest::check_scope(&scope).map_err(|e| anyhow::anyhow!("invalid scope: {e}"))?;
    let mut mcp = McpConfig::new(scope);
    let names = args.tools.as_ref().or(file.tools.as_ref());
    if let Some(names) = names {
        mcp = mcp.with_tools(names).map_err(|e| Usage(e.to_string()))?;
    }
    let mut config = config(common, Some(&args.extract))?;
    if let Some(n) = args.max_answer_chars.or(file.max_answer_chars) {
        config.max_answer_chars = n;
    }
    config.validate()?;
    let http = args.http.or(file.http.listen);
    if let Some(addr) = &http {
        ingest_serve::mcp::check_loopback(addr).map_err(|e| Usage(e.to_string()))?;
    }
    // The document tools read an index: one must be there (the workflow tools may start one).
    if names.is_none_or(|n| n.iter().any(|t| crate::place::reads_documents(t.trim()))) {
        crate::place::require_index(common)?;
    }
    tracing::info!(
        data_dir = %common.data_dir.display(),
        user = %mcp.scope.user_id,
        max_answer_chars = config.max_answer_chars,
        "MCP server starting"
    );
    let host = Arc::new(ToolHost::long_lived(config));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        match http {
            Some(addr) => ingest_serve::mcp::serve_http(host, mcp, addr).await,
            None => ingest_serve::mcp::serve_stdio(host, mcp).await,
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn words_are_quoted_for_the_shell_only_when_needed() {
        assert_eq!(shell_quote("--max-chars"), "--max-chars");
        assert_eq!(shell_quote("/d/a.zip!/b.pdf"), "'/d/a.zip!/b.pdf'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
