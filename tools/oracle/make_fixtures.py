#!/usr/bin/env python3
"""Reference fixtures for halo's model tests, produced with HF transformers.

Each fixture family is one function that builds a tiny random-weight model,
saves its checkpoint (config.json + model.safetensors) and the reference
outputs of a fixed prompt. Everything runs in float32 on the CPU with one
thread, so the numbers do not depend on the GPU or on thread scheduling.

Usage (see tools/oracle/README.md):
  make_fixtures.py --out DIR [--family NAME ...] [--ref-src-tar FILE]
"""

import argparse
import copy
import json
import os
import shutil
import sys
import tarfile
import tempfile
import traceback

import numpy as np
import torch
import transformers
from safetensors import safe_open

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import dsv4_spec  # noqa: E402 - DeepSeek V4 configs, counts, rotary tables and names, without torch

# Noise added to every parameter, norms included: large enough that a wrong
# norm convention ((1+w) instead of w) or a missing q/k norm moves the logits
# far beyond float tolerance.
PARAM_NOISE_STD = 0.08
# Greedy choices closer than this are treated as ties (see pick_seed).
MIN_GREEDY_MARGIN = 1e-3
MAX_SEED_TRIES = 64
# Largest difference tolerated between two HF decoding paths of the same
# sequence (cached vs uncached, one chunk vs two): only f32 rounding differs.
MAX_PATH_DIFF = 1e-4

# Reference model sources the team reads (never committed).
REFERENCE_FAMILIES = ["qwen3", "qwen3_next", "qwen3_5_moe", "qwen4_exp", "deepseek_v4"]


def log(msg):
    print(msg, flush=True)


def randomise_parameters(model, seed, std=PARAM_NOISE_STD):
    """Adds N(0, std) noise to every parameter, in name order, from one seeded generator."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            p.add_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * std)


def instantiate(model_cls, config):
    """model_cls (None: the AutoModelForCausalLM choice) from config, eager attention when accepted."""
    if model_cls is None:
        make = transformers.AutoModelForCausalLM.from_config
    else:
        make = getattr(model_cls, "_from_config", None) or (lambda c, **_: model_cls(c))
    try:
        return make(config, attn_implementation="eager")
    except (TypeError, ValueError) as e:
        log(f"eager attention not accepted ({e}); using the default implementation")
        return make(config)


def build_causal_lm(config, seed, model_cls=None):
    """A float32 CPU model with eager attention, weights drawn from `seed`."""
    torch.manual_seed(seed)
    model = instantiate(model_cls, config).float().eval()
    randomise_parameters(model, seed + 1)
    return model


@torch.no_grad()
def greedy_reference(model, prompt, n_steps):
    """Prompt logits, greedy continuation and per-step logits, decoded with the KV cache.

    cont[0] = argmax(prompt_logits[-1]); step i feeds cont[i] and yields
    cont_logits[i], and cont[i+1] = argmax(cont_logits[i]).
    """
    out = model(input_ids=prompt[None, :], use_cache=True)
    prompt_logits = out.logits[0].float().clone()
    past = out.past_key_values
    tok = int(torch.argmax(prompt_logits[-1]))
    cont, cont_logits = [], []
    for _ in range(n_steps):
        cont.append(tok)
        out = model(input_ids=torch.tensor([[tok]]), past_key_values=past, use_cache=True)
        past = out.past_key_values
        row = out.logits[0, -1].float().clone()
        cont_logits.append(row)
        tok = int(torch.argmax(row))
    return prompt_logits, torch.tensor(cont, dtype=torch.int64), torch.stack(cont_logits)


@torch.no_grad()
def full_forward_logits(model, tokens):
    return model(input_ids=tokens[None, :], use_cache=False).logits[0].float()


@torch.no_grad()
def two_chunk_logits(model, tokens, split):
    """Logits of tokens fed as [0, split) then [split, n) through the cache."""
    first = model(input_ids=tokens[None, :split], use_cache=True)
    second = model(input_ids=tokens[None, split:], past_key_values=first.past_key_values, use_cache=True)
    return torch.cat([first.logits[0], second.logits[0]]).float()


def attn_implementation(model):
    return getattr(model.config, "_attn_implementation", None)


def top2_margin(logits):
    top = torch.topk(logits, 2, dim=-1).values
    return float((top[..., 0] - top[..., 1]).min())


def write_f32(path, t):
    np.ascontiguousarray(t.detach().cpu().numpy().astype("<f4")).tofile(path)


def write_i32(path, t):
    np.ascontiguousarray(t.detach().cpu().numpy().astype("<i4")).tofile(path)


def round_parameters(module, dtype):
    """Rounds every floating parameter to dtype and back to float32, in place:
    a checkpoint saved in dtype then holds exactly what the references ran."""
    with torch.no_grad():
        for _, p in module.named_parameters():
            if p.is_floating_point():
                p.copy_(p.to(dtype).float())


INDEX_FILE = "model.safetensors.index.json"


def read_index(out_dir):
    """The sharded checkpoint's index (None for one model.safetensors)."""
    path = os.path.join(out_dir, INDEX_FILE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def checkpoint_files(out_dir):
    """The checkpoint's safetensors files: the shards the index names, in order, or model.safetensors."""
    index = read_index(out_dir)
    return sorted(set(index["weight_map"].values())) if index else ["model.safetensors"]


def checkpoint_names(out_dir):
    names = []
    for fname in checkpoint_files(out_dir):
        with safe_open(os.path.join(out_dir, fname), "pt") as f:
            names.extend(f.keys())
    return sorted(names)


def save_checkpoint(model, out_dir, dtype=torch.float32, max_shard_size=None):
    """config.json + model.safetensors only (save_pretrained may add other files),
    or, with max_shard_size, config.json + model.safetensors.index.json + the
    shards it names (at least two: the point of sharding a tiny model).

    dtype other than float32 (the trained models' float16): a converted copy is
    saved, the model itself is left as it is."""
    tmp = out_dir + ".ckpt"
    shutil.rmtree(tmp, ignore_errors=True)
    kwargs = {"max_shard_size": max_shard_size} if max_shard_size else {}
    (model if dtype == torch.float32 else copy.deepcopy(model).to(dtype)).save_pretrained(tmp, **kwargs)
    keep = ["config.json"] + ([INDEX_FILE] + checkpoint_files(tmp) if max_shard_size else ["model.safetensors"])
    if max_shard_size and len(keep) < 4:
        raise SystemExit(f"save_pretrained(max_shard_size={max_shard_size}) wrote {sorted(os.listdir(tmp))}, "
                         "not an index and two or more shards")
    extra = sorted(set(os.listdir(tmp)) - set(keep))
    if extra:
        log(f"save_pretrained also wrote {extra}; not kept")
    for f in keep:
        shutil.move(os.path.join(tmp, f), os.path.join(out_dir, f))
    shutil.rmtree(tmp)


def edit_config(out_dir, edit):
    """config.json rewritten by edit(dict) (the text config when nested)."""
    path = os.path.join(out_dir, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    edit(cfg.get("text_config") or cfg)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def check_checkpoint(model, out_dir, tokens, model_cls=None, dtype=torch.float32, integer_tensors=()):
    """Reloads the saved checkpoint and checks it reproduces the model bit for bit.

    dtype: what the checkpoint's floating tensors must be; one narrower than
    float32 holds the model exactly only when its weights were rounded to it.
    integer_tensors: name endings of integer buffers saved under names that are
    not the buffer's own (DeepSeek V4's `ffn.gate.tid2eid`, saved under its
    upstream name), left out of the dtype check like the buffers themselves.

    Returns the checkpoint's tensor names. They may differ from the parameter
    names where transformers converts a layout on load and back on save (per-
    expert tensors of MoE checkpoints): the bit-exact reload is what proves the
    checkpoint holds the model.
    """
    buffers = {n for n, _ in model.named_buffers()}
    names, dtypes = [], set()
    for fname in checkpoint_files(out_dir):
        with safe_open(os.path.join(out_dir, fname), "pt") as f:
            names.extend(f.keys())
            # persistent integer buffers (the qwen4_exp PLE hash tables) are saved as they are
            dtypes |= {str(f.get_tensor(n).dtype) for n in f.keys()
                       if n not in buffers and not n.endswith(tuple(integer_tensors))}
    names.sort()
    params = sorted(n for n, _ in model.named_parameters())
    if names != params:
        only_ckpt, only_model = sorted(set(names) - set(params)), sorted(set(params) - set(names))
        log(f"checkpoint layout differs from the parameters: {len(only_ckpt)} names only in the checkpoint "
            f"(e.g. {only_ckpt[:4]}), {len(only_model)} only in the model (e.g. {only_model[:4]})")
    if dtypes != {str(dtype)}:
        raise SystemExit(f"checkpoint dtypes are {dtypes}, expected {str(dtype)[len('torch.'):]} only")
    impl = attn_implementation(model)
    kwargs = {"attn_implementation": impl} if impl else {}
    if dtype != torch.float32:
        kwargs["dtype"] = torch.float32
    loader = model_cls or transformers.AutoModelForCausalLM
    again = loader.from_pretrained(out_dir, **kwargs).float().eval()
    diff = float((full_forward_logits(again, tokens) - full_forward_logits(model, tokens)).abs().max())
    if diff != 0.0:
        raise SystemExit(f"reloaded checkpoint gives different logits (max diff {diff})")
    return names


def hf_checkpoint(model_cls=None, dtype=torch.float32, max_shard_size=None, config_edit=None, integer_tensors=()):
    """write_fixture's default checkpoint writer: save_pretrained in dtype
    (sharded with max_shard_size), config.json edited by config_edit (before
    the reload, so the reload reads the edited config), then the bit-exact
    reload check (integer_tensors: see check_checkpoint). Returns (tensor
    names, meta entries)."""
    def write(model, out_dir, tokens):
        save_checkpoint(model, out_dir, dtype, max_shard_size)
        if config_edit:
            edit_config(out_dir, config_edit)
        names = check_checkpoint(model, out_dir, tokens, model_cls, dtype, integer_tensors)
        meta = {"checkpoint_files": len(checkpoint_files(out_dir))}
        if dtype != torch.float32:
            meta["checkpoint_dtype"] = str(dtype)[len("torch."):]
        return names, meta
    return write


def greedy_margin(prompt_logits, cont_logits):
    """Smallest top-1/top-2 gap over the rows that chose a continuation token."""
    return top2_margin(torch.cat([prompt_logits[-1:], cont_logits[:-1]]))


def pick_seed(make_model_and_prompt, first_seed, n_steps):
    """First seed from first_seed on whose greedy choices are all clear.

    A near tie (gap of float rounding size) would make a correct
    implementation pick the other token and diverge, so such draws are skipped.
    """
    for seed in range(first_seed, first_seed + MAX_SEED_TRIES):
        model, prompt = make_model_and_prompt(seed)
        ref = greedy_reference(model, prompt, n_steps)
        margin = greedy_margin(ref[0], ref[2])
        if margin >= MIN_GREEDY_MARGIN:
            return seed, model, prompt, ref
        log(f"seed {seed}: greedy top-2 gap {margin:.3g} < {MIN_GREEDY_MARGIN}, next seed")
    raise SystemExit(f"no seed in [{first_seed}, {first_seed + MAX_SEED_TRIES}) gives clear greedy choices")


def check_paths_agree(model, prompt, ref, split, strict=True):
    """The cached decode must agree with one uncached pass over the whole
    sequence, and (when split) a prompt fed in two chunks through the cache
    with the one-chunk prompt logits. Returns the measured differences; when
    not strict, a difference over the limit is recorded instead of fatal."""
    prompt_logits, cont, cont_logits = ref
    n = len(prompt)
    full = full_forward_logits(model, torch.cat([prompt, cont]))
    diffs = {"cache_vs_full_max_abs_diff": max(float((full[:n] - prompt_logits).abs().max()),
                                               float((full[n:] - cont_logits).abs().max()))}
    if split:
        chunked = two_chunk_logits(model, prompt, split)
        diffs["two_chunks_vs_one_max_abs_diff"] = float((chunked - prompt_logits).abs().max())
    for what, d in list(diffs.items()):
        if d > MAX_PATH_DIFF:
            if strict:
                raise SystemExit(f"{what} is {d}, above {MAX_PATH_DIFF}")
            log(f"warning: {what} is {d}, above {MAX_PATH_DIFF}")
            diffs[what.replace("_max_abs_diff", "_over_limit")] = True
    return diffs


def experts_layout(names):
    """How the checkpoint stores MoE experts: per-expert 2-D tensors (Qwen's
    gate/up/down_proj, DeepSeek's w1/w3/w2), stacked 3-D ones, or none."""
    if any(".experts.0.gate_proj.weight" in n or ".experts.0.w1.weight" in n for n in names):
        return "per_expert"
    return "fused" if any(n.endswith(".experts.gate_up_proj") for n in names) else "none"


def write_fixture(out_dir, model, prompt, seed, ref, model_cls=None, split=0, extra_meta=None, strict=True,
                  ckpt_dtype=torch.float32, checkpoint=None):
    """The files every decoder-only fixture family shares (tests/fixtures/*/README.md).

    split > 0 also checks HF's own two-chunk prefill ([0, split), then the rest).
    ckpt_dtype: the checkpoint's floating dtype (float16 for tools/train's
    trained models, whose weights are rounded to it before the references).
    checkpoint(model, out_dir, prompt) -> (tensor names, meta entries): writes
    and checks the checkpoint; default hf_checkpoint(model_cls, ckpt_dtype).
    """
    os.makedirs(out_dir, exist_ok=True)
    prompt_logits, cont, cont_logits = ref
    diffs = check_paths_agree(model, prompt, ref, split, strict)

    write_i32(os.path.join(out_dir, "prompt_tokens.i32"), prompt)
    write_f32(os.path.join(out_dir, "prompt_logits.f32"), prompt_logits)
    write_i32(os.path.join(out_dir, "continuation_tokens.i32"), cont)
    write_f32(os.path.join(out_dir, "continuation_logits.f32"), cont_logits)
    names, ckpt_meta = (checkpoint or hf_checkpoint(model_cls, ckpt_dtype))(model, out_dir, prompt)

    meta = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "model_class": type(model).__name__,
        "seed": seed,
        "param_noise_std": PARAM_NOISE_STD,
        "attn_implementation": attn_implementation(model),
        "vocab": int(prompt_logits.shape[-1]),
        "prompt_len": len(prompt),
        "continuation_len": len(cont),
        "checkpoint_tensors": len(names),
        "prompt_logits_abs_max": float(prompt_logits.abs().max()),
        "prompt_top2_margin_min": top2_margin(prompt_logits),
        "greedy_top2_margin_min": greedy_margin(prompt_logits, cont_logits),
    }
    if experts_layout(names) != "none":
        meta["experts_layout"] = experts_layout(names)
    meta.update(ckpt_meta)
    meta.update(diffs)
    meta.update(extra_meta or {})
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    log(f"{out_dir}: {json.dumps(meta, sort_keys=True)}")
    log(f"continuation: {cont.tolist()}")
    log(f"checkpoint tensors: {names}")


def check_rope(rotary_emb, theta, rot_dim):
    """rope_theta and the partial rotary width reached the model (rotary inv_freq)."""
    inv_freq = rotary_emb.inv_freq
    want = 1.0 / (theta ** (torch.arange(0, rot_dim, 2, dtype=torch.float32) / rot_dim))
    if inv_freq.shape != want.shape or float((inv_freq - want).abs().max()) > 1e-6:
        raise SystemExit(f"rope did not reach the model as theta {theta}, rot_dim {rot_dim}: "
                         f"inv_freq {inv_freq.tolist()}")


def family_qwen3_tiny(out_root, first_seed=1234):
    cfg = transformers.Qwen3Config(
        vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )

    def make(seed):
        model = build_causal_lm(cfg, seed)
        check_rope(model.model.rotary_emb, 10000.0, 16)
        gen = torch.Generator().manual_seed(seed + 2)
        return model, torch.randint(0, cfg.vocab_size, (48,), generator=gen)

    seed, model, prompt, ref = pick_seed(make, first_seed, 32)
    write_fixture(os.path.join(out_root, "qwen3_tiny"), model, prompt, seed, ref)


# ---- qwen3_fp8: a block-fp8 checkpoint as Qwen's FP8 releases ship -----------
# The decoder's projections are F8_E4M3 with a float32 `<name>.weight_scale_inv`
# of shape [ceil(out/128), ceil(in/128)] (transformers' FP8Linear layout,
# integrations/finegrained_fp8.py); weight = code * scale of its 128x128
# block. The embedding, the norms and lm_head are bfloat16 without a scale.
# Hidden 192, kv rows 64 and intermediate 320 end in partial blocks on both
# axes. The references run the float32 model holding exactly those values:
# code * scale for the projections, the bfloat16 values for the rest.
FP8_BLOCK = 128
FP8_MAX = 448.0
FP8_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
FP8_QUANTIZATION_CONFIG = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                           "weight_block_size": [FP8_BLOCK, FP8_BLOCK]}
FP8_PROMPT_LEN = 80
FP8_CONTINUATION_LEN = 24


