//! The agent's tools through the library (`ingest::tools::call`) on the bundled fixtures:
//! every answer within its budget, cursors that rebuild every text exactly, structure answers
//! that page, and scopes that never see each other.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use ingest::tools::{self, BrowseArgs, ReadArgs, SearchArgs, SectionArgs, ToolCall};
use ingest::{FileStatus, Ingestor, Scope};
use serde_json::Value;

/// Budgets the property checks walk through.
const BUDGETS: &[usize] = &[
    200, 257, 333, 500, 777, 1000, 1500, 2500, 4000, 7000, 20_000,
];

struct Fixture {
    _dir: tempfile::TempDir,
    ingestor: Ingestor,
    /// Indexed documents (not archives) of alice's scope.
    documents: Vec<String>,
}

/// The benign fixtures ingested once for alice, and one file for bob.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let ingestor =
            Ingestor::open(crate::util::library_config(&dir.path().join("data"))).unwrap();
        let mut documents = Vec::new();
        for folder in crate::util::benign_fixtures() {
            let report = ingestor.ingest_path(&folder, &alice()).unwrap();
            documents.extend(
                report
                    .files
                    .iter()
                    .filter(|f| f.status == FileStatus::Indexed && !f.archive)
                    .map(|f| f.locator.clone()),
            );
        }
        let secret = dir.path().join("bob-only");
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::write(
            secret.join("payroll-bob.txt"),
            "Bob's payroll: the zebra budget is 42 crowns.\n",
        )
        .unwrap();
        ingestor.ingest_path(&secret, &bob()).unwrap();
        documents.sort();
        Fixture {
            _dir: dir,
            ingestor,
            documents,
        }
    })
}

fn alice() -> Scope {
    Scope::user("alice")
}

fn bob() -> Scope {
    Scope::user("bob")
}

/// Call a tool; check the answer fits its budget and describes its own size.
fn call(scope: &Scope, c: ToolCall, max: usize) -> (Value, bool) {
    let a = tools::call(&fixture().ingestor, scope, &c);
    assert!(
        a.text.len() <= max,
        "{} chars > max_chars {max} for {c:?}",
        a.text.len()
    );
    let v: Value = serde_json::from_str(&a.text).unwrap();
    if !a.is_error {
        assert_eq!(v["size"]["chars"], a.text.len(), "{}", a.text);
    }
    (v, a.is_error)
}

/// The chars `[a, b)` of every object a sequence of pieces covers, by object number.
type Segments = BTreeMap<u64, Vec<(usize, String)>>;

/// Record the segments one piece covers (see docs/TOOLS.md: offset, end, omitted).
fn add_piece(into: &mut Segments, n: u64, piece: &Value) {
    let text: Vec<char> = piece["text"].as_str().unwrap().chars().collect();
    let segs = into.entry(n).or_default();
    match piece.get("offset") {
        None => segs.push((0, text.iter().collect())),
        Some(offset) => {
            let a = offset.as_u64().unwrap() as usize;
            let b = piece["end"].as_u64().unwrap() as usize;
            match piece.get("omitted") {
                None => {
                    assert_eq!(text.len(), b - a, "{piece}");
                    segs.push((a, text.iter().collect()));
                }
                Some(o) => {
                    let (x, y) = (
                        o[0].as_u64().unwrap() as usize,
                        o[1].as_u64().unwrap() as usize,
                    );
                    let marker = format!("[{} chars omitted]", y - x);
                    let head: String = text[..x - a].iter().collect();
                    let tail: String = text[text.len() - (b - y)..].iter().collect();
                    let middle: String = text[x - a..text.len() - (b - y)].iter().collect();
                    assert_eq!(middle, marker, "{piece}");
                    segs.push((a, head));
                    segs.push((y, tail));
                }
            }
        }
    }
}

/// Join each object's segments, checking they tile the text with no gap and no overlap.
fn join(segments: Segments) -> BTreeMap<u64, String> {
    segments
        .into_iter()
        .map(|(n, mut segs)| {
            segs.sort_by_key(|s| s.0);
            let mut text = String::new();
            let mut at = 0;
            let all = segs.clone();
            for (offset, s) in segs.into_iter().filter(|s| !s.1.is_empty()) {
                assert_eq!(
                    offset, at,
                    "object {n}: gap or overlap at char {at}: {all:?}"
                );
                at += s.chars().count();
                text.push_str(&s);
            }
            (n, text)
        })
        .collect()
}

