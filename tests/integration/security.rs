//! The security suite: every finding of the attacker's review of `ingest serve` (issue 24) as
//! a regression test through the real service, over HTTP (ureq, and raw TCP where a client
//! library would hide the attack) and MCP (the official Python client in
//! `tests/mcp/service_mcp.py`). docs/SECURITY.md says what each rule and limit is for.
//!
//! Time limits here are hang guards; what is asserted is the answer (status, body) and the
//! bounds the service promises.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::service::{file_lines, job_of, Client, Service, ALICE, BOB, METRICS};
use crate::util::{fixtures, repo_dir, Sandbox};

const ALICE_GLOBEX: &str = "k-alice-globex-0123456789";
const CAROL: &str = "k-carol-0123456789abcdef";

/// A configuration of `keys` (key, user, mandate), with `extra` lines first.
fn config(sb: &Sandbox, extra: &str, keys: &[(&str, &str, Option<&str>)]) {
    let mut text = format!("metrics_key = \"{METRICS}\"\n{extra}\n");
    for (key, user, mandate) in keys {
        text.push_str(&format!(
            "\n[[api_keys]]\nkey = \"{key}\"\nuser = \"{user}\"\n"
        ));
        if let Some(m) = mandate {
            text.push_str(&format!("mandate = \"{m}\"\n"));
        }
    }
    std::fs::write(sb.path("ingest.toml"), text).unwrap();
}

/// Call tool `name` with `args` over HTTP: the status and the answer.
fn tool(client: &Client, name: &str, args: Value) -> (u16, Value) {
    client.post(
        &format!("/v1/tools/{name}"),
        "application/json",
        args.to_string().as_bytes(),
    )
}

/// Upload and wait: the ended job.
fn uploaded(client: &Client, name: &str, bytes: &[u8]) -> Value {
    let (status, answer) = client.upload(name, bytes);
    assert_eq!(status, 202, "{name}: {answer}");
    let ended = client.wait_job(&job_of(&answer));
    assert_eq!(ended["state"], "indexed", "{name}: {ended}");
    ended
}

/// Upload with `?shared=true` and wait.
fn uploaded_shared(client: &Client, name: &str, bytes: &[u8]) -> Value {
    let (status, answer) = client.post(
        &format!("/v1/files?name={name}&shared=true"),
        "application/octet-stream",
        bytes,
    );
    assert_eq!(status, 202, "{name}: {answer}");
    let ended = client.wait_job(&job_of(&answer));
    assert_eq!(ended["state"], "indexed", "{name}: {ended}");
    ended
}

/// The host address of a service URL (`127.0.0.1:PORT`).
fn addr(service: &Service) -> String {
    service.url.trim_start_matches("http://").to_string()
}

/// What the server sends on `s` until it closes the connection or the read times out (at
/// most 1 MiB).
#[allow(clippy::disallowed_methods)] // bounded by take
fn read_answer(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = s.take(1 << 20).read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Send `request` on a fresh connection and read the answer until the server closes it or
/// `limit` passes: the status code (0 when none came) and the whole text.
fn raw(service: &Service, request: &[u8], limit: Duration) -> (u16, String) {
    let mut s = TcpStream::connect(addr(service)).unwrap();
    s.set_read_timeout(Some(limit)).unwrap();
    s.write_all(request).unwrap();
    let text = read_answer(&mut s);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// Where a cross-scope case runs: one node, or two `ingest serve` nodes sharing a PostgreSQL
/// catalog and upload queue, a Qdrant server collection and a spool folder (issue 40: the
/// security suite's cross-scope cases hold on every node of a deployment). Each node has its
/// own data directory and a copy of `sb/ingest.toml`.
struct Nodes {
    nodes: Vec<Service>,
    /// The nodes' sandboxes after the first (the caller's), and the shared servers.
    _more: Vec<Sandbox>,
    shared: Option<Shared>,
}

/// The servers two nodes share, and the catalog and store URLs they are started with.
struct Shared {
    _pg: ingest_index::testkit::PostgresServer,
    _qdrant: ingest_index::testkit::QdrantServer,
    catalog: String,
    store: String,
}

impl Nodes {
    /// One node on `sb`.
    fn one(sb: &Sandbox) -> Nodes {
        Nodes {
            nodes: vec![Service::start_config(sb, &[])],
            _more: Vec::new(),
            shared: None,
        }
    }

    /// Two nodes sharing PostgreSQL and Qdrant, or `None` (said loudly) when either cannot
    /// start here.
    fn two(sb: &Sandbox) -> Option<Nodes> {
        let pg = ingest_index::testkit::PostgresServer::start()?;
        let Some(qdrant) = ingest_index::testkit::QdrantServer::start() else {
            eprintln!("{}", ingest_index::testkit::QDRANT_SKIPPED);
            return None;
        };
        let (catalog, store) = (pg.database("security"), qdrant.store_url(0, "security"));
        let mut nodes = Nodes {
            nodes: Vec::new(),
            _more: vec![Sandbox::new()],
            shared: Some(Shared {
                _pg: pg,
                _qdrant: qdrant,
                catalog,
                store,
            }),
        };
        nodes.restart(sb);
        Some(nodes)
    }

    /// (Re)start every node with `sb/ingest.toml` as it is now.
    fn restart(&mut self, sb: &Sandbox) {
        for node in self.nodes.drain(..) {
            assert!(node.stop().success());
        }
        let Some(shared) = &self.shared else {
            self.nodes.push(Service::start_config(sb, &[]));
            return;
        };
        let config = std::fs::read_to_string(sb.path("ingest.toml")).unwrap();
        let config: String = config
            .lines()
            .filter(|l| !l.starts_with("spool_dir = "))
            .map(|l| format!("{l}\n"))
            .collect();
        let spool = sb.path("spool");
        let config = format!("spool_dir = \"{}\"\n{config}", spool.display());
        for node in std::iter::once(sb).chain(&self._more) {
            std::fs::write(node.path("ingest.toml"), &config).unwrap();
        }
        let args = ["--catalog", &shared.catalog, "--store", &shared.store];
        for node in std::iter::once(sb).chain(&self._more) {
            self.nodes.push(Service::start_config(node, &args));
        }
    }

    /// The first node (where uploads go) and the last (where they are asked about).
    fn first(&self) -> &Service {
        &self.nodes[0]
    }

    fn last(&self) -> &Service {
        &self.nodes[self.nodes.len() - 1]
    }

    fn stop(self) {
        for node in self.nodes {
            assert!(node.stop().success());
        }
    }
}

/// Host file read: an upload's name is never resolved against the server's disk. The
/// service runs in the repository's folder, where `fixtures/archives/bundle.zip` exists.
#[test]
fn security_an_uploaded_name_never_opens_a_file_of_the_server() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    let secret = "who kept the lighthouse on Skerry Point";
    assert!(repo_dir().join("fixtures/archives/bundle.zip").is_file());

    // Names that could be taken for paths are refused, with the reason.
    for name in [
        "../../../../../../../../etc/passwd",
        "/etc/passwd",
        "a/../../fixtures/archives/bundle.zip",
        "./fixtures/archives/bundle.zip",
    ] {
        let (status, answer) = alice.upload(name, b"x");
        assert_eq!(status, 400, "{name}: {answer}");
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("bad upload name"),
            "{name}: {answer}"
        );
    }
    // A plain relative name that happens to name a file in the server's folder: a name.
    uploaded(&alice, "fixtures/archives/bundle.zip", b"just a note\n");
    let member = "fixtures/archives/bundle.zip!/docs/inner.tar.gz!/notes/lighthouse.md";
    let (status, answer) = tool(
        &alice,
        "extract_container_item",
        json!({ "locator": member }),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer["error"].is_string(), "extracted from disk: {answer}");
    assert!(!answer.to_string().contains("Ingrid"), "{answer}");
    let (_, read) = tool(&alice, "read_content_objects", json!({ "locator": member }));
    assert!(read["error"].is_string(), "{read}");
    assert!(
        alice
            .search(secret, 10)
            .iter()
            .all(|h| !h["text"].as_str().unwrap_or_default().contains("Ingrid")),
        "the server's own archive reached the index"
    );
    assert!(service.stop().success());
}

