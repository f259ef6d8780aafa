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
import json
import os
import shutil
import sys
import tarfile

import numpy as np
import torch
import transformers
from safetensors import safe_open

PROMPT_LEN = 48
CONTINUATION_LEN = 32
# Noise added to every parameter, norms included: large enough that a wrong
# norm convention ((1+w) instead of w) or a missing q/k norm moves the logits
# far beyond float tolerance.
PARAM_NOISE_STD = 0.08
# Greedy choices closer than this are treated as ties (see pick_seed).
MIN_GREEDY_MARGIN = 1e-3
MAX_SEED_TRIES = 64

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


def build_causal_lm(config, seed):
    """A float32 CPU model with eager attention, weights drawn from `seed`."""
    torch.manual_seed(seed)
    try:
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    except (TypeError, ValueError) as e:
        log(f"eager attention not accepted ({e}); using the default implementation")
        model = transformers.AutoModelForCausalLM.from_config(config)
    model = model.float().eval()
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


def attn_implementation(model):
    return getattr(model.config, "_attn_implementation", None)


def top2_margin(logits):
    top = torch.topk(logits, 2, dim=-1).values
    return float((top[..., 0] - top[..., 1]).min())


def write_f32(path, t):
    np.ascontiguousarray(t.detach().cpu().numpy().astype("<f4")).tofile(path)


def write_i32(path, t):
    np.ascontiguousarray(t.detach().cpu().numpy().astype("<i4")).tofile(path)


def save_checkpoint(model, out_dir):
    """config.json + model.safetensors only (save_pretrained may add other files)."""
    tmp = out_dir + ".ckpt"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    extra = sorted(set(os.listdir(tmp)) - {"config.json", "model.safetensors"})
    if extra:
        log(f"save_pretrained also wrote {extra}; not kept")
    for f in ("config.json", "model.safetensors"):
        shutil.move(os.path.join(tmp, f), os.path.join(out_dir, f))
    shutil.rmtree(tmp)


def check_checkpoint(model, out_dir, tokens):
    """Reloads the saved checkpoint and checks it reproduces the model bit for bit."""
    with safe_open(os.path.join(out_dir, "model.safetensors"), "pt") as f:
        names = sorted(f.keys())
        dtypes = {str(f.get_tensor(n).dtype) for n in names}
    params = sorted(n for n, _ in model.named_parameters())
    if names != params:
        raise SystemExit(f"checkpoint names differ from parameters: {set(names) ^ set(params)}")
    if dtypes != {"torch.float32"}:
        raise SystemExit(f"checkpoint dtypes are {dtypes}, expected float32 only")
    impl = attn_implementation(model)
    kwargs = {"attn_implementation": impl} if impl else {}
    again = transformers.AutoModelForCausalLM.from_pretrained(out_dir, **kwargs).float().eval()
    diff = float((full_forward_logits(again, tokens) - full_forward_logits(model, tokens)).abs().max())
    if diff != 0.0:
        raise SystemExit(f"reloaded checkpoint gives different logits (max diff {diff})")
    return len(names)


def greedy_margin(prompt_logits, cont_logits):
    """Smallest top-1/top-2 gap over the rows that chose a continuation token."""
    return top2_margin(torch.cat([prompt_logits[-1:], cont_logits[:-1]]))


def pick_seed(make_model_and_prompt, first_seed):
    """First seed from first_seed on whose greedy choices are all clear.

    A near tie (gap of float rounding size) would make a correct
    implementation pick the other token and diverge, so such draws are skipped.
    """
    for seed in range(first_seed, first_seed + MAX_SEED_TRIES):
        model, prompt = make_model_and_prompt(seed)
        ref = greedy_reference(model, prompt, CONTINUATION_LEN)
        margin = greedy_margin(ref[0], ref[2])
        if margin >= MIN_GREEDY_MARGIN:
            return seed, model, prompt, ref
        log(f"seed {seed}: greedy top-2 gap {margin:.3g} < {MIN_GREEDY_MARGIN}, next seed")
    raise SystemExit(f"no seed in [{first_seed}, {first_seed + MAX_SEED_TRIES}) gives clear greedy choices")


def write_fixture(out_dir, model, prompt, seed, ref):
    """The files every decoder-only fixture family shares (tests/fixtures/*/README.md)."""
    os.makedirs(out_dir, exist_ok=True)
    prompt_logits, cont, cont_logits = ref

    # The cached decode must agree with one uncached pass over the whole sequence.
    seq = torch.cat([prompt, cont])
    full = full_forward_logits(model, seq)
    cache_vs_full = max(float((full[:PROMPT_LEN] - prompt_logits).abs().max()),
                        float((full[PROMPT_LEN:] - cont_logits).abs().max()))
    if cache_vs_full > 1e-4:
        raise SystemExit(f"cached decode differs from full forward by {cache_vs_full}")

    write_i32(os.path.join(out_dir, "prompt_tokens.i32"), prompt)
    write_f32(os.path.join(out_dir, "prompt_logits.f32"), prompt_logits)
    write_i32(os.path.join(out_dir, "continuation_tokens.i32"), cont)
    write_f32(os.path.join(out_dir, "continuation_logits.f32"), cont_logits)
    save_checkpoint(model, out_dir)
    n_tensors = check_checkpoint(model, out_dir, prompt)

    meta = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "seed": seed,
        "param_noise_std": PARAM_NOISE_STD,
        "attn_implementation": attn_implementation(model),
        "vocab": int(prompt_logits.shape[-1]),
        "prompt_len": PROMPT_LEN,
        "continuation_len": CONTINUATION_LEN,
        "checkpoint_tensors": n_tensors,
        "cache_vs_full_max_abs_diff": cache_vs_full,
        "prompt_logits_abs_max": float(prompt_logits.abs().max()),
        "prompt_top2_margin_min": top2_margin(prompt_logits),
        "greedy_top2_margin_min": greedy_margin(prompt_logits, cont_logits),
    }
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    log(f"{out_dir}: {json.dumps(meta, sort_keys=True)}")
    log(f"continuation: {cont.tolist()}")


def family_qwen3_tiny(out_root, first_seed=1234):
    cfg = transformers.Qwen3Config(
        vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )

    def make(seed):
        model = build_causal_lm(cfg, seed)
        inv_freq = model.model.rotary_emb.inv_freq
        want = 1.0 / (10000.0 ** (torch.arange(0, 16, 2, dtype=torch.float32) / 16))
        if float((inv_freq - want).abs().max()) > 1e-6:
            raise SystemExit(f"rope_theta did not reach the model: inv_freq {inv_freq.tolist()}")
        gen = torch.Generator().manual_seed(seed + 2)
        return model, torch.randint(0, cfg.vocab_size, (PROMPT_LEN,), generator=gen)

    seed, model, prompt, ref = pick_seed(make, first_seed)
    write_fixture(os.path.join(out_root, "qwen3_tiny"), model, prompt, seed, ref)


FAMILIES = {
    "qwen3_tiny": family_qwen3_tiny,
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
    for fam in args.family or sorted(FAMILIES):
        FAMILIES[fam](args.out)


if __name__ == "__main__":
    main()