def is_fp8_projection(name):
    return name.startswith("model.layers.") and name.endswith(tuple(f".{p}.weight" for p in FP8_PROJECTIONS))


def fp8_quantize(w):
    """w [N, K] float32 -> (codes float8_e4m3fn [N, K], scales float32 [ceil(N/128), ceil(K/128)]):
    per block scale = amax / 448, code = w / scale rounded to e4m3 (saturating)."""
    n, k, b = w.shape[0], w.shape[1], FP8_BLOCK
    scales = torch.empty((n + b - 1) // b, (k + b - 1) // b, dtype=torch.float32)
    scaled = torch.empty(n, k, dtype=torch.float32)
    for i in range(scales.shape[0]):
        for j in range(scales.shape[1]):
            blk = w[i * b:(i + 1) * b, j * b:(j + 1) * b]
            s = blk.abs().max() / FP8_MAX
            if not s > 0:
                raise SystemExit(f"fp8 block ({i}, {j}) has scale {float(s)}")
            scales[i, j] = s
            scaled[i * b:(i + 1) * b, j * b:(j + 1) * b] = (blk / s).clamp(-FP8_MAX, FP8_MAX)
    return scaled.to(torch.float8_e4m3fn), scales


def fp8_dequantize(codes, scales):
    """code * its block's scale, one float32 product per element (as halo's reader forms it)."""
    n, k, b = codes.shape[0], codes.shape[1], FP8_BLOCK
    s = scales.repeat_interleave(b, dim=0)[:n].repeat_interleave(b, dim=1)[:, :k]
    return codes.float() * s


@torch.no_grad()
def to_fp8_form(model):
    """Quantizes the model once into its checkpoint tensors (projections as
    codes + weight_scale_inv, the rest bfloat16) and gives every parameter the
    value the checkpoint holds for it. The tensors stay on the model
    (fp8_checkpoint writes them): quantizing the dequantized values again could
    round a scale differently."""
    tensors = {}
    for name, p in model.named_parameters():
        if is_fp8_projection(name):
            codes, scales = fp8_quantize(p.float())
            tensors[name], tensors[name + "_scale_inv"] = codes.contiguous(), scales.contiguous()
            p.copy_(fp8_dequantize(codes, scales))
        else:
            tensors[name] = p.to(torch.bfloat16).contiguous()
            p.copy_(tensors[name].float())
    model.fp8_checkpoint_tensors = tensors


def fp8_checkpoint(model, out_dir, tokens):
    """write_fixture's checkpoint writer for qwen3_fp8: config.json with the
    release's quantization_config, model.safetensors as described above. The
    check reads the file back, dequantizes the fp8 tensors, loads everything
    into a fresh float32 model and requires the model's tensors and logits bit
    for bit (transformers' own fp8 loader dequantizes to bfloat16 on a CPU, so
    it cannot give the float32 references)."""
    from safetensors.torch import load_file, save_file
    save_file(model.fp8_checkpoint_tensors, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    model.config.save_pretrained(out_dir)  # config.json, written as the other families' save_pretrained writes it

    def released_form(c):
        c["architectures"] = [type(model).__name__]
        c["quantization_config"] = FP8_QUANTIZATION_CONFIG
        c["dtype"] = "bfloat16"
    edit_config(out_dir, released_form)

    saved = load_file(os.path.join(out_dir, "model.safetensors"))
    state = {}
    for name, t in saved.items():
        if name.endswith("_scale_inv"):
            continue
        want = torch.float8_e4m3fn if is_fp8_projection(name) else torch.bfloat16
        if t.dtype != want or (name + "_scale_inv" in saved) != is_fp8_projection(name):
            raise SystemExit(f"checkpoint tensor {name} is {t.dtype}, scale {name + '_scale_inv' in saved}")
        state[name] = fp8_dequantize(t, saved[name + "_scale_inv"]) if is_fp8_projection(name) else t.float()
    for name, t in model.state_dict().items():
        if not torch.equal(state[name], t):
            raise SystemExit(f"checkpoint tensor {name} does not hold the model's values")
    again = instantiate(None, model.config).float().eval()
    again.load_state_dict(state, strict=True)
    diff = float((full_forward_logits(again, tokens) - full_forward_logits(model, tokens)).abs().max())
    if diff != 0.0:
        raise SystemExit(f"the dequantized checkpoint gives different logits (max diff {diff})")
    n_fp8 = sum(1 for n in saved if is_fp8_projection(n))
    partial = sum(1 for n in saved if is_fp8_projection(n) and any(d % FP8_BLOCK for d in saved[n].shape))
    return sorted(saved), {"checkpoint_files": 1, "fp8_tensors": n_fp8, "fp8_tensors_with_partial_blocks": partial}


def family_qwen3_fp8(out_root, first_seed=1234):
    cfg = transformers.Qwen3Config(
        vocab_size=256, hidden_size=192, intermediate_size=320, num_hidden_layers=2,
        num_attention_heads=6, num_key_value_heads=2, head_dim=32,
        max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )

    def make(seed):
        model = build_causal_lm(cfg, seed)
        to_fp8_form(model)
        check_rope(model.model.rotary_emb, 10000.0, 32)
        gen = torch.Generator().manual_seed(seed + 2)
        return model, torch.randint(0, cfg.vocab_size, (FP8_PROMPT_LEN,), generator=gen)

    seed, model, prompt, ref = pick_seed(make, first_seed, FP8_CONTINUATION_LEN)
    write_fixture(os.path.join(out_root, "qwen3_fp8"), model, prompt, seed, ref, checkpoint=fp8_checkpoint,
                  extra_meta={"quantization_config": FP8_QUANTIZATION_CONFIG})


# The GDN hybrids: prompts longer than HF's GDN chunk (64) and than halo's
# prefill entry (64 tokens), so both sides run a second chunk on top of state.
GDN_PROMPT_LEN = 88
GDN_CONTINUATION_LEN = 24
GDN_CHUNK_SPLIT = 50  # HF's own two-chunk prefill check splits here

# Shared by both hybrid families: GDN, attention, GDN; every layer MoE with a
# shared expert; 8 experts, top-2; value heads = 2 x key heads (GDN GQA);
# partial rotary (0.25 of head_dim 32 = 8 channels).
GDN_VOCAB = 192
GDN_ROPE_THETA = 10000.0
GDN_ROT_DIM = 8
# EOS id and its positions in every GDN-family prompt: scattered, two in a
# row (69, 70), and one right after the 64-token prefill chunk boundary.
GDN_EOS = 1
GDN_EOS_AT = (9, 23, 41, 65, 69, 70, 83)


def gdn_prompt(seed, vocab):
    """GDN_PROMPT_LEN random ids without EOS, then EOS at GDN_EOS_AT."""
    gen = torch.Generator().manual_seed(seed + 2)
    prompt = torch.randint(GDN_EOS + 1, vocab, (GDN_PROMPT_LEN,), generator=gen)
    prompt[list(GDN_EOS_AT)] = GDN_EOS
    return prompt


def gdn_text_config(**overrides):
    """A fresh dict each call (configs may keep or alter what they are given)."""
    cfg = dict(
        vocab_size=GDN_VOCAB, hidden_size=64, num_hidden_layers=3,
        layer_types=["linear_attention", "full_attention", "linear_attention"],
        num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        linear_conv_kernel_dim=4, linear_num_key_heads=2, linear_num_value_heads=4,
        num_experts=8, num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=32,
        max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False, eos_token_id=GDN_EOS,
        rope_parameters={"rope_type": "default", "rope_theta": GDN_ROPE_THETA, "partial_rotary_factor": 0.25},
    )
    cfg.update(overrides)
    return cfg


def gdn_family(out_root, name, cfg, model_cls, text_model, first_seed):
    """Builds, checks and writes one GDN hybrid family; text_model(model) is its decoder stack."""
    def make(seed):
        model = build_causal_lm(cfg, seed, model_cls)
        check_rope(text_model(model).rotary_emb, GDN_ROPE_THETA, GDN_ROT_DIM)
        return model, gdn_prompt(seed, GDN_VOCAB)

    seed, model, prompt, ref = pick_seed(make, first_seed, GDN_CONTINUATION_LEN)
    out_dir = os.path.join(out_root, name)
    write_fixture(out_dir, model, prompt, seed, ref, model_cls, GDN_CHUNK_SPLIT,
                  {"rotary_dim": GDN_ROT_DIM, "eos_at": list(GDN_EOS_AT)})
    try:
        add_qwen_mtp(model, text_model(model), prompt, int(ref[1][0]), seed + 3, out_dir)
    except Exception:  # noqa: BLE001 - the target fixture stands without its draft head
        log(f"{name}: no MTP head:\n" + traceback.format_exc())


def family_qwen3_next_tiny(out_root, first_seed=1234):
    # key head dim < value head dim here (the other family has the reverse),
    # so a transposed recurrent state cannot pass both.
    cfg = transformers.Qwen3NextConfig(**gdn_text_config(linear_key_head_dim=8, linear_value_head_dim=16,
                                                         norm_topk_prob=True))
    gdn_family(out_root, "qwen3_next_tiny", cfg, transformers.Qwen3NextForCausalLM, lambda m: m.model,
               first_seed)


def family_qwen3_5_moe_tiny(out_root, first_seed=1234):
    """The released form: a vision-language model whose text config is nested
    under text_config and whose decoder lives under model.language_model. The
    vision tower is the smallest the config allows; text prompts never use it."""
    text = gdn_text_config(linear_key_head_dim=16, linear_value_head_dim=8)
    # M-RoPE sections for rot_dim 8; text-only positions make them irrelevant
    text["rope_parameters"].update(mrope_section=[2, 1, 1], mrope_interleaved=True)
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, in_channels=3, patch_size=2,
                  temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=64, num_position_embeddings=16)

    def text_model(m):
        return getattr(m.model, "language_model", m.model)

    try:
        cfg = transformers.Qwen3_5MoeConfig(text_config=text, vision_config=vision, tie_word_embeddings=False)
        gdn_family(out_root, "qwen3_5_moe_tiny", cfg, transformers.Qwen3_5MoeForConditionalGeneration,
                   text_model, first_seed)
    except (Exception, SystemExit):  # noqa: BLE001 - logged; the text-only form is the fallback
        log("the nested Qwen3_5MoeForConditionalGeneration form failed; writing the text-only "
            "Qwen3_5MoeForCausalLM form instead:\n" + traceback.format_exc())
        gdn_family(out_root, "qwen3_5_moe_tiny", transformers.Qwen3_5MoeTextConfig(**text),
                   transformers.Qwen3_5MoeForCausalLM, text_model, first_seed)


# ---- MTP draft heads ---------------------------------------------------------
# transformers drops `mtp.*`, so the heads are written here from transformers'
# own building blocks (the decoder layer, norm and rotary classes of the
# target), following docs/models.md section 1.6 (from vLLM):
#   e = pre_fc_norm_embedding(embed(x_{p+1})), h = pre_fc_norm_hidden(H_p)
#   u = fc([e | h]); u = layers.0(u) at position p; g = norm(u); logits = lm_head(g)
# H_p is the target's last hidden state (after its final norm); the head's
# own output g is the hidden state of the next chained draft.
MTP_CHAIN_STEPS = 3


class QwenMtpHead(torch.nn.Module):
    def __init__(self, text, cfg):
        super().__init__()
        norm_cls, hidden, eps = type(text.norm), cfg.hidden_size, cfg.rms_norm_eps
        attn_idx = list(cfg.layer_types).index("full_attention")
        self.pre_fc_norm_embedding = norm_cls(hidden, eps=eps)
        self.pre_fc_norm_hidden = norm_cls(hidden, eps=eps)
        self.fc = torch.nn.Linear(2 * hidden, hidden, bias=False)
        self.layers = torch.nn.ModuleList([type(text.layers[attn_idx])(cfg, attn_idx)])
        self.norm = norm_cls(hidden, eps=eps)

    def forward(self, text, lm_head, hidden, next_tokens):
        """Uncached causal pass over rows 0..T-1 (positions 0..T-1): (logits, g)."""
        t = hidden.shape[0]
        e = self.pre_fc_norm_embedding(text.embed_tokens(next_tokens[None, :]))
        h = self.pre_fc_norm_hidden(hidden[None, :, :])
        u = self.fc(torch.cat([e, h], dim=-1))
        pos = torch.arange(t)[None, :]
        rope = getattr(text.config, "rope_parameters", None) or {}
        ids = pos[None].expand(3, 1, t) if "mrope_section" in rope else pos
        pe = text.rotary_emb(u, ids)
        mask = torch.full((t, t), torch.finfo(torch.float32).min).triu(1)[None, None]
        out = self.layers[0](hidden_states=u, position_embeddings=pe, attention_mask=mask, position_ids=pos,
                             past_key_values=None)
        u = out[0] if isinstance(out, tuple) else out
        g = self.norm(u)
        return lm_head(g)[0].float(), g[0]


def checkpoint_tensors(prefix, module, per_expert):
    """module's parameters under prefix; fused expert tensors split per expert
    when the target's checkpoint stores its experts that way."""
    out = {}
    for name, p in module.state_dict().items():
        t = p.detach().clone().contiguous()
        if per_expert and name.endswith("experts.gate_up_proj"):
            base, inter = name[:-len("gate_up_proj")], t.shape[1] // 2
            for e in range(t.shape[0]):
                out[f"{prefix}{base}{e}.gate_proj.weight"] = t[e, :inter].contiguous()
                out[f"{prefix}{base}{e}.up_proj.weight"] = t[e, inter:].contiguous()
        elif per_expert and name.endswith("experts.down_proj"):
            base = name[:-len("down_proj")]
            for e in range(t.shape[0]):
                out[f"{prefix}{base}{e}.down_proj.weight"] = t[e].contiguous()
        else:
            out[prefix + name] = t
    return out


def append_checkpoint(out_dir, tensors, config_keys):
    """Adds tensors to model.safetensors (a sharded checkpoint: to its last
    shard, and to the index) and config_keys to config.json (the text config
    when nested)."""
    from safetensors.torch import load_file, save_file
    clash = sorted(set(checkpoint_names(out_dir)) & set(tensors))
    if clash:
        raise SystemExit(f"MTP tensors clash with the target's: {clash[:4]}")
    fname = checkpoint_files(out_dir)[-1]
    path = os.path.join(out_dir, fname)
    all_t = load_file(path)
    all_t.update(tensors)
    save_file(all_t, path, metadata={"format": "pt"})
    index = read_index(out_dir)
    if index:
        index["weight_map"].update({n: fname for n in tensors})
        meta = index.setdefault("metadata", {})
        meta["total_size"] = meta.get("total_size", 0) + sum(t.numel() * t.element_size() for t in tensors.values())
        if "total_parameters" in meta:
            meta["total_parameters"] += sum(t.numel() for t in tensors.values())
        with open(os.path.join(out_dir, INDEX_FILE), "w") as f:
            json.dump(index, f, indent=2, sort_keys=True)
            f.write("\n")
    edit_config(out_dir, lambda cfg: cfg.update(config_keys))


def save_mtp_head(out_dir, head, hidden, logits, chain_tokens, chain_logits, dtype=torch.float32):
    """The head's tensors join the fixture's checkpoint under mtp. (experts laid
    out like the target's, floating tensors in dtype), config.json gains
    mtp_num_hidden_layers: 1 (the released checkpoints' key; SGLang and vLLM
    read it), and the reference outputs are written. Returns the tensors."""
    per_expert = experts_layout(checkpoint_names(out_dir)) == "per_expert"
    tensors = checkpoint_tensors("mtp.", head, per_expert)
    if dtype != torch.float32:
        tensors = {n: t.to(dtype) if t.is_floating_point() else t for n, t in tensors.items()}
    append_checkpoint(out_dir, tensors, {"mtp_num_hidden_layers": 1})
    write_mtp_refs(out_dir, hidden, logits, chain_tokens, chain_logits)
    return tensors


def write_mtp_refs(out_dir, hidden, logits, chain_tokens, chain_logits):
    """The MTP reference files every head writes (tools/oracle/README.md)."""
    write_f32(os.path.join(out_dir, "mtp_hidden.f32"), hidden)
    write_f32(os.path.join(out_dir, "mtp_draft_logits.f32"), logits)
    write_i32(os.path.join(out_dir, "mtp_chain_tokens.i32"), chain_tokens)
    write_f32(os.path.join(out_dir, "mtp_chain_logits.f32"), chain_logits)


@torch.no_grad()
def mtp_chain(head, text, lm_head, hidden, next_tokens, steps):
    """Chained drafts after the prompt, recomputed uncached: step j appends the
    row (g of the previous last row, its argmax token). Returns the draft
    tokens and the logits of each appended row."""
    toks, rows = [], []
    logits, g = head(text, lm_head, hidden, next_tokens)
    for _ in range(steps):
        tok = int(torch.argmax(logits[-1]))
        toks.append(tok)
        hidden = torch.cat([hidden, g[-1:]])
        next_tokens = torch.cat([next_tokens, torch.tensor([tok])])
        logits, g = head(text, lm_head, hidden, next_tokens)
        rows.append(logits[-1])
    return torch.tensor(toks), torch.stack(rows)


@torch.no_grad()
def add_qwen_mtp(model, text, prompt, first_token, seed, out_dir):
    """A random MTP head for a Qwen3-Next / Qwen3.5 fixture: its tensors join
    the checkpoint (mtp.*, mtp_num_hidden_layers 1) and its draft logits over
    the prompt are written: row p = MTP(H_p, x_{p+1}), x_n the first greedy token."""
    torch.manual_seed(seed)
    head = QwenMtpHead(text, text.config).float().eval()
    gen = torch.Generator().manual_seed(seed)
    for _, p in sorted(head.named_parameters(), key=lambda kv: kv[0]):
        p.copy_(torch.randn(p.shape, generator=gen) * PARAM_NOISE_STD)
    hidden = text(input_ids=prompt[None, :], use_cache=False).last_hidden_state[0].float()
    next_tokens = torch.cat([prompt[1:], torch.tensor([first_token])])
    logits, _ = head(text, model.lm_head, hidden, next_tokens)
    chain_tokens, chain_logits = mtp_chain(head, text, model.lm_head, hidden, next_tokens, MTP_CHAIN_STEPS)
    save_mtp_head(out_dir, head, hidden, logits, chain_tokens, chain_logits)
    log(f"{out_dir}: MTP head, {sum(p.numel() for p in head.parameters())} parameters, draft logits "
        f"{tuple(logits.shape)}, chain {chain_tokens.tolist()}, "
        f"draft top2 margin {top2_margin(logits):.3g}, chain {top2_margin(chain_logits):.3g}")


# Qwen4-Exp (models.md section 6.1): hyper-connections, PLE on layer 2 (one-indexed),
# a QSA layer whose block selection starts at t >= 5, GDN with sigmoid output gate.
# EOS resets the PLE n-gram history, so its prompt has the GDN families' EOS pattern.
QWEN4_ROT_DIM = 8


def qwen4_exp_text_config():
    return dict(
        vocab_size=256, hidden_size=64, num_hidden_layers=4,
        layer_types=["linear_attention", "linear_attention", "qwen_sparse_attention", "linear_attention"],
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        rope_parameters={"rope_type": "default", "rope_theta": GDN_ROPE_THETA, "partial_rotary_factor": 0.5,
                         "mrope_section": [2, 1, 1], "mrope_interleaved": True},
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
        linear_conv_kernel_dim=4, hidden_act="silu", output_gate_type="sigmoid",
        num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32,
        norm_topk_prob=True, hc_count=4, hc_lowrank=16,
        ple_layer_ids=[2], ple_embed_dim=32, ple_conv_kernel_size=4, ngram_size=3, heads_per_ngram=2,
        ngram_vocab_size_base=64, make_ngram_vocab_size_divisible_by=128, seed=1234, split_ngram_parts=2,
        indexer_n_heads=2, indexer_kv_heads=1, indexer_head_dim=16, indexer_budget=4, indexer_compress_ratio=2,
        rms_norm_eps=1e-6, tie_word_embeddings=False, eos_token_id=GDN_EOS, max_position_embeddings=256,
    )


@torch.no_grad()
def write_hidden_states(model, prompt, out_dir):
    """The wide residual after every decoder layer of one uncached prompt pass,
    [L, T, hc_count * hidden]: lets a failing comparison be traced to a layer."""
    try:
        out = model(input_ids=prompt[None, :], use_cache=False, output_hidden_states=True)
        hs = [h[0].float() for h in out.hidden_states if h.shape[-1] != model.config.hidden_size]
        write_f32(os.path.join(out_dir, "prompt_hidden_wide.f32"), torch.stack(hs))
        return len(hs)
    except Exception:  # noqa: BLE001 - a debugging aid only; the fixture stands without it
        log("no per-layer hidden states:\n" + traceback.format_exc())
        return 0


def qwen4_text_config_class():
    mod = getattr(transformers, "Qwen4ExpTextConfig", None)
    if mod is None:
        from transformers.models.qwen4_exp import configuration_qwen4_exp as mod_cfg
        mod = mod_cfg.Qwen4ExpTextConfig
    return mod


def qwen4_family(out_root, name, cfg, first_seed, ckpt_dtype=torch.float32, max_shard_size=None,
                 config_edit=None, extra_meta=None):
    """Builds, checks and writes one Qwen4-Exp family with its MTP head. A
    ckpt_dtype other than float32 rounds the weights (the head's too) to it
    before any reference is computed, so the checkpoint is what they ran."""
    model_cls = transformers.Qwen4ExpForCausalLM

    def make(seed):
        model = build_causal_lm(cfg, seed, model_cls)
        round_parameters(model, ckpt_dtype)
        check_rope(model.model.rotary_emb, GDN_ROPE_THETA, QWEN4_ROT_DIM)
        return model, gdn_prompt(seed, 256)

    seed, model, prompt, ref = pick_seed(make, first_seed, GDN_CONTINUATION_LEN)
    out_dir = os.path.join(out_root, name)
    os.makedirs(out_dir, exist_ok=True)
    n_hidden = write_hidden_states(model, prompt, out_dir)
    meta = {"rotary_dim": QWEN4_ROT_DIM, "eos_at": list(GDN_EOS_AT), "hidden_wide_layers": n_hidden}
    meta.update(extra_meta or {})
    write_fixture(out_dir, model, prompt, seed, ref, model_cls, GDN_CHUNK_SPLIT, meta, strict=False,
                  checkpoint=hf_checkpoint(model_cls, ckpt_dtype, max_shard_size, config_edit))
    try:
        add_qwen4_mtp(model, prompt, int(ref[1][0]), seed + 3, out_dir, dtype=ckpt_dtype)
    except Exception:  # noqa: BLE001 - the target fixture stands without its draft head
        log(f"{name}: no MTP head:\n" + traceback.format_exc())


def family_qwen4_exp_tiny(out_root, first_seed=1234):
    cfg = qwen4_text_config_class()(**qwen4_exp_text_config())
    qwen4_family(out_root, "qwen4_exp_tiny", cfg, first_seed)


def family_qwen4_exp_hc5(out_root, first_seed=1234):
    """The tiny model with 5 hyper-connection streams (W = 320)."""
    cfg = qwen4_text_config_class()(**dict(qwen4_exp_text_config(), hc_count=5))
    qwen4_family(out_root, "qwen4_exp_hc5", cfg, first_seed)


# qwen4_exp_var: what released checkpoints bring and the tiny one lacks. No
# layer_types (transformers derives them from full_attention_interval, here 2:
# GDN, QSA, GDN, QSA), 3 streams, PLE on both GDN layers (one-indexed 1 and 3)
# whose n-gram tables differ in height: with ngram_vocab_size_base 80, layer 0
# takes the primes 83 + 89 + 97 + 101 = 370 (384 rows) and layer 1 the next
# four, 103 + 107 + 109 + 113 = 432 (512 rows), each split in 4 checkpoint
# pieces; bfloat16 tensors in 2 or more shards with an index.
QWEN4_VAR_INTERVAL = 2
QWEN4_VAR_SHARD_BYTES = 300_000


def family_qwen4_exp_var(out_root, first_seed=1234):
    text = qwen4_exp_text_config()
    del text["layer_types"]
    text.update(hc_count=3, ple_layer_ids=[1, 3], ngram_vocab_size_base=80, split_ngram_parts=4)
    cfg = qwen4_text_config_class()(**text, full_attention_interval=QWEN4_VAR_INTERVAL)
    want = ["linear_attention" if (i + 1) % QWEN4_VAR_INTERVAL else "qwen_sparse_attention"
            for i in range(text["num_hidden_layers"])]
    if list(cfg.layer_types) != want:
        raise SystemExit(f"full_attention_interval {QWEN4_VAR_INTERVAL} gave layer_types {cfg.layer_types}, "
                         f"expected {want}")

    def released_form(c):
        """config.json as a release writes it: the interval, no derived layer_types."""
        del c["layer_types"]
        c["full_attention_interval"] = QWEN4_VAR_INTERVAL

    qwen4_family(out_root, "qwen4_exp_var", cfg, first_seed, torch.bfloat16, QWEN4_VAR_SHARD_BYTES,
                 released_form, {"layer_types_derived": want})


# ---- Qwen4-Exp MTP draft head ------------------------------------------------
# transformers ignores `mtp.*`; the head follows docs/models.md section 2.9
# (from SGLang), built from the target's own classes. For position p, with R_p
# the target's wide residual [W] entering its final mixer and x_{p+1} the next token:
#   e = fc_embedding(pre_fc_norm_embedding(embed(x_{p+1})))            [H]
#   hN = pre_fc_norm_hidden(R_p)   one RMS over all W values [UNVERIFIED]
#   R'_s = fc_hidden(hN_s) + e for every stream s; R' = layers.0(R') at position p
#   logits = lm_head(hyper_connection_mixer(R'))
# The wide R' (before the head's mixer) is the hidden state of the next chained draft.


def qwen4_layer_inputs(text, t):
    """Position embeddings and attention mask of an uncached causal pass over t
    rows at positions 0..t-1, built the way Qwen4ExpTextModel.forward builds them."""
    like = torch.zeros(1, t, text.config.hidden_size, dtype=text.embed_tokens.weight.dtype)
    pos = torch.arange(t)[None, :]                              # text positions, [1, t]
    pe = text.rotary_emb(like, pos[None].expand(3, 1, t))       # M-RoPE rows all equal for text
    mask = None
    try:
        from transformers.masking_utils import create_causal_mask
        mask = create_causal_mask(config=text.config, inputs_embeds=like, attention_mask=None,
                                  past_key_values=None, position_ids=pos, allow_is_causal_skip=False)
    except Exception as e:  # noqa: BLE001 - the additive causal mask of eager attention instead
        log(f"create_causal_mask failed ({e!r}); using an additive float causal mask")
    if mask is None:
        mask = torch.full((t, t), torch.finfo(like.dtype).min, dtype=like.dtype).triu(1)[None, None]
    return pe, mask


def qwen4_run_layer(layer, hidden, pe, mask):
    """One decoder layer, uncached, called as Qwen4ExpTextModel.forward calls it
    (conv_mask and ple_input_ids are only read by GDN and PLE layers)."""
    out = layer(hidden, position_embeddings=pe, attention_mask=mask, past_key_values=None)
    return out[0] if isinstance(out, tuple) else out


def mask_visible(mask):
    """Boolean visibility of a bool (sdpa) or additive float (eager) mask."""
    return mask if mask.dtype == torch.bool else mask == 0


def check_offset_rms(norm_cls, dim, eps):
    """norm_cls(dim) with a zero weight is one plain RMS over all dim values:
    (1+w) style and not grouped."""
    norm = norm_cls(dim, eps=eps)
    with torch.no_grad():
        norm.weight.zero_()
        x = torch.randn(3, dim, generator=torch.Generator().manual_seed(0))
        want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        diff = float((norm(x) - want).abs().max())
    if diff > 1e-5:
        raise RuntimeError(f"{norm_cls.__name__}({dim}) is not an ungrouped (1+w) RMS norm (diff {diff})")


class Qwen4MtpHead(torch.nn.Module):
    def __init__(self, text, cfg):
        super().__init__()
        mixer = text.hyper_connection_mixer
        norm_cls, hidden, eps = type(mixer.hc_norm), cfg.hidden_size, cfg.rms_norm_eps
        self.hc_count = cfg.hc_count
        qsa_idx = list(cfg.layer_types).index("qwen_sparse_attention")
        self.fc_embedding = torch.nn.Linear(hidden, hidden, bias=False)
        self.fc_hidden = torch.nn.Linear(hidden, hidden, bias=False)
        self.pre_fc_norm_embedding = norm_cls(hidden, eps=eps)
        self.pre_fc_norm_hidden = norm_cls(self.hc_count * hidden, eps=eps)  # no group_size: one RMS over W
        self.hyper_connection_mixer = type(mixer)(cfg, use_combine=False)
        self.layers = torch.nn.ModuleList([type(text.layers[qsa_idx])(cfg, qsa_idx)])
        layer = self.layers[0]
        if getattr(layer, "ple", None) is not None or not hasattr(getattr(layer, "self_attn", None), "indexer"):
            raise RuntimeError(f"layer {qsa_idx} does not build a QSA layer without PLE: {layer}")
        if getattr(mixer, "block_inject_weight", None) is not None or \
                getattr(self.hyper_connection_mixer, "block_inject_weight", None) is not None:
            raise RuntimeError("the final mixer is expected to have no injection weights")

    def forward(self, text, lm_head, hidden, next_tokens):
        """Uncached causal pass over rows 0..T-1 (positions 0..T-1): (logits [T, V], R' [T, W])."""
        t, h = hidden.shape[0], self.fc_hidden.in_features
        e = self.fc_embedding(self.pre_fc_norm_embedding(text.embed_tokens(next_tokens[None, :])))
        hn = self.pre_fc_norm_hidden(hidden[None, :, :]).unflatten(-1, (self.hc_count, h))
        r = (self.fc_hidden(hn) + e.unsqueeze(-2)).flatten(-2)
        pe, mask = qwen4_layer_inputs(text, t)
        r = qwen4_run_layer(self.layers[0], r, pe, mask)
        return lm_head(self.hyper_connection_mixer(r))[0].float(), r[0]


@torch.no_grad()
def qwen4_prompt_pass(model, prompt, qsa_idx):
    """One uncached prompt pass that records the wide residual entering the final
    mixer [T, W] and the input, keyword arguments and output of the QSA layer."""
    text, seen = model.model, {}

    def before_mixer(_module, args):
        seen["R"] = args[0].detach().clone()

    def after_qsa(_module, args, kwargs, out):
        x = args[0] if args else kwargs["hidden_states"]
        y = out[0] if isinstance(out, tuple) else out
        seen["qsa"] = (x.detach().clone(), dict(kwargs), y.detach().clone())

    hooks = [text.hyper_connection_mixer.register_forward_pre_hook(before_mixer),
             text.layers[qsa_idx].register_forward_hook(after_qsa, with_kwargs=True)]
    try:
        logits = model(input_ids=prompt[None, :], use_cache=False).logits[0].float()
    finally:
        for hook in hooks:
            hook.remove()
    if "R" not in seen or "qsa" not in seen:
        raise RuntimeError(f"the prompt pass did not reach the hooks (caught {sorted(seen)})")
    return seen["R"][0].float(), seen["qsa"], logits


@torch.no_grad()
def check_qwen4_prompt_pass(model, prompt, r, qsa, logits):
    """The captured R is [T, W], the model's head (mixer then lm_head) on it gives
    the pass's own logits, and qwen4_layer_inputs/qwen4_run_layer reproduce the
    model's own QSA layer on that pass. Returns the measured differences."""
    text, cfg = model.model, model.model.config
    t, width = len(prompt), cfg.hc_count * cfg.hidden_size
    if tuple(r.shape) != (t, width):
        raise RuntimeError(f"captured R has shape {tuple(r.shape)}, expected {(t, width)}")
    head_diff = float((model.lm_head(text.hyper_connection_mixer(r[None]))[0].float() - logits).abs().max())
    if head_diff >= 1e-5:
        raise RuntimeError(f"mixer + lm_head on the captured R misses the prompt logits by {head_diff}")
    x, kwargs, y = qsa
    pe, mask = qwen4_layer_inputs(text, t)
    pe_diff = max(float((a - b).abs().max()) for a, b in zip(pe, kwargs["position_embeddings"]))
    if pe_diff > 1e-6:
        raise RuntimeError(f"rebuilt position embeddings differ from the model's by {pe_diff}")
    got = kwargs["attention_mask"]
    if got.shape != mask.shape or not torch.equal(mask_visible(got), mask_visible(mask)):
        raise RuntimeError(f"rebuilt mask {tuple(mask.shape)} differs from the model's {tuple(got.shape)}")
    layer_diff = float((qwen4_run_layer(text.layers[list(cfg.layer_types).index("qwen_sparse_attention")],
                                        x, pe, mask) - y).abs().max())
    if layer_diff >= 1e-5:
        raise RuntimeError(f"rerunning the model's QSA layer differs from its prompt pass by {layer_diff}")
    return {"head": head_diff, "qsa_layer": layer_diff}


@torch.no_grad()
def add_qwen4_mtp(model, prompt, first_token, seed, out_dir, head_state=None, dtype=torch.float32):
    """A random Qwen4-Exp MTP head (models.md section 2.9): its tensors join the
    checkpoint (mtp.*, mtp_num_hidden_layers 1) and its draft logits over the
    prompt are written: row p = MTP(R_p, x_{p+1}), x_n the first greedy token.

    head_state (tools/train): the trained head's state dict, loaded instead of
    the random draw; its tensors are stored in dtype."""
    text = model.model
    cfg = text.config  # the model's own config object: its attention/experts implementation
    qsa_idx = list(cfg.layer_types).index("qwen_sparse_attention")
    check_offset_rms(type(text.hyper_connection_mixer.hc_norm), cfg.hc_count * cfg.hidden_size, cfg.rms_norm_eps)
    r, qsa, pass_logits = qwen4_prompt_pass(model, prompt, qsa_idx)
    diffs = check_qwen4_prompt_pass(model, prompt, r, qsa, pass_logits)

    torch.manual_seed(seed)
    head = Qwen4MtpHead(text, cfg).float().eval()
    not_float = [n for n, p in head.named_parameters() if not p.is_floating_point()]
    if not_float:
        raise RuntimeError(f"MTP head parameters that are not floating point: {not_float}")
    if head_state is None:
        gen = torch.Generator().manual_seed(seed)
        for _, p in sorted(head.named_parameters(), key=lambda kv: kv[0]):
            p.copy_(torch.randn(p.shape, generator=gen) * PARAM_NOISE_STD)
    else:
        head.load_state_dict({n: t.float() for n, t in head_state.items()}, strict=True)
    # the head's tensors are stored in dtype: its references run on those values
    round_parameters(head, dtype)
    next_tokens = torch.cat([prompt[1:], torch.tensor([first_token])])
    logits, _ = head(text, model.lm_head, r, next_tokens)
    chain_tokens, chain_logits = mtp_chain(head, text, model.lm_head, r, next_tokens, MTP_CHAIN_STEPS)
    if not (torch.isfinite(logits).all() and torch.isfinite(chain_logits).all()):
        raise RuntimeError("MTP draft logits are not finite")
    # qwen4_exp's config has no MTP layer count of its own either
    tensors = save_mtp_head(out_dir, head, r, logits, chain_tokens, chain_logits, dtype)
    log(f"{out_dir}: Qwen4 MTP head, {sum(p.numel() for p in head.parameters())} parameters, "
        f"{len(tensors)} tensors, hidden {tuple(r.shape)}, draft logits {tuple(logits.shape)}, "
        f"chain {chain_tokens.tolist()}, draft top2 margin {top2_margin(logits):.3g}, "
        f"chain {top2_margin(chain_logits):.3g}, checks {diffs}")
    log(f"MTP tensors: {[(n, tuple(t.shape)) for n, t in sorted(tensors.items())]}")


# ---- DeepSeek V4 (docs/models.md sections 3 and 6.2) ------------------------
# Two families: deepseek_v4_tiny (the section 6.2 configuration) and
# deepseek_v4_b (3 streams, 5 layers starting with HCA, two hash layers, CSA
# every 2 and HCA every 8 tokens, a 5-token window). Their configs, parameter
# counts, rotary tables and upstream tensor names live in dsv4_spec.py (no
# torch). Neither prompt length nor the two-chunk split is a multiple of a
# compression window, and the 24 decode steps cross HCA window boundaries, so
# the compressor buffers and the CSA overlap are carried across calls.
DSV4_CONTINUATION_LEN = 24
DSV4_SPLIT = 37
DSV4_PROMPT_LEN = {"deepseek_v4_tiny": 70, "deepseek_v4_b": 67, "deepseek_v4_fp8": 70}
# e_score_correction_bias is a buffer (HF zero-initialises it; parameter noise
# does not reach it): N(0, 0.25) is of the order of the sqrt-softplus score
# gaps, so it changes the selection of some tokens (counted in meta.json).
DSV4_BIAS_STD = 0.25
DSV4_INT_TENSORS = (".gate.tid2eid",)


def dsv4_modules():
    """transformers' deepseek_v4 configuration and modeling modules."""
    from transformers.models.deepseek_v4 import configuration_deepseek_v4, modeling_deepseek_v4
    return configuration_deepseek_v4, modeling_deepseek_v4


def dsv4_config(spec):
    """(DeepseekV4Config from a dsv4_spec dict, the rope form it took), without
    MTP layers (0 until the head's tensors are in the checkpoint). The YaRN
    keys go in as a flat `rope_parameters`, which DeepseekV4Config.__post_init__
    turns into the "compress" table; a build that rejects that form gets them
    as the legacy `rope_scaling` (docs/models.md 6.2). check_dsv4_config then
    checks what the config holds either way."""
    cfg_mod, _ = dsv4_modules()
    kwargs = copy.deepcopy(spec)
    try:
        return cfg_mod.DeepseekV4Config(**kwargs, num_nextn_predict_layers=0), "rope_parameters"
    except (TypeError, ValueError) as e:
        log(f"DeepseekV4Config rejected the flat YaRN rope_parameters ({e!r}); passing them as rope_scaling")
    kwargs = copy.deepcopy(spec)
    kwargs["rope_scaling"] = kwargs.pop("rope_parameters")
    return cfg_mod.DeepseekV4Config(**kwargs, num_nextn_predict_layers=0), "rope_scaling"


def check_dsv4_config(cfg, spec):
    """Every value the model reads reached the config as the spec gives it,
    and the flat YaRN rope_parameters became the "compress" table (theta
    compress_rope_theta, attention_factor 1) next to a plain "main" one."""
    problems = []
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "head_dim", "q_lora_rank", "o_groups", "o_lora_rank", "sliding_window", "index_n_heads",
                "index_head_dim", "index_topk", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
                "scoring_func", "routed_scaling_factor", "swiglu_limit", "hc_mult", "hc_sinkhorn_iters", "hc_eps",
                "max_position_embeddings", "rms_norm_eps", "tie_word_embeddings"):
        if getattr(cfg, key, None) != spec[key]:
            problems.append(f"{key} is {getattr(cfg, key, None)!r}, not {spec[key]!r}")
    for key in ("layer_types", "mlp_layer_types"):
        if list(getattr(cfg, key)) != spec[key]:
            problems.append(f"{key} is {getattr(cfg, key)}, not {spec[key]}")
    if dict(cfg.compress_rates) != spec["compress_rates"]:
        problems.append(f"compress_rates is {cfg.compress_rates}, not {spec['compress_rates']}")
    if cfg.num_local_experts != spec["n_routed_experts"] or cfg.intermediate_size != spec["moe_intermediate_size"]:
        problems.append(f"num_local_experts/intermediate_size read {cfg.num_local_experts}/{cfg.intermediate_size}")
    r = dsv4_spec.rot_dim(spec)
    if getattr(cfg, "qk_rope_head_dim", None) != r:
        problems.append(f"qk_rope_head_dim is {getattr(cfg, 'qk_rope_head_dim', None)}, not {r}")
    rp = cfg.rope_parameters or {}
    main, comp, yarn = rp.get("main"), rp.get("compress"), spec["rope_parameters"]
    want_main = {"rope_type": "default", "rope_theta": spec["rope_theta"], "partial_rotary_factor":
                 spec["partial_rotary_factor"]}
    want_comp = dict(yarn, rope_theta=spec["compress_rope_theta"], partial_rotary_factor=spec["partial_rotary_factor"],
                     attention_factor=1.0)
    for label, got, want in (("main", main, want_main), ("compress", comp, want_comp)):
        if not isinstance(got, dict):
            problems.append(f"rope_parameters has no '{label}' table: {rp}")
            continue
        bad = {k: got.get(k) for k, v in want.items() if got.get(k) != v}
        if bad:
            problems.append(f"rope_parameters['{label}'] has {bad}, expected {want}")
    if problems:
        raise SystemExit("DeepseekV4Config did not take the configuration as given:\n  " + "\n  ".join(problems))