/// An uploaded archive whose members a limit left out is kept (within its quota) and those
/// members are extracted on demand from the kept bytes; a deleted upload leaves no bytes.
#[test]
fn security_members_left_out_of_an_upload_are_extracted_from_its_kept_bytes() {
    left_out_members_are_extracted(|sb| Some(Nodes::one(sb)));
}

/// The same on two nodes: the archive is uploaded to one, its member extracted on the other
/// (kept archives live in the shared spool).
#[test]
fn qdrant_security_members_left_out_of_an_upload_are_extracted_on_another_node() {
    left_out_members_are_extracted(Nodes::two);
}

fn left_out_members_are_extracted(start: fn(&Sandbox) -> Option<Nodes>) {
    let sb = Sandbox::new();
    config(
        &sb,
        "[limits]\nmax_files = 2",
        &[(ALICE, "alice", Some("acme")), (BOB, "bob", Some("acme"))],
    );
    let Some(nodes) = start(&sb) else {
        return;
    };
    let alice = Client::new(nodes.first(), Some(ALICE));
    let bob = Client::new(nodes.last(), Some(BOB));
    let zip = ingest_unpack::zip_of(&[
        ("a.txt", b"The first note of the crate.\n"),
        ("b.txt", b"The second note of the crate.\n"),
        (
            "c.txt",
            b"The third note mentions the brass anemometer cups.\n",
        ),
    ]);
    let job = uploaded(&alice, "crate.zip", &zip);
    assert!(job.to_string().contains("file-count"), "{job}");
    let kept = if nodes.nodes.len() > 1 {
        sb.path("spool/kept")
    } else {
        sb.data_dir().join("uploads/kept")
    };
    assert_eq!(std::fs::read_dir(&kept).unwrap().count(), 1);
    let alice = Client::new(nodes.last(), Some(ALICE));
    // Bob may not extract from Alice's archive (it is not his, nor shared): missing to him.
    let (_, answer) = tool(
        &bob,
        "extract_container_item",
        json!({ "locator": "crate.zip!/c.txt" }),
    );
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("no such locator"),
        "{answer}"
    );
    let (_, answer) = tool(
        &alice,
        "extract_container_item",
        json!({ "locator": "crate.zip!/c.txt" }),
    );
    assert_eq!(answer["extracted"]["status"], "indexed", "{answer}");
    let hits = alice.search("brass anemometer cups", 3);
    assert!(
        hits[0]["locator"]
            .as_str()
            .unwrap()
            .starts_with("crate.zip!/c.txt#"),
        "{hits:?}"
    );
    // Every kept file, in every principal's folder.
    let kept_files = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&kept)
            .unwrap()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
            .map(|f| f.path())
            .collect()
    };
    let (status, _) = alice.delete("/v1/files?locator=crate.zip");
    assert_eq!(status, 200);
    assert_eq!(
        std::fs::read_dir(&kept).unwrap().count(),
        0,
        "a deleted upload's bytes stay behind: {:?}",
        kept_files()
    );
    nodes.stop();
}

/// Shadowing: a colleague's shared file of the same name never replaces the user's own in an
/// answer; both stay reachable, each answer says whose file it is.
#[test]
fn security_a_shared_file_never_shadows_the_users_own() {
    shared_never_shadows(|sb| Some(Nodes::one(sb)));
}

