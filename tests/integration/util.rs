//! Small helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A scratch folder with its own data directory.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn data_dir(&self) -> PathBuf {
        self.path("data")
    }

    /// Write `bytes` at `rel`, creating folders.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Run `ingest ARGS --data-dir <sandbox data>`.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(args)
            .arg("--data-dir")
            .arg(self.data_dir())
            .output()
            .expect("run ingest")
    }

    /// `ingest --json PATH...`: the per-file lines and the summary.
    pub fn ingest(&self, paths: &[&Path]) -> (Vec<Value>, Value, i32) {
        self.ingest_with(&[], paths)
    }

    /// `ingest --json FLAGS... PATH...`.
    pub fn ingest_with(&self, flags: &[&str], paths: &[&Path]) -> (Vec<Value>, Value, i32) {
        let mut args = vec!["--json".to_string()];
        args.extend(flags.iter().map(|f| f.to_string()));
        args.extend(paths.iter().map(|p| p.display().to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.run(&refs);
        assert_exited(&out);
        let mut lines = json_lines(&out);
        let summary = lines.pop().expect("summary line");
        assert!(summary.get("summary").is_some(), "last line: {summary}");
        assert_summary_counts_lines(&summary["summary"], &lines);
        (
            lines,
            summary["summary"].clone(),
            out.status.code().unwrap_or(-1),
        )
    }

    /// The hits of `ingest search --json --min-score 0 QUERY` (every hit, however weak: the
    /// relevance floor is tested on its own), each with `locator`, `score`, `snippet`….
    pub fn search(&self, query: &str, limit: usize) -> Vec<Value> {
        self.try_search(query, limit).unwrap_or_else(|| {
            panic!("search {query:?} failed");
        })
    }

    /// The hits of `ingest search --json --min-score -1 FLAGS... QUERY` (every hit), which
    /// must run (exit 0, or 1 for none).
    pub fn search_with(&self, flags: &[&str], query: &str) -> Vec<Value> {
        let mut args = vec!["search", "--json", "--min-score", "-1"];
        args.extend_from_slice(flags);
        args.push(query);
        let out = self.run(&args);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        search_hits(&out)
    }

    /// [`Sandbox::search`], or `None` if it could not run (the index is busy). Exit code 1
    /// (nothing found) is an empty list.
    pub fn try_search(&self, query: &str, limit: usize) -> Option<Vec<Value>> {
        let limit = limit.to_string();
        let out = self.run(&[
            "search",
            "--json",
            "--min-score",
            "0",
            "--limit",
            &limit,
            query,
        ]);
        matches!(out.status.code(), Some(0 | 1)).then(|| search_hits(&out))
    }

    /// `ingest status --json`, or `None` if it could not run.
    pub fn try_status(&self) -> Option<Value> {
        let out = self.run(&["status", "--json"]);
        out.status
            .success()
            .then(|| json_lines(&out).pop())
            .flatten()
    }

    /// `ingest status --json`.
    pub fn status(&self) -> Value {
        let out = self.run(&["status", "--json"]);
        assert!(out.status.success(), "{}", crate::util::told(&out));
        json_lines(&out).pop().expect("status line")
    }
}

/// Fail loudly, with the signal and the end of stderr, when `ingest` did not exit by itself
/// (a crash at shutdown would otherwise read as exit code -1 with no clue).
pub fn assert_exited(out: &Output) {
    if out.status.code().is_none() {
        use std::os::unix::process::ExitStatusExt;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr
            .chars()
            .rev()
            .take(4000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        panic!(
            "ingest ended by signal {:?} (core dumped: {}); stdout {} bytes; stderr tail:\n{tail}",
            out.status.signal(),
            out.status.core_dumped(),
            out.stdout.len()
        );
    }
}

/// What a command said, for an assertion about it: its exit code (or signal), stdout and
/// stderr — never only one of them (a search that exits 1 says why on stdout).
pub fn told(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The hits of a `search --json` answer: its one object's `hits`.
pub fn search_hits(out: &Output) -> Vec<Value> {
    let answer = json_lines(out)
        .pop()
        .unwrap_or_else(|| panic!("no answer: {}", String::from_utf8_lossy(&out.stderr)));
    answer["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits array: {answer}"))
        .clone()
}

pub fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// The repository's root, two folders above the CLI crate these tests belong to
/// (`crates/cli`). Read at run time (cargo and nextest set it for every test): the value
/// compiled in goes stale when a shared target dir serves two checkouts.
pub fn repo_dir() -> PathBuf {
    let cli = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    let root = cli.join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// The repository's `fixtures/` folder.
pub fn fixtures() -> PathBuf {
    repo_dir().join("fixtures")
}

/// The fixture folders that hold ordinary documents (everything but `fixtures/hostile/`).
pub fn benign_fixtures() -> Vec<PathBuf> {
    ["docs", "archives", "formats"]
        .iter()
        .map(|d| fixtures().join(d))
        .collect()
}

/// Every status a ledger line can have.
pub const STATUSES: &[&str] = &[
    "indexed",
    "unchanged",
    "skipped",
    "failed",
    "duplicate",
    "removed",
    "ignored",
];

/// The summary the CLI printed must count exactly the ledger lines it printed: per status,
/// in all and archives; and no more chunks embedded than the indexed lines hold.
pub fn assert_summary_counts_lines(summary: &Value, lines: &[Value]) {
    let count = |f: &dyn Fn(&Value) -> bool| lines.iter().filter(|l| f(l)).count() as u64;
    for status in STATUSES {
        assert_eq!(
            summary[*status].as_u64(),
            Some(count(&|l| l["status"] == *status)),
            "{status}: summary {summary} vs lines {lines:#?}"
        );
    }
    assert!(
        lines
            .iter()
            .all(|l| STATUSES.contains(&l["status"].as_str().unwrap_or_default())),
        "{lines:#?}"
    );
    assert_eq!(
        summary["files"].as_u64(),
        Some(lines.len() as u64),
        "{summary}"
    );
    assert_eq!(
        summary["archives"].as_u64(),
        Some(count(&|l| l["archive"] == true)),
        "{summary}"
    );
    let indexed_chunks: u64 = lines
        .iter()
        .filter(|l| l["status"] == "indexed")
        .filter_map(|l| l["chunks"].as_u64())
        .sum();
    assert!(
        summary["chunks_embedded"]
            .as_u64()
            .is_some_and(|n| n <= indexed_chunks),
        "{summary}: indexed lines hold {indexed_chunks} chunks"
    );
}

/// The ledger lines of files (archives' own lines left out).
pub fn files_only(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l["archive"] != true).collect()
}

/// A library configuration whose extraction workers are the built `ingest` binary (a test
/// binary cannot serve as one).
pub fn library_config(data_dir: &Path) -> ingest::Config {
    let mut config = ingest::Config::new(data_dir);
    config.isolation.program = Some(PathBuf::from(env!("CARGO_BIN_EXE_ingest")));
    config
}

pub use ingest_unpack::zip_of;

/// The reports keyed by locator suffix after `root`.
pub fn by_name<'a>(lines: &'a [Value], suffix: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["locator"].as_str().is_some_and(|s| s.ends_with(suffix)))
        .unwrap_or_else(|| panic!("no report for *{suffix} in {lines:#?}"))
}

