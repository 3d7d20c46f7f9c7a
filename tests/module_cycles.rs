//! No import cycles between the library's modules: reads every `src/**/*.rs` of the library,
//! finds the paths each one uses (`crate::…` and `super::…`, in `use` lines or inline), and
//! builds the graph of files, an edge from a file to each file holding what it names (through
//! `pub use` re-exports, to the file that defines the item). Fails on any cycle, printing it.
//! And the merging layers hold (issue 22): the rules and IR edits every merge shares (`policy`,
//! `edit`) use no way of merging, and the exact merge (`merge`) and similar merging (`similar`)
//! are siblings that use neither each other nor what stands above them.
//!
//! Test code is left out (files named `tests.rs`, and `#[cfg(test)] mod tests { … }` at the end
//! of a file): a test may use what it likes. So are the binary's files (`main.rs`, `cli/`),
//! which are another crate. Comments are ignored, so doc links draw no edge.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// A module of the library: its path below the crate (`["merge", "thunk"]`), empty for the root.
type ModPath = Vec<String>;

#[test]
fn the_library_has_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = ModuleGraph::read(&src);
    assert!(
        graph.files.len() > 40,
        "the library's files were found: {:?}",
        graph.files.keys()
    );
    let cycles: Vec<String> = graph
        .strongly_connected()
        .into_iter()
        .filter(|group| group.len() > 1)
        .map(|group| {
            let files: Vec<_> = group.iter().map(|m| graph.files[m].display()).collect();
            format!(
                "{}\n  (all of {})",
                graph.show_cycle(&group),
                files
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles between modules (file → file it uses):\n{}",
        cycles.join("\n")
    );
}

/// Folders of the library and the folders each may not use, neither by a path written in it
/// nor by what such a path resolves to: the bottom layer uses no way of merging; the ways of
/// merging use neither each other nor the pass on top (`global` uses `similar`'s half of global
/// merging, `similar/across.rs`, so it is not listed as a sibling of `similar`).
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("policy", &["edit", "merge", "similar", "global", "pass"]),
    ("edit", &["merge", "similar", "global", "pass"]),
    ("merge", &["similar", "global", "pass"]),
    ("similar", &["merge", "global", "pass"]),
    ("global", &["merge", "pass"]),
];

#[test]
fn the_merging_layers_hold() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = ModuleGraph::read(&src);
    for (folder, _) in FORBIDDEN {
        assert!(
            graph
                .files
                .keys()
                .any(|m| m.first().map(String::as_str) == Some(folder)),
            "src/{folder} exists"
        );
    }
    let violations = graph.layer_violations(FORBIDDEN);
    assert!(
        violations.is_empty(),
        "uses across the layers:\n{}",
        violations.join("\n")
    );
}

#[test]
fn a_use_across_the_layers_is_found() {
    let dir = std::env::temp_dir().join(format!("clif-merge-layers-{}", std::process::id()));
    let write = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod policy;\nmod merge;\nmod similar;\n");
    write("policy/mod.rs", "pub enum Mode { Safe }\n");
    // A path through `merge`'s re-export, and one resolved to `similar`'s file.
    write(
        "merge/mod.rs",
        "pub use crate::policy::Mode;\nfn f() { crate::similar::g() }\n",
    );
    write("similar/mod.rs", "use crate::merge::Mode;\npub fn g() {}\n");
    let graph = ModuleGraph::read(&dir);
    let violations = graph.layer_violations(&[
        ("policy", &["merge", "similar"]),
        ("merge", &["similar"]),
        ("similar", &["merge"]),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        violations,
        [
            "merge/mod.rs uses similar::g (in similar/mod.rs)",
            "similar/mod.rs uses merge::Mode (in policy/mod.rs)",
        ]
    );
}

#[test]
fn a_cycle_is_found_and_printed() {
    let dir = std::env::temp_dir().join(format!("clif-merge-cycles-{}", std::process::id()));
    let write = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub use c::Thing;\n",
    );
    write("a/mod.rs", "mod x;\npub use x::X;\n");
    write("a/x.rs", "use crate::b::{self, Y};\npub struct X;\n");
    write(
        "b.rs",
        "// crate::c::Nothing in a comment is no edge\npub struct Y(crate::Thing);\n\
         #[cfg(test)]\nmod tests {\n    use crate::a::X;\n}\n",
    );
    write(
        "c.rs",
        "pub struct Thing;\nfn f() -> super::a::X { todo!() }\n",
    );
    let graph = ModuleGraph::read(&dir);
    let groups: Vec<_> = graph
        .strongly_connected()
        .into_iter()
        .filter(|g| g.len() > 1)
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(
        graph.show_cycle(&groups[0]),
        "a/x.rs → b.rs → c.rs → a/x.rs"
    );
}

