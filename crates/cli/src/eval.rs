//! `ingest eval`: a question set run through search in each ranking mode, scored.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use ingest::SearchMode;
use ingest_serve::eval::{
    evaluate, evaluate_ranked, parse_questions, EvalOptions, ModeReport, RankedLists, Scores,
};

use crate::cli::{Common, EvalArgs};
use crate::settings::{open, scope};

/// The tag of the questions whose expected file a peer's ranked lists say it could read.
const PEER_READABLE: &str = "peer-readable";

pub(crate) fn run(common: &Common, args: &EvalArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.k > 0, "--k must be at least 1");
    let modes = if args.modes.is_empty() {
        SearchMode::ALL.to_vec()
    } else {
        args.modes.clone()
    };
    let ingestor = open(common, None)?;
    let scope = scope(common, false)?;
    let path = match (&args.questions, args.names) {
        (Some(path), false) => path,
        _ => return names(common, &ingestor, &scope, &modes, args.k),
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut questions = parse_questions(&text)?;
    anyhow::ensure!(
        !questions.is_empty(),
        "{} holds no questions",
        path.display()
    );
    let mut peers = Vec::new();
    for file in &args.ranked {
        // Refused by its size before it is read (RankedLists::parse bounds it as well).
        let size = std::fs::metadata(file)
            .with_context(|| format!("reading {}", file.display()))?
            .len();
        anyhow::ensure!(
            size <= ingest_serve::eval::MAX_RANKED_BYTES as u64,
            "{}: {size} bytes of ranked lists; at most {} are read",
            file.display(),
            ingest_serve::eval::MAX_RANKED_BYTES
        );
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let name = file.file_stem().map_or_else(
            || file.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        let lists = RankedLists::parse(&text, &name)?;
        if lists.read.is_some() {
            for q in questions.iter_mut().filter(|q| !q.is_absent()) {
                if lists.can_read(q) && !q.tags.iter().any(|t| t == PEER_READABLE) {
                    q.tags.push(PEER_READABLE.to_string());
                }
            }
        }
        peers.push(lists);
    }
    let options = EvalOptions {
        k: args.k,
        limit: args.limit,
        min_score: args.min_score,
    };
    let mut reports = modes
        .iter()
        .map(|m| evaluate(&ingestor, &scope, &questions, *m, &options))
        .collect::<Result<Vec<_>, _>>()?;
    reports.extend(peers.iter().map(|p| evaluate_ranked(&questions, p, args.k)));
    let mut out = std::io::stdout().lock();
    if common.json {
        serde_json::to_writer(&mut out, &reports)?;
        writeln!(out)?;
    } else {
        print_reports(&mut out, &reports, args.misses)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `ingest eval --names`: every file and archive with a point searched for by its name.
fn names(
    common: &Common,
    ingestor: &ingest::Ingestor,
    scope: &ingest::Scope,
    modes: &[SearchMode],
    k: usize,
) -> anyhow::Result<ExitCode> {
    let reports = modes
        .iter()
        .map(|m| ingest_serve::eval::evaluate_names(ingestor, scope, *m, k))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = std::io::stdout().lock();
    if common.json {
        serde_json::to_writer(&mut out, &reports)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "mode         files  found in the first {k}: by name  by its words"
    )?;
    for r in &reports {
        writeln!(
            out,
            "{:<10} {:>7} {:>24} {:>12}",
            r.mode.as_str(),
            r.files,
            r.found,
            r.found_by_words
        )?;
        for missed in &r.missed {
            writeln!(out, "  missed by name: {missed}")?;
        }
        for missed in &r.missed_by_words {
            let twins = match r.ambiguous_by_words.contains(missed) {
                true => format!(" (the first {k} are files whose names have the same words)"),
                false => String::new(),
            };
            writeln!(out, "  missed by its words: {missed}{twins}")?;
        }
    }
    // The same for every mode: said once.
    if let Some(r) = reports.first().filter(|r| !r.without_points.is_empty()) {
        writeln!(
            out,
            "not searched for: {} entries without any point (empty files, or no file cards)",
            r.without_points.len()
        )?;
        for u in &r.without_points {
            match &u.reason {
                Some(reason) => writeln!(out, "  {}: {} ({reason})", u.status, u.locator)?,
                None => writeln!(out, "  {}: {}", u.status, u.locator)?,
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn row(
    out: &mut impl Write,
    label: &str,
    s: &Scores,
    (p50, p95): (f64, f64),
) -> std::io::Result<()> {
    let pages = if s.page_questions == 0 {
        "      -".to_string()
    } else {
        format!("{:>7.3}", s.page_recall)
    };
    writeln!(
        out,
        "{label:<18} {:>4} {:>9.3} {:>5} {pages} {:>6.3} {p50:>8.1} {p95:>8.1}",
        s.questions, s.recall, s.page_questions, s.mrr
    )
}

fn print_reports(
    out: &mut impl Write,
    reports: &[ModeReport],
    misses: bool,
) -> std::io::Result<()> {
    let Some(first) = reports.first() else {
        return Ok(());
    };
    let k = first.k;
    writeln!(
        out,
        "{:<18} {:>4} {:>9} {:>5} {:>7} {:>6} {:>8} {:>8}",
        "mode",
        "n",
        format!("recall@{k}"),
        "pages",
        format!("page@{k}"),
        "MRR",
        "p50 ms",
        "p95 ms"
    )?;
    for r in reports {
        row(out, &r.label, &r.all, (r.p50_ms, r.p95_ms))?;
    }
    if first.all.questions > 0 {
        writeln!(
            out,
            "\nanswerable questions: withheld (no hit at all), answered in the first {k} at high confidence:"
        )?;
        for r in reports {
            shares(
                out,
                &r.label,
                r.all.questions,
                r.all.withheld,
                r.all.confident_recall,
            )?;
        }
    }
    if first.all.absent_questions > 0 {
        writeln!(
            out,
            "\nabsent questions (about what the documents do not hold): flagged (nothing relevant, or no hit of high confidence in the first {k}), answered \"nothing relevant\":"
        )?;
        for r in reports {
            let all = &r.all;
            shares(
                out,
                &r.label,
                all.absent_questions,
                all.absent_flagged,
                all.absent_nothing,
            )?;
        }
    }
    // Per tag: recall@k / page recall@k of every mode side by side.
    write!(out, "\n{:<18} {:>4} {:>5}", "tag", "n", "pages")?;
    for r in reports {
        write!(out, " {:>13}", r.label)?;
    }
    writeln!(out)?;
    for (tag, s) in &first.by_tag {
        write!(out, "{tag:<18} {:>4} {:>5}", s.questions, s.page_questions)?;
        for r in reports {
            let Some(s) = r.by_tag.get(tag) else {
                continue;
            };
            let cell = if s.page_questions == 0 {
                format!("{:.2}", s.recall)
            } else {
                format!("{:.2}/{:.2}", s.recall, s.page_recall)
            };
            write!(out, " {cell:>13}")?;
        }
        writeln!(out)?;
    }
    if misses {
        for r in reports {
            writeln!(out, "\nmissed at {k}, {}:", r.label)?;
            for o in &r.outcomes {
                if o.absent {
                    if !o.flagged {
                        writeln!(
                            out,
                            "  line {} (absent, {} hits, best {:.3}): {}",
                            o.line,
                            o.hits,
                            o.best_score.unwrap_or(0.0),
                            o.question
                        )?;
                    }
                    continue;
                }
                let file_miss = o.file_rank.is_none_or(|x| x > k);
                let page_miss = o.has_page && o.page_rank.is_none_or(|x| x > k);
                if !file_miss && !page_miss {
                    continue;
                }
                let what = if file_miss { "file" } else { "page" };
                writeln!(out, "  line {} ({what}): {}", o.line, o.question)?;
                for t in &o.top {
                    writeln!(out, "      {t}")?;
                }
            }
        }
    }
    Ok(())
}

/// One row of a table of two shares: the mode's label, how many questions, the shares.
fn shares(out: &mut impl Write, label: &str, n: usize, a: f64, b: f64) -> std::io::Result<()> {
    writeln!(out, "{label:<18} {n:>4} {a:>9.3} {b:>9.3}")
}
