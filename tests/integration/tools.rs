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
                ToolCall::ReadContentObjects(ReadArgs {
                    locator: l.into(),
                    around: Some(format!("{l}#line=1")),
                    before: Some(1),
                    ..ReadArgs::default()
                })
            }),
            "read around",
        ),
        (
            Box::new(|l: &str| {
                ToolCall::VerifyQuote(ingest::tools::QuoteArgs {
                    locator: l.into(),
                    quote: "the zebra budget is 42 crowns".into(),
                    ..Default::default()
                })
            }),
            "verify quote",
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

/// `read_content_objects` with `around`: a call.
fn around(
    doc: &str,
    at: &str,
    before: Option<usize>,
    after: Option<usize>,
    max: usize,
) -> (Value, bool) {
    around_in(doc, at, (before, after, None), max)
}

/// [`around`] with `before`, `after` and `unit`.
fn around_in(
    doc: &str,
    at: &str,
    (before, after, unit): (Option<usize>, Option<usize>, Option<&str>),
    max: usize,
) -> (Value, bool) {
    call(
        &alice(),
        ToolCall::ReadContentObjects(ReadArgs {
            locator: doc.into(),
            around: Some(at.into()),
            before,
            after,
            unit: unit.map(str::to_string),
            max_chars: Some(max),
            ..ReadArgs::default()
        }),
        max,
    )
}

/// Whether the object at fragment `object` holds the place `at` (both `key=value&…`): every
/// key of `at` is the object's too, its number or range overlapping, its name the same.
fn holds(object: &str, at: &str) -> bool {
    let range = |v: &str| -> Option<(u64, u64)> {
        let (a, b) = v.split_once('-').unwrap_or((v, v));
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    at.split('&').all(|part| {
        let (key, want) = part.split_once('=').unwrap_or((part, ""));
        object.split('&').any(|o| {
            let (k, have) = o.split_once('=').unwrap_or((o, ""));
            k == key
                && match (range(want), range(have)) {
                    (Some((a, b)), Some((x, y))) => x <= b && a <= y,
                    _ => want == have,
                }
        })
    })
}

/// Reading around a place gives the first object holding it (marked `hit`) with its
/// neighbours in document order, exactly as a whole read shows them; `earlier` and `later`
/// read on both ways to the file's first and last object; a search hit's own locator works;
/// every answer within its budget; nonsense is refused with a reason.
#[test]
fn reading_around_a_hit_gives_its_neighbours_both_ways() {
    let f = fixture();
    let mut checked = 0;
    for doc in &f.documents {
        let (whole, err) = call(
            &alice(),
            ToolCall::ReadContentObjects(ReadArgs {
                locator: doc.clone(),
                max_chars: Some(100_000),
                ..ReadArgs::default()
            }),
            100_000,
        );
        assert!(!err, "{whole}");
        let all = whole["objects"].as_array().unwrap().clone();
        if all.len() < 3 || whole.get("cursor").is_some() {
            continue;
        }
        let locator = |o: &Value| o["locator"].as_str().unwrap().to_string();
        let middle = all.len() / 2;
        let at = locator(&all[middle]);
        if !at.contains('#') {
            continue;
        }
        // The first object holding that place (a page holds several; ranges overlap).
        let fragment_of = |l: &str| {
            l.split_once('#')
                .map(|(_, f)| f.to_string())
                .unwrap_or_default()
        };
        let hit = all
            .iter()
            .position(|o| holds(&fragment_of(&locator(o)), &fragment_of(&at)))
            .unwrap();
        let (v, err) = around(doc, &at, Some(1), Some(1), 100_000);
        assert!(!err, "{v}");
        let got = v["objects"].as_array().unwrap();
        let want = &all[hit.saturating_sub(1)..=(hit + 1).min(all.len() - 1)];
        assert_eq!(got.len(), want.len(), "{doc} around {at}: {v}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(
                (g["locator"].clone(), g["text"].clone()),
                (w["locator"].clone(), w["text"].clone())
            );
        }
        let marked: Vec<&Value> = got.iter().filter(|o| o["hit"] == true).collect();
        assert_eq!(marked.len(), 1, "{v}");
        assert_eq!(marked[0]["text"], all[hit]["text"]);
        // The fragment alone means the same place.
        let fragment = at.split_once('#').unwrap().1;
        let (alone, _) = around(doc, fragment, Some(1), Some(1), 100_000);
        assert_eq!(alone["objects"], v["objects"]);
        // Read on both ways, one object at a time, to both ends of the file.
        for (way, first) in [("earlier", true), ("later", false)] {
            let mut answer = v.clone();
            let mut steps = 0;
            let mut seen: Vec<Value> = v["objects"].as_array().unwrap().clone();
            while let Some(next) = answer.get(way).cloned() {
                let count = |k: &str| next[k].as_u64().map(|n| n as usize);
                let (a, err) = around_in(
                    doc,
                    next["around"].as_str().unwrap(),
                    (count("before"), count("after"), next["unit"].as_str()),
                    100_000,
                );
                assert!(!err, "{a}");
                // Each step reaches objects not seen yet.
                let objects = a["objects"].as_array().unwrap();
                let new = objects
                    .iter()
                    .filter(|o| {
                        !seen
                            .iter()
                            .any(|s| s["locator"] == o["locator"] && s["text"] == o["text"])
                    })
                    .count();
                assert!(new > 0, "{way} from {next}: nothing new in {a}");
                seen.extend(objects.iter().cloned());
                answer = a;
                steps += 1;
                assert!(steps < 10_000, "{way} never ends");
            }
            let objects = answer["objects"].as_array().unwrap();
            let end = if first {
                &objects[0]
            } else {
                objects.last().unwrap()
            };
            let want = if first { &all[0] } else { all.last().unwrap() };
            assert_eq!(locator(end), locator(want), "{doc}: {way} ends elsewhere");
        }
        // Counted in chars: whole objects until that many chars on each side.
        let (c, err) = around_in(doc, &at, (Some(1), Some(1), Some("chars")), 100_000);
        assert!(!err, "{c}");
        // The hit lies mid-file: at least one object on each side, the hit between them.
        let objects = c["objects"].as_array().unwrap();
        let at_hit = objects
            .iter()
            .position(|o| o["hit"] == true)
            .expect("the hit");
        assert_eq!(at_hit >= 1, hit >= 1, "{c}");
        assert_eq!(at_hit + 1 < objects.len(), hit + 1 < all.len(), "{c}");
        // Within any budget.
        for &max in BUDGETS {
            let (a, _) = around(doc, &at, Some(2), Some(2), max);
            assert!(a.is_object());
        }
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} documents");

    // A search hit's own locator.
    let hits = tools::call(
        &f.ingestor,
        &alice(),
        &ToolCall::SearchDocuments(SearchArgs {
            query: "lighthouse keeper".into(),
            limit: Some(3),
            kind: Some("passage".into()),
            ..SearchArgs::default()
        }),
    );
    let hits: Value = serde_json::from_str(&hits.text).unwrap();
    let hit = hits["hits"][0]["locator"].as_str().unwrap().to_string();
    let (file, _) = hit.split_once('#').expect("a hit with a fragment");
    let (v, err) = around(file, &hit, None, None, 4000);
    assert!(!err, "{hit}: {v}");
    assert_eq!(
        v["objects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["hit"] == true)
            .count(),
        1,
        "{v}"
    );

    // Refused, with a reason: another file, no place, a place not there, too far, unknown
    // unit, before without around.
    let doc = &f.documents[0];
    for (at, before, why) in [
        ("/elsewhere/other.md#line=1", None, "another file"),
        ("", None, "a place"),
        ("page=99999", None, "holds"),
        ("page=1", Some(101), "at most 100"),
    ] {
        let (v, err) = around(doc, at, before, None, 4000);
        assert!(err, "{at}: {v}");
        assert!(v["error"].as_str().unwrap().contains(why), "{at}: {v}");
    }
    let refused = |args: ReadArgs| {
        let (v, err) = call(&alice(), ToolCall::ReadContentObjects(args), 4000);
        assert!(err, "{v}");
        v["error"].as_str().unwrap().to_string()
    };
    assert!(refused(ReadArgs {
        locator: doc.clone(),
        before: Some(2),
        ..ReadArgs::default()
    })
    .contains("go with around"));
    assert!(refused(ReadArgs {
        locator: doc.clone(),
        around: Some("page=1".into()),
        unit: Some("pages".into()),
        ..ReadArgs::default()
    })
    .contains("objects or chars"));
}

/// `verify_quote` of `quote` in `doc`.
fn verify(doc: &str, quote: &str, max: usize) -> Value {
    let (v, err) = call(
        &alice(),
        ToolCall::VerifyQuote(ingest::tools::QuoteArgs {
            locator: doc.into(),
            quote: quote.into(),
            max_chars: Some(max),
            ..Default::default()
        }),
        max,
    );
    assert!(!err, "{v}");
    v
}

/// A quote as copied from a rendered page: some spaces are line breaks, a long word is
/// hyphenated across a line's end, `fi` is a ligature and apostrophes are typographic.
fn as_copied_from_a_page(quote: &str) -> String {
    let mut out = String::new();
    let mut hyphenated = false;
    for (i, word) in quote.split(' ').enumerate() {
        if i > 0 {
            out.push(if i % 3 == 0 { '\n' } else { ' ' });
        }
        let letters: Vec<char> = word.chars().collect();
        if !hyphenated && letters.len() >= 8 && letters.iter().all(|c| c.is_alphabetic()) {
            let (a, b) = letters.split_at(letters.len() / 2);
            out.extend(a);
            out.push_str("-\n");
            out.extend(b);
            hyphenated = true;
        } else {
            out.push_str(word);
        }
    }
    out.replacen("fi", "\u{fb01}", 1).replace('\'', "\u{2019}")
}

/// 100 quotes taken from the fixtures' texts are found where they were taken, as copied
/// from a page (line breaks, hyphens across lines, ligatures, typographic apostrophes); the
/// same 100 with one word changed are not found, and the closest passage named is the
/// place they were taken from.
#[test]
fn verify_quote_finds_100_quotes_as_copied_and_rejects_100_altered() {
    let f = fixture();
    let mut rng = crate::util::Lcg(17);
    // (file, object locator, quote), spread over the documents.
    let mut quotes: Vec<(String, String, String)> = Vec::new();
    let mut texts: Vec<(String, String, String)> = Vec::new();
    for doc in &f.documents {
        let (whole, _) = call(
            &alice(),
            ToolCall::ReadContentObjects(ReadArgs {
                locator: doc.clone(),
                content_type: Some("text".into()),
                max_chars: Some(100_000),
                ..ReadArgs::default()
            }),
            100_000,
        );
        for o in whole["objects"].as_array().into_iter().flatten() {
            if o.get("offset").is_some() {
                continue;
            }
            let text = o["text"].as_str().unwrap_or_default();
            let words: Vec<&str> = text.split_whitespace().collect();
            if words.len() >= 8 {
                texts.push((
                    doc.clone(),
                    o["locator"].as_str().unwrap().to_string(),
                    words.join(" "),
                ));
            }
        }
    }
    assert!(texts.len() >= 20, "only {} texts", texts.len());
    let mut round = 0;
    while quotes.len() < 100 && round < 50 {
        for (doc, at, text) in &texts {
            if quotes.len() == 100 {
                break;
            }
            let words: Vec<&str> = text.split(' ').collect();
            let len = 6 + rng.below(8) as usize;
            let start = rng.below(words.len().saturating_sub(len).max(1) as u64) as usize;
            let span = words[start..(start + len).min(words.len())].join(" ");
            let wordy = span
                .split(' ')
                .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 3)
                .count();
            if wordy >= 4 && !quotes.iter().any(|q| q.2 == span) {
                quotes.push((doc.clone(), at.clone(), span));
            }
        }
        round += 1;
    }
    assert_eq!(quotes.len(), 100);
    let (mut found, mut rejected) = (0, 0);
    for (doc, at, quote) in &quotes {
        let copied = as_copied_from_a_page(quote);
        let v = verify(doc, &copied, 20_000);
        assert_eq!(v["found"], true, "{copied:?} in {doc}: {v}");
        let places: Vec<&str> = v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["locator"].as_str())
            .collect();
        assert!(
            places.contains(&at.as_str()),
            "{copied:?}: {at} not in {places:?}"
        );
        found += 1;
        // One word changed: the longest, its letters reversed (or one more letter).
        let longest = quote.split(' ').max_by_key(|w| w.chars().count()).unwrap();
        let reversed: String = longest.chars().rev().collect();
        let changed = if reversed.to_lowercase() != longest.to_lowercase() {
            reversed
        } else {
            format!("{longest}x")
        };
        let altered = quote.replacen(longest, &changed, 1);
        let v = verify(doc, &as_copied_from_a_page(&altered), 20_000);
        assert_eq!(v["found"], false, "{altered:?} in {doc}: {v}");
        let closest = &v["closest"];
        let score = closest["score"].as_f64().unwrap();
        assert!((0.5..1.0).contains(&score), "{altered:?}: {v}");
        assert_eq!(closest["locator"], at.as_str(), "{altered:?}: {v}");
        rejected += 1;
    }
    println!("verify_quote: {found} of 100 quotes found where taken, {rejected} of 100 altered ones rejected");
    // Every answer within its budget, the smallest too.
    let (doc, _, quote) = &quotes[0];
    for &max in BUDGETS {
        let (v, err) = call(
            &alice(),
            ToolCall::VerifyQuote(ingest::tools::QuoteArgs {
                locator: doc.clone(),
                quote: quote.clone(),
                max_chars: Some(max),
                ..Default::default()
            }),
            max,
        );
        assert!(
            v["found"] == true || (err && v["error"].as_str().unwrap().contains("too small")),
            "{max}: {v}"
        );
    }
    // Nothing to look for, or too long: refused with a reason.
    for (quote, why) in [
        (" - ", "no words"),
        (&"word ".repeat(1000)[..], "at most 4000"),
    ] {
        let (v, err) = call(
            &alice(),
            ToolCall::VerifyQuote(ingest::tools::QuoteArgs {
                locator: doc.clone(),
                quote: quote.into(),
                ..Default::default()
            }),
            4000,
        );
        assert!(err && v["error"].as_str().unwrap().contains(why), "{v}");
    }
}

