#!/bin/sh
# halo serve through the official openai npm client (openai_client_test.mjs),
# with --parallel 2 --queue 16. The client is installed once into the build
# folder (the only step that needs the network); a failed install fails the
# test, it is never skipped.
# usage: serve_openai_test.sh HALO_BINARY BUNDLE NPM_CACHE_DIR
test_name="serve openai client"
. "$(dirname "$0")/../tools/test_lib.sh"
. "$(dirname "$0")/serve_lib.sh"
npm_dir=$3
for tool in node npm curl; do
	command -v $tool >/dev/null || { echo "FAIL: $tool is missing (tools/scripts/install-deps.sh)" >&2; exit 1; }
done
if [ ! -f "$npm_dir/node_modules/openai/package.json" ]; then
	mkdir -p "$npm_dir"
	npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error openai@7 >&2 ||
		{ echo "FAIL: npm install openai@7 into $npm_dir failed (the network?)" >&2; exit 1; }
fi

"$halo" run "$bundle" --backend ref --prompt "Once upon" --n-predict 12 --temp 0.8 --top-p 0.95 --seed 42 \
	>"$work/run.txt" 2>"$err" || fail "halo run --prompt: $(cat "$err")"
start_server --backend ref --parallel 2 --queue 16
cp "$(dirname "$0")/openai_client_test.mjs" "$npm_dir/"
node "$npm_dir/openai_client_test.mjs" "$url" q "$work/run.txt" || fail "the openai client test failed"
# The aborted stream (max_tokens 1900) was cancelled, not run to its end.
sleep 1
grep -q "completion [0-9]*, cancelled" "$srv_log" || fail "no cancelled generation in the log: $(cat "$srv_log")"
grep "completion 1900," "$srv_log" && fail "the aborted stream ran to its end"
stop_server
finish