@torch.no_grad()
def fill_dsv4_buffers(model, seed):
    """The two buffers parameter noise does not reach (HF zero-initialises
    both): each hash layer's tid2eid rows get distinct random expert ids, each
    moe layer's e_score_correction_bias N(0, DSV4_BIAS_STD). Checked after."""
    cfg = model.config
    n_experts, top_k = cfg.n_routed_experts, cfg.num_experts_per_tok
    gen = torch.Generator().manual_seed(seed)
    tables, biases = [], []
    for name, buf in sorted(model.named_buffers(), key=lambda kv: kv[0]):
        if name.endswith(".gate.tid2eid"):
            if tuple(buf.shape) != (cfg.vocab_size, top_k):
                raise SystemExit(f"{name} has shape {tuple(buf.shape)}, not {(cfg.vocab_size, top_k)}")
            rows = torch.stack([torch.randperm(n_experts, generator=gen)[:top_k] for _ in range(buf.shape[0])])
            buf.copy_(rows.to(buf.dtype))
            tables.append((name, buf))
        elif name.endswith(".gate.e_score_correction_bias"):
            buf.copy_(torch.randn(buf.shape, generator=gen) * DSV4_BIAS_STD)
            biases.append((name, buf))
    n_hash = list(cfg.mlp_layer_types).count("hash_moe")
    n_moe = list(cfg.mlp_layer_types).count("moe")
    if len(tables) != n_hash or len(biases) != n_moe:
        raise SystemExit(f"found {len(tables)} tid2eid and {len(biases)} e_score_correction_bias buffers for "
                         f"{n_hash} hash_moe and {n_moe} moe layers")
    for name, t in tables:
        srt = t.sort(dim=1).values
        if t.min() < 0 or t.max() >= n_experts or not bool((srt[:, 1:] != srt[:, :-1]).all()):
            raise SystemExit(f"{name} rows are not distinct expert ids in [0, {n_experts})")
    for name, b in biases:
        if not bool((b != 0).all()):
            raise SystemExit(f"{name} has zero entries")


