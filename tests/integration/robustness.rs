//! One tenant cannot hurt another (issue 39): every finding of the availability probe of
//! `ingest serve` as a regression test through the real service, over HTTP (ureq, and raw
//! TCP where a client library would hide the attack) and MCP (streamable HTTP, spoken here
//! with ureq): memory bounded before a body is parsed and before a key is checked, places
//! held by the work and not by the request, quotas that count everything a tenant causes,
//! entries that hold nothing costing almost nothing.
//!
//! Memory bounds are asserted on the service's peak RSS (`VmHWM`, reset through
//! `/proc/PID/clear_refs` before the attack): what the attack added, not what the machine
//! had. Time limits are hang guards only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::service::{Client, Service, ALICE, BOB, METRICS};
use crate::util::Sandbox;

/// The service's resident memory now and its peak since the last [`reset_peak`], in KiB.
fn rss(service: &Service) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{}/status", service.child.id())).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Start counting the service's peak RSS from its RSS now; that RSS, in KiB.
fn reset_peak(service: &Service) -> u64 {
    std::fs::write(format!("/proc/{}/clear_refs", service.child.id()), "5").unwrap();
    rss(service).0
}

/// What the service's peak RSS rose to above `base` (KiB), in MiB.
fn peak_growth_mib(service: &Service, base: u64) -> u64 {
    rss(service).1.saturating_sub(base) / 1024
}

fn addr(service: &Service) -> String {
    service.url.trim_start_matches("http://").to_string()
}

/// The status code of a raw HTTP answer (0 when none).
fn status_of(answer: &str) -> u16 {
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Call tool `name` over HTTP with a raw JSON body.
fn tool_body(client: &Client, name: &str, body: &[u8]) -> (u16, Value) {
    client.post(&format!("/v1/tools/{name}"), "application/json", body)
}

fn tool(client: &Client, name: &str, args: Value) -> (u16, Value) {
    tool_body(client, name, args.to_string().as_bytes())
}

/// The service's `/metrics` value of `name`.
pub(crate) fn metric(service: &Service, name: &str) -> f64 {
    let metrics = Client::new(service, Some(METRICS));
    let (status, text) = metrics.get("/metrics");
    assert_eq!(status, 200, "{text}");
    let text = text.as_str().unwrap().to_string();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
}

/// A minimal MCP client over streamable HTTP: one session of one key.
pub(crate) struct Mcp {
    url: String,
    key: String,
    session: String,
}

impl Mcp {
    fn agent(timeout: Duration) -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build()
            .into()
    }

    /// Open a session of `key` (initialize, then the initialized notification).
    pub(crate) fn open(service: &Service, key: &str) -> Mcp {
        let init = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "robustness", "version": "1"}}
        });
        let response = Self::agent(Duration::from_secs(60))
            .post(format!("{}/mcp", service.url))
            .header("Authorization", format!("Bearer {key}"))
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .send(init.to_string().as_bytes())
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_string();
        let mcp = Mcp {
            url: service.url.clone(),
            key: key.to_string(),
            session,
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _) = mcp
            .post(note.to_string().as_bytes(), Duration::from_secs(60))
            .unwrap();
        assert!(status == 202 || status == 200, "initialized: {status}");
        mcp
    }

    /// POST `body` in this session: the status and the first JSON-RPC message of the answer.
    fn post(&self, body: &[u8], timeout: Duration) -> Result<(u16, Value), ureq::Error> {
        let mut response = Self::agent(timeout)
            .post(format!("{}/mcp", self.url))
            .header("Authorization", format!("Bearer {}", self.key))
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("Mcp-Session-Id", &self.session)
            .send(body)?;
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string()?;
        let message = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| !d.is_empty())
            .map_or_else(
                || serde_json::from_str(&text).unwrap_or(Value::String(text.clone())),
                |d| serde_json::from_str(d).unwrap_or(Value::Null),
            );
        Ok((status, message))
    }

    /// Call tool `name` with `args`: the status and the JSON-RPC answer.
    pub(crate) fn call(
        &self,
        name: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<(u16, Value), ureq::Error> {
        let call = json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": args}
        });
        self.post(call.to_string().as_bytes(), timeout)
    }
}