/// Follow `read_content_objects` cursors from the start at budget `max`; the objects rebuilt.
fn read_all(locator: &str, max: usize) -> BTreeMap<u64, String> {
    let mut segments = Segments::new();
    let mut cursor = None;
    for _ in 0..10_000 {
        let args = ReadArgs {
            locator: locator.into(),
            max_chars: Some(max),
            cursor: cursor.clone(),
            ..ReadArgs::default()
        };
        let (v, err) = call(&alice(), ToolCall::ReadContentObjects(args), max);
        assert!(!err, "{locator} at {max} from {cursor:?}: {v}");
        let objects = v["objects"].as_array().unwrap();
        assert!(!objects.is_empty() || v["total"] == 0, "no progress: {v}");
        if std::env::var("TOOLS_DEBUG").is_ok() {
            eprintln!("{max} {v}");
        }
        for o in objects {
            add_piece(&mut segments, o["n"].as_u64().unwrap(), o);
        }
        match v.get("cursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_string()),
            None => return join(segments),
        }
    }
    panic!("{locator}: cursors never ended at max_chars {max}");
}

#[test]
fn reading_objects_in_any_budget_rebuilds_every_text_exactly() {
    let f = fixture();
    assert!(f.documents.len() >= 10, "{:?}", f.documents);
    for doc in &f.documents {
        let whole = read_all(doc, 100_000);
        for &max in BUDGETS {
            assert_eq!(read_all(doc, max), whole, "{doc} at max_chars {max}");
        }
    }
}

#[test]
fn sections_read_in_any_budget_rebuild_exactly() {
    let f = fixture();
    let mut checked = 0;
    for doc in &f.documents {
        let (v, err) = call(
            &alice(),
            ToolCall::BrowseContainer(BrowseArgs {
                locator: Some(doc.clone()),
                max_chars: Some(100_000),
                ..BrowseArgs::default()
            }),
            100_000,
        );
        assert!(!err, "{v}");
        assert_eq!(v["kind"], "document");
        for node in v["outline"].as_array().cloned().unwrap_or_default() {
            let id = node["id"].as_str().unwrap().to_string();
            let mut texts = Vec::new();
            for &max in BUDGETS.iter().chain([100_000].iter()) {
                let mut segments = Segments::new();
                let mut cursor = None;
                loop {
                    let (a, err) = call(
                        &alice(),
                        ToolCall::ReadSection(SectionArgs {
                            locator: doc.clone(),
                            section: id.clone(),
                            max_chars: Some(max),
                            cursor: cursor.clone(),
                            owner: None,
                        }),
                        max,
                    );
                    assert!(!err, "{a}");
                    if a["chars"] != 0 {
                        add_piece(&mut segments, 0, &a);
                    }
                    match a.get("cursor") {
                        Some(c) => cursor = Some(c.as_str().unwrap().to_string()),
                        None => break,
                    }
                }
                texts.push(join(segments));
            }
            assert!(texts.windows(2).all(|w| w[0] == w[1]), "{doc} {id}");
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} sections");
}

/// Every member of a container, following cursors at `max`.
fn members(scope: &Scope, locator: Option<&str>, max: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let (v, err) = call(
            scope,
            ToolCall::BrowseContainer(BrowseArgs {
                locator: locator.map(str::to_string),
                max_chars: Some(max),
                cursor: cursor.clone(),
                ..BrowseArgs::default()
            }),
            max,
        );
        assert!(!err, "{v}");
        out.extend(v["members"].as_array().unwrap().iter().cloned());
        match v.get("cursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_string()),
            None => return out,
        }
    }
}

#[test]
fn browsing_pages_every_member_exactly_once_and_descends_into_archives() {
    let root = members(&alice(), None, 4000);
    let names: Vec<&str> = root.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["archives", "docs", "formats"], "{root:?}");
    let formats = root[2]["locator"].as_str().unwrap().to_string();
    let all = members(&alice(), Some(&formats), 100_000);
    assert!(all.len() >= 20);
    let names = |list: &[Value]| -> Vec<String> {
        list.iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect()
    };
    for &max in BUDGETS {
        let paged = members(&alice(), Some(&formats), max);
        assert_eq!(names(&paged), names(&all), "max_chars {max}");
    }
    let archives = root[0]["locator"].as_str().unwrap();
    let bundle = format!("{archives}/bundle.zip");
    let inside = members(&alice(), Some(&bundle), 4000);
    let kinds: BTreeMap<&str, &str> = inside
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds["README.txt"], "file");
    assert_eq!(kinds["docs"], "folder");
    let nested = members(&alice(), Some(&format!("{bundle}!/docs")), 4000);
    assert_eq!(nested[0]["kind"], "archive", "{nested:?}");
    let deep = members(&alice(), Some(nested[0]["locator"].as_str().unwrap()), 4000);
    assert_eq!(deep.len(), 1, "{deep:?}");
    assert_eq!(deep[0]["name"], "notes");
}