/// [`security_a_shared_file_never_shadows_the_users_own`] on two nodes: the reader uploads
/// to one, the colleague to the other, and the reader asks each in turn.
#[test]
fn qdrant_security_a_shared_file_never_shadows_the_users_own_on_two_nodes() {
    shared_never_shadows(Nodes::two);
}

fn shared_never_shadows(start: fn(&Sandbox) -> Option<Nodes>) {
    let sb = Sandbox::new();
    config(
        &sb,
        "",
        &[(ALICE, "alice", Some("acme")), (BOB, "bob", Some("acme"))],
    );
    let Some(nodes) = start(&sb) else {
        return;
    };
    // The reader (bob) sorts after the colleague (alice) who shares a file of the same
    // name: a winner picked by sorting scopes, as before, would be the colleague's.
    let me = Client::new(nodes.first(), Some(BOB));
    let colleague = Client::new(nodes.last(), Some(ALICE));
    let mine = "Bob keeps the spare keys of the boathouse in the blue tin.";
    let theirs = "Alice says the spare keys of the boathouse are under the mat.";
    uploaded(&me, "notes.md", format!("{mine}\n").as_bytes());
    uploaded_shared(&colleague, "notes.md", format!("{theirs}\n").as_bytes());

    for round in 0..2 {
        // Asked on each node in turn.
        let me = Client::new(&nodes.nodes[round % nodes.nodes.len()], Some(BOB));
        // The bare locator is the reader's own, and says another owner has the same locator.
        let (_, read) = tool(
            &me,
            "read_content_objects",
            json!({ "locator": "notes.md" }),
        );
        let text = read.to_string();
        assert!(
            text.contains(mine) && !text.contains(theirs),
            "{round}: {read}"
        );
        assert!(read.get("owner").is_none(), "{read}");
        assert_eq!(read["other_owners"], json!(["alice (shared)"]), "{read}");
        // The colleague's is reachable by its owner, and says whose it is.
        let (_, read) = tool(
            &me,
            "read_content_objects",
            json!({ "locator": "notes.md", "owner": "alice (shared)" }),
        );
        assert!(read.to_string().contains(theirs), "{read}");
        assert_eq!(read["owner"], "alice (shared)", "{read}");
        // Search hits say whose they are.
        let (_, found) = tool(
            &me,
            "search_documents",
            json!({ "query": "spare keys of the boathouse", "limit": 5, "kind": "passage" }),
        );
        let hits = found["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 2, "{found}");
        for h in hits {
            let own = h["snippet"].as_str().unwrap().contains("blue tin");
            assert_eq!(h.get("owner").is_none(), own, "{h}");
            if !own {
                assert_eq!(h["owner"], "alice (shared)", "{h}");
            }
        }
        // So do the hits of the HTTP search.
        for h in me.search("spare keys of the boathouse", 5) {
            if h["kind"] == "card" {
                continue; // a card's text does not tell whose file it is
            }
            let own = h["text"].as_str().unwrap().contains("blue tin");
            assert_eq!(h.get("owner").is_none(), own, "{h}");
        }
        // Browse lists the file once, as the reader's, with the other owner named.
        let (_, top) = tool(&me, "browse_container", json!({}));
        let notes: Vec<&Value> = top["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["name"] == "notes.md")
            .collect();
        assert_eq!(notes.len(), 1, "{top}");
        assert_eq!(notes[0]["other_owners"], json!(["alice (shared)"]), "{top}");
        // Status is the reader's own file.
        let (status, file) = me.get("/v1/files/status?locator=notes.md");
        assert_eq!(status, 200, "{file}");
        assert!(file.get("owner").is_none(), "{file}");
        // The colleague uploads a new version: the reader still reads their own.
        uploaded_shared(
            &colleague,
            "notes.md",
            format!("{theirs} Again.\n").as_bytes(),
        );
    }
    // A colleague's file named like the reader's folder hides neither.
    uploaded(&me, "team/plan.md", b"The reader's plan for the team.\n");
    uploaded_shared(&colleague, "team", b"The colleague's file called team.\n");
    let (_, top) = tool(&me, "browse_container", json!({}));
    let team: Vec<&Value> = top["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "team")
        .collect();
    assert_eq!(team.len(), 2, "{top}");
    assert_eq!(team[0]["kind"], "folder", "{top}");
    assert_eq!(team[1]["owner"], "alice (shared)", "{top}");
    let (_, folder) = tool(&me, "browse_container", json!({ "locator": "team" }));
    assert_eq!(folder["kind"], "folder", "{folder}");
    assert!(folder.to_string().contains("plan.md"), "{folder}");
    assert_eq!(
        folder["other_owners"],
        json!(["alice (shared)"]),
        "{folder}"
    );
    let (_, file) = tool(
        &me,
        "read_content_objects",
        json!({ "locator": "team", "owner": "alice (shared)" }),
    );
    assert!(file.to_string().contains("file called team"), "{file}");
    // An owner nobody is: as missing.
    let (_, read) = tool(
        &me,
        "read_content_objects",
        json!({ "locator": "notes.md", "owner": "mallory (shared)" }),
    );
    assert!(
        read["error"].as_str().unwrap().contains("no such locator"),
        "{read}"
    );
    // Deletes name the exact file: the colleague's is shared (they are told so), the reader
    // may not delete it, and the colleague never reaches the reader's private one.
    let (status, answer) = colleague.delete("/v1/files?locator=notes.md");
    assert_eq!(status, 403, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("shared=true"),
        "{answer}"
    );
    let (status, answer) = me.delete("/v1/files?locator=notes.md&shared=true");
    assert_eq!(status, 403, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("alice (shared)"),
        "{answer}"
    );
    let (status, _) = colleague.delete("/v1/files?locator=notes.md&shared=true");
    assert_eq!(status, 200);
    let (_, read) = tool(
        &me,
        "read_content_objects",
        json!({ "locator": "notes.md" }),
    );
    assert!(read.to_string().contains(mine), "{read}");
    assert!(read.get("other_owners").is_none(), "{read}");
    nodes.stop();
}

/// Mandate leak: the same user name in two mandates, and without one, are different people;
/// every face answers alike (search, tools, status, delete). A configuration mixing one user
/// name with and without a mandate is refused with the reason.
#[test]
fn security_a_mandate_is_a_wall_for_every_face() {
    let sb = Sandbox::new();
    mandate_wall(&sb, |sb| Some(Nodes::one(sb)));

    // One user name with and without a mandate in one configuration: refused at start.
    let refused = |keys: &[(&str, &str, Option<&str>)], why: &str| {
        config(&sb, "", keys);
        let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(sb.path("ingest.toml"))
            .arg("--data-dir")
            .arg(sb.data_dir())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{err}");
    };
    refused(
        &[(ALICE, "alice", Some("acme")), (CAROL, "alice", None)],
        "without a mandate",
    );
    // Ids that could be confused, and sharing without a mandate, are refused too.
    refused(&[(CAROL, "carol smith", None)], "white space");
}

/// [`security_a_mandate_is_a_wall_for_every_face`] on two nodes: uploads go to one, every
/// node is asked.
#[test]
fn qdrant_security_a_mandate_is_a_wall_for_every_face_on_two_nodes() {
    mandate_wall(&Sandbox::new(), Nodes::two);
}

/// Uploads of a key of mandate `acme` to the first node, then keys of user `alice` in
/// mandate `globex` and without a mandate ask every node: they see nothing.
fn mandate_wall(sb: &Sandbox, start: fn(&Sandbox) -> Option<Nodes>) {
    // A remote source registered for acme (never contacted here: what is checked is who
    // sees it). Each test runs in a process of its own (nextest): the nodes inherit this.
    let registry = sb.write(
        "user-config.toml",
        b"[[source]]\nname = \"acme-plans\"\nurl = \"s3://acme-plans/board\"\nuser = \"alice\"\n\
          mandate = \"acme\"\nshared = true\n[source.credentials]\nsecret_access_key = \"acme-s3-secret\"\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&registry, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::env::set_var("INGEST_CONFIG", &registry);
    config(
        sb,
        "",
        &[
            (ALICE, "alice", Some("acme")),
            (ALICE_GLOBEX, "alice", Some("globex")),
        ],
    );
    let Some(mut nodes) = start(sb) else {
        return;
    };
    let acme = Client::new(nodes.first(), Some(ALICE));
    let phrase = "The acme quarterly plan moves the warehouse to the river dock.";
    uploaded(&acme, "plan.md", format!("{phrase}\n").as_bytes());
    uploaded_shared(
        &acme,
        "shared-plan.md",
        format!("{phrase} Shared.\n").as_bytes(),
    );
    // A mail: its headers reach its text and its card, its body a member of its own.
    let mail_phrase = "The acme ferry charter offer stands until the end of May.";
    let mail = format!(
        "From: Ottilie Brandvold <o.brandvold@acme.example>\r\nTo: board@acme.example\r\n\
         Subject: Acme ferry charter\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n\
         {mail_phrase}\r\n"
    );
    uploaded(&acme, "offer.eml", mail.as_bytes());
    assert!(
        !acme.search(mail_phrase, 10).is_empty(),
        "the owner finds the mail"
    );
    let (_, checked) = tool(
        &acme,
        "verify_quote",
        json!({ "locator": "offer.eml!/message.txt", "quote": mail_phrase }),
    );
    assert_eq!(
        checked["found"], true,
        "the owner's quote is found: {checked}"
    );
    // An uploaded PDF is kept for render_page: its owner gets the page as an image, on
    // either node (the kept copy is in the shared spool).
    let pdf = std::fs::read(fixtures().join("formats/survey-report.pdf")).unwrap();
    uploaded(&acme, "survey.pdf", &pdf);
    for node in [nodes.first(), nodes.last()] {
        let (status, page) = tool(
            &Client::new(node, Some(ALICE)),
            "render_page",
            json!({ "locator": "survey.pdf#page=2", "max_bytes": 100_000 }),
        );
        assert_eq!(status, 200, "{page}");
        let png = base64::engine::general_purpose::STANDARD
            .decode(page["image"]["base64"].as_str().unwrap_or_default())
            .unwrap();
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() <= 100_000,
            "{page}"
        );
        assert_eq!(page["image"]["mime_type"], "image/png");
        assert_eq!(page["bytes"], png.len(), "{page}");
    }
    // A file that fails has a card of its own, found by its name by its owner only.
    let (status, answer) = acme.upload("cipher-ledger.pdf", b"%PDF-1.7\nnot a PDF after all\n");
    assert_eq!(status, 202, "{answer}");
    let ended = acme.wait_job(&job_of(&answer));
    assert_eq!(ended["state"], "failed", "{ended}");
    // Its card is stored by the end of the upload's run (a hang guard, not a speed test).
    let acme_last = Client::new(nodes.last(), Some(ALICE));
    let found_by_owner = (0..300).any(|_| {
        let (_, own) = tool(
            &acme_last,
            "search_documents",
            json!({ "query": "cipher-ledger.pdf" }),
        );
        let hit = own["hits"]
            .as_array()
            .is_some_and(|h| h.iter().any(|h| h["file"] == "cipher-ledger.pdf"));
        if !hit {
            std::thread::sleep(Duration::from_millis(100));
        }
        hit
    });
    assert!(
        found_by_owner,
        "the failed file's card is found by its owner"
    );
    let (_, listed) = tool(&acme, "list_sources", json!({}));
    assert_eq!(listed["sources"][0]["name"], "acme-plans", "{listed}");
    assert!(!listed.to_string().contains("acme-s3-secret"), "{listed}");
    let check_blind = |c: &Client| {
        // No source of another mandate: not listed, and named, answered as a made-up one.
        let (_, listed) = tool(c, "list_sources", json!({}));
        assert_eq!(listed["sources"], json!([]), "{listed}");
        for (tool_name, args) in [
            ("browse_source", json!({})),
            ("pull_source", json!({ "path": "q1.pdf" })),
            ("search_documents", json!({ "query": "warehouse" })),
        ] {
            let answer = |name: &str| {
                let mut a = args.clone();
                a["source"] = json!(name);
                let (status, answer) = tool(c, tool_name, a);
                (status, answer.to_string().replace(name, "NAME"))
            };
            let real = answer("acme-plans");
            assert_eq!(real, answer("zz-made-up"), "{tool_name}");
            assert!(real.1.contains("no such source"), "{real:?}");
        }
        assert!(c.search(phrase, 10).is_empty());
        assert!(c.search(mail_phrase, 10).is_empty());
        for (tool_name, args) in [
            (
                "read_content_objects",
                json!({ "locator": "offer.eml!/message.txt" }),
            ),
            (
                "read_content_objects",
                json!({ "locator": "offer.eml!/message.txt", "around": "line=1", "after": 5 }),
            ),
            (
                "verify_quote",
                json!({ "locator": "offer.eml!/message.txt", "quote": mail_phrase }),
            ),
            ("browse_container", json!({ "locator": "offer.eml" })),
            ("render_page", json!({ "locator": "survey.pdf#page=2" })),
        ] {
            let (_, answer) = tool(c, tool_name, args);
            assert!(answer["error"].is_string(), "{answer}");
            assert!(answer.get("image").is_none(), "{answer}");
            assert!(!answer.to_string().contains("Brandvold"), "{answer}");
        }
        // Another mandate's PDF is answered exactly as a made-up name.
        let render = |name: &str| {
            let (status, answer) = tool(c, "render_page", json!({ "locator": name }));
            (status, answer.to_string().replace(name, "NAME"))
        };
        assert_eq!(render("survey.pdf"), render("zurvey.pdf"));
        for name in [
            "plan.md",
            "shared-plan.md",
            "cipher-ledger.pdf",
            "offer.eml",
        ] {
            let (_, read) = tool(c, "read_content_objects", json!({ "locator": name }));
            assert!(read["error"].is_string(), "{read}");
            assert_eq!(c.get(&format!("/v1/files/status?locator={name}")).0, 404);
            assert_eq!(c.delete(&format!("/v1/files?locator={name}")).0, 404);
        }
        let (_, top) = tool(c, "browse_container", json!({}));
        assert!(!top.to_string().contains("plan.md"), "{top}");
        // Nor do the files' cards, asked for by kind or by exact name.
        for args in [
            json!({ "query": "Ottilie Brandvold", "min_score": 0 }),
            json!({ "query": "offer.eml", "kind": "card" }),
            json!({ "query": "plan.md", "kind": "card" }),
            json!({ "query": "shared-plan.md" }),
            json!({ "query": "cipher-ledger.pdf" }),
            json!({ "query": "cipher-ledger.pdf", "kind": "card" }),
        ] {
            let (_, found) = tool(c, "search_documents", args);
            assert_eq!(found["hits"], json!([]), "{found}");
        }
    };
    for node in &nodes.nodes {
        check_blind(&Client::new(node, Some(ALICE_GLOBEX)));
    }

    // The same data directory, a key for `alice` without a mandate (as after a config
    // change): it sees nothing of either mandate.
    config(sb, "", &[(CAROL, "alice", None)]);
    nodes.restart(sb);
    for node in &nodes.nodes {
        check_blind(&Client::new(node, Some(CAROL)));
    }
    nodes.stop();
}

/// An upload that sends its headers and two bytes of a 100 000-byte body, then nothing.
fn slow_upload(service: &Service, key: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr(service)).unwrap();
    s.write_all(
        format!(
            "POST /v1/files?name=slow.txt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\nab"
        )
        .as_bytes(),
    )
    .unwrap();
    s
}

/// What the server answers on `s` within 30 s (until it closes the connection).
fn answer_on(s: &mut TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    read_answer(s)
}

/// Slow clients: partial headers are timed out, a stalled body is cut (408), and one key
/// filling its places gets 429 at once while another key is still served; a refused slow
/// upload is answered within seconds, not after its body.
#[test]
fn security_slow_clients_hold_no_place_for_long() {
    let sb = Sandbox::new();
    let service = Service::start(
        &sb,
        "max_receiving = 4\nmax_receiving_per_key = 2\nheader_timeout_secs = 2\n\
         body_idle_timeout_secs = 8",
    );
    let alice = Client::new(&service, Some(ALICE));
    let bob = Client::new(&service, Some(BOB));

    // A header line that never ends: the connection is closed by the header timeout.
    let started = Instant::now();
    let (status, _) = raw(
        &service,
        b"GET /health HTTP/1.1\r\nHost: x",
        Duration::from_secs(30),
    );
    assert!(status == 0 || status == 408, "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "partial headers were not timed out"
    );

    // Two stalled uploads of Alice's take her places.
    let mut held = vec![slow_upload(&service, ALICE), slow_upload(&service, ALICE)];
    std::thread::sleep(Duration::from_millis(500));
    // A third of hers: 429 at once, with Retry-After, before its body is read.
    let started = Instant::now();
    let (status, answer) = alice.upload("third.txt", b"third");
    assert_eq!(status, 429, "{answer}");
    assert!(started.elapsed() < Duration::from_secs(6));
    // Bob is served meanwhile.
    let (status, answer) = bob.upload("bob.txt", b"Bob's small note.\n");
    assert_eq!(status, 202, "{answer}");
    // A third slow upload of hers is refused within the drain time, not after its body.
    let mut s = slow_upload(&service, ALICE);
    let started = Instant::now();
    let answer = answer_on(&mut s);
    assert!(answer.contains(" 429 "), "{answer:?}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after"),
        "{answer:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    // The stalled uploads are cut once idle (408), and the places free.
    for s in &mut held {
        let answer = answer_on(s);
        assert!(answer.contains(" 408 "), "{answer:?}");
    }
    let (status, answer) = alice.upload("fourth.txt", b"A fourth note.\n");
    assert_eq!(status, 202, "{answer}");
    assert!(service.stop().success());
}

/// A body trickling one byte at a time (never idle long enough to be cut for that) is cut
/// for its pace, with a 408 that says why.
#[test]
fn security_a_trickling_body_is_cut_for_its_pace() {
    let sb = Sandbox::new();
    let service = Service::start(
        &sb,
        "body_idle_timeout_secs = 10\nbody_grace_secs = 2\nmin_body_bytes_per_sec = 1000",
    );
    let mut s = slow_upload(&service, ALICE);
    let started = Instant::now();
    let mut writer = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..40 {
            if writer.write_all(b"x").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    let answer = answer_on(&mut s);
    assert!(answer.contains(" 408 "), "{answer:?}");
    assert!(answer.contains("bytes/s"), "{answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    trickle.join().unwrap();
    assert!(service.stop().success());
}

/// Names are normalised or refused with a reason; NFC and NFD spellings are one file; the
/// ledger and status show the stored name.
#[test]
fn security_upload_names_are_plain_and_normalised() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    for bad in [
        "..",
        "a/../b.txt",
        " x ",
        "dir/",
        "a//b.txt",
        "evil\u{202e}txt.exe",
        "zero\u{200b}width.txt",
        "tab\tname.txt",
        "back\\slash.txt",
        "x.zip!/y.txt",
        "hash#page=1.txt",
    ] {
        let (status, answer) = alice.upload(bad, b"x");
        assert_eq!(status, 400, "{bad:?}: {answer}");
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("bad upload name"),
            "{answer}"
        );
    }
    let nfd = "Gru\u{308}nde.txt";
    let nfc = "Gr\u{fc}nde.txt";
    let first = uploaded(&alice, nfd, b"The first reason.\n");
    assert_eq!(first["locator"], nfc, "{first}");
    uploaded(&alice, nfc, b"The second reason replaces it.\n");
    let (status, file) = alice.get(&format!(
        "/v1/files/status?locator={}",
        form_urlencoded::byte_serialize(nfd.as_bytes()).collect::<String>()
    ));
    assert_eq!(status, 200, "{file}");
    assert_eq!(file["locator"], nfc);
    let (_, top) = tool(&alice, "browse_container", json!({}));
    let names: Vec<&Value> = top["members"].as_array().unwrap().iter().collect();
    assert_eq!(names.len(), 1, "one file under both spellings: {top}");
    assert!(service.stop().success());
}

/// Small things: a multipart body with two files ingests both; `max_chars: 0` says what is
/// wrong; `/metrics` is the operator's and `/health` says only ok; job ids are unguessable;
/// tool calls are logged with the key's id, never the key.
#[test]
fn security_service_hygiene() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    let boundary = "----sec-boundary";
    let mut body = Vec::new();
    for (name, text) in [
        ("first.txt", "The first attached note."),
        ("second.txt", "The second attached note."),
    ] {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
                 filename=\"{name}\"\r\nContent-Type: text/plain\r\n\r\n{text}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let (status, answer) = alice.post(
        "/v1/files",
        &format!("multipart/form-data; boundary={boundary}"),
        &body,
    );
    assert_eq!(status, 202, "{answer}");
    let files = answer["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{answer}");
    let mut ids = Vec::new();
    for f in files {
        let job = f["job"].as_str().unwrap();
        let ended = alice.wait_job(job);
        assert_eq!(ended["state"], "indexed", "{ended}");
        assert_eq!(file_lines(&ended).len(), 1);
        ids.push(job.to_string());
    }
    // Job ids: 43 hex digits, the last 32 random: no two share a long run of them.
    for id in &ids {
        assert_eq!(id.len(), 43, "{id}");
    }
    let random = |id: &str| id.get(11..).unwrap().to_string();
    assert_ne!(random(&ids[0]), random(&ids[1]));
    let same = random(&ids[0])
        .chars()
        .zip(random(&ids[1]).chars())
        .filter(|(a, b)| a == b)
        .count();
    assert!(same < 12, "job ids look sequential: {ids:?}");
    // A tiny budget: a clear error within 200 chars.
    for max in [0, 10, 199] {
        let (status, answer) = tool(&alice, "browse_container", json!({ "max_chars": max }));
        assert_eq!(status, 200);
        let e = answer["error"].as_str().unwrap();
        assert!(e.contains("at least 200"), "{max}: {answer}");
    }
    // Bodies other than uploads are bounded (1 MiB), declared or not; so are queries.
    let big = json!({ "query": "x".repeat(2 << 20) }).to_string();
    for path in ["/v1/tools/search_documents", "/v1/search", "/mcp"] {
        let (status, answer) = alice.post(path, "application/json", big.as_bytes());
        assert_eq!(status, 413, "{path}: {answer}");
    }
    let long = json!({ "query": "lighthouse ".repeat(500) }).to_string();
    let (status, answer) = alice.post("/v1/search", "application/json", long.as_bytes());
    assert_eq!(status, 400, "{answer}");
    let (_, answer) = tool(
        &alice,
        "search_documents",
        json!({ "query": "lighthouse ".repeat(500) }),
    );
    assert!(
        answer["error"].as_str().unwrap().contains("at most 4096"),
        "{answer}"
    );
    // A multipart part whose headers never end is cut, not held (the answer comes while
    // the client is still sending).
    let mut s = TcpStream::connect(addr(&service)).unwrap();
    let head = format!(
        "POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALICE}\r\n\
         Content-Type: multipart/form-data; boundary=XYZ\r\nContent-Length: 10000000\r\n\r\n\
         --XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\nX-Long: "
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut writer = s.try_clone().unwrap();
    let sending = std::thread::spawn(move || {
        for _ in 0..100 {
            if writer.write_all(&[b'A'; 4096]).is_err() {
                break;
            }
        }
    });
    let answer = answer_on(&mut s);
    sending.join().unwrap();
    assert!(answer.contains(" 400 "), "{answer:?}");
    assert!(answer.contains("headers are over"), "{answer:?}");
    // Health says nothing but ok; metrics are the operator's.
    let nobody = Client::new(&service, None);
    assert_eq!(nobody.get("/health"), (200, json!({ "status": "ok" })));
    assert_eq!(nobody.get("/metrics").0, 401);
    assert_eq!(alice.get("/metrics").0, 401);
    assert_eq!(Client::new(&service, Some(METRICS)).get("/metrics").0, 200);
    // The operator key is no API key.
    assert_eq!(
        Client::new(&service, Some(METRICS))
            .get("/v1/files/status?locator=x")
            .0,
        401
    );
    // Every HTTP tool call is logged with the key's id, never the key.
    let key_id = blake3::hash(ALICE.as_bytes())
        .to_hex()
        .get(..12)
        .unwrap()
        .to_string();
    assert!(service.stop().success());
    let log = std::fs::read_to_string(sb.path("serve.err")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("tool call") && l.contains("face=\"http\"") && l.contains(&key_id)),
        "no tool call line with the key id:\n{log}"
    );
    assert!(!log.contains(ALICE), "the key itself is in the log");
}

/// MCP: a session belongs to the key that opened it (another key's session id is an unknown
/// session, to use and to end), and the Host names `/mcp` answers are configurable (a
/// reverse proxy's name is accepted once configured, refused by default).
#[test]
fn security_mcp_sessions_are_bound_to_their_key_and_hosts_are_configurable() {
    let sb = Sandbox::new();
    let service = Service::start(
        &sb,
        "mcp_allowed_hosts = [\"127.0.0.1\", \"docs.example.com\"]\nmax_mcp_sessions_per_key = 4",
    );
    let python = repo_dir().join(".venv-test/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make deps`",
        python.display()
    );
    let out = Command::new(&python)
        .arg(repo_dir().join("tests/mcp/service_mcp.py"))
        .args([&service.url, ALICE, BOB, "--sessions"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("\nOK"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "host-check", "version": "1"}}
    })
    .to_string();
    let request = |host: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {ALICE}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{initialize}",
            initialize.len()
        )
    };
    let (status, text) = raw(
        &service,
        request("docs.example.com").as_bytes(),
        Duration::from_secs(30),
    );
    assert_eq!(status, 200, "{text}");
    let (status, text) = raw(
        &service,
        request("evil.example.net").as_bytes(),
        Duration::from_secs(30),
    );
    assert_eq!(status, 403, "{text}");
    assert!(service.stop().success());
    // By default only loopback names.
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let (status, text) = raw(
        &service,
        request("docs.example.com").as_bytes(),
        Duration::from_secs(30),
    );
    assert_eq!(status, 403, "{text}");
}

