//! The floor plan, checked from the source: no import circles between
//! files, each layer imports only its own and lower layers, only the edge
//! and the layers above it speak HTTP (actix-web), and no area's HTTP
//! imports another area's. `docs/decisions/foundations.md` says why the layers are
//! these.
use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// The layers, lowest first. A module is placed by its most specific entry
/// here (`region::router` before `region`; `*` stands for any one name, so
/// `areas::*::http` is every area's HTTP); a new top-level module must be
/// placed before the test passes.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "kernel",
        &[
            "application",
            "audit",
            "build",
            "cache",
            "clock",
            "config",
            "crypto",
            "error",
            "events",
            "failpoint",
            "generated_docs",
            "json_schema",
            "memory",
            "oauth",
            "region",
            "shutdown",
            "storage",
            "telemetry",
            "tokens",
        ],
    ),
    ("tenancy", &["tenancy", "region::router", "region::moves", "events::delivery"]),
    ("areas", &["areas"]),
    ("edge", &["area", "auth", "http", "openapi::fields", "openapi::security", "state", "region::forward"]),
    ("handlers", &["areas::*::http", "routes::*"]),
    ("assembly", &["routes", "openapi", "region::dispatch"]),
    ("root", &["startup", "bootstrap", "main", "lib"]),
];

/// The layers that may import actix-web.
const HTTP_LAYERS: &[&str] = &["edge", "handlers", "assembly", "root"];

/// A source file: its module path (`["tenancy", "registry"]`) and its text
/// without comments and without its `#[cfg(test)] mod tests`.
struct Source {
    module: Vec<String>,
    file: String,
    code: String,
}

fn sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            let mut module: Vec<String> = relative.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
            if module.last().is_some_and(|last| last == "mod") {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            let code = text
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .map(|line| line.split(" // ").next().unwrap())
                .collect::<Vec<_>>()
                .join("\n");
            Source { module, file: relative, code }
        })
        .collect()
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Every module path a file names: its `use crate::…`, `use super::…` and
/// `use self::…` trees and its inline `crate::…` and `super::…` paths. (A
/// path continued from an imported name, `users::http::X` after `use
/// crate::areas::users`, is not followed: the file still imports
/// `users`, and its own layer's rule still holds.)
fn named_paths(source: &Source) -> Vec<Vec<String>> {
    let parent = &source.module[..source.module.len().saturating_sub(1)];
    let bases: [(&str, &[String]); 3] = [("crate::", &[]), ("super::", parent), ("self::", &source.module)];
    let mut paths = Vec::new();
    // `use` trees (possibly over several lines), cut out of what follows.
    let mut outside_use = String::new();
    let mut rest = source.code.as_str();
    while let Some(at) = rest.find("use ") {
        let starts_word =
            at == 0 || !(rest.as_bytes()[at - 1].is_ascii_alphanumeric() || rest.as_bytes()[at - 1] == b'_');
        let after = &rest[at + 4..];
        let end = after.find(';').unwrap_or(after.len());
        let tree = after[..end].trim();
        match bases.iter().find(|(prefix, _)| tree.starts_with(prefix)).filter(|_| starts_word) {
            Some((prefix, base)) => {
                paths.extend(use_paths(&tree[prefix.len()..], base));
                outside_use.push_str(&rest[..at]);
                rest = &after[end..];
            }
            None => {
                outside_use.push_str(&rest[..at + 4]);
                rest = after;
            }
        }
    }
    outside_use.push_str(rest);
    // Inline paths.
    let code = outside_use.as_str();
    for (prefix, base) in &bases[..2] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[at + prefix.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut full: Vec<String> = base.to_vec();
            full.extend(path.split("::").filter(|s| !s.is_empty()).map(str::to_owned));
            paths.push(full);
        }
    }
    paths
}

/// The leaf paths of a `use` tree (`{a::b, c::{d, e}}`), each after `base`.
fn use_paths(tree: &str, base: &[String]) -> Vec<Vec<String>> {
    let tokens = tokenize(tree);
    let mut out = Vec::new();
    let mut at = 0;
    tree_leaves(&tokens, &mut at, base.to_vec(), &mut out);
    out
}

fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        match c {
            '{' | '}' | ',' | '*' => tokens.push(c.to_string()),
            ':' if chars.peek() == Some(&':') => {
                chars.next();
                tokens.push("::".into());
            }
            _ => {}
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

fn tree_leaves(tokens: &[String], at: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut current = prefix;
    while *at < tokens.len() {
        let token = tokens[*at].as_str();
        match token {
            "::" => *at += 1,
            "{" => {
                *at += 1;
                while *at < tokens.len() && tokens[*at] != "}" {
                    tree_leaves(tokens, at, current.clone(), out);
                    if *at < tokens.len() && tokens[*at] == "," {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            "," | "}" => break,
            "as" => *at += 2,
            "*" | "self" => *at += 1,
            word => {
                current.push(word.to_owned());
                *at += 1;
            }
        }
    }
    out.push(current);
}

/// The file a module path names: its longest prefix that is a file.
fn file_of<'a>(files: &'a BTreeMap<Vec<String>, String>, path: &[String]) -> Option<&'a String> {
    (1..=path.len()).rev().find_map(|n| files.get(&path[..n]))
}

/// Which file imports which.
fn imports() -> (Vec<Source>, BTreeMap<String, BTreeSet<String>>) {
    let sources = sources();
    let files: BTreeMap<Vec<String>, String> = sources.iter().map(|s| (s.module.clone(), s.file.clone())).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in &sources {
        let targets = edges.entry(source.file.clone()).or_default();
        for path in named_paths(source) {
            if let Some(target) = file_of(&files, &path).filter(|t| **t != source.file) {
                targets.insert(target.clone());
            }
        }
    }
    (sources, edges)
}

/// The layer of a module path, by its most specific entry in [`LAYERS`].
fn layer_of(module: &[String]) -> Option<(usize, &'static str)> {
    let matches = |entry: &str| {
        let names: Vec<&str> = entry.split("::").collect();
        names.len() <= module.len() && names.iter().zip(module).all(|(name, part)| *name == "*" || name == part)
    };
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(rank, (layer, entries))| entries.iter().map(move |entry| (rank, *layer, *entry)))
        .filter(|(_, _, entry)| matches(entry))
        .max_by_key(|(_, _, entry)| (entry.split("::").count(), entry.matches('*').count() == 0))
        .map(|(rank, layer, _)| (rank, layer))
}

/// The area of a file in `areas/<area>/…`, and whether it is that area's HTTP.
fn area_of(module: &[String]) -> Option<(&str, bool)> {
    match module {
        [areas, area, rest @ ..] if areas == "areas" => {
            Some((area.as_str(), rest.first().is_some_and(|part| part == "http")))
        }
        _ => None,
    }
}

/// Tarjan's strongly connected components of more than one file.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, file: &'a str) {
            let index = self.index.len();
            self.index.insert(file, index);
            self.low.insert(file, index);
            self.stack.push(file);
            for next in self.edges.get(file).into_iter().flatten() {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[file].min(self.low[next.as_str()]);
                    self.low.insert(file, low);
                } else if self.stack.contains(&next.as_str()) {
                    let low = self.low[file].min(self.index[next.as_str()]);
                    self.low.insert(file, low);
                }
            }
            if self.low[file] == self.index[file] {
                let at = self.stack.iter().rposition(|f| *f == file).unwrap();
                let component: Vec<String> = self.stack.drain(at..).map(str::to_owned).collect();
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for file in edges.keys() {
        if !walk.index.contains_key(file.as_str()) {
            walk.visit(file);
        }
    }
    walk.found
}

#[test]
fn no_file_imports_itself_through_others() {
    let (sources, edges) = imports();
    assert!(sources.len() > 150, "the source was read: {} files", sources.len());
    let total: usize = edges.values().map(BTreeSet::len).sum();
    assert!(total > 500, "the imports were read: {total}");
    assert_eq!(circles(&edges), Vec::<Vec<String>>::new(), "import circles");
}

