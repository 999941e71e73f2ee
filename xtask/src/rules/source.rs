//! One crate's source, parsed with `syn`: every file's module path, what each module
//! defines and imports (so a path can be followed through `use`, renames, globs and
//! re-exports to what it finally names), and every reference the judged code makes,
//! with its line.
//!
//! Test code is not judged: an item, module or file whose `cfg` requires `test` (and a
//! `#[test]` function) is skipped item by item, wherever it sits in its file. Nothing
//! else is: code after a tests module, in a `#[cfg(not(test))]` module, in a function
//! body or inside a macro's tokens is read like any other.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, Expr, ExprMethodCall, Item, ItemMod, ItemUse, Meta, Token, UseTree};

use super::RulesError;

/// A path as segments; the first is `crate` for this crate's items, else an outside
/// crate's name (`bollard`, `std`).
pub type Segments = Vec<String>;

/// One parsed `.rs` file.
pub struct SourceFile {
    /// The path below the source root, with `/` (`commands/logs.rs`).
    pub relative: String,
    /// Its module path below the crate root (`["commands", "logs"]`; `[]` for `lib.rs`
    /// and `main.rs`).
    pub module: Vec<String>,
    pub syntax: syn::File,
}

/// What a module defines and imports, for resolving the paths written in it.
#[derive(Default)]
pub struct Module {
    /// `use` leaves by the name they bring in: the path as written, in this module.
    pub uses: HashMap<String, Vec<Segments>>,
    /// `use …::*` paths as written.
    pub globs: Vec<Segments>,
    /// Names of the items declared here (functions, types, constants, modules, macros).
    pub items: HashSet<String>,
}

/// A function or method outside the adapters whose return type names an adapter.
pub struct AdapterGetter {
    /// `crate::context::Context::engine`, `crate::ops::up::dry_run_connection`.
    pub path: Segments,
    /// Whether it takes `self` (then a command reaches it by a method call).
    pub method: bool,
    /// The adapter path its return type names.
    pub returns: Segments,
}

/// What a reference is, for the rules that care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A `use` leaf (its own import, or a name a glob brings in).
    Use,
    /// A path in an expression, type, pattern or attribute, or a macro's name.
    Path,
    /// A method call: `.name(…)`; `literal_true` when its only argument is `true`.
    Method { name: String, literal_true: bool },
}

/// One reference made by judged code.
#[derive(Debug, Clone)]
pub struct Reference {
    pub line: usize,
    pub kind: Kind,
    /// What it finally names (empty for a method call).
    pub resolved: Segments,
    /// As written, joined with `::`, for the message.
    pub written: String,
}

/// The whole crate: files, modules and the getters of adapters.
pub struct Crate {
    pub root: PathBuf,
    pub files: Vec<SourceFile>,
    pub modules: HashMap<Vec<String>, Module>,
    pub getters: Vec<AdapterGetter>,
}

/// The top-level modules that are adapters: what gathers from the world.
pub const ADAPTERS: [&str; 4] = ["engine", "gpu", "host", "registry"];

/// The outside crates only an adapter may name, and the adapters' own crates (the binary
/// re-exports them as `crate::engine`, `crate::gpu`, `crate::host`, so a path through the
/// re-export resolves to the crate's name).
const ADAPTER_CRATES: [&str; 5] = [
    "bollard",
    "nvml_wrapper",
    "envctl_engine",
    "envctl_gpu",
    "envctl_host",
];

/// The name the binary's files use for the library crate.
const LIBRARY_NAME: &str = "envctl";

