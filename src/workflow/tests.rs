//! The workflow layer through its tools, in one process without the model (the fake model,
//! the embedded store, extraction in process): budgets, exact recall through cursors,
//! entities, `gather_context`'s layers and order, the walls between workflows, users and
//! mandates, and that ending a workflow leaves nothing of it.

use std::sync::Arc;

use extractors::Scope;
use serde_json::{json, Value};

use crate::embed::fake::{fake_chunker, FakeEmbedder};
use crate::tools::{self, ToolCall};
use crate::{Config, Ingestor};

struct Bench {
    ing: Ingestor,
    _dir: tempfile::TempDir,
}

fn alice() -> Scope {
    Scope {
        user_id: "alice".into(),
        feature_instance_id: Some("chat".into()),
        mandate_id: Some("acme".into()),
        ..Scope::default()
    }
}

fn bob() -> Scope {
    Scope {
        user_id: "bob".into(),
        ..alice()
    }
}

/// Layers without similarity floors: the fake model's cosines mean nothing.
fn no_floors() -> Value {
    json!({
        "instance": {"limit": 15, "min_score": null},
        "shared": {"limit": 10, "min_score": null},
    })
}

impl Bench {
    fn new() -> Self {
        Self::with(|_| {})
    }

    fn with(change: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::new(dir.path().join("data"));
        config.isolation.mode = crate::isolation::Isolation::InProcess;
        change(&mut config);
        let models = crate::services::GivenModels {
            chunker: Some(fake_chunker(&config.chunking)),
            embedder: Some(Arc::new(FakeEmbedder::default())),
        };
        let ing = Ingestor::open_with_models(config, models).unwrap();
        Bench { ing, _dir: dir }
    }

    /// Call tool `name` with `args` as `scope`: the answer's JSON and whether it is an error.
    fn call(&self, scope: &Scope, name: &str, args: Value) -> (Value, bool) {
        let call = ToolCall::parse(name, args).unwrap();
        let budget = call.budget(self.ing.config().max_answer_chars);
        let answer = tools::call(&self.ing, scope, &call);
        assert!(
            answer.text.len() <= budget,
            "{name}: over budget: {}",
            answer.text
        );
        (serde_json::from_str(&answer.text).unwrap(), answer.is_error)
    }

    fn ok(&self, scope: &Scope, name: &str, args: Value) -> Value {
        let (v, err) = self.call(scope, name, args);
        assert!(!err, "{name}: {v}");
        v
    }

    fn text_of(&self, scope: &Scope, name: &str, args: Value) -> String {
        let call: ToolCall = ToolCall::parse(name, args).unwrap();
        tools::call(&self.ing, scope, &call).text
    }

    /// Points stored in exactly `scope`.
    fn points(&self, scope: &Scope) -> usize {
        let key = scope.key();
        let mut n = 0;
        self.ing
            .store()
            .unwrap()
            .for_each_point(&mut |p| n += usize::from(p.scope_key == key))
            .unwrap();
        n
    }
}

/// A large tool result: numbered lines of varied text, multi-byte characters and JSON quotes
/// included.
fn big_result(bytes: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&format!(
            "line {i}: order {} shipped to Zürich \"dock {}\" — total {} units\n",
            1000 + i,
            i % 17,
            i * 3
        ));
        i += 1;
    }
    s
}

