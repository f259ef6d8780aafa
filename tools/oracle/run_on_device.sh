#!/bin/bash
# Runs make_fixtures.py on the lent device machine (the `run` tool) and leaves
# in $OUT: <family>.tar for each family that succeeded (the fixture folder),
# ref_src.tar.gz (reference model sources, for reading only) and oracle.log.
# Usage, from the repository root: bash tools/oracle/run_on_device.sh [FAMILY ...]
# (no FAMILY: every family make_fixtures.py knows).
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=
work=$(mktemp -d)
args=()
for fam in "$@"; do
	args+=(--family "$fam")
done
python3 tools/oracle/make_fixtures.py --out "$work" --ref-src-tar "$OUT/ref_src.tar.gz" "${args[@]}" 2>&1 |
	tee "$OUT/oracle.log"
status=${PIPESTATUS[0]}
# A failed family leaves no folder; the others still come back.
for dir in "$work"/*/; do
	[ -d "$dir" ] || continue
	fam=$(basename "$dir")
	tar -C "$work" -cf "$OUT/$fam.tar" "$fam"
	ls -l "$dir" | tee -a "$OUT/oracle.log"
done
rm -rf "$work"
exit "$status"