impl Crate {
    /// Reads and parses every `.rs` file under `root`, skipping the files the crate
    /// declares test-only (`#[cfg(test)] mod tests;` in the parent, or `#![cfg(test)]`).
    pub fn read(root: &Path) -> Result<Crate, RulesError> {
        let mut files = Vec::new();
        let mut folders = vec![root.to_path_buf()];
        while let Some(folder) = folders.pop() {
            let entries = std::fs::read_dir(&folder).map_err(|source| RulesError::Read {
                path: folder.clone(),
                source,
            })?;
            for entry in entries {
                let path = entry
                    .map_err(|source| RulesError::Read {
                        path: folder.clone(),
                        source,
                    })?
                    .path();
                if path.is_dir() {
                    folders.push(path);
                } else if path.extension().is_some_and(|extension| extension == "rs") {
                    files.push(parse_file(root, &path)?);
                }
            }
        }
        files.sort_by(|a, b| a.relative.cmp(&b.relative));
        let test_only = test_only_files(&files);
        files.retain(|file| {
            !test_only.contains(&file.relative) && !requires_test(&file.syntax.attrs)
        });
        let mut modules: HashMap<Vec<String>, Module> = HashMap::new();
        for file in &files {
            let mut collector = Collector {
                modules: &mut modules,
                stack: vec![file.module.clone()],
            };
            collector.modules.entry(file.module.clone()).or_default();
            for item in &file.syntax.items {
                collector.visit_item(item);
            }
        }
        let mut krate = Crate {
            root: root.to_path_buf(),
            files,
            modules,
            getters: Vec::new(),
        };
        krate.getters = krate.adapter_getters();
        Ok(krate)
    }

    /// Every reference the judged code of `file` makes.
    pub fn references(&self, file: &SourceFile) -> Vec<Reference> {
        let mut finder = Finder {
            krate: self,
            stack: vec![file.module.clone()],
            found: Vec::new(),
        };
        for item in &file.syntax.items {
            finder.visit_item(item);
        }
        finder.found
    }

    /// `segments`, written in `module`, followed to what it finally names.
    pub fn resolve(&self, module: &[String], segments: &[String]) -> Segments {
        self.resolve_at(module, segments, 0)
    }

    fn resolve_at(&self, module: &[String], segments: &[String], depth: usize) -> Segments {
        let Some(first) = segments.first() else {
            return Vec::new();
        };
        if depth > 24 {
            return segments.to_vec();
        }
        let rest = &segments[1..];
        match first.as_str() {
            "::" => rest.to_vec(),
            "crate" | LIBRARY_NAME => self.canonical(&joined(&["crate".into()], rest), depth),
            "self" => {
                let mut path = joined(&["crate".into()], module);
                path.extend_from_slice(rest);
                self.canonical(&path, depth)
            }
            "super" => {
                let mut base = module.to_vec();
                let mut index = 0;
                while segments.get(index).is_some_and(|word| word == "super") {
                    base.pop();
                    index += 1;
                }
                let mut path = joined(&["crate".into()], &base);
                path.extend_from_slice(&segments[index..]);
                self.canonical(&path, depth)
            }
            "Self" => segments.to_vec(),
            name => {
                let here = self.modules.get(module);
                if let Some(written) = here.and_then(|here| here.uses.get(name)) {
                    // A name imported twice (a type and a function of one name) is followed
                    // through the first import; both name the same module in practice.
                    if let Some(written) = written.first() {
                        let target = self.resolve_at(module, written, depth + 1);
                        return self.canonical(&joined(&target, rest), depth + 1);
                    }
                }
                let mut local = joined(&["crate".into()], module);
                local.push(name.to_string());
                if here.is_some_and(|here| here.items.contains(name))
                    || self.modules.contains_key(&local[1..])
                {
                    local.extend_from_slice(rest);
                    return self.canonical(&local, depth + 1);
                }
                if let Some(found) = self.through_globs(module, segments, depth) {
                    return found;
                }
                // An outside crate, the prelude, a generic or a local binding.
                segments.to_vec()
            }
        }
    }

