use super::*;

fn names(src: &str) -> Vec<(String, RefKind, DepKind, usize, usize)> {
    let cands: Candidates = ["acme_infra", "acme_apps", "acme_om"]
        .into_iter()
        .map(String::from)
        .collect();
    extract(src, &cands)
        .expect("parses")
        .refs
        .into_iter()
        .map(|r| (r.name, r.kind, r.scope, r.line, r.column))
        .collect()
}

#[test]
fn finds_grouped_nested_renamed_and_qualified_refs() {
    let src = "use {acme_infra::{a, b::c}, std::fmt};\n\
               pub use acme_om::Kind as K;\n\
               extern crate acme_apps as apps;\n\
               fn f() -> ::acme_om::T { apps::run(); let x: acme_infra::X = acme_infra::make(); x }\n\
               #[cfg(test)]\nmod tests { use acme_infra::testing; }\n\
               #[cfg(not(test))]\nfn g() { acme_om::go() }\n";
    let got = names(src);
    assert!(
        got.contains(&("acme_infra".into(), RefKind::Use, DepKind::Normal, 1, 6)),
        "{got:?}"
    );
    assert!(got.contains(&("acme_om".into(), RefKind::Use, DepKind::Normal, 2, 9)));
    assert!(got.contains(&(
        "acme_apps".into(),
        RefKind::ExternCrate,
        DepKind::Normal,
        3,
        14
    )));
    assert!(
        got.iter()
            .any(|r| r.0 == "acme_apps" && r.1 == RefKind::Path && r.3 == 4)
    );
    assert!(
        got.iter()
            .any(|r| r.0 == "acme_om" && r.1 == RefKind::Path && r.3 == 4)
    );
    assert_eq!(
        got.iter()
            .filter(|r| r.0 == "acme_infra" && r.3 == 4)
            .count(),
        2
    );
    assert!(got.contains(&("acme_infra".into(), RefKind::Use, DepKind::Dev, 6, 17)));
    assert!(
        got.iter()
            .any(|r| r.0 == "acme_om" && r.3 == 8 && r.2 == DepKind::Normal)
    );
}

/// Deep generics and long runs of prefix operators are refused before either parser
/// recurses into them; comparisons spread over statements are not nesting.
#[test]
fn refuses_deep_generics_and_prefix_runs_but_not_many_comparisons() {
    let deep = [
        format!(
            "type T = {}u8{};\n",
            "Vec<".repeat(30_000),
            ">".repeat(30_000)
        ),
        format!("fn f() {{ let _ = {}x; }}\n", "&".repeat(200_000)),
        format!("fn f() {{ let _ = {}1; }}\n", "- ".repeat(200_000)),
    ];
    for text in &deep {
        let err = extract(text, &Candidates::default()).expect_err("too deep");
        assert!(err.message.contains("nests deeper"), "{}", err.message);
    }
    let comparisons = "fn f(a: u8) -> u8 { if a < 1 { return 1; }\n".to_owned()
        + &"    if a < 2 { return 2; }\n".repeat(5_000)
        + "    0 }\n// ----------------------------------------\n";
    assert!(extract(&comparisons, &Candidates::default()).is_ok());
}

/// An alias on one line does not rename another line's `extern crate` (cfg
/// alternatives), and applies only to the references after it.
#[test]
fn an_extern_crate_line_names_its_own_crate() {
    let src = "#[cfg(feature = \"a\")] extern crate acme_infra;\n\
               #[cfg(not(feature = \"a\"))] extern crate acme_om as acme_infra;\n\
               fn f() { acme_infra::x(); }\n";
    let got = names(src);
    assert!(
        got.contains(&(
            "acme_infra".into(),
            RefKind::ExternCrate,
            DepKind::Normal,
            1,
            36
        )),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|r| r.0 == "acme_om" && r.1 == RefKind::ExternCrate),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|r| r.0 == "acme_om" && r.1 == RefKind::Path && r.3 == 3),
        "{got:?}"
    );
}