#[test]
fn each_layer_imports_only_its_own_and_lower_layers() {
    let (sources, edges) = imports();
    let layer_of_file: BTreeMap<&str, Option<(usize, &str)>> =
        sources.iter().map(|s| (s.file.as_str(), layer_of(&s.module))).collect();
    let unplaced: Vec<&&str> = layer_of_file.iter().filter(|(_, l)| l.is_none()).map(|(f, _)| f).collect();
    assert!(unplaced.is_empty(), "files of no layer (place their module in LAYERS): {unplaced:?}");
    let mut upward = Vec::new();
    for (file, targets) in &edges {
        let (rank, layer) = layer_of_file[file.as_str()].unwrap();
        for target in targets {
            let (target_rank, target_layer) = layer_of_file[target.as_str()].unwrap();
            if target_rank > rank {
                upward.push(format!("{file} ({layer}) imports {target} ({target_layer})"));
            }
        }
    }
    assert_eq!(upward, Vec::<String>::new());
}

#[test]
fn only_the_edge_speaks_http() {
    let speaking: Vec<String> = sources()
        .iter()
        .filter(|s| layer_of(&s.module).is_some_and(|(_, layer)| !HTTP_LAYERS.contains(&layer)))
        .filter(|s| s.code.contains("actix_web"))
        .map(|s| s.file.clone())
        .collect();
    assert_eq!(speaking, Vec::<String>::new(), "files below the edge that import actix-web");
}

/// An area's HTTP uses its own area and what other areas publish, never
/// another area's HTTP: a shape two areas answer (a user, a key, a sign-in)
/// is a view in the area that owns it.
#[test]
fn no_area_reaches_into_another_areas_http() {
    let (sources, edges) = imports();
    let module_of: BTreeMap<&str, &[String]> = sources.iter().map(|s| (s.file.as_str(), s.module.as_slice())).collect();
    let mut reaching = Vec::new();
    for (file, targets) in &edges {
        let Some((area, _)) = area_of(module_of[file.as_str()]) else { continue };
        for target in targets {
            if let Some((other, true)) = area_of(module_of[target.as_str()]) {
                if other != area {
                    reaching.push(format!("{file} imports {target}"));
                }
            }
        }
    }
    assert_eq!(reaching, Vec::<String>::new());
}

#[test]
fn a_module_is_placed_by_its_most_specific_entry() {
    let path = |p: &str| p.split("::").map(str::to_owned).collect::<Vec<_>>();
    let layer = |p: &str| layer_of(&path(p)).map(|(_, layer)| layer);
    assert_eq!(layer("areas::hooks::http"), Some("handlers"));
    assert_eq!(layer("areas::auth::http::sign_in"), Some("handlers"));
    assert_eq!(layer("areas::hooks::restrictions"), Some("areas"));
    assert_eq!(layer("areas"), Some("areas"));
    assert_eq!(layer("routes"), Some("assembly"));
    assert_eq!(layer("routes::ops"), Some("handlers"));
    assert_eq!(layer("region::dispatch"), Some("assembly"));
    assert_eq!(layer("region::forward"), Some("edge"));
    assert_eq!(layer("region"), Some("kernel"));
    assert_eq!(layer("nowhere"), None);
    assert_eq!(area_of(&path("areas::auth::http::me")), Some(("auth", true)));
    assert_eq!(area_of(&path("areas::auth::view")), Some(("auth", false)));
    assert_eq!(area_of(&path("routes::ops")), None);
}

#[test]
fn the_reader_finds_paths_in_use_trees_and_inline() {
    let source = Source {
        module: vec!["tenancy".into(), "registry".into()],
        file: "tenancy/registry.rs".into(),
        code: "use super::{actor::{Deps, Handle}, state::TenantState};\nuse crate::{error::ApiError as E, storage::*};\nfn f() { crate::clock::now(); }".into(),
    };
    let paths: BTreeSet<String> = named_paths(&source).into_iter().map(|p| p.join("::")).collect();
    for expected in [
        "tenancy::actor::Deps",
        "tenancy::actor::Handle",
        "tenancy::state::TenantState",
        "error::ApiError",
        "storage",
        "clock::now",
    ] {
        assert!(paths.contains(expected), "{expected} in {paths:?}");
    }
}
