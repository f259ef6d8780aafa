#!/bin/sh
# halo run --prompt and halo chat as users call them, on the qwen3_text
# bundle (a tiny random-weight Qwen3 with the real tokenizer): the streamed
# text is what `halo tokenize --decode` makes of the ids --tokens generates
# for the same prompt and seed; the flags' errors exit 2 naming the flag; a
# bundle without a tokenizer is refused naming it; --chat renders a user
# turn, and a piped multi-turn `halo chat` prefills only each new turn's
# tokens.
# usage: cli_text_test.sh HALO_BINARY QWEN3_TEXT.halo
test_name="cli text"
. "$(dirname "$0")/test_lib.sh"
bundle=$2

# text vs ids: same prompt, same seed, sampled
ids=$("$halo" tokenize "$bundle" --text "The quick brown fox") || fail "tokenize failed"
"$halo" run "$bundle" --backend ref --tokens "$ids" --n-predict 24 --temp 1 --seed 4 >"$work/ids" 2>"$err" ||
	fail "run --tokens: $(cat "$err")"
"$halo" tokenize "$bundle" --decode --ids "$(tr ' ' ',' <"$work/ids")" >"$work/want" || fail "decode failed"
expect 0 "generated 24 in .* finish: length" run "$bundle" --backend ref --prompt "The quick brown fox" \
	--n-predict 24 --temperature 1 --seed 4
cmp -s "$out" "$work/want" || fail "--prompt streamed '$(cat "$out")', the ids decode to '$(cat "$work/want")'"
printf 'The quick brown fox' >"$work/prompt.txt"
expect 0 "prompt 4 tokens" run "$bundle" --backend ref --prompt-file "$work/prompt.txt" --n-predict 24 \
	--temp 1 --seed 4
cmp -s "$out" "$work/want" || fail "--prompt-file streamed other text than --prompt"
# greedy: 3 tokens are a prefix of 8
"$halo" run "$bundle" --backend ref --prompt "Hi" --n-predict 3 >"$work/3" 2>/dev/null
"$halo" run "$bundle" --backend ref --prompt "Hi" --n-predict 8 >"$work/8" 2>/dev/null
[ -s "$work/3" ] && [ "$(head -c "$(stat -c %s "$work/3")" "$work/8")" = "$(cat "$work/3")" ] ||
	fail "3 greedy tokens' text is not the start of 8's"

# flag errors
expect 2 "give the prompt: --tokens, --prompt or --prompt-file" run "$bundle" --backend ref
expect 2 "exclude each other" run "$bundle" --prompt hi --tokens 1
expect 2 "--chat renders text" run "$bundle" --tokens 1 --chat
expect 2 "--system needs --chat" run "$bundle" --prompt hi --system be
expect 2 "--logits-out goes with --tokens" run "$bundle" --prompt hi --logits-out "$work/l"
expect 2 "--temp wants a number" run "$bundle" --prompt hi --temperature hot
expect 1 "--prompt-file $work/none.txt: cannot read" run "$bundle" --backend ref --prompt-file "$work/none.txt"
expect 1 "the prompt is empty" run "$bundle" --backend ref --prompt ""
expect 1 "--spec mtp refused: $bundle: no 'draft' entry point" run "$bundle" --backend ref --prompt hi --spec mtp
# a bundle without a tokenizer
"$halo" compile --hf "$root/tests/fixtures/qwen3_tiny" --targets ref -o "$work/tiny.halo" >/dev/null 2>&1 ||
	fail "compile qwen3_tiny"
expect 1 "bundle $work/tiny.halo has no tokenizer" run "$work/tiny.halo" --backend ref --prompt hi

# --chat: one user turn through the template
expect 0 "prompt 9 tokens" run "$bundle" --backend ref --prompt "Hello" --chat --n-predict 4
expect 0 "prompt 17 tokens" run "$bundle" --backend ref --prompt "Hello" --chat --system "Be brief." --n-predict 4
# halo chat: turn 1 prefills its prompt, turn 2 only what follows
printf 'Hello\nWhat is 2+2?\n/reset\nHello\n' | "$halo" chat "$bundle" --backend ref --n-predict 6 >"$out" 2>"$err" ||
	fail "chat failed: $(cat "$err")"
grep "halo chat: prefill" "$err" >"$work/stats"
[ "$(wc -l <"$work/stats")" -eq 3 ] || fail "want 3 turns' statistics: $(cat "$err")"
sed -n 1p "$work/stats" | grep -q "prefill 9 of 9 tokens (kept at 0)" || fail "turn 1: $(sed -n 1p "$work/stats")"
t2=$(sed -n 2p "$work/stats")
from=$(echo "$t2" | sed -n 's/.*(\(kept\|rewound\) at \([0-9]*\)).*/\2/p')
[ -n "$from" ] && [ "$from" -ge 8 ] || fail "turn 2 prefilled the conversation again: $t2"
sed -n 3p "$work/stats" | grep -q "prefill 9 of 9 tokens (reset at 0)" || fail "after /reset: $(sed -n 3p "$work/stats")"
grep -q "conversation cleared" "$err" || fail "/reset said nothing"
expect 2 "no bundle given" chat
expect 1 "bundle $work/tiny.halo has no tokenizer" chat "$work/tiny.halo" --backend ref
finish
