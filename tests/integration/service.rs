//! The HTTP ingest service (`ingest serve`) driven over loopback with a real HTTP client
//! (ureq), the real model and the real store: uploads and their statuses, scopes bound to
//! keys, bounds, delete, the tools, a kill in the middle of a load, and the README's Python
//! snippet.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::{fixtures, repo_dir, wait_for, Sandbox};

pub(crate) const ALICE: &str = "k-alice-0123456789abcdef";
pub(crate) const BOB: &str = "k-bob-0123456789abcdef00";
/// The operator's key for `/metrics` in [`Service::start`]'s configuration.
pub(crate) const METRICS: &str = "m-operator-0123456789abcdef";

/// A running `ingest serve` on a free loopback port.
pub(crate) struct Service {
    pub(crate) child: Child,
    pub(crate) url: String,
}

impl Service {
    /// Start it on `sb`'s data dir with `extra` config lines (keys for alice and bob added,
    /// and the operator's metrics key).
    pub(crate) fn start(sb: &Sandbox, extra: &str) -> Service {
        Self::start_with(sb, extra, &[])
    }

    /// [`Service::start`] with more command-line arguments.
    pub(crate) fn start_with(sb: &Sandbox, extra: &str, args: &[&str]) -> Service {
        let config = sb.path("ingest.toml");
        if !config.exists() {
            let text = format!(
                "metrics_key = \"{METRICS}\"\n{extra}\n\n\
                 [[api_keys]]\nkey = \"{ALICE}\"\nuser = \"alice\"\nmandate = \"acme\"\n\n\
                 [[api_keys]]\nkey = \"{BOB}\"\nuser = \"bob\"\nmandate = \"acme\"\n"
            );
            std::fs::write(&config, text).unwrap();
        }
        Self::start_config(sb, args)
    }

    /// Start it with the configuration file already at `sb/ingest.toml`. It runs in the
    /// repository's folder, so a name taken for a path there would find real files.
    pub(crate) fn start_config(sb: &Sandbox, args: &[&str]) -> Service {
        Self::start_config_env(sb, args, &[])
    }