/// A `store_tool_result` body of about `bytes` bytes whose `content` is an array of zeros:
/// two bytes of text per JSON value.
fn zeros_body(bytes: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(bytes + 64);
    body.extend_from_slice(br#"{"workflow":"w","tool":"t","content":["#);
    while body.len() < bytes {
        body.extend_from_slice(b"0,");
    }
    body.extend_from_slice(b"0]}");
    body
}

/// A body of tiny JSON values costs about its size, not 70 times it: over HTTP (a 33 MB
/// `store_tool_result`, whose content is taken as raw text) and over MCP (a 1 MiB message,
/// whose values are counted before the MCP server builds any).
///
/// Bounds: HTTP 200 MiB above the RSS before (the body read once, 33 MB; its content copied
/// once as raw text, 33 MB; compacting it stops at `max_result_bytes` + 1, 16 MiB; the rest
/// is headroom for the allocator and the connection — before the fix this was 2.4 GB). MCP
/// 64 MiB (a 1 MiB message refused before any value is built).
#[test]
fn robustness_a_body_of_tiny_values_costs_its_size() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    // Warm: the workflow layer opened, the first call's allocations made.
    let (status, v) = tool(
        &alice,
        "store_tool_result",
        json!({"workflow": "warm", "tool": "t", "content": "warm up"}),
    );
    assert_eq!(status, 200, "{v}");

    let body = zeros_body(33_000_000);
    let base = reset_peak(&service);
    let (status, answer) = tool_body(&alice, "store_tool_result", &body);
    let growth = peak_growth_mib(&service, base);
    println!("HTTP: 33 MB body of zeros: {status} {answer}; peak RSS +{growth} MiB");
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|e| e.contains("at most 16777216")),
        "{answer}"
    );
    assert!(growth < 200, "peak RSS grew by {growth} MiB");
    drop(body);

    // A result of tiny values within the limit is stored exactly (compact JSON).
    let small = format!("[{}0]", "0, ".repeat(100_000));
    let body = format!(r#"{{"workflow":"w","tool":"t","content":{small}}}"#);
    let (status, answer) = tool_body(&alice, "store_tool_result", body.as_bytes());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["format"], "json", "{answer}");
    assert_eq!(answer["raw_bytes"], 2 * 100_000 + 3, "compact: {answer}");

    // MCP: a message of a million zeros is refused before it is parsed into values.
    let mcp = Mcp::open(&service, ALICE);
    let mut message = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"store_tool_result","arguments":{"workflow":"w","tool":"t","content":["#.to_vec();
    while message.len() < 1_000_000 {
        message.extend_from_slice(b"0,");
    }
    message.extend_from_slice(b"0]}}}");
    let base = reset_peak(&service);
    let (status, answer) = mcp.post(&message, Duration::from_secs(120)).unwrap();
    let growth = peak_growth_mib(&service, base);
    println!("MCP: 1 MB message of zeros: {status} {answer}; peak RSS +{growth} MiB");
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.to_string().contains("values"),
        "the answer says why: {answer}"
    );
    assert!(growth < 64, "peak RSS grew by {growth} MiB");
    // An ordinary call in the same session still works.
    let (status, answer) = mcp
        .call(
            "store_tool_result",
            json!({"workflow": "w", "tool": "t", "content": {"rows": [[1, 2], [3, 4]]}}),
            Duration::from_secs(120),
        )
        .unwrap();
    assert_eq!(status, 200, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("\"format\":\"json\""), "{text}");
    assert!(service.stop().success());
}

/// A body sent with a wrong key is never read: eight connections (four to a tool, four to
/// MCP) each declaring and sending 33 MB get their 401 at once and cost the service nothing it keeps. Bound: 32 MiB above the
/// RSS before (connection buffers and the drain's read buffer, never a body; before the fix,
/// +180 MB for eight).
#[test]
fn robustness_a_wrong_key_costs_nothing_before_its_401() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let base = reset_peak(&service);
    let senders: Vec<_> = (0..8)
        .map(|i| {
            let addr = addr(&service);
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
                let len = 33_000_000;
                // Half to a tool, half to MCP: both answer 401 before reading.
                let path = if i % 2 == 0 {
                    "/v1/tools/store_tool_result"
                } else {
                    "/mcp"
                };
                let head = format!(
                    "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                     Authorization: Bearer k-wrong-key-{i:04}-0123456789\r\n\
                     Content-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
                );
                s.write_all(head.as_bytes()).unwrap();
                let chunk = vec![b' '; 64 * 1024];
                let mut sent = 0;
                while sent < len {
                    if s.write_all(&chunk).is_err() {
                        break;
                    }
                    sent += chunk.len();
                }
                let mut answer = String::new();
                let _ = s.take(1 << 20).read_to_string(&mut answer);
                answer
            })
        })
        .collect();
    for s in senders {
        let answer = s.join().unwrap();
        assert_eq!(status_of(&answer), 401, "{answer}");
    }
    let growth = peak_growth_mib(&service, base);
    println!("eight 33 MB bodies with wrong keys: peak RSS +{growth} MiB");
    assert!(growth < 32, "peak RSS grew by {growth} MiB");
    assert!(service.stop().success());
}