#[test]
fn a_big_result_is_previewed_within_budget_and_recalled_exactly() {
    let b = Bench::new();
    let content = big_result(200 * 1024);
    let stored = b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "run1", "tool": "orders.list", "args": {"since": "2026-01-01"},
               "content": content, "max_chars": 1000}),
    );
    assert_eq!(stored["handle"], "tr_1");
    assert_eq!(stored["raw_chars"], content.chars().count());
    assert!(
        stored["omitted_chars"].as_u64().unwrap() > 190_000,
        "{stored}"
    );
    let preview = stored["preview"].as_str().unwrap();
    assert!(preview.starts_with("line 0: order 1000"), "{preview}");
    assert!(content.trim_end().ends_with(
        preview
            .trim_end()
            .rsplit("omitted]")
            .next()
            .unwrap()
            .trim_end()
    ));
    assert!(stored["chunks"].as_u64().unwrap() > 10, "{stored}");

    // Recalled page by page at several budgets: byte for byte the stored text.
    for max in [1000, 7777] {
        let mut rebuilt = String::new();
        let mut cursor: Option<String> = None;
        for _ in 0..5000 {
            let mut args = json!({"workflow": "run1", "handle": "tr_1", "max_chars": max});
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let page = b.ok(&alice(), "recall_tool_result", args);
            assert_eq!(
                page["offset"].as_u64().unwrap() as usize,
                rebuilt.chars().count()
            );
            rebuilt.push_str(page["text"].as_str().unwrap());
            match page["cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        assert_eq!(rebuilt, content, "budget {max}");
    }
    // Lines.
    let lines = b.ok(
        &alice(),
        "recall_tool_result",
        json!({"workflow": "run1", "handle": "tr_1", "lines": "3-4", "max_chars": 4000}),
    );
    let want: String = content
        .lines()
        .skip(2)
        .take(2)
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(lines["text"], want);
    // A cursor of other arguments is refused.
    let (e, err) = b.call(
        &alice(),
        "recall_tool_result",
        json!({"workflow": "run1", "handle": "tr_1", "cursor": "recall.0.5.-.deadbeef"}),
    );
    assert!(err, "{e}");
    // A JSON result is kept as compact JSON.
    let j = b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "run1", "tool": "t", "content": {"a": [1, 2, {"b": "ü"}]}}),
    );
    assert_eq!(j["format"], "json");
    let r = b.ok(
        &alice(),
        "recall_tool_result",
        json!({"workflow": "run1", "handle": j["handle"]}),
    );
    assert_eq!(r["text"], r#"{"a":[1,2,{"b":"ü"}]}"#);
}

#[test]
fn workflows_users_and_mandates_never_see_each_others_data() {
    let b = Bench::new();
    let secret = "The vault combination is seven-three-nine, said the quartermaster.";
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "run1", "tool": "vault", "content": secret}),
    );
    b.ok(
        &alice(),
        "remember",
        json!({"workflow": "run1", "key": "combination", "value": "seven-three-nine quartermaster"}),
    );
    b.ok(
        &alice(),
        "store_summary",
        json!({"workflow": "run1", "text": "The quartermaster told us the vault combination."}),
    );
    let other_mandate = Scope {
        mandate_id: Some("globex".into()),
        ..alice()
    };
    let no_fi = Scope {
        feature_instance_id: None,
        ..alice()
    };
    let made_up = b.text_of(
        &alice(),
        "recall_tool_result",
        json!({"workflow": "never-used", "handle": "tr_1"}),
    );
    assert!(made_up.contains("no such handle"), "{made_up}");
    for (who, scope, wf) in [
        ("another workflow", alice(), "run2"),
        ("another user", bob(), "run1"),
        ("another mandate", other_mandate.clone(), "run1"),
        ("another feature instance", no_fi.clone(), "run1"),
    ] {
        // A handle of another workflow reads exactly like a made-up one.
        let text = b.text_of(
            &scope,
            "recall_tool_result",
            json!({"workflow": wf, "handle": "tr_1"}),
        );
        let made_up_here = b.text_of(
            &scope,
            "recall_tool_result",
            json!({"workflow": "never-used", "handle": "tr_1"}),
        );
        assert_eq!(text, made_up_here, "{who}");
        assert_eq!(text, made_up, "{who}");
        let ctx = b.ok(
            &scope,
            "gather_context",
            json!({"workflow": wf, "query": "vault combination quartermaster", "layers": no_floors(),
                   "max_chars": 20000}),
        );
        assert!(!ctx.to_string().contains("quartermaster"), "{who}: {ctx}");
    }
    // Documents never include a workflow's content, whatever the search.
    for scope in [alice(), no_fi, bob()] {
        let hits = b.ok(
            &scope,
            "search_documents",
            json!({"query": "vault combination quartermaster", "mode": "keyword"}),
        );
        assert_eq!(hits["hits"], json!([]), "{hits}");
        let top = b.ok(&scope, "browse_container", json!({}));
        assert!(!top.to_string().contains("tool-results"), "{top}");
    }
    // The workflow itself sees all three.
    let ctx = b.ok(
        &alice(),
        "gather_context",
        json!({"workflow": "run1", "query": "vault combination quartermaster", "layers": no_floors(),
               "max_chars": 20000}),
    );
    let layers: Vec<&str> = ctx["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["layer"].as_str().unwrap())
        .collect();
    assert_eq!(layers, ["entity", "tool_result", "summary"], "{ctx}");
}

