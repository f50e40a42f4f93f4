//! One model of the repository's meaning, read through [`RepoFiles`] — the disk, or the
//! generator's plan over it — so the generator's lookups and `scaffold queue enqueue`'s
//! kind check ask the same questions the same way, of the tree as it is or as it will be:
//! which namespaces there are, which kinds the root registers (the checker's registry
//! reader, `check::workqueue::registry`, the one reader of `om/src/`), where a kind is
//! registered or handled (the checker's handler reader, `check::workqueue::handlers`), and
//! the lane a kind's spec names. The checker's rules read the same registry and handlers
//! through their cached context (`registry::build`, `handlers::find`: each file parsed
//! once and kept across runs), which read them with the same code.

mod files;

use std::cell::OnceCell;
use std::collections::BTreeMap;

pub use files::{OnDisk, RepoFiles};

use crate::check::workqueue::handlers::{self, Handler};
use crate::check::workqueue::registry::{self, Registry};

/// A registered kind: the lane its spec names (`None`: not a string scaffold resolves) and
/// where its spec's name is (`om/src/shipping/kinds.rs:2`, repo-relative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredKind {
    pub lane: Option<String>,
    pub at: String,
}

/// The handlers of every worker, read from their text: those found, sorted, and the files
/// that do not parse (with why).
#[derive(Debug)]
pub struct Handlers {
    pub found: Vec<Handler>,
    pub unparsed: Vec<(String, String)>,
}

/// The repository as read through `files`. What it reads is read and parsed once, on first
/// use: the model borrows `files`, so they cannot change while it answers (a generator
/// command asks it before it plans a byte, then drops it).
#[derive(Debug)]
pub struct Model<'f> {
    files: &'f dyn RepoFiles,
    /// `om/src/`'s sources.
    om: OnceCell<Result<Vec<(String, String)>, String>>,
    registry: OnceCell<Result<Registry, String>>,
    handlers: OnceCell<Result<Handlers, String>>,
}

impl<'f> Model<'f> {
    pub fn new(files: &'f dyn RepoFiles) -> Model<'f> {
        Model {
            files,
            om: OnceCell::new(),
            registry: OnceCell::new(),
            handlers: OnceCell::new(),
        }
    }

    /// Every `.rs` file under `om/src/` (path, text), sorted.
    fn om(&self) -> Result<&[(String, String)], String> {
        self.om
            .get_or_init(|| self.files.rust_sources(crate::layout::OM_SRC))
            .as_deref()
            .map_err(Clone::clone)
    }

    /// The namespaces: the folders of `om/src/` with a `kinds.rs`, except `work`, sorted.
    pub fn namespaces(&self) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for ns in self.files.folders(crate::layout::OM_SRC)? {
            if ns != "work"
                && self
                    .files
                    .text(&crate::layout::namespace_file(&ns, "kinds.rs"))?
                    .is_some()
            {
                out.push(ns);
            }
        }
        Ok(out)
    }