/// The request bodies one key holds in memory are bounded: while a body of one key is being
/// received, another body of the same key that would pass the key's budget is refused (429)
/// before it is read; another key is not; and the bytes come back when the first ends.
#[test]
fn robustness_bodies_in_memory_are_bounded_per_key() {
    let sb = Sandbox::new();
    let service = Service::start(
        &sb,
        "max_tool_result_request_bytes = 20000000\nmax_body_bytes_in_flight_per_key = 30000000\n\
         max_body_bytes_in_flight = 120000000",
    );
    let declare = |key: &str, len: usize| {
        let mut s = TcpStream::connect(addr(&service)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let head = format!(
            "POST /v1/tools/store_tool_result HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
        );
        s.write_all(head.as_bytes()).unwrap();
        s
    };
    // Alice's first body is on its way (its first bytes sent, the rest to come).
    let mut first = declare(ALICE, 19_000_000);
    first
        .write_all(br#"{"workflow":"w","tool":"t","content":""#)
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // A second of Alice's would pass her budget: refused before its body is read.
    let mut second = declare(ALICE, 19_000_000);
    let mut answer = String::new();
    let _ = (&mut second).take(1 << 16).read_to_string(&mut answer);
    assert_eq!(status_of(&answer), 429, "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after"),
        "{answer}"
    );
    // Bob has his own budget.
    let bob = Client::new(&service, Some(BOB));
    let text = "b".repeat(18_000_000);
    let (status, v) = tool(
        &bob,
        "store_tool_result",
        json!({"workflow": "w", "tool": "t", "content": text}),
    );
    assert_eq!(status, 200, "{v}");
    assert!(
        v["error"].as_str().unwrap_or_default().contains("at most"),
        "{v}"
    );
    // Alice's first body ends (the connection goes): her bytes come back.
    drop(first);
    let alice = Client::new(&service, Some(ALICE));
    let took = crate::util::wait_for(Duration::from_secs(30), || {
        let (status, _) = tool(
            &alice,
            "store_tool_result",
            json!({"workflow": "w", "tool": "t", "content": "c".repeat(18_000_000)}),
        );
        status == 200
    });
    assert!(took.is_some(), "Alice's bytes never came back");
    assert!(service.stop().success());
}

/// A caller that goes away frees no place while its work still runs: with two places per
/// key and every call's work lasting 8 s (a pause failpoint in the tool's thread), callers
/// that give up after 1 s leave their work running, and new callers of the same key are
/// refused until it ends — over HTTP and over MCP. The service's peak of calls at work never
/// passes the key's two.
#[test]
fn robustness_places_are_held_by_the_work_not_the_request() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.path("ingest.toml"),
        format!(
            "max_queries = 8\nmax_queries_per_key = 2\nmetrics_key = \"{METRICS}\"\n\n\
             [[api_keys]]\nkey = \"{ALICE}\"\nuser = \"alice\"\nmandate = \"acme\"\n\n\
             [[api_keys]]\nkey = \"{BOB}\"\nuser = \"bob\"\nmandate = \"acme\"\n"
        ),
    )
    .unwrap();
    let service = Service::start_config_env(
        &sb,
        &[],
        &[(ingest_base::failpoint::ENV, "tool.run=1:pause8000")],
    );
    let impatient = |key: &'static str, n: usize| -> Vec<Option<u16>> {
        let url = service.url.clone();
        let callers: Vec<_> = (0..n)
            .map(|i| {
                let url = url.clone();
                std::thread::spawn(move || {
                    let agent: ureq::Agent = ureq::Agent::config_builder()
                        .http_status_as_error(false)
                        .timeout_global(Some(Duration::from_secs(1)))
                        .build()
                        .into();
                    let body = json!({"workflow": "w", "key": format!("k{i}"), "value": "v"});
                    agent
                        .post(format!("{url}/v1/tools/remember"))
                        .header("Authorization", format!("Bearer {key}"))
                        .header("Content-Type", "application/json")
                        .send(body.to_string().as_bytes())
                        .ok()
                        .map(|r| r.status().as_u16())
                })
            })
            .collect();
        callers.into_iter().map(|c| c.join().unwrap()).collect()
    };
    // Eight impatient callers: two take Alice's places and time out, the rest are refused.
    let first = impatient(ALICE, 8);
    println!("first wave: {first:?}");
    assert_eq!(first.iter().filter(|s| s.is_none()).count(), 2, "{first:?}");
    assert!(first.iter().flatten().all(|s| *s == 429), "{first:?}");
    // Their clients are gone; their work is not: Alice's places are still taken.
    let second = impatient(ALICE, 4);
    println!("second wave: {second:?}");
    assert!(second.iter().all(|s| *s == Some(429)), "{second:?}");
    // Over MCP too: a call finds Alice's places taken by the work of the HTTP callers.
    let mcp = Mcp::open(&service, ALICE);
    let (status, answer) = mcp
        .call(
            "remember",
            json!({"workflow": "w", "key": "m", "value": "v"}),
            Duration::from_secs(2),
        )
        .unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("as many calls"), "{answer}");
    // Bob's places are his own.
    let bob = impatient(BOB, 1);
    assert_eq!(
        bob,
        vec![None],
        "Bob's call runs (and outlasts his patience)"
    );
    let peak = metric(&service, "ingest_queries_working_peak");
    println!("calls at work at once, at most: {peak}");
    assert!(peak <= 3.0, "Alice's two and Bob's one at most: {peak}");
    // Once the work ends, the places come back: an MCP caller that goes away mid-call leaves
    // its work holding Alice's place as well.
    let freed = crate::util::wait_for(Duration::from_secs(60), || {
        metric(&service, "ingest_queries_working") == 0.0
    });
    assert!(freed.is_some(), "the work never ended");
    let gone = mcp.call(
        "remember",
        json!({"workflow": "w", "key": "m2", "value": "v"}),
        Duration::from_secs(1),
    );
    assert!(gone.is_err(), "the MCP caller gave up: {gone:?}");
    let http = impatient(ALICE, 2);
    println!("beside a gone MCP caller's work: {http:?}");
    assert_eq!(
        http.iter().filter(|s| **s == Some(429)).count(),
        1,
        "{http:?}"
    );
    let peak = metric(&service, "ingest_queries_working_peak");
    assert!(peak <= 3.0, "{peak}");
    assert!(service.stop().success());
}