def check_dsv4_rotary(model, spec):
    """Every rotary module of the model (the model's, each compressor's and each
    indexer's) holds the "main" table (default RoPE, rope_theta) and the
    "compress" one (YaRN at compress_rope_theta, docs/models.md section 0.2)
    over r = head_dim * partial_rotary_factor channels, without mscale."""
    r = dsv4_spec.rot_dim(spec)
    want = {"main": dsv4_spec.default_inv_freq(spec["rope_theta"], r), "compress": dsv4_spec.compress_inv_freq(spec)}
    mods = [(n, m) for n, m in model.named_modules() if type(m).__name__ == "DeepseekV4RotaryEmbedding"]
    n_csa = spec["layer_types"].count(dsv4_spec.CSA)
    n_hca = spec["layer_types"].count(dsv4_spec.HCA)
    if len(mods) != 1 + 2 * n_csa + n_hca:
        raise SystemExit(f"{len(mods)} rotary modules, expected {1 + 2 * n_csa + n_hca}: {[n for n, _ in mods]}")
    for name, m in mods:
        for label, freqs in want.items():
            got = getattr(m, f"{label}_inv_freq", None)
            ref = torch.tensor(freqs, dtype=torch.float32)
            if got is None or got.shape != ref.shape or float(((got.float() - ref) / ref).abs().max()) > 1e-5:
                raise SystemExit(f"{name}: '{label}' inv_freq is {None if got is None else got.tolist()}, "
                                 f"expected {freqs} (rotary dim {r})")
            scaling = getattr(m, f"{label}_attention_scaling", None)
            if scaling != 1.0:
                raise SystemExit(f"{name}: '{label}' attention scaling is {scaling}, not 1.0")