    /// The registry, read from every `.rs` file under `om/src/` by the checker's reader.
    pub fn registry(&self) -> Result<&Registry, String> {
        self.registry
            .get_or_init(|| Ok(registry::from_texts(self.om()?.to_vec())))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Every `impl WorkHandler for X` in the `src/` of each folder under `workers/`, read by
    /// the checker's handler reader (`check::workqueue::handlers`), its `KIND` resolved
    /// through the file's consts and the registry's strings. [`Handler::krate`] is the
    /// worker's position among `workers/`'s folders, not a workspace crate's index: these
    /// are never handed to the checker's rules, which index crates by it.
    pub fn handlers(&self) -> Result<&Handlers, String> {
        self.handlers
            .get_or_init(|| {
                let strings = &self.registry()?.strings;
                let mut files = Vec::new();
                for (i, worker) in self
                    .files
                    .folders(crate::layout::WORKERS_DIR)?
                    .iter()
                    .enumerate()
                {
                    let src = crate::layout::worker_file(worker, "src");
                    for (rel, text) in self.files.rust_sources(&src)? {
                        files.push((i, rel, text));
                    }
                }
                let (found, unparsed) = handlers::from_texts(files, strings);
                Ok(Handlers { found, unparsed })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The kinds the root registers, by name; `None` when it registers none (no registry,
    /// or an empty one). An error when the answer would be a guess: a file under `om/src/`
    /// that does not parse, a `KINDS` element that names no slice scaffold finds, a name
    /// it cannot resolve.
    pub fn kinds(&self) -> Result<Option<BTreeMap<String, RegisteredKind>>, String> {
        let reg = self.registry()?;
        // A file that does not parse may register kinds: the list would be incomplete.
        if let Some(why) = reg.incomplete() {
            return Err(why);
        }
        if !reg.found {
            return Ok(None);
        }
        if let Some(e) = reg.entries.iter().find(|e| e.specs.is_none()) {
            return Err(format!(
                "{}:{}: the KINDS element `{}` names no slice scaffold can find",
                crate::layout::ROOT_RS,
                e.at.line,
                e.text
            ));
        }
        let mut kinds = BTreeMap::new();
        for kind in reg.kinds() {
            let Some(name) = kind.name else {
                return Err(format!(
                    "{}:{}: a kind whose name scaffold cannot resolve",
                    kind.spec.path, kind.spec.name_at.line
                ));
            };
            kinds.insert(
                name,
                RegisteredKind {
                    lane: kind.lane,
                    at: format!("{}:{}", kind.spec.path, kind.spec.name_at.line),
                },
            );
        }
        Ok((!kinds.is_empty()).then_some(kinds))
    }

    /// The lane of the spec named `kind` anywhere under `om/src/` (registered or not):
    /// `Some(Some(lane))`, `Some(None)` when its lane is not a string scaffold resolves,
    /// `None` when no spec has that name.
    /// A spec the registry reader does not read (a lone `static`, one built in a function)
    /// is not found, as the checker does not find it; a file that does not parse makes
    /// "not found" an error.
    pub fn spec_lane(&self, kind: &str) -> Result<Option<Option<String>>, String> {
        let reg = self.registry()?;
        let found = reg.spec_named(kind).map(|k| k.lane);
        match (found, reg.incomplete()) {
            (None, Some(why)) => Err(why),
            (found, _) => Ok(found),
        }
    }

    /// The file and line that already register or handle `kind`: a spec under `om/src/`
    /// whose name resolves to it (a literal, a const or `Kind::Variant.as_str()`, whether
    /// or not `KINDS` reaches the spec), or a handler's `KIND` under `workers/*/src/`, read
    /// as the checker reads it (a literal, a const of its file or one of `om/src/`'s; not in
    /// a `#[cfg(test)]` item of its file). An error when the answer would be a guess and no
    /// other answer was found: a file that cannot be read or does not parse, or a handler
    /// whose `KIND` is not a string scaffold resolves.
    pub fn registered_at(&self, kind: &str) -> Result<Option<(String, usize)>, String> {
        let om = self.om()?;
        let literal = format!("\"{kind}\"");
        // The quoted name on a spec's line, in whatever shape the registry reader does not
        // read (a `static` spec, a slice typed through an alias).
        let quoted = om.iter().find_map(|(path, text)| {
            text.lines()
                .position(|l| {
                    let t = l.trim();
                    t.contains(&literal) && (t.starts_with("name:") || t.contains("WorkKindSpec"))
                })
                .map(|i| (path.clone(), i + 1))
        });
        let reg = self.registry()?;
        if let Some(k) = reg.spec_named(kind) {
            return Ok(Some((k.spec.path.clone(), k.spec.name_at.line)));
        }
        if quoted.is_some() {
            return Ok(quoted);
        }
        // A file that does not parse may name the kind through a const: no answer is a guess.
        if let Some(why) = reg.incomplete() {
            return Err(format!("{why}; fix it and run the command again"));
        }
        let handlers = self.handlers()?;
        if let Some(h) = handlers
            .found
            .iter()
            .find(|h| h.kind.as_deref() == Some(kind))
        {
            return Ok(Some((h.path.clone(), h.kind_at.line)));
        }
        // A handler in a file that does not parse may handle it: no answer is a guess.
        if let Some((path, why)) = handlers.unparsed.first() {
            return Err(format!("{path}: {why}; fix it and run the command again"));
        }
        // Nor is it when a handler's KIND is a name scaffold cannot resolve.
        if let Some(h) = handlers.found.iter().find(|h| h.kind.is_none()) {
            return Err(format!(
                "{}:{}: the KIND of handler `{}` is not a string scaffold can resolve (a \
                 literal, a const of its file or one of om/src/'s); write it so and run the \
                 command again",
                h.path, h.kind_at.line, h.ty
            ));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository held in memory: (path, text), sorted.
    #[derive(Debug)]
    struct Mem(Vec<(&'static str, &'static str)>);

    impl RepoFiles for Mem {
        fn text(&self, rel: &str) -> Result<Option<String>, String> {
            Ok(self
                .0
                .iter()
                .find(|(p, _)| *p == rel)
                .map(|(_, t)| (*t).to_owned()))
        }
        fn rust_sources(&self, folder: &str) -> Result<Vec<(String, String)>, String> {
            let prefix = format!("{}/", folder.trim_end_matches('/'));
            Ok(self
                .0
                .iter()
                .filter(|(p, _)| p.starts_with(&prefix) && p.ends_with(".rs"))
                .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
                .collect())
        }
        fn folders(&self, folder: &str) -> Result<Vec<String>, String> {
            let prefix = format!("{}/", folder.trim_end_matches('/'));
            let mut out: Vec<String> = self
                .0
                .iter()
                .filter_map(|(p, _)| Some(p.strip_prefix(&prefix)?.split_once('/')?.0.to_owned()))
                .collect();
            out.dedup();
            Ok(out)
        }
    }

    const KINDS: &str = "pub const LANE: &str = \"bulk\";\n\
        pub const SHIPPING_KINDS: &[WorkKindSpec] = &[\n\
        WorkKindSpec { name: \"A\", permission: \"p\", ..WorkKindSpec::DEFAULT },\n\
        WorkKindSpec { name: \"CHARGE\", permission: \"p\", lane: \"payments\", ..WorkKindSpec::DEFAULT },\n\
        WorkKindSpec { name: \"B\", permission: \"p\", lane: LANE, ..WorkKindSpec::DEFAULT },\n\
        WorkKindSpec { name: \"C\", permission: \"p\", lane: elsewhere(), ..WorkKindSpec::DEFAULT },\n];\n";

    fn repo() -> Mem {
        Mem(vec![
            (
                "om/src/root.rs",
                "pub const KINDS: &[&[WorkKindSpec]] = &[\n    crate::shipping::kinds::SHIPPING_KINDS,\n];\n",
            ),
            ("om/src/shipping/kinds.rs", KINDS),
            ("om/src/work/kinds.rs", ""),
            (
                "workers/billing/src/handlers/refund.rs",
                "impl WorkHandler for R {\n    const KIND: &'static str = \"REFUND\";\n}\n",
            ),
        ])
    }

    /// [`repo`] with `extra` files, kept sorted.
    fn repo_with(extra: &[(&'static str, &'static str)]) -> Mem {
        let mut files = repo();
        files.0.extend_from_slice(extra);
        files.0.sort();
        files
    }

    #[test]
    fn a_spec_names_its_lane_as_the_registry_resolves_it() {
        let files = repo();
        let m = Model::new(&files);
        let lane = |k: &str| m.spec_lane(k).expect("readable");
        assert_eq!(lane("CHARGE"), Some(Some("payments".to_owned())));
        assert_eq!(
            lane("A"),
            Some(Some(crate::layout::DEFAULT_LANE.to_owned()))
        );
        // A const is resolved (the line reader this replaced saw only literals).
        assert_eq!(lane("B"), Some(Some("bulk".to_owned())));
        assert_eq!(lane("C"), Some(None), "a lane that is not a string");
        assert_eq!(lane("D"), None);
    }

    #[test]
    fn kinds_namespaces_and_where_a_kind_is() {
        let files = repo();
        let m = Model::new(&files);
        assert_eq!(m.namespaces(), Ok(vec!["shipping".to_owned()]));
        let kinds = m.kinds().expect("readable").expect("some");
        assert_eq!(kinds.keys().collect::<Vec<_>>(), ["A", "B", "C", "CHARGE"]);
        assert_eq!(kinds["CHARGE"].at, "om/src/shipping/kinds.rs:4");
        assert_eq!(
            m.registered_at("CHARGE"),
            Ok(Some(("om/src/shipping/kinds.rs".to_owned(), 4)))
        );
        assert_eq!(
            m.registered_at("REFUND"),
            Ok(Some((
                "workers/billing/src/handlers/refund.rs".to_owned(),
                2
            )))
        );
        assert_eq!(m.registered_at("NONE"), Ok(None));
    }

    #[test]
    fn a_handler_is_found_as_the_checker_finds_it() {
        let files = repo_with(&[
            (
                "workers/billing/src/handlers/void.rs",
                "use om::shipping::kinds::VOID;\n\
             impl WorkHandler for V {\n    const KIND: &'static str = VOID;\n}\n\
             #[cfg(test)]\nmod tests {\n    impl WorkHandler for T {\n        const KIND: &'static str = \"TESTED\";\n    }\n}\n",
            ),
            (
                "om/src/shipping/consts.rs",
                "pub const VOID: &str = \"VOID\";\n",
            ),
        ]);
        let m = Model::new(&files);
        // A const of om/src/ is resolved; a handler in test code handles nothing.
        assert_eq!(
            m.registered_at("VOID"),
            Ok(Some(("workers/billing/src/handlers/void.rs".to_owned(), 3)))
        );
        assert_eq!(m.registered_at("TESTED"), Ok(None));
    }

    #[test]
    fn a_handler_file_that_does_not_parse_makes_not_found_an_error() {
        let files = repo_with(&[(
            "workers/billing/src/handlers/broken.rs",
            "impl WorkHandler for B {\n    const KIND: &'static str = \"X\"\n",
        )]);
        let m = Model::new(&files);
        let err = m.registered_at("X").expect_err("a guess");
        assert!(
            err.starts_with("workers/billing/src/handlers/broken.rs: does not parse as Rust"),
            "{err}"
        );
        // A kind found elsewhere is still found.
        assert!(m.registered_at("REFUND").is_ok_and(|at| at.is_some()));
    }

    #[test]
    fn a_handler_kind_scaffold_cannot_resolve_makes_not_found_an_error() {
        let files = repo_with(&[(
            "workers/billing/src/handlers/void.rs",
            "impl WorkHandler for Void {\n    const KIND: &'static str = crate::names::VOID;\n}\n",
        )]);
        let m = Model::new(&files);
        let err = m.registered_at("VOID").expect_err("a guess");
        assert!(
            err.starts_with("workers/billing/src/handlers/void.rs:2: the KIND of handler `Void`"),
            "{err}"
        );
        assert!(m.registered_at("REFUND").is_ok_and(|at| at.is_some()));
    }

    #[test]
    fn a_file_that_does_not_parse_makes_the_answer_an_error() {
        let files = repo_with(&[("om/src/shipping/more.rs", "pub const X: &str = ")]);
        let m = Model::new(&files);
        assert!(m.kinds().is_err());
        assert!(m.registered_at("NONE").is_err());
        assert!(m.spec_lane("NONE").is_err());
        // A kind found elsewhere is still found.
        assert!(m.registered_at("CHARGE").is_ok_and(|at| at.is_some()));
    }
}
