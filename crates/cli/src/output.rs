//! What the command line prints: human-readable lines, or one JSON object per line with
//! `--json`. Everything here writes to the writer it is given (stdout, or the progress bar's
//! line for file reports); nothing decides what to run.

use std::io::Write;

use anstyle::{AnsiColor, Style};
use ingest::{FileReport, FileStatus, Summary};

use crate::cli::{ColorChoice, Common};

/// Lines shown on a terminal: what did not simply go through.
pub(crate) fn worth_telling(r: &FileReport) -> bool {
    matches!(
        r.status,
        FileStatus::Failed | FileStatus::Skipped | FileStatus::Removed
    )
}

/// How a file line is shown: JSON, or a status word, the locator and the reason.
pub(crate) fn print_line(json: bool, r: &FileReport, paint: &Paint) -> String {
    if json {
        serde_json::to_string(r).unwrap_or_default()
    } else {
        format!(
            "{} {}{}",
            paint.status(&format!("{:<9}", r.status.as_str())),
            r.locator,
            r.reason
                .as_deref()
                .map(|x| format!("  ({x})"))
                .unwrap_or_default()
        )
    }
}

/// The progress line of a run on a terminal: files and bytes read of those found, chunks
/// embedded of those known, the rate, the time left, and the largest file being embedded
/// with its own count.
pub(crate) fn progress_line(p: &ingest::ProgressSnapshot) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut line = format!(
        "{}/{} files, {:.1}/{:.1} MiB read; {}/{} chunks embedded, {:.1}/s",
        p.files_read,
        p.files_found,
        mib(p.bytes_read),
        mib(p.bytes_found),
        p.chunks_embedded,
        p.chunks_known,
        p.chunks_per_second()
    );
    if let Some(eta) = p.eta() {
        let secs = eta.as_secs();
        line.push_str(&format!(
            ", about {}:{:02}:{:02} left",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        ));
    }
    if let Some((file, done, total)) = &p.embedding {
        let name = file.rsplit(['/', '!']).next().unwrap_or(file);
        line.push_str(&format!(" — embedding {name} {done}/{total}"));
    }
    line
}

/// A running ingest's progress as `status` shows it: the counts, the time left when known,
/// the file being embedded, and the same as one `line`.
pub(crate) fn progress_json(p: &ingest::ProgressSnapshot, line: &str) -> serde_json::Value {
    serde_json::json!({
        "line": line,
        "files_done": p.files_read,
        "files_found": p.files_found,
        "chunks_embedded": p.chunks_embedded,
        "chunks_known": p.chunks_known,
        "eta_secs": p.eta().map(|d| d.as_secs()),
        "current_file": p.embedding.as_ref().map(|(f, ..)| f.clone()),
        "elapsed_secs": p.elapsed.as_secs(),
    })
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
        if s.chunks_reused > 0 {
            writeln!(
                out,
                "{} chunks repeated a text embedded before in this run: its vector taken again",
                s.chunks_reused
            )?;
        }
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

/// The files of `ingest files`: a JSON array (`[]` when none), or one line each: status,
/// chunks, size, locator and what else is known.
pub(crate) fn print_files(
    out: &mut impl Write,
    common: &Common,
    files: &[ingest::tools::ListedFile],
) -> anyhow::Result<()> {
    if common.json {
        writeln!(out, "{}", serde_json::to_string(files)?)?;
        return Ok(());
    }
    let paint = Paint::stdout(common.color);
    for f in files {
        let mut notes: Vec<&str> = Vec::new();
        notes.extend(f.mime.as_deref());
        notes.extend(f.reason.as_deref());
        notes.extend(f.owner.as_deref());
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!("  ({})", notes.join(", "))
        };
        writeln!(
            out,
            "{} {:>6} {:>10}  {}{notes}",
            paint.status(&format!("{:<9}", f.status)),
            f.chunks,
            human_size(f.bytes),
            paint.locator(&f.locator)
        )?;
    }
    if files.is_empty() {
        writeln!(out, "no files")?;
    }
    Ok(())
}