/// Code under `any(…, test)` is also built without `test`: not test-only.
#[test]
fn only_cfg_predicates_that_require_test_make_code_test_only() {
    let src = "#[cfg(any(feature = \"x\", test))]\nmod a { use acme_infra::one; }\n\
               #[cfg(all(feature = \"x\", test))]\nmod b { use acme_infra::two; }\n\
               #[cfg(any(test, all(test, unix)))]\nfn c() { acme_om::three(); }\n";
    let got = names(src);
    let scope = |line| got.iter().find(|r| r.3 == line).map(|r| r.2);
    assert_eq!(scope(2), Some(DepKind::Normal), "{got:?}");
    assert_eq!(scope(4), Some(DepKind::Dev), "{got:?}");
    assert_eq!(scope(6), Some(DepKind::Dev), "{got:?}");
}

#[test]
fn local_modules_shadow_crate_names_and_single_segments_are_ignored() {
    let src = "mod acme_om;\nfn f() { acme_om::x(); let acme_infra = 1; let _ = acme_infra; }\n";
    assert!(names(src).is_empty());
}

#[test]
fn reports_parse_failures_with_a_position() {
    let err = extract("fn f( {\n", &Candidates::default()).expect_err("invalid");
    assert_eq!(err.line, 1);
    assert!(err.column >= 1);
}

#[test]
fn refuses_nesting_deeper_than_the_limit_instead_of_overflowing() {
    let deep = format!(
        "fn main() {{ let _x = {}1{}; }}\n",
        "(".repeat(depth::MAX_DEPTH + 5),
        ")".repeat(depth::MAX_DEPTH + 5)
    );
    let err = extract(&deep, &Candidates::default()).expect_err("too deep");
    assert!(err.message.contains("nests deeper"));
    assert_eq!(err.line, 1);
    let ok = format!(
        "fn main() {{ let _x = {}1{}; }}\n",
        "(".repeat(200),
        ")".repeat(200)
    );
    assert!(extract(&ok, &Candidates::default()).is_ok());
}

/// A tool's attribute is not a crate edge however the workspace names its crates; a
/// crate's attribute is (issue "check on real workspaces", item 4).
#[test]
fn tool_attributes_name_no_crate() {
    let cands: Candidates = ["rustfmt", "clippy", "rust_analyzer", "acme"]
        .into_iter()
        .map(String::from)
        .collect();
    let src = "#[rustfmt::skip]\n#[clippy::allow(x)]\nfn f() {}\n#[rust_analyzer::rust_fixture]\nfn g() {}\n#[acme::attr]\nfn h() {}\n";
    let refs = extract(src, &cands).expect("parses").refs;
    let named: Vec<_> = refs.iter().map(|r| (r.name.as_str(), r.line)).collect();
    assert_eq!(named, [("acme", 6)]);
}

/// `use crate::paths::{self, x}` binds `paths` to the local module: a later
/// `paths::p()` is no edge to a crate `paths` (item 5). `use acme::{self}` imports the
/// crate as itself: still an edge.
#[test]
fn self_in_a_use_group_binds_its_module() {
    let cands: Candidates = ["paths", "acme", "b"]
        .into_iter()
        .map(String::from)
        .collect();
    let src = "use crate::paths::{self, x};\nuse acme::{self, y};\nuse a::{b::{self}};\n\
               fn f() { paths::p(); acme::q(); b::r(); }\n";
    let refs = extract(src, &cands).expect("parses").refs;
    let named: Vec<_> = refs.iter().map(|r| (r.name.as_str(), r.line)).collect();
    assert_eq!(named, [("acme", 2), ("acme", 4)]);
}