#[test]
fn gather_context_takes_the_layers_in_order_once_each_within_its_budget() {
    let b = Bench::new();
    let own = "Harbour cranes lift containers at the north quay every morning.";
    let shared = "The harbour master publishes the crane schedule for the north quay weekly.";
    let common = "Crane maintenance happens at the harbour on the first Monday.";
    b.ing
        .ingest_bytes(
            "own/cranes.txt",
            format!("{own}\n\n{common}\n").into_bytes(),
            &alice(),
        )
        .unwrap();
    let bob_shared = Scope {
        is_shared: true,
        ..bob()
    };
    b.ing
        .ingest_bytes(
            "team/schedule.txt",
            format!("{shared}\n").into_bytes(),
            &bob_shared,
        )
        .unwrap();
    b.ing
        .ingest_bytes(
            "own/quay.txt",
            b"The north quay harbour crane seven is the tallest crane of the port.\n".to_vec(),
            &alice(),
        )
        .unwrap();
    // The same passage as a tool result: shown once, in the higher layer (the tool result).
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "w", "tool": "docs.fetch", "content": format!("{own}\n\n{common}\n")}),
    );
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "w", "tool": "crm.lookup",
               "content": "Invoice INV-2026-0042 for harbour crane repair: EUR 12.500,00, due 2026-12-01. Contact ops@harbour.example.",
               "extract_entities": true}),
    );
    b.ok(
        &alice(),
        "remember",
        json!({"workflow": "w", "key": "crane", "value": "north quay harbour crane 7", "source": "tr_1"}),
    );
    b.ok(
        &alice(),
        "store_summary",
        json!({"workflow": "w", "text": "We looked at harbour cranes.", "covers": "rounds 1-3"}),
    );
    let args = |max: usize| {
        json!({"workflow": "w", "query": "harbour crane north quay", "layers": no_floors(),
               "max_chars": max})
    };
    let all = b.ok(&alice(), "gather_context", args(50_000));
    let items = all["items"].as_array().unwrap();
    let layers: Vec<&str> = items.iter().map(|i| i["layer"].as_str().unwrap()).collect();
    let rank = |l: &str| {
        ["entity", "tool_result", "summary", "instance", "shared"]
            .iter()
            .position(|x| *x == l)
            .unwrap()
    };
    assert!(
        layers.windows(2).all(|w| rank(w[0]) <= rank(w[1])),
        "{layers:?}"
    );
    for l in ["instance", "entity", "shared", "summary", "tool_result"] {
        assert!(layers.contains(&l), "{l} missing: {all}");
    }
    // Each layer's share of the page is stated, in the layers' order.
    let shares: Vec<&str> = all["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["layer"].as_str().unwrap())
        .collect();
    assert_eq!(
        shares,
        ["entity", "tool_result", "summary", "instance", "shared"],
        "{all}"
    );
    // Each passage once: the tool result's passage is not repeated as a document's.
    let texts: Vec<String> = items
        .iter()
        .filter_map(|i| i["text"].as_str())
        .map(|t| {
            t.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .collect();
    let unique: std::collections::HashSet<&String> = texts.iter().collect();
    assert_eq!(unique.len(), texts.len(), "{all}");
    // Traceable: passages by locator, tool results by handle, entities by key.
    for i in items {
        match i["layer"].as_str().unwrap() {
            "instance" | "shared" => assert!(i["locator"].is_string(), "{i}"),
            "tool_result" => assert!(i["handle"].as_str().unwrap().starts_with("tr_"), "{i}"),
            "entity" => assert!(i["key"].is_string() && i["value"].is_string(), "{i}"),
            "summary" => assert_eq!(i["covers"], "rounds 1-3"),
            other => panic!("{other}"),
        }
    }
    assert!(
        items
            .iter()
            .any(|i| i["layer"] == "shared" && i["owner"] == "bob/chat (shared)"),
        "{all}"
    );
    // Rule-based entities of the second result are there.
    let entities = b.ing.workflows().entities(&alice(), "w").unwrap();
    let keys: Vec<&str> = entities.iter().map(|e| e.key.as_str()).collect();
    for k in [
        "document_id:INV-2026-0042",
        "amount:EUR 12500.00",
        "date:2026-12-01",
        "email:ops@harbour.example",
    ] {
        assert!(keys.contains(&k), "{k} not in {keys:?}");
    }
    // Small budgets: within budget (checked by `call`), the rest named and reachable by
    // cursor, each item exactly once over the pages.
    for max in [400, 700, 1200, 2500] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..200 {
            let mut a = args(max);
            if let Some(c) = &cursor {
                a["cursor"] = json!(c);
            }
            let page = b.ok(&alice(), "gather_context", a);
            for i in page["items"].as_array().unwrap() {
                seen.push(i["layer"].as_str().unwrap().to_string());
            }
            match page["cursor"].as_str() {
                Some(c) => {
                    assert!(page["left_out_count"].as_u64().unwrap() > 0);
                    cursor = Some(c.to_string());
                }
                None => break,
            }
        }
        assert_eq!(seen, layers, "budget {max}");
    }
}

#[test]
fn remembering_a_key_again_replaces_it() {
    let b = Bench::new();
    let r1 = b.ok(
        &alice(),
        "remember",
        json!({"workflow": "w", "key": "deadline", "value": "March"}),
    );
    assert_eq!(r1["created"], true);
    let r2 = b.ok(
        &alice(),
        "remember",
        json!({"workflow": "w", "key": "deadline", "value": "April"}),
    );
    assert_eq!(r2["created"], false);
    let all = b.ing.workflows().entities(&alice(), "w").unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].value, "April");
    let ctx = b.ok(
        &alice(),
        "gather_context",
        json!({"workflow": "w", "query": "deadline", "mode": "keyword"}),
    );
    assert!(
        ctx.to_string().contains("April") && !ctx.to_string().contains("March"),
        "{ctx}"
    );
    // Bad input is refused with a reason, not stored.
    for bad in [
        json!({"workflow": "w", "key": "", "value": "x"}),
        json!({"workflow": "w", "key": "k".repeat(300), "value": "x"}),
        json!({"workflow": "w w", "key": "k", "value": "x"}),
        json!({"workflow": "a/b", "key": "k", "value": "x"}),
        json!({"workflow": "w", "key": "k", "value": "v".repeat(5000)}),
    ] {
        let (v, err) = b.call(&alice(), "remember", bad.clone());
        assert!(err, "{bad}: {v}");
    }
}

