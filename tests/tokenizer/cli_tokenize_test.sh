#!/bin/sh
# halo tokenize and the bundle's tokenizer sections: halo compile --hf embeds
# a checkpoint's tokenizer.json (a small byte-level BPE written here, its ids
# inside the tiny Qwen3's 256 rows) with tokenizer_meta; the bundle and the
# file encode alike; a checkpoint without tokenizer.json compiles without the
# sections; flag errors exit 2, bad input 1.
# usage: cli_tokenize_test.sh HALO_BINARY QWEN3_TOKENIZER
#   (HALO_SOURCE_ROOT names the source tree; QWEN3_TOKENIZER is Qwen3's
#   tokenizer.json, tests/meson.build's qwen3_tokenizer)
test_name="cli tokenize"
. "$(dirname "$0")/../tools/test_lib.sh"
qwen=$2

ckpt=$work/ckpt
mkdir -p "$ckpt"
cp "$root/tests/fixtures/qwen3_tiny/config.json" "$root/tests/fixtures/qwen3_tiny/model.safetensors" "$ckpt/"
# write_tokenizer DIR FIRST_ADDED: bytes 0..239 as GPT-2 characters, three
# merges, filler tokens up to FIRST_ADDED and two special tokens from there
write_tokenizer() {
	python3 - "$1" "$2" <<'PY'
import json, sys
d, first = sys.argv[1], int(sys.argv[2])
def byte_char(b):
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    if b in printable:
        return chr(b)
    return chr(256 + [x for x in range(256) if x not in printable].index(b))
vocab = {byte_char(b): b for b in range(240)}
vocab.update({"he": 240, "ll": 241, "hell": 242})
vocab.update({"filler%d" % i: i for i in range(243, first)})
bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
added = [{"id": first, "content": "<|endoftext|>", "special": True, "normalized": False},
         {"id": first + 1, "content": "<|im_end|>", "special": True, "normalized": False}]
tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
       "normalizer": {"type": "NFC"}, "pre_tokenizer": bl, "post_processor": bl, "decoder": bl,
       "model": {"type": "BPE", "dropout": None, "unk_token": None, "vocab": vocab,
                 "merges": ["h e", "l l", "he ll"]}}
json.dump(tok, open(d + "/tokenizer.json", "w"), ensure_ascii=False)
json.dump({"eos_token": "<|im_end|>", "pad_token": {"content": "<|endoftext|>"}, "chat_template": "{{ m }}"},
          open(d + "/tokenizer_config.json", "w"))
json.dump({"eos_token_id": [first + 1, first]}, open(d + "/generation_config.json", "w"))
PY
}
# section BUNDLE NAME: the section's bytes on stdout (docs/bundle.md layout)
section() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack_from("<I", raw, 16)[0]
for i in range(n):
    e = 64 + 64 * i
    name = raw[e:e + 24].rstrip(b"\0").decode()
    off, size = struct.unpack_from("<QQ", raw, e + 24)
    if name == sys.argv[2]:
        sys.stdout.write(raw[off:off + size].decode())
PY
}

# a checkpoint without tokenizer.json: no sections
expect 0 "wrote" compile --hf "$ckpt" --targets ref -o "$work/plain.halo"
expect 1 "has no tokenizer section" tokenize "$work/plain.halo" --text hi

write_tokenizer "$ckpt" 243
expect 0 "wrote" compile --hf "$ckpt" --targets ref -o "$work/tok.halo"
expect 0 "^242,111,32,243$" tokenize "$work/tok.halo" --text "hello <|endoftext|>"
expect 0 "^242,111,32,243$" tokenize --tokenizer "$ckpt/tokenizer.json" --text "hello <|endoftext|>"
meta=$(section "$work/tok.halo" tokenizer_meta)
want='{"format":1,"eos_token":{"content":"<|im_end|>","id":244},"pad_token":{"content":"<|endoftext|>","id":243},"chat_template":"{{ m }}","eos_token_ids":[244,243]}'
[ "$meta" = "$want" ] || fail "tokenizer_meta is '$meta', want '$want'"
section "$work/tok.halo" tokenizer | cmp -s - "$ckpt/tokenizer.json" || fail "the tokenizer section is not tokenizer.json"
expect 0 "wrote" compile --hf "$ckpt" --targets ref --no-tokenizer -o "$work/notok.halo"
expect 1 "has no tokenizer section" tokenize "$work/notok.halo" --text hi

# ids the model cannot embed, a token tokenizer_config.json names but the tokenizer lacks
write_tokenizer "$ckpt" 300
expect 1 "tokenizer.json: token id 301 is outside the model's vocab (256 rows)" \
	compile --hf "$ckpt" --targets ref -o "$work/bad.halo"
