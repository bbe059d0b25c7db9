//! The seam of the core, checked over the source: no import cycle among the modules that
//! make the core (each module's `crate::…` references, test-only code left out), no catalog
//! lock outside the catalog's implementation, the data directory's layout named only by
//! `DataDir`, and filters that reach the backends typed, never as JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers of the library, lowest first (ARCHITECTURE.md). The lower ones are crates of
/// their own (`crates/`; `ingest` names each under its old module name, `crate::index`),
/// which the compiler keeps in order; the modules of the upper ones are still in `src/`: a
/// module may use modules of its own layer and of the layers it lists, nothing above.
const LAYERS: &[(&str, &[&str], &[&str])] = &[
    // (layer, its modules, the layers it may use)
    (
        "base",
        &[
            "access",
            "batcher",
            "bounded_json",
            "data_dir",
            "error",
            "failpoint",
            "gate",
            "lock",
            "MAX_QUERY_BYTES",
            "names",
            "perms",
            "progress",
            "report",
        ],
        &[],
    ),
    ("isolation", &["isolation"], &["base"]),
    ("unpack", &["unpack"], &["base"]),
    ("embed", &["embed"], &["base"]),
    ("sources", &["sources"], &["base", "unpack"]),
    ("index", &["index"], &["base", "embed"]),
    (
        "core",
        &[
            "config",
            "ingestor",
            "migrate",
            "pipeline",
            "records",
            "reindex",
            "run_slots",
            "services",
            "uploads",
            "workflow",
        ],
        &["base", "isolation", "unpack", "embed", "sources", "index"],
    ),
    (
        "tools",
        &["tools"],
        &[
            "base",
            "isolation",
            "unpack",
            "embed",
            "sources",
            "index",
            "core",
        ],
    ),
];

/// The layer a top-level module belongs to.
fn layer_of(module: &str) -> Option<&'static str> {
    LAYERS
        .iter()
        .find(|(_, modules, _)| modules.contains(&module))
        .map(|(layer, _, _)| *layer)
}

fn src() -> PathBuf {
    crate::util::repo_dir().join("src")
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source files under `root` with their text, paths relative to it, test-only code
/// removed: files named `tests.rs` or `testkit.rs`, test support (`testing.rs`, and
/// `conformance.rs`, reached only from `#[cfg(test)]`), and each file's inline `#[cfg(test)]`
/// module. With `skip_bin`, the binary's folder (`bin/`) is left out.
fn sources_under(root: &Path, skip_bin: bool) -> Vec<(String, String)> {
    let mut all = Vec::new();
    files(root, &mut all);
    all.into_iter()
        .filter(|p| !(skip_bin && p.starts_with(root.join("bin"))))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name != "tests.rs"
                && name != "testkit.rs"
                && name != "testing.rs"
                && name != "conformance.rs"
        })
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            // An inline test module (`#[cfg(test)] mod x {`) ends the code that counts; a
            // declared one (`mod tests;`) is a file of its own, left out above.
            let inline_tests = text.match_indices("#[cfg(test)]\nmod ").find(|(at, m)| {
                let line = text[at + m.len()..].lines().next().unwrap_or("");
                line.trim_end().ends_with('{')
            });
            let text = match inline_tests {
                Some((at, _)) => text[..at].to_string(),
                None => text,
            };
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, text)
        })
        .collect()
}

/// The top-level module a file under `src/` belongs to.
fn module_of(rel: &str) -> String {
    rel.split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string()
}

/// Names `lib.rs` re-exports, mapped to the module they come from (`Ingestor` → `ingestor`).
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        for name in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() {
                out.insert(name.to_string(), module.to_string());
            }
        }
    }
    out
}

/// The first path segments after `crate::` in `text`, groups (`crate::{a, b::c}`) included.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let first = item.trim().split("::").next().unwrap_or("").trim();
                if !first.is_empty() {
                    out.insert(first.to_string());
                }
            }
        } else {
            let first: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !first.is_empty() {
                out.insert(first);
            }
        }
    }
    out
}

/// Module → the modules it refers to, over every module of the library (test support left
/// out).
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    module_graph_of(&src(), "lib.rs", true)
}

