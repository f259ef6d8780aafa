"""A byte-level BPE tokenizer in the Qwen2/Qwen3 layout, trained with HF `tokenizers`.

Components (the same as Qwen3's tokenizer.json, which halo's loader reads):
- normalizer NFC;
- pre-tokenizer: Split on Qwen2's regex (Isolated), then ByteLevel without its
  own regex and without a prefix space;
- model: BPE, no unk token, no byte fallback (every byte is in the alphabet);
- post-processor and decoder: ByteLevel;
- added tokens <|endoftext|>, <|im_start|>, <|im_end|> (special, not
  normalized), which the trainer puts first: ids 0, 1, 2.

The model is a base (pretrained, not chat-tuned) model whose documents end
with <|endoftext|>: that is its EOS (config.json eos_token_id, the PLE reset
token of qwen4_exp); generation_config.json also stops at <|im_end|>, so a
ChatML prompt rendered with the chat template stops where a chat model would.
"""

import json
import os

# Qwen2's pre-tokenizer split pattern, as in Qwen3's tokenizer.json (tests/fixtures/tokenizer/fetch_qwen3.sh)
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
EOT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIALS = [EOT, IM_START, IM_END]

# ChatML, the shape of Qwen3's template without tools and thinking (halo's
# Jinja subset renders every construct of Qwen3's).
CHAT_TEMPLATE = (
    "{%- for message in messages %}\n"
    "    {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n"
)

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
PRE_TOKENIZER = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": QWEN2_PATTERN}, "behavior": "Isolated", "invert": False},
    dict(BYTE_LEVEL)]}
# the keys runtime/tokenizer_load.c accepts
HALO_TOP_KEYS = {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
                 "post_processor", "decoder", "model"}
HALO_BPE_KEYS = {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                 "byte_fallback", "ignore_merges", "vocab", "merges"}
HALO_ADDED_KEYS = {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"}


def log(msg):
    print(msg, flush=True)


def check_pattern_against_fixture(repo_root):
    """The pattern equals the one in Qwen3's tokenizer.json (when present: not checked in, the tokenizer
    tests fetch it into build/tests/qwen3_tokenizer.json, tests/fixtures/tokenizer/fetch_qwen3.sh)."""
    path = os.path.join(repo_root, "build", "tests", "qwen3_tokenizer.json")
    if not os.path.exists(path):
        log(f"tokenizer: {path} not present; split pattern not cross-checked")
        return None
    with open(path, encoding="utf-8") as f:
        fixture = json.load(f)
    want = fixture["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    if want != QWEN2_PATTERN:
        raise RuntimeError(f"split pattern differs from {path}: {want!r} vs {QWEN2_PATTERN!r}")
    return True


def train_tokenizer(texts, vocab_size):
    """texts: iterable of str (train split only). Returns a tokenizers.Tokenizer."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, \
        processors, trainers
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = [AddedToken(s, special=True, normalized=False) for s in SPECIALS]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return canonicalise(tok)


def canonicalise(tok):
    """The serialised form pinned to Qwen3's component settings, reloaded; checks
    that halo's loader knows every key."""
    from tokenizers import Tokenizer
    j = json.loads(tok.to_str())
    j["truncation"] = None
    j["padding"] = None
    j["normalizer"] = {"type": "NFC"}
    j["pre_tokenizer"] = json.loads(json.dumps(PRE_TOKENIZER))
    j["post_processor"] = dict(BYTE_LEVEL)
    j["decoder"] = dict(BYTE_LEVEL)
    model = j["model"]
    if model.get("type") != "BPE":
        raise RuntimeError(f"tokenizer model is {model.get('type')}, expected BPE")
    for key in sorted(set(model) - HALO_BPE_KEYS):
        if model[key] in (None, False, "", 0):
            log(f"tokenizer: dropping model key '{key}' = {model[key]!r} (a default halo's loader does not know)")
            del model[key]
        else:
            log(f"WARNING tokenizer: model key '{key}' = {model[key]!r} is unknown to halo's loader")
    for key in sorted(set(j) - HALO_TOP_KEYS):
        log(f"WARNING tokenizer: top-level key '{key}' is unknown to halo's loader")
    added = j.get("added_tokens") or []
    got = {(a["content"], a["id"], a.get("special")) for a in added}
    want = {(s, tok.token_to_id(s), True) for s in SPECIALS}
    if not want <= got:
        raise RuntimeError(f"added tokens {sorted(got)} lack {sorted(want - got)}")
    for a in added:
        for key in sorted(set(a) - HALO_ADDED_KEYS):
            log(f"WARNING tokenizer: added token key '{key}' is unknown to halo's loader")
    return Tokenizer.from_str(json.dumps(j, ensure_ascii=False))


def verify_roundtrip(tok, texts):
    """decode(encode(t)) == NFC(t) for each text (byte-level BPE loses nothing
    but the normalisation). Returns (checked, failures)."""
    import unicodedata
    bad = 0
    for t in texts:
        ids = tok.encode(t).ids
        if tok.decode(ids, skip_special_tokens=False) != unicodedata.normalize("NFC", t):
            bad += 1
    return len(texts), bad


def encode_texts(tok, texts, batch=256):
    """Token id lists of texts (no special tokens added: the post-processor adds none)."""
    import numpy as np
    out = []
    fast = getattr(tok, "encode_batch_fast", None)
    for i in range(0, len(texts), batch):
        chunk = texts[i:i + batch]
        encs = fast(chunk) if fast else tok.encode_batch(chunk)
        out.extend(np.asarray(e.ids, dtype=np.int32) for e in encs)
    return out


def tokenizer_config(ids, model_max_length):
    """tokenizer_config.json: the ChatML template, EOS <|endoftext|> (a base model), no BOS."""
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {
            str(ids[s]): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                          "single_word": False, "special": True}
            for s in SPECIALS},
        "additional_special_tokens": [IM_START, IM_END],
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": EOT,
        "errors": "replace",
        "model_max_length": model_max_length,
        "pad_token": EOT,
        "split_special_tokens": False,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": None,
    }