#[test]
fn ending_a_workflow_leaves_nothing_of_it() {
    let b = Bench::new();
    let data = b.ing.config().data_dir.clone();
    let w = alice().in_workflow("run1");
    b.ing
        .ingest_bytes(
            "mine.txt",
            b"my own document about ferries\n".to_vec(),
            &alice(),
        )
        .unwrap();
    let doc_points = b.points(&alice());
    let before: Vec<_> = std::fs::read_dir(data.join("content")).unwrap().collect();
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "run1", "tool": "t", "content": big_result(30_000), "extract_entities": true}),
    );
    b.ok(
        &alice(),
        "remember",
        json!({"workflow": "run1", "key": "k", "value": "v"}),
    );
    b.ok(
        &alice(),
        "store_summary",
        json!({"workflow": "run1", "text": "summary of ferries"}),
    );
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "run2", "tool": "t", "content": "other run"}),
    );
    assert!(b.points(&w) > 0);
    let stats = b.ing.workflows().stats().unwrap();
    assert_eq!(stats.workflows, 2);
    assert_eq!(stats.summaries, 1);

    // Keep the summary: only it is left.
    let ended = b.ok(
        &alice(),
        "end_workflow",
        json!({"workflow": "run1", "keep_summary": true}),
    );
    assert_eq!(ended["summaries_kept"], 1);
    assert_eq!(
        b.ing.workflows().results(&alice(), "run1").unwrap().len(),
        0
    );
    assert_eq!(
        b.ing.workflows().summaries(&alice(), "run1").unwrap().len(),
        1
    );
    let names: Vec<String> = b
        .ing
        .catalog()
        .entries(&w)
        .into_iter()
        .map(|e| e.locator)
        .collect();
    assert_eq!(names, ["summaries/s_2.txt"]);

    // End it: nothing of it anywhere.
    let ended = b.ok(&alice(), "end_workflow", json!({"workflow": "run1"}));
    assert_eq!(ended["deleted"]["summaries"], 1);
    assert_eq!(b.points(&w), 0, "points left");
    assert!(b.ing.catalog().entries(&w).is_empty());
    assert!(
        !b.ing.catalog().scopes().contains(&w),
        "the scope stays in the catalog"
    );
    let stats = b.ing.workflows().stats().unwrap();
    assert_eq!(
        (
            stats.workflows,
            stats.results,
            stats.entities,
            stats.summaries
        ),
        (1, 1, 0, 0)
    );
    assert_eq!(
        b.points(&alice()),
        doc_points,
        "the documents are untouched"
    );
    // Content indexes: only the documents' and run2's remain.
    let after: Vec<_> = std::fs::read_dir(data.join("content")).unwrap().collect();
    assert_eq!(
        after.len(),
        before.len() + 2,
        "run2's result: pack and index"
    );
    b.ok(&alice(), "end_workflow", json!({"workflow": "run2"}));
    assert_eq!(
        std::fs::read_dir(data.join("content")).unwrap().count(),
        before.len()
    );
    assert_eq!(
        std::fs::read_dir(data.join("workflows")).unwrap().count(),
        0
    );
    // Ending again (or one never used) is no error.
    let again = b.ok(&alice(), "end_workflow", json!({"workflow": "run1"}));
    assert_eq!(again["deleted"]["tool_results"], 0);
}

