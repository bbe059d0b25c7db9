//! Remote sources against real servers on loopback: an S3 bucket served by moto's S3 server
//! (`make deps` installs it into `.venv-servers/`), a WebDAV folder served by Apache with
//! `mod_dav` (Debian `apache2`), a folder over SFTP (OpenSSH's `sshd`) and over FTP
//! (`vsftpd`), all installed by `make deps`; without one, its tests say SKIPPED.
//! A source of 150 objects is synced, then 10 are changed, 5 deleted and 5 added: the second
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

/// Which server a test syncs from.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    S3,
    WebDav,
    Sftp,
    Ftp,
}

/// A storage server on a loopback port, its access log in a file: moto's S3 server, Apache
/// with `mod_dav` or OpenSSH's `sshd` (its SFTP server logging each request) serving a
/// folder of the sandbox.
struct Server {
    kind: Kind,
    child: Child,
    port: u16,
    log: PathBuf,
    /// The folder served (WebDAV, SFTP), where `docs/` is.
    folder: PathBuf,
}

/// A free loopback port (bound, then let go for the server to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// Start one, or `None` (after saying SKIPPED) when it is not installed.
    fn start(kind: Kind, sb: &Sandbox) -> Option<Server> {
        // A port let go by `free_port` may be handed to a concurrent test's server too: the
        // one that loses the race exits (address in use) while the port answers, so a server
        // is kept only if it is still running once its port answers.
        for _ in 0..10 {
            let mut server = Self::start_on(kind, sb, free_port())?;
            std::thread::sleep(Duration::from_millis(500));
            if matches!(server.child.try_wait(), Ok(None)) {
                if kind == Kind::S3 {
                    server.request("PUT", BUCKET, b"");
                }
                return Some(server);
            }
        }
        panic!("no free port for the server after 10 tries");
    }

    fn start_on(kind: Kind, sb: &Sandbox, port: u16) -> Option<Server> {
        let mut server = match kind {
            Kind::S3 => {
                let local = repo_dir().join(".venv-servers/bin/moto_server");
                let Some(program) = Some(local)
                    .filter(|p| p.exists())
                    .or_else(|| which("moto_server"))
                else {
                    eprintln!("SKIPPED: moto_server not installed (make deps installs it)");
                    return None;
                };
                let log = sb.path("moto.log");
                let child = Command::new(program)
                    .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                    .stdout(Stdio::null())
                    .stderr(std::fs::File::create(&log).unwrap())
                    .spawn()
                    .expect("start moto_server");
                Server {
                    kind,
                    child,
                    port,
                    log,
                    folder: PathBuf::new(),
                }
            }
            Kind::Sftp => {
                let sshd = PathBuf::from("/usr/sbin/sshd");
                let sftp_server = PathBuf::from("/usr/lib/openssh/sftp-server");
                if !sshd.exists() || !sftp_server.exists() || which("ssh-keygen").is_none() {
                    eprintln!("SKIPPED: OpenSSH's sshd is not installed (make deps installs it)");
                    return None;
                }
                if !is_root() {
                    eprintln!("SKIPPED: sshd runs here as root only");
                    return None;
                }
                let dir = sb.path("sftp");
                let folder = dir.join("root");
                std::fs::create_dir_all(&folder).unwrap();
                std::fs::create_dir_all("/run/sshd").unwrap();
                for key in ["host", "user"] {
                    let out = Command::new("ssh-keygen")
                        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                        .arg(dir.join(key))
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "{out:?}");
                }
                std::fs::copy(dir.join("user.pub"), dir.join("authorized")).unwrap();
                // The SFTP server, logging every request (`open … flags READ` is a download).
                let log = dir.join("sftp.log");
                let logged = dir.join("sftp-logged");
                std::fs::write(
                    &logged,
                    format!(
                        "#!/bin/sh\nexec {} -e -l INFO 2>>{}\n",
                        sftp_server.display(),
                        log.display()
                    ),
                )
                .unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&logged, std::fs::Permissions::from_mode(0o755)).unwrap();
                std::fs::write(&log, b"").unwrap();
                let conf = dir.join("sshd.conf");
                std::fs::write(
                    &conf,
                    format!(
                        "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host\n\
                         AuthorizedKeysFile {d}/authorized\nPermitRootLogin prohibit-password\n\
                         PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                         StrictModes no\nPidFile {d}/sshd.pid\nSubsystem sftp {d}/sftp-logged\n",
                        d = dir.display()
                    ),
                )
                .unwrap();
                let child = Command::new(sshd)
                    .args(["-D", "-E"])
                    .arg(dir.join("sshd.log"))
                    .arg("-f")
                    .arg(&conf)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start sshd");
                Server {
                    kind,
                    child,
                    port,
                    log,
                    folder,
                }
            }
            Kind::Ftp => {
                let vsftpd = PathBuf::from("/usr/sbin/vsftpd");
                if !vsftpd.exists() {
                    eprintln!("SKIPPED: vsftpd is not installed (make deps installs it)");
                    return None;
                }
                if !is_root() {
                    eprintln!("SKIPPED: vsftpd runs here as root only");
                    return None;
                }
                let dir = sb.path("ftp");
                let folder = dir.join("root");
                for d in [&folder, &dir.join("empty")] {
                    std::fs::create_dir_all(d).unwrap();
                }
                // Anonymous, read-only, chrooted into the folder; every transfer logged
                // (`OK DOWNLOAD: … "/docs/…"`).
                let log = dir.join("vsftpd.log");
                let conf = dir.join("vsftpd.conf");
                std::fs::write(
                    &conf,
                    format!(
                        "listen=YES\nlisten_ipv6=NO\nlisten_address=127.0.0.1\nlisten_port={port}\n\
                         background=NO\nanonymous_enable=YES\nno_anon_password=YES\n\
                         anon_root={root}\nlocal_enable=NO\nwrite_enable=NO\npasv_enable=YES\n\
                         pasv_address=127.0.0.1\nsecure_chroot_dir={empty}\nxferlog_enable=YES\n\
                         xferlog_std_format=NO\nvsftpd_log_file={log}\nseccomp_sandbox=NO\n",
                        root = folder.display(),
                        empty = dir.join("empty").display(),
                        log = log.display(),
                    ),
                )
                .unwrap();
                std::fs::write(&log, b"").unwrap();
                let child = Command::new(vsftpd)
                    .arg(&conf)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start vsftpd");
                Server {
                    kind,
                    child,
                    port,
                    log,
                    folder,
                }
            }
            Kind::WebDav => {
                let Some(apache) = which("apache2") else {
                    eprintln!("SKIPPED: apache2 not installed (make deps installs it)");
                    return None;
                };
                let modules = PathBuf::from("/usr/lib/apache2/modules");
                if !modules.join("mod_dav_fs.so").exists() {
                    eprintln!("SKIPPED: Apache's mod_dav_fs is not installed");
                    return None;
                }
                // Apache's workers run as www-data: its folders are theirs.
                let Some((uid, gid)) = www_data() else {
                    eprintln!("SKIPPED: no www-data user for Apache's workers");
                    return None;
                };
                let root = sb.path("dav/root");
                let run = sb.path("dav/run");
                for d in [&root, &run] {
                    std::fs::create_dir_all(d).unwrap();
                }
                for d in [
                    sb.dir.path().to_path_buf(),
                    sb.path("dav"),
                    root.clone(),
                    run.clone(),
                ] {
                    if let Err(e) = std::os::unix::fs::chown(&d, Some(uid), Some(gid)) {
                        eprintln!("SKIPPED: cannot give Apache's workers their folders: {e}");
                        return None;
                    }
                }
                let log = run.join("access.log");
                let conf = sb.path("dav/httpd.conf");
                std::fs::write(
                    &conf,
                    format!(
                        "ServerRoot /usr/lib/apache2\nServerName 127.0.0.1\nListen 127.0.0.1:{port}\n\
                         PidFile {run}/httpd.pid\nUser www-data\nGroup www-data\n\
                         ErrorLog {run}/error.log\nLogFormat \"%r %>s\" plain\nCustomLog {log} plain\n\
                         LoadModule mpm_event_module modules/mod_mpm_event.so\n\
                         LoadModule authz_core_module modules/mod_authz_core.so\n\
                         LoadModule dav_module modules/mod_dav.so\n\
                         LoadModule dav_fs_module modules/mod_dav_fs.so\n\
                         DavLockDB {run}/davlock\nDocumentRoot {root}\n\
                         <Directory {root}>\n  Dav On\n  Require all granted\n</Directory>\n",
                        run = run.display(),
                        log = log.display(),
                        root = root.display(),
                    ),
                )
                .unwrap();
                let child = Command::new(apache)
                    .args(["-f", conf.to_str().unwrap(), "-DFOREGROUND"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start apache2");
                Server {
                    kind,
                    child,
                    port,
                    log,
                    folder: root,
                }
            }
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if matches!(server.child.try_wait(), Ok(Some(_))) {
                break; // it could not start (its port taken): the caller tries another
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the server did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(server)
    }

    /// The source URL of the folder `docs` on this server.
    fn source(&self) -> String {
        match self.kind {
            Kind::S3 => format!("s3://{BUCKET}/docs"),
            Kind::WebDav => format!("webdav://127.0.0.1:{}/docs", self.port),
            Kind::Ftp => format!("ftp://127.0.0.1:{}/docs", self.port),
            Kind::Sftp => format!(
                "sftp://root@127.0.0.1:{}{}/docs",
                self.port,
                self.folder.display()
            ),
        }
    }

    /// The locator root `source()` gives (no user in it).
    fn locator_root(&self) -> String {
        self.source().replacen("root@", "", 1)
    }

    /// The path of `key` (`docs/…`) in requests.
    fn path(&self, key: &str) -> String {
        match self.kind {
            Kind::S3 => format!("{BUCKET}/{key}"),
            Kind::WebDav | Kind::Sftp | Kind::Ftp => key.to_string(),
        }
    }

    /// moto checks no signatures, but an unsigned request is anonymous (refused to
    /// overwrite or delete an object): a request names its key id in the header.
    const AUTHORIZATION: &str = "AWS4-HMAC-SHA256 Credential=test-key-id/20260301/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0";

    fn request(&self, method: &str, path: &str, body: &[u8]) {
        let url = format!("http://127.0.0.1:{}/{path}", self.port);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .allow_non_standard_methods(true)
            .build()
            .into();
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Authorization", Self::AUTHORIZATION)
            .body(body.to_vec())
            .unwrap();
        let r = agent.run(request).expect("request");
        assert!(r.status().is_success(), "{method} {path}: {}", r.status());
    }

    fn put(&self, key: &str, body: &[u8]) {
        if matches!(self.kind, Kind::Sftp | Kind::Ftp) {
            let path = self.folder.join(key);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
            return;
        }
        if self.kind == Kind::WebDav {
            // Each folder first (MKCOL answers 405 for one that exists).
            let mut folder = String::new();
            for part in key
                .split('/')
                .rev()
                .skip(1)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                folder.push_str(part);
                folder.push('/');
                let url = format!("http://127.0.0.1:{}/{folder}", self.port);
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .allow_non_standard_methods(true)
                    .build()
                    .into();
                let mkcol = ureq::http::Request::builder()
                    .method("MKCOL")
                    .uri(&url)
                    .body(Vec::new())
                    .unwrap();
                agent.run(mkcol).expect("MKCOL");
            }
        }
        self.request("PUT", &self.path(key), body);
    }

    fn delete(&self, key: &str) {
        match self.kind {
            Kind::Sftp | Kind::Ftp => std::fs::remove_file(self.folder.join(key)).unwrap(),
            _ => self.request("DELETE", &self.path(key), b""),
        }
    }

    /// Object downloads logged so far: `GET` requests of objects (not listings).
    fn downloads(&self) -> Vec<String> {
        let mut text = String::new();
        std::fs::File::open(&self.log)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        if self.kind == Kind::Sftp {
            return text
                .lines()
                .filter(|l| l.starts_with("open ") && l.contains(" flags READ"))
                .map(str::to_string)
                .collect();
        }
        if self.kind == Kind::Ftp {
            return text
                .lines()
                .filter(|l| l.contains("OK DOWNLOAD"))
                .map(str::to_string)
                .collect();
        }
        text.lines()
            .filter_map(|l| {
                let at = l.find("GET /")?;
                let path = l.get(at + 4..)?.split_whitespace().next()?;
                (!path.contains('?') && !path.ends_with('/')).then(|| path.to_string())
            })
            .collect()
    }

    /// The environment `ingest` reads the server's credentials from.
    fn env(&self) -> Vec<(&'static str, String)> {
        match self.kind {
            Kind::S3 => vec![
                (
                    "AWS_ENDPOINT_URL",
                    format!("http://127.0.0.1:{}", self.port),
                ),
                ("AWS_ACCESS_KEY_ID", "test-key-id".into()),
                ("AWS_SECRET_ACCESS_KEY", SECRET.into()),
                ("AWS_REGION", "us-east-1".into()),
            ],
            Kind::Ftp => vec![
                ("INGEST_FTP_USER", "anonymous".into()),
                ("INGEST_FTP_PASSWORD", SECRET.into()),
            ],
            Kind::WebDav => vec![
                ("INGEST_WEBDAV_USER", "crew".into()),
                ("INGEST_WEBDAV_PASSWORD", SECRET.into()),
            ],
            Kind::Sftp => vec![
                (
                    "INGEST_SFTP_KEY",
                    self.folder
                        .parent()
                        .unwrap()
                        .join("user")
                        .display()
                        .to_string(),
                ),
                ("INGEST_SFTP_KNOWN_HOSTS", "accept".into()),
            ],
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM first: Apache stops its worker processes itself (a SIGKILL of the parent
        // left them running); whatever has not ended in 10 s is killed.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let ended = wait_for(Duration::from_secs(10), || {
            matches!(self.child.try_wait(), Ok(Some(_)))
        });
        if ended.is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The secret every test gives: never in a ledger line or the log.
const SECRET: &str = "test-secret-never-shown";

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Uid:"))?;
            line.split_whitespace().nth(1).map(|uid| uid == "0")
        })
        .unwrap_or(false)
}

