#!/bin/sh
# halo serve through curl: the command line, every route, whole and
# streamed replies, and each error status with its OpenAI-shaped body.
# usage: serve_cli_test.sh HALO_BINARY BUNDLE   (BUNDLE: tests/fixtures/qwen3_text built)
test_name="serve cli"
. "$(dirname "$0")/../tools/test_lib.sh"
. "$(dirname "$0")/serve_lib.sh"
command -v curl >/dev/null || { echo "FAIL: curl is missing (tools/scripts/install-deps.sh)" >&2; exit 1; }

expect 0 "usage: halo serve" serve --help
expect 2 "no bundle given" serve
expect 2 "--port wants" serve x.halo --port 70000
expect 2 "--parallel wants" serve x.halo --parallel 0
expect 2 "--backend: unknown backend 'metal' (known: ref, vulkan, cuda, hip)" serve x.halo --backend metal
expect 2 "--draft-n needs --spec mtp" serve x.halo --draft-n 2
expect 1 "x.halo" serve "$work/x.halo" --backend ref --port 0

start_server --backend ref --parallel 2 --queue 4 --max-body 16384

# status PATTERN: the last reply's status is CODE and its body matches PATTERN
status() {
	[ "$code" = "$1" ] && grep -q -- "$2" "$out" || fail "want $1 and '$2', got $code: $(head -c 400 "$out")"
}

code=$(curl -s -o "$out" -w '%{http_code}' "$url/v1/models")
status 200 '"object":"list","data":\[{"id":"q","object":"model"'

# Completions: text and ids prompts; the usage counts what the tokenizer gives.
post /v1/completions '{"model": "q", "prompt": "The capital of France is", "max_tokens": 6, "temperature": 0}'
status 200 '"object":"text_completion"'
ids=$("$halo" tokenize "$bundle" --text "The capital of France is")
n_prompt=$(echo "$ids" | tr ',' ' ' | wc -w)
[ "$(json "$out" 'j["usage"]["prompt_tokens"], j["usage"]["completion_tokens"], j["usage"]["total_tokens"]')" = \
  "($n_prompt, 6, $((n_prompt + 6)))" ] || fail "completion usage: $(cat "$out")"
[ "$(json "$out" 'j["choices"][0]["finish_reason"]')" = length ] || fail "finish_reason: $(cat "$out")"
greedy=$(json "$out" 'j["choices"][0]["text"]')
post /v1/completions "{\"prompt\": [$ids], \"max_tokens\": 6, \"temperature\": 0}"
[ "$code" = 200 ] && [ "$(json "$out" 'j["choices"][0]["text"]')" = "$greedy" ] ||
	fail "the ids prompt gave other text: $(cat "$out")"

# A stop string: the text ends before it, finish_reason stop.
cut=$(printf '%s' "$greedy" | cut -c 4-6)
post /v1/completions "{\"prompt\": \"The capital of France is\", \"max_tokens\": 6, \"temperature\": 0, \"stop\": [\"$cut\"]}"
text=$(json "$out" 'j["choices"][0]["text"]')
[ "$(json "$out" 'j["choices"][0]["finish_reason"]')" = stop ] && [ "${greedy#"$text"}" != "$greedy" ] &&
	[ "${text#*"$cut"}" = "$text" ] ||
	fail "stop '$cut' in '$greedy': $(cat "$out")"

# Chat, whole and streamed: the stream's deltas make the whole reply's text.
chat='"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Hi"}]}], "max_tokens": 7, "temperature": 0, "chat_template_kwargs": {"enable_thinking": false}'
post /v1/chat/completions "{$chat}"
status 200 '"object":"chat.completion"'
whole=$(json "$out" 'j["choices"][0]["message"]["content"]')
[ "$(json "$out" 'j["choices"][0]["message"]["role"], j["usage"]["completion_tokens"]')" = "('assistant', 7)" ] ||
	fail "chat reply: $(cat "$out")"
