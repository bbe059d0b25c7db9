//! What the tests of this crate and of the crates above need of the index (feature
//! `testing`): real servers — a Qdrant node or cluster and a throw-away PostgreSQL cluster on
//! loopback, started from the provisioned binaries and stopped when dropped — and the
//! checks every catalog implementation must pass ([`catalog_conformance`]).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::Write;

use crate::{
    Catalog, CatalogEntries, CatalogEntry, CatalogRecords, EntryStatus, PgCatalog, SqliteCatalog,
};

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
            Some(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/qdrant")),
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

    /// The exact number of points in `collection` (asked of node `n`).
    pub fn count_points(&self, n: usize, collection: &str) -> Option<u64> {
        let body = r#"{"exact":true}"#;
        let response = http_request(
            *self.http.get(n)?,
            "POST",
            &format!("/collections/{collection}/points/count"),
            body,
        )?;
        // The body's JSON (a chunked answer's object lies between its chunk sizes).
        let body = response.get(response.find("\r\n\r\n")?..)?;
        let json = body.get(body.find('{')?..=body.rfind('}')?)?;
        let value: serde_json::Value = serde_json::from_str(json).ok()?;
        value.pointer("/result/count")?.as_u64()
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
    http_request(port, "GET", path, "")
}

/// A plain HTTP/1.1 request on loopback (a JSON `body` when not empty); the whole response.
fn http_request(port: u16, method: &str, path: &str, body: &str) -> Option<String> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// What a test prints when it cannot start PostgreSQL.
pub const POSTGRES_SKIPPED: &str = "SKIPPED: no PostgreSQL (Debian `postgresql`, which `make deps` installs, or INGEST_TEST_POSTGRES_URL): the PostgreSQL half of this test did not run";

/// A throw-away PostgreSQL cluster for tests: made with `initdb` in a temporary folder,
/// started with `pg_ctl` on a free loopback port (as the `postgres` user when run as root:
/// PostgreSQL refuses root), stopped and removed when dropped. Or the server at
/// `$INGEST_TEST_POSTGRES_URL`, left running. Each [`PostgresServer::database`] is a fresh
/// database of its own.
#[derive(Debug)]
pub struct PostgresServer {
    /// A URL of the server (its `postgres` database), with the superuser.
    base: String,
    /// How [`PostgresServer::database`] connects, when not by `base` (a server that takes
    /// TCP connections only with TLS: its Unix socket).
    admin: Option<String>,
    /// The cluster's folder and its `bin/`, when this launched it.
    cluster: Option<(std::path::PathBuf, std::path::PathBuf, Option<String>)>,
}

impl PostgresServer {
    /// The newest installed server's programs (`/usr/lib/postgresql/N/bin`), if any.
    pub fn binaries() -> Option<std::path::PathBuf> {
        let mut versions: Vec<(u32, std::path::PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| {
                let e = e.ok()?;
                let v: u32 = e.file_name().to_str()?.parse().ok()?;
                let bin = e.path().join("bin");
                bin.join("initdb").is_file().then_some((v, bin))
            })
            .collect();
        versions.sort();
        versions.pop().map(|(_, bin)| bin)
    }

    /// A server to test with; `None` (said on stderr) when none can start.
    pub fn start() -> Option<Self> {
        if let Ok(url) = std::env::var("INGEST_TEST_POSTGRES_URL") {
            return Some(PostgresServer {
                base: url,
                admin: None,
                cluster: None,
            });
        }
        match Self::launch(None) {
            Ok(server) => Some(server),
            Err(e) => {
                eprintln!("{POSTGRES_SKIPPED} ({e})");
                None
            }
        }
    }

    /// A throw-away cluster (never `$INGEST_TEST_POSTGRES_URL`'s server) that takes TCP
    /// connections only with TLS (`ssl = on`, `hostssl` lines only in `pg_hba.conf`), with
    /// the certificate chain `cert` and its key `key` (PEM files, copied into the cluster:
    /// the key `0600`, owned by the server's user). Its URL names `127.0.0.1` and no
    /// `sslmode`; [`PostgresServer::database`] goes through its Unix socket. `None` (said on
    /// stderr) when none can start.
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Option<Self> {
        match Self::launch(Some((cert, key))) {
            Ok(server) => Some(server),
            Err(e) => {
                eprintln!("{POSTGRES_SKIPPED} ({e})");
                None
            }
        }
    }

    fn launch(
        tls: Option<(&std::path::Path, &std::path::Path)>,
    ) -> std::result::Result<Self, String> {
        let bin = Self::binaries().ok_or("no /usr/lib/postgresql/*/bin/initdb")?;
        let dir = std::env::temp_dir().join(format!(
            "ingest-pg-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let user = root.then(|| "postgres".to_string());
        if root {
            let ok = std::process::Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err("running as root and there is no `postgres` user to run it as".into());
            }
        }
        let server = PostgresServer {
            base: String::new(),
            admin: None,
            cluster: Some((dir.clone(), bin.clone(), user)),
        };
        let data = dir.join("data");
        server.run(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-A".as_ref(),
                "trust".as_ref(),
                "-U".as_ref(),
                "ingest".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--locale=C".as_ref(),
                "--no-sync".as_ref(),
            ],
        )?;
        let port = free_ports(1).first().copied().ok_or("no free port")?;
        let mut server = server;
        if let Some((cert, key)) = tls {
            Self::take_tls_only(&data, cert, key, root)?;
            server.admin = Some(format!(
                "host={} port={port} user=ingest dbname=postgres",
                dir.display()
            ));
        }
        server.pg_start(&port.to_string())?;
        server.base = format!("postgres://ingest@127.0.0.1:{port}/postgres");
        Ok(server)
    }

    /// Configure the cluster in `data` to take TCP connections with TLS only (`cert`, `key`
    /// copied in), trusting every user as `initdb -A trust` did.
    fn take_tls_only(
        data: &std::path::Path,
        cert: &std::path::Path,
        key: &std::path::Path,
        root: bool,
    ) -> std::result::Result<(), String> {
        use std::io::Write as _;
        use std::os::unix::fs::PermissionsExt as _;
        let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
        std::fs::copy(cert, data.join("server.crt")).map_err(|e| io("server.crt", e))?;
        std::fs::copy(key, data.join("server.key")).map_err(|e| io("server.key", e))?;
        std::fs::set_permissions(
            data.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .map_err(|e| io("server.key", e))?;
        std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .and_then(|mut f| {
                f.write_all(
                    b"\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n",
                )
            })
            .map_err(|e| io("postgresql.conf", e))?;
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n",
        )
        .map_err(|e| io("pg_hba.conf", e))?;
        if root {
            let ok = std::process::Command::new("chown")
                .args(["postgres:postgres"])
                .arg(data.join("server.crt"))
                .arg(data.join("server.key"))
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err("cannot give the server's key to the postgres user".into());
            }
        }
        Ok(())
    }

    /// Run one of the server's programs (as its user when root).
    fn run(&self, program: &str, args: &[&std::ffi::OsStr]) -> std::result::Result<(), String> {
        let Some((_, bin, user)) = &self.cluster else {
            return Ok(());
        };
        let mut cmd = match user {
            Some(u) => {
                let mut c = std::process::Command::new("runuser");
                c.args(["-u", u, "--"]).arg(bin.join(program));
                c
            }
            None => std::process::Command::new(bin.join(program)),
        };
        let out = cmd
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("{program}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Stop the server this launched (fast shutdown: connections are cut), as an outage.
    pub fn stop(&self) -> std::result::Result<(), String> {
        let Some((dir, _, _)) = &self.cluster else {
            return Err("not launched here".into());
        };
        let data = dir.join("data");
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "fast".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        )
    }

    /// Start it again after [`PostgresServer::stop`] (same port, same data).
    pub fn restart(&self) -> std::result::Result<(), String> {
        if self.cluster.is_none() {
            return Err("not launched here".into());
        }
        let port = self
            .base
            .rsplit_once(':')
            .and_then(|(_, rest)| rest.split('/').next())
            .unwrap_or_default()
            .to_string();
        self.pg_start(&port)
    }

    /// `pg_ctl start` of the cluster this launched, on `port` (loopback; its socket in the
    /// cluster's folder), waiting until it accepts connections.
    fn pg_start(&self, port: &str) -> std::result::Result<(), String> {
        let Some((dir, _, _)) = &self.cluster else {
            return Err("not launched here".into());
        };
        let data = dir.join("data");
        let options = format!("-k {} -p {port} -h 127.0.0.1", dir.display());
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-o".as_ref(),
                options.as_ref(),
                "-l".as_ref(),
                dir.join("log").as_os_str(),
                "-w".as_ref(),
                "-t".as_ref(),
                "120".as_ref(),
                "start".as_ref(),
            ],
        )
    }

    /// A fresh database on the server, by its URL (`postgres://…/NAME`).
    #[allow(clippy::panic)] // a test helper
    pub fn database(&self, name: &str) -> String {
        let admin = self.admin.as_deref().unwrap_or(&self.base);
        let mut client = postgres::Client::connect(admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("connecting to the test server: {e}"));
        let name = format!(
            "{}_{}",
            name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        match self.base.rsplit_once('/') {
            Some((server, _)) => format!("{server}/{name}"),
            None => self.base.clone(),
        }
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        if let Some((dir, _, _)) = &self.cluster {
            let data = dir.join("data");
            let _ = self.run(
                "pg_ctl",
                &[
                    "-D".as_ref(),
                    data.as_os_str(),
                    "-m".as_ref(),
                    "immediate".as_ref(),
                    "stop".as_ref(),
                ],
            );
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Fill the catalog in `data_dir` with `n` generated entries of `scope` (files in folders
/// of 1 000, each its own content), saved every 100 000: a scale benchmark's catalog.
pub fn fill_catalog(
    data_dir: &std::path::Path,
    scope: &extractors::Scope,
    n: u64,
) -> crate::error::Result<()> {
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

/// The TLS version of a connection of `catalog`'s pool as the server sees it
/// (`pg_stat_ssl` of the connection's own backend), or `None` for a connection without TLS.
pub fn catalog_tls_version(catalog: &PgCatalog) -> crate::error::Result<Option<String>> {
    catalog.try_call(|c| {
        let row = c.query_one(
            "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )?;
        let ssl: bool = row.try_get(0)?;
        Ok(if ssl { row.try_get(1)? } else { None })
    })
}

/// A content record for catalog checks: an index of `hash` and a pack of one text object.
#[allow(clippy::unwrap_used)] // a test helper
fn content_record(hash: &str, text: &str) -> crate::objects::ContentRecord {
    let index: extractors::FileContentIndex = serde_json::from_value(serde_json::json!({
        "id": hash, "file_name": "f.txt", "mime_type": "text/plain", "container_path": "/f.txt",
        "total_objects": 1, "total_size": text.len(), "structure": {}, "object_summary": [],
        "extracted_at": 0, "status": "indexed"
    }))
    .unwrap();
    let object: extractors::ContentObject = serde_json::from_value(serde_json::json!({
        "id": format!("{hash}-0"), "file_id": hash, "content_type": "text", "data": text,
        "context_ref": {"container_path": "/f.txt", "location": "/f.txt"}, "sequence": 0
    }))
    .unwrap();
    crate::objects::ContentRecord {
        index,
        pack: crate::objects::pack(&[object]).unwrap(),
    }
}

/// What every [`Catalog`] implementation must do alike: run on a fresh, empty catalog
/// (the embedded one and PostgreSQL run it; see tests/integration/catalogs.rs). Panics on
/// the first difference.
#[allow(clippy::unwrap_used, clippy::too_many_lines, clippy::indexing_slicing)] // a test helper
pub fn catalog_conformance(c: &dyn Catalog) {
    use crate::MAX_HOLDERS;
    let entry = |locator: &str, hash: &str, parent: Option<&str>| {
        CatalogEntry::indexed(locator, parent.map(str::to_string), hash, 1, 0, 2)
    };
    let (a, b) = (extractors::Scope::user("a"), extractors::Scope::user("b"));
    assert!(c.is_empty() && c.scopes().is_empty());

    // Round trips, replacement, isolation between scopes.
    let mut e = entry("/d/x.txt", "h1", None)
        .with_mime(Some("text/plain".into()))
        .with_tags(vec!["k=v".into(), "z=1".into()]);
    e.shadowed = vec![crate::ShadowedMember {
        locator: "/d/x.txt!/s".into(),
        reason: "hidden".into(),
    }];
    c.put(&a, e.clone());
    assert_eq!(c.get(&a, "/d/x.txt"), Some(e.clone()));
    assert_eq!(
        c.get(&b, "/d/x.txt"),
        None,
        "another scope's entry is missing"
    );
    let mut e2 = e.clone();
    e2.chunks = 7;
    c.put(&a, e2.clone());
    assert_eq!(c.get(&a, "/d/x.txt"), Some(e2));
    assert_eq!(c.len_of(&a), 1);
    assert_eq!(c.len_of(&b), 0);
    assert_eq!(c.scopes(), vec![a.clone()]);
    assert!(c.remove(&b, "/d/x.txt").is_none());
    assert!(c.remove(&a, "/d/x.txt").is_some());
    assert!(c.scopes().is_empty(), "a scope goes with its last entry");
    assert!(c.is_empty());

    // Holders: at most MAX_HOLDERS, ranked whatever the order, every tag.
    for n in (0..MAX_HOLDERS + 10).rev() {
        let e = CatalogEntry::indexed(
            format!("/z/bundle.zip!/copy-{n:03}.txt"),
            None,
            "h",
            1,
            1,
            1,
        )
        .with_tags(vec![format!("n={n:03}")]);
        c.put(&a, e);
    }
    c.put(&a, entry("/z/zz-original.txt", "h", None));
    let h = c.holders(&a, "h");
    assert_eq!(h.locators.len(), MAX_HOLDERS);
    assert_eq!(
        h.locators[0], "/z/zz-original.txt",
        "a file given directly first"
    );
    assert_eq!(h.locators[1], "/z/bundle.zip!/copy-000.txt");
    assert_eq!(h.tags.len(), MAX_HOLDERS + 10);
    assert_eq!(c.locators_with_hash(&a, "h").len(), MAX_HOLDERS + 11);
    assert!(c.holders(&b, "h").locators.is_empty());

    // Contents under a prefix that other files hold too: `h` (in /z only) and `h2` (in /y
    // and /z), not a content held once, not another scope's; at most `max`, in hash order.
    let extra = [
        ("/z/single.txt", "h1"),
        ("/y/one.txt", "h2"),
        ("/z/two.txt", "h2"),
    ];
    for (loc, hash) in extra {
        c.put(&a, entry(loc, hash, None));
    }
    assert_eq!(c.repeated_under(&a, "/z", 10), ["h", "h2"]);
    assert_eq!(c.repeated_under(&a, "/z/bundle.zip!/", 10), ["h"]);
    assert_eq!(c.repeated_under(&a, "/y", 10), ["h2"]);
    assert_eq!(c.repeated_under(&a, "/z", 1), ["h"]);
    assert!(c.repeated_under(&a, "/z/single", 10).is_empty());
    assert!(c.repeated_under(&a, "/z", 0).is_empty());
    assert!(c.repeated_under(&b, "/z", 10).is_empty());
    for (loc, _) in extra {
        c.remove(&a, loc);
    }

    // Members, prefixes (a neighbour whose name continues the archive's), unicode names.
    for (loc, parent) in [
        ("/m/a.zip", None),
        ("/m/a.zip!/x.txt", Some("/m/a.zip")),
        ("/m/a.zip!/ü/ÿ.txt", Some("/m/a.zip")),
        ("/m/a.zip!/\u{10FFFF}.txt", Some("/m/a.zip")),
        ("/m/a.zipper", None),
        ("/m/a.zip0", None),
    ] {
        c.put(&b, entry(loc, "hm", parent));
    }
    c.put(
        &b,
        CatalogEntry::without_content(
            "/m/a.zip!/bad.bin",
            Some("/m/a.zip".into()),
            None,
            EntryStatus::Failed,
            "broken",
        ),
    );
    let (names, count, unread) = c.member_names(&b, "/m/a.zip", 3);
    assert_eq!(names, ["bad.bin", "x.txt", "ü/ÿ.txt"]);
    assert_eq!((count, unread), (4, 1));
    assert_eq!(c.members_of(&b, "/m/a.zip").len(), 4);
    assert_eq!(c.under(&b, "/m/a.zip!/").len(), 4);
    assert_eq!(c.under(&b, "/m/a.zip").len(), 7);
    assert!(c.holds(&b, "/m/a.zip") && !c.holds(&b, "/m/a.zi") && !c.holds(&a, "/m/a.zip"));
    let locs: Vec<String> = c.entries(&b).into_iter().map(|e| e.locator).collect();
    let mut sorted = locs.clone();
    sorted.sort();
    assert_eq!(locs, sorted, "entries in locator (byte) order");

    // Cards: wanted, stored only if unchanged, missing again.
    let bad = c.get(&b, "/m/a.zip!/bad.bin").unwrap();
    assert_eq!(c.wanting_cards(&b), vec![bad.clone()]);
    let mut changed = bad.clone();
    changed.reason = Some("other".into());
    assert!(!c.set_card_stored(&b, &changed));
    assert!(c.set_card_stored(&b, &bad));
    assert!(!c.set_card_stored(&b, &bad), "stored once");
    assert!(c.wanting_cards(&b).is_empty());
    c.set_card_missing(&b, "/m/a.zip!/bad.bin");
    assert_eq!(c.wanting_cards(&b).len(), 1);

    // Forgetting a member drops its archive too.
    c.forget(&b, "/m/a.zip!/x.txt");
    assert!(c.get(&b, "/m/a.zip").is_none() && c.get(&b, "/m/a.zip!/x.txt").is_none());

    // Top-level entries under a folder.
    let c_scope = extractors::Scope::user("c");
    for (loc, parent) in [
        ("/in/a.txt", None),
        ("/in/sub/b.txt", None),
        ("/in/c.zip", None),
        ("/in/c.zip!/m.txt", Some("/in/c.zip")),
        ("/inbox/d.txt", None),
        ("/in!/e.txt", None),
    ] {
        let loc = match parent {
            None => extractors::Locator::root(loc).to_string(),
            Some(_) => loc.to_string(),
        };
        c.put(&c_scope, entry(&loc, "ht", parent));
    }
    let under = |root: &str| -> Vec<String> {
        c.top_level_under(&c_scope, root)
            .into_iter()
            .map(|e| e.locator)
            .collect()
    };
    assert_eq!(under("/in"), ["/in/a.txt", "/in/c.zip", "/in/sub/b.txt"]);
    assert_eq!(under("/in/"), under("/in"));
    assert_eq!(under("/in!"), ["/in%21/e.txt"]);
    assert!(under("/nowhere").is_empty());
    let top: usize = c.top_level().iter().filter(|(s, _)| *s == c_scope).count();
    assert_eq!(top, 5);

    // Totals.
    let st = c.stats(Some(&c_scope));
    assert_eq!(
        (st.files, st.indexed, st.distinct_contents, st.chunks),
        (6, 6, 1, 2)
    );
    assert_eq!(
        c.stats(Some(&extractors::Scope::user("nobody"))),
        crate::CatalogStats::default()
    );
    assert!(c.stats(None).files >= 6 + MAX_HOLDERS as u64);

    // Content: written with its first holder, shared by scopes, dropped with the last.
    let record = content_record("hc", "the lighthouse keeper's log");
    assert!(c.content_index("hc").unwrap().is_none());
    assert!(c.pack("hc").unwrap().is_none());
    assert!(c
        .write_content_and_put(&a, "hc", &record, entry("/c1.txt", "hc", None))
        .unwrap()
        .is_none());
    let old = c
        .write_content_and_put(&b, "hc", &record, entry("/c2.txt", "hc", None))
        .unwrap();
    assert!(old.is_none());
    assert_eq!(c.content_index("hc").unwrap().unwrap().id, "hc");
    let objects = c
        .pack("hc")
        .unwrap()
        .unwrap()
        .content_objects("hc", "/c1.txt")
        .unwrap();
    assert_eq!(objects[0].data, "the lighthouse keeper's log");
    assert!(c.held_anywhere("hc"));
    c.remove(&a, "/c1.txt");
    assert!(!c.drop_content_index("hc").unwrap(), "held by scope b");
    assert!(c.content_index("hc").unwrap().is_some());
    c.remove(&b, "/c2.txt");
    assert!(c.drop_content_index("hc").unwrap());
    assert!(c.content_index("hc").unwrap().is_none() && c.pack("hc").unwrap().is_none());
    assert!(!c.drop_content_index("hc").unwrap(), "already gone");
    // The sweep drops contents nobody holds.
    c.write_content_and_put(
        &a,
        "hs",
        &content_record("hs", "s"),
        entry("/s.txt", "hs", None),
    )
    .unwrap();
    c.remove(&a, "/s.txt");
    assert!(c.drop_unheld_content_indexes().unwrap() >= 1);
    assert!(c.content_index("hs").unwrap().is_none());

    // Records: the first value stands.
    assert_eq!(c.record_once("model", "bf16").unwrap(), "bf16");
    assert_eq!(c.record_once("model", "e5").unwrap(), "bf16");
    assert_eq!(c.record_once("store", "qdrant://x").unwrap(), "qdrant://x");

    // The last run, and a save that reports nothing went wrong.
    assert!(c.last_run().is_none());
    let run = crate::LastRun {
        finished_at: 42,
        summary: crate::report::Summary::default(),
    };
    c.set_last_run(run.clone());
    assert_eq!(c.last_run(), Some(run));
    c.save().unwrap();
}
