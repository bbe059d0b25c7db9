//! The agent's tools on the command line (`browse`, `read`, `read-section`, `extract`,
//! `search` with filters) and over MCP (`ingest mcp` on stdio), end to end: answers are one
//! JSON object within `--max-chars`, cursors continue them, tool errors exit 1, calls reach
//! the daemon while it holds the data directory, the scope never comes from the model.
//!
//! Tests marked "(needs the tools)" check answers' content against docs/TOOLS.md and fail
//! against the `tools::call` stub; the others pass with the stub too.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::*;

/// A tool command's `--json` output: exactly one JSON object, at most `max_chars` bytes,
/// whose `size.chars` (on answers that are not errors) is its own length.
fn one_answer(out: &std::process::Output, max_chars: usize) -> Value {
    let stdout = String::from_utf8(out.stdout.clone()).expect("UTF-8 answer");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one answer line: {stdout:?}");
    let line = lines[0];
    assert!(
        line.len() <= max_chars,
        "{} chars > {max_chars}: {line}",
        line.len()
    );
    let value: Value = serde_json::from_str(line).expect("the answer is JSON");
    assert!(value.is_object(), "{value}");
    if value.get("error").is_none() {
        assert_eq!(
            value["size"]["chars"].as_u64(),
            Some(line.len() as u64),
            "{line}"
        );
    }
    value
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The fixture documents and archives ingested into a fresh sandbox.
fn ingested() -> Sandbox {
    let sb = Sandbox::new();
    let folders = [fixtures().join("docs"), fixtures().join("archives")];
    let paths: Vec<&Path> = folders.iter().map(|p| p.as_path()).collect();
    let (lines, _, code) = sb.ingest(&paths);
    assert_eq!(code, 0, "{lines:#?}");
    sb
}

#[test]
fn a_tool_error_is_one_json_answer_and_exit_3_with_the_error_on_stderr() {
    let sb = Sandbox::new();
    sb.write("in/a.txt", b"An index to ask.\n");
    assert_eq!(sb.ingest(&[&sb.path("in")]).2, 0);
    let out = sb.run(&["browse", "--json", "/no/such/folder.zip"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let answer = one_answer(&out, 4000);
    let error = answer["error"].as_str().expect("an error answer");
    assert!(error.contains("browse_container"), "for the model: {error}");
    // On stderr, for a person: what to type instead.
    assert!(
        stderr(&out).contains("error: nothing indexed at /no/such/folder.zip"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("ingest files"), "{}", stderr(&out));
    // Without --json, only the error, on stderr.
    let out = sb.run(&["read", "/no/such/file.pdf", "--pages", "1-2"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
}

#[test]
fn arguments_the_cli_cannot_parse_are_refused_before_any_call() {
    let sb = Sandbox::new();
    let out = sb.run(&["read", "/d/a.pdf", "--slide", "two"]);
    assert_eq!(out.status.code(), Some(64), "clap's usage error");
    let out = sb.run(&["read-section", "/d/a.pdf"]);
    assert_eq!(out.status.code(), Some(64), "the section is required");
}

/// (needs the tools) Every face answers one JSON object within `--max-chars`, and a cursor
/// continues where the answer stopped.
#[test]
fn tool_commands_answer_json_within_max_chars_and_cursors_continue() {
    let sb = ingested();
    let bundle = fixtures().join("archives/bundle.zip");
    let bundle = bundle.to_str().unwrap();
    let handbook = fixtures().join("docs/handbook.md");
    let handbook = handbook.to_str().unwrap();

    // The top level, then the archive: its members with their locators.
    let top = one_answer(&sb.run(&["browse", "--json", "--max-chars", "1500"]), 1500);
    assert_eq!(top["kind"], "root", "{top}");
    let out = sb.run(&["browse", "--json", "--max-chars", "1500", bundle]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let archive = one_answer(&out, 1500);
    assert_eq!(archive["kind"], "archive", "{archive}");
    let names: Vec<&str> = archive["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(names.contains(&"README.txt"), "{archive}");

    // A document's outline, then one section of it and its objects, all within budget.
    let out = sb.run(&["browse", "--json", "--max-chars", "2000", handbook]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let doc = one_answer(&out, 2000);
    assert_eq!(doc["kind"], "document", "{doc}");
    let first = doc["outline"][0]["id"]
        .as_str()
        .expect("an outline")
        .to_string();
    let out = sb.run(&[
        "read-section",
        "--json",
        "--max-chars",
        "600",
        handbook,
        &first,
    ]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let section = one_answer(&out, 600);
    assert_eq!(section["section"]["id"], first.as_str(), "{section}");

    // A small budget leaves objects out: the cursor brings the next ones, never the same.
    let read = |cursor: Option<&str>| {
        let mut args = vec!["read", "--json", "--max-chars", "300", handbook];
        if let Some(c) = cursor {
            args.extend(["--cursor", c]);
        }
        let out = sb.run(&args);
        assert!(out.status.success(), "{}", crate::util::told(&out));
        one_answer(&out, 300)
    };
    let page1 = read(None);
    let cursor = page1["cursor"].as_str().expect("a cursor at 300 chars");
    // `more` is left out of compact answers (small budgets); the cursor says there is more.
    assert!(
        page1["more"].as_str().is_some() || page1["compact"] == true,
        "{page1}"
    );
    let page2 = read(Some(cursor));
    assert_ne!(page1["objects"], page2["objects"], "{page1}\n{page2}");

    // Search, narrowed to the archive (at any depth inside it).
    let out = sb.run(&[
        "search",
        "--json",
        "--max-chars",
        "800",
        "--locator",
        bundle,
        // What is checked is the narrowing and the budget, not the relevance floor (on a
        // busy AMX machine this search once exited 1, nothing relevant, with its hits cut).
        "--min-score",
        "0",
        "who kept the lighthouse on Skerry Point",
    ]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let found = one_answer(&out, 800);
    let hits = found["hits"].as_array().expect("hits");
    assert!(!hits.is_empty(), "{found}");
    assert!(
        hits.iter()
            .all(|h| h["locator"].as_str().unwrap().starts_with(bundle)),
        "{found}"
    );

    // The human rendering says how to continue.
    let out = sb.run(&["read", "--max-chars", "300", handbook]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("continue: ingest read"), "{text}");
    assert!(text.contains("--cursor "), "{text}");
}

/// While `ingest watch` holds the data directory, the CLI faces ask it over its socket (the
/// store allows one process, so answering locally could not read the index).
#[test]
fn tool_calls_reach_the_daemon_while_it_holds_the_data_directory() {
    let sb = Sandbox::new();
    for name in ["handbook.md", "notes.txt"] {
        sb.write(
            &format!("watched/{name}"),
            &std::fs::read(fixtures().join("docs").join(name)).unwrap(),
        );
    }
    let folder = sb.path("watched");
    let daemon = Daemon::start(&sb, &[&folder]);
    wait_for(Duration::from_secs(120), || {
        sb.try_status()
            .is_some_and(|st| st["daemon"]["syncs"].as_u64() >= Some(1))
    })
    .expect("the daemon's first sync");
    let folder = std::fs::canonicalize(&folder).unwrap();
    let out = sb.run(&["-v", "browse", "--json", folder.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("answered_by=\"daemon\"")
            || stderr(&out).contains("answered_by=daemon"),
        "{}",
        stderr(&out)
    );
    let answer = one_answer(&out, 4000);
    // (needs the tools) The folder's files, as the daemon indexed them.
    assert!(out.status.success(), "{answer}");
    let members = answer["members"].as_array().expect("members");
    assert!(
        members
            .iter()
            .any(|m| m["name"] == "notes.txt" && m["status"] == "indexed"),
        "{answer}"
    );
    drop(daemon);
}

#[test]
fn mcp_refuses_unknown_tools_non_loopback_addresses_and_bad_config_files() {
    let sb = Sandbox::new();
    let out = sb.run(&["mcp", "--tools", "search_documents,delete_everything"]);
    assert_eq!(out.status.code(), Some(64));
    let err = stderr(&out);
    assert!(err.contains("unknown tool delete_everything"), "{err}");
    for name in ingest::tools::TOOL_NAMES {
        assert!(err.contains(name), "lists the valid tools: {err}");
    }
    let out = sb.run(&["mcp", "--http", "0.0.0.0:8765"]);
    assert_eq!(out.status.code(), Some(64));
    assert!(stderr(&out).contains("loopback"), "{}", stderr(&out));
    let config = sb.write("mcp.toml", b"[scope]\nuser_id = \"bob\"\n");
    let out = sb.run(&["mcp", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("user_id"), "{}", stderr(&out));
}

/// An MCP client on stdio, speaking JSON-RPC lines.
struct McpClient {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl McpClient {
    fn start(sb: &Sandbox, args: &[&str]) -> McpClient {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ingest"))
            .arg("mcp")
            .args(args)
            .arg("--data-dir")
            .arg(sb.data_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(sb.path("mcp.err")).unwrap())
            .spawn()
            .expect("start ingest mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = McpClient {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "faces-test", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        client.notify("notifications/initialized");
        client
    }

    fn notify(&mut self, method: &str) {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        writeln!(self.stdin, "{msg}").unwrap();
    }

    /// Send a request; its response (a hang guard of two minutes, not a latency check).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").unwrap();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .expect("an answer from ingest mcp");
            let v: Value = serde_json::from_str(&line).expect("JSON-RPC on stdout");
            if v["id"] == id {
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mcp_lists_the_selected_tools_and_answers_with_the_exact_text() {
    let sb = Sandbox::new();
    // The document tools read an index: one is there.
    sb.write("in/a.txt", b"The tide tables are printed in March.\n");
    assert_eq!(sb.ingest(&[&sb.path("in")]).2, 0);
    let mut mcp = McpClient::start(&sb, &["--tools", "browse_container,search_documents"]);
    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["search_documents", "browse_container"], "{listed}");
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
        assert_eq!(t["annotations"]["openWorldHint"], false, "{t}");
    }

    // A scope argument is refused as a tool error the model reads, not a protocol error.
    let r = mcp.call("browse_container", json!({"user": "bob"}));
    let result = &r["result"];
    assert_eq!(result["isError"], true, "{r}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("unknown field `user`"), "{text}");
    assert_eq!(
        result["structuredContent"],
        serde_json::from_str::<Value>(text).unwrap()
    );

    // Any answer: one text content holding the exact JSON, the same object as structured
    // content, within the budget asked.
    let r = mcp.call("browse_container", json!({"max_chars": 500}));
    let result = &r["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .expect("a text content");
    assert!(text.len() <= 500, "{text}");
    assert_eq!(result["content"].as_array().unwrap().len(), 1);
    assert_eq!(
        result["structuredContent"],
        serde_json::from_str::<Value>(text).unwrap()
    );

    // A tool this server does not offer cannot be called.
    let r = mcp.call(
        "extract_container_item",
        json!({"locator": "/d/a.zip!/b.pdf"}),
    );
    let message = r["error"]["message"].as_str().expect("a protocol error");
    assert!(message.contains("unknown tool"), "{r}");
}

/// An MCP server that answered from its own `Ingestor` (holding the store) lets a daemon
/// started later take the data directory, and then asks it. (With the `tools::call` stub no
/// call opens the store, so this proves the hand-over only once the tools are in.)
#[test]
fn mcp_lets_a_daemon_started_later_take_the_store_and_then_asks_it() {
    let sb = Sandbox::new();
    sb.write(
        "watched/notes.txt",
        &std::fs::read(fixtures().join("docs/notes.txt")).unwrap(),
    );
    let (lines, _, code) = sb.ingest(&[&sb.path("watched")]);
    assert_eq!(code, 0, "{lines:#?}");
    let mut mcp = McpClient::start(&sb, &[]);
    let first = mcp.call(
        "search_documents",
        json!({"query": "tide", "max_chars": 1000, "min_score": 0}),
    );
    let hits = |reply: &serde_json::Value| -> usize {
        let text = reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("{}");
        let answer: serde_json::Value = serde_json::from_str(text).unwrap();
        answer["hits"].as_array().map_or(0, Vec::len)
    };
    assert!(hits(&first) > 0, "a search that found the file: {first}");
    let log = || std::fs::read_to_string(sb.path("mcp.err")).unwrap_or_default();
    assert!(log().contains("answered_by=\"local\""), "{}", log());

    let folder = sb.path("watched");
    let _daemon = Daemon::start(&sb, &[&folder]);
    wait_for(Duration::from_secs(120), || {
        sb.try_status()
            .is_some_and(|st| st["daemon"]["syncs"].as_u64() >= Some(1))
    })
    .unwrap_or_else(|| {
        panic!(
            "the daemon took the store: {}",
            std::fs::read_to_string(sb.path("daemon.err")).unwrap_or_default()
        )
    });
    let again = mcp.call(
        "search_documents",
        json!({"query": "tide", "max_chars": 1000, "min_score": 0}),
    );
    assert!(hits(&again) > 0, "the daemon found it too: {again}");
    assert!(log().contains("answered_by=\"daemon\""), "{}", log());
}

/// `ingest render-page` writes the PNG to `-o` (a file, or standard output with `-`) and
/// prints what it is; `--json` gives the answer's text; `ingest tool render_page` gives the
/// image inside the JSON, as HTTP does; a file that is no PDF or picture exits 3.
#[test]
fn render_page_writes_the_png_and_the_tool_face_carries_it_in_the_json() {
    use base64::Engine as _;
    let sb = Sandbox::new();
    let pdf = std::fs::read(fixtures().join("formats/survey-report.pdf")).unwrap();
    sb.write("in/report.pdf", &pdf);
    sb.write("in/notes.txt", b"Plain words, no pages.\n");
    assert_eq!(sb.ingest(&[&sb.path("in")]).2, 0);
    let report = sb.path("in/report.pdf");
    let report = std::fs::canonicalize(report).unwrap();
    let located = format!("{}#page=2", report.display());
    let png = sb.path("page2.png");
    let out = sb.run(&[
        "render-page",
        &located,
        "-o",
        png.to_str().unwrap(),
        "--max-bytes",
        "20000",
    ]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() <= 20_000);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("#page=2") && said.contains("PNG"), "{said}");
    // Standard output holds the PNG and nothing else.
    let out = sb.run(&["render-page", &located, "-o", "-", "--dpi", "50"]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    assert!(out.stdout.starts_with(b"\x89PNG\r\n\x1a\n"));
    // --json: the text (the image went to the file).
    let out = sb.run(&[
        "render-page",
        "--json",
        &located,
        "-o",
        png.to_str().unwrap(),
    ]);
    let answer = one_answer(&out, 4000);
    assert_eq!(
        answer["bytes"],
        std::fs::read(&png).unwrap().len(),
        "{answer}"
    );
    assert!(answer.get("image").is_none(), "{answer}");
    // The generic tool face: the image in the JSON, as over HTTP.
    let args = serde_json::json!({ "locator": located, "max_bytes": 30000 }).to_string();
    let out = sb.run(&["tool", "render_page", &args, "--json"]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let image = base64::engine::general_purpose::STANDARD
        .decode(v["image"]["base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(v["bytes"], image.len(), "{v}");
    assert!(image.len() <= 30_000);
    // Not a PDF or a picture: exit 3, saying why.
    let notes = std::fs::canonicalize(sb.path("in/notes.txt")).unwrap();
    let out = sb.run(&[
        "render-page",
        notes.to_str().unwrap(),
        "-o",
        png.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("PDF pages and pictures"),
        "{}",
        stderr(&out)
    );
}