/// A tar archive's bytes, as text (NULs included), holding `n` small files.
fn tar_text(n: usize) -> String {
    let mut b = tar::Builder::new(Vec::new());
    for i in 0..n {
        let data = format!("member {i} of a tool result\n");
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, format!("m{i:03}.txt"), data.as_bytes())
            .unwrap();
    }
    String::from_utf8(b.into_inner().unwrap()).expect("ASCII tar")
}

/// Everything a workflow keeps counts against its quotas: a tool result holding an archive's
/// bytes is one text, never unpacked into the workflow; summaries and entities count against
/// `max_workflow_bytes`; a call whose answer cannot fit is refused before anything is stored.
#[test]
fn robustness_workflow_quotas_count_everything_it_keeps() {
    let sb = Sandbox::new();
    let service = Service::start(
        &sb,
        "[workflow]\nmax_result_bytes = 20000\nmax_workflow_bytes = 30000\nmax_items = 50",
    );
    let alice = Client::new(&service, Some(ALICE));
    let before = sb.status()["catalog"]["files"].as_u64().unwrap();
    let (status, v) = tool(
        &alice,
        "store_tool_result",
        json!({"workflow": "tar", "tool": "fetch", "content": tar_text(15)}),
    );
    assert_eq!(status, 200, "{v}");
    assert!(v.get("handle").is_some(), "{v}");
    let after = sb.status()["catalog"]["files"].as_u64().unwrap();
    assert_eq!(after - before, 1, "one file for the result, no members");

    // Summaries and entities count: 3 × 9 000 bytes of summary pass 30 000 with the rest.
    let summary = "s".repeat(9_000);
    for n in 0..3 {
        let (status, v) = tool(
            &alice,
            "store_summary",
            json!({"workflow": "sum", "text": summary, "covers": format!("round {n}")}),
        );
        assert_eq!(status, 200, "{v}");
        assert!(v.get("error").is_none(), "summary {n}: {v}");
    }
    let (_, v) = tool(
        &alice,
        "remember",
        json!({"workflow": "sum", "key": "big", "value": "v".repeat(4000)}),
    );
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("bytes")),
        "the fourth item passes the workflow's bytes: {v}"
    );
    let (_, v) = tool(
        &alice,
        "store_summary",
        json!({"workflow": "sum", "text": summary}),
    );
    assert!(v.get("error").is_some(), "{v}");

    // An answer that cannot fit (a long tool name, the smallest budget) is refused before
    // the result is stored: the workflow holds nothing afterwards.
    let (_, v) = tool(
        &alice,
        "store_tool_result",
        json!({"workflow": "tiny", "tool": "t".repeat(128), "content": "x", "max_chars": 200}),
    );
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("max_chars")),
        "{v}"
    );
    let (_, v) = tool(
        &alice,
        "recall_tool_result",
        json!({"workflow": "tiny", "handle": "tr_1"}),
    );
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("no such handle")),
        "nothing was stored: {v}"
    );
    assert!(service.stop().success());
}