    /// `segments` through a glob import of `module` that defines its first name.
    fn through_globs(
        &self,
        module: &[String],
        segments: &[String],
        depth: usize,
    ) -> Option<Segments> {
        let here = self.modules.get(module)?;
        let name = segments.first()?;
        for glob in &here.globs {
            let target = self.resolve_at(module, glob, depth + 1);
            if target.first().is_some_and(|first| first == "crate") {
                if self.defines(&target[1..], name) {
                    return Some(self.canonical(&joined(&target, segments), depth + 1));
                }
            } else if target
                .first()
                .is_some_and(|first| ADAPTER_CRATES.contains(&first.as_str()))
            {
                // What an outside crate's glob brings in is not listed here; a name that
                // is nothing else is taken to come from it, so the adapter is seen.
                return Some(joined(&target, segments));
            }
        }
        None
    }

    /// Whether `module` defines or imports `name`.
    fn defines(&self, module: &[String], name: &str) -> bool {
        let mut child = module.to_vec();
        child.push(name.to_string());
        self.modules
            .get(module)
            .is_some_and(|here| here.items.contains(name) || here.uses.contains_key(name))
            || self.modules.contains_key(&child)
    }

    /// An absolute `crate::…` path with every re-export on its way replaced by what it
    /// re-exports (`crate::ops::Daemon` → `crate::engine::Engine`).
    fn canonical(&self, path: &[String], depth: usize) -> Segments {
        if depth > 24 {
            return path.to_vec();
        }
        for index in 1..path.len() {
            let module = &path[1..index];
            let name = &path[index];
            let Some(here) = self.modules.get(module) else {
                return path.to_vec();
            };
            let mut child = module.to_vec();
            child.push(name.clone());
            if self.modules.contains_key(&child) {
                continue;
            }
            if let Some(written) = here.uses.get(name).and_then(|all| all.first()) {
                let target = self.resolve_at(module, written, depth + 1);
                return self.canonical_or_outside(&joined(&target, &path[index + 1..]), depth + 1);
            }
            if here.items.contains(name) {
                return path.to_vec();
            }
            if let Some(found) = self.through_globs(module, &path[index..], depth) {
                return found;
            }
            return path.to_vec();
        }
        path.to_vec()
    }

    fn canonical_or_outside(&self, path: &[String], depth: usize) -> Segments {
        if path.first().is_some_and(|first| first == "crate") {
            self.canonical(path, depth)
        } else {
            path.to_vec()
        }
    }

    /// The functions and methods outside the adapters whose return type names an
    /// adapter (its module or its outside crate).
    fn adapter_getters(&self) -> Vec<AdapterGetter> {
        let mut getters = Vec::new();
        for file in &self.files {
            if file
                .module
                .first()
                .is_some_and(|top| ADAPTERS.contains(&top.as_str()))
            {
                continue;
            }
            let mut finder = GetterFinder {
                krate: self,
                stack: vec![file.module.clone()],
                self_type: None,
                in_trait_impl: false,
                found: &mut getters,
            };
            for item in &file.syntax.items {
                finder.visit_item(item);
            }
        }
        getters
    }

    /// The adapter path named in `output`, resolved in `module`, if any.
    fn adapter_in(&self, module: &[String], output: &syn::ReturnType) -> Option<Segments> {
        let mut paths = PathCollector::default();
        paths.visit_return_type(output);
        paths
            .paths
            .iter()
            .map(|written| self.resolve(module, written))
            // An adapter's error is a value that travels up to `error.rs` by design; what
            // a command must not hold is the adapter itself.
            .find(|resolved| {
                names_adapter(resolved)
                    && !resolved.last().is_some_and(|name| name.ends_with("Error"))
            })
    }
}

/// Whether `path` names an adapter module or an adapter's outside crate.
pub fn names_adapter(path: &[String]) -> bool {
    match path {
        [first, second, ..] if first == "crate" => ADAPTERS.contains(&second.as_str()),
        [first, ..] => ADAPTER_CRATES.contains(&first.as_str()),
        [] => false,
    }
}

fn joined(head: &[String], tail: &[String]) -> Segments {
    let mut path = head.to_vec();
    path.extend_from_slice(tail);
    path
}