[ -e "$work/bad.halo" ] && fail "a refused compile left a bundle"
write_tokenizer "$ckpt" 243
echo '{"eos_token": "<eos>"}' >"$ckpt/tokenizer_config.json"
expect 1 "tokenizer_config.json: eos_token '<eos>' is not a token of tokenizer.json" \
	compile --hf "$ckpt" --targets ref -o "$work/bad.halo"

# the chat template parses at compile time: one the interpreter cannot
# render is refused naming the file, the template's line and the construct
write_tokenizer "$ckpt" 243
config() { python3 -c 'import json, sys; json.dump(json.loads(sys.argv[2]), open(sys.argv[1], "w"))' "$ckpt/tokenizer_config.json" "$1"; }
config '{"chat_template": "{{ bos_token }}\n{% include \"x.jinja\" %}"}'
expect 1 "tokenizer_config.json: chat_template:2: unsupported tag 'include'" \
	compile --hf "$ckpt" --targets ref -o "$work/bad.halo"
config '{"chat_template": [{"name": "default", "template": "{{ m }}"}, {"name": "tool_use", "template": "{{ t|xmlattr }}"}]}'
expect 1 "tokenizer_config.json: chat_template 'tool_use':1: unknown filter 'xmlattr'" \
	compile --hf "$ckpt" --targets ref -o "$work/bad.halo"
[ -e "$work/bad.halo" ] && fail "a refused compile left a bundle"
echo '{}' >"$ckpt/tokenizer_config.json"
printf '{%% for m in messages %%}\n{{ m.content }}\n{%% endfor' >"$ckpt/chat_template.jinja"
expect 1 "chat_template.jinja:3: '{%' is never closed" compile --hf "$ckpt" --targets ref -o "$work/bad.halo"
cp "$root/tests/fixtures/chat_template/qwen3.jinja" "$ckpt/chat_template.jinja"
expect 0 "wrote" compile --hf "$ckpt" --targets ref -o "$work/tmpl.halo"
rm "$ckpt/chat_template.jinja"

# Qwen3's tokenizer: text, file and stdin agree; decode gives the bytes back
printf 'Hi <|im_start|>user\n你好 \360\237\221\213\360\237\217\275\n\n' >"$work/text"
expect 0 "^13048,220,151644,872,198,108386,61804,233,145375,271$" tokenize --tokenizer "$qwen" --file "$work/text"
"$halo" tokenize --tokenizer "$qwen" <"$work/text" | cmp -s - "$out" || fail "stdin and --file differ"
tr -d '\n' <"$out" >"$work/ids"
"$halo" tokenize --tokenizer "$qwen" --decode --file "$work/ids" >"$work/back" || fail "decode --file failed"
cmp -s "$work/back" "$work/text" || fail "decode does not give the text back byte for byte"
expect 0 "^Hi user" tokenize --tokenizer "$qwen" --decode --skip-special --ids "13048,220,151644,872"
expect 0 "^$" tokenize --tokenizer "$qwen" --text ""

# bad input: exit 1
printf 'a\377b' >"$work/bad_utf8"
expect 1 "the text is not valid UTF-8 (byte 1, 0xff)" tokenize --tokenizer "$qwen" --file "$work/bad_utf8"
expect 1 "'999999' is not a token id (0..151668)" tokenize --tokenizer "$qwen" --decode --ids 1,999999
echo "1, 2 x" >"$work/bad_ids"
expect 1 "'x' is not a token id" tokenize --tokenizer "$qwen" --decode --file "$work/bad_ids"
expect 1 "cannot open" tokenize --tokenizer "$work/missing.json" --text hi
echo '{"model": {"type": "Unigram"}}' >"$work/unigram.json"
expect 1 "unigram.json: model.type: 'Unigram' is not supported" tokenize --tokenizer "$work/unigram.json" --text hi
expect 1 "wrong magic" tokenize "$qwen" --text hi

# command-line errors: exit 2
expect 2 "give a bundle or --tokenizer FILE" tokenize --text hi
expect 2 "give a bundle or --tokenizer FILE" tokenize "$work/tok.halo" --tokenizer "$qwen"
expect 2 "--text and --file both give the input" tokenize --tokenizer "$qwen" --text a --file "$work/text"
expect 2 "--ids needs --decode" tokenize --tokenizer "$qwen" --ids 1
expect 2 "--decode reads ids" tokenize --tokenizer "$qwen" --decode --text a
expect 2 "'1x' is not a token id" tokenize --tokenizer "$qwen" --decode --ids 1x
expect 2 "unknown option '--bogus'" tokenize --bogus
expect 2 "option '--text' needs a value" tokenize --tokenizer "$qwen" --text
expect 0 "usage: halo tokenize" tokenize --help
finish
