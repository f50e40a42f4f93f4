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
    let dir = on_disk(&[
        ("Cargo.toml", root),
        ("crates/a/Cargo.toml", a),
        ("crates/skip/Cargo.toml", "[package]\nname = \"skip\"\n"),
        ("om/Cargo.toml", "[package]\nname = \"acme-om\"\n"),
    ]);
    let (ws, findings) = Workspace::load(&Disk {
        root: dir.path(),
        files: &files,
        overlay: None,
    })
    .expect("root manifest read");
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
    let dir = on_disk(&manifests);
    let (ws, findings) = Workspace::load(&Disk {
        root: dir.path(),
        files: &files,
        overlay: None,
    })
    .expect("root manifest read");
    assert!(findings.is_empty(), "{findings:?}");
    let dirs: Vec<&str> = ws.crates.iter().map(|c| c.dir.as_str()).collect();
    assert_eq!(dirs, ["", "a", "b", "libs/r", "nested/c"]);
    assert_eq!(ws.crate_of("nested/c/src/lib.rs"), Some(4));
    assert_eq!(ws.crate_of("unrelated/src/lib.rs"), None);
}

/// A folder holding `files` (repo-relative path, text).
fn on_disk(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in files {
        let at = dir.path().join(path);
        std::fs::create_dir_all(at.parent().expect("has a folder")).expect("mkdir");
        std::fs::write(at, text).expect("write");
    }
    dir
}

/// What cargo builds and the walk does not list is still the workspace's: a member
/// whose manifest an ignore file hides is loaded from disk, its targets found there; a
/// member folder that is a symlink, or a manifest that is one, is a gap.
#[cfg(unix)]
#[test]
fn members_and_targets_come_from_disk_not_the_walk() {
    let dir = on_disk(&[
        (
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\", \"lit\"]\n",
        ),
        ("crates/hidden/Cargo.toml", "[package]\nname = \"hidden\"\n"),
        ("crates/hidden/src/lib.rs", ""),
        ("crates/hidden/tests/t.rs", ""),
        ("crates/hidden/tests/.swap.rs", ""),
        ("crates/hidden/tests/dir/main.rs", ""),
        ("lit/Cargo.toml", "[package]\nname = \"lit\"\n"),
        ("elsewhere/Cargo.toml", "[package]\nname = \"linked\"\n"),
    ]);
    std::os::unix::fs::symlink("../elsewhere", dir.path().join("crates/linked")).expect("link");
    // The walk listed only the root manifest (an ignore file hid the rest).
    let files = vec!["Cargo.toml".to_owned()];
    let (ws, gaps) = Workspace::load(&Disk {
        root: dir.path(),
        files: &files,
        overlay: None,
    })
    .expect("root manifest read");
    let dirs: Vec<&str> = ws.crates.iter().map(|c| c.dir.as_str()).collect();
    assert_eq!(dirs, ["crates/hidden", "lit"]);
    let targets: Vec<&str> = ws.crates[0]
        .targets
        .iter()
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(
        targets,
        [
            "crates/hidden/src/lib.rs",
            "crates/hidden/tests/dir/main.rs",
            "crates/hidden/tests/t.rs"
        ]
    );
    assert!(
        matches!(&gaps[..], [Gap { why: Why::MemberLinked { dir, .. }, .. }] if dir == "crates/linked"),
        "{gaps:?}"
    );
    std::fs::remove_file(dir.path().join("Cargo.toml")).expect("rm");
    std::os::unix::fs::symlink("elsewhere/Cargo.toml", dir.path().join("Cargo.toml"))
        .expect("link");
    assert!(matches!(
        Workspace::load(&Disk {
            root: dir.path(),
            files: &files,
            overlay: None,
        }),
        Err(RootUnread::Refused(_))
    ));
}

/// Many literal members that do not exist take one look each (it was quadratic: each
/// was searched for in the root manifest's text).
#[test]
fn missing_literal_members_are_found_in_linear_time() {
    let n = 20_000;
    let mut root = String::from("[workspace]\nmembers = [\n");
    for i in 0..n {
        root.push_str(&format!("  \"gone/m{i}\",\n"));
    }
    root.push_str("]\n");
    let dir = on_disk(&[("Cargo.toml", &root)]);
    let files = vec!["Cargo.toml".to_owned()];
    let (_, gaps) = Workspace::load(&Disk {
        root: dir.path(),
        files: &files,
        overlay: None,
    })
    .expect("root manifest read");
    assert_eq!(gaps.len(), n);
    // Each at its own string: line i + 3.
    assert_eq!(gaps[n - 1].at.line, n + 2);
}