fn parse_file(root: &Path, path: &Path) -> Result<SourceFile, RulesError> {
    let text = std::fs::read_to_string(path).map_err(|source| RulesError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let syntax = syn::parse_file(&text).map_err(|error| RulesError::Parse {
        path: path.to_path_buf(),
        line: error.span().start().line,
        message: error.to_string(),
    })?;
    let relative = path
        .strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    let mut module: Vec<String> = relative.split('/').map(str::to_string).collect();
    if let Some(last) = module.pop() {
        let stem = last.trim_end_matches(".rs");
        if !(stem == "mod" || (module.is_empty() && (stem == "lib" || stem == "main"))) {
            module.push(stem.to_string());
        }
    }
    Ok(SourceFile {
        relative,
        module,
        syntax,
    })
}

/// The files whose parent declares them `#[cfg(test)] mod name;`.
fn test_only_files(files: &[SourceFile]) -> HashSet<String> {
    let mut declared_for_tests: HashSet<Vec<String>> = HashSet::new();
    for file in files {
        for item in &file.syntax.items {
            if let Item::Mod(declaration) = item
                && declaration.content.is_none()
                && requires_test(&declaration.attrs)
            {
                let mut module = file.module.clone();
                module.push(declaration.ident.to_string());
                declared_for_tests.insert(module);
            }
        }
    }
    files
        .iter()
        .filter(|file| {
            (1..=file.module.len())
                .any(|length| declared_for_tests.contains(&file.module[..length]))
        })
        .map(|file| file.relative.clone())
        .collect()
}

/// Whether `attributes` make their item exist only in a test build: a `cfg` whose
/// predicate requires `test` (`test`, `all(test, …)`), or `#[test]`.
pub fn requires_test(attributes: &[Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        if attribute.path().is_ident("test") {
            return true;
        }
        if !attribute.path().is_ident("cfg") {
            return false;
        }
        match &attribute.meta {
            Meta::List(list) => list
                .parse_args::<Meta>()
                .is_ok_and(|predicate| predicate_requires_test(&predicate)),
            _ => false,
        }
    })
}

fn predicate_requires_test(predicate: &Meta) -> bool {
    match predicate {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) => {
            let inner = list
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .unwrap_or_default();
            if list.path.is_ident("all") {
                inner.iter().any(predicate_requires_test)
            } else if list.path.is_ident("any") {
                !inner.is_empty() && inner.iter().all(predicate_requires_test)
            } else {
                // `not(test)` and anything else: compiled outside tests, so judged.
                false
            }
        }
        Meta::NameValue(_) => false,
    }
}

/// A `use` tree's leaves.
enum Leaf {
    Named {
        name: String,
        path: Segments,
        line: usize,
    },
    Glob {
        path: Segments,
        line: usize,
    },
}

fn leaves(tree: &UseTree, prefix: &[String], leading_colon: bool, found: &mut Vec<Leaf>) {
    let mut start = prefix.to_vec();
    if start.is_empty() && leading_colon {
        start.push("::".into());
    }
    match tree {
        UseTree::Path(path) => {
            start.push(path.ident.to_string());
            leaves(&path.tree, &start, false, found);
        }
        UseTree::Name(name) => {
            let line = name.ident.span().start().line;
            if name.ident == "self" {
                let name = start.last().cloned().unwrap_or_default();
                found.push(Leaf::Named {
                    name,
                    path: start,
                    line,
                });
            } else {
                start.push(name.ident.to_string());
                found.push(Leaf::Named {
                    name: name.ident.to_string(),
                    path: start,
                    line,
                });
            }
        }
        UseTree::Rename(rename) => {
            let line = rename.ident.span().start().line;
            if rename.ident != "self" {
                start.push(rename.ident.to_string());
            }
            found.push(Leaf::Named {
                name: rename.rename.to_string(),
                path: start,
                line,
            });
        }
        UseTree::Glob(glob) => found.push(Leaf::Glob {
            path: start,
            line: glob.star_token.spans[0].start().line,
        }),
        UseTree::Group(group) => {
            for tree in &group.items {
                leaves(tree, &start, false, found);
            }
        }
    }
}