def check_dsv4_model(model, spec):
    """The model is the configuration asked for: eager attention, separate
    embedding and head, each layer's compressor and router kind, its rotary
    tables, and the parameter count dsv4_spec derives (models.md 6.2's for tiny)."""
    _, mod = dsv4_modules()
    text = model.model
    if attn_implementation(model) != "eager":
        raise SystemExit(f"attention implementation is {attn_implementation(model)}, not eager")
    if model.lm_head.weight.data_ptr() == text.embed_tokens.weight.data_ptr() or \
            torch.equal(model.lm_head.weight, text.embed_tokens.weight):
        raise SystemExit("lm_head is tied to the embedding (tie_word_embeddings is false)")
    kinds = {dsv4_spec.SLIDING: type(None), dsv4_spec.CSA: mod.DeepseekV4CSACompressor,
             dsv4_spec.HCA: mod.DeepseekV4HCACompressor}
    for i, (layer, lt, mt) in enumerate(zip(text.layers, spec["layer_types"], spec["mlp_layer_types"])):
        attn = layer.self_attn
        if type(attn.compressor) is not kinds[lt] or \
                attn.rope_layer_type != ("main" if lt == dsv4_spec.SLIDING else "compress"):
            raise SystemExit(f"layer {i} ({lt}) has compressor {type(attn.compressor).__name__}, "
                             f"rope table '{attn.rope_layer_type}'")
        if layer.mlp.is_hash != (mt == "hash_moe"):
            raise SystemExit(f"layer {i} ({mt}) has a {'hash' if layer.mlp.is_hash else 'top-k'} router")
    check_dsv4_rotary(model, spec)
    params = sum(p.numel() for p in model.parameters())
    total = sum(t.numel() for t in model.state_dict().values())
    want_p, want_b = dsv4_spec.main_counts(spec)
    if (params, total) != (want_p, want_p + want_b):
        raise SystemExit(f"model has {params} parameters and {total - params} buffer elements, dsv4_spec "
                         f"expects {want_p} and {want_b}")
    if spec is dsv4_spec.TINY and total != dsv4_spec.TINY_MAIN_COUNT:
        raise SystemExit(f"tiny model has {total} parameters + buffers, docs/models.md 6.2 says "
                         f"{dsv4_spec.TINY_MAIN_COUNT}")