/// Whether to colour a stream: `--color`, and for `auto` a terminal without `NO_COLOR`.
pub(crate) fn colors(choice: ColorChoice, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// Colours for what a person reads, or none.
pub(crate) struct Paint(bool);

impl Paint {
    /// For stdout, as `--color` says.
    pub(crate) fn stdout(choice: ColorChoice) -> Paint {
        use std::io::IsTerminal;
        Paint(colors(choice, std::io::stdout().is_terminal()))
    }

    /// For stderr, as `--color` says.
    pub(crate) fn stderr(choice: ColorChoice) -> Paint {
        use std::io::IsTerminal;
        Paint(colors(choice, std::io::stderr().is_terminal()))
    }

    /// No colours (tests).
    #[cfg(test)]
    pub(crate) fn none() -> Paint {
        Paint(false)
    }

    fn styled(&self, style: Style, text: &str) -> String {
        if self.0 {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_string()
        }
    }

    /// A locator: where to look.
    pub(crate) fn locator(&self, text: &str) -> String {
        self.styled(AnsiColor::Cyan.on_default(), text)
    }

    /// A score or count: bold.
    pub(crate) fn strong(&self, text: &str) -> String {
        self.styled(Style::new().bold(), text)
    }

    /// What is said about a hit or entry: dimmed.
    pub(crate) fn quiet(&self, text: &str) -> String {
        self.styled(Style::new().dimmed(), text)
    }

    /// A ledger or catalog status (padded as given): failed red, skipped yellow.
    pub(crate) fn status(&self, text: &str) -> String {
        match text.trim() {
            "failed" => self.styled(AnsiColor::Red.on_default(), text),
            "skipped" | "removed" => self.styled(AnsiColor::Yellow.on_default(), text),
            _ => text.to_string(),
        }
    }
}

/// The status answer (`ingest::status_of`, or the daemon's): as is, or a few aligned lines.
pub(crate) fn print_status(
    out: &mut impl Write,
    common: &Common,
    status: &serde_json::Value,
) -> anyhow::Result<()> {
    let found_by = common.data_dir_origin.as_str();
    if common.json {
        let mut status = status.clone();
        if let Some(s) = status.as_object_mut() {
            s.insert("data_dir_found_by".into(), found_by.into());
        }
        writeln!(out, "{status}")?;
        return Ok(());
    }
    let c = field(status, "/catalog");
    writeln!(
        out,
        "data dir:  {}  (found by {found_by})",
        common.data_dir.display()
    )?;
    if let Some(model) = field(status, "/model").as_str() {
        writeln!(out, "model:     {model}")?;
    }
    if let Some(bytes) = field(status, "/disk_bytes").as_u64() {
        writeln!(
            out,
            "on disk:   {} (the data dir's files, as allocated)",
            human_size(bytes)
        )?;
    }
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
        if field(daemon, "/lingering").as_bool() == Some(true) {
            writeln!(
                out,
                "reader:    pid {pid}, keeps the index loaded for the next searches (ends after {} s without one, or when a command writes)",
                field(daemon, "/linger_secs")
            )?;
            return Ok(());
        }
        match field(daemon, "/command").as_str() {
            Some(command) => {
                writeln!(out, "writing:   `{command}` (pid {pid})")?;
                if let Some(line) = field(daemon, "/progress/line").as_str() {
                    writeln!(out, "progress:  {line}")?;
                }
            }
            None => writeln!(
                out,
                "daemon:    pid {pid}, watching {}, {} syncs",
                field(daemon, "/watching"),
                field(daemon, "/syncs")
            )?,
        }
    }
    Ok(())
}

/// The value at a JSON pointer (`/a/b`), or null: reading an answer's fields without indexing.
pub(crate) fn field<'a>(value: &'a serde_json::Value, pointer: &str) -> &'a serde_json::Value {
    value.pointer(pointer).unwrap_or(&serde_json::Value::Null)
}

/// Bytes as B, KiB, MiB or GiB.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let name = UNITS.get(unit).copied().unwrap_or("B");
    if unit == 0 {
        format!("{bytes} {name}")
    } else {
        format!("{value:.1} {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_says_counts_rate_time_left_and_the_file_being_embedded() {
        let p = ingest::ProgressSnapshot {
            files_found: 10,
            bytes_found: 4 * 1024 * 1024,
            files_read: 5,
            bytes_read: 2 * 1024 * 1024,
            chunks_known: 100,
            chunks_embedded: 50,
            elapsed: std::time::Duration::from_secs(10),
            embedding: Some(("/d/a.zip!/big manual.pdf".into(), 30, 80)),
        };
        // 50 chunks in 10 s: 5/s; 100 known + 100 guessed for the unread half - 50 done =
        // 150 left: 30 s.
        assert_eq!(
            progress_line(&p),
            "5/10 files, 2.0/4.0 MiB read; 50/100 chunks embedded, 5.0/s, about 0:00:30 left \
             — embedding big manual.pdf 30/80"
        );
        // Before anything is embedded: no rate to plan with, so no time left is claimed.
        let start = ingest::ProgressSnapshot {
            files_found: 3,
            ..ingest::ProgressSnapshot::default()
        };
        assert_eq!(
            progress_line(&start),
            "0/3 files, 0.0/0.0 MiB read; 0/0 chunks embedded, 0.0/s"
        );
    }
}