/// Paths in a macro call's arguments, a `macro_rules!` body and an attribute's
/// arguments are read (items 2 and 3); a `quote!` body, a lint tool's path, a macro
/// variable, a method and a continued path are not, and a local module still shadows.
#[test]
fn reads_paths_in_macro_arguments_bodies_and_attribute_arguments() {
    let cands: Candidates = ["b", "c", "d", "clippy", "paths", "q"]
        .into_iter()
        .map(String::from)
        .collect();
    let src = "mod paths;\n\
               fn f() { println!(\"{}\", b::f()); assert_eq!(c::C, 1); let _ = vec![d::make()]; }\n\
               macro_rules! m { ($x:expr) => { b::warn_once!($x); $crate::c::x; ::d::y() }; }\n\
               #[derive(b::D)]\n#[cfg_attr(feature = \"x\", derive(c::Reflect))]\n\
               #[salsa::tracked(heap_size = d::heap_size)]\nstruct S;\n\
               #[allow(clippy::all)] fn g() { quote::quote!(q::x); x.b::<u8>(); paths::p(); a::b::c(); }\n";
    let refs = extract(src, &cands).expect("parses").refs;
    let named: Vec<_> = refs.iter().map(|r| (r.name.as_str(), r.line)).collect();
    assert_eq!(
        named,
        [
            ("b", 2),
            ("c", 2),
            ("d", 2),
            ("b", 3),
            ("d", 3),
            ("b", 4),
            ("c", 5),
            ("d", 6)
        ]
    );
    // The same facts from syn, which takes every file the fast scan does not.
    let slow = syn_scan::extract(src, &cands).expect("syn parses it").refs;
    assert_eq!(slow, refs);
}

/// `mod name;` inside a macro's tokens (`cfg_if!`) is a module of the tree, `#[path]`
/// and all; a `use` of a module the file declares imports from it, not from a crate.
#[test]
fn modules_declared_in_macros_and_uses_of_local_modules() {
    let cands: Candidates = ["nu", "acme_om"].into_iter().map(String::from).collect();
    let src = "cfg_if::cfg_if! { if #[cfg(unix)] { #[path = \"sys/unix.rs\"] mod sys; } else { mod other; } }\n\
               #[cfg(test)] mod t { m!(mod inner;); }\nmod nu;\npub use nu::NuCmd;\nuse acme_om::Y;\n";
    for facts in [
        extract(src, &cands).expect("parses"),
        syn_scan::extract(src, &cands).expect("syn parses it"),
    ] {
        let mods: Vec<_> = facts
            .mods
            .iter()
            .map(|m| (m.name.as_str(), m.path.as_deref(), m.inline.clone(), m.test))
            .collect();
        assert_eq!(
            mods,
            [
                ("sys", Some("sys/unix.rs"), vec![], false),
                ("other", None, vec![], false),
                ("inner", None, vec!["t".to_owned()], true),
                ("nu", None, vec![], false),
            ]
        );
        let named: Vec<_> = facts.refs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(named, ["acme_om"]);
    }
}

#[test]
fn names_the_file_binds_shadow_crate_names_in_paths() {
    let src = "use crate::acme_infra;\nmod outer { mod acme_apps {} fn f() { acme_apps::x(); } }\n\
               fn g() { acme_infra::y(); }\nuse acme_om;\nfn h() { acme_om::z(); }\n";
    let got = names(src);
    assert!(
        !got.iter()
            .any(|r| r.0 == "acme_infra" || r.0 == "acme_apps"),
        "{got:?}"
    );
    // `use acme_om;` imports the crate as itself: still an edge, at the use and the path.
    assert_eq!(
        got.iter().filter(|r| r.0 == "acme_om").count(),
        2,
        "{got:?}"
    );
}

