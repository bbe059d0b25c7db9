//! No input takes the service down for good: the crafted mail that overflowed the walk
//! thread's stack is refused before it is parsed, and an input whose unpacking still kills the
//! process (a failpoint stands in for the crash) is quarantined at the second death, while
//! every other upload is indexed and the service stays up.

use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::service::{job_of, Client, Service, ALICE, METRICS};
use crate::util::{json_lines, repo_dir, wait_for, Sandbox};

/// A message whose body is a message/rfc822 part `levels` deep, without boundary lines: 60 000
/// levels (1.8 MB) aborted the service in the recursive drop of the parsed tree.
fn nested_mail(levels: usize) -> Vec<u8> {
    let mut m = b"From: a@x.org\r\nSubject: nest\r\n".to_vec();
    for _ in 0..levels {
        m.extend_from_slice(b"Content-Type: message/rfc822\r\n\r\n");
    }
    m.extend_from_slice(b"Subject: deepest\r\n\r\nthe bottom\r\n");
    m
}

fn write_config(sb: &Sandbox) {
    std::fs::write(
        sb.path("ingest.toml"),
        format!(
            "metrics_key = \"{METRICS}\"\n\n\
             [[api_keys]]\nkey = \"{ALICE}\"\nuser = \"alice\"\nmandate = \"acme\"\n"
        ),
    )
    .unwrap();
}

/// Start `ingest serve` with `env`; `Err` with its exit status when it died before it
/// listened (a resumed job may kill it during start).
fn start_or_die(sb: &Sandbox, env: &[(&str, &str)]) -> Result<Service, ExitStatus> {
    let out = sb.path("serve.out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .current_dir(repo_dir())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(sb.path("ingest.toml"))
        .arg("--data-dir")
        .arg(sb.data_dir())
        .env_remove(ingest_base::failpoint::ENV)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(sb.path("serve.err"))
                .unwrap(),
        )
        .spawn()
        .expect("start ingest serve");
    let mut url = None;
    let mut died = None;
    let settled = wait_for(Duration::from_secs(180), || {
        if let Ok(Some(status)) = child.try_wait() {
            died = Some(status);
            return true;
        }
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        url = text
            .lines()
            .find_map(|l| l.strip_prefix("listening on "))
            .map(|u| u.trim().to_string());
        url.is_some()
    });
    assert!(settled.is_some(), "the service neither listened nor ended");
    match (died, url) {
        (Some(status), _) => Err(status),
        (None, Some(url)) => Ok(Service { child, url }),
        (None, None) => unreachable!(),
    }
}

/// Wait (hang guard) for the service to die; its exit status.
fn wait_death(service: Service) -> ExitStatus {
    let mut service = service;
    let mut status = None;
    let ended = wait_for(Duration::from_secs(300), || {
        status = service.child.try_wait().unwrap();
        status.is_some()
    });
    assert!(ended.is_some(), "the service did not die at the failpoint");
    status.unwrap()
}

fn serve_err(sb: &Sandbox) -> String {
    std::fs::read_to_string(sb.path("serve.err")).unwrap_or_default()
}

fn assert_indexed(client: &Client, job: &str) -> Value {
    let ended = client.wait_job(job);
    assert_eq!(ended["state"], "indexed", "{ended}");
    ended
}

