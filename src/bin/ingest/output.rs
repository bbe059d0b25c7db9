//! What the command line prints: human-readable lines, or one JSON object per line with
//! `--json`. Everything here writes to the writer it is given (stdout, or the progress bar's
//! line for file reports); nothing decides what to run.

use std::io::Write;
use std::path::Path;

use ingest::{FileReport, FileStatus, Hit, Summary};

/// Lines shown on a terminal: what did not simply go through.
pub(crate) fn worth_telling(r: &FileReport) -> bool {
    matches!(
        r.status,
        FileStatus::Failed | FileStatus::Skipped | FileStatus::Removed
    )
}

/// How a file line is shown: JSON, or a status word, the locator and the reason.
pub(crate) fn print_line(json: bool, r: &FileReport) -> String {
    if json {
        serde_json::to_string(r).unwrap_or_default()
    } else {
        format!(
            "{:<9} {}{}",
            r.status.as_str(),
            r.locator,
            r.reason
                .as_deref()
                .map(|x| format!("  ({x})"))
                .unwrap_or_default()
        )
    }
}

/// The end of an ingest: `{"summary": …}`, or the counts and the seconds per stage.
pub(crate) fn print_summary(out: &mut impl Write, json: bool, s: &Summary) -> anyhow::Result<()> {
    if json {
        writeln!(out, "{}", serde_json::json!({ "summary": s }))?;
    } else {
        writeln!(
            out,
            "{} files ({} archives): {} indexed, {} unchanged, {} duplicate, {} skipped, {} failed; {} chunks embedded",
            s.files, s.archives, s.indexed, s.unchanged, s.duplicate, s.skipped, s.failed, s.chunks_embedded
        )?;
        if s.removed + s.ignored > 0 {
            writeln!(
                out,
                "{} removed from the index, {} hidden entries ignored (--hidden ingests them)",
                s.removed, s.ignored
            )?;
        }
        let t = &s.seconds;
        if s.chunks_embedded > 0 && t.embed > 0.0 {
            writeln!(
                out,
                "embedding: {} tokens, {:.1} chunks/s, {:.0} tokens/s (of embedding time){}",
                s.tokens_embedded,
                s.chunks_embedded as f64 / t.embed,
                s.tokens_embedded as f64 / t.embed,
                if s.model.is_empty() {
                    String::new()
                } else {
                    format!("; model {}", s.model)
                }
            )?;
        }
        writeln!(
            out,
            "seconds: unpack {:.2} · extract {:.2} · chunk {:.2} · embed {:.2} · store {:.2} · optimize {:.2} · total {:.2}",
            t.unpack, t.extract, t.chunk, t.embed, t.store, t.optimize, t.total
        )?;
    }
    Ok(())
}

/// Search hits: one JSON object each, or numbered with score, locator, section and snippet.
pub(crate) fn print_hits(out: &mut impl Write, json: bool, hits: &[Hit]) -> anyhow::Result<()> {
    for (i, hit) in hits.iter().enumerate() {
        if json {
            writeln!(out, "{}", serde_json::to_string(hit)?)?;
        } else {
            writeln!(out, "{}. {:.3}  {}", i + 1, hit.score, hit.locator)?;
            if let Some(section) = &hit.section {
                writeln!(out, "   § {section}")?;
            }
            writeln!(out, "   {}", snippet(&hit.text, 160))?;
            if !hit.also_in.is_empty() {
                writeln!(out, "   also in: {}", hit.also_in.join(", "))?;
            }
        }
    }
    if hits.is_empty() && !json {
        writeln!(out, "no hits")?;
    }
    Ok(())
}

/// `text` on one line, cut after `max` characters (marked with `…`).
fn snippet(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", flat.get(..i).unwrap_or(&flat)),
        None => flat,
    }
}

/// The status answer (`ingest::status_of`, or the daemon's): as is, or a few aligned lines.
pub(crate) fn print_status(
    out: &mut impl Write,
    json: bool,
    data_dir: &Path,
    status: &serde_json::Value,
) -> anyhow::Result<()> {
    if json {
        writeln!(out, "{status}")?;
        return Ok(());
    }
    let c = field(status, "/catalog");
    writeln!(out, "data dir:  {}", data_dir.display())?;
    writeln!(
        out,
        "files:     {} ({} indexed, {} failed, {} skipped) in {} archives",
        field(c, "/files"),
        field(c, "/indexed"),
        field(c, "/failed"),
        field(c, "/skipped"),
        field(c, "/containers")
    )?;
    writeln!(
        out,
        "contents:  {} distinct, {} chunks; {} points in the store",
        field(c, "/distinct_contents"),
        field(c, "/chunks"),
        field(status, "/points")
    )?;
    let w = field(status, "/workflows");
    if let Some(n) = field(w, "/workflows").as_u64() {
        writeln!(
            out,
            "workflows: {n} ({} tool results, {} bytes; {} entities; {} summaries)",
            field(w, "/results"),
            field(w, "/result_bytes"),
            field(w, "/entities"),
            field(w, "/summaries")
        )?;
    }
    let run = field(status, "/last_run");
    if let Some(at) = field(run, "/finished_at").as_u64() {
        let s = field(run, "/summary");
        writeln!(
            out,
            "last run:  {} s ago: {} files, {} indexed, {} removed, {} failed",
            crate::now_secs().saturating_sub(at),
            field(s, "/files"),
            field(s, "/indexed"),
            field(s, "/removed"),
            field(s, "/failed")
        )?;
    }
    let daemon = field(status, "/daemon");
    if let Some(pid) = field(daemon, "/pid").as_u64() {
        writeln!(
            out,
            "daemon:    pid {pid}, watching {}, {} syncs",
            field(daemon, "/watching"),
            field(daemon, "/syncs")
        )?;
    }
    Ok(())
}

/// The value at a JSON pointer (`/a/b`), or null: reading an answer's fields without indexing.
pub(crate) fn field<'a>(value: &'a serde_json::Value, pointer: &str) -> &'a serde_json::Value {
    value.pointer(pointer).unwrap_or(&serde_json::Value::Null)
}