/// `render_page` of `args` by `scope` in `ingestor`: the answer, its PNG (decoded) and
/// whether it is an error.
fn render_in(ingestor: &Ingestor, scope: &Scope, args: Value) -> (Value, Option<Vec<u8>>, bool) {
    use base64::Engine as _;
    let call = ToolCall::parse("render_page", args).unwrap();
    let a = tools::call(ingestor, scope, &call);
    let v: Value = serde_json::from_str(&a.text).unwrap();
    assert!(a.text.len() <= 4000, "{}", a.text);
    let png = a.image.as_ref().map(|i| {
        assert_eq!(i.mime_type, "image/png");
        base64::engine::general_purpose::STANDARD
            .decode(&i.base64)
            .unwrap()
    });
    assert_eq!(png.is_some(), !a.is_error, "{v}");
    (v, png, a.is_error)
}

/// Width and height from a PNG's header.
fn png_size(png: &[u8]) -> (u64, u64) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR");
    let be = |b: &[u8]| u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    (be(&png[16..20]), be(&png[20..24]))
}

/// `render_page` answers a PDF page within 10 KB, 100 KB and 1 MB (scaled down, and saying
/// so, when the page would not fit), its text describing the image; a box verify_quote gave
/// is rendered as exactly that part; pictures are images too; other types, pages past the
/// end and nonsense are refused; another scope's file is answered as a missing one.
#[test]
fn render_page_answers_within_its_byte_budget_for_pages_regions_and_pictures() {
    let f = fixture();
    let pdf = f
        .documents
        .iter()
        .find(|d| d.ends_with("formats/survey-report.pdf"))
        .unwrap();
    let mut widths = Vec::new();
    for budget in [10_000u64, 100_000, 1_000_000] {
        let args = serde_json::json!({ "locator": format!("{pdf}#page=2"), "dpi": 300, "max_bytes": budget });
        let (v, png, err) = render_in(&f.ingestor, &alice(), args);
        assert!(!err, "{v}");
        let png = png.unwrap();
        assert!(png.len() as u64 <= budget, "{} > {budget}", png.len());
        let (w, h) = png_size(&png);
        assert_eq!(
            (v["width"].as_u64(), v["height"].as_u64()),
            (Some(w), Some(h)),
            "{v}"
        );
        assert_eq!(v["bytes"], png.len());
        assert_eq!(v["page"], 2);
        assert_eq!(v["locator"], format!("{pdf}#page=2"));
        if v["dpi"].as_f64().unwrap() < 300.0 {
            assert!(v["note"].as_str().unwrap().contains("must fit"), "{v}");
        }
        println!(
            "render_page max_bytes {budget}: {} bytes, {w}x{h}, {} dpi",
            png.len(),
            v["dpi"]
        );
        widths.push(w);
    }
    assert!(widths[0] < widths[2], "{widths:?}");
    // The box verify_quote gives for a line, rendered at 144 dpi, is that line: 2 px a point.
    let quote = verify(pdf, "Install the tide gauge on the north pier", 4000);
    let b = &quote["matches"][0]["boxes"][0];
    assert_eq!(b["page"], 2, "{quote}");
    let bx: Vec<f64> = b["box"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let (v, png, _) = render_in(
        &f.ingestor,
        &alice(),
        serde_json::json!({ "locator": pdf, "page": 2, "region": bx, "dpi": 144 }),
    );
    let (w, h) = png_size(&png.unwrap());
    let (ew, eh) = (
        (bx[2].ceil() - bx[0].floor()) * 2.0,
        (bx[3].ceil() - bx[1].floor()) * 2.0,
    );
    assert!(
        (w as f64 - ew).abs() <= 2.0 && (h as f64 - eh).abs() <= 2.0,
        "{w}x{h} for {bx:?}: {v}"
    );
    // A search hit in the PDF, with positions, names the same line's box; without, none.
    let search = |positions: bool| {
        call(
            &alice(),
            ToolCall::SearchDocuments(SearchArgs {
                query: "Install the tide gauge on the north pier".into(),
                locator: Some(pdf.clone()),
                positions,
                ..SearchArgs::default()
            }),
            4000,
        )
        .0
    };
    let hits = search(true);
    let hit = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["locator"] == format!("{pdf}#page=2"))
        .unwrap_or_else(|| panic!("{hits}"));
    assert!(
        hit["boxes"].as_array().unwrap().contains(b),
        "{hit} lacks {b}"
    );
    let plain = search(false);
    assert!(!plain.to_string().contains("boxes"), "opt-in only: {plain}");
    // Positions in a read count against its budget like the rest: a 300-char answer fits.
    let (small, _) = call(
        &alice(),
        ToolCall::ReadContentObjects(ReadArgs {
            locator: pdf.clone(),
            positions: true,
            max_chars: Some(300),
            ..ReadArgs::default()
        }),
        300,
    );
    assert!(small["objects"].is_array(), "{small}");
    // A picture.
    let picture = f
        .documents
        .iter()
        .find(|d| d.ends_with("formats/pier.png"))
        .unwrap();
    let (v, png, err) = render_in(
        &f.ingestor,
        &alice(),
        serde_json::json!({ "locator": picture }),
    );
    assert!(!err && v.get("page").is_none(), "{v}");
    assert_eq!(
        png_size(&png.unwrap()),
        (v["width"].as_u64().unwrap(), v["height"].as_u64().unwrap())
    );
    // Refusals, each saying why.
    let docx = f
        .documents
        .iter()
        .find(|d| d.ends_with("formats/field-handbook.docx"))
        .unwrap();
    for (args, why) in [
        (
            serde_json::json!({ "locator": docx }),
            "PDF pages and pictures",
        ),
        (
            serde_json::json!({ "locator": pdf, "page": 9 }),
            "page 9 of",
        ),
        (
            serde_json::json!({ "locator": format!("{pdf}#page=0") }),
            "bad value for fragment key page",
        ),
        (
            serde_json::json!({ "locator": pdf, "page": 0 }),
            "page 0 of",
        ),
        (
            serde_json::json!({ "locator": picture, "page": 2 }),
            "page 1 only",
        ),
        (
            serde_json::json!({ "locator": pdf, "max_bytes": 10 }),
            "max_bytes 10",
        ),
        (
            serde_json::json!({ "locator": pdf, "dpi": 5000 }),
            "dpi 5000",
        ),
        (
            serde_json::json!({ "locator": pdf, "region": [1, 2, 1, 2] }),
            "region is empty",
        ),
        (
            serde_json::json!({ "locator": pdf, "region": [0, 0, 1e300, 5] }),
            "finite numbers",
        ),
    ] {
        let (v, _, err) = render_in(&f.ingestor, &alice(), args.clone());
        assert!(
            err && v["error"].as_str().unwrap().contains(why),
            "{args}: {v}"
        );
    }
    // Another scope's file reads as a made-up one.
    let (theirs, _, err) = render_in(&f.ingestor, &bob(), serde_json::json!({ "locator": pdf }));
    let made_up = pdf.replace("survey", "surxey");
    let (none, _, _) = render_in(
        &f.ingestor,
        &bob(),
        serde_json::json!({ "locator": made_up }),
    );
    assert!(err);
    assert_eq!(
        theirs.to_string().replace(pdf.as_str(), "X"),
        none.to_string().replace(&made_up, "X")
    );
}