#[test]
fn quarantine_an_input_that_kills_the_service_is_failed_at_the_second_death_and_the_rest_indexed() {
    let sb = Sandbox::new();
    write_config(&sb);
    // The failpoint kills the process whenever it is about to unpack an input named
    // *poison*: the crash an unbounded parser would cause, at every start.
    let armed = [(ingest_base::failpoint::ENV, "unpack.top~poison=1")];

    let service = start_or_die(&sb, &armed).expect("the first start");
    let client = Client::new(&service, Some(ALICE));
    let (status, answer) = client.upload(
        "harbour-a.txt",
        b"The harbour master keeps the tide tables for the quay.",
    );
    assert_eq!(status, 202, "{answer}");
    assert_indexed(&client, &job_of(&answer));
    let (status, answer) =
        client.upload("poison.eml", b"From: a@x.org\r\nSubject: p\r\n\r\nbody\r\n");
    assert_eq!(status, 202, "{answer}");
    let poison = job_of(&answer);
    let death = wait_death(service);
    assert!(!death.success(), "{death:?}");
    assert!(
        serve_err(&sb).contains("failpoint unpack.top~poison (hit 1): SIGKILL"),
        "{}",
        serve_err(&sb)
    );

    // Restart 1: the job is queued again and kills the process a second time.
    match start_or_die(&sb, &armed) {
        Err(status) => assert!(!status.success(), "{status:?}"),
        Ok(service) => {
            let status = wait_death(service);
            assert!(!status.success(), "{status:?}");
        }
    }
    let deaths = serve_err(&sb)
        .matches("failpoint unpack.top~poison")
        .count();
    assert_eq!(deaths, 2, "{}", serve_err(&sb));

    // Restart 2: the input is quarantined, the job ends failed naming it, the service stays
    // up and indexes what comes next.
    let service = start_or_die(&sb, &armed).unwrap_or_else(|s| {
        panic!(
            "the service died at its third start ({s:?}): {}",
            serve_err(&sb)
        )
    });
    let client = Client::new(&service, Some(ALICE));
    let ended = client.wait_job(&poison);
    assert_eq!(ended["state"], "failed", "{ended}");
    let reason = ended["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("poison.eml: failed (quarantined: the process died 2 times"),
        "{ended}"
    );
    let (status, answer) = client.upload(
        "harbour-b.txt",
        b"Lighthouse keepers log the fog signals every night.",
    );
    assert_eq!(status, 202, "{answer}");
    assert_indexed(&client, &job_of(&answer));
    let hits = client.search("fog signals of the lighthouse keepers", 5);
    assert!(
        hits.iter().any(|h| h["locator"]
            .as_str()
            .is_some_and(|l| l.starts_with("harbour-b.txt#"))),
        "{hits:?}"
    );
    let hits = client.search("tide tables of the harbour master", 5);
    assert!(
        hits.iter().any(|h| h["locator"]
            .as_str()
            .is_some_and(|l| l.starts_with("harbour-a.txt#"))),
        "{hits:?}"
    );
    assert_eq!(
        serve_err(&sb)
            .matches("failpoint unpack.top~poison")
            .count(),
        2
    );
    let stopped = service.stop();
    assert!(stopped.success(), "{stopped:?}: {}", serve_err(&sb));

    // Restart 3: nothing is queued again; the service is up.
    let service = start_or_die(&sb, &armed).unwrap_or_else(|s| {
        panic!(
            "the service died at its fourth start ({s:?}): {}",
            serve_err(&sb)
        )
    });
    let client = Client::new(&service, Some(ALICE));
    let (status, job) = client.get(&format!("/v1/jobs/{poison}"));
    assert_eq!(
        (status, job["state"].as_str()),
        (200, Some("failed")),
        "{job}"
    );
    let stopped = service.stop();
    assert!(stopped.success(), "{stopped:?}");

    // The operator sees the quarantined input with its body, and purges it.
    let list = sb.run(&["quarantine", "list", "--json"]);
    assert!(list.status.success(), "{}", crate::util::told(&list));
    let marks = json_lines(&list).pop().unwrap()["marks"]
        .as_array()
        .cloned()
        .unwrap();
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert_eq!(marks[0]["locator"], "poison.eml");
    assert_eq!(marks[0]["crashes"], 2);
    let body = marks[0]["kept_body"].as_str().expect("the body is kept");
    assert!(
        std::fs::read(body).unwrap().starts_with(b"From: a@x.org"),
        "{body}"
    );
    let id = marks[0]["id"].as_str().unwrap();
    let purge = sb.run(&["quarantine", "purge", id]);
    assert!(purge.status.success(), "{}", crate::util::told(&purge));
    assert!(!std::path::Path::new(body).exists());
    let list = sb.run(&["quarantine", "list"]);
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("no quarantine marks"),
        "{}",
        String::from_utf8_lossy(&list.stdout)
    );
    let unknown = sb.run(&["quarantine", "purge", "0123"]);
    assert_eq!(
        unknown.status.code(),
        Some(64),
        "{}",
        crate::util::told(&unknown)
    );
}

