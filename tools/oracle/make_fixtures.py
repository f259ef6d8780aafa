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
import traceback

import numpy as np
import torch
import transformers
from safetensors import safe_open

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


def check_checkpoint(model, out_dir, tokens, model_cls=None, dtype=torch.float32):
    """Reloads the saved checkpoint and checks it reproduces the model bit for bit.

    dtype: what the checkpoint's floating tensors must be; one narrower than
    float32 holds the model exactly only when its weights were rounded to it.

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
            dtypes |= {str(f.get_tensor(n).dtype) for n in f.keys() if n not in buffers}
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


def hf_checkpoint(model_cls=None, dtype=torch.float32, max_shard_size=None, config_edit=None):
    """write_fixture's default checkpoint writer: save_pretrained in dtype
    (sharded with max_shard_size), config.json edited by config_edit (before
    the reload, so the reload reads the edited config), then the bit-exact
    reload check. Returns (tensor names, meta entries)."""
    def write(model, out_dir, tokens):
        save_checkpoint(model, out_dir, dtype, max_shard_size)
        if config_edit:
            edit_config(out_dir, config_edit)
        names = check_checkpoint(model, out_dir, tokens, model_cls, dtype)
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
    """How the checkpoint stores MoE experts: per-expert 2-D tensors, stacked 3-D ones, or none."""
    if any(".experts.0.gate_proj.weight" in n for n in names):
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
    write_f32(os.path.join(out_dir, "mtp_hidden.f32"), hidden)
    write_f32(os.path.join(out_dir, "mtp_draft_logits.f32"), logits)
    write_i32(os.path.join(out_dir, "mtp_chain_tokens.i32"), chain_tokens)
    write_f32(os.path.join(out_dir, "mtp_chain_logits.f32"), chain_logits)
    return tensors


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


FAMILIES = {
    "qwen3_tiny": family_qwen3_tiny,
    "qwen3_next_tiny": family_qwen3_next_tiny,
    "qwen3_5_moe_tiny": family_qwen3_5_moe_tiny,
    "qwen4_exp_tiny": family_qwen4_exp_tiny,
    "qwen4_exp_var": family_qwen4_exp_var,
    "qwen4_exp_hc5": family_qwen4_exp_hc5,
    "qwen3_fp8": family_qwen3_fp8,
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