#[test]
fn another_scopes_locators_read_exactly_like_missing_ones() {
    let f = fixture();
    let secret = f.ingestor.stats(Some(&bob())).files;
    assert_eq!(secret, 1);
    // bob's file, seen from alice, and a made-up one.
    let bob_root = members(&bob(), None, 4000);
    assert_eq!(bob_root[0]["name"], "payroll-bob.txt", "{bob_root:?}");
    let bob_file = bob_root[0]["locator"].as_str().unwrap().to_string();
    let made_up = bob_file.replace("payroll-bob", "payroll-zed");
    for (make, what) in [
        (
            Box::new(|l: &str| {
                ToolCall::BrowseContainer(BrowseArgs {
                    locator: Some(l.into()),
                    ..BrowseArgs::default()
                })
            }) as Box<dyn Fn(&str) -> ToolCall>,
            "browse",
        ),
        (
            Box::new(|l: &str| {
                ToolCall::ReadContentObjects(ReadArgs {
                    locator: l.into(),
                    ..ReadArgs::default()
                })
            }),
            "read",
        ),
        (
            Box::new(|l: &str| {
                ToolCall::ReadSection(SectionArgs {
                    locator: l.into(),
                    section: "s1".into(),
                    ..SectionArgs::default()
                })
            }),
            "section",
        ),
    ] {
        let (real, e1) = call(&alice(), make(&bob_file), 4000);
        let (fake, e2) = call(&alice(), make(&made_up), 4000);
        assert!(e1 && e2, "{what}: {real} {fake}");
        assert_eq!(
            real.to_string().replace(&bob_file, "X"),
            fake.to_string().replace(&made_up, "X"),
            "{what}"
        );
    }
    // alice's root never mentions bob's folder.
    let root = call(
        &alice(),
        ToolCall::BrowseContainer(BrowseArgs::default()),
        4000,
    )
    .0;
    assert!(!root.to_string().contains("bob-only"), "{root}");
}

fn search(scope: &Scope, args: SearchArgs, max: usize) -> Vec<Value> {
    let mut hits = Vec::new();
    let mut cursor = None;
    loop {
        let (v, err) = call(
            scope,
            ToolCall::SearchDocuments(SearchArgs {
                max_chars: Some(max),
                cursor: cursor.clone(),
                ..args.clone()
            }),
            max,
        );
        assert!(!err, "{v}");
        let page = v["hits"].as_array().unwrap();
        assert!(!page.is_empty() || cursor.is_none(), "no progress: {v}");
        hits.extend(page.iter().cloned());
        match v.get("cursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_string()),
            None => return hits,
        }
    }
}

#[test]
fn search_pages_its_hits_filters_by_locator_and_stays_in_scope() {
    let f = fixture();
    // Every hit, however weak (min_score -1): paging and filters are checked here.
    let args = SearchArgs {
        query: "who kept the lighthouse".into(),
        limit: Some(12),
        min_score: Some(-1.0),
        ..SearchArgs::default()
    };
    let all = search(&alice(), args.clone(), 100_000);
    assert_eq!(all.len(), 12);
    let locators = |hits: &[Value]| -> Vec<String> {
        hits.iter()
            .map(|h| h["locator"].as_str().unwrap().to_string())
            .collect()
    };
    // A hit's locator alone can be 100 chars: below ~300 a hit may not fit, and the answer
    // says so (within the budget) instead.
    for &max in BUDGETS.iter().filter(|&&m| m >= 333) {
        assert_eq!(
            locators(&search(&alice(), args.clone(), max)),
            locators(&all),
            "{max}"
        );
    }
    let tiny = tools::call(
        &f.ingestor,
        &alice(),
        &ToolCall::SearchDocuments(SearchArgs {
            max_chars: Some(200),
            ..args.clone()
        }),
    );
    assert!(tiny.text.len() <= 200, "{}", tiny.text);
    // Within one file.
    let handbook = f
        .documents
        .iter()
        .find(|d| d.ends_with("handbook.md"))
        .unwrap();
    let inside = search(
        &alice(),
        SearchArgs {
            locator: Some(handbook.clone()),
            ..args.clone()
        },
        100_000,
    );
    assert!(!inside.is_empty());
    // Its passages, and its card (the file's own locator).
    assert!(inside.iter().all(|h| {
        let l = h["locator"].as_str().unwrap();
        l.starts_with(&format!("{handbook}#")) || (l == handbook && h["kind"] == "card")
    }));
    // Bob's words are not found by alice, and his file is not a valid filter for her.
    let bobs = search(
        &alice(),
        SearchArgs {
            query: "Bob's payroll zebra budget crowns".into(),
            limit: Some(50),
            min_score: Some(-1.0),
            ..SearchArgs::default()
        },
        100_000,
    );
    assert!(!bobs.iter().any(|h| h.to_string().contains("payroll-bob")));
    let theirs = search(
        &bob(),
        SearchArgs {
            query: "Bob's payroll zebra budget crowns".into(),
            min_score: Some(-1.0),
            ..SearchArgs::default()
        },
        4000,
    );
    assert!(theirs[0]["locator"]
        .as_str()
        .unwrap()
        .contains("payroll-bob"));
    let bob_file = theirs[0]["locator"]
        .as_str()
        .unwrap()
        .split('#')
        .next()
        .unwrap()
        .to_string();
    let (e, err) = call(
        &alice(),
        ToolCall::SearchDocuments(SearchArgs {
            locator: Some(bob_file.clone()),
            ..args.clone()
        }),
        4000,
    );
    assert!(err && e.to_string().contains("no such locator"), "{e}");
}