fn segments_of(path: &syn::Path) -> Segments {
    let mut segments = Vec::new();
    if path.leading_colon.is_some() {
        segments.push("::".to_string());
    }
    segments.extend(
        path.segments
            .iter()
            .map(|segment| segment.ident.to_string()),
    );
    segments
}

/// First pass: what each module defines and imports (test code left out).
struct Collector<'a> {
    modules: &'a mut HashMap<Vec<String>, Module>,
    stack: Vec<Vec<String>>,
}

impl Collector<'_> {
    fn here(&mut self) -> &mut Module {
        let module = self.stack.last().cloned().unwrap_or_default();
        self.modules.entry(module).or_default()
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if requires_test(item_attributes(item)) {
            return;
        }
        if let Some(name) = item_name(item) {
            self.here().items.insert(name);
        }
        visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, module: &'ast ItemMod) {
        let mut path = self.stack.last().cloned().unwrap_or_default();
        path.push(module.ident.to_string());
        self.modules.entry(path.clone()).or_default();
        if module.content.is_some() {
            self.stack.push(path);
            visit::visit_item_mod(self, module);
            self.stack.pop();
        }
    }

    fn visit_item_extern_crate(&mut self, item: &'ast syn::ItemExternCrate) {
        let name = item
            .rename
            .as_ref()
            .map_or_else(|| item.ident.to_string(), |(_, rename)| rename.to_string());
        let outside = vec!["::".to_string(), item.ident.to_string()];
        self.here().uses.entry(name).or_default().push(outside);
    }

    fn visit_item_use(&mut self, item: &'ast ItemUse) {
        let mut found = Vec::new();
        leaves(&item.tree, &[], item.leading_colon.is_some(), &mut found);
        for leaf in found {
            match leaf {
                Leaf::Named { name, path, .. } if name != "_" => {
                    self.here().uses.entry(name).or_default().push(path);
                }
                Leaf::Named { .. } => {}
                Leaf::Glob { path, .. } => self.here().globs.push(path),
            }
        }
    }
}

fn item_attributes(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(item) => &item.attrs,
        Item::Enum(item) => &item.attrs,
        Item::ExternCrate(item) => &item.attrs,
        Item::Fn(item) => &item.attrs,
        Item::ForeignMod(item) => &item.attrs,
        Item::Impl(item) => &item.attrs,
        Item::Macro(item) => &item.attrs,
        Item::Mod(item) => &item.attrs,
        Item::Static(item) => &item.attrs,
        Item::Struct(item) => &item.attrs,
        Item::Trait(item) => &item.attrs,
        Item::TraitAlias(item) => &item.attrs,
        Item::Type(item) => &item.attrs,
        Item::Union(item) => &item.attrs,
        Item::Use(item) => &item.attrs,
        _ => &[],
    }
}

fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(item) => &item.ident,
        Item::Enum(item) => &item.ident,
        Item::Fn(item) => &item.sig.ident,
        Item::Mod(item) => &item.ident,
        Item::Static(item) => &item.ident,
        Item::Struct(item) => &item.ident,
        Item::Trait(item) => &item.ident,
        Item::TraitAlias(item) => &item.ident,
        Item::Type(item) => &item.ident,
        Item::Union(item) => &item.ident,
        Item::Macro(item) => item.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Every path written in a piece of syntax (the return type of a getter).
#[derive(Default)]
struct PathCollector {
    paths: Vec<Segments>,
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.paths.push(segments_of(path));
        visit::visit_path(self, path);
    }
}

/// Finds the adapter getters of one file.
struct GetterFinder<'a> {
    krate: &'a Crate,
    stack: Vec<Vec<String>>,
    self_type: Option<Segments>,
    in_trait_impl: bool,
    found: &'a mut Vec<AdapterGetter>,
}