/// A name binds in its own module or block only (issue 37, item 8): a `mod` or `use … as`
/// in one module hides nothing in another, or in an inline module inside it; a `::name`
/// path always names an extern crate. Both scans find the same.
#[test]
fn a_binding_shadows_a_crate_only_in_its_own_scope() {
    let cands: Candidates = ["acme_infra", "acme_apps", "acme_om"]
        .into_iter()
        .map(String::from)
        .collect();
    for (src, want) in [
        // A rename in another module: the function's path is the crate.
        (
            "mod a { use x::y as acme_om; }\nfn f() { acme_om::z(); }\n",
            vec![(2, "acme_om")],
        ),
        // A module inside a block binds in that block only.
        (
            "fn f() { mod acme_om {} acme_om::q(); }\nfn g() { acme_om::z(); }\n",
            vec![(2, "acme_om")],
        ),
        // `::name` is an extern crate whatever the file binds.
        (
            "mod acme_om {}\nfn f() { ::acme_om::z(); acme_om::w(); }\n",
            vec![(2, "acme_om")],
        ),
        (
            "mod acme_om {}\nuse ::acme_om::x;\nuse acme_om::y;\n",
            vec![(2, "acme_om")],
        ),
        // A child module does not see its parent's imports.
        (
            "use crate::acme_infra;\nmod inner { fn g() { acme_infra::y(); } }\nfn h() { acme_infra::y(); }\n",
            vec![(2, "acme_infra")],
        ),
        // A block's import: its own block, and blocks within it.
        (
            "fn f() { use x::acme_om; { acme_om::z(); } }\nfn g() { acme_om::w(); }\n",
            vec![(2, "acme_om")],
        ),
        // An inline module's own module still shadows, in its body.
        (
            "mod outer { mod acme_apps {} fn f() { acme_apps::x(); } }\n",
            vec![],
        ),
        // A `use` of a module declared in another module imports from the crate.
        (
            "mod acme_om {}\nmod b { use acme_om::X; }\n",
            vec![(2, "acme_om")],
        ),
        // `use super::*;` brings the parent module's names in, level by level (as
        // rust-analyzer's parser/src/grammar.rs does), and only where it is written.
        (
            "mod acme_om;\nmod entry { use super::*; mod prefix { use super::*; fn f() { acme_om::x(); } } }\n\
             mod other { fn g() { acme_om::y(); } }\nmod third { use super::*; mod deep { fn h() { acme_om::z(); } } }\n",
            vec![(3, "acme_om"), (4, "acme_om")],
        ),
    ] {
        let fast = extract(src, &cands).expect("parses");
        let slow = syn_scan::extract(src, &cands).expect("parses");
        let lines = |f: &RustFacts| -> Vec<(usize, String)> {
            f.refs.iter().map(|r| (r.line, r.name.clone())).collect()
        };
        let want: Vec<(usize, String)> = want.into_iter().map(|(l, n)| (l, n.to_owned())).collect();
        assert_eq!(lines(&fast), want, "fast: {src}");
        assert_eq!(lines(&slow), want, "syn: {src}");
    }
}

/// What a child's `use super::*` brings in is the names bound at the top of the file only.
#[test]
fn only_the_files_top_level_names_are_brought_in_by_a_glob() {
    let cands: Candidates = ["acme_om", "acme_apps"]
        .into_iter()
        .map(String::from)
        .collect();
    let src = "mod acme_om;\nmod inner { use x::acme_apps; }\nfn f() { use y::acme_apps; }\n";
    let fast = extract(src, &cands).expect("parses");
    let slow = syn_scan::extract(src, &cands).expect("parses");
    assert_eq!(fast.binds, ["acme_om"]);
    assert_eq!(slow.binds, ["acme_om"]);
}

#[test]
fn offsets_are_the_files_own_with_a_bom_or_a_shebang() {
    let cands: Candidates = ["acme_om"].into_iter().map(String::from).collect();
    for text in [
        "\u{feff}use acme_om::x;\n",
        "#!/usr/bin/env run-cargo-script\nuse acme_om::x;\n",
    ] {
        let facts = extract(text, &cands).expect("parses");
        let r = &facts.refs[0];
        assert_eq!(&text[r.offset..r.offset + r.len], "acme_om", "{text:?}");
    }
}

/// `use super::*` at the top of a file brings its parent's names in; inside an inline
/// module (`mod tests`) it names the file itself.
#[test]
fn glob_super_is_the_files_own() {
    let none = Candidates::default();
    for (text, want) in [
        ("use super::*;\nfn f() {}\n", true),
        ("fn f() { use super::*; }\n", true),
        ("#[cfg(test)]\nmod tests {\n    use super::*;\n}\n", false),
        ("mod a { mod b { use super::*; } }\n", false),
    ] {
        let fast = extract(text, &none).expect("parses");
        let slow = syn_scan::extract(text, &none).expect("parses");
        assert_eq!((fast.glob_super, slow.glob_super), (want, want), "{text:?}");
    }
}

#[test]
fn collects_path_modules() {
    let facts = extract(
        "#[path = \"../shared/x.rs\"]\nmod x;\n",
        &Candidates::default(),
    )
    .expect("parses");
    let paths: Vec<_> = facts.mods.iter().map(|m| m.path.as_deref()).collect();
    assert_eq!(paths, [Some("../shared/x.rs")]);
}