#[test]
fn a_member_past_the_file_limit_is_extracted_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::util::library_config(&dir.path().join("data"));
    config.limits.max_files = 2;
    let ingestor = Ingestor::open(config).unwrap();
    let zip = dir.path().join("crates.zip");
    std::fs::write(
        &zip,
        crate::util::zip_of(&[
            ("a.txt", b"The first crate holds rope.\n"),
            ("b.txt", b"The second crate holds lamp oil.\n"),
            ("c.txt", b"The third crate holds the brass foghorn reed.\n"),
        ]),
    )
    .unwrap();
    ingestor.ingest_path(&zip, &alice()).unwrap();
    let archive = zip.to_string_lossy().to_string();
    let member = format!("{archive}!/c.txt");
    let answer = |c: ToolCall| -> (Value, bool) {
        let a = tools::call(&ingestor, &alice(), &c);
        assert!(a.text.len() <= 4000);
        (serde_json::from_str(&a.text).unwrap(), a.is_error)
    };
    let read = |l: &str| {
        ToolCall::ReadContentObjects(ReadArgs {
            locator: l.into(),
            ..ReadArgs::default()
        })
    };
    let (listing, _) = answer(ToolCall::BrowseContainer(BrowseArgs {
        locator: Some(archive.clone()),
        ..BrowseArgs::default()
    }));
    assert_eq!(listing["kind"], "archive", "{listing}");
    assert_eq!(listing["total"], 2, "{listing}");
    assert!(
        listing["reason"]
            .as_str()
            .unwrap()
            .starts_with("limit: file-count"),
        "{listing}"
    );
    let (before, err) = answer(read(&member));
    assert!(err, "not read yet: {before}");
    let (v, err) = answer(ToolCall::ExtractContainerItem(tools::ExtractArgs {
        locator: member.clone(),
        ..tools::ExtractArgs::default()
    }));
    assert!(!err, "{v}");
    assert_eq!(v["extracted"]["status"], "indexed", "{v}");
    assert_eq!(v["kind"], "document", "{v}");
    let (after, err) = answer(read(&member));
    assert!(!err, "{after}");
    assert!(after.to_string().contains("brass foghorn reed"), "{after}");
    // Bob cannot extract from alice's archive: it does not exist for him.
    let b = tools::call(
        &ingestor,
        &bob(),
        &ToolCall::ExtractContainerItem(tools::ExtractArgs {
            locator: member.clone(),
            ..tools::ExtractArgs::default()
        }),
    );
    assert!(
        b.is_error && b.text.contains("no such locator"),
        "{}",
        b.text
    );
}

#[test]
fn a_budget_under_the_minimum_is_refused_within_it() {
    let c = ToolCall::BrowseContainer(BrowseArgs {
        max_chars: Some(120),
        ..BrowseArgs::default()
    });
    let a = tools::call(&fixture().ingestor, &alice(), &c);
    assert!(a.is_error, "{}", a.text);
    assert!(a.text.len() <= 120, "{}", a.text);
    assert!(a.text.contains("at least 200"), "{}", a.text);
}