/// The low findings: an ungrouped amount is read whole; a summary covering 4 KB does not keep
/// `gather_context` from answering at its default budget.
#[test]
fn robustness_entities_and_gathered_summaries_read_right() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    let (status, v) = tool(
        &alice,
        "store_tool_result",
        json!({"workflow": "w", "tool": "erp", "content": "Invoice total EUR 12480.00, due 2026-12-01.",
               "extract_entities": true, "max_chars": 8000}),
    );
    assert_eq!(status, 200, "{v}");
    let keys: Vec<&str> = v["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(keys.contains(&"amount:EUR 12480.00"), "{v}");
    let (_, v) = tool(
        &alice,
        "store_summary",
        json!({"workflow": "w", "text": "We looked at the invoice.", "covers": "r".repeat(4096)}),
    );
    assert!(v.get("error").is_none(), "{v}");
    let (_, v) = tool(
        &alice,
        "gather_context",
        json!({"workflow": "w", "query": "the invoice"}),
    );
    assert!(v.get("error").is_none(), "{v}");
    let text = v.to_string();
    assert!(text.len() <= 4000, "{}", text.len());
    assert!(
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["layer"] == "summary"),
        "{v}"
    );
    assert!(service.stop().success());
}

/// A `.tgz` of `benign.txt` (holding `sentence`) and `links` symbolic links.
fn link_flood(sentence: &str, links: usize) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    let mut h = tar::Header::new_gnu();
    h.set_size(sentence.len() as u64 + 1);
    h.set_mode(0o644);
    h.set_cksum();
    b.append_data(&mut h, "benign.txt", format!("{sentence}\n").as_bytes())
        .unwrap();
    for i in 0..links {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        h.set_mode(0o777);
        b.append_link(&mut h, format!("l{i:05}"), "/etc/passwd")
            .unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

/// Points in the store, as `ingest status` says.
fn points(sb: &Sandbox) -> u64 {
    sb.status()["points"].as_u64().unwrap()
}

/// Points in the store once at least `least` more than `before` are there (an upload's cards
/// are written by its run's last card pass, after its job ended): how many more.
fn points_after(sb: &Sandbox, before: u64, least: u64) -> u64 {
    let mut added = 0;
    let reached = crate::util::wait_for(Duration::from_secs(120), || {
        added = points(sb) - before;
        added >= least
    });
    assert!(reached.is_some(), "only {added} points came");
    added
}

/// Entries that hold nothing cost a catalog row, not an embedding each: an upload of 5 000
/// links gets the archive's card and the benign file's points, not a card per link; 200
/// members skipped by a limit get at most 64 cards; the benign file is what its sentence
/// finds.
#[test]
fn robustness_entries_that_hold_nothing_cost_rows_not_embeddings() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "[limits]\nmax_file_bytes = 100");
    let alice = Client::new(&service, Some(ALICE));
    let sentence = "The harbour wall lantern is lit half an hour before sunset all year.";
    let before = points(&sb);
    let (status, answer) = alice.upload("flood.tgz", &link_flood(sentence, 5_000));
    assert_eq!(status, 202, "{answer}");
    let job = alice.wait_job(&crate::service::job_of(&answer));
    assert_eq!(job["state"], "indexed", "{}", job["reason"]);
    // The benign file's passage and card, and the archive's card (written first of the run's
    // last card pass: were the links carded too, 63 of them would come with it).
    let added = points_after(&sb, before, 3);
    println!("5 000 links: {added} points");
    assert!(added <= 4, "the links got points of their own: {added}");
    let status = sb.status();
    assert!(
        status["catalog"]["files"].as_u64().unwrap() >= 5_001,
        "every link has its row: {status}"
    );
    let hits = alice.search(sentence, 1);
    assert!(
        hits[0]["locator"]
            .as_str()
            .unwrap()
            .starts_with("flood.tgz!/benign.txt"),
        "{hits:?}"
    );
    // Members skipped by a limit (each over max_file_bytes): at most 64 cards of them.
    let big = "x".repeat(200);
    let members: Vec<(String, Vec<u8>)> = (0..200)
        .map(|i| (format!("big-{i:03}.txt"), big.clone().into_bytes()))
        .collect();
    let refs: Vec<(&str, &[u8])> = members
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let before = points(&sb);
    let (status, answer) = alice.upload("big.zip", &ingest_unpack::zip_of(&refs));
    assert_eq!(status, 202, "{answer}");
    // Ended (failed: nothing in it could be read), every member with its line.
    let job = alice.wait_job(&crate::service::job_of(&answer));
    assert_eq!(
        job["files"].as_array().map(Vec::len),
        Some(201),
        "{}",
        job["state"]
    );
    // The archive's card and its first 64 members'.
    let added = points_after(&sb, before, 65);
    std::thread::sleep(Duration::from_secs(2));
    let added = added.max(points(&sb) - before);
    println!("200 members skipped by size: {added} points");
    assert_eq!(added, 65, "{added}");
    // The first members keep their cards: a question naming one finds it.
    let hits = alice.search_filtered("big-000.txt", 3, json!({"kind": "card"}));
    assert!(
        hits.iter().any(|h| h["locator"]
            .as_str()
            .unwrap()
            .starts_with("big.zip!/big-000.txt")),
        "{hits:?}"
    );
    assert!(service.stop().success());
}

