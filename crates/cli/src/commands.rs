//! The commands: `ingest` (the default), `search`, `status` and `watch` (the agent's tools
//! and `mcp` are in `faces.rs`). Each returns the
//! process's exit code, or an error for `main` to print.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ingest::{Config, FileReport, Ingestor, Input};
use ingest_serve::daemon::{ask, socket_path, status_of, Request, Server, SyncCause, WatchConfig};

use crate::cli::{
    Common, ExtractArgs, FilesArgs, IngestArgs, ReindexArgs, SearchArgs, ServeArgs, TransferArgs,
    WatchArgs,
};
use crate::exit::{self, Usage};
use crate::now_secs;
use crate::output::{self, field, print_line, worth_telling};
use crate::settings::{config, open, scope};

/// `ingest reindex`: cut and embed every stored content again with this build's recipe.
pub(crate) fn reindex(common: &Common, args: &ReindexArgs) -> anyhow::Result<ExitCode> {
    let mut config = config(common, None)?;
    args.recipe.apply(&mut config.chunking);
    let tty = std::io::stderr().is_terminal();
    let mut last = std::time::Instant::now();
    if args.multilingual {
        let ingestor = open(common, None)?;
        let report = ingestor.reindex_multilingual(&mut |read, embedded| {
            if tty || last.elapsed() >= std::time::Duration::from_secs(10) {
                last = std::time::Instant::now();
                eprint!(
                    "{}multilingual vectors: {embedded} embedded ({read} points read){}",
                    if tty { "\r" } else { "" },
                    if tty { "" } else { "\n" }
                );
            }
        })?;
        if tty {
            eprintln!();
        }
        if common.json {
            println!("{}", serde_json::to_string(&report)?);
        } else {
            println!(
                "{} of {} chunks in other languages got their multilingual vector ({:.1} s embedding, {:.1} s in all)",
                report.embedded, report.points, report.embed_seconds, report.seconds
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let ingestor = Ingestor::open_for_reindex(config)
        .with_context(|| format!("opening {}", common.data_dir.display()))?;
    let report = ingestor.reindex(&mut |p| {
        if tty || last.elapsed() >= std::time::Duration::from_secs(10) {
            last = std::time::Instant::now();
            eprint!(
                "{}reindexing: {}/{} contents, {} chunks{}",
                if tty { "\r" } else { "" },
                p.contents_done,
                p.contents,
                p.chunks,
                if tty { "" } else { "\n" }
            );
        }
    })?;
    if tty {
        eprintln!();
    }
    if common.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "reindexed {} contents ({} without stored texts kept as they were): {} chunks, were {}; {} tokens embedded in {:.1} s, {:.1} s in all\nfrom: {}\nto:   {}",
            report.contents,
            report.contents_missing,
            report.chunks_after,
            report.chunks_before,
            report.tokens,
            report.embed_seconds,
            report.seconds,
            report.from,
            report.to
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `ingest export FILE`: every point of the index, as JSON lines (gzip for `.gz`).
pub(crate) fn export(common: &Common, args: &TransferArgs) -> anyhow::Result<ExitCode> {
    let ingestor = open(common, None)?;
    let file = std::fs::File::create(&args.file)
        .with_context(|| format!("creating {}", args.file.display()))?;
    let points = if is_gzip(&args.file) {
        let mut gz = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(file),
            flate2::Compression::fast(),
        );
        let n = ingestor.export(&mut gz)?;
        gz.finish()?.flush()?;
        n
    } else {
        let mut out = std::io::BufWriter::new(file);
        let n = ingestor.export(&mut out)?;
        out.flush()?;
        n
    };
    transferred(common, "exported", points, &args.file)
}

/// `ingest import FILE`: the points of an export into the store the data dir is given.
pub(crate) fn import(common: &Common, args: &TransferArgs) -> anyhow::Result<ExitCode> {
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("opening {}", args.file.display()))?;
    let mut input: Box<dyn std::io::BufRead> = if is_gzip(&args.file) {
        Box::new(std::io::BufReader::new(flate2::read::MultiGzDecoder::new(
            file,
        )))
    } else {
        Box::new(std::io::BufReader::new(file))
    };
    let points = Ingestor::import(config(common, None)?, &mut input).with_context(|| {
        format!(
            "importing {} into {}",
            args.file.display(),
            common.data_dir.display()
        )
    })?;
    transferred(common, "imported", points, &args.file)
}

pub(crate) fn migrate(common: &Common) -> anyhow::Result<ExitCode> {
    // A daemon writing the data dir meanwhile would leave its later writes behind.
    refuse_if_served(common)?;
    let mut config = config(common, None)?;
    let url = config.catalog.take().ok_or_else(|| {
        Usage(
            "migrate needs the shared catalog to move this data dir's index into: \
             --catalog postgres://USER@HOST/DB (or INGEST_CATALOG)"
                .into(),
        )
    })?;
    let report = ingest::migrate(config, &url)
        .with_context(|| format!("migrating {} into {url}", common.data_dir.display()))?;
    if common.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{} {} entries of {} scopes, {} contents, {} workflows ({} items) into {}; \
             {} holder records re-keyed",
            if report.resumed {
                "finished an earlier migrate: moved"
            } else {
                "moved"
            },
            report.entries,
            report.scopes,
            report.contents,
            report.workflows,
            report.workflow_items,
            report.catalog,
            report.holder_records
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn is_gzip(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

fn transferred(
    common: &Common,
    verb: &str,
    points: u64,
    file: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    if common.json {
        println!("{}", serde_json::json!({ verb: points, "file": file }));
    } else {
        println!("{verb} {points} points ({})", file.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// A first path that is neither a file nor a folder but reads like a command (`serch`): what
/// the person meant, by clap's measure (Jaro similarity above 0.7).
fn mistyped_command(paths: &[std::path::PathBuf]) -> Option<String> {
    use clap::CommandFactory;
    let first = paths.first()?.to_str()?;
    if first.contains('/') || std::fs::symlink_metadata(first).is_ok() {
        return None;
    }
    let command = crate::cli::Cli::command();
    command
        .get_subcommands()
        .flat_map(|c| std::iter::once(c.get_name()).chain(c.get_all_aliases()))
        .map(|name| (strsim::jaro(first, name), name))
        .filter(|(similar, _)| *similar > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name.to_string())
}

pub(crate) fn ingest(common: &Common, args: &IngestArgs) -> anyhow::Result<ExitCode> {
    if args.paths.is_empty() {
        return Err(Usage(
            "nothing to ingest: give files, folders or archives, or a command (see `ingest --help`)".into(),
        )
        .into());
    }
    if let Some(meant) = mistyped_command(&args.paths) {
        let typed = args.paths.first().map(|p| p.display().to_string());
        return Err(Usage(format!(
            "`{}` is neither a command nor a file or folder here. Did you mean `ingest {meant}`?",
            typed.unwrap_or_default()
        ))
        .into());
    }
    // This run is the data dir's one writer: it listens on the data dir's socket, so that
    // `status` shows its progress and searches, browsing and reading answer from what is
    // committed meanwhile; another writer is told who holds it (or waits, with --wait).
    let inputs = inputs_of(&args.paths)?;
    // Nothing to read at all: said before the data dir is made (`ingest typo.pdf` leaves no
    // empty index behind).
    let missing: Vec<&PathBuf> = args
        .paths
        .iter()
        .filter(|p| {
            p.to_str()
                .is_none_or(|t| !ingest::SourceUrl::looks_like_one(t))
                && std::fs::symlink_metadata(p).is_err()
        })
        .collect();
    if missing.len() == args.paths.len() {
        let names: Vec<String> = missing.iter().map(|p| format!("{p:?}")).collect();
        anyhow::bail!("no such file or folder: {}", names.join(", "));
    }
    wait_or_refuse(common, args.wait)?;
    // The model loads on first use: a run of unchanged files never needs it.
    let (socket, ingestor) = hold_data_dir(common, &args.extract, &|_| {}, false)?;
    let command = std::iter::once("ingest".to_string())
        .chain(args.paths.iter().map(|p| p.display().to_string()))
        .collect::<Vec<_>>()
        .join(" ");
    let state = std::sync::Arc::new(std::sync::Mutex::new(serde_json::json!({
        "pid": std::process::id(),
        "started_at": now_secs(),
        "command": command.chars().take(300).collect::<String>(),
        "progress": null,
    })));
    let _server = socket.serve(
        std::sync::Arc::clone(&ingestor),
        std::sync::Arc::clone(&state),
    )?;
    let scope = scope(common, args.shared)?;
    let progress = (!common.json && !common.quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        bar
    });
    let stdout = std::sync::Mutex::new(std::io::stdout());
    let paint = output::Paint::stderr(common.color);
    let observer = |r: &FileReport| {
        if common.json {
            let mut out = stdout.lock().unwrap_or_else(|p| p.into_inner());
            let _ = writeln!(out, "{}", print_line(true, r, &paint));
        } else if worth_telling(r) {
            let line = print_line(false, r, &paint);
            match &progress {
                Some(bar) => bar.println(line),
                None => eprintln!("{line}"),
            }
        }
    };
    // SIGINT or SIGTERM stops the run at the next batch (a second one ends the process):
    // what is stored stays, and the next run goes on from there, in the middle of a file too.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(
            signal,
            130,
            std::sync::Arc::clone(&stop),
        )?;
        signal_hook::flag::register(signal, std::sync::Arc::clone(&stop))?;
    }
    let counters = ingestor.progress();
    let done = std::sync::atomic::AtomicBool::new(false);
    let report = std::thread::scope(|s| {
        // The line is redrawn from the run's counters, so it moves while a big file embeds;
        // `ingest status` shows the same through the socket.
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let snapshot = counters.snapshot();
                let line = output::progress_line(&snapshot);
                if let Some(bar) = &progress {
                    bar.set_message(line.clone());
                }
                if let Some(st) = state
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_object_mut()
                {
                    st.insert("progress".into(), output::progress_json(&snapshot, &line));
                }
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
        });
        let report = ingestor.ingest_until(inputs, &scope, &observer, &stop);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        report
    })?;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let s = &report.summary;
    output::print_summary(&mut std::io::stdout().lock(), common.json, s)?;
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        eprintln!("stopped: what is stored stays; the next run goes on from there");
        return Ok(ExitCode::from(exit::STOPPED));
    }
    Ok(if s.all_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::SOME_FAILED)
    })
}

