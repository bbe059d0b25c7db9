//! What the crate's integration tests, benches and fuzz targets reach inside the library: not
//! part of the API (hidden from the docs), and nothing here is used by the library itself.
//!
//! Unit tests inside the crate use these too, so that each helper exists once.

use std::io::{Cursor, Write};

/// Failpoint sites and the variable that arms them, for crash tests (see `src/failpoint.rs`).
pub use crate::failpoint::{ENV as FAILPOINTS_ENV, SITES as FAILPOINT_SITES};

/// The stages' internals, for benches, fuzz targets and checks on what is stored.
pub use crate::embed::{
    load_embedder, load_tokenizer, Chunk, Chunker, Embedder, FastEmbedder, OpenVinoEmbedder,
    TooManyChunks, DIMENSIONS, MAX_SEQ_TOKENS, WINDOW_BYTES,
};
pub use crate::isolation::{InProcess, WorkerPool, WORKER_ARG};
pub use crate::unpack::{
    is_hidden, Budget, DiskEntry, DiskFile, DiskWalk, Leaf, Limit, Unpacker, WalkOptions, MAX_GLOBS,
};

/// The index's internals, for checks on what is stored.
pub use crate::index::{
    Catalog, CatalogEntry, EdgeIndex, EntryStatus, ExportedPoint, IndexRead, IndexWrite,
    PointRecord, ShadowedMember, SqliteCatalog, StoredContent,
};

