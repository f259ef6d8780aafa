# halo serve's test frame, sourced by the serve tests after tests/tools/test_lib.sh
# with the text-test bundle (tests/meson.build's qwen3_text_bundle) as $2:
#   start_server ARGS...  runs `halo serve $bundle --port 0 ARGS` in the
#                         background, waits for its URL; sets url and srv_log
#   stop_server           SIGTERM, then checks it exited 0 and said so
#   post PATH BODY        POSTs JSON; the body lands in $out, the status in $code
#   json FILE EXPR        a Python expression over the parsed JSON `j`
bundle=$2
srv_pid=
trap '[ -n "$srv_pid" ] && kill -KILL "$srv_pid" 2>/dev/null; rm -rf "$work"' EXIT

start_server() {
	srv_log=$work/serve.$$.$(date +%s%N).log
	"$halo" serve "$bundle" --port 0 --model-name q "$@" 2>"$srv_log" &
	srv_pid=$!
	for _ in $(seq 300); do
		url=$(sed -n 's/^halo serve: listening on \(http:[^ ]*\).*/\1/p' "$srv_log")
		[ -n "$url" ] && return 0
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "FAIL: halo serve $* did not start:" >&2
	cat "$srv_log" >&2
	exit 1
}

stop_server() {
	kill -TERM "$srv_pid"
	wait "$srv_pid"
	rc=$?
	[ "$rc" -eq 0 ] || fail "halo serve exited $rc on SIGTERM: $(tail -3 "$srv_log")"
	grep -q "terminated, stopping" "$srv_log" || fail "halo serve did not say it was stopping"
	srv_pid=
}

post() { # PATH BODY
	code=$(curl -s -o "$out" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$2" "$url$1")
}

json() { # FILE EXPR
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