impl<'ast> Visit<'ast> for GetterFinder<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if !requires_test(item_attributes(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, module: &'ast ItemMod) {
        let mut path = self.stack.last().cloned().unwrap_or_default();
        path.push(module.ident.to_string());
        self.stack.push(path);
        visit::visit_item_mod(self, module);
        self.stack.pop();
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        // A private function cannot be called from another layer's file.
        if matches!(function.vis, syn::Visibility::Inherited) {
            return;
        }
        let module = self.stack.last().cloned().unwrap_or_default();
        if let Some(returns) = self.krate.adapter_in(&module, &function.sig.output) {
            let mut path = joined(&["crate".into()], &module);
            path.push(function.sig.ident.to_string());
            self.found.push(AdapterGetter {
                path,
                method: false,
                returns,
            });
        }
    }

    fn visit_item_impl(&mut self, block: &'ast syn::ItemImpl) {
        if requires_test(&block.attrs) {
            return;
        }
        let module = self.stack.last().cloned().unwrap_or_default();
        let self_type = match &*block.self_ty {
            syn::Type::Path(path) => Some(self.krate.resolve(&module, &segments_of(&path.path))),
            _ => None,
        };
        let outer = std::mem::replace(&mut self.self_type, self_type);
        let outer_trait = std::mem::replace(&mut self.in_trait_impl, block.trait_.is_some());
        visit::visit_item_impl(self, block);
        self.self_type = outer;
        self.in_trait_impl = outer_trait;
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        // A private method cannot be called from another layer's file; a trait's method is
        // as visible as the trait.
        if requires_test(&function.attrs)
            || (!self.in_trait_impl && matches!(function.vis, syn::Visibility::Inherited))
        {
            return;
        }
        let module = self.stack.last().cloned().unwrap_or_default();
        if let (Some(self_type), Some(returns)) = (
            &self.self_type,
            self.krate.adapter_in(&module, &function.sig.output),
        ) {
            let mut path = self_type.clone();
            path.push(function.sig.ident.to_string());
            self.found.push(AdapterGetter {
                path,
                method: function.sig.receiver().is_some(),
                returns,
            });
        }
    }
}

/// Second pass: every reference of judged code.
struct Finder<'a> {
    krate: &'a Crate,
    stack: Vec<Vec<String>>,
    found: Vec<Reference>,
}

impl Finder<'_> {
    fn module(&self) -> Vec<String> {
        self.stack.last().cloned().unwrap_or_default()
    }

    fn push_path(&mut self, written: &[String], line: usize, kind: Kind) {
        let resolved = self.krate.resolve(&self.module(), written);
        self.found.push(Reference {
            line,
            kind,
            resolved,
            written: super::shown(written),
        });
    }

    /// A macro's tokens: parsed as expressions when they are (`format!`, `vec!`,
    /// `matches!`…, so method calls inside are seen too), else scanned for paths.
    fn visit_tokens(&mut self, tokens: &TokenStream) {
        if let Ok(expressions) = syn::parse::Parser::parse2(
            Punctuated::<Expr, Token![,]>::parse_terminated,
            tokens.clone(),
        ) {
            for expression in &expressions {
                self.visit_expr(expression);
            }
            return;
        }
        self.scan_tokens(tokens);
    }

    /// Every `a::b::c` (and `::a::b`) run of a token stream that is not an expression list.
    fn scan_tokens(&mut self, tokens: &TokenStream) {
        let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
        let mut index = 0;
        while index < trees.len() {
            let leading = is_path_separator(&trees, index);
            let start = if leading { index + 2 } else { index };
            if let Some(TokenTree::Ident(first)) = trees.get(start) {
                let mut segments = Vec::new();
                if leading {
                    segments.push("::".to_string());
                }
                segments.push(first.to_string());
                let line = first.span().start().line;
                let mut next = start + 1;
                while is_path_separator(&trees, next) {
                    match trees.get(next + 2) {
                        Some(TokenTree::Ident(ident)) => {
                            segments.push(ident.to_string());
                            next += 3;
                        }
                        _ => break,
                    }
                }
                if segments.len() > 1 {
                    self.push_path(&segments, line, Kind::Path);
                }
                index = next;
                continue;
            }
            if let Some(TokenTree::Group(group)) = trees.get(index) {
                self.scan_tokens(&group.stream());
            }
            index += 1;
        }
    }
}