/// A PDF inside a zip on disk is taken out of it again and rendered; a PDF changed on disk
/// since it was indexed is refused, never rendered from other bytes than the indexed ones.
#[test]
fn render_page_reads_archive_members_and_never_other_bytes_than_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let ingestor = Ingestor::open(crate::util::library_config(&dir.path().join("data"))).unwrap();
    let pdf = std::fs::read(crate::util::fixtures().join("formats/survey-report.pdf")).unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("pack.zip"),
        crate::util::zip_of(&[("inner/report.pdf", &pdf)]),
    )
    .unwrap();
    std::fs::write(docs.join("loose.pdf"), &pdf).unwrap();
    ingestor.ingest_path(&docs, &alice()).unwrap();
    let root = std::fs::canonicalize(&docs).unwrap();
    let member = format!("{}/pack.zip!/inner/report.pdf#page=3", root.display());
    let (v, png, err) = render_in(
        &ingestor,
        &alice(),
        serde_json::json!({ "locator": member, "max_bytes": 50_000 }),
    );
    assert!(!err, "{v}");
    assert!(png.unwrap().len() <= 50_000);
    assert_eq!(v["page"], 3);
    let loose = format!("{}/loose.pdf", root.display());
    let (v, _, err) = render_in(&ingestor, &alice(), serde_json::json!({ "locator": loose }));
    assert!(!err, "{v}");
    // Same size, other bytes: the file is not what was indexed.
    let mut changed = pdf.clone();
    let at = changed.len() - 10;
    changed[at] ^= 1;
    std::fs::write(docs.join("loose.pdf"), &changed).unwrap();
    let (v, _, err) = render_in(&ingestor, &alice(), serde_json::json!({ "locator": loose }));
    assert!(err, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("ingest it again"),
        "{v}"
    );
}