@torch.no_grad()
def check_dsv4_cache_layers(model, prompt, split):
    """HF's cache for this model is the V4 one: DynamicCache(config=...) built a
    DeepseekV4CSACache / DeepseekV4HCACache for every compressed layer and a
    plain sliding-window layer for the others, and after a chunk of `split`
    tokens each compressor has emitted split // rate entries and holds the
    split % rate tokens of its open window. Returns the layer class names."""
    from transformers.cache_utils import DynamicSlidingWindowLayer
    _, mod = dsv4_modules()
    cfg = model.config
    past = model(input_ids=prompt[None, :split], use_cache=True).past_key_values
    layers = list(getattr(past, "layers", []))
    if len(layers) != cfg.num_hidden_layers:
        raise SystemExit(f"the cache ({type(past).__name__}) has {len(layers)} layers, not {cfg.num_hidden_layers}")
    want = {dsv4_spec.CSA: mod.DeepseekV4CSACache, dsv4_spec.HCA: mod.DeepseekV4HCACache}
    problems = []
    for i, (lt, layer) in enumerate(zip(cfg.layer_types, layers)):
        cls = want.get(lt, DynamicSlidingWindowLayer)
        if not isinstance(layer, cls) or (lt == dsv4_spec.SLIDING and isinstance(layer, mod.DeepseekV4HCACache)):
            problems.append(f"layer {i} ({lt}): {type(layer).__name__}, expected {cls.__name__}")
            continue
        if getattr(layer, "sliding_window", None) != cfg.sliding_window:
            problems.append(f"layer {i}: sliding_window {getattr(layer, 'sliding_window', None)}")
        if lt == dsv4_spec.SLIDING:
            continue
        rate = cfg.compress_rates[lt]
        names = ["compressor", "indexer"] if lt == dsv4_spec.CSA else ["compressor"]
        for name in names:
            buffered = layer.buffer_kv[name]
            state = (layer.entry_count[name], 0 if buffered is None else buffered.shape[1])
            if state != (split // rate, split % rate):
                problems.append(f"layer {i} {name}: {state[0]} entries and {state[1]} buffered tokens after "
                                f"{split}, expected {split // rate} and {split % rate}")
    if problems:
        raise SystemExit("HF's cache is not the DeepSeek V4 one:\n  " + "\n  ".join(problems))
    return [type(layer).__name__ for layer in layers]


def dump_path_mismatch(out_dir, model, prompt, ref, split, diffs):
    """Both sides of a cached/uncached (or two-chunk/one-chunk) disagreement,
    written to <out_dir>.path_mismatch (run_on_device.sh brings it back as a
    tar of its own): an HF bug to report. Returns (that folder, its meta.json
    entries: the differences and the positions over the limit)."""
    where = out_dir + ".path_mismatch"
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    prompt_logits, cont, cont_logits = ref
    cached = torch.cat([prompt_logits, cont_logits])
    full = full_forward_logits(model, torch.cat([prompt, cont]))
    rows = (full - cached).abs().amax(-1)
    write_i32(os.path.join(where, "prompt_tokens.i32"), prompt)
    write_i32(os.path.join(where, "continuation_tokens.i32"), cont)
    write_f32(os.path.join(where, "cached_logits.f32"), cached)
    write_f32(os.path.join(where, "uncached_logits.f32"), full)
    write_f32(os.path.join(where, "cached_vs_uncached_row_max_abs_diff.f32"), rows)
    bad = [int(i) for i in torch.nonzero(rows > MAX_PATH_DIFF).flatten()]
    meta = dict(diffs, prompt_len=len(prompt), continuation_len=len(cont), split=split,
                cached_vs_uncached_positions_over_limit=bad, transformers=transformers.__version__,
                torch=torch.__version__)
    if split:
        chunked = two_chunk_logits(model, prompt, split)
        write_f32(os.path.join(where, "two_chunk_logits.f32"), chunked)
        meta["two_chunks_positions_over_limit"] = [
            int(i) for i in torch.nonzero((chunked - prompt_logits).abs().amax(-1) > MAX_PATH_DIFF).flatten()]
    model.config.save_pretrained(where)
    with open(os.path.join(where, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    return where, meta


def dsv4_layer_inputs(text, t):
    """Position embeddings ({"main", "compress"}), position ids and sliding-window
    mask of an uncached pass over t rows at positions 0..t-1, built the way
    DeepseekV4Model.forward builds them."""
    like = torch.zeros(1, t, text.config.hidden_size, dtype=text.embed_tokens.weight.dtype)
    pos = torch.arange(t)[None, :]
    pe = {label: text.rotary_emb(like, position_ids=pos, layer_type=label) for label in ("main", "compress")}
    mask = None
    try:
        from transformers.masking_utils import create_sliding_window_causal_mask
        mask = create_sliding_window_causal_mask(config=text.config, inputs_embeds=like, attention_mask=None,
                                                 past_key_values=None, position_ids=pos)
    except Exception as e:  # noqa: BLE001 - the explicit additive mask below, checked against the model's
        log(f"create_sliding_window_causal_mask failed ({e!r}); building the additive sliding-window mask")
    if mask is None:
        q, k = torch.arange(t)[:, None], torch.arange(t)[None, :]
        visible = (k <= q) & (k > q - text.config.sliding_window)
        mask = torch.full((t, t), torch.finfo(like.dtype).min, dtype=like.dtype).masked_fill(visible, 0)[None, None]
    return pe, pos, mask


def sliding_visibility(t, window):
    """docs/models.md 3.5: query t sees keys t - window < j <= t."""
    q, k = torch.arange(t)[:, None], torch.arange(t)[None, :]
    return (k <= q) & (k > q - window)


def run_layer(layer, hidden, pe, pos, mask, input_ids=None):
    """One DeepseekV4DecoderLayer, uncached, called as DeepseekV4Model.forward calls it."""
    out = layer(hidden, position_embeddings=pe, position_ids=pos, attention_mask=mask, input_ids=input_ids,
                past_key_values=None)
    return out[0] if isinstance(out, tuple) else out


@torch.no_grad()
def dsv4_prompt_pass(model, prompt, sliding_idx):
    """One uncached prompt pass that records the streams entering the final
    HyperHead (X, [T, n, H]), the streams after every decoder layer
    ([L, T, n*H]) and the input, keyword arguments and output of the first
    sliding-window layer. Returns (X, per-layer streams, layer capture, logits)."""
    text, seen, after = model.model, {}, {}

    def before_head(_module, args):
        seen["X"] = args[0].detach().clone()

    def capture_layer(_module, args, kwargs, out):
        x = args[0] if args else kwargs["hidden_states"]
        y = out[0] if isinstance(out, tuple) else out
        seen["layer"] = (x.detach().clone(), dict(kwargs), y.detach().clone())

    def layer_output(i):
        def hook(_module, _args, out):
            after[i] = (out[0] if isinstance(out, tuple) else out).detach().clone()
        return hook

    hooks = [text.hc_head.register_forward_pre_hook(before_head),
             text.layers[sliding_idx].register_forward_hook(capture_layer, with_kwargs=True)]
    hooks += [layer.register_forward_hook(layer_output(i)) for i, layer in enumerate(text.layers)]
    try:
        logits = model(input_ids=prompt[None, :], use_cache=False).logits[0].float()
    finally:
        for hook in hooks:
            hook.remove()
    if "X" not in seen or "layer" not in seen or sorted(after) != list(range(len(text.layers))):
        raise RuntimeError(f"the prompt pass did not reach the hooks (caught {sorted(seen)}, layers {sorted(after)})")
    t = len(prompt)
    streams = torch.stack([after[i][0].reshape(t, -1) for i in range(len(text.layers))]).float()
    return seen["X"][0].float(), streams, seen["layer"], logits


@torch.no_grad()
def check_dsv4_prompt_pass(model, prompt, x, streams, capture, logits, sliding_idx):
    """The captured X is [T, n, H] and equals the last layer's output; the
    model's head (HyperHead, norm, lm_head) on it gives the pass's own logits;
    dsv4_layer_inputs rebuilds the position embeddings, positions and mask the
    model gave its sliding-window layer, and rerunning that layer with them
    reproduces its output. Returns the measured differences and whether HF's
    mask is models.md's window."""
    text, cfg = model.model, model.model.config
    t = len(prompt)
    if tuple(x.shape) != (t, cfg.hc_mult, cfg.hidden_size):
        raise RuntimeError(f"captured X has shape {tuple(x.shape)}, expected {(t, cfg.hc_mult, cfg.hidden_size)}")
    if not torch.equal(streams[-1], x.reshape(t, -1)):
        raise RuntimeError("the streams entering the HyperHead are not the last layer's output")
    head_diff = float((model.lm_head(text.norm(text.hc_head(x[None])))[0].float() - logits).abs().max())
    if head_diff >= 1e-5:
        raise RuntimeError(f"HyperHead + norm + lm_head on the captured X misses the prompt logits by {head_diff}")
    x_in, kwargs, y = capture
    pe, pos, mask = dsv4_layer_inputs(text, t)
    got_pe = kwargs["position_embeddings"]
    pe_diff = max(float((a - b).abs().max()) for label in ("main", "compress") for a, b in zip(pe[label], got_pe[label]))
    if pe_diff > 1e-6:
        raise RuntimeError(f"rebuilt position embeddings differ from the model's by {pe_diff}")
    if not torch.equal(pos, kwargs["position_ids"]):
        raise RuntimeError(f"rebuilt position ids differ from the model's {kwargs['position_ids']}")
    got = kwargs["attention_mask"]
    if not isinstance(got, torch.Tensor) or got.shape != mask.shape or \
            not torch.equal(mask_visible(got), mask_visible(mask)):
        raise RuntimeError(f"rebuilt mask {tuple(mask.shape)} differs from the model's "
                           f"{getattr(got, 'shape', got)}")
    layer_diff = float((run_layer(text.layers[sliding_idx], x_in, pe, pos, mask, kwargs.get("input_ids")) - y)
                       .abs().max())
    if layer_diff >= 1e-5:
        raise RuntimeError(f"rerunning the model's sliding layer {sliding_idx} differs from its prompt pass by "
                           f"{layer_diff}")
    models_md_window = bool(torch.equal(mask_visible(mask)[0, 0], sliding_visibility(t, cfg.sliding_window)))
    if not models_md_window:
        log(f"warning: HF's sliding-window mask is not docs/models.md 3.5's (t - {cfg.sliding_window} < j <= t)")
    return {"head": head_diff, "sliding_layer": layer_diff}, models_md_window


@torch.no_grad()
def dsv4_coverage(model, prompt):
    """Over one uncached prompt pass: how many tokens of each moe layer the
    correction bias gave another expert set than the scores alone, and how
    many routed and shared SwiGLU pre-activations the clamp changed (gate above
    swiglu_limit, up outside +-limit). The tiny configurations are chosen so
    that all of these fire; a count of 0 would leave a code path untested."""
    text, cfg = model.model, model.model.config
    limit = float(cfg.swiglu_limit)
    stats = {"bias_changed_selection": {}, "routed_gate_clamped": 0, "routed_up_clamped": 0,
             "shared_gate_clamped": 0, "shared_up_clamped": 0, "routed_pairs": 0}

    def moe_hook(i):
        def hook(block, args, kwargs, _out):
            x = args[0] if args else kwargs["hidden_states"]
            flat = x.reshape(-1, x.shape[-1])
            gate = block.gate
            scores = gate.score_fn(torch.nn.functional.linear(flat, gate.weight))
            if block.is_hash:
                idx = gate.tid2eid[kwargs["input_ids"].reshape(-1)].long()
            else:
                idx = torch.topk(scores + gate.e_score_correction_bias, gate.top_k, dim=-1).indices
                plain = torch.topk(scores, gate.top_k, dim=-1).indices
                changed = (idx.sort(-1).values != plain.sort(-1).values).any(-1)
                stats["bias_changed_selection"][str(i)] = int(changed.sum())
            experts = block.experts
            for e in range(experts.gate_up_proj.shape[0]):
                rows = (idx == e).any(-1)
                if not bool(rows.any()):
                    continue
                g, u = torch.nn.functional.linear(flat[rows], experts.gate_up_proj[e]).chunk(2, dim=-1)
                stats["routed_gate_clamped"] += int((g > limit).sum())
                stats["routed_up_clamped"] += int((u.abs() > limit).sum())
                stats["routed_pairs"] += int(rows.sum())
            shared = block.shared_experts
            stats["shared_gate_clamped"] += int((shared.gate_proj(flat) > limit).sum())
            stats["shared_up_clamped"] += int((shared.up_proj(flat).abs() > limit).sum())
        return hook

    hooks = [layer.mlp.register_forward_hook(moe_hook(i), with_kwargs=True) for i, layer in enumerate(text.layers)]
    try:
        model(input_ids=prompt[None, :], use_cache=False)
    finally:
        for hook in hooks:
            hook.remove()
    n_moe = list(cfg.mlp_layer_types).count("moe")
    if len(stats["bias_changed_selection"]) != n_moe or stats["routed_pairs"] != \
            len(prompt) * cfg.num_experts_per_tok * cfg.num_hidden_layers:
        raise RuntimeError(f"the MoE hooks saw {stats}, expected {n_moe} moe layers and "
                           f"{len(prompt) * cfg.num_experts_per_tok * cfg.num_hidden_layers} routed pairs")
    silent = [k for k in ("routed_gate_clamped", "routed_up_clamped", "shared_gate_clamped", "shared_up_clamped")
              if stats[k] == 0]
    if silent or sum(stats["bias_changed_selection"].values()) == 0:
        raise SystemExit(f"coverage: the prompt leaves paths unexercised ({silent or 'correction bias'}): {stats}")
    return stats


def check_dsv4_checkpoint_names(model, out_dir):
    """Which checkpoint tensor holds which model tensor, found by value (every
    tensor is random, so each value is unique), against the upstream names of
    dsv4_spec (what conversion_mapping.py's reversal should write). Every model
    tensor must be held by exactly one checkpoint tensor per piece and every
    checkpoint tensor must hold one; names unlike upstream are reported (logged
    and in meta.json), not fatal: they are what transformers writes."""
    from safetensors.torch import load_file
    ckpt = {}
    for fname in checkpoint_files(out_dir):
        ckpt.update(load_file(os.path.join(out_dir, fname)))
    by_shape = {}
    for name, t in ckpt.items():
        by_shape.setdefault((tuple(t.shape), t.dtype), []).append(name)

    def holders(piece):
        return [n for n in by_shape.get((tuple(piece.shape), piece.dtype), []) if torch.equal(ckpt[n], piece)]

    n_experts = model.config.n_routed_experts
    used, unlike = {}, []
    for hf_name, t in model.state_dict().items():
        try:
            want = dsv4_spec.upstream_names(hf_name, n_experts)
        except KeyError:
            raise SystemExit(f"dsv4_spec knows no upstream name for the model tensor {hf_name}")
        whole = holders(t)
        if hf_name.endswith(dsv4_spec.EXPERTS_GATE_UP) and not whole:
            inter = t.shape[1] // 2
            pieces = [p for e in range(t.shape[0]) for p in (t[e, :inter], t[e, inter:])]
        elif hf_name.endswith(dsv4_spec.EXPERTS_DOWN) and not whole:
            pieces = [t[e] for e in range(t.shape[0])]
        else:
            pieces = [t]
        found = []
        for piece in pieces:
            match = holders(piece)
            if len(match) != 1:
                raise SystemExit(f"checkpoint: a piece of {hf_name} {tuple(piece.shape)} is held by {match}")
            if match[0] in used:
                raise SystemExit(f"checkpoint tensor {match[0]} holds both {used[match[0]]} and {hf_name}")
            used[match[0]] = hf_name
            found.append(match[0])
        if found != want:
            unlike.append({"model": hf_name, "saved": found if len(found) > 1 else found[0],
                           "upstream": want if len(want) > 1 else want[0]})
    extra = sorted(set(ckpt) - set(used))
    if extra:
        raise SystemExit(f"checkpoint tensors that hold no model tensor: {extra}")
    if unlike:
        log(f"warning: {len(unlike)} checkpoint names are not the upstream ones: {unlike}")
        return {"checkpoint_names": "not_upstream", "checkpoint_names_unlike_upstream": unlike}
    return {"checkpoint_names": "upstream"}


def dsv4_checkpoint(model_cls):
    """write_fixture's checkpoint writer for DeepSeek V4: save_pretrained and the
    bit-exact reload (tid2eid saved as int64 under its upstream name), then
    the name check above."""
    base = hf_checkpoint(model_cls, integer_tensors=DSV4_INT_TENSORS)

    def write(model, out_dir, tokens):
        names, meta = base(model, out_dir, tokens)
        meta.update(check_dsv4_checkpoint_names(model, out_dir))
        return names, meta
    return write


def update_meta(out_dir, entries):
    path = os.path.join(out_dir, "meta.json")
    with open(path) as f:
        meta = json.load(f)
    meta.update(entries)
    with open(path, "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")


# ---- DeepSeek V4 MTP layer ---------------------------------------------------
# transformers drops `mtp.*`; the layer follows docs/models.md section 3.10
# (vLLM deepseek_v4_mtp.py), built from transformers' own classes. For
# position p, with X_p the target's streams entering its final HyperHead
# [n, H] and x_{p+1} the next token:
#   e = enorm(embed(x_{p+1}))              embed zeroed at position 0 (vLLM)
#   X'_s = h_proj(hnorm(X_p,s)) + e_proj(e)   hnorm per stream (RMS over H)
#   X' = one decoder layer (sliding_attention + moe) at position p
#   logits = lm_head(norm(hc_head(X')))     the layer's own HyperHead and norm
# X' (pre-HyperHead, [n*H]) is the hidden state of the next chained draft.
# Like the Qwen4-Exp head: row p sits at position p, and the layer's
# attention reads the K=V entries of the head's own rows (its cache over the
# draft positions), here through the sliding window: row p sees rows
# p - sliding_window < j <= p. Its rotary table is "main" (a sliding layer's).
MTP_HEAD_SEED_TRIES = 16


class DeepseekV4MtpHead(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        text, cfg = model.model, model.model.config
        norm_cls, hidden, eps = type(text.norm), cfg.hidden_size, cfg.rms_norm_eps
        self.hc_mult, self.hidden = cfg.hc_mult, hidden
        self.enorm = norm_cls(hidden, eps=eps)
        self.hnorm = norm_cls(hidden, eps=eps)
        self.e_proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.h_proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.norm = norm_cls(hidden, eps=eps)
        self.hc_head = type(text.hc_head)(cfg)
        # The model's own config object (attention / experts implementation) with
        # layer 0 made sliding + moe: same list lengths, so any validator passes.
        layer_cfg = copy.deepcopy(cfg)
        layer_types, mlp_types = list(layer_cfg.layer_types), list(layer_cfg.mlp_layer_types)
        layer_types[0], mlp_types[0] = dsv4_spec.SLIDING, "moe"
        layer_cfg.layer_types, layer_cfg.mlp_layer_types = layer_types, mlp_types
        self.layer = type(text.layers[0])(layer_cfg, 0)
        attn = self.layer.self_attn
        if attn.compressor is not None or attn.rope_layer_type != "main" or self.layer.mlp.is_hash or \
                attn.sliding_window != cfg.sliding_window:
            raise RuntimeError(f"the MTP layer is not a sliding_attention + moe layer: {self.layer}")

    def forward(self, text, lm_head, hidden, next_tokens):
        """Uncached pass over rows 0..T-1 (positions 0..T-1), hidden [T, n*H]:
        (logits [T, V], X' [T, n*H])."""
        t = hidden.shape[0]
        pos = torch.arange(t)[None, :]
        emb = text.embed_tokens(next_tokens[None, :])
        emb = torch.where((pos == 0)[..., None], torch.zeros_like(emb), emb)
        x = self.h_proj(self.hnorm(hidden.reshape(1, t, self.hc_mult, self.hidden))) + \
            self.e_proj(self.enorm(emb)).unsqueeze(-2)
        pe, pos, mask = dsv4_layer_inputs(text, t)
        x = run_layer(self.layer, x, pe, pos, mask)
        return lm_head(self.norm(self.hc_head(x)))[0].float(), x[0].reshape(t, -1)


@torch.no_grad()
def randomise_dsv4_head(head, seed):
    """Every parameter gets its init's centre (1 for RMSNorm weights and the mHC
    scales, 0 otherwise) plus N(0, PARAM_NOISE_STD), in name order from one
    seeded generator; the router's correction bias N(0, DSV4_BIAS_STD). The
    layer is built outside a PreTrainedModel, so nothing else initialises it
    (its torch.empty parameters would hold garbage)."""
    _, mod = dsv4_modules()
    ones = set()
    for name, m in head.named_modules():
        if isinstance(m, mod.DeepseekV4RMSNorm):
            ones.add(f"{name}.weight")
        elif isinstance(m, mod.DeepseekV4HyperConnection):
            ones.add(f"{name}.scale")
        elif isinstance(m, mod.DeepseekV4HyperHead):
            ones.add(f"{name}.hc_scale")
    params = dict(head.named_parameters())
    # enorm, hnorm, norm, attn_norm, ffn_norm, q_a_norm, kv_norm; two mHC scales and the HyperHead's
    if len(ones) != 10 or not ones <= set(params):
        raise RuntimeError(f"unexpected norm / scale parameters in the MTP head: {sorted(ones)}")
    gen = torch.Generator().manual_seed(seed)
    for name, p in sorted(params.items()):
        if not p.is_floating_point():
            raise RuntimeError(f"MTP head parameter {name} is not floating point")
        p.copy_((1.0 if name in ones else 0.0) + torch.randn(p.shape, generator=gen) * PARAM_NOISE_STD)
    buffers = dict(head.named_buffers())
    biases = [n for n in buffers if n.endswith(".gate.e_score_correction_bias")]
    if len(biases) != 1 or any(n.endswith(".gate.tid2eid") for n in buffers):
        raise RuntimeError(f"MTP head buffers {sorted(buffers)}: expected one router bias and no tid2eid")
    buffers[biases[0]].copy_(torch.randn(buffers[biases[0]].shape, generator=gen) * DSV4_BIAS_STD)


def dsv4_mtp_tensors(head, n_experts):
    """The head's tensors under their upstream names (mtp.0.*, vLLM's layout:
    the decoder layer's tensors named as a main layer's, experts per expert)."""
    out = {}
    for name, t in head.state_dict().items():
        t = t.detach().clone().contiguous()
        if name in dsv4_spec.MTP_UPSTREAM:
            out["mtp.0." + dsv4_spec.MTP_UPSTREAM[name]] = t
            continue
        if not name.startswith("layer."):
            raise RuntimeError(f"MTP head tensor {name} has no upstream name")
        suffix = name[len("layer."):]
        try:
            names = dsv4_spec.layer_upstream_names("mtp.0.", suffix, n_experts)
        except KeyError:
            raise RuntimeError(f"MTP head tensor {name} has no upstream name")
        if suffix == dsv4_spec.EXPERTS_GATE_UP:
            inter = t.shape[1] // 2
            pieces = [p for e in range(t.shape[0]) for p in (t[e, :inter], t[e, inter:])]
        elif suffix == dsv4_spec.EXPERTS_DOWN:
            pieces = [t[e] for e in range(t.shape[0])]
        else:
            pieces = [t]
        if len(pieces) != len(names):
            raise RuntimeError(f"MTP head tensor {name}: {len(pieces)} pieces for {len(names)} names")
        out.update({n: p.contiguous() for n, p in zip(names, pieces)})
    return out


@torch.no_grad()
def dsv4_mtp_reference(model, prompt, first_token, first_seed, spec, x, prepare=None):
    """A random MTP layer and its references, nothing written: the first head
    seed from first_seed whose chained greedy drafts are clear (top-1/top-2 gap
    >= MIN_GREEDY_MARGIN). prepare(head), when given, runs on each drawn head
    before its references (deepseek_v4_fp8: V4FlashForm.apply_head gives it
    its checkpoint's quantized values). Returns (head, seed, hidden, draft
    logits, chain tokens, chain logits)."""
    text = model.model
    hidden = x.reshape(x.shape[0], -1)
    next_tokens = torch.cat([prompt[1:], torch.tensor([first_token])])
    want = sum(dsv4_spec.mtp_counts(spec))
    for seed in range(first_seed, first_seed + MTP_HEAD_SEED_TRIES):
        torch.manual_seed(seed)
        head = DeepseekV4MtpHead(model).float().eval()
        randomise_dsv4_head(head, seed)
        if prepare is not None:
            prepare(head)
        got = sum(t.numel() for t in head.state_dict().values())
        if got != want or (spec is dsv4_spec.TINY and got != dsv4_spec.TINY_MTP_COUNT):
            raise RuntimeError(f"MTP head has {got} parameters + buffers, expected {want}")
        logits, _ = head(text, model.lm_head, hidden, next_tokens)
        chain_tokens, chain_logits = mtp_chain(head, text, model.lm_head, hidden, next_tokens, MTP_CHAIN_STEPS)
        if not (torch.isfinite(logits).all() and torch.isfinite(chain_logits).all()):
            raise RuntimeError("MTP draft logits are not finite")
        margin = top2_margin(torch.cat([logits[-1:], chain_logits[:-1]]))
        if margin >= MIN_GREEDY_MARGIN:
            return head, seed, hidden, logits, chain_tokens, chain_logits
        log(f"MTP head seed {seed}: chained draft top-2 gap {margin:.3g} < {MIN_GREEDY_MARGIN}, next seed")
    raise RuntimeError(f"no MTP head seed in [{first_seed}, {first_seed + MTP_HEAD_SEED_TRIES}) gives clear drafts")


def dsv4_family(out_root, name, spec, first_seed=1234, form=None):
    """Builds, checks and writes one DeepSeek V4 family with its MTP layer.
    form (deepseek_v4_fp8: a V4FlashForm) puts each drawn model, and the MTP
    head, in a released checkpoint's form before any reference is computed,
    and writes and checks that checkpoint instead of save_pretrained's."""
    dsv4_spec.check_config(spec)
    _, mod = dsv4_modules()
    model_cls = mod.DeepseekV4ForCausalLM
    cfg, rope_form = dsv4_config(spec)
    check_dsv4_config(cfg, spec)
    prompt_len = DSV4_PROMPT_LEN[name]

    def make(seed):
        model = build_causal_lm(cfg, seed, model_cls)
        fill_dsv4_buffers(model, seed + 5)
        check_dsv4_model(model, spec)
        if form is not None:
            form.apply(model)
        gen = torch.Generator().manual_seed(seed + 2)
        return model, torch.randint(0, spec["vocab_size"], (prompt_len,), generator=gen)

    seed, model, prompt, ref = pick_seed(make, first_seed, DSV4_CONTINUATION_LEN)
    out_dir = os.path.join(out_root, name)
    cache_layers = check_dsv4_cache_layers(model, prompt, DSV4_SPLIT)
    # HF against itself first: a disagreement is an HF bug, reported with both sides
    diffs = check_paths_agree(model, prompt, ref, DSV4_SPLIT, strict=False)
    if any(k.endswith("_over_limit") for k in diffs):
        where, detail = dump_path_mismatch(out_dir, model, prompt, ref, DSV4_SPLIT, diffs)
        raise SystemExit(f"{name}: HF's cached paths disagree with its uncached forward beyond {MAX_PATH_DIFF} "
                         f"({detail}); both sides are in {where}. An HF bug to report (unless the per-row "
                         "differences show one isolated position, which a near-tie in an indexer or router "
                         "top-k could explain: check before reporting); no fixture written.")

    sliding_idx = list(cfg.layer_types).index(dsv4_spec.SLIDING)
    x, streams, capture, pass_logits = dsv4_prompt_pass(model, prompt, sliding_idx)
    pass_checks, models_md_window = check_dsv4_prompt_pass(model, prompt, x, streams, capture, pass_logits,
                                                           sliding_idx)
    if float((pass_logits - ref[0]).abs().max()) > MAX_PATH_DIFF:
        raise SystemExit("the hooked prompt pass does not give the reference prompt logits")
    coverage = dsv4_coverage(model, prompt)
    os.makedirs(out_dir, exist_ok=True)
    write_f32(os.path.join(out_dir, "prompt_hidden_wide.f32"), streams)
    r = dsv4_spec.rot_dim(spec)
    lo, hi, ramp = dsv4_spec.yarn_ramp(spec["compress_rope_theta"], r,
                                       spec["rope_parameters"]["original_max_position_embeddings"])
    n_params, n_buffers = dsv4_spec.main_counts(spec)
    meta = {"rotary_dim": r, "yarn_lo_hi": [lo, hi], "yarn_ramp": ramp, "split": DSV4_SPLIT,
            "hidden_wide_layers": len(cfg.layer_types), "cache_layers": cache_layers,
            "parameters": n_params, "buffer_elements": n_buffers, "bias_std": DSV4_BIAS_STD,
            "sliding_mask_is_models_md": models_md_window, "prompt_pass_checks": pass_checks,
            "rope_config_form": rope_form,
            "rope_inv_freq": {label: getattr(model.model.rotary_emb, f"{label}_inv_freq").tolist()
                              for label in ("main", "compress")}}
    meta.update(coverage)
    write_fixture(out_dir, model, prompt, seed, ref, model_cls, DSV4_SPLIT, meta, strict=True,
                  checkpoint=dsv4_checkpoint(model_cls) if form is None else form.checkpoint)

    try:
        head, head_seed, hidden, logits, chain_tokens, chain_logits = dsv4_mtp_reference(
            model, prompt, int(ref[1][0]), seed + 3, spec, x, prepare=None if form is None else form.apply_head)
        tensors = dsv4_mtp_tensors(head, cfg.n_routed_experts) if form is None else form.head_tensors(head)
    except Exception:  # noqa: BLE001 - the target fixture stands without its draft layer
        log(f"{name}: no MTP layer:\n" + traceback.format_exc())
        update_meta(out_dir, {"mtp": False})
        return
    # From here on a failure leaves the fixture inconsistent: it fails the family.
    if form is None:
        append_checkpoint(out_dir, tensors, {"num_nextn_predict_layers": 1})
        write_mtp_refs(out_dir, hidden, logits, chain_tokens, chain_logits)
        # transformers ignores mtp.* on load: the checkpoint still reloads bit for bit
        check_checkpoint(model, out_dir, prompt, model_cls, integer_tensors=DSV4_INT_TENSORS)
        n_mtp = sum(t.numel() for t in tensors.values())
    else:
        # the whole file rewritten with the head's tensors and checked again, target logits included
        update_meta(out_dir, form.append_head(model, head, out_dir, prompt))
        write_mtp_refs(out_dir, hidden, logits, chain_tokens, chain_logits)
        n_mtp = sum(t.numel() for t in head.state_dict().values())
    update_meta(out_dir, {"mtp": True, "mtp_seed": head_seed, "mtp_tensors": len(tensors),
                          "mtp_parameters": n_mtp,
                          "mtp_draft_top2_margin_min": top2_margin(logits),
                          "mtp_chain_top2_margin_min": top2_margin(torch.cat([logits[-1:], chain_logits[:-1]]))})
    log(f"{out_dir}: MTP layer, {len(tensors)} tensors, hidden {tuple(hidden.shape)}, draft logits "
        f"{tuple(logits.shape)}, chain {chain_tokens.tolist()}")
    log(f"MTP tensors: {[(n, tuple(t.shape)) for n, t in sorted(tensors.items())]}")


# ---- deepseek_v4_fp8: DeepSeek V4 in V4-Flash's checkpoint form ---------------
# deepseek_v4_tiny's model (same config, seeds, buffers and tie order) stored
# as DeepSeek V4-Flash ships its weights: dsv4_spec.v4flash_form says which
# tensor is F8_E4M3 with an E8M0 `.scale` per 128x128 block (the attention's
# wq_a/wq_b/wkv/wo_a/wo_b, the indexer's wq_b, the shared experts; the MTP
# layer's e_proj/h_proj), MXFP4 (the routed experts: E2M1 pairs in I8
# [out, in/2], the even element in the low nibble, an E8M0 `.scale` per 32 of
# a row, [out, in/32]), BF16 (embedding, head, router, compressor and indexer
# projections) or F32 (norms, mHC, sinks, ape, correction bias), under the
# upstream names without a `model.` prefix (`layers.0.attn.wq_a.weight` and
# `layers.0.attn.wq_a.scale`, `embed.weight`, `hc_head_fn`, ...). The model
# is quantized once and given exactly the checkpoint's values (code * scale;
# the bfloat16 values) before any reference runs, so transformers computes
# the quantized checkpoint's logits in f32. The file is written here (no
# save_pretrained), then read back and decoded by a second implementation
# (FP8 codes: dsv4_spec's pure-Python E4M3 decoder, against torch's cast
# used to make them; MXFP4: a torch nibble table, against dsv4_spec's pure-
# Python encoder used to make them; transformers' own FineGrainedDequantize
# too when this transformers has it), and a fresh model loaded from it must
# give the reference logits bit for bit.
DSV4_FP8_QUANTIZATION_CONFIG = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                "scale_fmt": "ue8m0", "weight_block_size": [dsv4_spec.FP8_BLOCK, dsv4_spec.FP8_BLOCK]}
V4FLASH_ST_DTYPES = {dsv4_spec.FP8: "F8_E4M3", dsv4_spec.FP4: "I8", dsv4_spec.BF16: "BF16", dsv4_spec.F32: "F32",
                     dsv4_spec.INT: "I64"}
V4FLASH_FORMATS = {dsv4_spec.FP8: "F8_E4M3, E8M0 .scale per 128x128 block",
                   dsv4_spec.FP4: "MXFP4: E2M1 pairs in I8 (even element low), E8M0 .scale per 32 of a row"}
E2M1_LUT = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def safetensors_header(path):
    """A safetensors file's header: tensor name -> {dtype, shape, data_offsets} (metadata left out)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header


def e8m0_storage():
    """(torch dtype, safetensors dtype) the E8M0 scales are stored in:
    torch.float8_e8m0fnu as F8_E8M0 (V4-Flash's) when this torch has it and
    this safetensors writes and reads it back byte for byte, else uint8 as U8
    (the biased exponent bytes; halo and transformers read both)."""
    dt = getattr(torch, "float8_e8m0fnu", None)
    if dt is None:
        log(f"torch {torch.__version__} has no float8_e8m0fnu: E8M0 scales are stored as U8 bytes")
        return torch.uint8, "U8"
    from safetensors.torch import load_file, save_file
    probe = torch.tensor([0, 1, 127, 128, 254], dtype=torch.uint8)
    tmp = tempfile.mkdtemp()
    try:
        path = os.path.join(tmp, "probe.safetensors")
        save_file({"s": probe.view(dt)}, path)
        back = load_file(path)["s"]
        ok = safetensors_header(path)["s"]["dtype"] == "F8_E8M0" and back.dtype == dt and \
            torch.equal(back.view(torch.uint8), probe)
    except Exception as e:  # noqa: BLE001 - this safetensors cannot: the U8 form instead
        log(f"safetensors cannot store float8_e8m0fnu ({e!r}): E8M0 scales are stored as U8 bytes")
        ok = False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return (dt, "F8_E8M0") if ok else (torch.uint8, "U8")


def same_bits(a, b):
    """Same dtype, shape and bits (a float's sign of zero included)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():
        width = {4: torch.int32, 2: torch.int16}[a.element_size()]
        return torch.equal(a.contiguous().view(width), b.contiguous().view(width))
    return torch.equal(a, b)


def e8m0_grid(rows):
    """E8M0 bytes (lists) as float32 powers of two, through dsv4_spec."""
    return torch.tensor([[dsv4_spec.e8m0_value(b) for b in row] for row in rows], dtype=torch.float32)


def e8m0_to_f32(b):
    """E8M0 bytes (a uint8 tensor) as float32 built from their bits: byte e is
    the exponent field of 2^(e - 127), byte 0 the subnormal 2^-127 (0x00400000);
    255, E8M0's NaN, is refused."""
    if bool((b == 255).any()):
        raise SystemExit("an E8M0 scale is 0xff (NaN)")
    i = b.to(torch.int32)
    return torch.where(i == 0, torch.full_like(i, 0x00400000), i << 23).view(torch.float32)


def fp8_e8m0_quantize(w):
    """w [N, K] float32 -> (codes float8_e4m3fn [N, K], E8M0 bytes [ceil(N/128)][ceil(K/128)]):
    each 128x128 block's scale the smallest power of two whose 448 holds the
    block's maximum (dsv4_spec.e8m0_byte), codes w / scale cast by torch
    (round to nearest even), clamped to +-448 as transformers does (no value
    exceeds it: the scale was chosen so)."""
    n, k, b = w.shape[0], w.shape[1], dsv4_spec.FP8_BLOCK
    rows, scaled = [], torch.empty(n, k, dtype=torch.float32)
    for i in range(0, n, b):
        rows.append([])
        for j in range(0, k, b):
            blk = w[i:i + b, j:j + b]
            byte = dsv4_spec.e8m0_byte(float(blk.abs().max()), dsv4_spec.FP8_MAX)
            rows[-1].append(byte)
            scaled[i:i + b, j:j + b] = (blk / dsv4_spec.e8m0_value(byte)).clamp(-dsv4_spec.FP8_MAX, dsv4_spec.FP8_MAX)
    return scaled.to(torch.float8_e4m3fn), rows


def mxfp4_quantize(w):
    """w [N, K] float32 (K whole groups of 32) -> (packed int8 [N, K/2], E8M0 bytes
    [N][K/32], the values they hold, float32 [N, K]): dsv4_spec's pure-Python
    encoder and decoder, row by row."""
    packed, scales, values = [], [], []
    for row in w.tolist():
        p, s = dsv4_spec.mxfp4_quantize_row(row)
        packed.append(list(p))
        scales.append(list(s))
        values.append(dsv4_spec.mxfp4_dequantize_row(p, s))
    return torch.tensor(packed, dtype=torch.uint8).view(torch.int8), scales, torch.tensor(values, dtype=torch.float32)


def mxfp4_unpack(packed):
    """Packed E2M1 pairs (int8 [N, K/2]) -> float32 [N, K], element 2j from byte
    j's low nibble (as transformers' FineGrainedDequantize._unpack_fp4 reads them)."""
    u8 = packed.contiguous().view(torch.uint8)
    lut = torch.tensor(E2M1_LUT, dtype=torch.float32)
    return torch.stack([lut[(u8 & 15).long()], lut[(u8 >> 4).long()]], dim=-1).reshape(u8.shape[0], 2 * u8.shape[1])


def mxfp4_is_nearest(src, packed, scale_bytes):
    """The MXFP4 tensor holds src as the format asks: each group's scale is the
    smallest power of two whose 6 holds the group's maximum (1 for an all-zero
    group), and each value is a nearest E2M1 value of src / scale with src's
    sign (a property check in torch, independent of dsv4_spec's encoder)."""
    n, k, g = src.shape[0], src.shape[1], dsv4_spec.FP4_GROUP
    s = e8m0_to_f32(scale_bytes)
    amax = src.abs().reshape(n, k // g, g).amax(-1)
    minimal = bool(((amax <= 6 * s) & ((amax > 3 * s) | ((amax == 0) & (s == 1)))).all())
    x = (src / s.repeat_interleave(g, dim=1)).abs().clamp(max=dsv4_spec.FP4_MAX)
    v = mxfp4_unpack(packed)
    mags = torch.tensor(dsv4_spec.E2M1_MAGNITUDES, dtype=torch.float32)
    nearest = torch.equal((x - v.abs()).abs(), (x.unsqueeze(-1) - mags).abs().amin(-1))
    signs = bool(((v == 0) | (torch.sign(v) == torch.sign(src))).all())
    return minimal and nearest and signs


def dsv4_pieces(hf_name, t, names):
    """(upstream name, view of t) for each checkpoint tensor holding a piece of
    the model tensor t: stacked experts split per expert (gate_up_proj[e] rows
    [0, I) are w1, [I, 2I) w3; down_proj[e] is w2), any other tensor whole."""
    if hf_name.endswith(dsv4_spec.EXPERTS_GATE_UP):
        inter = t.shape[1] // 2
        pieces = [p for e in range(t.shape[0]) for p in (t[e, :inter], t[e, inter:])]
    elif hf_name.endswith(dsv4_spec.EXPERTS_DOWN):
        pieces = [t[e] for e in range(t.shape[0])]
    else:
        pieces = [t]
    if len(pieces) != len(names):
        raise SystemExit(f"{hf_name}: {len(pieces)} pieces for the upstream names {names}")
    return list(zip(names, pieces))


def dsv4_state_from_upstream(module, values, names_of):
    """module's state dict rebuilt from upstream tensors (values: name -> tensor),
    experts stacked back; shapes and dtypes checked against the module's."""
    state = {}
    for hf_name, t in module.state_dict().items():
        names = names_of(hf_name)
        if hf_name.endswith(dsv4_spec.EXPERTS_GATE_UP):
            got = torch.stack([torch.cat([values[names[2 * e]], values[names[2 * e + 1]]]) for e in range(t.shape[0])])
        elif hf_name.endswith(dsv4_spec.EXPERTS_DOWN):
            got = torch.stack([values[n] for n in names])
        else:
            got = values[names[0]]
        if got.shape != t.shape or got.dtype != t.dtype:
            raise SystemExit(f"{hf_name}: rebuilt as {got.dtype} {tuple(got.shape)}, the model holds {t.dtype} "
                             f"{tuple(t.shape)}")
        state[hf_name] = got
    return state


class V4FlashForm:
    """deepseek_v4_fp8's checkpoint form, for dsv4_family: apply(model) and
    apply_head(head) quantize in place; checkpoint (write_fixture's writer)
    and append_head write model.safetensors and config.json and check them."""

    def __init__(self, spec):
        self.spec = spec
        self.n_experts = spec["n_routed_experts"]
        self.scale_dtype, self.scale_st = e8m0_storage()

    def main_names(self, hf_name):
        return dsv4_spec.upstream_names(hf_name, self.n_experts)

    def head_names(self, hf_name):
        return dsv4_spec.mtp_upstream_names(hf_name, self.n_experts)

    def scale_tensor(self, rows):
        t = torch.tensor(rows, dtype=torch.uint8)
        return t if self.scale_dtype == torch.uint8 else t.view(self.scale_dtype)

    @torch.no_grad()
    def quantize(self, module, names_of, want_names):
        """Every tensor of module's state dict into its upstream checkpoint
        tensors (and scales), each piece of the module then holding exactly
        what they hold. Returns {"ckpt": checkpoint tensors, "values": upstream
        name -> the float32 (int64) values the module holds, "sources": FP8 and
        MXFP4 name -> the values before quantization}."""
        ckpt, values, sources = {}, {}, {}
        for hf_name, t in module.state_dict().items():  # detached views of the parameters and buffers
            try:
                names = names_of(hf_name)
            except KeyError:
                raise SystemExit(f"dsv4_spec knows no upstream name for {hf_name}")
            for up, piece in dsv4_pieces(hf_name, t, names):
                form = dsv4_spec.v4flash_form(up)
                want = torch.int64 if form == dsv4_spec.INT else torch.float32
                if piece.dtype != want:
                    raise SystemExit(f"{hf_name} ({up}) is {piece.dtype}, expected {want}")
                if form in (dsv4_spec.FP8, dsv4_spec.FP4):
                    if piece.dim() != 2:
                        raise SystemExit(f"{up} {tuple(piece.shape)} is not a matrix")
                    sources[up] = piece.clone()
                    if form == dsv4_spec.FP8:
                        codes, rows = fp8_e8m0_quantize(piece)
                        deq = fp8_dequantize(codes, e8m0_grid(rows))
                    else:
                        codes, rows, deq = mxfp4_quantize(piece)
                    ckpt[up] = codes.contiguous()
                    ckpt[dsv4_spec.scale_name(up)] = self.scale_tensor(rows)
                    piece.copy_(deq)
                elif form == dsv4_spec.BF16:
                    ckpt[up] = piece.to(torch.bfloat16).contiguous().clone()
                    piece.copy_(ckpt[up].float())
                else:
                    ckpt[up] = piece.contiguous().clone()
                values[up] = piece.clone()
        if sorted(values) != sorted(want_names):
            extra, missing = sorted(set(values) - set(want_names)), sorted(set(want_names) - set(values))
            raise SystemExit(f"the upstream names of {type(module).__name__} are not dsv4_spec's: only these "
                             f"{extra}, missing {missing}")
        # the module holds them: its state dict is the values, bit for bit
        state = dsv4_state_from_upstream(module, values, names_of)
        moved = [n for n, t in module.state_dict().items() if not same_bits(state[n], t)]
        if moved:
            raise SystemExit(f"quantizing did not reach the module's tensors {moved[:4]}")
        return {"ckpt": ckpt, "values": values, "sources": sources}

    def apply(self, model):
        model.v4flash = self.quantize(model, self.main_names, dsv4_spec.main_checkpoint_names(self.spec))

    def apply_head(self, head):
        head.v4flash = self.quantize(head, self.head_names, dsv4_spec.mtp_checkpoint_names(self.spec))

    def head_tensors(self, head):
        return head.v4flash["ckpt"]

    def checkpoint(self, model, out_dir, tokens):
        """write_fixture's checkpoint writer: the target's tensors, then the checks."""
        tensors = dict(model.v4flash["ckpt"])
        self.write(model, out_dir, tensors, mtp_layers=0)
        meta = self.check(out_dir, tokens, model, None)
        return sorted(tensors), meta

    def append_head(self, model, head, out_dir, tokens):
        """The file again with the MTP layer's tensors, config.json with
        num_nextn_predict_layers 1, and every check again (the head's values
        too). Returns meta.json's entries, now counting the MTP tensors."""
        tensors = dict(model.v4flash["ckpt"])
        clash = sorted(set(tensors) & set(head.v4flash["ckpt"]))
        if clash:
            raise SystemExit(f"MTP tensors clash with the target's: {clash[:4]}")
        tensors.update(head.v4flash["ckpt"])
        self.write(model, out_dir, tensors, mtp_layers=1)
        meta = self.check(out_dir, tokens, model, head)
        meta["checkpoint_tensors_with_mtp"] = len(tensors)
        return meta

    def write(self, model, out_dir, tensors, mtp_layers):
        from safetensors.torch import save_file
        save_file(tensors, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
        model.config.save_pretrained(out_dir)  # config.json, as the other families' save_pretrained writes it

        def released_form(c):
            c["architectures"] = [type(model).__name__]
            c["quantization_config"] = copy.deepcopy(DSV4_FP8_QUANTIZATION_CONFIG)
            c["expert_dtype"] = "fp4"
            c["num_nextn_predict_layers"] = mtp_layers
        edit_config(out_dir, released_form)

    def check(self, out_dir, tokens, model, head):
        """Reads model.safetensors back: the names are dsv4_spec's upstream ones
        plus a `.scale` for each FP8 and MXFP4 tensor and nothing else, every
        dtype and shape is V4-Flash's, every tensor decoded independently holds
        the model's (and head's) values bit for bit, the FP8 codes and scales
        are dsv4_spec's round-to-nearest-even ones, the MXFP4 ones nearest with
        minimal scales, and a fresh model loaded from the file gives the
        model's logits bit for bit. Returns meta.json's entries."""
        from safetensors.torch import load_file
        path = os.path.join(out_dir, "model.safetensors")
        header, saved = safetensors_header(path), load_file(path)
        parts = [model.v4flash] + ([head.v4flash] if head is not None else [])
        values, sources = {}, {}
        for part in parts:
            values.update(part["values"])
            sources.update(part["sources"])
        forms = {n: dsv4_spec.v4flash_form(n) for n in values}
        quantized = sorted(n for n, f in forms.items() if f in (dsv4_spec.FP8, dsv4_spec.FP4))
        want_file = set(values) | {dsv4_spec.scale_name(n) for n in quantized}
        if set(header) != want_file or set(saved) != want_file:
            raise SystemExit(f"model.safetensors holds {sorted(set(header) - want_file)[:8]} beyond and lacks "
                             f"{sorted(want_file - set(header))[:8]} of the upstream names and scales")
        decoded, problems = {}, []
        for name in sorted(values):
            want, form, t, h = values[name], forms[name], saved[name], header[name]
            if h["dtype"] != V4FLASH_ST_DTYPES[form]:
                problems.append(f"{name} is {h['dtype']}, expected {V4FLASH_ST_DTYPES[form]}")
                continue
            if form in (dsv4_spec.FP8, dsv4_spec.FP4):
                n, k = want.shape
                sn = dsv4_spec.scale_name(name)
                if form == dsv4_spec.FP8:
                    b = dsv4_spec.FP8_BLOCK
                    shapes = ([n, k], [-(-n // b), -(-k // b)])
                else:
                    shapes = ([n, k // 2], [n, k // dsv4_spec.FP4_GROUP])
                if (h["shape"], header[sn]["shape"]) != shapes or header[sn]["dtype"] != self.scale_st:
                    problems.append(f"{name} {h['shape']} with {sn} {header[sn]['dtype']} {header[sn]['shape']}: "
                                    f"expected {shapes[0]} with {self.scale_st} {shapes[1]}")
                    continue
                codes, scales = t.contiguous().view(torch.uint8), saved[sn].contiguous().view(torch.uint8)
                if form == dsv4_spec.FP8:
                    # pure-Python E4M3 and E8M0 decoders, against torch's cast that made the codes
                    got = torch.tensor(dsv4_spec.fp8_dequantize_blocks(codes.tolist(), scales.tolist()),
                                       dtype=torch.float32)
                    again, again_scales = dsv4_spec.fp8_quantize_blocks(sources[name].tolist())
                    if again != codes.tolist() or again_scales != scales.tolist():
                        problems.append(f"{name}: torch's codes or scales are not dsv4_spec's round to nearest even")
                else:
                    # a torch nibble table and the scales' bits, against dsv4_spec's encoder that made them
                    got = mxfp4_unpack(t) * e8m0_to_f32(scales).repeat_interleave(dsv4_spec.FP4_GROUP, dim=1)
                    if not mxfp4_is_nearest(sources[name], t, scales):
                        problems.append(f"{name}: its values are not the nearest E2M1 at the minimal scales")
            elif form == dsv4_spec.BF16:
                got = t.float()
            else:
                got = t
            if not same_bits(got, want):
                problems.append(f"{name}: the file's values, decoded, are not the model's")
            decoded[name] = got
        if problems:
            raise SystemExit("the V4-Flash-form checkpoint does not hold the model:\n  " + "\n  ".join(problems))

        # the modules hold the decoded file, and a fresh model loaded from it gives the references' logits
        state = dsv4_state_from_upstream(model, decoded, self.main_names)
        moved = [n for n, t in model.state_dict().items() if not same_bits(state[n], t)]
        if head is not None:
            head_state = dsv4_state_from_upstream(head, decoded, self.head_names)
            moved += [n for n, t in head.state_dict().items() if not same_bits(head_state[n], t)]
        if moved:
            raise SystemExit(f"the decoded checkpoint differs from the model's tensors {moved[:4]}")
        again = instantiate(type(model), model.config).float().eval()
        again.load_state_dict(state, strict=True)
        diff = float((full_forward_logits(again, tokens) - full_forward_logits(model, tokens)).abs().max())
        if diff != 0.0:
            raise SystemExit(f"a model loaded from the decoded checkpoint gives different logits (max diff {diff})")

        fp4 = [n for n in quantized if forms[n] == dsv4_spec.FP4]
        fp8 = [n for n in quantized if forms[n] == dsv4_spec.FP8]
        nibbles = torch.cat([saved[n].view(torch.uint8).flatten() for n in fp4])
        codes = torch.bincount(torch.cat([nibbles & 15, nibbles >> 4]).long(), minlength=16)

        def scale_range(names):
            s = torch.cat([saved[dsv4_spec.scale_name(n)].view(torch.uint8).flatten() for n in names])
            return [int(s.min()), int(s.max())]

        dtypes = {}
        for h in header.values():
            dtypes[h["dtype"]] = dtypes.get(h["dtype"], 0) + 1
        meta = {"checkpoint_files": 1, "checkpoint_names": "upstream",
                "quantization_config": DSV4_FP8_QUANTIZATION_CONFIG, "expert_dtype": "fp4",
                "scale_dtype": self.scale_st, "checkpoint_dtype_counts": dtypes,
                "fp8_tensors": len(fp8), "mxfp4_tensors": len(fp4),
                "quantized_tensors": {n: V4FLASH_FORMATS[forms[n]] for n in quantized},
                "fp8_scale_bytes_min_max": scale_range(fp8), "mxfp4_scale_bytes_min_max": scale_range(fp4),
                "e2m1_code_counts": codes.tolist(), "reload_logits_max_abs_diff": diff}
        meta.update(self.transformers_checks(saved, decoded, sources, fp8, fp4))
        log(f"{out_dir}: V4-Flash form, {len(saved)} tensors {dtypes}, scales {self.scale_st}, "
            f"E2M1 codes {codes.tolist()}")
        return meta

    @staticmethod
    def transformers_checks(saved, decoded, sources, fp8, fp4):
        """transformers' own fine-grained FP8/MXFP4 code, when this transformers
        has it (integrations/finegrained/conversions.py): its dequantizer must
        read every FP8 and MXFP4 tensor as decoded here (a disagreement, e.g.
        on the nibble order, fails the family); its block-fp8 quantizer with
        ue8m0 scales, run on the unquantized values, is compared with the
        codes and scales written (reported, not fatal)."""
        try:
            from transformers.integrations.finegrained.conversions import FineGrainedDequantize, FineGrainedQuantize
        except Exception as e:  # noqa: BLE001 - not in this transformers
            log(f"transformers' fine-grained conversions are not available ({e!r}); not cross-checked")
            return {"transformers_dequantizer": f"unavailable: {e!r}",
                    "transformers_fp8_quantizer": f"unavailable: {e!r}"}
        out = {}
        try:
            deq = FineGrainedDequantize()
            differ = [n for n in fp8 + fp4 if not torch.equal(
                deq._dequantize_one(saved[n], saved[dsv4_spec.scale_name(n)], output_dtype=torch.float32), decoded[n])]
        except Exception as e:  # noqa: BLE001 - another API in this version: reported
            log(f"transformers' FineGrainedDequantize could not be called ({e!r}); not cross-checked")
            out["transformers_dequantizer"] = f"unavailable: {e!r}"
        else:
            if differ:
                raise SystemExit(f"transformers' FineGrainedDequantize reads {differ[:4]} otherwise than this script")
            out["transformers_dequantizer"] = f"same values for all {len(fp8)} FP8 and {len(fp4)} MXFP4 tensors"
        try:
            differ = []
            for n in fp8:
                codes, scale = FineGrainedQuantize._quantize_block_fp8(
                    sources[n], (dsv4_spec.FP8_BLOCK, dsv4_spec.FP8_BLOCK), True)
                mine = saved[dsv4_spec.scale_name(n)].contiguous().view(torch.uint8)
                theirs = scale.to(torch.float32) if scale.element_size() > 1 else \
                    e8m0_to_f32(scale.contiguous().view(torch.uint8))
                if not (torch.equal(codes.contiguous().view(torch.uint8), saved[n].contiguous().view(torch.uint8))
                        and torch.equal(theirs, e8m0_to_f32(mine))):
                    differ.append(n)
        except Exception as e:  # noqa: BLE001 - another API in this version: reported
            log(f"transformers' FineGrainedQuantize._quantize_block_fp8 could not be called ({e!r}); not compared")
            out["transformers_fp8_quantizer"] = f"unavailable: {e!r}"
        else:
            if differ:
                log(f"warning: transformers' block-fp8 quantizer (ue8m0) gives other codes or scales for {differ}")
                out["transformers_fp8_quantizer"] = f"differs for {differ}"
            else:
                out["transformers_fp8_quantizer"] = f"same codes and scales for all {len(fp8)} FP8 tensors"
        return out


class lower_index_ties:
    """torch.topk with exact ties broken toward the lower index, for the
    DeepSeek V4 families. The Lightning indexer's score is a sum of
    w_h * relu(q_h . k): an entry whose every head is negative scores exactly
    0, so random weights give many exact ties, and torch.topk's order among
    them changes with the number of entries (measured: one 70-token forward
    and one 94-token forward pick different entries for query 38 of
    deepseek_v4_tiny, moving its logits by 0.9; so do HF's cached and
    two-chunk paths). models.md 0.3 leaves the tie order unspecified and asks
    the compiler for lower index first; the reference is made to pick the
    same, with a stable sort, so that it is one well-defined answer. The
    values and every non-tied choice are unchanged."""

    def __enter__(self):
        self.saved = torch.Tensor.topk, torch.topk

        def stable(x, k, dim=-1, largest=True, sorted=True):
            vals, idx = torch.sort(x, dim=dim, descending=largest, stable=True)
            return torch.return_types.topk((vals.narrow(dim, 0, k), idx.narrow(dim, 0, k)))

        torch.Tensor.topk = stable
        torch.topk = stable
        return self

    def __exit__(self, *exc):
        torch.Tensor.topk, torch.topk = self.saved
        return False


def family_deepseek_v4_tiny(out_root, first_seed=1234):
    with lower_index_ties():
        dsv4_family(out_root, "deepseek_v4_tiny", dsv4_spec.TINY, first_seed)


def family_deepseek_v4_b(out_root, first_seed=1234):
    with lower_index_ties():
        dsv4_family(out_root, "deepseek_v4_b", dsv4_spec.B, first_seed)


def family_deepseek_v4_fp8(out_root, first_seed=1234):
    """deepseek_v4_tiny's model in DeepSeek V4-Flash's checkpoint form (V4FlashForm)."""
    with lower_index_ties():
        dsv4_family(out_root, "deepseek_v4_fp8", dsv4_spec.TINY, first_seed, form=V4FlashForm(dsv4_spec.TINY))


FAMILIES = {
    "qwen3_tiny": family_qwen3_tiny,
    "qwen3_next_tiny": family_qwen3_next_tiny,
    "qwen3_5_moe_tiny": family_qwen3_5_moe_tiny,
    "qwen4_exp_tiny": family_qwen4_exp_tiny,
    "qwen4_exp_var": family_qwen4_exp_var,
    "qwen4_exp_hc5": family_qwen4_exp_hc5,
    "qwen3_fp8": family_qwen3_fp8,
    "deepseek_v4_tiny": family_deepseek_v4_tiny,
    "deepseek_v4_b": family_deepseek_v4_b,
    "deepseek_v4_fp8": family_deepseek_v4_fp8,
}


def pack_reference_sources(tar_path):
    """modeling_/configuration_/modular_ sources of REFERENCE_FAMILIES from the installed transformers."""
    models_dir = os.path.join(os.path.dirname(transformers.__file__), "models")
    with tarfile.open(tar_path, "w:gz") as tar:
        for fam in REFERENCE_FAMILIES:
            d = os.path.join(models_dir, fam)
            if not os.path.isdir(d):
                log(f"reference sources: no model folder '{fam}' in transformers {transformers.__version__}")
                continue
            for f in sorted(os.listdir(d)):
                if f.endswith(".py") and f.startswith(("modeling_", "configuration_", "modular_")):
                    tar.add(os.path.join(d, f), arcname=f"{fam}/{f}")
                    log(f"reference sources: {fam}/{f}")
        listing = "\n".join(sorted(os.listdir(models_dir))) + "\n"
        path = tar_path + ".models.txt"
        with open(path, "w") as f:
            f.write(listing)
        tar.add(path, arcname="MODELS.txt")
        os.remove(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder that receives one sub-folder per family")
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES), help="default: all")
    ap.add_argument("--ref-src-tar", help="also pack the reference model sources into this .tar.gz")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}")
    if not transformers.__version__.startswith("5.17"):
        log(f"warning: fixtures are specified against transformers 5.17, found {transformers.__version__}")
    # Sources first: they are wanted even when a family fails.
    if args.ref_src_tar:
        pack_reference_sources(args.ref_src_tar)
    # One family failing does not stop the others; the exit status reports it.
    failed = []
    for fam in args.family or sorted(FAMILIES):
        try:
            FAMILIES[fam](args.out)
        except (Exception, SystemExit):  # noqa: BLE001 - reported, then the next family runs
            log(f"family {fam} failed:\n{traceback.format_exc()}")
            shutil.rmtree(os.path.join(args.out, fam), ignore_errors=True)
            failed.append(fam)
    if failed:
        raise SystemExit(f"failed families: {failed}")


if __name__ == "__main__":
    main()