#[test]
fn quarantine_a_local_file_that_kills_ingest_is_refused_at_the_third_run_until_it_changes() {
    let sb = Sandbox::new();
    let docs = sb.path("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("poison.txt"), b"nothing wrong with these words").unwrap();
    std::fs::write(
        docs.join("fine.txt"),
        b"the ferry leaves at noon from pier four",
    )
    .unwrap();
    let run = |armed: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ingest"));
        cmd.arg("--json")
            .arg(&docs)
            .arg("--data-dir")
            .arg(sb.data_dir())
            .env_remove(ingest_base::failpoint::ENV);
        if armed {
            cmd.env(ingest_base::failpoint::ENV, "unpack.top~poison=1");
        }
        cmd.output().unwrap()
    };
    for death in 1..=2 {
        let out = run(true);
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&out.status),
            Some(9),
            "run {death}: exit {:?}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = run(true);
    let lines = json_lines(&out);
    let poison = lines
        .iter()
        .find(|l| {
            l["locator"]
                .as_str()
                .is_some_and(|s| s.ends_with("poison.txt"))
        })
        .unwrap_or_else(|| panic!("{}", crate::util::told(&out)));
    assert_eq!(poison["status"], "failed", "{poison}");
    assert!(
        poison["reason"]
            .as_str()
            .unwrap()
            .starts_with("quarantined: the process died 2 times"),
        "{poison}"
    );
    assert!(
        lines.iter().any(|l| l["locator"]
            .as_str()
            .is_some_and(|s| s.ends_with("fine.txt"))
            && l["status"] == "indexed"),
        "{lines:?}"
    );
    // Changed, it is read again (and the failpoint, disarmed, lets it through).
    std::fs::write(
        docs.join("poison.txt"),
        b"nothing wrong with these words, now longer",
    )
    .unwrap();
    let out = run(false);
    let lines = json_lines(&out);
    assert!(
        lines.iter().any(|l| l["locator"]
            .as_str()
            .is_some_and(|s| s.ends_with("poison.txt"))
            && l["status"] == "indexed"),
        "{}",
        crate::util::told(&out)
    );
}

#[test]
fn quarantine_the_nested_mail_is_refused_by_its_bound_and_the_process_lives() {
    let sb = Sandbox::new();
    let mail = sb.path("nest.eml");
    std::fs::write(&mail, nested_mail(60_000)).unwrap();
    let out = sb.run(&["--json", mail.to_str().unwrap()]);
    crate::util::assert_exited(&out);
    let lines = json_lines(&out);
    let line = lines
        .iter()
        .find(|l| {
            l["locator"]
                .as_str()
                .is_some_and(|s| s.ends_with("nest.eml"))
        })
        .unwrap_or_else(|| panic!("{}", crate::util::told(&out)));
    assert_eq!(line["status"], "skipped", "{line}");
    assert!(
        line["reason"]
            .as_str()
            .unwrap()
            .starts_with("limit: depth (60000 message/* parts"),
        "{line}"
    );

    // The same mail uploaded (and zipped) to the service: the service lives, the job ends.
    write_config(&sb);
    let service = start_or_die(&sb, &[]).expect("start");
    let client = Client::new(&service, Some(ALICE));
    let zip = ingest_unpack::zip_of(&[("inner/nest.eml", &nested_mail(60_000))]);
    for (name, bytes) in [("nest.eml", nested_mail(60_000)), ("nest.zip", zip)] {
        let (status, answer) = client.upload(name, &bytes);
        assert_eq!(status, 202, "{answer}");
        let ended = client.wait_job(&job_of(&answer));
        assert!(
            ended["reason"]
                .as_str()
                .is_some_and(|r| r.contains("limit: depth (60000 message/* parts")),
            "{ended}"
        );
    }
    let (status, health) = client.get("/health");
    assert_eq!(status, 200, "{health}");
    assert!(service.child.id() > 0);
    drop(service);
}
