#!/usr/bin/env python3
"""Oracle for `scaffold check` on a real Cargo workspace (see benches/oracle.sh).

Copies the workspace, writes a codemap with one layer per crate (each layer may import
nothing), runs `scaffold check --format json`, and compares the crate-to-crate edges the
checker found in code (`import-undeclared` findings "imports") with what cargo says:
`cargo metadata --no-deps --offline`. Prints precision and recall, every edge found in code
with no declared dependency, and every declared dependency whose name the code writes
(`name::`, `use name`, `extern crate name`, comments stripped) that the checker did not find.

The "named in code" side is a text search over every .rs file under the crate's
directory, so it over-counts: a name in a string, in a `quote!` body, in a file outside the
crate's module tree, or written only in a `macro_rules!` matcher counts. The misses it
prints are each to be read; they are the recall's lower bound.
"""
import json, os, re, shutil, statistics, subprocess, sys, tempfile, time

def cargo_metadata(ws):
    env = dict(os.environ)
    out = subprocess.run(["cargo", "metadata", "--no-deps", "--offline", "--format-version", "1"],
                         cwd=ws, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"cargo metadata failed in {ws}:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)

TOKEN = re.compile(r'//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/|r(#*)"(?:.|\n)*?"\1|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'', re.S)

def strip(text):
    # Comments go; strings become empty strings (a path in a string is not code).
    return TOKEN.sub(lambda m: '' if m.group(0).startswith('/') else '""', text)

def main():
    args = sys.argv[1:]
    # --ab-tree DIR: write a copy of the workspace to DIR whose codemap lets each crate's
    # layer import the members it declares (so a check renders nothing), for
    # benches/ab-check.py, and stop.
    ab_tree = None
    if "--ab-tree" in args:
        i = args.index("--ab-tree")
        ab_tree = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    ws, binary = os.path.abspath(args[0]), os.path.abspath(args[1])
    timing_rounds = int(args[2]) if len(args) > 2 else 0
    meta = cargo_metadata(ws)
    root = meta["workspace_root"]
    members = set(meta["workspace_members"])
    pkgs = [p for p in meta["packages"] if p["id"] in members]
    by_dir = {}
    for p in pkgs:
        d = os.path.relpath(os.path.dirname(p["manifest_path"]), root)
        by_dir["" if d == "." else d] = p
    dir_of = {p["name"]: d for d, p in by_dir.items()}
    lib_of = {}
    for p in pkgs:
        for t in p["targets"]:
            if set(t["kind"]) & {"lib", "rlib", "proc-macro", "dylib", "cdylib", "staticlib"}:
                lib_of[p["name"]] = t["name"].replace("-", "_")
    # Declared: a dependency (any kind) on another member, and the name code uses for it.
    declared = {}
    for p in pkgs:
        for dep in p["dependencies"]:
            path = dep.get("path")
            if not path:
                continue
            d = os.path.relpath(path, root)
            target = by_dir.get("" if d == "." else d)
            if target is None or target["name"] == p["name"] or target["name"] not in lib_of:
                continue
            code_name = (dep.get("rename") or lib_of[target["name"]]).replace("-", "_")
            declared.setdefault((p["name"], target["name"]), set()).add(code_name)

    if ab_tree:
        shutil.copytree(ws, ab_tree, symlinks=True, ignore=shutil.ignore_patterns("target", ".git"))
        os.makedirs(os.path.join(ab_tree, "agent"), exist_ok=True)
        names = {p["name"]: f"c{i}" for i, p in enumerate(sorted(pkgs, key=lambda p: p["name"]))}
        with open(os.path.join(ab_tree, "agent", "codemap.yml"), "w") as f:
            f.write("version: 1\nname: oracle\nlayers:\n")
            for p in sorted(pkgs, key=lambda p: p["name"]):
                manifest = os.path.join(dir_of[p["name"]], "Cargo.toml") if dir_of[p["name"]] else "Cargo.toml"
                allowed = sorted({names[b] for (a, b) in declared if a == p["name"]})
                f.write(f"  {names[p['name']]}: {{paths: [{json.dumps(manifest)}], may_import: [{', '.join(allowed)}]}}\n")
        print(f"wrote {ab_tree}")
        return

    work = tempfile.mkdtemp(prefix="scaffold-oracle-")
    try:
        tree = os.path.join(work, "ws")
        shutil.copytree(ws, tree, symlinks=True, ignore=shutil.ignore_patterns("target", ".git"))
        os.makedirs(os.path.join(tree, "agent"), exist_ok=True)
        names = {p["name"]: f"c{i}" for i, p in enumerate(sorted(pkgs, key=lambda p: p["name"]))}
        layer_pkg = {v: k for k, v in names.items()}
        with open(os.path.join(tree, "agent", "codemap.yml"), "w") as f:
            f.write("version: 1\nname: oracle\nlayers:\n")
            for p in sorted(pkgs, key=lambda p: p["name"]):
                manifest = os.path.join(dir_of[p["name"]], "Cargo.toml") if dir_of[p["name"]] else "Cargo.toml"
                f.write(f"  {names[p['name']]}: {{paths: [{json.dumps(manifest)}], may_import: []}}\n")
        run = subprocess.run([binary, "-C", tree, "check", "--format", "json", "--color", "never"],
                             capture_output=True, text=True)
        try:
            report = json.loads(run.stdout)
        except json.JSONDecodeError:
            sys.exit(f"scaffold check gave no report (exit {run.returncode}):\n{run.stderr[-3000:]}")
        found = {}
        unparsed = []
        edge = re.compile(r"^`[^`]+` \(layer `(c\d+)`\) imports `([^`]+)` \(layer `(c\d+)`\)")
        for f in report["findings"]:
            if f["rule"] == "source-unparsed":
                unparsed.append(f)
            if f["rule"] != "import-undeclared":
                continue
            m = edge.match(f["message"])
            if m:
                key = (layer_pkg[m.group(1)], layer_pkg[m.group(3)])
                found.setdefault(key, []).append(f"{f['path']}:{f['line']}")

        # Named in code: the crate's .rs files (outside target/), comments stripped.
        texts = {}
        for name, d in dir_of.items():
            base = os.path.join(tree, d)
            nested = {os.path.join(tree, o) for o in dir_of.values() if o != d and (d == "" or o.startswith(d + "/"))}
            chunks = []
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = sorted(x for x in dirnames if x not in ("target", ".git") and os.path.join(dirpath, x) not in nested)
                for fn in sorted(filenames):
                    if fn.endswith(".rs"):
                        try:
                            chunks.append(strip(open(os.path.join(dirpath, fn), encoding="utf-8", errors="replace").read()))
                        except OSError:
                            pass
            texts[name] = "\n".join(chunks)
        named = {}
        for (a, b), code_names in declared.items():
            for n in code_names:
                pat = re.compile(r"(?<![\w$.#])(?:%s)\s*::|\buse\s+(?:::)?%s\b|\bextern\s+crate\s+%s\b" % ((re.escape(n),) * 3))
                if pat.search(texts.get(a, "")):
                    named[(a, b)] = n
                    break
        tp = [e for e in found if e in declared]
        fp = [e for e in found if e not in declared]
        hit = [e for e in named if e in found]
        miss = [e for e in named if e not in found]
        precision = len(tp) / len(found) if found else 1.0
        recall = len(hit) / len(named) if named else 1.0
        files = report["summary"]["files_checked"]
        print(f"workspace: {ws}")
        print(f"crates (cargo metadata): {len(pkgs)}")
        print(f"files checked: {files}; source-unparsed: {len(unparsed)}")
        print(f"declared edges between members: {len(declared)}; named in code (text search): {len(named)}")
        print(f"edges found in code: {len(found)}")
        # Each finding is one place code names another crate: a scan that sees more of
        # them (a name bound in another scope no longer hiding the crate) finds more.
        print(f"places found in code: {sum(len(v) for v in found.values())}")
        print(f"precision: {precision:.4f} ({len(tp)}/{len(found)})")
        print(f"recall:    {recall:.4f} ({len(hit)}/{len(named)})")
        for e in sorted(fp):
            print(f"  found, not declared: {e[0]} -> {e[1]} at {', '.join(found[e][:3])}")
        for e in sorted(miss):
            print(f"  declared and named in code as `{named[e]}`, not found: {e[0]} -> {e[1]}")
        for f in unparsed[:20]:
            print(f"  source-unparsed: {f['path']}:{f['line']}: {f['message'][:160]}")
        if timing_rounds:
            cache = os.path.join(tree, ".scaffold")
            def timed(argv):
                t = time.perf_counter()
                subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                return (time.perf_counter() - t) * 1000
            rows = []
            check = [binary, "-C", tree, "check"]
            for _ in range(timing_rounds):
                rg = timed(["rg", "-c", "use ", tree])
                shutil.rmtree(cache, ignore_errors=True)
                cold = timed(check)
                warm = timed(check)
                rows.append((rg, cold, warm))
            med = statistics.median
            rg, cold, warm = (med(r[i] for r in rows) for i in range(3))
            print(f"timing, {timing_rounds} paired rounds, medians: rg -c 'use ' {rg:.0f} ms, "
                  f"cold {cold:.0f} ms ({med(r[1]/r[0] for r in rows):.1f}x rg), "
                  f"warm {warm:.0f} ms ({med(r[2]/r[0] for r in rows):.1f}x rg)")
    finally:
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