/// Upload tags are stored once per upload, not once per member, and a hit carries a bounded
/// amount of them: 400 members with 32 maximal tags grow the catalog by far less than
/// 400 × 10 KB, and a hit's answer stays small (`tags_more` counts what it leaves out).
#[test]
fn robustness_upload_tags_are_stored_once_and_bounded_per_hit() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    let catalog_bytes = || -> u64 {
        std::fs::read_dir(sb.data_dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("catalog"))
            .map(|e| e.metadata().unwrap().len())
            .sum()
    };
    let members: Vec<(String, Vec<u8>)> = (0..400)
        .map(|i| {
            (
                format!("notes/n{i:03}.txt"),
                format!("Note {i} of the lighthouse log: the lamp was trimmed at dusk.\n")
                    .into_bytes(),
            )
        })
        .collect();
    let refs: Vec<(&str, &[u8])> = members
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let zip = ingest_unpack::zip_of(&refs);
    let query: String = (0..32)
        .map(|i| format!("tag.k{i:02}{}={}", "k".repeat(58), "v".repeat(256)))
        .collect::<Vec<_>>()
        .join("&");
    let before = catalog_bytes();
    let (status, answer) = alice.post(
        &format!("/v1/files?name=log.zip&{query}"),
        "application/octet-stream",
        &zip,
    );
    assert_eq!(status, 202, "{answer}");
    let job = alice.wait_job(&crate::service::job_of(&answer));
    assert_eq!(job["state"], "indexed", "{job}");
    // Saved: a catalog checkpoint follows the run.
    let grown = catalog_bytes().saturating_sub(before);
    println!(
        "400 members × 32 maximal tags: catalog +{} KiB",
        grown / 1024
    );
    assert!(grown < 1_500_000, "catalog grew by {grown} bytes");
    let body = json!({"query": "lamp trimmed at dusk", "limit": 1}).to_string();
    let (status, answer) = alice.post("/v1/search", "application/json", body.as_bytes());
    assert_eq!(status, 200, "{answer}");
    let hit = &answer["hits"][0];
    let size = hit.to_string().len();
    println!("one hit: {size} bytes, tags_more {}", hit["tags_more"]);
    assert!(size < 8 * 1024, "{size}");
    assert!(hit["tags_more"].as_u64().unwrap_or(0) > 0, "{hit}");
    // A filter on one of the upload's tags still finds its members.
    let filtered = alice.search_filtered(
        "lamp trimmed at dusk",
        1,
        json!({"tags": {format!("k00{}", "k".repeat(58)): "v".repeat(256)}}),
    );
    assert_eq!(filtered.len(), 1, "{filtered:?}");
    assert!(service.stop().success());
}

