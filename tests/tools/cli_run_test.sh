#!/bin/sh
# `halo compile` and `halo run` as users call them: help, flag errors with
# exit 2, bad inputs with exit 1 and a message naming the file, nothing left
# behind on failure, refused bundles, the output contract (ids on one stdout
# line, --logits-out size), --no-rope-fusion, and same seed -> same output.
# usage: cli_run_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="cli run"
. "$(dirname "$0")/test_lib.sh"
fix=$root/tests/fixtures/qwen3_tiny

tokens=$(od -An -v -t d4 "$fix/prompt_tokens.i32" | tr -s ' \n' ',' | sed 's/^,//;s/,$//')
bundle=$work/q.halo

expect 0 "usage: halo compile" compile --help
expect 0 "usage: halo run" run --help
expect 0 "usage: halo devices" devices --help
expect 2 "--hf CKPT_DIR is required" compile -o "$bundle"
expect 2 "-o OUT.halo is required" compile --hf "$fix"
expect 2 "--dtype must be f32 or f16" compile --hf "$fix" --dtype f8 -o "$bundle"
expect 2 "non-negative integer seed" compile --hf "$fix" --random-weights x -o "$bundle"
expect 1 "cannot read as JSON" compile --hf "$work/nowhere" -o "$bundle"
[ -e "$bundle" ] && fail "a failed compile left $bundle behind"
ls "$work" | grep -q tmp && fail "a failed compile left a temporary file"

# A checkpoint whose tensor has the wrong shape: refused, naming the tensor.
mkdir "$work/bad"
sed 's/"vocab_size": 256/"vocab_size": 300/' "$fix/config.json" >"$work/bad/config.json"
cp "$fix/model.safetensors" "$work/bad/"
expect 1 "model.embed_tokens.weight" compile --hf "$work/bad" --model "$root/models/qwen3.yaml" -o "$bundle"
[ -e "$bundle" ] && fail "a failed compile left $bundle behind"

expect 0 "wrote" compile --hf "$fix" -o "$bundle"
# The context length: the summary names it and the state it takes; by default
# the model file's 2048 tokens cut to the config's max_position_embeddings
# (512); beyond it or not a count is refused, and the bundle of --ctx 256
# generates what the default's does.
grep -q "context 512 tokens, state" "$err" || fail "the default context is not max_position_embeddings: $(cat "$err")"
expect 2 "--ctx wants a context length" compile --hf "$fix" --ctx 0 -o "$work/ctx.halo"
expect 1 "513 tokens is more than max_position_embeddings = 512" compile --hf "$fix" --ctx 513 -o "$work/ctx.halo"
[ -e "$work/ctx.halo" ] && fail "a refused --ctx left $work/ctx.halo behind"
expect 0 "context 256 tokens" compile --hf "$fix" --ctx 256 -o "$work/ctx.halo"
"$halo" run "$work/ctx.halo" --backend ref --tokens 1,2,3 --n-predict 4 >"$work/ctx.out" 2>/dev/null &&
	"$halo" run "$bundle" --backend ref --tokens 1,2,3 --n-predict 4 >"$work/full.out" 2>/dev/null &&
	cmp -s "$work/ctx.out" "$work/full.out" || fail "--ctx 256 generated other tokens than the default context"
expect 2 "give the prompt: --tokens, --prompt or --prompt-file" run "$bundle"
expect 2 "comma-separated" run "$bundle" --tokens 1,,2
expect 2 "--backend: unknown backend 'metal' (known: ref, vulkan, cuda, hip)" run "$bundle" --tokens 1 --backend metal
# A bundle without sm_90 PTX is refused by the cuda backend before it looks
# for a driver or a device, so on any machine.
expect 1 "cuda backend: the bundle has no 'ptx-sm90' section" run "$bundle" --tokens 1 --backend cuda
expect 2 "--top-p wants" run "$bundle" --tokens 1 --top-p 2
expect 1 "outside the vocabulary" run "$bundle" --backend ref --tokens 1,999
expect 1 "no such file\|cannot open\|No such file" run "$work/missing.halo" --backend ref --tokens 1