/// `search`: the `search_documents` tool, answered by the daemon when one holds the data
/// directory (`faces::search`).
pub(crate) fn search(common: &Common, args: &SearchArgs) -> anyhow::Result<ExitCode> {
    crate::faces::search(common, args)
}

/// `files`: what the scope may read, one line per file (under a folder, archive or file when
/// given); exits 1 when there is none.
pub(crate) fn files(common: &Common, args: &FilesArgs) -> anyhow::Result<ExitCode> {
    let under = args
        .under
        .as_deref()
        .map(crate::faces::locator)
        .transpose()?;
    let ingestor = open(common, None)?;
    let files = ingest::tools::list_files(&ingestor, &scope(common, false)?, under.as_deref());
    output::print_files(&mut std::io::stdout().lock(), common, &files)?;
    Ok(if files.is_empty() {
        ExitCode::from(exit::NOTHING_FOUND)
    } else {
        ExitCode::SUCCESS
    })
}

pub(crate) fn status(common: &Common) -> anyhow::Result<ExitCode> {
    let status = match ask(&socket_path(&common.data_dir), &Request::Status)? {
        Some(answer) => answer,
        None => status_of(&open(common, None)?)?,
    };
    output::print_status(&mut std::io::stdout().lock(), common, &status)?;
    Ok(ExitCode::SUCCESS)
}