/// Kept archives are bounded per key, never evicted by another key's uploads, and a shared
/// upload's kept bytes are found again by its owner.
#[test]
fn robustness_kept_archives_are_per_key_and_found_for_shared_uploads() {
    let crate_of = |who: &str| {
        ingest_unpack::zip_of(&[
            (
                "a.txt",
                format!("The first note of {who}'s crate.\n").as_bytes(),
            ),
            (
                "b.txt",
                format!("The second note of {who}'s crate.\n").as_bytes(),
            ),
            (
                "c.txt",
                format!("The third note of {who}: brass anemometer cups.\n").as_bytes(),
            ),
        ])
    };
    let one = crate_of("alice").len() + 64;
    let sb = Sandbox::new();
    let service = Service::start(
        &sb,
        &format!("max_kept_archive_bytes = {one}\n[limits]\nmax_files = 2"),
    );
    let alice = Client::new(&service, Some(ALICE));
    let bob = Client::new(&service, Some(BOB));
    let (status, a) = alice.upload("alice.zip", &crate_of("alice"));
    assert_eq!(status, 202, "{a}");
    alice.wait_job(&crate::service::job_of(&a));
    // Bob's upload is kept too: within his own quota, it evicts nothing of Alice's.
    let (status, b) = bob.upload("bob.zip", &crate_of("bob"));
    assert_eq!(status, 202, "{b}");
    bob.wait_job(&crate::service::job_of(&b));
    let (_, answer) = tool(
        &alice,
        "extract_container_item",
        json!({ "locator": "alice.zip!/c.txt" }),
    );
    assert_eq!(answer["extracted"]["status"], "indexed", "{answer}");
    // A shared upload's left-out member, extracted by its owner.
    let (status, s) = alice.post(
        "/v1/files?name=shared.zip&shared=true",
        "application/octet-stream",
        &crate_of("shared"),
    );
    assert_eq!(status, 202, "{s}");
    alice.wait_job(&crate::service::job_of(&s));
    let (_, answer) = tool(
        &alice,
        "extract_container_item",
        json!({ "locator": "shared.zip!/c.txt" }),
    );
    assert_eq!(answer["extracted"]["status"], "indexed", "{answer}");
    assert!(service.stop().success());
}

/// A PDF that fails (here one of 100 000 pages, over the page bound) is not kept for
/// `render_page` and costs nothing of its key's kept-bytes quota: the PDF kept before it,
/// which a failed one would have evicted, is still rendered.
#[test]
fn robustness_a_failed_pdf_is_not_kept() {
    let good = std::fs::read(crate::util::fixtures().join("formats/survey-report.pdf")).unwrap();
    let bad = ingest::extractors::made_pdf::many_pages(100_000);
    let sb = Sandbox::new();
    let service = Service::start(
        &sb,
        &format!("max_kept_archive_bytes = {}", good.len() + 1000),
    );
    let alice = Client::new(&service, Some(ALICE));
    let (status, a) = alice.upload("good.pdf", &good);
    assert_eq!(status, 202, "{a}");
    let ended = alice.wait_job(&crate::service::job_of(&a));
    assert_eq!(ended["state"], "indexed", "{ended}");
    let (status, b) = alice.upload("pages.pdf", &bad);
    assert_eq!(status, 202, "{b}");
    let ended = alice.wait_job(&crate::service::job_of(&b));
    println!("the 100 000-page PDF: {ended}");
    assert_eq!(ended["state"], "failed", "{ended}");
    assert!(ended.to_string().contains("at most 20000 pages"), "{ended}");
    let (status, page) = tool(
        &alice,
        "render_page",
        json!({ "locator": "good.pdf", "max_bytes": 100_000 }),
    );
    println!(
        "render_page of the PDF kept before: {status} {}",
        page["error"]
    );
    assert_eq!(status, 200, "{page}");
    assert!(page["image"]["base64"].is_string(), "{page}");
    assert!(service.stop().success());
}