post /v1/chat/completions "{$chat, \"stream\": true, \"stream_options\": {\"include_usage\": true}}"
[ "$code" = 200 ] || fail "stream status $code"
python3 - "$out" "$whole" <<'PY' || fail "the chat stream: $(head -c 600 "$out")"
import json, sys
raw = open(sys.argv[1]).read()
assert raw.endswith("data: [DONE]\n\n"), "no [DONE] at the end"
events = [json.loads(e[6:]) for e in raw.split("\n\n") if e and e != "data: [DONE]"]
assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}, events[0]
assert all(e["object"] == "chat.completion.chunk" and e["id"] == events[0]["id"] for e in events)
text = "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])
assert text == sys.argv[2], (text, sys.argv[2])
assert events[-2]["choices"][0]["finish_reason"] == "length", events[-2]
assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 7, events[-1]
PY
post /v1/completions '{"prompt": "The capital of France is", "max_tokens": 6, "temperature": 0, "stream": true}'
python3 - "$out" "$greedy" <<'PY' || fail "the completion stream: $(head -c 600 "$out")"
import json, sys
raw = open(sys.argv[1]).read()
events = [json.loads(e[6:]) for e in raw.split("\n\n") if e and e != "data: [DONE]"]
assert raw.endswith("data: [DONE]\n\n") and all("usage" not in e for e in events)
assert "".join(e["choices"][0]["text"] for e in events) == sys.argv[2]
PY

# Errors: status, type, param.
post /v1/completions '{"prompt": "x", "max_tokens": '
status 400 '"type":"invalid_request_error","param":null,"code":"invalid_json"'
post /v1/completions '{"prompt": "x", "max_tokens": "many"}'
status 400 '"param":"max_tokens","code":"invalid_type"'
post /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "n": 3}'
status 400 '"param":"n"'
post /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "logprobs": true}'
status 400 '"param":"logprobs"'
post /v1/completions "{\"prompt\": \"$(printf 'word %.0s' $(seq 2100))\"}"
status 400 '"code":"context_length_exceeded"'
post /v1/completions '{"prompt": [1, 151936]}'
status 400 'outside the vocabulary'
post /v1/completions '{"prompt": "x", "model": "gpt-4"}'
status 404 '"code":"model_not_found"'
post /v1/embeddings '{}'
status 404 '"code":"not_found"'
code=$(curl -s -o "$out" -w '%{http_code}' "$url/v1/completions")
status 405 '"code":"method_not_allowed"'
post /v1/completions "{\"prompt\": \"$(head -c 20000 /dev/zero | tr '\0' a)\"}"
status 413 '"code":"body_too_large"'
code=$(head -c 20000 /dev/zero | tr '\0' a | curl -s -o "$out" -w '%{http_code}' -H 'Transfer-Encoding: chunked' \
	--data-binary @- "$url/v1/completions")
status 413 '"code":"body_too_large"'
# ... and the server is still there
post /v1/completions '{"prompt": "The capital of France is", "max_tokens": 6, "temperature": 0}'
[ "$code" = 200 ] && [ "$(json "$out" 'j["choices"][0]["text"]')" = "$greedy" ] || fail "after the errors: $(cat "$out")"
stop_server

# 503: one session, no queue; a long request holds the session. Which of the
# two requests reaches the session first is the scheduler's business (a short
# one may take it before the long one arrives, and the long one is refused):
# the long one starts again until a short one is refused while it runs.
start_server --backend ref --parallel 1 --queue 0
for _ in $(seq 5); do
	curl -s -o "$work/long.json" -H 'Content-Type: application/json' \
		--data-binary '{"prompt": "a", "max_tokens": 1500, "temperature": 0}' "$url/v1/completions" &
	long=$!
	sleep 0.2
	for _ in $(seq 40); do
		post /v1/completions '{"prompt": "b", "max_tokens": 1}'
		[ "$code" = 503 ] && break 2
		kill -0 "$long" 2>/dev/null || break
		sleep 0.05
	done
	wait "$long"
done
status 503 '"type":"server_error","param":null,"code":"queue_full"'
grep -q "the server is busy" "$out" || fail "the 503 does not say the server is busy: $(cat "$out")"
# SIGTERM with the long request running: it is cancelled, the server exits 0.
stop_server
wait "$long"
grep -q '"code":"shutting_down"' "$work/long.json" || fail "the cancelled request got: $(head -c 300 "$work/long.json")"
finish