#[test]
fn abandoned_workflows_end_after_their_time_to_live() {
    let b = Bench::with(|c| c.workflow.ttl = std::time::Duration::from_secs(3600));
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "old", "tool": "t", "content": "old result"}),
    );
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "new", "tool": "t", "content": "new result"}),
    );
    let wf = b.ing.workflows();
    let now = std::time::SystemTime::now();
    assert_eq!(wf.sweep_expired(now).unwrap(), 0);
    // Two hours later, "new" was used an hour ago: only "old" ends.
    b.ok(
        &alice(),
        "recall_tool_result",
        json!({"workflow": "new", "handle": "tr_1"}),
    );
    let later = now + std::time::Duration::from_secs(2 * 3600);
    wf.set_touched(
        &alice(),
        "new",
        later - std::time::Duration::from_secs(1800),
    );
    assert_eq!(wf.sweep_expired(later).unwrap(), 1);
    assert!(wf.results(&alice(), "old").unwrap().is_empty());
    assert_eq!(wf.results(&alice(), "new").unwrap().len(), 1);
    assert_eq!(b.points(&alice().in_workflow("old")), 0);
}

#[test]
fn limits_are_enforced() {
    let b = Bench::with(|c| {
        c.workflow.max_result_bytes = 1000;
        c.workflow.max_items = 3;
    });
    let (v, err) = b.call(
        &alice(),
        "store_tool_result",
        json!({"workflow": "w", "tool": "t", "content": "x".repeat(1001)}),
    );
    assert!(
        err && v["error"].as_str().unwrap().contains("at most 1000"),
        "{v}"
    );
    for i in 0..3 {
        b.ok(
            &alice(),
            "remember",
            json!({"workflow": "w", "key": format!("k{i}"), "value": "v"}),
        );
    }
    let (v, err) = b.call(
        &alice(),
        "remember",
        json!({"workflow": "w", "key": "k9", "value": "v"}),
    );
    assert!(
        err && v["error"].as_str().unwrap().contains("most is 3"),
        "{v}"
    );
    // Replacing a key needs no room.
    b.ok(
        &alice(),
        "remember",
        json!({"workflow": "w", "key": "k0", "value": "new"}),
    );
    let (v, err) = b.call(
        &alice(),
        "store_tool_result",
        json!({"workflow": "w", "tool": "", "content": "x"}),
    );
    assert!(err, "{v}");
    // A query longer than any search reads is refused, not embedded.
    let (v, err) = b.call(
        &alice(),
        "gather_context",
        json!({"workflow": "w", "query": "q ".repeat(50_000)}),
    );
    assert!(
        err && v["error"].as_str().unwrap().contains("at most"),
        "{v}"
    );
}