    /// [`Service::start_config`] with environment variables set (failpoints).
    pub(crate) fn start_config_env(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Service {
        let config = sb.path("ingest.toml");
        let out = sb.path("serve.out");
        let child = Command::new(env!("CARGO_BIN_EXE_ingest"))
            .current_dir(repo_dir())
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(sb.data_dir())
            .args(args)
            .env_remove(ingest_base::failpoint::ENV)
            .envs(env.iter().copied())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(sb.path("serve.err")).unwrap())
            .spawn()
            .expect("start ingest serve");
        let mut url = String::new();
        let mut child = child;
        let started = wait_for(Duration::from_secs(180), || {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "the service ended ({status}): {}",
                    std::fs::read_to_string(sb.path("serve.err")).unwrap_or_default()
                );
            }
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            match text.lines().find_map(|l| l.strip_prefix("listening on ")) {
                Some(u) => {
                    url = u.trim().to_string();
                    true
                }
                None => false,
            }
        });
        assert!(
            started.is_some(),
            "the service did not start: {}",
            std::fs::read_to_string(sb.path("serve.err")).unwrap_or_default()
        );
        Service { child, url }
    }

    pub(crate) fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap())
    }

    /// SIGKILL, as a crash would.
    pub(crate) fn kill(mut self) {
        nix::sys::signal::kill(self.pid(), nix::sys::signal::Signal::SIGKILL).unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM; the exit status.
    pub(crate) fn stop(mut self) -> std::process::ExitStatus {
        nix::sys::signal::kill(self.pid(), nix::sys::signal::Signal::SIGTERM).unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client of one service, with one key.
#[derive(Clone)]
pub(crate) struct Client {
    pub(crate) agent: ureq::Agent,
    pub(crate) url: String,
    pub(crate) key: Option<String>,
}

impl Client {
    pub(crate) fn new(service: &Service, key: Option<&str>) -> Client {
        // A hang guard, not a speed bound: a call that embeds (a stored tool result of
        // 400 chunks) takes minutes on a CPU without AVX-512 while other tests embed too.
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        Client {
            agent,
            url: service.url.clone(),
            key: key.map(str::to_string),
        }
    }

    pub(crate) fn answer(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> (u16, Value) {
        let mut r = r.expect("the request reached the service");
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string().unwrap_or_default();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    pub(crate) fn auth(&self) -> String {
        format!("Bearer {}", self.key.as_deref().unwrap_or(""))
    }

    pub(crate) fn get(&self, path: &str) -> (u16, Value) {
        let mut r = self.agent.get(format!("{}{path}", self.url));
        if self.key.is_some() {
            r = r.header("Authorization", self.auth());
        }
        Self::answer(r.call())
    }

    pub(crate) fn delete(&self, path: &str) -> (u16, Value) {
        let r = self
            .agent
            .delete(format!("{}{path}", self.url))
            .header("Authorization", self.auth());
        Self::answer(r.call())
    }

    pub(crate) fn post(&self, path: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
        let mut r = self
            .agent
            .post(format!("{}{path}", self.url))
            .header("Content-Type", content_type);
        if self.key.is_some() {
            r = r.header("Authorization", self.auth());
        }
        Self::answer(r.send(body))
    }

    /// Upload raw bytes as `name`: the status and the answer.
    pub(crate) fn upload(&self, name: &str, bytes: &[u8]) -> (u16, Value) {
        let name: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
        self.post(
            &format!("/v1/files?name={name}"),
            "application/octet-stream",
            bytes,
        )
    }

    /// Upload `bytes` as the file field of a multipart form.
    pub(crate) fn upload_multipart(&self, file_name: &str, bytes: &[u8]) -> (u16, Value) {
        let boundary = "----ingest-test-boundary-7f3a";
        let mut body = Vec::new();
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n\
                 --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        self.post(
            "/v1/files",
            &format!("multipart/form-data; boundary={boundary}"),
            &body,
        )
    }

    /// Poll the job until it ends (hang guard: 10 minutes).
    pub(crate) fn wait_job(&self, job: &str) -> Value {
        let mut last = Value::Null;
        let ended = wait_for(Duration::from_secs(600), || {
            let (status, answer) = self.get(&format!("/v1/jobs/{job}"));
            assert_eq!(status, 200, "{answer}");
            last = answer;
            ["indexed", "failed", "deleted"].contains(&last["state"].as_str().unwrap_or(""))
        });
        assert!(ended.is_some(), "job {job} did not end: {last}");
        last
    }

    pub(crate) fn search(&self, query: &str, limit: usize) -> Vec<Value> {
        self.search_filtered(query, limit, json!({}))
    }

    pub(crate) fn search_filtered(&self, query: &str, limit: usize, filters: Value) -> Vec<Value> {
        // The tool's arguments (`search_documents`): the filters sit beside the query.
        let mut body = json!({ "query": query, "limit": limit });
        if let (Some(b), Some(f)) = (body.as_object_mut(), filters.as_object()) {
            b.extend(f.clone());
        }
        let body = body.to_string();
        let (status, answer) = self.post("/v1/search", "application/json", body.as_bytes());
        assert_eq!(status, 200, "{answer}");
        answer["hits"].as_array().cloned().unwrap_or_default()
    }
}

pub(crate) fn job_of(answer: &Value) -> String {
    answer["job"]
        .as_str()
        .unwrap_or_else(|| panic!("no job in {answer}"))
        .to_string()
}

/// Every line of an ended job that is a file (not an archive's own line).
pub(crate) fn file_lines(job: &Value) -> Vec<&Value> {
    job["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["archive"] != json!(true))
        .collect()
}

#[test]
fn service_indexes_uploads_in_the_scope_of_their_key() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "max_upload_bytes = 1000000");
    let alice = Client::new(&service, Some(ALICE));
    let bob = Client::new(&service, Some(BOB));
    let nobody = Client::new(&service, None);
    let stranger = Client::new(&service, Some("k-not-a-key-0123456789"));
    let bundle = std::fs::read(fixtures().join("archives/bundle.zip")).unwrap();

    // Health needs no key (and says nothing but "ok"); everything under /v1 does.
    let (status, health) = nobody.get("/health");
    assert_eq!((status, health), (200, json!({ "status": "ok" })));
    for client in [&nobody, &stranger] {
        let (status, answer) = client.upload("bundle.zip", &bundle);
        assert_eq!(status, 401, "{answer}");
        assert_eq!(client.get("/v1/files/status?locator=x").0, 401);
    }

    // A nested archive: every member indexed, searchable with page/section fields.
    let (status, answer) = alice.upload("bundle.zip", &bundle);
    assert_eq!(status, 202, "{answer}");
    let job = job_of(&answer);
    assert_eq!(answer["status_url"], json!(format!("/v1/jobs/{job}")));
    let ended = alice.wait_job(&job);
    assert_eq!(ended["state"], "indexed", "{ended}");
    let files = file_lines(&ended);
    assert!(files.len() >= 3, "{ended}");
    for f in &files {
        assert_eq!(f["status"], "indexed", "{f}");
    }
    assert!(
        files
            .iter()
            .any(|f| f["locator"] == "bundle.zip!/docs/inner.tar.gz!/notes/lighthouse.md"),
        "{ended}"
    );
    let (status, file) = alice.get("/v1/files/status?locator=bundle.zip");
    assert_eq!(status, 200, "{file}");
    assert_eq!(file["status"], "indexed");
    assert!(file["members"].as_array().unwrap().len() >= 4, "{file}");
    let hits = alice.search("who kept the lighthouse on Skerry Point", 3);
    let top = &hits[0];
    assert!(
        top["locator"]
            .as_str()
            .unwrap()
            .starts_with("bundle.zip!/docs/inner.tar.gz!/notes/lighthouse.md#"),
        "{top}"
    );
    assert!(
        top["chunk_id"].is_u64() && top["chunk_index"].is_u64(),
        "{top}"
    );

    // Another key sees none of it: 404 as for what does not exist.
    assert_eq!(bob.get(&format!("/v1/jobs/{job}")).0, 404);
    assert_eq!(bob.get("/v1/files/status?locator=bundle.zip").0, 404);
    assert_eq!(bob.delete("/v1/files?locator=bundle.zip").0, 404);
    assert!(bob
        .search("who kept the lighthouse on Skerry Point", 5)
        .is_empty());
    assert_eq!(alice.get("/v1/files/status?locator=nothing.txt").0, 404);
    assert_eq!(alice.get("/v1/jobs/0123456789abcdef").0, 404);

    // A hostile upload fails with its reason while a benign one beside it is indexed.
    // A DOCX whose part declares 1 TiB (a member of a hostile fixture).
    let hostile = {
        let zip = std::fs::File::open(fixtures().join("hostile/docx-declared-1tib.zip")).unwrap();
        let mut zip = zip::ZipArchive::new(zip).unwrap();
        let mut docx = Vec::new();
        std::io::copy(&mut zip.by_name("huge-part.docx").unwrap(), &mut docx).unwrap();
        docx
    };
    let notes = std::fs::read(fixtures().join("docs/notes.txt")).unwrap();
    let (h, b) = std::thread::scope(|s| {
        let h = s.spawn(|| alice.upload("huge-part.docx", &hostile));
        let b = s.spawn(|| alice.upload_multipart("notes.txt", &notes));
        (h.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(h.0, 202, "{}", h.1);
    assert_eq!(b.0, 202, "{}", b.1);
    let hostile_job = alice.wait_job(&job_of(&h.1));
    let benign_job = alice.wait_job(&job_of(&b.1));
    assert_eq!(hostile_job["state"], "failed", "{hostile_job}");
    assert!(
        hostile_job["reason"].as_str().is_some_and(|r| r.len() > 10),
        "{hostile_job}"
    );
    assert_eq!(benign_job["state"], "indexed", "{benign_job}");
    assert_eq!(benign_job["locator"], "notes.txt");

    // Too large: 413 before anything is stored.
    let (status, answer) = alice.upload("big.bin", &vec![b'x'; 1_000_001]);
    assert_eq!(status, 413, "{answer}");

    // The agent's tools answer in the key's scope.
    let (status, browse) = alice.post("/v1/tools/browse_container", "application/json", b"{}");
    assert_eq!(status, 200, "{browse}");
    assert!(browse.to_string().contains("notes.txt"), "{browse}");
    let (status, _) = alice.post("/v1/tools/no_such_tool", "application/json", b"{}");
    assert_eq!(status, 404);

    // Delete: gone from search and status, members included.
    let (status, deleted) = alice.delete("/v1/files?locator=bundle.zip");
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["state"], "deleted", "{deleted}");
    assert_eq!(alice.get("/v1/files/status?locator=bundle.zip").0, 404);
    let hits = alice.search("who kept the lighthouse on Skerry Point", 10);
    assert!(
        hits.iter()
            .all(|h| !h["locator"].as_str().unwrap().starts_with("bundle.zip")),
        "{hits:?}"
    );
    assert_eq!(alice.delete("/v1/files?locator=bundle.zip").0, 404);

    // Metrics are the operator's: no key and an API key are refused, the metrics key reads.
    assert_eq!(nobody.get("/metrics").0, 401);
    assert_eq!(alice.get("/metrics").0, 401);
    let operator = Client::new(&service, Some(METRICS));
    let (status, metrics) = operator.get("/metrics");
    assert_eq!(status, 200);
    let metrics = metrics.as_str().unwrap().to_string();
    for family in [
        "ingest_files_total{status=\"indexed\"}",
        "ingest_queue_depth 0",
        "ingest_uploads_refused_total{cause=\"too_large\"}",
        "ingest_stage_seconds_total{stage=\"embed\"}",
    ] {
        assert!(metrics.contains(family), "{family} missing:\n{metrics}");
    }
    assert!(service.stop().success());
}

/// User metadata: tags given at upload travel with every chunk (an archive's members too)
/// and narrow searches; an upload of the same name replaces them; a content held by two
/// files carries both files' tags until one of them goes.
#[test]
fn service_tags_travel_with_every_chunk_and_filter_searches() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    let bob = Client::new(&service, Some(BOB));
    let upload = |name: &str, tags: &str, bytes: &[u8]| {
        let (status, answer) = alice.post(
            &format!("/v1/files?name={name}&{tags}"),
            "application/octet-stream",
            bytes,
        );
        assert_eq!(status, 202, "{answer}");
        let ended = alice.wait_job(&job_of(&answer));
        assert_eq!(ended["state"], "indexed", "{ended}");
    };
    let with_tags = |tags: Value| json!({ "tags": tags });
    // The files of the hits, without their fragments, each once (a file's passages and
    // its card name it alike).
    let locators = |hits: &[Value]| -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        for l in hits.iter().map(|h| h["locator"].as_str().unwrap()) {
            let file = l.split_once('#').map_or(l, |(file, _)| file).to_string();
            if !files.contains(&file) {
                files.push(file);
            }
        }
        files
    };
    let bundle = std::fs::read(fixtures().join("archives/bundle.zip")).unwrap();
    let ferry = b"The ferry to Skerry Point leaves the harbour at dawn on Tuesdays.\n";
    upload("bundle.zip", "tag.team=ops&tag.case=17", &bundle);
    upload("ferry.txt", "tag.team=dev", ferry);

    // Every member of the archive carries the archive's tags; a filter needs all it names.
    let ops = alice.search_filtered("lighthouse keeper", 10, with_tags(json!({"team": "ops"})));
    assert!(!ops.is_empty());
    for h in &ops {
        // Its members, and the archive's own card.
        let locator = h["locator"].as_str().unwrap();
        assert!(
            locator.starts_with("bundle.zip!/") || (locator == "bundle.zip" && h["kind"] == "card"),
            "{h}"
        );
        assert_eq!(h["tags"], json!(["case=17", "team=ops"]), "{h}");
    }
    assert!(ops.iter().any(|h| h["locator"]
        .as_str()
        .unwrap()
        .contains("inner.tar.gz!/notes/lighthouse.md")));
    let both = json!({"team": "ops", "case": "17"});
    assert_eq!(
        locators(&alice.search_filtered("lighthouse keeper", 10, with_tags(both))),
        locators(&ops)
    );
    let wrong_case = json!({"team": "ops", "case": "18"});
    assert!(alice
        .search_filtered("lighthouse keeper", 10, with_tags(wrong_case))
        .is_empty());
    let dev = alice.search_filtered("ferry to Skerry", 10, with_tags(json!({"team": "dev"})));
    assert_eq!(locators(&dev), ["ferry.txt"], "{dev:?}");
    // Unfiltered, both files are found; another key sees neither, tags or not.
    let all = locators(&alice.search("ferry lighthouse", 50));
    assert!(
        all.iter().any(|l| l.starts_with("ferry.txt"))
            && all.iter().any(|l| l.starts_with("bundle.zip"))
    );
    assert!(bob
        .search_filtered("ferry", 10, with_tags(json!({"team": "dev"})))
        .is_empty());

    // The same bytes under the same name with other tags: the tags are replaced.
    upload("ferry.txt", "tag.team=ops", ferry);
    assert!(alice
        .search_filtered("ferry", 10, with_tags(json!({"team": "dev"})))
        .is_empty());
    let now_ops = alice.search_filtered("ferry to Skerry", 1, with_tags(json!({"team": "ops"})));
    assert_eq!(locators(&now_ops), ["ferry.txt"]);
    // A copy under another name: the content carries both files' tags, until the copy goes.
    upload("copy.txt", "tag.team=qa", ferry);
    let qa = alice.search_filtered("ferry to Skerry", 1, with_tags(json!({"team": "qa"})));
    assert_eq!(qa[0]["tags"], json!(["team=ops", "team=qa"]), "{qa:?}");
    assert_eq!(alice.delete("/v1/files?locator=copy.txt").0, 200);
    assert!(alice
        .search_filtered("ferry", 10, with_tags(json!({"team": "qa"})))
        .is_empty());
    let ops_again = alice.search_filtered("ferry to Skerry", 1, with_tags(json!({"team": "ops"})));
    assert_eq!(ops_again[0]["tags"], json!(["team=ops"]), "{ops_again:?}");

    // The tool takes the same tags (one vocabulary on every face) and finds the same files.
    let (status, tool) = alice.post(
        "/v1/tools/search_documents",
        "application/json",
        json!({"query": "ferry to Skerry", "tags": {"team": "ops"}, "limit": 10})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(status, 200, "{tool}");
    assert_eq!(
        locators(tool["hits"].as_array().unwrap()),
        locators(&alice.search_filtered("ferry to Skerry", 10, with_tags(json!({"team": "ops"})))),
        "{tool}"
    );

    // Bad tags are refused before anything is stored.
    let (status, answer) = alice.post("/v1/files?name=x.txt&tag.bad%20key=1", "text/plain", b"x");
    assert_eq!(status, 400, "{answer}");
    assert!(answer.to_string().contains("bad tag key"), "{answer}");
    let body = json!({ "query": "x", "tags": { "k": "a\u{7}b" } }).to_string();
    assert_eq!(
        alice
            .post("/v1/search", "application/json", body.as_bytes())
            .0,
        400
    );
    assert!(service.stop().success());
}

/// The agent's tools over MCP on the service's own port (`/mcp`, streamable HTTP), driven by
/// the official Python MCP client (tests/mcp/service_mcp.py): each request answers in the
/// scope of its key, and no key means 401.
#[test]
fn service_mcp_answers_in_the_scope_of_the_key() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    let phrase = "The tide gauge at Skerry Point was recalibrated in March";
    let (status, answer) = alice.upload("gauge-notes.txt", format!("{phrase}.\n").as_bytes());
    assert_eq!(status, 202, "{answer}");
    let ended = alice.wait_job(&job_of(&answer));
    assert_eq!(ended["state"], "indexed", "{ended}");
    let python = repo_dir().join(".venv-test/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make deps`",
        python.display()
    );
    let out = Command::new(python)
        .arg(repo_dir().join("tests/mcp/service_mcp.py"))
        .args([&service.url, ALICE, BOB, phrase, "gauge-notes.txt"])
        .output()
        .expect("run tests/mcp/service_mcp.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("\nOK"),
        "tests/mcp/service_mcp.py: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(service.stop().success());
}

/// `ingest serve --watch FOLDER`: the same process keeps a folder indexed in the scope of
/// `--user/--mandate` while it serves uploads; a key bound to that scope finds both.
#[test]
fn service_also_watches_folders_in_the_scope_given() {
    let sb = Sandbox::new();
    let folder = sb.path("watched");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("moorings.txt"),
        "Mooring buoy nine was moved to the north basin in April.\n",
    )
    .unwrap();
    let folder_arg = folder.to_str().unwrap();
    let args = [
        "--watch",
        folder_arg,
        "--user",
        "alice",
        "--mandate",
        "acme",
    ];
    let service = Service::start_with(&sb, "", &args);
    let alice = Client::new(&service, Some(ALICE));
    let bob = Client::new(&service, Some(BOB));
    let found = |client: &Client, query: &str, file: &str| {
        client
            .search(query, 5)
            .iter()
            .any(|h| h["locator"].as_str().unwrap().contains(file))
    };
    let guard = Duration::from_secs(300);
    assert!(
        wait_for(guard, || found(
            &alice,
            "mooring buoy moved",
            "moorings.txt"
        ))
        .is_some(),
        "the watched folder's file never became searchable"
    );
    // A file added later, and an upload meanwhile: both searchable, and bob sees neither.
    std::fs::write(
        folder.join("dredging.txt"),
        "Dredging of the harbour mouth starts after the autumn storms.\n",
    )
    .unwrap();
    let (status, answer) = alice.upload("pilots.txt", b"Pilot boats wait at the outer buoy.\n");
    assert_eq!(status, 202, "{answer}");
    assert_eq!(alice.wait_job(&job_of(&answer))["state"], "indexed");
    assert!(
        wait_for(guard, || found(
            &alice,
            "dredging harbour mouth",
            "dredging.txt"
        ))
        .is_some(),
        "a file added to the watched folder never became searchable"
    );
    assert!(found(&alice, "pilot boats", "pilots.txt"));
    assert!(!found(&bob, "mooring buoy moved", "moorings.txt"));
    assert!(service.stop().success());
}

/// The Python snippet of README.md § "HTTP upload service", run as written against the service.
#[test]
fn service_python_snippet_of_the_readme_uploads_and_polls() {
    let readme = std::fs::read_to_string(repo_dir().join("README.md")).unwrap();
    let snippet = readme
        .split("<!-- python-upload-snippet -->")
        .nth(1)
        .and_then(|s| s.split("```python").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("README.md has the Python upload snippet after its marker");
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let script = sb.write("upload.py", snippet.as_bytes());
    let out = Command::new("python3")
        .arg(&script)
        .arg(fixtures().join("archives/bundle.zip"))
        .env("INGEST_URL", &service.url)
        .env("INGEST_KEY", ALICE)
        .stdin(Stdio::null())
        .output()
        .expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("indexed"), "{stdout}");
    let alice = Client::new(&service, Some(ALICE));
    let (status, file) = alice.get("/v1/files/status?locator=bundle.zip");
    assert_eq!((status, file["status"].as_str()), (200, Some("indexed")));
}

/// A distinct small text document number `n`.
fn small_doc(n: usize) -> Vec<u8> {
    format!(
        "# Load note {n}\n\nThe inspection of buoy number {n} found token L{n:05}Q in good order. \
         Its lamp was cleaned on day {} and its chain checked by crew {}.\n",
        n % 28 + 1,
        n % 7
    )
    .into_bytes()
}

/// A larger text document (a few dozen chunks).
fn medium_doc(n: usize) -> Vec<u8> {
    let mut text = format!("# Ledger {n}\n\n");
    for i in 0..400 {
        text.push_str(&format!(
            "Entry {i} of ledger {n}: cargo of {} crates passed the harbour gate at hour {}.\n",
            (i * 7 + n) % 97,
            i % 24
        ));
    }
    text.into_bytes()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// 200 uploads from 20 clients, the service SIGKILLed once in the middle and restarted: every
/// upload answered 202 ends indexed or failed with a reason, none is lost or indexed twice.
/// Prints upload latency and how soon a small file is searchable while a large PDF embeds.
#[test]
fn service_load_run_survives_a_kill_in_the_middle() {
    const CLIENTS: usize = 20;
    const UPLOADS: usize = 200;
    let sb = Sandbox::new();
    // A handbook long enough to embed for a while (1000 pages, about 2500 chunks).
    let big_pdf = sb.path("handbook.pdf");
    let made = Command::new("python3")
        .arg(repo_dir().join("scripts/make-big-pdf.py"))
        .arg(&big_pdf)
        .args(["--pages", "1000"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let pdf = std::fs::read(&big_pdf).unwrap();
    let service = Service::start(
        &sb,
        "max_receiving = 32\nmax_receiving_per_key = 32\nmax_open_jobs = 400\n\
         max_open_jobs_per_key = 400",
    );
    let client = Client::new(&service, Some(ALICE));

    // How soon a small file is searchable while the 100-page PDF is being embedded.
    let (status, answer) = client.upload("handbook.pdf", &pdf);
    assert_eq!(status, 202, "{answer}");
    let pdf_job = job_of(&answer);
    wait_for(Duration::from_secs(300), || {
        client.get(&format!("/v1/jobs/{pdf_job}")).1["state"] == "embedding"
    })
    .expect("the PDF reaches the embedding stage");
    let (status, answer) = client.upload("probe.md", b"# Probe\n\nThe probe word is quixotryl.\n");
    assert_eq!(status, 202, "{answer}");
    let probe_job = job_of(&answer);
    let searchable = wait_for(Duration::from_secs(300), || {
        client
            .search("quixotryl probe word", 3)
            .iter()
            .any(|h| h["locator"].as_str().unwrap().starts_with("probe.md#"))
    })
    .expect("the probe becomes searchable");
    let pdf_state = client.get(&format!("/v1/jobs/{pdf_job}")).1["state"].clone();
    // Not behind it: searchable while the PDF is still being embedded.
    assert_eq!(pdf_state, "embedding", "the probe waited for the PDF");
    println!(
        "small file searchable {:.2} s after upload while a 1000-page PDF was being embedded",
        searchable.as_secs_f64()
    );
    client.wait_job(&probe_job);

    // 200 uploads, 20 clients, mixed sizes; the service is killed once about half-way.
    let accepted = std::sync::Mutex::new(Vec::<(String, String, f64)>::new());
    let refused = std::sync::atomic::AtomicUsize::new(0);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let service = std::sync::Mutex::new(Some(service));
    let url = std::sync::Mutex::new(client.url.clone());
    std::thread::scope(|s| {
        for _ in 0..CLIENTS {
            s.spawn(|| loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n >= UPLOADS {
                    return;
                }
                if n == UPLOADS / 2 {
                    // The crash: SIGKILL, then a restart on the same data dir.
                    let old = service.lock().unwrap().take().unwrap();
                    old.kill();
                    let restarted = Service::start(&sb, "");
                    *url.lock().unwrap() = restarted.url.clone();
                    *service.lock().unwrap() = Some(restarted);
                }
                let (name, bytes) = match n % 10 {
                    0 | 5 => (format!("load/ledger-{n}.md"), medium_doc(n)),
                    _ => (format!("load/note-{n}.md"), small_doc(n)),
                };
                // Retry while the service is down or busy; every 202 is recorded.
                let ok = wait_for(Duration::from_secs(300), || {
                    let mut c = client.clone();
                    c.url = url.lock().unwrap().clone();
                    let t = Instant::now();
                    let attempt = c
                        .agent
                        .post(format!("{}/v1/files?name={name}", c.url))
                        .header("Authorization", c.auth())
                        .send(&bytes[..]);
                    match attempt.map(|r| Client::answer(Ok(r))) {
                        Ok((202, answer)) => {
                            accepted.lock().unwrap().push((
                                job_of(&answer),
                                name.clone(),
                                t.elapsed().as_secs_f64(),
                            ));
                            true
                        }
                        Ok((429 | 503, _)) | Err(_) => {
                            refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(200));
                            false
                        }
                        Ok((status, answer)) => panic!("upload {name}: {status} {answer}"),
                    }
                });
                assert!(ok.is_some(), "upload {name} never accepted");
            });
        }
    });
    let service = service.lock().unwrap().take().unwrap();
    let client = Client::new(&service, Some(ALICE));
    let accepted = accepted.into_inner().unwrap();
    assert_eq!(accepted.len(), UPLOADS, "one 202 per upload");

    // Every accepted job ends, indexed (these are all benign) and exactly once in the index.
    let started = Instant::now();
    for (job, name, _) in &accepted {
        let ended = client.wait_job(job);
        assert_eq!(ended["state"], "indexed", "{name}: {ended}");
        let (status, file) = client.get(&format!(
            "/v1/files/status?locator={}",
            form_urlencoded::byte_serialize(name.as_bytes()).collect::<String>()
        ));
        assert_eq!(status, 200, "{name}: {file}");
        assert_eq!(file["status"], "indexed", "{name}: {file}");
    }
    println!(
        "all {UPLOADS} accepted uploads ended {:.1} s after the last was accepted",
        started.elapsed().as_secs_f64()
    );
    // None twice: each note's unique token is found in exactly one chunk.
    for n in (0..UPLOADS)
        .filter(|n| n % 10 != 0 && n % 10 != 5)
        .step_by(17)
    {
        let hits = client.search(&format!("L{n:05}Q"), 10);
        let body =
            json!({"query": format!("L{n:05}Q"), "limit": 10, "mode": "keyword"}).to_string();
        let (_, keyword) = client.post("/v1/search", "application/json", body.as_bytes());
        let own: Vec<&Value> = keyword["hits"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| {
                h["locator"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("load/note-{n}.md#"))
            })
            .collect();
        assert_eq!(own.len(), 1, "note {n}: {keyword}");
        assert!(!hits.is_empty());
    }
    let (_, stats) = Client::new(&service, Some(METRICS)).get("/metrics");
    let stats = stats.as_str().unwrap_or_default().to_string();
    let chunks = stats
        .lines()
        .find_map(|l| l.strip_prefix("ingest_index_chunks "))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap();
    let mut latencies: Vec<f64> = accepted.iter().map(|(_, _, t)| *t).collect();
    latencies.sort_by(f64::total_cmp);
    println!(
        "upload latency (202) over {} uploads: p50 {:.1} ms, p99 {:.1} ms; {} attempts refused \
         or unanswered (the kill and restart); {chunks} chunks in the index",
        latencies.len(),
        percentile(&latencies, 0.5) * 1000.0,
        percentile(&latencies, 0.99) * 1000.0,
        refused.load(std::sync::atomic::Ordering::SeqCst)
    );
    let pdf = client.wait_job(&pdf_job);
    assert_eq!(pdf["state"], "indexed", "{pdf}");
    assert!(service.stop().success());
}

/// The Rust example (examples/upload_handler.rs), run as it is.
#[allow(dead_code)]
#[path = "../../examples/upload_handler.rs"]
mod upload_handler;

#[test]
fn service_rust_example_upload_handler_runs() {
    let sb = Sandbox::new();
    let mut out = Vec::new();
    upload_handler::run(
        crate::util::library_config(&sb.data_dir()),
        &[
            fixtures().join("archives/bundle.zip"),
            fixtures().join("docs/notes.txt"),
        ],
        &mut out,
    )
    .unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("bundle.zip: indexed"), "{out}");
    assert!(out.contains("notes.txt: indexed"), "{out}");
    assert!(
        out.contains("indexed bundle.zip!/docs/inner.tar.gz!/notes/lighthouse.md"),
        "{out}"
    );
    assert!(out.contains("\nhit "), "{out}");
}

/// `POST /v1/search` takes the `search_documents` tool's arguments, checked alike: `positions`
/// gives each hit's boxes, the old `filters` object and the tool's paging fields are refused
/// with a message, a limit out of range is refused as by the tool, and another key's
/// locator is answered exactly like a missing one.
#[test]
fn service_search_takes_the_tools_arguments() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "max_upload_bytes = 10000000");
    let alice = Client::new(&service, Some(ALICE));
    let bob = Client::new(&service, Some(BOB));
    let pdf = std::fs::read(fixtures().join("formats/survey-report.pdf")).unwrap();
    let (status, answer) = alice.upload("survey-report.pdf", &pdf);
    assert_eq!(status, 202, "{answer}");
    let ended = alice.wait_job(&job_of(&answer));
    assert_eq!(ended["state"], "indexed", "{ended}");
    let search = |who: &Client, body: Value| {
        who.post(
            "/v1/search",
            "application/json",
            body.to_string().as_bytes(),
        )
    };
    let query = "Install the tide gauge on the north pier";
    let (status, with) = search(
        &alice,
        json!({"query": query, "locator": "survey-report.pdf", "positions": true}),
    );
    assert_eq!(status, 200, "{with}");
    let hit = with["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["locator"] == "survey-report.pdf#page=2")
        .unwrap_or_else(|| panic!("no page-2 hit: {with}"));
    let boxes = hit["boxes"].as_array().unwrap_or_else(|| panic!("{hit}"));
    assert!(
        !boxes.is_empty() && boxes.iter().all(|b| b["page"] == 2),
        "{hit}"
    );
    // The tool over HTTP gives the same boxes for the same hit.
    let (_, tool) = alice.post(
        "/v1/tools/search_documents",
        "application/json",
        json!({"query": query, "locator": "survey-report.pdf", "positions": true})
            .to_string()
            .as_bytes(),
    );
    let tool_hit = tool["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["locator"] == "survey-report.pdf#page=2")
        .unwrap_or_else(|| panic!("{tool}"));
    assert_eq!(tool_hit["boxes"], hit["boxes"], "{tool}");
    let (status, without) = search(
        &alice,
        json!({"query": query, "locator": "survey-report.pdf"}),
    );
    assert_eq!(status, 200, "{without}");
    assert!(
        !without.to_string().contains("boxes"),
        "opt-in only: {without}"
    );

    let (status, old) = search(
        &alice,
        json!({"query": query, "filters": {"locator": "survey-report.pdf"}}),
    );
    assert_eq!(status, 400, "{old}");
    assert!(old.to_string().contains("filters"), "{old}");
    let (status, paged) = search(&alice, json!({"query": query, "max_chars": 500}));
    assert_eq!(status, 400, "{paged}");
    assert!(paged.to_string().contains("search_documents"), "{paged}");
    let (status, many) = search(&alice, json!({"query": query, "limit": 51}));
    assert_eq!(status, 400, "{many}");
    assert!(many.to_string().contains("between 1 and 50"), "{many}");

    // Tags are bounded alike on both faces: 33 are refused before any search runs.
    let tags: serde_json::Map<String, Value> =
        (0..33).map(|i| (format!("k{i}"), json!("v"))).collect();
    let (status, too_many) = search(&alice, json!({"query": query, "tags": tags}));
    assert_eq!(status, 400, "{too_many}");
    assert!(too_many.to_string().contains("at most 32"), "{too_many}");
    let (_, tool_many) = alice.post(
        "/v1/tools/search_documents",
        "application/json",
        json!({"query": query, "tags": tags}).to_string().as_bytes(),
    );
    assert!(tool_many.to_string().contains("at most 32"), "{tool_many}");

    // `shared` narrows to the mandate's shared files, or to one's own unshared ones.
    let notice = b"Harbour notice: the slipway at Skerry Point closes for repairs in May.\n";
    let (status, answer) = alice.post(
        "/v1/files?name=notice.txt&shared=true",
        "application/octet-stream",
        notice,
    );
    assert_eq!(status, 202, "{answer}");
    assert_eq!(alice.wait_job(&job_of(&answer))["state"], "indexed");
    let (status, answer) = bob.upload(
        "bob-notes.txt",
        b"Bob's notes: the slipway repairs need timber.\n",
    );
    assert_eq!(status, 202, "{answer}");
    assert_eq!(bob.wait_job(&job_of(&answer))["state"], "indexed");
    let files_of = |answer: &Value| -> Vec<String> {
        let mut files: Vec<String> = answer["hits"]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"))
            .iter()
            .map(|h| {
                h["locator"]
                    .as_str()
                    .unwrap()
                    .split('#')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        files.sort();
        files.dedup();
        files
    };
    let slipway = |shared: Option<bool>| {
        let mut body = json!({"query": "slipway repairs", "limit": 10});
        if let Some(shared) = shared {
            body["shared"] = json!(shared);
        }
        let (status, http) = search(&bob, body.clone());
        assert_eq!(status, 200, "{http}");
        let (status, tool) = bob.post(
            "/v1/tools/search_documents",
            "application/json",
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 200, "{tool}");
        assert_eq!(files_of(&http), files_of(&tool), "{http} / {tool}");
        files_of(&http)
    };
    assert_eq!(slipway(None), ["bob-notes.txt", "notice.txt"]);
    assert_eq!(slipway(Some(true)), ["notice.txt"]);
    assert_eq!(slipway(Some(false)), ["bob-notes.txt"]);

    // Bob asking under Alice's file is told what he is told of a file nobody has.
    let (theirs_status, theirs) = search(
        &bob,
        json!({"query": query, "locator": "survey-report.pdf"}),
    );
    let (missing_status, missing) =
        search(&bob, json!({"query": query, "locator": "no-such-file.pdf"}));
    assert_eq!(
        (theirs_status, missing_status),
        (404, 404),
        "{theirs} / {missing}"
    );
    assert_eq!(
        theirs.to_string().replace("survey-report.pdf", "X"),
        missing.to_string().replace("no-such-file.pdf", "X")
    );
    assert!(service.stop().success());
}