/// A ZIP archive of `entries` (name, bytes), deflated, in memory.
#[allow(clippy::unwrap_used)] // a test helper: writing to memory does not fail
pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in entries {
        w.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// Process ids of `pool`'s idle workers: tells whether a worker was reused or replaced.
pub fn idle_worker_pids(pool: &WorkerPool) -> Vec<u32> {
    pool.idle_pids()
}

/// A real Qdrant server for tests: one node or a 3-node cluster on loopback, started from
/// the provisioned binary in a temporary folder and stopped when dropped; or the server at
/// `QDRANT_URL` (its gRPC address, e.g. `http://127.0.0.1:6334`), left running.
///
/// The binary is, in order: `$INGEST_QDRANT_BIN`, `~/.cache/qdrant-v1.18.3/qdrant` (where
/// `../shared/qdrant/get.sh` unpacks it), or what `get.sh` in `$INGEST_QDRANT_DIR` or
/// `../shared/qdrant` beside the source tree unpacks. [`QdrantServer::start`] returns `None`
/// (and says so on stderr) when there is neither a binary nor `QDRANT_URL`.
#[derive(Debug)]
pub struct QdrantServer {
    /// Each node's gRPC address (`http://127.0.0.1:PORT`); node 0 first.
    pub grpc: Vec<String>,
    /// Each node's REST port.
    pub http: Vec<u16>,
    nodes: Vec<Option<std::process::Child>>,
    launch: Vec<NodeLaunch>,
    bin: std::path::PathBuf,
    /// The nodes' storage, removed when dropped.
    dir: Option<std::path::PathBuf>,
}

/// How a node is started: environment, arguments, storage folder.
type NodeLaunch = (Vec<(String, String)>, Vec<String>, std::path::PathBuf);

/// What a test prints when it cannot find a Qdrant server.
pub const QDRANT_SKIPPED: &str = "SKIPPED: no Qdrant server (set QDRANT_URL, or provide ../shared/qdrant or INGEST_QDRANT_BIN): the server half of this test did not run";

impl QdrantServer {
    /// The provisioned server binary, if any.
    pub fn binary() -> Option<std::path::PathBuf> {
        if let Some(bin) = std::env::var_os("INGEST_QDRANT_BIN") {
            return Some(bin.into());
        }
        let cached = std::env::var_os("HOME")
            .map(|h| std::path::PathBuf::from(h).join(".cache/qdrant-v1.18.3/qdrant"));
        if let Some(c) = cached.filter(|c| c.is_file()) {
            return Some(c);
        }
        let dirs = [
            std::env::var_os("INGEST_QDRANT_DIR").map(std::path::PathBuf::from),
            Some(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/qdrant")),
        ];
        for dir in dirs.into_iter().flatten() {
            let get = dir.join("get.sh");
            if !get.is_file() {
                continue;
            }
            let out = std::process::Command::new("bash").arg(&get).output().ok()?;
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && std::path::Path::new(&path).is_file() {
                return Some(path.into());
            }
        }
        None
    }

    /// One node (or the `QDRANT_URL` server); `None` when there is no server to test with.
    pub fn start() -> Option<Self> {
        if let Ok(url) = std::env::var("QDRANT_URL") {
            return Some(QdrantServer {
                grpc: vec![url],
                http: Vec::new(),
                nodes: Vec::new(),
                launch: Vec::new(),
                bin: std::path::PathBuf::new(),
                dir: None,
            });
        }
        Self::launch(1)
    }

    /// A 3-node cluster (peers bootstrap from node 0); `None` without a binary.
    pub fn start_cluster() -> Option<Self> {
        Self::launch(3)
    }

    fn launch(nodes: usize) -> Option<Self> {
        let Some(bin) = Self::binary() else {
            eprintln!("{QDRANT_SKIPPED}");
            return None;
        };
        let dir = std::env::temp_dir().join(format!(
            "ingest-qdrant-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let mut server = QdrantServer {
            grpc: Vec::new(),
            http: Vec::new(),
            nodes: Vec::new(),
            launch: Vec::new(),
            bin,
            dir: Some(dir.clone()),
        };
        let ports = free_ports(nodes * 3);
        let mut first_p2p = None;
        for (n, node_ports) in ports.chunks_exact(3).enumerate() {
            let [http, grpc, p2p] = [node_ports.first(), node_ports.get(1), node_ports.get(2)]
                .map(|p| p.copied().unwrap_or_default());
            let data = dir.join(format!("node{n}"));
            std::fs::create_dir_all(&data).ok()?;
            let mut env = vec![
                ("QDRANT__SERVICE__HOST".to_string(), "127.0.0.1".to_string()),
                ("QDRANT__SERVICE__HTTP_PORT".into(), http.to_string()),
                ("QDRANT__SERVICE__GRPC_PORT".into(), grpc.to_string()),
                (
                    "QDRANT__STORAGE__STORAGE_PATH".into(),
                    data.join("storage").display().to_string(),
                ),
                (
                    "QDRANT__STORAGE__SNAPSHOTS_PATH".into(),
                    data.join("snapshots").display().to_string(),
                ),
                ("QDRANT__TELEMETRY_DISABLED".into(), "true".into()),
            ];
            let mut args = Vec::new();
            if nodes > 1 {
                env.push(("QDRANT__CLUSTER__ENABLED".into(), "true".into()));
                env.push(("QDRANT__CLUSTER__P2P__PORT".into(), p2p.to_string()));
                args.push("--uri".to_string());
                args.push(format!("http://127.0.0.1:{p2p}"));
                if let Some(boot) = first_p2p {
                    args.push("--bootstrap".into());
                    args.push(format!("http://127.0.0.1:{boot}"));
                }
            }
            first_p2p.get_or_insert(p2p);
            server.grpc.push(format!("http://127.0.0.1:{grpc}"));
            server.http.push(http);
            server.launch.push((env, args, data));
            server.nodes.push(None);
            if let Err(e) = server.restart(n) {
                eprintln!("qdrant node {n}: {e}");
                return None;
            }
        }
        Some(server)
    }

    /// Start node `n` again (after [`QdrantServer::stop`]) on its storage, and wait until it
    /// is ready.
    pub fn restart(&mut self, n: usize) -> std::io::Result<()> {
        let (env, args, data) = self
            .launch
            .get(n)
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such node"))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data.join("qdrant.log"))?;
        let child = std::process::Command::new(&self.bin)
            .args(&args)
            .envs(env)
            .current_dir(&data)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        if let Some(slot) = self.nodes.get_mut(n) {
            *slot = Some(child);
        }
        let port = self.http.get(n).copied().unwrap_or_default();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            if http_get(port, "/readyz").is_some_and(|r| r.starts_with("HTTP/1.1 200")) {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "qdrant node {n} not ready after 60 s (log in {})",
                data.display()
            ),
        ))
    }

    /// Stop node `n` (SIGTERM, then wait for it).
    pub fn stop(&mut self, n: usize) {
        if let Some(mut child) = self.nodes.get_mut(n).and_then(Option::take) {
            // SIGTERM by pid, as the shared stop script does (Child::kill sends SIGKILL).
            let _ = std::process::Command::new("kill")
                .arg(child.id().to_string())
                .status();
            let _ = child.wait();
        }
    }

    /// The gRPC address of the store on node `n`, as `--store` takes it, for `collection`.
    pub fn store_url(&self, n: usize, collection: &str) -> String {
        let grpc = self.grpc.get(n).cloned().unwrap_or_default();
        format!("{}/{collection}", grpc.replacen("http://", "qdrant://", 1))
    }

    /// A GET on node `n`'s REST port: the whole response (status line, headers, body).
    pub fn rest(&self, n: usize, path: &str) -> Option<String> {
        http_get(*self.http.get(n)?, path)
    }
}

impl Drop for QdrantServer {
    fn drop(&mut self) {
        for n in 0..self.nodes.len() {
            self.stop(n);
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// `n` distinct loopback ports that were free a moment ago.
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .filter_map(|_| std::net::TcpListener::bind("127.0.0.1:0").ok())
        .collect();
    listeners
        .iter()
        .filter_map(|l| l.local_addr().ok().map(|a| a.port()))
        .collect()
}

/// A plain HTTP/1.1 GET on loopback; the whole response.
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// Fill the catalog in `data_dir` with `n` generated entries of `scope` (files in folders
/// of 1 000, each its own content), saved every 100 000: a scale benchmark's catalog.
pub fn fill_catalog(data_dir: &std::path::Path, scope: &crate::Scope, n: u64) -> crate::Result<()> {
    let catalog = SqliteCatalog::open(data_dir)?;
    for i in 0..n {
        catalog.put(scope, generated_entry(i));
        if i % 100_000 == 99_999 {
            catalog.save()?;
        }
    }
    catalog.save()
}

/// Entry `i` of [`fill_catalog`].
pub fn generated_entry(i: u64) -> CatalogEntry {
    CatalogEntry::indexed(
        format!("/srv/bulk/folder-{:05}/report-{i:07}.txt", i / 1000),
        None,
        blake3::hash(&i.to_le_bytes()).to_hex().to_string(),
        4096,
        1_700_000_000_000_000_000,
        3,
    )
}