fn is_path_separator(trees: &[TokenTree], index: usize) -> bool {
    matches!(
        (trees.get(index), trees.get(index + 1)),
        (Some(TokenTree::Punct(first)), Some(TokenTree::Punct(second)))
            if first.as_char() == ':' && first.spacing() == Spacing::Joint && second.as_char() == ':'
    )
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if !requires_test(item_attributes(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        if !requires_test(&function.attrs) {
            visit::visit_impl_item_fn(self, function);
        }
    }

    fn visit_item_mod(&mut self, module: &'ast ItemMod) {
        let mut path = self.module();
        path.push(module.ident.to_string());
        self.stack.push(path);
        visit::visit_item_mod(self, module);
        self.stack.pop();
    }

    fn visit_item_use(&mut self, item: &'ast ItemUse) {
        let mut found = Vec::new();
        leaves(&item.tree, &[], item.leading_colon.is_some(), &mut found);
        let module = self.module();
        for leaf in found {
            match leaf {
                Leaf::Named { path, line, .. } => self.push_path(&path, line, Kind::Use),
                Leaf::Glob { path, line } => {
                    self.push_path(&path, line, Kind::Use);
                    // What the glob brings in is named here too: a module's re-exports of
                    // an adapter reach whoever imports all of it.
                    let target = self.krate.resolve(&module, &path);
                    if target.first().is_some_and(|first| first == "crate")
                        && let Some(imported) = self.krate.modules.get(&target[1..])
                    {
                        let mut names: Vec<&String> = imported.uses.keys().collect();
                        names.sort();
                        for name in names {
                            let mut through = target.clone();
                            through.push(name.clone());
                            let resolved = self.krate.resolve(&[], &through);
                            self.found.push(Reference {
                                line,
                                kind: Kind::Use,
                                resolved,
                                written: format!("{}::* ({name})", path.join("::")),
                            });
                        }
                    }
                }
            }
        }
    }

    fn visit_item_extern_crate(&mut self, item: &'ast syn::ItemExternCrate) {
        let written = vec!["::".to_string(), item.ident.to_string()];
        self.push_path(&written, item.ident.span().start().line, Kind::Use);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let line = path
            .segments
            .first()
            .map_or(0, |segment| segment.ident.span().start().line);
        self.push_path(&segments_of(path), line, Kind::Path);
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let mut written = segments_of(&mac.path);
        let line = mac
            .path
            .segments
            .first()
            .map_or(0, |segment| segment.ident.span().start().line);
        // A bare macro name that is nothing of this crate's is the standard library's
        // (`println!`), so the rules can name it `std::println`.
        let resolved = self.krate.resolve(&self.module(), &written);
        if written.len() == 1 && resolved == written {
            written.insert(0, "std".into());
        }
        self.found.push(Reference {
            line,
            kind: Kind::Path,
            resolved: if resolved.len() == 1 {
                written.clone()
            } else {
                resolved
            },
            written: format!(
                "{}!",
                mac.path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect::<Vec<_>>()
                    .join("::")
            ),
        });
        self.visit_tokens(&mac.tokens);
    }

    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        let literal_true = call.args.len() == 1
            && matches!(
                call.args.first(),
                Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(value), .. })) if value.value
            );
        self.found.push(Reference {
            line: call.method.span().start().line,
            kind: Kind::Method {
                name: call.method.to_string(),
                literal_true,
            },
            resolved: Vec::new(),
            written: format!(".{}(…)", call.method),
        });
        visit::visit_expr_method_call(self, call);
    }
}