/// The uid and gid of `www-data`.
fn www_data() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    let line = passwd.lines().find(|l| l.starts_with("www-data:"))?;
    let mut f = line.split(':').skip(2);
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .chain(["/usr/sbin", "/usr/bin"])
        .map(|d| PathBuf::from(d).join(program))
        .find(|p| p.exists())
}

const BUCKET: &str = "harbour";
/// Enough objects for folders, an archive and a sync's changes among unchanged ones; each is
/// embedded twice per test (the source, then the same tree from a local folder).
const OBJECTS: u64 = 150;

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

/// `ingest --json SOURCE` with the server's credentials in the environment: the lines, the
/// summary (null when killed) and the exit code. The secret appears in no line and no log.
fn ingest_remote(
    sb: &Sandbox,
    server: &Server,
    extra_env: &[(&str, &str)],
) -> (Vec<Value>, Value, Option<i32>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ingest"));
    cmd.args(["--json", &server.source(), "--data-dir"])
        .arg(sb.data_dir())
        .env("RUST_LOG", "debug");
    for (k, v) in server.env() {
        cmd.env(k, v);
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains(SECRET), "the log shows the secret");
    let mut lines = json_lines(&out);
    let summary = match lines.last() {
        Some(l) if l.get("summary").is_some() => lines.pop().unwrap()["summary"].clone(),
        _ => Value::Null,
    };
    for l in &lines {
        assert!(!l.to_string().contains(SECRET), "{l}");
    }
    (lines, summary, out.status.code())
}