/// The deep/long-name ZIP through the upload service: skipped members with their reasons,
/// the benign sibling indexed, and the service's peak RSS far under 1 GiB.
#[test]
fn security_a_deep_long_name_zip_costs_little_through_the_service() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    let zip = std::fs::read(fixtures().join("hostile/zip-deep-long-names.zip")).unwrap();
    let ended = uploaded(&alice, "deep.zip", &zip);
    let lines = file_lines(&ended);
    let reasons: Vec<&str> = lines.iter().filter_map(|l| l["reason"].as_str()).collect();
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.contains("limit: name-length"))
            .count(),
        2,
        "{ended}"
    );
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.contains("limit: path-depth"))
            .count(),
        1,
        "{ended}"
    );
    // Every locator the job reports is bounded.
    for l in &lines {
        assert!(l["locator"].as_str().unwrap().len() < 1024, "{l}");
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", service.child.id())).unwrap();
    let hwm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    println!(
        "service peak RSS after the deep/long-name zip: {} MiB",
        hwm_kib / 1024
    );
    assert!(hwm_kib < 1024 * 1024, "peak RSS {hwm_kib} KiB");
    assert!(service.stop().success());
}

/// A connection from `from` (a loopback address) to the service.
fn connect_from(service: &Service, from: &str) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let local: std::net::SocketAddr = format!("{from}:0").parse().unwrap();
    socket.bind(&local.into()).unwrap();
    let to: std::net::SocketAddr = addr(service).parse().unwrap();
    socket.connect(&to.into()).unwrap();
    socket.into()
}

