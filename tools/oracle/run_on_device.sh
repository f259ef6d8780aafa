#!/bin/bash
# Runs make_fixtures.py on the lent device machine (the `run` tool) and leaves
# three files in $OUT: qwen3_tiny.tar (the fixture folder), ref_src.tar.gz
# (reference model sources, for reading only) and oracle.log.
# Usage, from the repository root: bash tools/oracle/run_on_device.sh
set -euo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=
work=$(mktemp -d)
python3 tools/oracle/make_fixtures.py --out "$work" --ref-src-tar "$OUT/ref_src.tar.gz" 2>&1 | tee "$OUT/oracle.log"
tar -C "$work" -cf "$OUT/qwen3_tiny.tar" qwen3_tiny
ls -l "$work/qwen3_tiny" | tee -a "$OUT/oracle.log"
rm -rf "$work"