/// Module → the modules it refers to, over the crate whose sources are under `root` and
/// whose root file (`lib.rs`, `main.rs`) names what it re-exports.
fn module_graph_of(
    root: &Path,
    root_file: &str,
    skip_bin: bool,
) -> BTreeMap<String, BTreeSet<String>> {
    let top = std::fs::read_to_string(root.join(root_file)).unwrap();
    let names = reexports(&top);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in sources_under(root, skip_bin) {
        let module = module_of(&rel);
        if rel == root_file {
            continue;
        }
        let entry = graph.entry(module.clone()).or_default();
        for first in crate_paths(&text) {
            let target = names.get(&first).cloned().unwrap_or(first);
            if target != module {
                entry.insert(target);
            }
        }
    }
    graph
}

/// The workspace's crates, lowest first, with the folder of their sources and their root
/// file: each may depend on those before it, never on one after it.
const CRATES: &[(&str, &str, &str)] = &[
    ("ingest-extractors", "extractors/src", "lib.rs"),
    ("ingest-base", "crates/base/src", "lib.rs"),
    ("ingest-isolation", "crates/isolation/src", "lib.rs"),
    ("ingest-unpack", "crates/unpack/src", "lib.rs"),
    ("ingest-embed", "crates/embed/src", "lib.rs"),
    ("ingest-sources", "crates/sources/src", "lib.rs"),
    ("ingest-index", "crates/index/src", "lib.rs"),
    ("ingest", "src", "lib.rs"),
    ("ingest-serve", "crates/serve/src", "lib.rs"),
    ("ingest-cli", "crates/cli/src", "main.rs"),
];

/// Every library source file of the workspace (the binary's left out), test-only code removed,
/// named by its path from the repository's root (`crates/index/src/catalog.rs`).
fn workspace_sources() -> Vec<(String, String)> {
    let root = crate::util::repo_dir();
    CRATES
        .iter()
        .filter(|(_, _, root_file)| *root_file == "lib.rs")
        .flat_map(|(name, dir, _)| {
            sources_under(&root.join(dir), *name == "ingest")
                .into_iter()
                .map(move |(rel, text)| (format!("{dir}/{rel}"), text))
        })
        .collect()
}

#[test]
fn no_crate_of_the_workspace_has_an_import_cycle() {
    let root = crate::util::repo_dir();
    for (name, dir, root_file) in CRATES {
        let graph = module_graph_of(&root.join(dir), root_file, *name == "ingest");
        assert!(graph.len() > 3, "{name}: no modules found under {dir}");
        assert_eq!(
            cycle(&graph),
            None,
            "an import cycle in {name} ({dir}): {graph:#?}"
        );
    }
}

#[test]
fn no_crate_depends_on_one_above_it() {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(crate::util::repo_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata: exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rank = |name: &str| CRATES.iter().position(|(c, _, _)| *c == name);
    let packages = meta["packages"].as_array().unwrap();
    let mut seen = 0;
    for package in packages {
        let name = package["name"].as_str().unwrap();
        let Some(own) = rank(name) else {
            panic!("crate {name} is not placed in CRATES (tests/integration/architecture.rs)");
        };
        seen += 1;
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            // A crate's dev-dependency on itself (features for its own tests) is no layer.
            if dep_name == name || dep["path"].is_null() {
                continue;
            }
            let Some(theirs) = rank(dep_name) else {
                panic!("{name} depends on {dep_name}, which is not placed in CRATES");
            };
            assert!(
                theirs < own,
                "{name} depends on {dep_name}, a crate above it"
            );
        }
    }
    assert_eq!(
        seen,
        CRATES.len(),
        "the workspace's packages: {packages:#?}"
    );
}

