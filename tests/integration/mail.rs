//! E-mail as a container, end to end through the binary: a mailbox of 1 000 generated mails
//! with attachments (PDF, DOCX, ZIP, an attached message) is walked to every attachment;
//! each is searchable and browseable under `box.mbox!/<message>!/<attachment>`, and a mail is
//! found by its subject and by its sender.

use base64::Engine;
use serde_json::Value;

use crate::util::*;

const MAILS: u64 = 1_000;
/// The IMAP test's mailbox: every kind of mail of [`MAILS`] (each attachment kind, three
/// attached messages) at a seventh of the embedding; the thousand are walked from the file.
const IMAP_MAILS: u64 = 150;
/// The one mail a user looks for by its subject and its sender.
const SOUGHT: u64 = 437;
const SOUGHT_SUBJECT: &str = "Lighthouse lens replacement schedule";
const SOUGHT_SENDER: &str = "Ottoline Quarrington";

struct Attachment {
    name: String,
    mime: &'static str,
    bytes: Vec<u8>,
}

/// One RFC 5322 message with a plain-text body and base64 attachments.
fn message(
    from: &str,
    subject: &str,
    date_day: u64,
    body: &str,
    attachments: &[Attachment],
) -> String {
    let mut m = format!(
        "From: {from}\r\nTo: Harbour Office <office@brackwater.example>\r\nSubject: {subject}\r\n\
         Date: Mon, {} Mar 2026 09:{:02}:00 +0000\r\nMessage-ID: <m{date_day}@brackwater.example>\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"part-boundary\"\r\n\r\n\
         --part-boundary\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n",
        1 + date_day % 28,
        date_day % 60
    );
    for a in attachments {
        let encoded = base64::engine::general_purpose::STANDARD.encode(&a.bytes);
        let lines: Vec<&str> = encoded
            .as_bytes()
            .chunks(76)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        m.push_str(&format!(
            "--part-boundary\r\nContent-Type: {}; name=\"{}\"\r\nContent-Disposition: attachment; filename=\"{}\"\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n",
            a.mime,
            a.name,
            a.name,
            lines.join("\r\n")
        ));
    }
    m.push_str("--part-boundary--\r\n");
    m
}

/// The mailbox: mail `i` carries a PDF when `i % 10 == 1`, a DOCX at 3, a ZIP at 5 and an
/// attached message when `i % 50 == 7`; lines end in LF (as mail saved by a Unix mail client).
fn mailbox() -> Vec<u8> {
    mailbox_of(MAILS, false)
}

/// The first `mails` mails of [`mailbox`], with lines ending in CRLF when `crlf` (as an IMAP
/// server sends every line).
fn mailbox_of(mails: u64, crlf: bool) -> Vec<u8> {
    let eol = if crlf { "\r\n" } else { "\n" };
    let pdf = std::fs::read(fixtures().join("formats/survey-report.pdf")).unwrap();
    let docx = std::fs::read(fixtures().join("formats/field-handbook.docx")).unwrap();
    let zip = std::fs::read(fixtures().join("archives/bundle.zip")).unwrap();
    let mut rng = Lcg(7);
    let mut mbox = String::new();
    for i in 1..=mails {
        let (key, text) = document(i, 1, &mut rng);
        let mut attachments = Vec::new();
        match i % 10 {
            1 => attachments.push(Attachment {
                name: format!("survey-{i}.pdf"),
                mime: "application/pdf",
                bytes: pdf.clone(),
            }),
            3 => attachments.push(Attachment {
                name: format!("handbook-{i}.docx"),
                mime: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                bytes: docx.clone(),
            }),
            5 => attachments.push(Attachment {
                name: format!("bundle-{i}.zip"),
                mime: "application/zip",
                bytes: zip.clone(),
            }),
            _ => {}
        }
        if i % 50 == 7 {
            let inner = message(
                "Quay Master <quay@brackwater.example>",
                &format!("Original request {i}"),
                i,
                &format!("The original request number {i} asked for a second mooring buoy."),
                &[],
            );
            attachments.push(Attachment {
                name: format!("request-{i}.eml"),
                mime: "message/rfc822",
                bytes: inner.into_bytes(),
            });
        }
        let (from, subject) = if i == SOUGHT {
            (
                format!("{SOUGHT_SENDER} <o.quarrington@lamplight.example>"),
                SOUGHT_SUBJECT.to_string(),
            )
        } else {
            (
                format!("Clerk {i} <clerk{i}@brackwater.example>"),
                key.trim_end_matches('.').to_string(),
            )
        };
        let text = text.replace('\n', eol);
        mbox.push_str(&format!(
            "From clerk{i}@brackwater.example Mon Mar  2 09:00:00 2026{eol}"
        ));
        mbox.push_str(&message(&from, &subject, i, &text, &attachments).replace("\r\n", eol));
        mbox.push_str(eol);
    }
    mbox.into_bytes()
}