#[test]
fn a_scope_holds_a_bounded_number_of_workflows_and_bytes() {
    let b = Bench::with(|c| {
        c.workflow.max_workflows = 2;
        c.workflow.max_result_bytes = 1000;
        c.workflow.max_workflow_bytes = 1500;
    });
    b.ok(
        &alice(),
        "remember",
        json!({"workflow": "w1", "key": "k", "value": "v"}),
    );
    b.ok(
        &alice(),
        "store_summary",
        json!({"workflow": "w2", "text": "s"}),
    );
    let (v, err) = b.call(
        &alice(),
        "remember",
        json!({"workflow": "w3", "key": "k", "value": "v"}),
    );
    assert!(
        err && v["error"].as_str().unwrap().contains("the most is 2"),
        "{v}"
    );
    // Another scope has its own count; the full one may still write to its workflows.
    b.ok(
        &bob(),
        "remember",
        json!({"workflow": "w3", "key": "k", "value": "v"}),
    );
    b.ok(
        &alice(),
        "remember",
        json!({"workflow": "w1", "key": "k2", "value": "v"}),
    );
    // Bytes per workflow.
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "w1", "tool": "t", "content": "x".repeat(900)}),
    );
    let (v, err) = b.call(
        &alice(),
        "store_tool_result",
        json!({"workflow": "w1", "tool": "t", "content": "y".repeat(700)}),
    );
    assert!(
        err && v["error"].as_str().unwrap().contains("would pass"),
        "{v}"
    );
    // Ending one makes room.
    b.ok(&alice(), "end_workflow", json!({"workflow": "w2"}));
    b.ok(
        &alice(),
        "remember",
        json!({"workflow": "w3", "key": "k", "value": "v"}),
    );
    // A scope that names a workflow itself is refused by every tool.
    let (v, err) = b.call(&alice().in_workflow("w1"), "browse_container", json!({}));
    assert!(
        err && v["error"].as_str().unwrap().contains("names a workflow"),
        "{v}"
    );
}

#[test]
fn layers_change_field_by_field() {
    let b = Bench::new();
    b.ing
        .ingest_bytes(
            "own/a.txt",
            b"Tugboats push barges along the canal at dawn.\n".to_vec(),
            &alice(),
        )
        .unwrap();
    // The fake model's cosines are low: the default floor leaves the passage out, a limit
    // alone keeps the floor, a null floor lets it in.
    let q = |layers: Value| {
        let v = b.ok(
            &alice(),
            "gather_context",
            json!({"workflow": "w", "query": "tugboats barges canal", "layers": layers}),
        );
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["layer"] == "instance")
            .count()
    };
    let floor = q(json!({"instance": {"min_score": 0.99}}));
    let limit_only = q(json!({"instance": {"limit": 3}}));
    let open = q(json!({"instance": {"min_score": null}}));
    assert_eq!(floor, 0);
    assert_eq!(open, 1);
    assert!(limit_only <= open);
    let (v, err) = b.call(
        &alice(),
        "gather_context",
        json!({"workflow": "w", "query": "x", "layers": {"instance": {"limit": 99}}}),
    );
    assert!(err, "{v}");
}

/// The design's context manager: every one of the workflow's entities (its working facts) is
/// in every context, most recently set first, whatever the query; tool results' passages come
/// from the newest results first.
#[test]
fn gather_context_holds_every_entity_and_the_newest_results_first() {
    let b = Bench::new();
    for (key, value) in [
        ("customer", "Fjordline Shipping AS"),
        ("vault_code", "4-8-15-16"),
        ("due_date", "2026-12-01"),
    ] {
        b.ok(
            &alice(),
            "remember",
            json!({"workflow": "w", "key": key, "value": value}),
        );
        // Set at distinct seconds, so "most recently set" is an order.
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    // An old result that matches the query's words best, then newer ones that match less.
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "w", "tool": "crm.old",
               "content": "Lighthouse lamp maintenance: the lighthouse lamp was cleaned and the lighthouse keeper logged it."}),
    );
    for n in 0..3 {
        b.ok(
            &alice(),
            "store_tool_result",
            json!({"workflow": "w", "tool": format!("crm.new{n}"),
                   "content": format!("Round {n}: the harbour office asked about the lamp order for the pier.")}),
        );
    }
    // What one layer of a gathered context names (`field` of its items).
    let gathered = |query: &str, layers: Value, layer: &str, field: &str| -> Vec<String> {
        let ctx = b.ok(
            &alice(),
            "gather_context",
            json!({"workflow": "w", "query": query, "layers": layers, "max_chars": 20000}),
        );
        ctx["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["layer"] == layer)
            .map(|i| i[field].as_str().unwrap().to_string())
            .collect()
    };
    let query = "lighthouse lamp maintenance";
    let two = json!({"tool_results": {"limit": 2}});
    let keys = gathered(query, two.clone(), "entity", "key");
    assert_eq!(keys, ["due_date", "vault_code", "customer"]);
    let tools = gathered(query, two, "tool_result", "tool");
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert!(tools.iter().all(|t| t.starts_with("crm.new")), "{tools:?}");
    // With room for more, the old result that matches best follows the newest ones.
    let tools = gathered(
        query,
        json!({"tool_results": {"limit": 4}}),
        "tool_result",
        "tool",
    );
    assert_eq!(
        tools.last().map(String::as_str),
        Some("crm.old"),
        "{tools:?}"
    );
    // An entity layer of 2: the two most recently set.
    let keys = gathered(
        "anything at all",
        json!({"entities": {"limit": 2}}),
        "entity",
        "key",
    );
    assert_eq!(keys, ["due_date", "vault_code"]);
}