/// Points in the store must equal the chunks the catalog says it holds.
pub fn assert_store_matches_catalog(sb: &Sandbox) {
    let st = sb.status();
    assert_eq!(st["points"], st["catalog"]["chunks"], "status: {st}");
}

/// An `ingest watch` process on a sandbox's data directory; killed when dropped.
pub struct Daemon {
    pub child: std::process::Child,
}

impl Daemon {
    /// Start `ingest watch --json FOLDERS` with a short debounce; output goes to files in the
    /// sandbox (a full pipe would block the daemon).
    pub fn start(sb: &Sandbox, folders: &[&Path]) -> Daemon {
        Daemon::start_with(sb, folders, &[], &[])
    }

    /// [`Daemon::start`] with extra arguments and environment variables.
    pub fn start_with(
        sb: &Sandbox,
        folders: &[&Path],
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Daemon {
        let log = |name: &str| std::fs::File::create(sb.path(name)).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(["watch", "--json", "--debounce-ms=150", "--data-dir"])
            .arg(sb.data_dir())
            .args(args)
            .args(folders)
            .env_remove(ingest_base::failpoint::ENV)
            .envs(env.iter().copied())
            .stdout(log("daemon.out"))
            .stderr(log("daemon.err"))
            .spawn()
            .expect("start ingest watch");
        Daemon { child }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap_or(0)
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), signal);
    }

    /// SIGKILL, as a crash would.
    pub fn kill(mut self) {
        self.signal(nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.signal(nix::sys::signal::Signal::SIGTERM);
        self.child.wait().expect("daemon exit")
    }

    /// Resident memory of the daemon process, in KiB.
    pub fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .expect("the daemon is alive and reports VmRSS")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Poll `check` every 50 ms until it holds; how long that took, or `None` after `limit`.
pub fn wait_for(
    limit: std::time::Duration,
    mut check: impl FnMut() -> bool,
) -> Option<std::time::Duration> {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if check() {
            return Some(started.elapsed());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    None
}

/// A small deterministic generator (no test randomness that cannot be replayed).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NAMES: &[&str] = &[
    "Ingrid", "Tormod", "Solveig", "Magnus", "Astrid", "Leif", "Kari", "Bjorn", "Sigrid",
    "Halvard", "Ragnhild", "Eirik", "Gunnhild", "Arne", "Liv", "Odd", "Turid", "Sverre", "Marit",
    "Knut", "Hedda", "Olav", "Brit", "Anders", "Synnove", "Per", "Tove", "Jostein", "Randi",
    "Ivar",
];
const PLACES: &[&str] = &[
    "Skerry Point",
    "Vennesund harbour",
    "the north pier",
    "Gull Island",
    "the ferry quay",
    "Ravnsvik bay",
    "the signal house",
    "Storholmen",
    "the fish market",
    "Kvalvik beach",
];
const OBJECTS: &[&str] = &[
    "copper weathervane",
    "foghorn valve",
    "tide gauge float",
    "mooring winch",
    "lantern lens",
    "rain collector",
    "radio mast",
    "boat ramp rails",
    "anemometer cups",
    "slipway chain",
    "bell rope",
    "chart table",
    "solar panel",
    "bilge pump",
    "flag halyard",
    "diesel tank",
    "storm shutters",
    "rowing boat",
    "first aid kit",
    "barometer",
    "life raft",
    "crab pots",
    "ice grips",
    "marker buoy",
];
const ACTIONS: &[&str] = &[
    "repainted",
    "inspected",
    "repaired",
    "moved",
    "cleaned",
    "tested",
    "replaced",
    "greased",
];

/// A file's text: a distinctive opening sentence (its search key: each file has its own
/// object and place), then lines about the same object and place, so that every chunk of the
/// file is recognisably its own.
pub fn document(id: u64, version: u64, rng: &mut Lcg) -> (String, String) {
    let i = id as usize;
    let name = NAMES[i % NAMES.len()];
    let object = OBJECTS[i % OBJECTS.len()];
    let place = PLACES[(i / OBJECTS.len()) % PLACES.len()];
    let key = format!(
        "{name} {} the {object} at {place} in revision {version}.",
        ACTIONS[(i + version as usize) % ACTIONS.len()],
    );
    let mut text = format!("{key}\n\n");
    for _ in 0..(2 + rng.below(30)) {
        text.push_str(&format!(
            "Later the {object} at {place} was {} again and written in the ledger.\n",
            ACTIONS[rng.below(ACTIONS.len() as u64) as usize],
        ));
    }
    (key, text)
}

/// The process ids of `parent`'s children that are extraction workers, with their CPU time
/// in clock ticks.
pub fn workers_of(parent: u32) -> Vec<(i32, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(ingest_isolation::WORKER_ARG) {
            continue;
        }
        // Fields after the command name in parentheses: state, ppid, ..., utime (14), stime (15).
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ppid: u32 = fields.get(1).and_then(|f| f.parse().ok()).unwrap_or(0);
        let cpu: u64 = fields
            .get(11..13)
            .map(|f| f.iter().filter_map(|x| x.parse::<u64>().ok()).sum())
            .unwrap_or(0);
        if ppid == parent {
            out.push((pid, cpu));
        }
    }
    out
}