fn hit_locators(h: &Value) -> Vec<String> {
    let mut all = vec![h["locator"].as_str().unwrap_or_default().to_string()];
    if let Some(also) = h["also_in"].as_array() {
        all.extend(also.iter().filter_map(|l| l.as_str().map(str::to_string)));
    }
    all
}

#[test]
fn a_mailbox_of_a_thousand_mails_is_walked_to_every_attachment() {
    let sb = Sandbox::new();
    let mbox = sb.write("box.mbox", &mailbox());
    let (lines, summary, code) = sb.ingest(&[&mbox]);
    assert_eq!(code, 0, "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    let locators: Vec<&str> = lines.iter().filter_map(|l| l["locator"].as_str()).collect();
    let mails: Vec<&&str> = locators
        .iter()
        .filter(|l| l.matches("!/").count() == 1 && l.ends_with(".eml"))
        .collect();
    assert_eq!(mails.len() as u64, MAILS, "one line per mail");
    let count = |suffix: &str| {
        locators
            .iter()
            .filter(|l| l.contains(".eml!/") && l.ends_with(suffix))
            .count() as u64
    };
    assert_eq!(count(".pdf"), MAILS / 10);
    assert_eq!(count(".docx"), MAILS / 10);
    assert_eq!(count(".zip"), MAILS / 10);
    assert_eq!(
        count("!/README.txt"),
        MAILS / 10,
        "the members of attached ZIPs"
    );
    // Attached messages: each a container with its own text.
    assert_eq!(count("/message.txt"), MAILS + MAILS / 50);
    let line = |loc: &str| {
        lines
            .iter()
            .find(|l| l["locator"] == loc)
            .unwrap_or_else(|| panic!("no line for {loc}"))
    };
    let sought = format!("{}!/{SOUGHT:04} {SOUGHT_SUBJECT}.eml", mbox.display());
    assert!(
        line(&sought)["reason"]
            .as_str()
            .is_some_and(|r| r.contains(SOUGHT_SENDER) && r.contains(SOUGHT_SUBJECT)),
        "{}",
        line(&sought)
    );

    // A page of an attached PDF, searchable under the mail.
    let hits = sb.search_with(
        &["--limit", "5"],
        "Install the tide gauge on the north pier",
    );
    assert!(
        hits.iter().flat_map(hit_locators).any(|l| {
            l.contains("box.mbox!/") && l.contains(".eml!/survey-") && l.ends_with(".pdf#page=2")
        }),
        "{hits:#?}"
    );
    // The DOCX and the ZIP's member, the same way.
    let hits = sb.search_with(&["--limit", "5"], "life jacket on the jetty at Vennesund");
    assert!(
        hits.iter()
            .flat_map(hit_locators)
            .any(|l| l.contains(".eml!/handbook-") && l.contains(".docx")),
        "{hits:#?}"
    );
    // An attached message's own text.
    let hits = sb.search_with(
        &["--limit", "5"],
        "original request number 357 second mooring buoy",
    );
    assert!(
        hits.iter()
            .flat_map(hit_locators)
            .any(|l| l.contains(".eml!/request-357.eml!/message.txt")),
        "{hits:#?}"
    );

    // A mail by its subject and by its sender.
    for query in [SOUGHT_SUBJECT, SOUGHT_SENDER] {
        let hits = sb.search_with(&["--limit", "5"], query);
        assert!(
            hits.iter()
                .flat_map(hit_locators)
                .any(|l| l.starts_with(&sought)),
            "{query}: {hits:#?}"
        );
    }

    // Browsing a mail lists its text and its attachment.
    let mail_with_pdf = locators
        .iter()
        .find(|l| l.contains(".eml!/survey-11.pdf"))
        .map(|l| l.rsplit_once("!/").unwrap().0.to_string())
        .unwrap();
    let out = sb.run(&["browse", "--json", &mail_with_pdf]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("message.txt") && listing.contains("survey-11.pdf"),
        "{listing}"
    );

    // Every attachment of every mail (PDF, DOCX, ZIP, attached message): listed when its
    // mail is browsed, and found by a search within it (the library's tools, in process).
    let ingestor = ingest::Ingestor::open(library_config(&sb.data_dir())).unwrap();
    let scope = ingest::Scope {
        user_id: "local".into(),
        ..ingest::Scope::default()
    };
    let attachments: Vec<&&str> = locators
        .iter()
        .filter(|l| l.matches("!/").count() == 2 && !l.ends_with("/message.txt"))
        .collect();
    assert_eq!(
        attachments.len() as u64,
        3 * MAILS / 10 + MAILS / 50,
        "{attachments:?}"
    );
    let answer = |call: ingest::tools::ToolCall| -> Value {
        let a = ingest::tools::call(&ingestor, &scope, &call);
        assert!(!a.is_error, "{call:?}: {}", a.text);
        serde_json::from_str(&a.text).unwrap()
    };
    // Identical attachments (the same PDF in 100 mails) are one point per scope, naming a
    // bounded list of its files: each copy is still found within itself, named there.
    let mut unsearchable: Vec<String> = Vec::new();
    for attachment in &attachments {
        let (mail, name) = attachment.rsplit_once("!/").unwrap();
        let members = answer(ingest::tools::ToolCall::BrowseContainer(
            ingest::tools::BrowseArgs {
                locator: Some(mail.to_string()),
                max_chars: Some(20_000),
                ..Default::default()
            },
        ));
        assert!(
            members["members"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["name"] == name),
            "{attachment}: {members}"
        );
        let found = answer(ingest::tools::ToolCall::SearchDocuments(
            ingest::tools::SearchArgs {
                query: "harbour mooring pier report".into(),
                locator: Some(attachment.to_string()),
                min_score: Some(0.0),
                limit: Some(1),
                ..Default::default()
            },
        ));
        let named = found["hits"][0]["locator"]
            .as_str()
            .is_some_and(|l| l.starts_with(*attachment));
        if !named {
            unsearchable.push(format!("{attachment}: {found}"));
        }
    }
    println!(
        "every attachment browseable ({}) and found within itself, named there ({})",
        attachments.len(),
        attachments.len() - unsearchable.len(),
    );
    assert!(
        unsearchable.is_empty(),
        "{} attachments not found within themselves: {:?}",
        unsearchable.len(),
        &unsearchable[..unsearchable.len().min(3)]
    );
}

/// A Dovecot IMAP server on a loopback port serving `inbox` (an mbox) as alice's INBOX
/// (password [`IMAP_PASSWORD`]), logging each session's body fetches; `None` (after saying
/// SKIPPED) where Dovecot is not installed or cannot run.
struct Imap {
    child: std::process::Child,
    port: u16,
    log: std::path::PathBuf,
}

const IMAP_PASSWORD: &str = "imap-secret-never-shown";

/// A certificate and its key (PEM files) for Dovecot's IMAPS listener.
struct Tls {
    cert: std::path::PathBuf,
    key: std::path::PathBuf,
}

impl Imap {
    fn start(sb: &Sandbox, inbox: &[u8]) -> Option<Imap> {
        Self::start_with(sb, inbox, None)
    }

    /// [`Imap::start`]; with `tls`, the port is an IMAPS listener (TLS from the first byte)
    /// and plain IMAP is off.
    fn start_with(sb: &Sandbox, inbox: &[u8], tls: Option<&Tls>) -> Option<Imap> {
        let dovecot = std::path::PathBuf::from("/usr/sbin/dovecot");
        if !dovecot.exists() {
            eprintln!("SKIPPED: Dovecot is not installed (make deps installs dovecot-imapd)");
            return None;
        }
        let root = std::fs::read_to_string("/proc/self/status")
            .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:\t0")));
        if !root {
            eprintln!("SKIPPED: Dovecot runs here as root only");
            return None;
        }
        // The mail is read as `nobody` (Dovecot never reads mail as root).
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(sb.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = sb.path("dovecot");
        let home = dir.join("home/alice");
        for d in [&home, &dir.join("run"), &dir.join("state")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(home.join("inbox.mbox"), inbox).unwrap();
        for p in [dir.join("home"), home.clone(), home.join("inbox.mbox")] {
            std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        }
        std::fs::write(
            dir.join("passwd"),
            format!("alice:{{PLAIN}}{IMAP_PASSWORD}\n"),
        )
        .unwrap();
        let log = dir.join("dovecot.log");
        for _ in 0..10 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let conf = dir.join("dovecot.conf");
            let (ssl, plain_port, tls_port) = match tls {
                Some(t) => (
                    format!(
                        "ssl = required\nssl_cert = <{}\nssl_key = <{}\n",
                        t.cert.display(),
                        t.key.display()
                    ),
                    0,
                    port,
                ),
                None => ("ssl = no\n".to_string(), port, 0),
            };
            std::fs::write(
                &conf,
                format!(
                    "base_dir = {d}/run\nstate_dir = {d}/state\nlog_path = {log}\n\
                     info_log_path = {log}\nprotocols = imap\nlisten = 127.0.0.1\n{ssl}\
                     disable_plaintext_auth = no\nauth_mechanisms = plain\n\
                     passdb {{\n driver = passwd-file\n args = scheme=PLAIN username_format=%u {d}/passwd\n}}\n\
                     userdb {{\n driver = static\n args = uid=65534 gid=65534 home={d}/home/%u\n}}\n\
                     mail_location = mbox:~/mail:INBOX=~/inbox.mbox\n\
                     imap_logout_format = fetch_body=%{{fetch_body_count}}\n\
                     service imap-login {{\n inet_listener imap {{\n  address = 127.0.0.1\n  port = {plain_port}\n }}\n\
                      inet_listener imaps {{\n  address = 127.0.0.1\n  port = {tls_port}\n }}\n}}\n",
                    d = dir.display(),
                    log = log.display(),
                ),
            )
            .unwrap();
            let _ = std::fs::remove_file(dir.join("run/master.pid"));
            let mut child = std::process::Command::new(&dovecot)
                .arg("-F")
                .arg("-c")
                .arg(&conf)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start dovecot");
            let up = wait_for(std::time::Duration::from_secs(30), || {
                std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                    || !matches!(child.try_wait(), Ok(None))
            });
            std::thread::sleep(std::time::Duration::from_millis(300));
            if up.is_some() && matches!(child.try_wait(), Ok(None)) {
                return Some(Imap { child, port, log });
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!(
            "Dovecot did not start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    fn url(&self) -> String {
        format!("imap://alice@127.0.0.1:{}/INBOX", self.port)
    }

    /// The fetch counts Dovecot logged so far, one per session that ended.
    fn session_fetches(&self) -> Vec<u64> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split("fetch_body=").nth(1)?.trim().parse::<u64>().ok())
            .collect()
    }

    /// How many sessions ended so far.
    fn sessions(&self) -> usize {
        self.session_fetches().len()
    }

    /// Message bodies fetched by every session, once more than `before` sessions have ended
    /// and none more ends for half a second: Dovecot writes a session's line when the
    /// client has gone, which may be after `ingest` exited (a hang guard of 30 s).
    fn bodies_fetched_after(&self, before: usize) -> u64 {
        let ended = wait_for(std::time::Duration::from_secs(30), || {
            self.sessions() > before
        });
        assert!(ended.is_some(), "Dovecot logged no session's end");
        let mut seen = self.sessions();
        loop {
            std::thread::sleep(std::time::Duration::from_millis(500));
            let now = self.sessions();
            if now == seen {
                return self.session_fetches().iter().sum();
            }
            seen = now;
        }
    }

    /// Flag the message `uid` deleted and expunge it (a plain IMAP session over TCP).
    fn expunge(&self, uid: u64) {
        use std::io::{BufRead, BufReader, Write};
        let stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        for (tag, command) in [
            ("a1", format!("LOGIN alice {IMAP_PASSWORD}")),
            ("a2", "SELECT INBOX".into()),
            ("a3", format!("UID STORE {uid} +FLAGS (\\Deleted)")),
            ("a4", "EXPUNGE".into()),
            ("a5", "LOGOUT".into()),
        ] {
            write!(writer, "{tag} {command}\r\n").unwrap();
            loop {
                line.clear();
                assert!(
                    reader.read_line(&mut line).unwrap() > 0,
                    "{command}: closed"
                );
                if line.starts_with(tag) {
                    assert!(line.starts_with(&format!("{tag} OK")), "{command}: {line}");
                    break;
                }
            }
        }
    }
}

impl Drop for Imap {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a ledger line says of one file: status, chunks, content hash, whether a container.
type Line = (String, u64, String, bool);

/// The ledger lines below `prefix`, keyed by what follows it.
fn below(lines: &[Value], prefix: &str) -> std::collections::BTreeMap<String, Line> {
    lines
        .iter()
        .filter_map(|l| {
            let rest = l["locator"].as_str()?.strip_prefix(prefix)?;
            Some((
                rest.to_string(),
                (
                    l["status"].as_str().unwrap_or_default().to_string(),
                    l["chunks"].as_u64().unwrap_or(0),
                    l["hash"].as_str().unwrap_or_default().to_string(),
                    l["archive"].as_bool().unwrap_or(false),
                ),
            ))
        })
        .collect()
}

/// A mailbox through IMAP (Dovecot on loopback) gives the same files, chunks and content
/// hashes as the same mails read from an mbox file; a second sync fetches no message body;
/// an expunged mail (with its attachments) leaves the index at the next sync.
#[test]
fn an_imap_mailbox_gives_the_points_of_its_mbox_and_expunged_mail_leaves() {
    // The first mails of the mailbox test, lines ending in CRLF: IMAP sends every line so
    // (a server turns a bare LF into one), as a mail sent over SMTP is.
    let mbox = mailbox_of(IMAP_MAILS, true);
    // The mbox file, read from disk.
    let local = Sandbox::new();
    let path = local.write("box.mbox", &mbox);
    let (local_lines, summary, code) = local.ingest(&[&path]);
    assert_eq!(code, 0, "{summary}");
    let canonical = std::fs::canonicalize(&path).unwrap();
    let from_file = below(&local_lines, &format!("{}!/", canonical.display()));
    assert!(
        from_file.len() as u64 > IMAP_MAILS * 2,
        "{}",
        from_file.len()
    );

    // The same mails through IMAP.
    let sb = Sandbox::new();
    let Some(imap) = Imap::start(&sb, &mbox) else {
        return;
    };
    let sync = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(["--json", &imap.url(), "--data-dir"])
            .arg(sb.data_dir())
            .env("INGEST_IMAP_PASSWORD", IMAP_PASSWORD)
            .env("RUST_LOG", "debug")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            !stderr.contains(IMAP_PASSWORD),
            "the log shows the password"
        );
        let mut lines = json_lines(&out);
        let summary = lines.pop().expect("a summary")["summary"].clone();
        assert!(
            !serde_json::to_string(&lines)
                .unwrap()
                .contains(IMAP_PASSWORD),
            "a ledger line shows the password"
        );
        (lines, summary, out.status.code(), stderr)
    };
    let (lines, summary, code, stderr) = sync();
    assert_eq!(code, Some(0), "{summary} {stderr}");
    let fetched = imap.bodies_fetched_after(0);
    let root = format!("imap://127.0.0.1:{}/INBOX/", imap.port);
    let from_imap = below(&lines, &root);
    assert_eq!(
        from_imap.keys().collect::<Vec<_>>(),
        from_file.keys().collect::<Vec<_>>(),
        "the same mails and attachments"
    );
    // Every mail and every file read from it (texts, attachments, their members) has the
    // same status, chunks and content: the same points.
    for (key, line) in &from_file {
        assert_eq!(&from_imap[key], line, "{key}: another file through IMAP");
    }
    let leaves = from_file.values().filter(|l| !l.3).count();
    assert!(leaves as u64 > IMAP_MAILS, "{leaves}");
    assert_eq!(fetched, IMAP_MAILS, "one body fetch per mail");
    println!(
        "{} mails through IMAP: {} files (mails, texts, attachments, members) with the lines \
         of the mbox read from disk; {fetched} bodies fetched",
        IMAP_MAILS,
        from_imap.len()
    );

    // Unchanged: nothing fetched again. Mail 7 (with its attached message) expunged: gone.
    imap.expunge(7);
    let before = imap.bodies_fetched_after(0);
    let sessions = imap.sessions();
    let (lines, summary, code, _) = sync();
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(
        imap.bodies_fetched_after(sessions),
        before,
        "an unchanged mail is not fetched again"
    );
    assert_eq!(summary["indexed"], 0, "{summary}");
    let seventh: Vec<&String> = from_imap.keys().filter(|k| k.starts_with("0007")).collect();
    assert!(seventh.len() >= 3, "{seventh:?}");
    assert_eq!(summary["removed"], seventh.len() as u64, "{summary}");
    let removed = below(&lines, &root);
    for key in &seventh {
        assert_eq!(removed[*key].0, "removed", "{key}");
    }
    let out = sb.run(&["files", "--json"]);
    let files: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(files.iter().all(|f| !f["locator"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{root}0007"))));
    assert_eq!(files.len(), from_imap.len() - seventh.len());

    // A mailbox whose name holds a space and a non-ASCII letter, given percent-encoded in
    // the URL (Dovecot stores it under its modified UTF-7 name).
    let mail_dir = sb.path("dovecot/home/alice/mail");
    std::fs::create_dir_all(&mail_dir).unwrap();
    let drafts = mail_dir.join("Sent Items Entw&APw-rfe");
    let two = two_mails(
        |i| format!("Draft {i} about the slipway"),
        |i| format!("Slipway {i} needs new rails before the spring tides."),
    );
    std::fs::write(&drafts, two).unwrap();
    for p in [&mail_dir, &drafts] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    let url = format!(
        "imap://alice@127.0.0.1:{}/Sent%20Items%20Entw%C3%BCrfe",
        imap.port
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", &url, "--data-dir"])
        .arg(sb.data_dir())
        .env("INGEST_IMAP_PASSWORD", IMAP_PASSWORD)
        .output()
        .unwrap();
    let mut lines = json_lines(&out);
    let summary = lines.pop().expect("a summary")["summary"].clone();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    // The locator keeps the URL as written (its `%` escaped as a locator escapes it).
    let drafts_root = format!(
        "imap://127.0.0.1:{}/Sent%2520Items%2520Entw%25C3%25BCrfe/",
        imap.port
    );
    let read = below(&lines, &drafts_root);
    for name in [
        "0001 Draft 1 about the slipway.eml",
        "0002 Draft 2 about the slipway.eml",
    ] {
        let text = format!("{name}!/message.txt");
        assert_eq!(
            read.get(&text).map(|l| l.0.as_str()),
            Some("indexed"),
            "{text}: {lines:?}"
        );
    }
}

/// An mbox (CRLF lines, as IMAP sends them) of two plain mails, subject and body of mail
/// `i` (1, 2) as given.
fn two_mails(subject: impl Fn(u64) -> String, body: impl Fn(u64) -> String) -> String {
    let mut mbox = String::new();
    for i in 1..=2u64 {
        mbox.push_str("From clerk@brackwater.example Mon Mar  2 09:00:00 2026\r\n");
        mbox.push_str(&message(
            "Clerk <clerk@brackwater.example>",
            &subject(i),
            i,
            &body(i),
            &[],
        ));
        mbox.push_str("\r\n");
    }
    mbox
}

/// Run `openssl` with `args` (split at white space) in `dir`; whether it succeeded.
fn openssl(dir: &std::path::Path, args: &str) -> bool {
    std::process::Command::new("openssl")
        .current_dir(dir)
        .args(args.split_whitespace())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The arguments of `openssl req` that make a new P-256 key without a passphrase.
const NEW_EC_KEY: &str = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";

/// An authority's certificate `name.pem` and key `name.key` in `dir`.
fn authority(dir: &std::path::Path, name: &str) {
    assert!(openssl(
        dir,
        &format!(
            "req -x509 {NEW_EC_KEY} -keyout {name}.key -out {name}.pem -days 2 -subj /CN={name} \
             -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign"
        ),
    ));
}

/// `imaps://` over TLS (Dovecot's IMAPS listener, a certificate for 127.0.0.1 signed by a
/// test authority): trusted through `SSL_CERT_FILE`, the mailbox is read; signed by an
/// authority the client does not trust, the connection is refused with a reason naming the
/// certificate, and no mail is read.
#[test]
fn an_imaps_mailbox_is_read_over_tls_and_an_untrusted_certificate_is_refused() {
    let sb = Sandbox::new();
    let tls_dir = sb.path("tls");
    std::fs::create_dir_all(&tls_dir).unwrap();
    if !openssl(&tls_dir, "version") {
        eprintln!("SKIPPED: openssl is not installed (it makes the test's certificates)");
        return;
    }
    authority(&tls_dir, "test-ca");
    authority(&tls_dir, "other-ca");
    std::fs::write(
        tls_dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    assert!(openssl(
        &tls_dir,
        &format!("req {NEW_EC_KEY} -keyout server.key -out server.csr -subj /CN=127.0.0.1"),
    ));
    assert!(openssl(
        &tls_dir,
        "x509 -req -in server.csr -CA test-ca.pem -CAkey test-ca.key -CAcreateserial \
         -out server.pem -days 2 -extfile server.ext",
    ));
    let inbox = two_mails(
        |i| format!("Encrypted note {i}"),
        |i| format!("Note {i}: the breakwater lights were tested over a TLS connection."),
    );
    let tls = Tls {
        cert: tls_dir.join("server.pem"),
        key: tls_dir.join("server.key"),
    };
    let Some(imap) = Imap::start_with(&sb, inbox.as_bytes(), Some(&tls)) else {
        return;
    };
    let url = format!("imaps://alice@127.0.0.1:{}/INBOX", imap.port);
    let sync = |authority: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(["--json", &url, "--data-dir"])
            .arg(sb.data_dir())
            .env("INGEST_IMAP_PASSWORD", IMAP_PASSWORD)
            .env("SSL_CERT_FILE", tls_dir.join(authority))
            .env_remove("SSL_CERT_DIR")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out, text)
    };
    let (out, text) = sync("other-ca.pem");
    assert!(!out.status.success(), "{text}");
    assert!(text.to_lowercase().contains("certificate"), "{text}");
    assert!(!text.contains(IMAP_PASSWORD), "{text}");
    assert!(
        imap.session_fetches().iter().all(|&n| n == 0),
        "no mail read over an untrusted connection"
    );
    let sessions = imap.sessions();

    let (out, text) = sync("test-ca.pem");
    assert!(out.status.success(), "{text}");
    let lines = json_lines(&out);
    let root = format!("imaps://127.0.0.1:{}/INBOX/", imap.port);
    let read = below(&lines, &root);
    for i in 1..=2 {
        let text = format!("{i:04} Encrypted note {i}.eml!/message.txt");
        assert_eq!(
            read.get(&text).map(|l| l.0.as_str()),
            Some("indexed"),
            "{text}: {read:?}"
        );
    }
    assert_eq!(imap.bodies_fetched_after(sessions), 2);
}