/// Connection floods: one address holds at most its share of the connections (the rest are
/// closed at once), so another address is still served; no key is needed to try.
#[test]
fn security_one_address_cannot_take_every_connection() {
    let sb = Sandbox::new();
    let service = Service::start(
        &sb,
        "max_connections = 16\nmax_connections_per_peer = 4\nheader_timeout_secs = 30",
    );
    // Four idle connections from 127.0.0.1 take its share.
    let idle: Vec<TcpStream> = (0..4)
        .map(|_| connect_from(&service, "127.0.0.1"))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // A fifth from the same address is closed without an answer.
    let mut fifth = connect_from(&service, "127.0.0.1");
    let _ = fifth.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    fifth
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(read_answer(&mut fifth), "", "a fifth connection was served");
    // Another address is served at once.
    let mut other = connect_from(&service, "127.0.0.2");
    other
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    other
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let answer = read_answer(&mut other);
    assert!(answer.contains(" 200 "), "{answer:?}");
    drop(idle);
    assert!(service.stop().success());
}

/// Storage per caller is bounded: past `max_files_per_key` catalog entries an upload is
/// refused (507) until files are deleted, and an ended job keeps at most 1000 lines.
#[test]
fn security_a_callers_storage_and_job_records_are_bounded() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "max_files_per_key = 1500");
    let alice = Client::new(&service, Some(ALICE));
    // 1100 empty members: one content, 1100 lines.
    let names: Vec<String> = (0..1100).map(|i| format!("e/{i:04}.txt")).collect();
    let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b""[..])).collect();
    let zip = ingest_unpack::zip_of(&entries);
    let job = uploaded(&alice, "many.zip", &zip);
    assert_eq!(job["files"].as_array().unwrap().len(), 1000, "kept lines");
    assert_eq!(job["files_omitted"], 101, "{}", job["files_omitted"]);
    // 1101 entries now, under 1500: one more upload is taken, then the quota refuses.
    uploaded(&alice, "more.zip", &zip);
    let (status, answer) = alice.upload("third.txt", b"one more");
    assert_eq!(status, 507, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("delete some"),
        "{answer}"
    );
    // Bob's quota is his own.
    let bob = Client::new(&service, Some(BOB));
    uploaded(&bob, "bob.txt", b"Bob's note.\n");
    // Deleting frees it.
    assert_eq!(alice.delete("/v1/files?locator=more.zip").0, 200);
    let (status, answer) = alice.upload("third.txt", b"one more");
    assert_eq!(status, 202, "{answer}");
    assert!(service.stop().success());
}