/// The library's files and what each uses.
struct ModuleGraph {
    /// Every file by module path, with the file's path below `src/`.
    files: BTreeMap<ModPath, PathBuf>,
    /// The paths each file uses, resolved to absolute paths below the crate.
    uses: BTreeMap<ModPath, Vec<Vec<String>>>,
    /// Each file's `pub use` re-exports: a name to the absolute path it stands for.
    reexports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
}

impl ModuleGraph {
    fn read(src: &Path) -> ModuleGraph {
        let mut graph = ModuleGraph {
            files: BTreeMap::new(),
            uses: BTreeMap::new(),
            reexports: BTreeMap::new(),
        };
        for file in rust_files(src) {
            let relative = file.strip_prefix(src).unwrap().to_path_buf();
            if let Some(module) = module_path(&relative) {
                graph.files.insert(module, relative);
            }
        }
        for (module, relative) in &graph.files {
            let text = library_code(&std::fs::read_to_string(src.join(relative)).unwrap());
            // A path may start at the crate, the parent, the file itself, or a child module.
            let children = graph
                .files
                .keys()
                .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
                .map(|m| m.last().unwrap().as_str());
            let starts: BTreeSet<&str> = ["crate", "super", "self"]
                .into_iter()
                .chain(children)
                .collect();
            let mut uses = Vec::new();
            let mut reexports = BTreeMap::new();
            for (path, is_reexport) in used_paths(&text, &starts) {
                let Some(absolute) = absolute(module, &path) else {
                    continue;
                };
                // A re-export is a way through to the file that defines the item, not a use:
                // a `mod.rs` that re-exports its children's items while they use its own is
                // no cycle.
                if is_reexport {
                    if let Some(name) = absolute.last().filter(|n| *n != "*") {
                        reexports.insert(name.clone(), absolute.clone());
                    }
                } else {
                    uses.push(absolute);
                }
            }
            graph.uses.insert(module.clone(), uses);
            graph.reexports.insert(module.clone(), reexports);
        }
        graph
    }