/// A cycle in `graph`, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_library_modules_import_each_other_without_a_cycle_and_only_downwards() {
    let graph = module_graph();
    assert_eq!(
        cycle(&graph),
        None,
        "an import cycle in the library: {graph:#?}"
    );
    let mut upward = Vec::new();
    for (module, targets) in &graph {
        let Some(layer) = layer_of(module) else {
            panic!("module `{module}` is in no layer of LAYERS (tests/integration/architecture.rs): place it");
        };
        let allowed = LAYERS.iter().find(|(l, _, _)| *l == layer).unwrap().2;
        for target in targets {
            // `crate::extractors` and other names that are no module of the library.
            let Some(target_layer) = layer_of(target) else {
                continue;
            };
            if target_layer != layer && !allowed.contains(&target_layer) {
                upward.push(format!("{module} ({layer}) -> {target} ({target_layer})"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "modules using a layer above or beside theirs: {upward:#?}"
    );
    // What the seam is for: the pipeline, the queue and the workflows work on the services,
    // never on the facade that runs them.
    for lower in ["pipeline", "workflow", "services", "index"] {
        assert!(
            !graph.get(lower).is_some_and(|t| t.contains("ingestor")),
            "{lower} uses the Ingestor facade: {:?}",
            graph.get(lower)
        );
    }
    // The check itself finds a cycle when there is one.
    let mut broken = graph.clone();
    broken
        .entry("services".into())
        .or_default()
        .insert("pipeline".into());
    assert!(cycle(&broken).is_some());
}

#[test]
fn no_catalog_lock_outside_the_catalog_implementation() {
    let sources = workspace_sources();
    assert!(sources
        .iter()
        .any(|(rel, _)| rel == "crates/index/src/catalog.rs"));
    for (rel, text) in sources {
        if rel == "crates/index/src/catalog.rs" {
            continue;
        }
        for bad in ["Mutex<Catalog>", "Mutex<SqliteCatalog>", "catalog.lock()"] {
            assert!(
                !text.contains(bad),
                "{rel} holds the catalog's lock: `{bad}`"
            );
        }
        // `lock(&ing.catalog)`, `crate::lock(self.catalog)`: a lock taken on a catalog.
        for (at, _) in text.match_indices("lock(") {
            let argument = text[at + "lock(".len()..].split(')').next().unwrap_or("");
            assert!(
                !argument.trim().ends_with("catalog"),
                "{rel} takes a lock on a catalog: `lock({argument})`"
            );
        }
    }
    // The check finds what it looks for.
    let before = "let c = crate::lock(&ing.catalog);";
    assert!(before.match_indices("lock(").any(|(at, _)| before[at + 5..]
        .split(')')
        .next()
        .unwrap()
        .ends_with("catalog")));
}

#[test]
fn the_data_directory_layout_is_named_only_by_data_dir() {
    let names = [
        "\"catalog.sqlite\"",
        "\"catalog.json\"",
        "\"embedding-model\"",
        "\"embedding-recipe.json\"",
        "\"run-in-progress\"",
        "\"workflows.sqlite\"",
        "\"daemon.sock\"",
        "join(\"uploads\")",
        "join(\"shard\")",
        "join(\"content\")",
        "join(\"partial\")",
        "join(\"kept\")",
        "join(\"spool\")",
        "join(\"jobs\")",
        "join(\"workflows\")",
    ];
    let data_dir = std::fs::read_to_string(src().join("../crates/base/src/data_dir.rs")).unwrap();
    assert!(data_dir.contains("\"catalog.sqlite\""));
    for (rel, text) in workspace_sources() {
        if rel == "crates/base/src/data_dir.rs" {
            continue;
        }
        for name in names {
            assert!(
                !text.contains(name),
                "{rel} names a part of the data directory itself: {name}"
            );
        }
    }
}

#[test]
fn filters_reach_the_backends_typed() {
    let mut index_files = 0;
    for (rel, text) in workspace_sources() {
        if !rel.starts_with("crates/index/src/") {
            continue;
        }
        index_files += 1;
        assert!(
            !text.contains("fn to_filter(v: &Value)") && !text.contains("fn filter(value: Value)"),
            "{rel} parses a JSON filter"
        );
    }
    assert!(index_files > 10, "the index crate's files: {index_files}");
    let payload = std::fs::read_to_string(src().join("../crates/index/src/payload.rs")).unwrap();
    assert!(payload
        .contains("pub(super) fn search_filter(scope: &Scope, filter: &SearchFilter) -> Filter"));
}