/// Each file of the index (archive members included) by its locator below the source's
/// root: its status, chunks and size (`ingest files --json`).
fn indexed_files(sb: &Sandbox, root: &str) -> BTreeMap<String, (String, Value, Value)> {
    let out = sb.run(&["files", "--json"]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
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

/// 150 objects synced; 10 changed, 5 deleted, 5 added; synced again: exactly 15 downloads
/// at the server, 5 removed, and the index equal to a local ingest of the same tree.
fn syncs_only_what_changed_and_equals_a_local_ingest(kind: Kind) {
    let sb = Sandbox::new();
    let Some(server) = Server::start(kind, &sb) else {
        return;
    };
    let first = tree(|_| 1);
    for (key, body) in &first {
        server.put(key, body);
    }
    let source = server.locator_root();
    let (lines, summary, code) = ingest_remote(&sb, &server, &[]);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    let top: Vec<&Value> = lines
        .iter()
        .filter(|l| !l["locator"].as_str().unwrap().contains("!/"))
        .collect();
    assert_eq!(
        top.len() as u64,
        OBJECTS,
        "one line per object: {summary} {:?}",
        top.iter()
            .map(|l| (&l["locator"], &l["status"]))
            .collect::<Vec<_>>()
    );
    let member = format!("{source}/archive/bundle.zip!/docs/inner.tar.gz!/notes/lighthouse.md");
    assert!(
        lines.iter().any(|l| l["locator"] == member.as_str()),
        "{member}"
    );
    assert_eq!(server.downloads().len() as u64, OBJECTS);

    // 10 changed, 5 deleted, 5 added.
    let changed: Vec<u64> = (0..10).map(|i| i * 37 % (OBJECTS - 1)).collect();
    let deleted: Vec<u64> = (0..5).map(|i| 120 + i * 5).collect();
    assert!(deleted.iter().all(|d| !changed.contains(d)));
    let second = tree(|i| if changed.contains(&i) { 2 } else { 1 });
    let key_of = |i: u64| format!("docs/part-{}/{i:03}.txt", i % 7);
    for &i in &changed {
        let mut body = second[&key_of(i)].clone();
        // FTP gives times to the minute and no ETag (docs/SOURCES.md): a change of the same
        // size within that minute cannot be seen there, so its changes differ in size.
        if kind == Kind::Ftp && body.len() == first[&key_of(i)].len() {
            body.push(b'\n');
        }
        server.put(&key_of(i), &body);
    }
    let mut expected = second.clone();
    if kind == Kind::Ftp {
        for &i in &changed {
            let body = std::fs::read(server.folder.join(key_of(i))).unwrap();
            expected.insert(key_of(i), body);
        }
    }
    for &i in &deleted {
        server.delete(&key_of(i));
        expected.remove(&key_of(i));
    }
    for n in 0..5u64 {
        let key = format!("docs/added/new-{n}.txt");
        let mut rng = Lcg(1000 + n);
        let body = document(1000 + n, 1, &mut rng).1.into_bytes();
        server.put(&key, &body);
        expected.insert(key, body);
    }
    let before = server.downloads().len();
    let (lines, summary, code) = ingest_remote(&sb, &server, &[]);
    assert_eq!(code, Some(0), "{summary}");
    let downloaded = server.downloads();
    assert_eq!(
        downloaded.len() - before,
        15,
        "only the changed and new objects: {:?}",
        &downloaded[before..]
    );
    assert_eq!(summary["removed"], 5, "{summary}");
    let status_of = |key: &str| {
        let at = format!("{source}/{}", key.trim_start_matches("docs/"));
        lines
            .iter()
            .find(|l| l["locator"] == at.as_str())
            .map(|l| l["status"].as_str().unwrap().to_string())
    };
    assert_eq!(status_of(&key_of(0)).as_deref(), Some("indexed"));
    assert_eq!(status_of(&key_of(1)).as_deref(), Some("unchanged"));

    // The same tree ingested from a local folder gives the same files, chunks and sizes.
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

    // 3 renamed (the same bytes under a new name, the old one gone): each read once to learn
    // its content, found by its hash and not embedded again; the old names leave.
    for i in [3u64, 4, 5] {
        let body = expected.remove(&key_of(i)).unwrap();
        let new_key = format!("docs/renamed/r-{i:03}.txt");
        server.put(&new_key, &body);
        server.delete(&key_of(i));
        expected.insert(new_key, body);
    }
    let before = server.downloads().len();
    let (_, summary, code) = ingest_remote(&sb, &server, &[]);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(server.downloads().len() - before, 3, "the renamed objects");
    assert_eq!(summary["removed"], 3, "{summary}");
    assert_eq!(
        summary["chunks_embedded"], 0,
        "a renamed object is not embedded again: {summary}"
    );
    let renamed: Vec<String> = indexed_files(&sb, &format!("{source}/"))
        .into_keys()
        .filter(|k| {
            ["r-00", "/003.txt", "/004.txt", "/005.txt"]
                .iter()
                .any(|p| k.contains(p))
        })
        .collect();
    assert_eq!(
        renamed,
        [
            "renamed/r-003.txt",
            "renamed/r-004.txt",
            "renamed/r-005.txt"
        ],
        "the new names, not the old"
    );
}

/// A sync killed (SIGKILL) at its 25th download converges on the next; a third downloads
/// nothing.
fn a_killed_sync_converges_on_the_next(kind: Kind) {
    let sb = Sandbox::new();
    let Some(server) = Server::start(kind, &sb) else {
        return;
    };
    for (key, body) in tree(|_| 1).iter().take(40) {
        server.put(key, body);
    }
    let (_, _, code) = ingest_remote(
        &sb,
        &server,
        &[("INGEST_FAILPOINTS", "sources.download=25")],
    );
    assert_eq!(code, None, "killed by the failpoint");
    let (lines, summary, code) = ingest_remote(&sb, &server, &[]);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    let top = lines
        .iter()
        .filter(|l| !l["locator"].as_str().unwrap().contains("!/"))
        .count();
    assert_eq!(top, 40, "{lines:#?}");
    let before = server.downloads().len();
    let (_, summary, _) = ingest_remote(&sb, &server, &[]);
    assert_eq!(server.downloads().len(), before, "{summary}");
    assert_eq!(summary["indexed"], 0, "{summary}");
    assert_eq!(summary["unchanged"], summary["files"], "{summary}");
}

#[test]
fn an_s3_source_syncs_only_what_changed_and_equals_a_local_ingest() {
    syncs_only_what_changed_and_equals_a_local_ingest(Kind::S3);
}

#[test]
fn a_webdav_source_syncs_only_what_changed_and_equals_a_local_ingest() {
    syncs_only_what_changed_and_equals_a_local_ingest(Kind::WebDav);
}

#[test]
fn an_sftp_source_syncs_only_what_changed_and_equals_a_local_ingest() {
    syncs_only_what_changed_and_equals_a_local_ingest(Kind::Sftp);
}

#[test]
fn an_ftp_source_syncs_only_what_changed_and_equals_a_local_ingest() {
    syncs_only_what_changed_and_equals_a_local_ingest(Kind::Ftp);
}

#[test]
fn an_ftp_sync_killed_while_downloading_converges_on_the_next() {
    a_killed_sync_converges_on_the_next(Kind::Ftp);
}

#[test]
fn an_sftp_sync_killed_while_downloading_converges_on_the_next() {
    a_killed_sync_converges_on_the_next(Kind::Sftp);
}

#[test]
fn an_s3_sync_killed_while_downloading_converges_on_the_next() {
    a_killed_sync_converges_on_the_next(Kind::S3);
}

#[test]
fn a_webdav_sync_killed_while_downloading_converges_on_the_next() {
    a_killed_sync_converges_on_the_next(Kind::WebDav);
}

#[test]
fn a_source_url_with_a_password_is_refused_and_an_empty_source_says_so() {
    let sb = Sandbox::new();
    let out = sb.run(&["--json", "ftp://crew:hunter2@127.0.0.1/docs"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("never given in a URL") && !stderr.contains("hunter2"),
        "{stderr}"
    );
    let Some(server) = Server::start(Kind::S3, &sb) else {
        return;
    };
    let (lines, _, code) = ingest_remote(&sb, &server, &[]);
    assert_eq!(code, Some(2));
    assert!(
        lines[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("nothing at this source"),
        "{lines:?}"
    );
}

/// A source that lists nothing where files were indexed (a service answering an error as an
/// empty folder, or emptied) removes nothing on its word: the run says so and every file stays.
#[test]
fn a_source_that_lists_nothing_keeps_what_was_indexed() {
    let sb = Sandbox::new();
    let Some(server) = Server::start(Kind::S3, &sb) else {
        return;
    };
    server.put(
        "docs/a.txt",
        b"The ferry timetable for the winter months.\n",
    );
    server.put("docs/b.txt", b"The pilot boat schedule for the harbour.\n");
    let (lines, _, code) = ingest_remote(&sb, &server, &[]);
    assert_eq!(code, Some(0), "{lines:?}");
    server.delete("docs/a.txt");
    server.delete("docs/b.txt");
    let (lines, summary, code) = ingest_remote(&sb, &server, &[]);
    assert_eq!(code, Some(2), "{lines:?}");
    assert!(
        lines.iter().any(|l| l["reason"].as_str().is_some_and(
            |r| r.starts_with("the source listed nothing: its 2 indexed files are kept")
        )),
        "{lines:?}"
    );
    assert_eq!(summary["removed"], 0, "{summary}");
    let files = sb.run(&["files", "--json"]);
    let listed = String::from_utf8_lossy(&files.stdout);
    assert!(
        listed.contains("docs/a.txt") && listed.contains("docs/b.txt"),
        "{}",
        crate::util::told(&files)
    );
}

/// `ingest watch` with a remote source: synced at the start, then polled; an object added
/// appears in the index and one deleted leaves it, with no notification from the server.
#[test]
fn a_watched_s3_source_is_polled() {
    let sb = Sandbox::new();
    let Some(server) = Server::start(Kind::S3, &sb) else {
        return;
    };
    for (key, body) in tree(|_| 1).iter().skip(1).take(5) {
        server.put(key, body);
    }
    let source = server.source();
    let env: Vec<(&str, String)> = server.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let daemon = Daemon::start_with(&sb, &[], &[&source, "--poll-secs", "1"], &env);
    let files = || {
        let out = sb.run(&["files", "--json"]);
        serde_json::from_slice::<Vec<Value>>(&out.stdout)
            .unwrap_or_default()
            .iter()
            .filter_map(|f| f["locator"].as_str().map(str::to_string))
            .collect::<Vec<String>>()
    };
    let holds = |key: &str| {
        let at = format!(
            "{}/{}",
            server.locator_root(),
            key.trim_start_matches("docs/")
        );
        files().contains(&at)
    };
    let limit = Duration::from_secs(120);
    assert!(
        wait_for(limit, || files().len() == 5).is_some(),
        "{:?}",
        files()
    );
    let mut rng = Lcg(77);
    server.put(
        "docs/late/arrival.txt",
        document(77, 1, &mut rng).1.as_bytes(),
    );
    assert!(
        wait_for(limit, || holds("docs/late/arrival.txt")).is_some(),
        "{:?}",
        files()
    );
    let first = tree(|_| 1).keys().nth(1).unwrap().clone();
    server.delete(&first);
    assert!(
        wait_for(limit, || !holds(&first)).is_some(),
        "{:?}",
        files()
    );
    let status = daemon.stop();
    assert!(status.success(), "{status:?}");
    let log = std::fs::read_to_string(sb.path("daemon.err")).unwrap();
    assert!(!log.contains(SECRET), "the daemon's log shows the secret");
}

/// The agent's source tools through the official Python MCP client
/// (tests/mcp/sources_mcp.py): sources registered in the config file (credentials there
/// only, the file owner-only), listed, browsed page by page without indexing, pulled (one
/// file, then a folder) and searched within; a user of the same mandate sees only the
/// shared source, and a key of another mandate sees no source and no byte of one. The CLI's
/// `ingest source` face answers the same, and a config file others may read is refused.
#[test]
fn the_agent_lists_browses_pulls_and_searches_a_registered_source() {
    let sb = Sandbox::new();
    let Some(server) = Server::start(Kind::S3, &sb) else {
        return;
    };
    let py = repo_dir().join(".venv-test/bin/python");
    if !py.exists() {
        eprintln!("SKIPPED: .venv-test is missing (make deps creates it)");
        return;
    }
    let mut rng = Lcg(5);
    for prefix in ["alice", "shared"] {
        for i in 0..24u64 {
            let (_, text) = document(i, 1, &mut rng);
            server.put(&format!("{prefix}/docs/{i:02}.txt"), text.as_bytes());
        }
    }
    server.put(
        "alice/docs/reports/keeper.txt",
        b"Harbour log, week 12.\n\nThe keeper's brass anemometer logbook records gusts of 41 knots \
          on the north pier, and the tide gauge was recalibrated on Thursday.\n",
    );
    let endpoint = format!("http://127.0.0.1:{}", server.port);
    let source = |name: &str, prefix: &str, user: &str, shared: bool| {
        format!(
            "[[source]]\nname = \"{name}\"\nurl = \"s3://{BUCKET}/{prefix}\"\nuser = \"{user}\"\n\
             mandate = \"acme\"\nshared = {shared}\n[source.credentials]\n\
             access_key_id = \"test-key-id\"\nsecret_access_key = \"{SECRET}\"\n\
             region = \"us-east-1\"\nendpoint = \"{endpoint}\"\n"
        )
    };
    let config = sb.write(
        "config.toml",
        format!(
            "{}\n{}",
            source("alice-docs", "alice", "alice", false),
            source("acme-shared", "shared", "alice", true)
        )
        .as_bytes(),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(args)
            .arg("--data-dir")
            .arg(sb.data_dir())
            .env("INGEST_CONFIG", &config)
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .output()
            .unwrap()
    };
    // Readable by others while it holds a secret: refused, the secret not shown.
    let out = cli(&["source", "list", "--user", "alice", "--mandate", "acme"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("chmod 600") && !stderr.contains(SECRET),
        "{stderr}"
    );
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = cli(&[
        "--json",
        "source",
        "list",
        "--user",
        "alice",
        "--mandate",
        "acme",
    ]);
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["sources"].as_array().unwrap().len(), 2, "{listed}");
    let out = cli(&[
        "--json",
        "source",
        "browse",
        "alice-docs",
        "docs/reports",
        "--user",
        "alice",
        "--mandate",
        "acme",
    ]);
    let browsed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(browsed["entries"][0]["name"], "keeper.txt", "{browsed}");
    assert_eq!(browsed["entries"][0]["indexed"], "not indexed", "{browsed}");
    // Hostile paths: refused with a reason, before any request to the server.
    let long = "a/".repeat(3000);
    for path in ["../etc", "docs/./x", "docs//x", long.as_str()] {
        let out = cli(&[
            "--json",
            "source",
            "browse",
            "alice-docs",
            path,
            "--user",
            "alice",
            "--mandate",
            "acme",
        ]);
        assert_eq!(out.status.code(), Some(3), "{path}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("below the source's root"), "{stderr}");
        assert!(stderr.len() < 1000, "the refusal echoes a bounded path");
    }
    // The agent, through the official MCP client.
    let out = Command::new(&py)
        .arg(repo_dir().join("tests/mcp/sources_mcp.py"))
        .arg(env!("CARGO_BIN_EXE_ingest"))
        .arg(sb.data_dir())
        .arg(&config)
        .arg(SECRET)
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove(ingest_base::failpoint::ENV)
        .output()
        .unwrap();
    println!("{}", String::from_utf8_lossy(&out.stdout));
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(out.status.success(), "sources_mcp.py: {:?}", out.status);
    assert!(
        !stderr.contains(SECRET),
        "the server's log shows the secret"
    );
    // The pulled files are in alice's scope, from the source, nowhere else.
    let out = cli(&["--json", "files", "--user", "alice", "--mandate", "acme"]);
    let files: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(files.len() >= 25, "{files:?}");
    assert!(files.iter().all(|f| f["locator"]
        .as_str()
        .unwrap()
        .starts_with(&format!("s3://{BUCKET}/alice/docs/"))));
    let out = cli(&[
        "--json",
        "files",
        "--user",
        "mallory",
        "--mandate",
        "globex",
    ]);
    let none: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert!(none.is_empty(), "{none:?}");
}

/// `ingest watch` without folders keeps the registered sources marked `sync` indexed, each
/// in its own scope: what the source holds appears for its owner (and a later object at the
/// next poll), and nothing for the command's own scope.
#[test]
fn a_registered_source_marked_sync_is_polled_in_its_scope() {
    let sb = Sandbox::new();
    let Some(server) = Server::start(Kind::S3, &sb) else {
        return;
    };
    for (key, body) in tree(|_| 1).iter().skip(1).take(3) {
        server.put(key, body);
    }
    let config = sb.write(
        "config.toml",
        format!(
            "[[source]]\nname = \"team\"\nurl = \"s3://{BUCKET}/docs\"\nuser = \"alice\"\n\
             mandate = \"acme\"\nsync = true\n[source.credentials]\naccess_key_id = \"test-key-id\"\n\
             secret_access_key = \"{SECRET}\"\nendpoint = \"http://127.0.0.1:{}\"\n",
            server.port
        )
        .as_bytes(),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config_var = config.display().to_string();
    let daemon = Daemon::start_with(
        &sb,
        &[],
        &["--poll-secs", "1"],
        &[("INGEST_CONFIG", &config_var)],
    );
    let files = |scope: &[&str]| {
        let mut args = vec!["files", "--json"];
        args.extend(scope);
        let out = sb.run(&args);
        serde_json::from_slice::<Vec<Value>>(&out.stdout)
            .unwrap_or_default()
            .iter()
            .filter_map(|f| f["locator"].as_str().map(str::to_string))
            .collect::<Vec<String>>()
    };
    let alice = ["--user", "alice", "--mandate", "acme"];
    let limit = Duration::from_secs(120);
    assert!(
        wait_for(limit, || files(&alice).len() == 3).is_some(),
        "{:?}",
        files(&alice)
    );
    let mut rng = Lcg(78);
    server.put(
        "docs/late/arrival.txt",
        document(78, 1, &mut rng).1.as_bytes(),
    );
    assert!(
        wait_for(limit, || files(&alice).len() == 4).is_some(),
        "{:?}",
        files(&alice)
    );
    assert!(
        files(&[]).is_empty(),
        "the command's own scope holds nothing"
    );
    let status = daemon.stop();
    assert!(status.success(), "{status:?}");
    let log = std::fs::read_to_string(sb.path("daemon.err")).unwrap();
    assert!(!log.contains(SECRET), "the daemon's log shows the secret");
}

/// An S3 server holding 12 documents (made from `seed`) under `alice/docs/`, the registry
/// (mode 0600) of alice's shared source `alice-docs` over them, and `ingest.toml` written
/// from `config`: the server and the registry's path; `None` when the server cannot start.
fn shared_source_of_twelve(sb: &Sandbox, seed: u64, config: &str) -> Option<(Server, String)> {
    let server = Server::start(Kind::S3, sb)?;
    let mut rng = Lcg(seed);
    for i in 0..12u64 {
        let (_, text) = document(i, 1, &mut rng);
        server.put(&format!("alice/docs/{i:02}.txt"), text.as_bytes());
    }
    let registry = sb.write(
        "user-config.toml",
        format!(
            "[[source]]\nname = \"alice-docs\"\nurl = \"s3://{BUCKET}/alice\"\nuser = \"alice\"\n\
             mandate = \"acme\"\nshared = true\n\
             [source.credentials]\naccess_key_id = \"test-key-id\"\nsecret_access_key = \
             \"{SECRET}\"\nregion = \"us-east-1\"\nendpoint = \"http://127.0.0.1:{}\"\n",
            server.port
        )
        .as_bytes(),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&registry, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(sb.path("ingest.toml"), config).unwrap();
    Some((server, registry.to_string_lossy().to_string()))
}

/// A pull through `ingest serve` is counted against the owner's `max_files_per_key` as an
/// upload is, its private and shared entries together: after 2 private uploads, a pull of a
/// shared source reads at most the 3 left (and says so), and a pull for a full owner is
/// refused before anything is downloaded.
#[test]
fn a_pull_through_the_service_counts_against_the_scopes_quota() {
    use crate::service::{Client, Service, ALICE};
    let sb = Sandbox::new();
    let Some((server, registry)) = shared_source_of_twelve(
        &sb,
        9,
        &format!(
            "max_files_per_key = 5\n\n[[api_keys]]\nkey = \"{ALICE}\"\nuser = \"alice\"\n\
             mandate = \"acme\"\n"
        ),
    ) else {
        return;
    };
    let service = Service::start_config_env(&sb, &[], &[("INGEST_CONFIG", &registry)]);
    let alice = Client::new(&service, Some(ALICE));
    let pull = || {
        let args = serde_json::json!({ "source": "alice-docs", "path": "docs" });
        alice.post(
            "/v1/tools/pull_source",
            "application/json",
            args.to_string().as_bytes(),
        )
    };
    for name in ["private-1.md", "private-2.md"] {
        let (status, job) =
            alice.upload(name, format!("A private note named {name}.\n").as_bytes());
        assert_eq!(status, 202, "{job}");
        let ended = alice.wait_job(&crate::service::job_of(&job));
        assert_eq!(ended["state"], "indexed", "{ended}");
    }
    let before = server.downloads().len();
    let (status, answer) = pull();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["files"]["indexed"], 3, "{answer}");
    assert!(
        answer["quota"]
            .as_str()
            .is_some_and(|q| q.contains("at most 5")),
        "{answer}"
    );
    let pulled = server.downloads().len() - before;
    assert!(pulled <= 3, "{pulled} objects downloaded for a room of 3");
    // Full: refused, nothing downloaded.
    let (status, answer) = pull();
    assert_eq!(status, 200, "{answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(error.contains("nothing pulled"), "{answer}");
    assert_eq!(
        server.downloads().len() - before,
        pulled,
        "a refused pull downloads"
    );
    assert!(!answer.to_string().contains(SECRET), "{answer}");
}

/// Another user of the mandate pulling a shared source fills at most the source's share of
/// its owner's quota (`max_files`, by default a quarter of `max_files_per_key`), never the
/// whole of it: bob's pulls of alice's shared source stop at 2 of her 8 (said in `quota`, then
/// refused before any download), while alice's own pull still reads the room left.
#[test]
fn others_pulling_a_shared_source_fill_only_its_share() {
    use crate::service::{Client, Service, ALICE, BOB};
    let sb = Sandbox::new();
    let Some((server, registry)) = shared_source_of_twelve(
        &sb,
        11,
        &format!(
            "max_files_per_key = 8\n\n[[api_keys]]\nkey = \"{ALICE}\"\nuser = \"alice\"\n\
             mandate = \"acme\"\n\n[[api_keys]]\nkey = \"{BOB}\"\nuser = \"bob\"\n\
             mandate = \"acme\"\n"
        ),
    ) else {
        return;
    };
    let service = Service::start_config_env(&sb, &[], &[("INGEST_CONFIG", &registry)]);
    let pull = |client: &Client| {
        let args = serde_json::json!({ "source": "alice-docs", "path": "docs" });
        client.post(
            "/v1/tools/pull_source",
            "application/json",
            args.to_string().as_bytes(),
        )
    };
    let alice = Client::new(&service, Some(ALICE));
    let bob = Client::new(&service, Some(BOB));
    let (status, answer) = pull(&bob);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["files"]["indexed"], 2, "{answer}");
    assert!(
        answer["quota"]
            .as_str()
            .is_some_and(|q| q.contains("max_files") && q.contains("at most 2")),
        "{answer}"
    );
    let before = server.downloads().len();
    let (status, answer) = pull(&bob);
    assert_eq!(status, 200, "{answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("nothing pulled") && error.contains("max_files"),
        "{answer}"
    );
    assert_eq!(server.downloads().len(), before, "a refused pull downloads");
    // The owner's own pull is bounded by her quota only: the 6 objects of the room left
    // (those bob pulled among them, unchanged).
    let (status, answer) = pull(&alice);
    assert_eq!(status, 200, "{answer}");
    let files = &answer["files"];
    let read = files["indexed"].as_u64().unwrap_or(0) + files["unchanged"].as_u64().unwrap_or(0);
    assert_eq!(read, 6, "{answer}");
    assert!(files["indexed"].as_u64().unwrap_or(0) >= 4, "{answer}");
    assert!(!answer.to_string().contains(SECRET), "{answer}");
}

/// A hostile server on a loopback port (tests/servers/hostile_http.py): `redirect`,
/// `reflect`, `huge` and `internal` over HTTP, `imap` over a bare socket.
struct Hostile {
    child: Child,
    port: u16,
    hits: PathBuf,
}

impl Hostile {
    fn start(sb: &Sandbox, mode: &str, arg: &str) -> Hostile {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = sb.path(&format!(
            "hostile-{mode}-{}",
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let port_file = dir.join("port");
        let hits = dir.join("hits");
        std::fs::write(&hits, "").unwrap();
        let child = Command::new("python3")
            .arg(repo_dir().join("tests/servers/hostile_http.py"))
            .args([
                mode,
                port_file.to_str().unwrap(),
                hits.to_str().unwrap(),
                arg,
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("start hostile_http.py");
        let port = poll(Duration::from_secs(30), || {
            std::fs::read_to_string(&port_file)
                .ok()?
                .trim()
                .parse::<u16>()
                .ok()
        })
        .expect("hostile_http.py did not start");
        Hostile { child, port, hits }
    }

    /// What it was asked, one request a line (`sent N` for a huge body's bytes sent).
    fn hits(&self) -> String {
        std::fs::read_to_string(&self.hits).unwrap()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `check` gives once it gives something, within `limit`.
fn poll<T>(limit: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(found) = check() {
            return Some(found);
        }
        if started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `ingest --json URL` with `env` and RUST_LOG=debug: its output (exit code, ledger lines,
/// the whole log), asserted to be a run that ended.
fn ingest_url(sb: &Sandbox, url: &str, env: &[(&str, &str)]) -> (Option<i32>, Vec<Value>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ingest"));
    cmd.args(["--json", url, "--data-dir"])
        .arg(sb.data_dir())
        .env("RUST_LOG", "debug");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), json_lines(&out), text)
}

/// A folder whose listing failed once (503, as a restarting server or a connection it had
/// closed gives) is listed again, not left out: every file of the tree is indexed, and a
/// sync after it removes nothing. (OpenDAL's simulated recursive listing lost such a folder
/// on its retry, and a sync took its files for deleted.)
#[test]
fn a_folder_whose_listing_failed_once_is_listed_again_not_lost() {
    let sb = Sandbox::new();
    let flaky = Hostile::start(&sb, "flaky", "");
    let url = format!("webdav://127.0.0.1:{}/docs", flaky.port);
    let (code, lines, all) = ingest_url(&sb, &url, &[]);
    assert_eq!(code, Some(0), "{all}");
    let mut indexed: Vec<&str> = lines
        .iter()
        .filter(|l| l["status"] == "indexed")
        .filter_map(|l| l["locator"].as_str())
        .collect();
    indexed.sort_unstable();
    let url = url.as_str();
    let expected: Vec<String> = ["a", "b", "c"]
        .iter()
        .flat_map(|d| (1..=2).map(move |n| format!("{url}/{d}/note-{n}.txt")))
        .collect();
    assert_eq!(indexed, expected, "{all}");
    let hits = flaky.hits();
    assert_eq!(
        hits.lines().filter(|l| *l == "PROPFIND /docs/b/").count(),
        2,
        "b/ failed once and was listed again: {hits}"
    );
    let (code, lines, all) = ingest_url(&sb, url, &[]);
    assert_eq!(code, Some(0), "{all}");
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["removed"], 0, "{all}");
    assert_eq!(summary["unchanged"], 6, "{all}");
}

/// A server's listing that the service's client cannot take (OpenDAL slices a listed path by
/// the root's length, checked only in debug builds) fails the source, not the process: one
/// `failed` line, a summary, exit 2.
#[test]
fn a_listing_the_client_library_cannot_take_fails_the_source_not_the_process() {
    let sb = Sandbox::new();
    let hostile = Hostile::start(&sb, "shorthref", "");
    let url = format!("webdav://127.0.0.1:{}/docs", hostile.port);
    let (code, lines, all) = ingest_url(&sb, &url, &[]);
    assert_eq!(code, Some(2), "{all}");
    assert!(
        lines.last().is_some_and(|l| l.get("summary").is_some()),
        "{all}"
    );
    let failed = lines
        .iter()
        .find(|l| l["status"] == "failed")
        .unwrap_or_else(|| panic!("no failed line: {all}"));
    assert!(
        failed["reason"]
            .as_str()
            .is_some_and(|r| r.contains("could not take")),
        "{all}"
    );
}

/// A WebDAV source whose server lists a file and answers its download with 302 to the
/// service's own network — to another port of the address the operator named, and to
/// `localhost` — is not redirected: the internal service is never asked, nothing of it is
/// indexed or shown, and the file's line says the status.
#[test]
fn a_source_redirect_into_the_servers_own_network_is_not_followed() {
    let sb = Sandbox::new();
    let internal = Hostile::start(&sb, "internal", "");
    for target in [
        format!("http://127.0.0.1:{}/secret", internal.port),
        format!("http://localhost:{}/secret", internal.port),
    ] {
        let hostile = Hostile::start(&sb, "redirect", &target);
        let url = format!("webdav://127.0.0.1:{}/docs", hostile.port);
        let (code, lines, all) = ingest_url(&sb, &url, &[]);
        assert_eq!(code, Some(2), "{all}");
        assert!(!hostile.hits().is_empty(), "the source was asked: {all}");
        assert_eq!(internal.hits(), "", "the internal service was asked: {all}");
        assert!(!all.contains("INTERNAL-SERVICE-SECRET"), "{all}");
        assert!(hostile.hits().contains("GET /docs/notes.txt"), "{all}");
        assert!(
            lines
                .iter()
                .any(|l| l["status"] == "failed" && l["reason"].as_str().unwrap().contains("302")),
            "{all}"
        );
        let files = sb.run(&["--json", "files"]);
        assert!(
            !String::from_utf8_lossy(&files.stdout).contains("INTERNAL"),
            "{files:?}"
        );
    }
}

/// A server that echoes the request (its `Authorization` header, an IMAP `LOGIN` line) in
/// its errors: the ledger line, the log (RUST_LOG=debug) and a tool's answer hold no form of
/// the secret, and the reason is one short line.
#[test]
fn a_source_servers_echo_of_the_credentials_is_redacted_everywhere() {
    use base64::Engine as _;
    let sb = Sandbox::new();
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("crew:{SECRET}"));
    let check = |what: &str, all: &str| {
        assert!(!all.contains(SECRET), "{what}: the secret: {all}");
        assert!(
            !all.contains(&basic),
            "{what}: the Basic credentials: {all}"
        );
        assert!(!all.contains("hunter2"), "{what}: the IMAP password: {all}");
    };
    let env = [
        ("INGEST_WEBDAV_USER", "crew"),
        ("INGEST_WEBDAV_PASSWORD", SECRET),
    ];
    // A 500 is retried (each retry logged at WARN), a 401 is the source's line at once.
    for status in ["500", "401"] {
        let echo = Hostile::start(&sb, "reflect", status);
        let url = format!("webdav://127.0.0.1:{}/docs", echo.port);
        let (code, lines, all) = ingest_url(&sb, &url, &env);
        assert_eq!(code, Some(2), "{all}");
        check(status, &all);
        assert!(
            all.contains("[redacted]"),
            "{status}: the echo came back: {all}"
        );
        if status == "401" {
            let reason = lines[0]["reason"].as_str().unwrap_or_default();
            assert!(reason.contains("[redacted]"), "{all}");
            assert!(reason.chars().count() <= 201, "{reason}");
            assert!(!reason.chars().any(char::is_control), "{reason}");
        }
    }
    let reflect = Hostile::start(&sb, "reflect", "401");
    let url = format!("webdav://127.0.0.1:{}/docs", reflect.port);
    // A tool's answer: `ingest source browse` of the source registered with its secret.
    let config = sb.write(
        "config.toml",
        format!(
            "[[source]]\nname = \"echo\"\nurl = \"{url}\"\n[source.credentials]\n\
             user = \"crew\"\npassword = \"{SECRET}\"\n\n[[source]]\nname = \"mail\"\n\
             url = \"imap://crew@127.0.0.1:{{IMAP}}/INBOX\"\n[source.credentials]\n\
             password = \"hunter2\"\n"
        )
        .as_bytes(),
    );
    let imap = Hostile::start(&sb, "imap", "");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("{IMAP}", &imap.port.to_string());
    std::fs::write(&config, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    for name in ["echo", "mail"] {
        let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(["--json", "source", "browse", name, "--data-dir"])
            .arg(sb.data_dir())
            .env("INGEST_CONFIG", &config)
            .env("RUST_LOG", "debug")
            .output()
            .unwrap();
        let all = format!(
            "exit {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(3), "{all}");
        check(name, &all);
        assert!(
            all.contains("[redacted]"),
            "{name}: the echo came back: {all}"
        );
    }
    assert!(imap.hits().contains("LOGIN"), "{}", imap.hits());
}

/// A server answering 500 with a 300 MiB body: a few KiB of it are read, the rest never
/// (the server could send little of it before the connection was dropped), and the log
/// stays small.
#[test]
fn a_huge_error_body_is_not_read_and_not_logged() {
    let sb = Sandbox::new();
    let huge = Hostile::start(&sb, "huge", "300");
    let url = format!("webdav://127.0.0.1:{}/docs", huge.port);
    let started = Instant::now();
    let (code, _, all) = ingest_url(&sb, &url, &[]);
    assert_eq!(code, Some(2), "{}", all.get(..4000).unwrap_or(&all));
    assert!(all.len() < 256 * 1024, "{} bytes of output", all.len());
    let asked = huge
        .hits()
        .lines()
        .filter(|l| !l.starts_with("sent"))
        .count();
    let sent: Vec<u64> = poll(Duration::from_secs(30), || {
        let sent: Vec<u64> = huge
            .hits()
            .lines()
            .filter_map(|l| l.strip_prefix("sent ")?.parse().ok())
            .collect();
        (sent.len() == asked).then_some(sent)
    })
    .unwrap_or_else(|| panic!("the server still sends: {}", huge.hits()));
    for bytes in &sent {
        assert!(*bytes < 32 * 1024 * 1024, "{bytes} bytes sent of 300 MiB");
    }
    println!(
        "{asked} requests, {sent:?} bytes sent, {} bytes of output, {:?}",
        all.len(),
        started.elapsed()
    );
}

/// Keys that are not canonical below a source's root (`docs/../outside.txt`, `docs//x`, a
/// backslash) are not read: each has a `skipped` line saying why, and what the HTTP client
/// would have fetched instead (the object outside the root) is not indexed.
#[test]
fn an_s3_key_that_is_not_canonical_is_not_read() {
    let sb = Sandbox::new();
    let Some(server) = Server::start(Kind::S3, &sb) else {
        return;
    };
    server.put(
        "docs/inside.txt",
        b"Inside the root: the tide tables of the north pier.\n",
    );
    server.put(
        "outside.txt",
        b"OUTSIDE-THE-ROOT canary: never indexed from docs.\n",
    );
    // Sent as written (http.client does not normalise a path).
    let put = |key: &str| {
        let script = format!(
            "import http.client; c = http.client.HTTPConnection('127.0.0.1', {}); \
             c.request('PUT', '/{BUCKET}/{key}', body=b'odd key', headers={{'Authorization': '{}'}}); \
             r = c.getresponse(); assert r.status == 200, (r.status, r.read())",
            server.port,
            Server::AUTHORIZATION
        );
        let out = Command::new("python3")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    for key in ["docs/../outside.txt", "docs/a//b.txt", "docs/a\\\\b.txt"] {
        put(key);
    }
    let env: Vec<(&str, String)> = server.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, lines, all) = ingest_url(&sb, &server.source(), &env);
    assert_eq!(code, Some(2), "{all}");
    let skipped: Vec<&Value> = lines.iter().filter(|l| l["status"] == "skipped").collect();
    assert_eq!(skipped.len(), 3, "{all}");
    for l in &skipped {
        assert!(
            l["reason"].as_str().unwrap().starts_with("not read:"),
            "{all}"
        );
    }
    let files = sb.run(&["--json", "files"]);
    let files = String::from_utf8_lossy(&files.stdout);
    assert!(files.contains("docs/inside.txt"), "{files}");
    let search = sb.run(&["--json", "search", "OUTSIDE-THE-ROOT canary"]);
    let found = String::from_utf8_lossy(&search.stdout);
    assert!(!found.contains("canary: never indexed"), "{found}");
    // Synced again: still skipped (not `unchanged`), nothing downloaded outside the root.
    let before = server.downloads().len();
    let (_, lines, all) = ingest_url(&sb, &server.source(), &env);
    assert_eq!(
        lines.iter().filter(|l| l["status"] == "skipped").count(),
        3,
        "{all}"
    );
    assert_eq!(server.downloads().len(), before, "{all}");
}

/// `[source_destinations] deny` refuses even the host a source's URL names: nothing is
/// asked of it. And a file read from a source has no bytes kept: `render-page` says so.
#[test]
fn a_denied_destination_is_not_asked_and_a_source_file_is_not_rendered() {
    let sb = Sandbox::new();
    let Some(server) = Server::start(Kind::S3, &sb) else {
        return;
    };
    let pdf = std::fs::read(fixtures().join("formats/survey-report.pdf")).unwrap();
    server.put("docs/report.pdf", &pdf);
    let env: Vec<(&str, String)> = server.env();
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, _, all) = ingest_url(&sb, &server.source(), &env);
    assert_eq!(code, Some(0), "{all}");
    let located = format!("{}/report.pdf#page=1", server.locator_root());
    let png = sb.path("page.png");
    let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args([
            "render-page",
            &located,
            "-o",
            png.to_str().unwrap(),
            "--data-dir",
        ])
        .arg(sb.data_dir())
        .output()
        .unwrap();
    let said = format!("{out:?}");
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("read from a remote source") && !said.contains("upload it again"),
        "{said}"
    );
    let config = sb.write(
        "config.toml",
        b"[source_destinations]\ndeny = [\"127.0.0.0/8\"]\n",
    );
    let config = config.to_str().unwrap().to_string();
    env.push(("INGEST_CONFIG", &config));
    let asked = std::fs::read_to_string(&server.log)
        .unwrap()
        .lines()
        .count();
    let (code, lines, all) = ingest_url(&sb, &server.source(), &env);
    assert_eq!(code, Some(2), "{all}");
    assert!(
        lines[0]["reason"]
            .as_str()
            .unwrap()
            .contains("destination refused"),
        "{all}"
    );
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert_eq!(log.lines().count(), asked, "the server was asked: {log}");
}

/// Links in a tree served over SFTP or FTP: a link to a folder beside it and a link to the
/// folder above (a loop) are not entered, so each real file is indexed once under its own
/// path and the sync ends. A link to a file is not read over FTP; over SFTP OpenDAL states
/// the entry it could not type (SFTP's stat follows the link), so it is read as the file it
/// points to and its bytes, met again, are one `duplicate` line, embedded once
/// (docs/SOURCES.md).
fn links_in_a_served_tree_are_not_followed(kind: Kind) {
    let sb = Sandbox::new();
    let Some(server) = Server::start(kind, &sb) else {
        return;
    };
    server.put(
        "docs/real/a.txt",
        b"The ferry timetable for the winter months.\n",
    );
    server.put(
        "docs/real/b.txt",
        b"The pilot boat schedule for the harbour.\n",
    );
    let docs = server.folder.join("docs");
    std::os::unix::fs::symlink("real", docs.join("beside")).unwrap();
    std::os::unix::fs::symlink("..", docs.join("real/up")).unwrap();
    std::os::unix::fs::symlink("real/a.txt", docs.join("a-again.txt")).unwrap();
    let (lines, summary, code) = ingest_remote(&sb, &server, &[]);
    let said = format!("exit {code:?}\n{summary}\n{lines:#?}");
    assert_eq!(summary["failed"], 0, "{said}");
    let root = server.locator_root();
    let indexed = indexed_files(&sb, &root);
    let names: Vec<&str> = indexed.keys().map(String::as_str).collect();
    let want: &[&str] = match kind {
        Kind::Sftp => &["/a-again.txt", "/real/a.txt", "/real/b.txt"],
        _ => &["/real/a.txt", "/real/b.txt"],
    };
    assert_eq!(names, want, "{said}");
    assert_eq!(
        summary["indexed"].as_u64().unwrap() + summary["duplicate"].as_u64().unwrap(),
        want.len() as u64,
        "{said}"
    );
    assert_eq!(summary["duplicate"], want.len() as u64 - 2, "{said}");
    assert_eq!(code, Some(0), "{said}");
}

#[test]
fn links_in_an_sftp_tree_are_not_followed() {
    links_in_a_served_tree_are_not_followed(Kind::Sftp);
}

#[test]
fn links_in_an_ftp_tree_are_not_followed() {
    links_in_a_served_tree_are_not_followed(Kind::Ftp);
}
