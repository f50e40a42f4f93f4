#!/usr/bin/env bash
# Issue 39, item 10: `scaffold check` on a workspace listing N literal members that do not
# exist (each a finding), for one binary or two side by side (an older one as the peer).
#
#   bash benches/members.sh N BINARY [OTHER_BINARY]
#
# Needs python3 and hyperfine (apt-get install hyperfine).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:?usage: benches/members.sh N BINARY [OTHER_BINARY]}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$here" "$work/repo" "$n" <<'PY'
import shutil, sys
here, repo, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
shutil.copytree(f"{here}/fixtures/clean", repo)
with open(f"{repo}/Cargo.toml", "w") as f:
    f.write('[workspace]\nmembers = ["om", "services/*", "workers/*",\n')
    f.writelines(f'  "gone/m{i}",\n' for i in range(n))
    f.write(']\nresolver = "2"\n')
PY
cmds=()
for bin in "${@:2}"; do
  cmds+=("$bin -C $work/repo check --format json --rule source-unparsed > /dev/null || true")
done
hyperfine --warmup 1 --runs 5 "${cmds[@]}"