/// Issue 62's case: an index where the documents alone would fill the budget many times
/// (≥ 20 000 chunks about the question's subject). Every entity is in the first answer at
/// 4 000 and at 1 000 chars, and the newest tool result's passage comes before any document.
#[test]
fn gather_context_puts_entities_and_the_newest_result_before_a_flood_of_documents() {
    let b = Bench::with(|c| {
        c.chunking.max_tokens = 40;
        c.chunking.overlap_tokens = 0;
        c.chunking.file_cards = false;
        c.chunking.contextual_headers = false;
    });
    let mut inputs = Vec::new();
    for f in 0..25 {
        let mut text = String::new();
        for p in 0..900 {
            text.push_str(&format!(
                "OpenType font features note {f}-{p}: the kerning table, ligature substitution \
                 and small capitals feature tags of typeface family {p} are described here.\n\n"
            ));
        }
        inputs.push(crate::Input::Bytes {
            name: format!("fonts/guide-{f}.txt"),
            bytes: text.into_bytes(),
        });
    }
    b.ing.ingest(inputs, &alice(), &|_| {}).unwrap();
    let chunks = b.points(&alice());
    assert!(chunks >= 20_000, "{chunks} chunks");
    for (key, value) in [
        ("vault_code", "ENTITY-ZEBRA-4471"),
        ("customer", "Fjordline Shipping AS"),
        ("due_date", "2026-12-01"),
    ] {
        b.ok(
            &alice(),
            "remember",
            json!({"workflow": "wf-7", "key": key, "value": value}),
        );
    }
    b.ok(
        &alice(),
        "store_tool_result",
        json!({"workflow": "wf-7", "tool": "fonts.lookup",
               "content": "The newest lookup: OpenType font features of the house typeface were checked."}),
    );
    for max in [4000, 1000] {
        let page = b.ok(
            &alice(),
            "gather_context",
            json!({"workflow": "wf-7", "query": "OpenType font features ligature kerning",
                   "layers": {"instance": {"limit": 50, "min_score": null},
                              "shared": {"limit": 50, "min_score": null}},
                   "max_chars": max}),
        );
        let items = page["items"].as_array().unwrap();
        let layers: Vec<&str> = items.iter().map(|i| i["layer"].as_str().unwrap()).collect();
        let keys: Vec<&str> = items
            .iter()
            .filter(|i| i["layer"] == "entity")
            .map(|i| i["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys.len(), 3, "max_chars {max}: {page}");
        assert!(
            items
                .iter()
                .any(|i| i["key"] == "vault_code" && i["value"] == "ENTITY-ZEBRA-4471"),
            "max_chars {max}: {page}"
        );
        assert!(
            layers.iter().take(3).all(|l| *l == "entity"),
            "max_chars {max}: {layers:?}"
        );
        if max == 4000 {
            let tool = layers.iter().position(|l| *l == "tool_result");
            let doc = layers.iter().position(|l| *l == "instance");
            assert!(
                tool.is_some() && doc.is_none_or(|d| tool < Some(d)),
                "{layers:?}: {page}"
            );
            assert!(doc.is_some(), "documents fill the rest: {page}");
        }
        assert!(page["cursor"].is_string(), "{page}");
        let shares = page["layers"].as_array().unwrap();
        assert_eq!(shares[0]["layer"], "entity", "{page}");
        assert_eq!(shares[0]["shown"], 3, "{page}");
    }
}
