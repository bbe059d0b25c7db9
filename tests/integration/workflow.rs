//! The workflow layer through the real binary, model and store: a workflow of several rounds
//! played by the official Python MCP client (tests/mcp/workflow.py), and the walls between
//! workflows, users and mandates over HTTP and the CLI (the library's own cases are unit tests
//! in src/workflow/tests.rs). After `end_workflow` nothing of the workflow is left: points,
//! files and counts are checked here.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::service::{Client, Service, ALICE, BOB, METRICS};
use crate::util::{repo_dir, Sandbox};

const OWN: &str = "The north quay cranes are inspected every Tuesday by the harbour engineers.";
const SHARED: &str = "Ferry berths at the north quay close for crane inspections on Tuesdays.";
const QUERY: &str = "north quay crane inspections on Tuesday";

fn python() -> std::path::PathBuf {
    let py = repo_dir().join(".venv-test/bin/python");
    assert!(py.exists(), "{} is missing: run `make deps`", py.display());
    py
}

/// Files under `dir`, recursively (none when it does not exist).
fn files_under(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|e| e.unwrap().path())
        .map(|p| if p.is_dir() { files_under(&p) } else { 1 })
        .sum()
}

#[test]
fn workflow_python_mcp_client_plays_a_workflow_and_ending_it_leaves_nothing() {
    let sb = Sandbox::new();
    let own = sb.write(
        "alice/harbour-notes.txt",
        format!("Harbour notes\n\n{OWN}\n\nThe west pier is closed for repairs until spring.\n")
            .as_bytes(),
    );
    let shared = sb.write(
        "bob/ferry-notice.txt",
        format!("Ferry notice\n\n{SHARED}\n").as_bytes(),
    );
    let scope = |user: &str| {
        vec![
            "--user".to_string(),
            user.to_string(),
            "--feature-instance".into(),
            "chat".into(),
            "--mandate".into(),
            "acme".into(),
        ]
    };
    let a = scope("alice");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (_, _, code) = sb.ingest_with(&a, &[&own]);
    assert_eq!(code, 0);
    let mut b = scope("bob");
    b.push("--shared".into());
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    let (_, _, code) = sb.ingest_with(&b, &[&shared]);
    assert_eq!(code, 0);
    let before = sb.status();
    let content_before = files_under(&sb.data_dir().join("content"));

    let out = Command::new(python())
        .arg(repo_dir().join("tests/mcp/workflow.py"))
        .args(["--bin", env!("CARGO_BIN_EXE_ingest"), "--data-dir"])
        .arg(sb.data_dir())
        .args([
            "--own-phrase",
            OWN,
            "--shared-phrase",
            SHARED,
            "--query",
            QUERY,
        ])
        .output()
        .expect("run tests/mcp/workflow.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.trim_end().ends_with("OK"),
        "tests/mcp/workflow.py: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );

    // Nothing of the workflow is left: points, catalog, content indexes, records, counts.
    let after = sb.status();
    assert_eq!(after["points"], before["points"], "{after}");
    assert_eq!(after["catalog"], before["catalog"], "{after}");
    assert_eq!(after["workflows"]["workflows"], 0, "{after}");
    assert_eq!(after["workflows"]["results"], 0, "{after}");
    assert_eq!(files_under(&sb.data_dir().join("content")), content_before);
    assert_eq!(files_under(&sb.data_dir().join("workflows")), 0);
    // Not in the databases' bytes either (deleted rows are overwritten, not left in free
    // pages): the catalog and the workflow records, with their write-ahead logs.
    for db in ["catalog.sqlite", "workflows.sqlite"] {
        for file in [db.to_string(), format!("{db}-wal")] {
            let bytes = std::fs::read(sb.data_dir().join(&file)).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains("wf-harbour-1"),
                "{file} names the workflow"
            );
        }
    }
}

/// Call tool `name` over HTTP: the status and the raw body.
fn tool(client: &Client, name: &str, args: Value) -> (u16, String) {
    let (status, value) = client.post(
        &format!("/v1/tools/{name}"),
        "application/json",
        args.to_string().as_bytes(),
    );
    (status, value.to_string())
}

/// `ingest tool NAME ARGS --json` as `user` in `mandate` (answered by the service's daemon
/// socket while it holds the data directory): the exit code and the answer.
fn cli_tool(sb: &Sandbox, user: &str, mandate: &str, name: &str, args: &Value) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args([
            "tool",
            name,
            &args.to_string(),
            "--json",
            "--user",
            user,
            "--mandate",
            mandate,
        ])
        .arg("--data-dir")
        .arg(sb.data_dir())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    )
}