/// `ingest quarantine list|purge`: the data dir's quarantine marks (no index is opened).
pub(crate) fn quarantine(
    common: &Common,
    command: &crate::cli::QuarantineCommand,
) -> anyhow::Result<ExitCode> {
    use crate::cli::QuarantineCommand;
    use ingest::quarantine;
    let data = ingest::DataDir::at(&common.data_dir);
    let (verb, marks) = match command {
        QuarantineCommand::List => ("", quarantine::list(&data)?),
        QuarantineCommand::Purge { ids, all } => {
            let purged = quarantine::purge(&data, if *all { &[] } else { ids })?;
            if !*all {
                if let Some(missing) = ids.iter().find(|id| !purged.iter().any(|m| &m.id == *id)) {
                    anyhow::bail!(Usage(format!(
                        "no quarantine mark {missing:?} (see `ingest quarantine list`)"
                    )));
                }
            }
            ("purged ", purged)
        }
    };
    let mut out = std::io::stdout().lock();
    if common.json {
        serde_json::to_writer(&mut out, &serde_json::json!({ "marks": marks }))?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if marks.is_empty() {
        writeln!(
            out,
            "{verb}no quarantine marks in {}",
            common.data_dir.display()
        )?;
    }
    for m in &marks {
        let state = if m.is_quarantined() {
            "quarantined"
        } else {
            "died in once, tried again"
        };
        writeln!(
            out,
            "{verb}{}  {state}  {:?}  (scope {:?}, {} bytes, {} process deaths)",
            m.id, m.locator, m.scope, m.size, m.crashes
        )?;
        if let Some(body) = &m.kept_body {
            writeln!(out, "    body kept at {}", body.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Open the data directory and its store, waiting a while for a short-lived command (a
/// `search` or `status` that opened it just before this daemon listened) to let go.
fn take_index(
    common: &Common,
    extract: &ExtractArgs,
    adjust: &dyn Fn(&mut Config),
) -> anyhow::Result<Ingestor> {
    let started = std::time::Instant::now();
    loop {
        let opened = config(common, Some(extract)).and_then(|mut c| {
            adjust(&mut c);
            Ingestor::open(c).with_context(|| format!("opening {}", common.data_dir.display()))
        });
        let attempt = opened.and_then(|i| {
            i.open_index()?;
            Ok(i)
        });
        match attempt {
            Ok(i) => return Ok(i),
            // A refused configuration is not a busy data dir: said at once, as it is.
            Err(e)
                if e.chain().any(|c| {
                    matches!(
                        c.downcast_ref::<ingest::Error>(),
                        Some(ingest::Error::Config(_))
                    )
                }) =>
            {
                return Err(e)
            }
            Err(_) if started.elapsed() < std::time::Duration::from_secs(30) => {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Err(e) => {
                return Err(e.context(format!(
                    "{} is in use by another ingest process",
                    common.data_dir.display()
                )))
            }
        }
    }
}

/// Refuse to start a second writer of the data dir while another (an ingest, watch or serve)
/// runs, saying which (exit 75).
fn refuse_if_served(common: &Common) -> anyhow::Result<()> {
    wait_or_refuse(common, false)
}

/// Before writing the data dir: when another writer holds it, refuse naming the holder (its
/// command, pid and since when), or with `wait` wait until it ends.
fn wait_or_refuse(common: &Common, wait: bool) -> anyhow::Result<()> {
    let socket = socket_path(&common.data_dir);
    let mut said = false;
    while let Ok(Some(held)) = ask(&socket, &Request::Status) {
        let holder = holder_of(&held);
        if !wait {
            return Err(exit::Busy(format!(
                "{} is held by {holder}; it answers searches, status and the tools meanwhile. \
                 Run this again when it ends, or add --wait",
                common.data_dir.display()
            ))
            .into());
        }
        if !said && !common.quiet {
            eprintln!("waiting: {} is held by {holder}", common.data_dir.display());
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    Ok(())
}

/// Who holds a data dir, from its status answer: `` `ingest docs` (pid 42, for 8 s) ``.
fn holder_of(status: &serde_json::Value) -> String {
    let d = field(status, "/daemon");
    let command = field(d, "/command")
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| {
            if d.get("serving").is_some() {
                "ingest serve".into()
            } else {
                "ingest watch".into()
            }
        });
    let since = field(d, "/started_at")
        .as_u64()
        .map(|t| format!(", for {} s", now_secs().saturating_sub(t)))
        .unwrap_or_default();
    format!("`{command}` (pid {}{since})", field(d, "/pid"))
}

/// What a daemon (`ingest watch`, `ingest serve`) does first: refuse to start beside another,
/// listen on the data dir's socket before taking the index (from then on `ingest search` and
/// `ingest status` ask this process instead of opening the data directory), take the index,
/// and load the model, so searches answer from a loaded model from the first one on (here,
/// not in a thread: a process must not exit while ONNX Runtime loads).
fn hold_data_dir(
    common: &Common,
    extract: &ExtractArgs,
    adjust: &dyn Fn(&mut Config),
    load_model: bool,
) -> anyhow::Result<(ingest_serve::daemon::Listening, std::sync::Arc<Ingestor>)> {
    ingest::find_model_dir(common.model_dir.as_deref())?;
    refuse_if_served(common)?;
    ingest::prepare_data_dir(&common.data_dir)
        .with_context(|| format!("opening {}", common.data_dir.display()))?;
    let socket = Server::bind(&socket_path(&common.data_dir))?;
    let ingestor = std::sync::Arc::new(take_index(common, extract, adjust)?);
    if let Err(e) = if load_model {
        ingestor.load_model()
    } else {
        Ok(())
    } {
        tracing::warn!("embedding model not loaded ahead (searches will try again): {e}");
    }
    Ok((socket, ingestor))
}

pub(crate) fn serve(common: &Common, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    use std::sync::{Arc, Mutex};
    let config = ingest_serve::service::ServiceConfig::load(&args.config)?;
    let addr = args
        .listen
        .or(config.listen)
        .context("no address to listen on: give --listen ADDR or `listen` in the config")?;
    let workflow = config.workflow.clone().unwrap_or_default();
    let max_scope_files = config.uploads().max_files_per_scope;
    let (socket, ingestor) = hold_data_dir(
        common,
        &args.extract,
        &|c| {
            workflow.apply(&mut c.workflow);
            // A pull through the service is counted as its uploads are.
            c.max_scope_files = Some(max_scope_files);
        },
        true,
    )?;
    let (roots, sources) = watched(&args.watch)?;
    let state = Arc::new(Mutex::new(serde_json::json!({
        "pid": std::process::id(),
        "started_at": now_secs(),
        "serving": addr.to_string(),
        "watching": roots,
        "syncs": 0,
        "last_sync": null,
    })));
    let _socket = socket.serve(Arc::clone(&ingestor), Arc::clone(&state))?;
    let uploads = Arc::new(ingest::Uploads::start(
        Arc::clone(&ingestor),
        config.uploads(),
    )?);
    // The folders are synced on their own thread; it stops after the HTTP server.
    let stop_watching = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watch_scope = scope(common, false)?;
    let registered = ingestor.config().sources.iter().any(|s| s.sync);
    let watcher = (!roots.is_empty() || !sources.is_empty() || registered).then(|| {
        let mut config = WatchConfig::new(roots, watch_scope);
        config.sources = sources;
        let (ingestor, stop) = (Arc::clone(&ingestor), Arc::clone(&stop_watching));
        std::thread::spawn(move || {
            let mut on_sync = record_sync(&state);
            ingest_serve::daemon::watch(&ingestor, &config, &stop, &|_| {}, &mut on_sync)
        })
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening on {addr}"))?;
        let bound = listener.local_addr().unwrap_or(addr);
        if !bound.ip().is_loopback() {
            tracing::warn!(
                "serving on {bound}, not a loopback address: keys and documents travel                  unencrypted; put a TLS-terminating proxy in front"
            );
        }
        println!("listening on http://{bound}");
        let _ = std::io::stdout().flush();
        tracing::info!(
            listen = %bound,
            data_dir = %common.data_dir.display(),
            "serving"
        );
        ingest_serve::service::serve(uploads, &config, listener, ingest_serve::mcp::stop_signal()).await?;
        anyhow::Ok(())
    })?;
    stop_watching.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Some(watcher) = watcher {
        match watcher.join() {
            Ok(watched) => watched.context("watching folders")?,
            Err(_) => anyhow::bail!("the folder watcher panicked"),
        }
    }
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// What to keep indexed: the folders (or files) to watch, as absolute paths, and the remote
/// sources to poll.
fn watched(folders: &[PathBuf]) -> anyhow::Result<(Vec<PathBuf>, Vec<ingest::Source>)> {
    let mut roots = Vec::new();
    let mut sources = Vec::new();
    for input in inputs_of(folders)? {
        match input {
            Input::Remote(source) => sources.push(*source),
            Input::Path(f) => roots.push(
                std::fs::canonicalize(&f).with_context(|| format!("watching {}", f.display()))?,
            ),
            _ => {}
        }
    }
    Ok((roots, sources))
}

/// What a daemon does after each sync: log it and put it into the status it answers with.
fn record_sync(
    state: &std::sync::Mutex<serde_json::Value>,
) -> impl FnMut(SyncCause, &ingest::IngestReport) + '_ {
    move |cause, report| {
        let s = &report.summary;
        tracing::info!(
            cause = ?cause,
            files = s.files,
            indexed = s.indexed,
            removed = s.removed,
            failed = s.failed,
            chunks_embedded = s.chunks_embedded,
            seconds = s.seconds.total,
            "synced"
        );
        if let Ok(mut st) = state.lock() {
            let syncs = field(&st, "/syncs").as_u64().unwrap_or(0) + 1;
            if let Some(st) = st.as_object_mut() {
                st.insert("syncs".into(), serde_json::json!(syncs));
                st.insert(
                    "last_sync".into(),
                    serde_json::json!({ "at": now_secs(), "cause": cause, "summary": s }),
                );
            }
        }
    }
}

pub(crate) fn watch(common: &Common, args: &WatchArgs) -> anyhow::Result<ExitCode> {
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};
    let (listener, ingestor) = hold_data_dir(common, &args.extract, &|_| {}, true)?;
    let (roots, sources) = watched(&args.folders)?;
    let remote: Vec<String> = sources.iter().map(|s| s.url.to_string()).collect();
    let state = Arc::new(Mutex::new(serde_json::json!({
        "pid": std::process::id(),
        "started_at": now_secs(),
        "watching": roots,
        "sources": remote,
        "syncs": 0,
        "last_sync": null,
    })));
    let _server = listener.serve(Arc::clone(&ingestor), Arc::clone(&state))?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let mut config = WatchConfig::new(roots.clone(), scope(common, args.shared)?);
    config.debounce = std::time::Duration::from_millis(args.debounce_ms);
    config.rescan = std::time::Duration::from_secs(args.rescan_secs.max(1));
    config.poll = std::time::Duration::from_secs(args.poll_secs.max(1));
    config.sources = sources;
    tracing::info!(folders = ?roots, sources = ?remote, data_dir = %common.data_dir.display(), "watching");
    let json = common.json;
    let paint = output::Paint::stdout(common.color);
    let observer = |r: &FileReport| {
        if json || worth_telling(r) {
            let _ = writeln!(std::io::stdout().lock(), "{}", print_line(json, r, &paint));
        }
    };
    let mut on_sync = record_sync(&state);
    ingest_serve::daemon::watch(&ingestor, &config, &stop, &observer, &mut on_sync)?;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The run's inputs: a path, or a remote source named by its URL (`s3://bucket/prefix`,
/// `sftp://host/path`, `ftp://…`, `webdav://…`), refused here when it is not a valid one.
fn inputs_of(paths: &[PathBuf]) -> anyhow::Result<Vec<Input>> {
    paths
        .iter()
        .map(|p| match p.to_str() {
            Some(text) if ingest::SourceUrl::looks_like_one(text) => text
                .parse::<ingest::SourceUrl>()
                .map(|url| Input::Remote(Box::new(url.into())))
                .map_err(|e| anyhow::anyhow!("{e}")),
            _ => Ok(Input::Path(p.clone())),
        })
        .collect()
}