/// Heavy tools (`render_page`, `verify_quote`: seconds of CPU a call at worst) have a smaller
/// share of a key's places than its other calls (issue 56): with `max_heavy_per_key = 1` and
/// every call's work lasting 6 s (a pause failpoint in the tool's thread), a key's second
/// heavy call is refused while its first works — 429 over HTTP, a tool error over MCP, both
/// saying why — while the same key's other calls and another key's heavy call still run. A
/// quote longer than the limit is refused with its reason at both faces.
#[test]
fn security_heavy_tools_have_a_smaller_share_and_quotes_are_bounded() {
    use crate::robustness::{metric, Mcp};
    let sb = Sandbox::new();
    config(
        &sb,
        "max_queries = 8\nmax_queries_per_key = 4\nmax_heavy_per_key = 1",
        &[(ALICE, "alice", Some("acme")), (BOB, "bob", Some("acme"))],
    );
    let service = Service::start_config_env(
        &sb,
        &[],
        &[(ingest_base::failpoint::ENV, "tool.run=1:pause6000")],
    );
    // A call on its own thread: its status and answer (a hang guard of 60 s).
    let call = |key: &'static str, name: &'static str, args: Value| {
        let url = service.url.clone();
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(60)))
                .build()
                .into();
            let mut r = agent
                .post(format!("{url}/v1/tools/{name}"))
                .header("Authorization", format!("Bearer {key}"))
                .header("Content-Type", "application/json")
                .send(args.to_string().as_bytes())
                .unwrap();
            let status = r.status().as_u16();
            let text = r.body_mut().read_to_string().unwrap();
            (status, text)
        })
    };
    let quote = json!({ "locator": "log.md", "quote": "the keeper logs the gusts" });
    let first = call(ALICE, "verify_quote", quote.clone());
    // Its work has started (it holds Alice's heavy place for 6 s).
    let working = crate::util::wait_for(Duration::from_secs(30), || {
        metric(&service, "ingest_queries_working") >= 1.0
    });
    assert!(working.is_some(), "the first call never started");
    let alice = Client::new(&service, Some(ALICE));
    let (status, refused) = tool(&alice, "render_page", json!({ "locator": "survey.pdf" }));
    println!("a second heavy call of the key over HTTP: {status} {refused}");
    assert_eq!(status, 429, "{refused}");
    let why = refused["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("heavy tool") && why.contains("max_heavy_per_key"),
        "{refused}"
    );
    let mcp = Mcp::open(&service, ALICE);
    let (status, answer) = mcp
        .call("verify_quote", quote.clone(), Duration::from_secs(30))
        .unwrap();
    println!("a second heavy call of the key over MCP: {status} {answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("heavy tool"), "{answer}");
    // The key's other calls, and another key's heavy call, still run.
    let browse = call(ALICE, "browse_container", json!({}));
    let bobs = call(BOB, "render_page", json!({ "locator": "survey.pdf" }));
    for (who, handle) in [
        ("alice's browse", browse),
        ("bob's render", bobs),
        ("alice's quote", first),
    ] {
        let (status, text) = handle.join().unwrap();
        println!("{who}: {status} {text}");
        assert_eq!(status, 200, "{who}: {text}");
        assert!(!text.contains("heavy tool"), "{who}: {text}");
    }
    // A quote past the limit: refused with the reason, over HTTP and MCP.
    let long = json!({ "locator": "log.md", "quote": "gust ".repeat(900) });
    let (status, text) = call(ALICE, "verify_quote", long.clone()).join().unwrap();
    println!("a quote of 4500 chars over HTTP: {status} {text}");
    assert!(text.contains("at most 4000"), "{status} {text}");
    let (status, answer) = mcp
        .call("verify_quote", long, Duration::from_secs(30))
        .unwrap();
    println!("a quote of 4500 chars over MCP: {status} {answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("at most 4000"), "{answer}");
    assert!(service.stop().success());
}