#[test]
fn security_workflows_are_walls_over_http_and_the_cli() {
    let sb = Sandbox::new();
    let globex = "k-alice-globex-0123456789";
    std::fs::write(
        sb.path("ingest.toml"),
        format!(
            "metrics_key = \"{METRICS}\"\n\n\
             [[api_keys]]\nkey = \"{ALICE}\"\nuser = \"alice\"\nmandate = \"acme\"\n\n\
             [[api_keys]]\nkey = \"{BOB}\"\nuser = \"bob\"\nmandate = \"acme\"\n\n\
             [[api_keys]]\nkey = \"{globex}\"\nuser = \"alice\"\nmandate = \"globex\"\n"
        ),
    )
    .unwrap();
    let service = Service::start_config(&sb, &[]);
    let alice = Client::new(&service, Some(ALICE));
    let secret = "The harbour safe code is 4-8-15-16, kept by quartermaster Ingrid.";
    let (status, stored) = tool(
        &alice,
        "store_tool_result",
        json!({"workflow": "w1", "tool": "vault.read", "content": secret, "max_chars": 1000}),
    );
    assert_eq!(status, 200, "{stored}");
    let handle = serde_json::from_str::<Value>(&stored).unwrap()["handle"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _) = tool(
        &alice,
        "remember",
        json!({"workflow": "w1", "key": "safe_keeper", "value": "quartermaster Ingrid"}),
    );
    assert_eq!(status, 200);
    let (status, own) = tool(
        &alice,
        "recall_tool_result",
        json!({"workflow": "w1", "handle": handle}),
    );
    assert_eq!(status, 200);
    assert!(own.contains("4-8-15-16"), "{own}");

    // HTTP: another workflow, another user of the mandate, the same user in another mandate.
    for (key, wf) in [(ALICE, "w2"), (BOB, "w1"), (globex, "w1")] {
        let c = Client::new(&service, Some(key));
        let theirs = tool(
            &c,
            "recall_tool_result",
            json!({"workflow": wf, "handle": handle}),
        );
        let made_up = tool(
            &c,
            "recall_tool_result",
            json!({"workflow": "never", "handle": handle}),
        );
        assert_eq!(
            theirs, made_up,
            "{key} {wf}: status and body as a made-up handle"
        );
        let (status, ctx) = tool(
            &c,
            "gather_context",
            json!({"workflow": wf, "query": secret, "max_chars": 20000,
                   "layers": {"instance": {"min_score": null}, "shared": {"min_score": null}}}),
        );
        assert_eq!(status, 200, "{ctx}");
        assert!(
            !ctx.contains("4-8-15-16") && !ctx.contains("Ingrid"),
            "{key}: {ctx}"
        );
        let (_, hits) = tool(
            &c,
            "search_documents",
            json!({"query": secret, "mode": "keyword"}),
        );
        assert!(hits.contains("\"hits\":[]"), "{key}: {hits}");
        // Their end_workflow of the same id deletes nothing of alice's w1.
        let (status, ended) = tool(&c, "end_workflow", json!({"workflow": wf}));
        assert_eq!(status, 200, "{ended}");
    }
    let (status, still) = tool(
        &alice,
        "recall_tool_result",
        json!({"workflow": "w1", "handle": handle}),
    );
    assert_eq!(
        (status, still.contains("4-8-15-16")),
        (200, true),
        "{still}"
    );
    // Alice's own document search never includes her workflow's content.
    let (_, hits) = tool(
        &alice,
        "search_documents",
        json!({"query": secret, "mode": "keyword"}),
    );
    assert!(hits.contains("\"hits\":[]"), "{hits}");

    // The CLI (answered through the service's socket): the same walls.
    let recall = json!({"workflow": "w1", "handle": handle});
    let (code, mine) = cli_tool(&sb, "alice", "acme", "recall_tool_result", &recall);
    assert_eq!(code, 0, "{mine}");
    assert!(mine.contains("4-8-15-16"), "{mine}");
    let never = json!({"workflow": "never", "handle": handle});
    for (user, mandate) in [("bob", "acme"), ("alice", "globex")] {
        let theirs = cli_tool(&sb, user, mandate, "recall_tool_result", &recall);
        let made_up = cli_tool(&sb, user, mandate, "recall_tool_result", &never);
        assert_eq!(theirs, made_up, "cli {user}@{mandate}");
        assert_eq!(theirs.0, 3, "a tool's error: the command could not run");
    }
    // Unknown tools and bad arguments are refused with a reason.
    let (code, _) = cli_tool(&sb, "alice", "acme", "drop_everything", &json!({}));
    assert_ne!(code, 0);
    let (status, bad) = tool(
        &alice,
        "remember",
        json!({"workflow": "a/b", "key": "k", "value": "v"}),
    );
    assert_eq!(status, 200, "{bad}");
    assert!(bad.contains("invalid workflow"), "{bad}");

    // A result larger than any other request body: stored over HTTP (its own bound), while
    // another tool's body of that size is refused.
    let big = "z".repeat(3 << 20);
    let (status, answer) = tool(
        &alice,
        "store_tool_result",
        json!({"workflow": "w1", "tool": "dump", "content": big, "max_chars": 500}),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"raw_bytes\":3145728"), "{answer}");
    let (status, _) = tool(
        &alice,
        "remember",
        json!({"workflow": "w1", "key": "k", "value": big}),
    );
    assert_eq!(status, 413);

    // Counts in /metrics, then nothing after the end.
    let metrics = Client::new(&service, Some(METRICS))
        .get("/metrics")
        .1
        .to_string();
    assert!(metrics.contains("ingest_workflows 1"), "{metrics}");
    let (status, ended) = tool(&alice, "end_workflow", json!({"workflow": "w1"}));
    assert_eq!(status, 200, "{ended}");
    assert!(ended.contains("\"tool_results\":2"), "{ended}");
    let metrics = Client::new(&service, Some(METRICS))
        .get("/metrics")
        .1
        .to_string();
    assert!(metrics.contains("ingest_workflows 0"), "{metrics}");
    assert!(service.stop().success());
}
