use super::*;

#[test]
fn join_rel_resolves_and_refuses_escapes() {
    assert_eq!(join_rel("workers/a", "../../om").as_deref(), Some("om"));
    assert_eq!(join_rel("", "./om/").as_deref(), Some("om"));
    assert_eq!(join_rel("a", "../../x"), None);
}

#[test]
fn reads_members_deps_and_role() {
    let root = "[workspace]\nmembers = [\"crates/*\"]\nexclude = [\"crates/skip\"]\n[workspace.dependencies]\nacme-om = { path = \"om\" }\n";
    let a = "[package]\nname = \"acme-a\"\n[package.metadata.scaffold]\nrole = \"projector\"\n[lib]\nname = \"alpha\"\n[dependencies]\nom = { package = \"acme-om\", workspace = true }\nb = { path = \"../b\" }\n[dev-dependencies]\nserde = \"1\"\n[target.'cfg(unix)'.build-dependencies]\nc = { path = \"../c\" }\n";
    let files: Vec<String> = [
        "Cargo.toml",
        "crates/a/Cargo.toml",
        "crates/skip/Cargo.toml",
        "om/Cargo.toml",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let read = |p: &str| match p {
        "Cargo.toml" => Some(root.to_owned()),
        "crates/a/Cargo.toml" => Some(a.to_owned()),
        "om/Cargo.toml" => Some("[package]\nname = \"acme-om\"\n".to_owned()),
        _ => None,
    };
    let (ws, findings) = Workspace::load(&read, &files);
    assert!(findings.is_empty(), "{findings:?}");
    // `om`, a path dependency inside the root, is a member though not listed.
    assert_eq!(ws.crates.len(), 2);
    let c = &ws.crates[0];
    assert_eq!(
        (c.package.as_str(), c.lib_name.as_str()),
        ("acme-a", "alpha")
    );
    assert_eq!(c.role.as_ref().map(|r| r.0.as_str()), Some("projector"));
    assert_eq!(c.role.as_ref().map(|r| r.1.line), Some(4));
    let om = c.deps.iter().find(|d| d.key == "om").expect("om dep");
    assert_eq!(
        (om.package.as_str(), om.path.as_deref(), om.loc.line),
        ("acme-om", Some("om"), 8)
    );
    let cdep = c.deps.iter().find(|d| d.key == "c").expect("c dep");
    assert_eq!(
        (cdep.kind, cdep.target.as_deref(), cdep.path.as_deref()),
        (DepKind::Build, Some("cfg(unix)"), Some("crates/c"))
    );
    assert!(
        c.deps
            .iter()
            .any(|d| d.key == "serde" && d.path.is_none() && d.kind == DepKind::Dev)
    );
}

/// Cargo's member set: listed members, then every path dependency inside the root,
/// transitively, unless excluded; a path dependency outside the root or without a
/// manifest is not a member (issue "check on real workspaces", item 1).
#[test]
fn path_dependencies_inside_the_root_are_members_too() {
    let manifests = [
        (
            "Cargo.toml",
            "[package]\nname = \"top\"\n[dependencies]\nr = { path = \"libs/r\" }\n[workspace]\nmembers = [\"a\"]\nexclude = [\"skip\"]\n",
        ),
        (
            "a/Cargo.toml",
            "[package]\nname = \"a\"\n[dependencies]\nb = { path = \"../b\" }\nx = { path = \"../skip/x\" }\n",
        ),
        (
            "b/Cargo.toml",
            "[package]\nname = \"b\"\n[dev-dependencies]\nc = { path = \"../nested/c\" }\ngone = { path = \"../gone\" }\n",
        ),
        ("nested/c/Cargo.toml", "[package]\nname = \"c\"\n"),
        ("libs/r/Cargo.toml", "[package]\nname = \"r\"\n"),
        ("skip/x/Cargo.toml", "[package]\nname = \"x\"\n"),
        ("unrelated/Cargo.toml", "[package]\nname = \"u\"\n"),
    ];
    let files: Vec<String> = manifests.iter().map(|(p, _)| (*p).to_owned()).collect();
    let mut files = files;
    files.sort();
    let read = |p: &str| {
        manifests
            .iter()
            .find(|(m, _)| *m == p)
            .map(|(_, t)| (*t).to_owned())
    };
    let (ws, findings) = Workspace::load(&read, &files);
    assert!(findings.is_empty(), "{findings:?}");
    let dirs: Vec<&str> = ws.crates.iter().map(|c| c.dir.as_str()).collect();
    assert_eq!(dirs, ["", "a", "b", "libs/r", "nested/c"]);
    assert_eq!(ws.crate_of("nested/c/src/lib.rs"), Some(4));
    assert_eq!(ws.crate_of("unrelated/src/lib.rs"), None);
}
