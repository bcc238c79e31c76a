#!/bin/bash
# Reintroduce one real past bug with the current gate (docs/adoption.md, "With the current gate").
#
#   bench/adoption_bugs.sh bidict eced624        bench/adoption_bugs.sh pyrsistent 885796fb
#
# Adopts the project at the fix commit (its tests and package as of the fix: the fix's own test is in
# the oracle), every entry `isolation: shared` (none with SEALED=1), pyrsistent's vector tests `allow_skip: true`, all as a
# person; then an agent's commit reverts the fix's package change and `gate check` judges it.
# Needs the mirrors (fetch github:jab/bidict, github:tobgu/pyrsistent) and the gate's venv.
set -euo pipefail
project=$1 fix=$2
here=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$here/.venv/bin:$PATH
case $project in
  bidict) mirror=/work/.mirror/jab+bidict/repo production='["bidict/**"]' package=bidict ;;
  pyrsistent) mirror=/work/.mirror/tobgu+pyrsistent/repo production='["pyrsistent/**", "pvectorcmodule.c"]'
              package=pyrsistent ;;
  *) echo "usage: $0 bidict|pyrsistent FIX" >&2; exit 2 ;;
esac
[ -d "$mirror" ] || { echo "no mirror at $mirror: fetch it first" >&2; exit 2; }
work=${WORK:-/tmp/adoption-bugs}/$project-$fix
rm -rf "$work"; git clone -q "$mirror" "$work"; cd "$work"; git checkout -q -b adopt "$fix"
git config user.email ada@maintainers.example; git config user.name "Ada Maintainer"
gate init >/dev/null
sed -i "s|production: \[\"src/\*\*\"\]|production: $production|; s|oracle: \[\"oracles/properties/\*\*\"\]|oracle: [\"tests/**\"]|" gate.yaml
git add -A; gate manifest sign --staged >/dev/null; git add -A; git commit -qm adopt --no-verify
gate catalog import >/dev/null
# SEALED=1: no entry shared (subclassing, comparisons and pickles of production objects run sealed now)
[ "${SEALED:-0}" = 1 ] || for f in oracles/catalog/*.yaml; do
  [ "$(basename "$f")" = claimed.yaml ] || echo "isolation: shared" >> "$f"; done
for f in $(grep -l "tests/vector_test.py" oracles/catalog/*.yaml || true); do echo "allow_skip: true" >> "$f"; done
git add -A; gate manifest sign --staged >/dev/null; git add -A; git commit -qm catalog --no-verify
base=$(git rev-parse HEAD)
git diff "$fix" "$fix^1" -- "$package" | git apply || { echo "$project $fix: the revert does not apply"; exit 0; }
git add -A; GIT_AUTHOR_EMAIL='replay[bot]@agents.example' git commit -qm "revert $fix" --no-verify
code=0; gate check --base "$base" --head HEAD --evidence "$work/evidence" > "$work/check.txt" 2>&1 || code=$?
echo "$project $fix: exit $code; $(grep -E '^decision' "$work/check.txt")"
grep -E " regression " "$work/check.txt" | cut -c1-140 || true