# Output contract: one line of N ids on stdout; logits file of prompt_len * vocab floats.
"$halo" run "$bundle" --backend ref --tokens "$tokens" --n-predict 5 --logits-out "$work/l.f32" >"$out" 2>"$err" ||
	fail "run failed: $(cat "$err")"
[ "$(wc -l <"$out")" -eq 1 ] && [ "$(wc -w <"$out")" -eq 5 ] || fail "stdout is not one line of 5 ids: $(cat "$out")"
[ "$(stat -c %s "$work/l.f32")" -eq $((48 * 256 * 4)) ] || fail "--logits-out size $(stat -c %s "$work/l.f32")"

# Profiles: per-kernel time on both backends, validation on for Vulkan.
expect 0 "profile: .* ms in dispatches" run "$bundle" --backend ref --tokens 1,2,3 --n-predict 4 --profile
# Mesa and the validation layer leak at exit (tests/meson.build, vk_test_env).
wrap="env ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"
expect 0 "matvec K=64" run "$bundle" --backend vulkan --validate --tokens 1,2,3 --n-predict 4 --profile
wrap=

# Decode's q/k norm and rope are the attention's (attention_rope) unless
# --no-rope-fusion keeps them a dispatch; either way the same tokens.
expect 0 "attention_rope" run "$bundle" --backend ref --tokens 1,2,3 --n-predict 4 --profile
expect 0 "wrote" compile --hf "$fix" --no-rope-fusion -o "$work/nr.halo"
"$halo" run "$work/nr.halo" --backend ref --tokens 1,2,3 --n-predict 4 --profile 2>&1 | grep -q attention_rope &&
	fail "--no-rope-fusion: the profile names attention_rope"
[ "$("$halo" run "$work/nr.halo" --backend ref --tokens "$tokens" --n-predict 8 2>/dev/null)" = \
  "$("$halo" run "$bundle" --backend ref --tokens "$tokens" --n-predict 8 2>/dev/null)" ] ||
	fail "--no-rope-fusion generates other tokens"

# Sampling: the same seed gives the same tokens; another seed, other tokens.
run_sampled() { "$halo" run "$bundle" --backend ref --tokens 1,2,3 --n-predict 24 --temp 1.5 --top-k 50 --seed "$1" 2>/dev/null; }
[ "$(run_sampled 5)" = "$(run_sampled 5)" ] || fail "same seed, different tokens"
[ "$(run_sampled 5)" != "$(run_sampled 6)" ] || fail "seeds 5 and 6 gave the same 24 sampled tokens"

# A bundle for the reference backend only: runs there, refused by Vulkan.
expect 2 "--targets is a list of ref, vulkan, hip and cuda that has ref" compile --hf "$fix" --targets gpu -o "$work/r.halo"
expect 2 "not 'vulkan'" compile --hf "$fix" --targets vulkan -o "$work/r.halo"
expect 2 "not 'ref,hip,hip'" compile --hf "$fix" --targets ref,hip,hip -o "$work/r.halo"
expect 0 "wrote" compile --hf "$fix" --targets ref -o "$work/r.halo"
[ "$("$halo" run "$work/r.halo" --backend ref --tokens "$tokens" --n-predict 8 2>/dev/null)" = \
  "$("$halo" run "$bundle" --backend ref --tokens "$tokens" --n-predict 8 2>/dev/null)" ] ||
	fail "a --targets ref bundle generates other tokens"
expect 1 "compiled without Vulkan kernels" run "$work/r.halo" --backend vulkan --tokens 1

# Refused bundles: truncated, corrupted, wrong magic.
head -c 1000 "$bundle" >"$work/trunc.halo"
expect 1 "trunc.halo" run "$work/trunc.halo" --backend ref --tokens 1
cp "$bundle" "$work/flip.halo"
printf '\377' | dd of="$work/flip.halo" bs=1 seek=$(($(stat -c %s "$bundle") - 100)) conv=notrunc 2>/dev/null
expect 1 "checksum" run "$work/flip.halo" --backend ref --tokens 1
cp "$bundle" "$work/magic.halo"
printf 'XALOBNDL' | dd of="$work/magic.halo" bs=1 seek=0 conv=notrunc 2>/dev/null
expect 1 "magic" run "$work/magic.halo" --backend ref --tokens 1

finish