/// Reading a place (a search hit's `#fragment`) gives exactly that place, even inside a larger
/// stored object: the asked rows with the table's header row, the asked lines, the asked
/// paragraphs — at a 300-char budget too, where a cut falls around the range, never into
/// what was not asked for.
#[test]
fn reading_a_fragment_gives_exactly_its_rows_lines_and_paragraphs() {
    let dir = tempfile::tempdir().unwrap();
    let ingestor = Ingestor::open(crate::util::library_config(&dir.path().join("data"))).unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let mut csv = String::from("invoice,customer,amount\n");
    for r in 2..=300 {
        csv.push_str(&format!("INV-{r:04},customer {r},{}.00\n", r * 7));
    }
    std::fs::write(docs.join("invoices.csv"), &csv).unwrap();
    let mut txt = String::new();
    for l in 1..=400 {
        txt.push_str(&format!(
            "log line {l}: the pump ran for {} minutes\n",
            l % 60
        ));
    }
    std::fs::write(docs.join("pump.log.txt"), &txt).unwrap();
    std::fs::copy(
        crate::util::fixtures().join("formats/field-handbook.docx"),
        docs.join("handbook.docx"),
    )
    .unwrap();
    ingestor.ingest_path(&docs, &alice()).unwrap();
    let locator_of = |name: &str| format!("{}/{name}", docs.display());
    let read = |locator: &str, max: usize| -> Value {
        let a = tools::call(
            &ingestor,
            &alice(),
            &ToolCall::ReadContentObjects(ReadArgs {
                locator: locator.into(),
                max_chars: Some(max),
                ..ReadArgs::default()
            }),
        );
        assert!(
            !a.is_error && a.text.len() <= max,
            "{locator} at {max}: {}",
            a.text
        );
        serde_json::from_str(&a.text).unwrap()
    };
    // The object holding the asked range holds more than it.
    let objects = |locator: &str| -> Vec<String> {
        read(locator, 100_000)["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["locator"].as_str().unwrap().to_string())
            .collect()
    };
    let csv_objects = objects(&locator_of("invoices.csv"));
    assert!(
        csv_objects.iter().any(|l| {
            let (a, b) = range_of(l, "rows=");
            a < 157 && 158 < b
        }),
        "{csv_objects:?}"
    );
    for max in [300, 4000] {
        let v = read(&format!("{}#rows=157-158", locator_of("invoices.csv")), max);
        let objs = v["objects"].as_array().unwrap();
        assert_eq!(objs.len(), 1, "{v}");
        let text = objs[0]["text"].as_str().unwrap();
        for want in ["invoice", "INV-0157", "INV-0158"] {
            assert!(text.contains(want), "{max}: {want} not in {v}");
        }
        for not in ["INV-0156", "INV-0159"] {
            assert!(!text.contains(not), "{max}: {not} in {v}");
        }
        assert!(
            objs[0]["omitted"].is_null() && objs[0]["offset"].is_null(),
            "{v}"
        );
        let named = objs[0]["locator"].as_str().or(objs[0]["at"].as_str());
        assert!(named.is_some_and(|l| l.ends_with("rows=157-158")), "{v}");
        let v = read(&format!("{}#line=211-213", locator_of("pump.log.txt")), max);
        let text = v["objects"][0]["text"].as_str().unwrap();
        assert_eq!(
            text,
            "log line 211: the pump ran for 31 minutes\nlog line 212: the pump ran for 32 minutes\nlog line 213: the pump ran for 33 minutes",
            "{v}"
        );
    }
    // Paragraphs: a range inside an object of several.
    let handbook = locator_of("handbook.docx");
    let wide = objects(&handbook)
        .into_iter()
        .find(|l| {
            let (a, b) = range_of(l, "para=");
            b >= a + 2
        })
        .expect("an object of three or more paragraphs");
    let (a, b) = range_of(&wide, "para=");
    let whole = read(&wide, 100_000)["objects"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    // A paragraph a line here (a document's flow).
    let paras: Vec<&str> = whole.trim_end().split('\n').collect();
    assert_eq!(paras.len() as u64, b - a + 1, "{whole}");
    let v = read(&format!("{handbook}#para={}", a + 1), 4000);
    assert_eq!(v["objects"][0]["text"].as_str().unwrap(), paras[1], "{v}");
}

/// The range after `key` in a locator's fragment (`rows=104-200` → (104, 200)).
fn range_of(locator: &str, key: &str) -> (u64, u64) {
    let Some(at) = locator.find(key) else {
        return (0, 0);
    };
    let r: String = locator[at + key.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    match r.split_once('-') {
        Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
        None => (r.parse().unwrap(), r.parse().unwrap()),
    }
}
