//! Remote sources against real servers on loopback: an S3 bucket served by moto's S3 server
//! (`make deps` installs it into `.venv-servers/`; without it these tests say SKIPPED).
//! A source of 500 objects is synced, then 10 are changed, 5 deleted and 5 added: the second
//! sync downloads exactly the 15 changed or new objects (counted in the server's access log),
//! and the index equals a local ingest of the same tree; a sync killed mid-way converges on
//! the next one.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// moto's S3 server on a loopback port, its access log in a file.
struct S3Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl S3Server {
    /// Start it, or `None` (after saying SKIPPED) when moto is not installed.
    fn start(sb: &Sandbox) -> Option<S3Server> {
        let local = repo_dir().join(".venv-servers/bin/moto_server");
        let program = if local.exists() {
            local
        } else {
            match which("moto_server") {
                Some(p) => p,
                None => {
                    eprintln!("SKIPPED: moto_server not installed (make deps installs it)");
                    return None;
                }
            }
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = sb.path("moto.log");
        let child = Command::new(program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start moto_server");
        let server = S3Server { child, port, log };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "moto did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(server)
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// moto checks no signatures, but an unsigned request is anonymous (refused to
    /// overwrite or delete an object): a request names its key id in the header.
    const AUTHORIZATION: &str = "AWS4-HMAC-SHA256 Credential=test-key-id/20260301/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0";

    fn put(&self, path: &str, body: &[u8]) {
        let r = ureq::put(&self.url(path))
            .header("Authorization", Self::AUTHORIZATION)
            .send(body)
            .expect("PUT");
        assert!(r.status().is_success(), "PUT {path}: {}", r.status());
    }

    fn delete(&self, path: &str) {
        let r = ureq::delete(&self.url(path))
            .header("Authorization", Self::AUTHORIZATION)
            .call()
            .expect("DELETE");
        assert!(r.status().is_success(), "DELETE {path}: {}", r.status());
    }

    /// Object downloads logged so far: `GET /bucket/key` requests (not listings).
    fn downloads(&self, bucket: &str) -> Vec<String> {
        let mut text = String::new();
        std::fs::File::open(&self.log)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let prefix = format!("\"GET /{bucket}/");
        text.lines()
            .filter_map(|l| {
                let at = l.find(&prefix)?;
                let rest = l.get(at + 5..)?;
                let path = rest.split_whitespace().next()?;
                (!path.contains('?')).then(|| path.to_string())
            })
            .collect()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| PathBuf::from(d).join(program))
        .find(|p| p.exists())
}

const BUCKET: &str = "harbour";
const OBJECTS: u64 = 500;

/// The tree of the source: `docs/NNN.txt` files of their own text, and one ZIP.
fn tree(version_of: impl Fn(u64) -> u64) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for i in 0..OBJECTS - 1 {
        let mut rng = Lcg(i);
        let (_, text) = document(i, version_of(i), &mut rng);
        files.insert(format!("docs/part-{}/{i:03}.txt", i % 7), text.into_bytes());
    }
    let zip = std::fs::read(fixtures().join("archives/bundle.zip")).unwrap();
    files.insert("docs/archive/bundle.zip".into(), zip);
    files
}

/// `ingest` against the server, with the S3 credentials in the environment.
fn ingest_remote(
    sb: &Sandbox,
    server: &S3Server,
    source: &str,
    extra_env: &[(&str, &str)],
) -> (Vec<Value>, Value, Option<i32>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ingest"));
    cmd.args(["--json", source, "--data-dir"])
        .arg(sb.data_dir())
        .env(
            "AWS_ENDPOINT_URL",
            format!("http://127.0.0.1:{}", server.port),
        )
        .env("AWS_ACCESS_KEY_ID", "test-key-id")
        .env("AWS_SECRET_ACCESS_KEY", "test-secret-never-shown")
        .env("AWS_REGION", "us-east-1");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("test-secret-never-shown"), "{stderr}");
    let mut lines = json_lines(&out);
    let summary = match lines.last() {
        Some(l) if l.get("summary").is_some() => lines.pop().unwrap()["summary"].clone(),
        _ => Value::Null,
    };
    for l in &lines {
        assert!(!l.to_string().contains("test-secret"), "{l}");
    }
    (lines, summary, out.status.code())
}

/// Each file of the index (archive members included) by its locator below the source's
/// root: its status, chunks and size (`ingest files --json`).
fn indexed_files(sb: &Sandbox, root: &str) -> BTreeMap<String, (String, Value, Value)> {
    let out = sb.run(&["files", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    files
        .iter()
        .filter_map(|f| {
            let rel = f["locator"].as_str()?.strip_prefix(root)?.to_string();
            let status = f["status"].as_str().unwrap_or_default().to_string();
            Some((rel, (status, f["chunks"].clone(), f["bytes"].clone())))
        })
        .collect()
}

#[test]
fn an_s3_source_syncs_only_what_changed_and_equals_a_local_ingest() {
    let sb = Sandbox::new();
    let Some(server) = S3Server::start(&sb) else {
        return;
    };
    server.put(BUCKET, b"");
    let first = tree(|_| 1);
    for (key, body) in &first {
        server.put(&format!("{BUCKET}/{key}"), body);
    }
    let source = format!("s3://{BUCKET}/docs");
    let (lines, summary, code) = ingest_remote(&sb, &server, &source, &[]);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    let top: Vec<&Value> = lines
        .iter()
        .filter(|l| !l["locator"].as_str().unwrap().contains("!/"))
        .collect();
    assert_eq!(top.len() as u64, OBJECTS, "one line per object");
    assert!(lines.iter().any(|l| l["locator"]
        == format!("{source}/archive/bundle.zip!/docs/inner.tar.gz!/notes/lighthouse.md")));
    assert_eq!(server.downloads(BUCKET).len() as u64, OBJECTS);

    // 10 changed, 5 deleted, 5 added.
    let changed: Vec<u64> = (0..10).map(|i| i * 37 % 499).collect();
    let deleted: Vec<u64> = (0..5).map(|i| 400 + i * 11).collect();
    let second = tree(|i| if changed.contains(&i) { 2 } else { 1 });
    for i in &changed {
        let key = format!("docs/part-{}/{i:03}.txt", i % 7);
        server.put(&format!("{BUCKET}/{key}"), &second[&key]);
    }
    let mut expected = second.clone();
    for i in &deleted {
        let key = format!("docs/part-{}/{i:03}.txt", i % 7);
        server.delete(&format!("{BUCKET}/{key}"));
        expected.remove(&key);
    }
    for n in 0..5u64 {
        let key = format!("docs/added/new-{n}.txt");
        let mut rng = Lcg(1000 + n);
        let body = document(1000 + n, 1, &mut rng).1.into_bytes();
        server.put(&format!("{BUCKET}/{key}"), &body);
        expected.insert(key, body);
    }
    let before = server.downloads(BUCKET).len();
    let (lines, summary, code) = ingest_remote(&sb, &server, &source, &[]);
    assert_eq!(code, Some(0), "{summary}");
    let downloaded = server.downloads(BUCKET);
    assert_eq!(
        downloaded.len() - before,
        15,
        "only the changed and new objects: {:?}",
        &downloaded[before..]
    );
    assert_eq!(summary["removed"], 5, "{summary}");
    let status_of = |key: &str| {
        lines
            .iter()
            .find(|l| l["locator"] == format!("{}/{}", source, key.trim_start_matches("docs/")))
            .map(|l| l["status"].as_str().unwrap().to_string())
    };
    assert_eq!(status_of("docs/part-0/000.txt").as_deref(), Some("indexed"));
    assert_eq!(
        status_of("docs/part-1/001.txt").as_deref(),
        Some("unchanged")
    );

    // The same tree ingested from a local folder gives the same files, hashes and chunks.
    let local = Sandbox::new();
    for (key, body) in &expected {
        local.write(key, body);
    }
    let (_, local_summary, code) = local.ingest(&[&local.path("docs")]);
    assert_eq!(code, 0, "{local_summary}");
    let remote_files = indexed_files(&sb, &format!("{source}/"));
    let local_root = format!(
        "{}/",
        std::fs::canonicalize(local.path("docs")).unwrap().display()
    );
    let local_files = indexed_files(&local, &local_root);
    assert_eq!(remote_files.len(), local_files.len());
    assert_eq!(remote_files, local_files);
}

#[test]
fn an_s3_sync_killed_while_downloading_converges_on_the_next() {
    let sb = Sandbox::new();
    let Some(server) = S3Server::start(&sb) else {
        return;
    };
    server.put(BUCKET, b"");
    let files = tree(|_| 1);
    for (key, body) in files.iter().take(40) {
        server.put(&format!("{BUCKET}/{key}"), body);
    }
    let source = format!("s3://{BUCKET}/docs");
    let (_, _, code) = ingest_remote(
        &sb,
        &server,
        &source,
        &[("INGEST_FAILPOINTS", "sources.download=25")],
    );
    assert_eq!(code, None, "killed by the failpoint");
    let (lines, summary, code) = ingest_remote(&sb, &server, &source, &[]);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    let top = lines
        .iter()
        .filter(|l| !l["locator"].as_str().unwrap().contains("!/"))
        .count();
    assert_eq!(top, 40, "{lines:#?}");
    // A third sync finds nothing to download.
    let before = server.downloads(BUCKET).len();
    let (_, summary, _) = ingest_remote(&sb, &server, &source, &[]);
    assert_eq!(server.downloads(BUCKET).len(), before, "{summary}");
    assert_eq!(summary["indexed"], 0, "{summary}");
    assert_eq!(summary["unchanged"], summary["files"], "{summary}");
}