    /// The file defining what `path` names: the longest module prefix of it that is a file,
    /// followed through that file's re-exports.
    fn file_of(&self, path: &[String]) -> Option<ModPath> {
        let mut path = path.to_vec();
        // Re-exports may chain; a chain longer than the number of files would be a loop.
        for _ in 0..=self.files.len() {
            let module = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|m| self.files.contains_key(m))?;
            let Some(name) = path.get(module.len()) else {
                return Some(module);
            };
            match self.reexports[&module].get(name) {
                Some(target) if target.as_slice() != path.as_slice() => {
                    let mut next = target.clone();
                    next.extend_from_slice(&path[module.len() + 1..]);
                    path = next;
                }
                _ => return Some(module),
            }
        }
        None
    }

    /// Every use by a file of a folder in `forbidden` of a folder it may not use, as
    /// `merge/x.rs uses similar::y (in similar/y.rs)`: by the path written, or by the file
    /// that path resolves to.
    fn layer_violations(&self, forbidden: &[(&str, &[&str])]) -> Vec<String> {
        let folder = |m: &[String]| m.first().cloned().unwrap_or_default();
        let mut violations = Vec::new();
        for (module, uses) in &self.uses {
            let Some((_, banned)) = forbidden.iter().find(|(f, _)| *f == folder(module)) else {
                continue;
            };
            for path in uses {
                let target = self.file_of(path);
                let reached = [Some(folder(path)), target.as_deref().map(folder)];
                if reached
                    .iter()
                    .flatten()
                    .any(|f| banned.contains(&f.as_str()))
                {
                    let file =
                        target.map_or("?".to_owned(), |t| self.files[&t].display().to_string());
                    violations.push(format!(
                        "{} uses {} (in {file})",
                        self.files[module].display(),
                        path.join("::"),
                    ));
                }
            }
        }
        violations.sort();
        violations.dedup();
        violations
    }

    /// The files `module` uses, itself left out.
    fn edges(&self, module: &ModPath) -> BTreeSet<ModPath> {
        self.uses[module]
            .iter()
            .filter_map(|path| self.file_of(path))
            .filter(|target| target != module)
            .collect()
    }

    /// The strongly connected groups of files (Tarjan's algorithm).
    fn strongly_connected(&self) -> Vec<BTreeSet<ModPath>> {
        let edges: BTreeMap<&ModPath, BTreeSet<ModPath>> =
            self.files.keys().map(|m| (m, self.edges(m))).collect();
        let mut tarjan = Tarjan {
            edges: &edges,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            groups: Vec::new(),
        };
        for module in self.files.keys() {
            if !tarjan.index.contains_key(module) {
                tarjan.visit(module);
            }
        }
        tarjan.groups
    }

    /// One shortest cycle through the group's first file, as `a.rs → b.rs → a.rs`.
    fn show_cycle(&self, group: &BTreeSet<ModPath>) -> String {
        let start = group.iter().next().unwrap();
        let mut came_from: BTreeMap<ModPath, ModPath> = BTreeMap::new();
        let mut queue = VecDeque::from([start.clone()]);
        let mut last = None;
        'search: while let Some(module) = queue.pop_front() {
            for next in self
                .edges(&module)
                .into_iter()
                .filter(|n| group.contains(n))
            {
                if &next == start {
                    last = Some(module);
                    break 'search;
                }
                if !came_from.contains_key(&next) {
                    came_from.insert(next.clone(), module.clone());
                    queue.push_back(next);
                }
            }
        }
        let mut cycle = vec![start.clone()];
        let mut at = last.expect("a strongly connected group has a cycle");
        while &at != start {
            cycle.push(at.clone());
            at = came_from[&at].clone();
        }
        cycle.push(start.clone());
        cycle.reverse();
        cycle
            .iter()
            .map(|m| self.files[m].display().to_string())
            .collect::<Vec<_>>()
            .join(" → ")
    }
}

struct Tarjan<'g> {
    edges: &'g BTreeMap<&'g ModPath, BTreeSet<ModPath>>,
    index: BTreeMap<ModPath, usize>,
    low: BTreeMap<ModPath, usize>,
    stack: Vec<ModPath>,
    on_stack: BTreeSet<ModPath>,
    groups: Vec<BTreeSet<ModPath>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, module: &ModPath) {
        let n = self.index.len();
        self.index.insert(module.clone(), n);
        self.low.insert(module.clone(), n);
        self.stack.push(module.clone());
        self.on_stack.insert(module.clone());
        for next in &self.edges[module] {
            if !self.index.contains_key(next) {
                self.visit(next);
                let low = self.low[module].min(self.low[next]);
                self.low.insert(module.clone(), low);
            } else if self.on_stack.contains(next) {
                let low = self.low[module].min(self.index[next]);
                self.low.insert(module.clone(), low);
            }
        }
        if self.low[module] == self.index[module] {
            let mut group = BTreeSet::new();
            loop {
                let member = self.stack.pop().unwrap();
                self.on_stack.remove(&member);
                let done = &member == module;
                group.insert(member);
                if done {
                    break;
                }
            }
            self.groups.push(group);
        }
    }
}