def special_ids(tok):
    ids = {s: tok.token_to_id(s) for s in SPECIALS}
    if any(i is None for i in ids.values()):
        raise RuntimeError(f"special tokens missing from the vocabulary: {ids}")
    if [ids[s] for s in SPECIALS] != [0, 1, 2]:
        log(f"note: special token ids are {ids} (the trainer usually puts them at 0, 1, 2)")
    return ids


def generation_config(ids, transformers_version):
    return {
        "bos_token_id": None,
        "do_sample": False,
        "eos_token_id": [ids[EOT], ids[IM_END]],
        "pad_token_id": ids[EOT],
        "transformers_version": transformers_version,
    }


def write_tokenizer_files(tok, out_dir, model_max_length, transformers_version):
    """tokenizer.json, tokenizer_config.json and generation_config.json into out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    ids = special_ids(tok)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(ids, model_max_length), f, indent=2, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out_dir, "generation_config.json"), "w", encoding="utf-8") as f:
        json.dump(generation_config(ids, transformers_version), f, indent=2)
        f.write("\n")
    return ids


def check_with_transformers(out_dir):
    """transformers loads the folder's tokenizer and renders the chat template;
    returns what it rendered (a check for the log and the model card)."""
    import transformers
    tk = transformers.AutoTokenizer.from_pretrained(out_dir)
    msgs = [{"role": "system", "content": "You write Python."}, {"role": "user", "content": "Sort a list."}]
    text = tk.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    want = ("<|im_start|>system\nYou write Python.<|im_end|>\n<|im_start|>user\nSort a list.<|im_end|>\n"
            "<|im_start|>assistant\n")
    if text != want:
        raise RuntimeError(f"chat template rendered {text!r}, expected {want!r}")
    ids = tk("def f(x):\n    return x\n")["input_ids"]
    return {"class": type(tk).__name__, "chat_render_ok": True, "eos_token": tk.eos_token,
            "bos_token": tk.bos_token, "sample_ids": ids}
