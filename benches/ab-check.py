#!/usr/bin/env python3
"""Paired A/B of two `scaffold` binaries on one tree, beside ripgrep.

    python3 benches/ab-check.py <tree> <binary A> <binary B> [rounds] [--staged FILE]

Per round, in one process and back to back: `rg -c 'use ' <tree>`, then for each binary a
cold `check` (cache deleted first) and a warm one; the binaries' order alternates by
round. Prints medians and the per-round ratios to ripgrep, so a slow spell of the host
lands on every command of the round. With --staged, the tree is a git checkout with FILE
staged, and a warm `check --staged` is timed too.
"""
import shutil, statistics, subprocess, sys, time

args = sys.argv[1:]
staged = None
if "--staged" in args:
    i = args.index("--staged")
    staged = args[i + 1]
    del args[i:i + 2]
tree, a, b = args[:3]
rounds = int(args[3]) if len(args) > 3 else 15
cache = f"{tree}/.scaffold"

def timed(argv):
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000

rows = {k: [] for k in ("rg", "A cold", "A warm", "B cold", "B warm", "A staged", "B staged")}
for r in range(rounds):
    rg = timed(["rg", "-c", "use ", tree])
    rows["rg"].append(rg)
    for name, binary in ([("A", a), ("B", b)] if r % 2 == 0 else [("B", b), ("A", a)]):
        shutil.rmtree(cache, ignore_errors=True)
        rows[f"{name} cold"].append((timed([binary, "-C", tree, "check"]), rg))
        rows[f"{name} warm"].append((timed([binary, "-C", tree, "check"]), rg))
        if staged:
            rows[f"{name} staged"].append((timed([binary, "-C", tree, "check", "--staged"]), rg))
med = statistics.median
print(f"{rounds} paired rounds on {tree}; A = {a}, B = {b}")
print(f"ripgrep: median {med(rows['rg']):.1f} ms")
for k, v in rows.items():
    if k == "rg" or not v:
        continue
    print(f"{k:9}: median {med(x for x, _ in v):7.1f} ms, {med(x / g for x, g in v):5.2f}x ripgrep (per-round ratio)")
# B against A directly, round by round: the ratio a slow spell of the host moves least.
for kind in ("cold", "warm", "staged"):
    pairs = [b / a for (a, _), (b, _) in zip(rows[f"A {kind}"], rows[f"B {kind}"])]
    if pairs:
        q = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else [pairs[0]] * 3
        print(f"B/A {kind:6}: median {med(pairs):.3f} (quartiles {q[0]:.3f}-{q[2]:.3f})")