/// Every `.rs` file below `dir`, in sorted order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The module a file below `src/` is, or None for files that are not the library's modules:
/// the binary's (`main.rs`, `cli/`) and test-only files (`tests.rs`).
fn module_path(relative: &Path) -> Option<ModPath> {
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let (file, folders) = parts.split_last()?;
    if parts == ["main.rs"] || parts[0] == "cli" || file == "tests.rs" {
        return None;
    }
    let mut module = folders.to_vec();
    match file.strip_suffix(".rs")? {
        "lib" | "mod" => {}
        name => module.push(name.to_owned()),
    }
    Some(module)
}

/// The text without comments and without the test module at its end.
fn library_code(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod tests {"))
        {
            break;
        }
        // `//` that starts a comment (not one inside a string: the library has none on a line
        // that also uses a path).
        let line = match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Every path in `code` whose first segment is one of `starts` (`crate`, `super`, `self`, a
/// child module), use trees expanded (`crate::a::{b, c::d}` gives `crate::a::b` and
/// `crate::a::c::d`), each with whether it is a `pub use` (a re-export).
fn used_paths(code: &str, starts: &BTreeSet<&str>) -> Vec<(Vec<String>, bool)> {
    let chars: Vec<char> = code.chars().collect();
    let mut paths = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let after_boundary =
            at == 0 || !is_ident(chars[at - 1]) && !matches!(chars[at - 1], '$' | ':' | '.');
        let word_end = (at..chars.len())
            .find(|&i| !is_ident(chars[i]))
            .unwrap_or(chars.len());
        let word: String = chars[at..word_end].iter().collect();
        let starts_path = after_boundary
            && starts.contains(word.as_str())
            && chars.get(word_end) == Some(&':')
            && chars.get(word_end + 1) == Some(&':');
        if !starts_path {
            at = word_end.max(at + 1);
            continue;
        }
        let statement_start = chars[..at]
            .iter()
            .rposition(|&c| c == ';' || c == '}' || c == '{')
            .map_or(0, |p| p + 1);
        let before: String = chars[statement_start..at].iter().collect();
        let is_reexport =
            before.trim().starts_with("pub use") || before.trim().starts_with("pub(crate) use");
        let mut found = Vec::new();
        at = parse_tree(&chars, at, Vec::new(), &mut found);
        paths.extend(found.into_iter().map(|p| (p, is_reexport)));
    }
    paths
}

/// Parses a use tree at `at` under `prefix`, adding each full path to `found`; returns where
/// it ends.
fn parse_tree(
    chars: &[char],
    mut at: usize,
    mut prefix: Vec<String>,
    found: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        at = skip_space(chars, at);
        if chars.get(at) == Some(&'{') {
            at += 1;
            loop {
                at = skip_space(chars, at);
                match chars.get(at) {
                    Some('}') => return at + 1,
                    Some(',') => at += 1,
                    None => return at,
                    _ => at = parse_tree(chars, at, prefix.clone(), found),
                }
            }
        }
        let start = at;
        while at < chars.len() && (is_ident(chars[at]) || chars[at] == '*') {
            at += 1;
        }
        if at == start {
            found.push(prefix);
            return at;
        }
        prefix.push(chars[start..at].iter().collect());
        let next = skip_space(chars, at);
        if chars.get(next) == Some(&':') && chars.get(next + 1) == Some(&':') {
            at = next + 2;
        } else {
            found.push(prefix);
            return at;
        }
    }
}

fn skip_space(chars: &[char], mut at: usize) -> usize {
    while chars.get(at).is_some_and(|c| c.is_whitespace()) {
        at += 1;
    }
    at
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `path` (starting with `crate`, `super`, `self` or a child module, seen in `module`) as a path
/// from the crate root, `self` segments dropped.
fn absolute(module: &ModPath, path: &[String]) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut absolute = match first.as_str() {
        "crate" => Vec::new(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        "self" => module.clone(),
        child => [module.as_slice(), &[child.to_owned()]].concat(),
    };
    for segment in rest {
        match segment.as_str() {
            "super" => {
                absolute.pop()?;
            }
            "self" => {}
            _ => absolute.push(segment.clone()),
        }
    }
    Some(absolute)
}
