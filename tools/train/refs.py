#!/usr/bin/env python3
"""Oracle references of one trained model, in the files make_fixtures.py writes.

Run by train.py as a separate process with the GPU hidden, one CPU thread and
deterministic algorithms: the environment tools/oracle/run_on_device.sh gives
make_fixtures.py, so the numbers are HF transformers' fp32 CPU numbers.

  refs.py --job JOB.json

JOB.json: {"family": "qwen3" | "qwen4_exp", "stage": DIR (config.json +
model.safetensors in f16, written by save_pretrained; for qwen4_exp also
mtp_head.safetensors), "out": DIR, "candidates": [{"file": rel, "tokens": [...]}],
"prompt_len", "cont_len", "split", "max_candidates", "samples": [{"prompt": str,
"tokens": [...]}], "sample_new_tokens", "tokenizer": tokenizer.json, "eos_id",
"result": JSON path}
"""

import argparse
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))


def log(msg):
    print(msg, flush=True)


def append_trained_head(mf, model, head_state, out_dir, dtype):
    """The trained head's tensors joined to the checkpoint without references
    (the fallback when add_qwen4_mtp fails): halo's reader still gets them."""
    from safetensors import safe_open
    text = model.model
    head = mf.Qwen4MtpHead(text, text.config).float().eval()
    head.load_state_dict({n: t.float() for n, t in head_state.items()}, strict=True)
    with safe_open(os.path.join(out_dir, "model.safetensors"), "pt") as f:
        per_expert = mf.experts_layout(list(f.keys())) == "per_expert"
    tensors = mf.checkpoint_tensors("mtp.", head, per_expert)
    tensors = {n: t.to(dtype) if t.is_floating_point() else t for n, t in tensors.items()}
    mf.append_checkpoint(out_dir, tensors, {"mtp_num_hidden_layers": 1})
    return len(tensors)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", required=True)
    args = ap.parse_args()
    with open(args.job) as f:
        job = json.load(f)
    t0 = time.time()
    result = {"ok": False, "mtp_ok": None, "errors": []}

    def save_result():
        result["elapsed_s"] = round(time.time() - t0, 2)
        with open(job["result"], "w") as f:
            json.dump(result, f, indent=2)

    try:
        import torch
        import transformers
        from safetensors.torch import load_file
        import make_fixtures as mf
    except Exception:  # noqa: BLE001
        result["errors"].append("import: " + traceback.format_exc())
        save_result()
        log(result["errors"][-1])
        return 1

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    family, out_dir = job["family"], job["out"]
    os.makedirs(out_dir, exist_ok=True)
    cls = transformers.Qwen3ForCausalLM if family == "qwen3" else transformers.Qwen4ExpForCausalLM
    try:
        model = cls.from_pretrained(job["stage"], dtype=torch.float32, attn_implementation="eager").float().eval()
        log(f"{family}: loaded {job['stage']} ({sum(p.numel() for p in model.parameters())} parameters, "
            f"attention {mf.attn_implementation(model)})")

        # the prompt: the start of the first held-out file whose greedy choices are clear
        best = None
        for cand in job["candidates"][:job["max_candidates"]]:
            prompt = torch.tensor(cand["tokens"][:job["prompt_len"]], dtype=torch.long)
            ref = mf.greedy_reference(model, prompt, job["cont_len"])
            margin = mf.greedy_margin(ref[0], ref[2])
            log(f"{family}: prompt from {cand['file']}: greedy top-2 gap {margin:.3g}")
            if best is None or margin > best[3]:
                best = (cand["file"], prompt, ref, margin)
            if margin >= mf.MIN_GREEDY_MARGIN:
                best = (cand["file"], prompt, ref, margin)
                break
        if best is None:
            raise RuntimeError("no candidate prompt")
        rel, prompt, ref, margin = best
        extra = {
            "trained": True,
            "param_noise_std": None,
            "prompt_source": f"first {len(prompt)} tokens of held-out file {rel}",
            "prompt_clear_greedy": margin >= mf.MIN_GREEDY_MARGIN,
            "checkpoint_dtype": "float16",
            "eos_at": [i for i, t in enumerate(prompt.tolist()) if t == job["eos_id"]],
        }
        if family == "qwen4_exp":
            rope = model.config.rope_parameters
            extra["rotary_dim"] = int(model.config.head_dim * rope.get("partial_rotary_factor", 1.0))
            extra["hidden_wide_layers"] = mf.write_hidden_states(model, prompt, out_dir)
        mf.write_fixture(out_dir, model, prompt, None, ref, cls, job["split"], extra, strict=False,
                         ckpt_dtype=torch.float16)
        with open(os.path.join(out_dir, "meta.json")) as f:
            result["meta"] = json.load(f)
        result["prompt_file"] = rel
        result["ok"] = True

        if family == "qwen4_exp":
            head_state = load_file(os.path.join(job["stage"], "mtp_head.safetensors"))
            try:
                mf.add_qwen4_mtp(model, prompt, int(ref[1][0]), 0, out_dir, head_state=head_state,
                                 dtype=torch.float16)
                result["mtp_ok"] = True
            except Exception:  # noqa: BLE001 - the head still joins the checkpoint below
                result["errors"].append("add_qwen4_mtp: " + traceback.format_exc())
                log(result["errors"][-1])
                result["mtp_ok"] = False
                n = append_trained_head(mf, model, head_state, out_dir, torch.float16)
                log(f"MTP head appended without references ({n} tensors)")
    except (Exception, SystemExit):  # noqa: BLE001
        result["errors"].append("references: " + traceback.format_exc())
        log(result["errors"][-1])
        save_result()
        return 1

    # greedy samples from fixed prompts (the model card's text)
    try:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(job["tokenizer"])
        samples = []
        for s in job["samples"]:
            prompt = torch.tensor(s["tokens"], dtype=torch.long)
            _, cont, _ = mf.greedy_reference(model, prompt, job["sample_new_tokens"])
            ids = cont.tolist()
            cut = ids.index(job["eos_id"]) if job["eos_id"] in ids else len(ids)
            samples.append({"prompt": s["prompt"], "completion": tok.decode(ids[:cut], skip_special_tokens=False),
                            "completion_tokens": ids, "stopped_at_eos": cut < len(ids)})
            log(f"{family} sample: {s['prompt']!r} -> {samples[-1]['completion']!r}")
        result["samples"] = samples
    except Exception:  # noqa: BLE001
        result["errors"].append("samples: " + traceback.format_exc())
        log(result["errors"][-1])
    save_result()
    return 0


if __name__ == "__main__":
    sys.exit(main())
