//! E-mail as a container, end to end through the binary: a mailbox of 1 000 generated mails
//! with attachments (PDF, DOCX, ZIP, an attached message) is walked to every attachment;
//! each is searchable and browseable under `box.mbox!/<message>!/<attachment>`, and a mail is
//! found by its subject and by its sender.

use base64::Engine;
use serde_json::Value;

use crate::util::*;

const MAILS: u64 = 1_000;
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
/// attached message when `i % 50 == 7`.
fn mailbox() -> Vec<u8> {
    let pdf = std::fs::read(fixtures().join("formats/survey-report.pdf")).unwrap();
    let docx = std::fs::read(fixtures().join("formats/field-handbook.docx")).unwrap();
    let zip = std::fs::read(fixtures().join("archives/bundle.zip")).unwrap();
    let mut rng = Lcg(7);
    let mut mbox = String::new();
    for i in 1..=MAILS {
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
        mbox.push_str(&format!(
            "From clerk{i}@brackwater.example Mon Mar  2 09:00:00 2026\n"
        ));
        mbox.push_str(&message(&from, &subject, i, &text, &attachments).replace("\r\n", "\n"));
        mbox.push('\n');
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("message.txt") && listing.contains("survey-11.pdf"),
        "{listing}"
    );
}