/// The daemon's socket (which `ingest serve` answers too) drops a client that trickles its
/// request, and bounds the bytes of requests being read at once.
#[test]
fn robustness_the_daemon_socket_bounds_time_and_bytes() {
    use std::os::unix::net::UnixStream;
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let path = sb.data_dir().join("daemon.sock");
    // One byte a second: dropped once its request has taken 10 s, whatever it sends.
    let mut slow = UnixStream::connect(&path).unwrap();
    let started = std::time::Instant::now();
    let mut dropped = false;
    while started.elapsed() < Duration::from_secs(40) {
        if slow.write_all(b" ").is_err() {
            dropped = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(1000));
    }
    println!(
        "a trickling client was dropped after {:?}",
        started.elapsed()
    );
    assert!(dropped, "a trickling client kept its place for 40 s");
    // Three requests of 25 MiB each, none finished: the third finds the bytes spent.
    let chunk = vec![b' '; 1 << 20];
    let mut open = Vec::new();
    let mut busy = None;
    for n in 0..3 {
        let mut s = UnixStream::connect(&path).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut refused = false;
        for _ in 0..25 {
            if s.write_all(&chunk).is_err() {
                refused = true;
                break;
            }
        }
        if refused || n == 2 {
            let mut answer = String::new();
            let _ = (&mut s).take(1 << 16).read_to_string(&mut answer);
            busy = Some((n, answer));
            break;
        }
        open.push(s);
    }
    let (n, answer) = busy.unwrap();
    println!("request {n}: {answer}");
    assert_eq!(n, 2, "{answer}");
    assert!(answer.contains("busy"), "{answer}");
    drop(open);
    assert!(service.stop().success());
}

/// Waits (up to a minute) until the service writes nothing for 3 s; whether it did.
fn quiescent(service: &Service) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = written(service);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(3));
        let now = written(service);
        if now == last {
            return true;
        }
        last = now;
    }
    false
}

/// Bytes the service writes, every file and socket together (`/proc/PID/io` `wchar`).
fn written(service: &Service) -> u64 {
    std::fs::read_to_string(format!("/proc/{}/io", service.child.id()))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// One tenant's bulk never makes another's writes rewrite it: after Bob's upload of 5 000
/// files, Alice's `remember` writes a few hundred KiB at most (its entity, its catalog rows,
/// its points), not a catalog that holds Bob's 5 000 entries.
#[test]
fn robustness_one_tenants_bulk_is_never_rewritten_by_anothers_call() {
    let sb = Sandbox::new();
    let service = Service::start(&sb, "");
    let alice = Client::new(&service, Some(ALICE));
    let bob = Client::new(&service, Some(BOB));
    let members: Vec<(String, Vec<u8>)> = (0..5_000)
        .map(|i| {
            (
                format!(
                    "archive/folder-{:02}/record-{i:05}-with-a-longer-name.txt",
                    i % 50
                ),
                format!("record {i}\n").into_bytes(),
            )
        })
        .collect();
    let refs: Vec<(&str, &[u8])> = members
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let (status, answer) = bob.upload("bulk.zip", &ingest_unpack::zip_of(&refs));
    assert_eq!(status, 202, "{answer}");
    let job = bob.wait_job(&crate::service::job_of(&answer));
    assert_eq!(job["state"], "indexed", "{job}");
    // Warm Alice's workflow, let what Bob's job left behind be flushed (the store writes its
    // segments after a job ends, and those writes are Bob's), then measure three more calls:
    // a call that rewrote Bob's entries would write them every time, so the least of the
    // three is what the call itself costs.
    let (_, v) = tool(
        &alice,
        "remember",
        json!({"workflow": "w", "key": "a", "value": "1"}),
    );
    assert!(v.get("error").is_none(), "{v}");
    let quiet = quiescent(&service);
    let mut costs = Vec::new();
    for key in ["b", "c", "d"] {
        let before = written(&service);
        let (_, v) = tool(
            &alice,
            "remember",
            json!({"workflow": "w", "key": key, "value": "2"}),
        );
        assert!(v.get("error").is_none(), "{v}");
        costs.push(written(&service) - before);
    }
    let wrote = *costs.iter().min().unwrap();
    println!(
        "Alice's remember beside Bob's 5 000 entries: {} KiB written (calls: {costs:?} bytes; \
         service quiet before them: {quiet})",
        wrote / 1024
    );
    assert!(wrote < 512 * 1024, "{wrote} bytes");
    assert!(service.stop().success());
}
