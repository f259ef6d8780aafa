"""metrics.json, the model cards (README.md) and the loss-curve PNG."""

import json
import math
import os


def log(msg):
    print(msg, flush=True)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")


def _fmt(v, nd=4):
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.{nd}f}" if abs(v) < 1e4 else f"{v:.4g}"
    return str(v)


def _mb(n):
    return f"{n / 1e6:.1f} MB"


def smooth(values):
    """Trailing mean over about 2% of the points (None where no value yet)."""
    k = max(1, len(values) // 50)
    out, window = [], []
    for v in values:
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            window.append(v)
            window = window[-k:]
        out.append(sum(window) / len(window) if window else None)
    return out


def plot_curves(histories, unigram_loss, path):
    """histories: {name: history}; one panel per model: train loss (EMA), held-out
    loss points, the MTP losses for qwen4_exp, the unigram baseline."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        log(f"matplotlib not available ({e}): no loss-curve PNG")
        return False
    names = [n for n in histories if histories[n] and histories[n].get("step")]
    if not names:
        log("no training history to plot")
        return False
    fig, axes = plt.subplots(1, len(names), figsize=(6.5 * len(names), 4.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        h = histories[name]
        x = [t / 1e6 for t in h["tokens"]]
        ax.plot(x, h["loss"], color="tab:blue", alpha=0.15, linewidth=0.6)
        ax.plot(x, smooth(h["loss"]), color="tab:blue", label="train (trailing mean)")
        ev = h.get("eval") or []
        ax.plot([e["tokens"] / 1e6 for e in ev], [e["loss"] for e in ev], "o-", color="tab:orange", markersize=3,
                label="validation (held-out files)")
        if any(v is not None for v in h.get("mtp_loss") or []):
            ax.plot(x, smooth(h["mtp_loss"]), color="tab:green", label="MTP t+2, train (trailing mean)")
            ax.plot([e["tokens"] / 1e6 for e in ev], [e["mtp_loss"] for e in ev], "s--", color="tab:red",
                    markersize=3, label="MTP t+2, validation")
        final = h.get("test_loss")
        if final is not None:
            ax.plot([x[-1] if x else 0.0], [final], "*", color="black", markersize=10,
                    label=f"test split, final f16 weights ({final:.3f})")
        if unigram_loss is not None:
            ax.axhline(unigram_loss, color="gray", linestyle=":", label=f"unigram baseline, test ({unigram_loss:.2f})")
        ax.set_title(f"{name}: {h.get('steps', 0)} steps, {h.get('wall_s', 0):.0f} s")
        ax.set_xlabel("training tokens (millions)")
        ax.set_ylabel("cross-entropy (nats/token)")
        lo = min([v for v in h["loss"] if v is not None] + [e["loss"] for e in ev] or [0.0])
        ax.set_ylim(max(0.0, lo - 0.3), (unigram_loss or 8.5) + 1.0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    log(f"loss curves: {path}")
    return True


def model_card(name, m):
    """README.md of one model folder, from its metrics dict m."""
    c, t, e, cfg = m["corpus"], m["training"], m.get("eval") or {}, m["config"]
    tok = m["tokenizer"]
    fam = m["family"]
    lines = []
    add = lines.append
    add(f"# {name}: a small {m['model_class']} trained on the Python standard library")
    add("")
    add(f"Trained from scratch for halo (issue 16) by `tools/train/train.py` on one {m.get('device', 'GPU')}, "
        f"{t.get('wall_s', 0):.0f} s of training. It is small and briefly trained: it writes text that looks like "
        "the standard library's code, not code that works. It exists so that halo runs real weights (text, MTP "
        "acceptance, quantization quality), and its oracle references let halo's tests check it against HF "
        "transformers.")
    add("")
    add("## Files")
    add("")
    add("| file | what |")
    add("|---|---|")
    add(f"| `config.json`, `model.safetensors` | the HF checkpoint (`save_pretrained`), float16, "
        f"{m.get('checkpoint_bytes', 0) / 1e6:.1f} MB"
        + ("; the MTP head's tensors appended under `mtp.` and `mtp_num_hidden_layers: 1` in config.json, as "
           "`tools/oracle/make_fixtures.py` writes them" if fam == "qwen4_exp" else "") + " |")
    add("| `tokenizer.json`, `tokenizer_config.json`, `generation_config.json` | the tokenizer (below), ChatML chat "
        "template, EOS |")
    add("| `prompt_tokens.i32`, `prompt_logits.f32`, `continuation_tokens.i32`, `continuation_logits.f32`, "
        "`meta.json` | oracle references in `write_fixture`'s format (tests/fixtures/qwen3_tiny/README.md): HF "
        "transformers fp32 on the CPU, one thread, from the stored f16 weights |")
    if fam == "qwen4_exp":
        add("| `prompt_hidden_wide.f32`, `mtp_hidden.f32`, `mtp_draft_logits.f32`, `mtp_chain_tokens.i32`, "
            "`mtp_chain_logits.f32` | per-layer wide residuals and the MTP head's references (tools/oracle/README.md) |")
    add("| `metrics.json` | every number on this card |")
    add("")
    add("## Corpus")
    add("")
    add(f"The `*.py` sources of the Python {c['python_version']} standard library found on the training machine "
        f"(`{c['stdlib_root']}`), sorted by relative path, without `site-packages/`, `dist-packages/` and "
        f"`__pycache__/`; UTF-8 files ({c['skipped_not_utf8']} others skipped) of at most 512 KiB "
        f"({c['skipped_over_max_bytes']} larger skipped"
        + (": " + ", ".join(f"`{x}`" for x in c.get("skipped_over_max_bytes_files") or [])
           if c.get("skipped_over_max_bytes") else "")
        + f"), without the {c.get('skipped_generated', 0)} charmap codec tables that `gencodec.py` "
        "generated in `encodings/` (near-identical tables that would dominate whichever held-out split they "
        "fell into). CPython's test suite (`test/`) is kept as "
        f"installed: {c.get('test_package_files', 0)} files, {_mb(c.get('test_package_bytes', 0))} there "
        "(Debian and Ubuntu ship only a few of its files; a full CPython install has some 17 MB more). "
        f"Splits by file: {c['split_rule']}.")
    add("")
    d = m["data"]
    add(f"- train: {c['files_train']} files, {_mb(c['bytes_train'])}, {d['train_tokens']:,} tokens")
    add(f"- validation (loss curve, choice of the kept weights): {c.get('files_valid', 0)} files, "
        f"{_mb(c.get('bytes_valid', 0))}, {d.get('valid_tokens', 0):,} tokens")
    add(f"- test (every held-out number below): {c['files_test']} files, {_mb(c['bytes_test'])}, "
        f"{d['test_tokens']:,} tokens")
    add(f"- selection digest (sha256 over paths and contents): `{c['selection_sha256'][:16]}…`")
    add("")
    add("Documents are joined with `<|endoftext|>` after each file; training windows start at uniformly random "
        "offsets of that stream.")
    add("")
    add("**License.** The corpus is the Python standard library, Copyright (c) Python Software Foundation, "
        "distributed under the PSF License Version 2 (PSF-2.0), which permits use, modification and "
        "redistribution with its copyright notice. These weights are a work derived from it; keep that notice "
        "with them.")
    add("")
    add("## Tokenizer")
    add("")
    add(f"Byte-level BPE trained with HF `tokenizers` {tok.get('tokenizers_version', '')} on the train split only: "
        f"vocabulary {tok['vocab_size']} (special tokens included), NFC normalizer, Qwen2's split regex then "
        "ByteLevel without its own regex, ByteLevel post-processor and decoder: the component layout of Qwen3's "
        f"`tokenizer.json`. Special tokens: `<|endoftext|>` = {tok['ids']['<|endoftext|>']}, "
        f"`<|im_start|>` = {tok['ids']['<|im_start|>']}, `<|im_end|>` = {tok['ids']['<|im_end|>']}. "
        "This is a base model: its EOS is `<|endoftext|>` (the document separator it was trained with; "
        "`config.json` `eos_token_id`"
        + (", also the PLE n-gram reset token" if fam == "qwen4_exp" else "")
        + "); `generation_config.json` also stops at `<|im_end|>`. No BOS. `tokenizer_config.json` carries a "
        f"ChatML chat template (Qwen3's shape without tools and thinking). Held-out: {tok.get('bytes_per_token', 0):.2f} "
        "bytes per token.")
    add("")
    add("## Architecture")
    add("")
    add(f"`{m['model_class']}`, {m['params_main']:,} parameters"
        + (f" + {m['params_mtp']:,} in the MTP head" if m.get("params_mtp") else "") + ".")
    add("")
    add("| key | value |")
    add("|---|---|")
    for k in sorted(cfg):
        if k in ("architectures", "transformers_version", "dtype", "_name_or_path"):
            continue
        add(f"| `{k}` | `{json.dumps(cfg[k])}` |")
    add("")
    if m.get("why"):
        add(m["why"])
        add("")
    add("## Training")
    add("")
    add(f"- {t['steps']:,} steps of {t['batch']} windows x {t['seq_len']} tokens = {t['tokens_seen']:,} tokens "
        f"({t['epochs']:.2f} epochs of the train split) in {t['wall_s']:.0f} s wall clock "
        f"({t.get('steps_per_s', 0):.2f} steps/s, {t.get('tokens_per_s', 0) / 1e3:.0f}k tokens/s once warm); "
        f"stopped by {t.get('stopped_by', 'the wall clock')}.")
    add(f"- AdamW (betas {t['betas']}, weight decay {t['weight_decay']} on matrices), peak LR {t['peak_lr']}, "
        f"linear warm-up over {t['warmup_steps']} steps then cosine to {t['min_lr_frac']} x peak over the "
        f"training horizon (the time budget, or the {t['max_epochs']:g}-epoch cap when the measured speed reaches "
        f"it first); gradient clipping {t['grad_clip']}; bf16 autocast, fp32 master weights; no torch.compile.")
    add(f"- The validation split was evaluated every ~{t.get('eval_every_s', 5):g} s (the loss curve); the weights of its best point are "
        f"kept: " + (f"restored from step {t['restored_best']['step']} (validation objective "
                     f"{t['restored_best']['validation_objective']:.4f} against {t['restored_best']['last_validation_objective']:.4f} "
                     "at the end)." if t.get("restored_best") else "the last step was the best or within 1e-4 of it."))
    if fam == "qwen4_exp":
        add(f"- Loss = CE(next token) + {t['mtp_lambda']} x CE(MTP head, token t+2) + "
            f"{t['aux_coef']} x MoE load-balancing loss (target and head routers). λ = 0.3 is DeepSeek-V3's MTP "
            "weight for its first 10T tokens. The head is `Qwen4MtpHead` of tools/oracle/make_fixtures.py "
            "(docs/models.md section 2.9): for position t it reads the target's wide residual entering its final "
            "hyper-connection mixer (captured by a hook, as make_fixtures does and as halo feeds the head) and "
            "the embedding of token t+1; gradients flow into the target (joint training).")
        q = m.get("qsa_indexer") or {}
        add(f"- QSA selection during training and GPU evaluation: a vectorised form of transformers' per-query "
            f"loop, checked against it on the device before use ({q.get('identical', 0)} of "
            f"{q.get('compared', 0)} layer calls identical, {q.get('tie_rows', 0)} rows differing only by "
            f"equal-score ties, {q.get('bad_rows', 0)} real differences; used: {q.get('used')}). The references "
            "use transformers' own loop.")
    add(f"- Weights rounded to float16 after training; every number below and every reference comes from the "
        "stored float16 values (computed in fp32).")
    add("")
    add("## Results")
    add("")
    add(f"Test split: {e.get('eval_windows', 0)} consecutive windows of {e.get('eval_window_tokens', 0)} predicted "
        f"tokens from the start of the test stream ({e.get('eval_tokens', 0):,} tokens), fp32 (no autocast) on "
        f"the {m.get('device', 'GPU')}, from the stored f16 weights.")
    add("")
    add("| metric | value |")
    add("|---|---|")
    add(f"| test loss (nats/token) | {_fmt(e.get('heldout_loss'))} |")
    add(f"| test perplexity | {_fmt(e.get('heldout_ppl'), 2)} |")
    add(f"| unigram baseline perplexity (train-split frequencies, add-one) | {_fmt(e.get('unigram_ppl'), 2)} |")
    add(f"| test next-token top-1 accuracy | {_fmt(e.get('heldout_top1'))} |")
    add(f"| final train loss (EMA) | {_fmt(t.get('final_train_loss_ema'))} |")
    if fam == "qwen4_exp":
        add(f"| MTP test loss (token t+2) | {_fmt(e.get('mtp_heldout_loss'))} |")
        add(f"| MTP top-1 at t+2 given the true t+1 | {_fmt(e.get('mtp_top1_true_next'))} |")
        add(f"| MTP top-1 agreeing with the target's greedy t+2 | {_fmt(e.get('mtp_agree_with_target_greedy'))} |")
    add("")
    if fam == "qwen4_exp":
        add("The last row is what greedy speculative decoding accepts at draft position 1 when the target's own "
            "greedy token at t+1 is the true one (the head is run on the true t+1 here); halo's measured "
            "acceptance belongs in bench/.")
        add("")
    samples = m.get("samples") or []
    if samples:
        add("## Greedy samples")
        add("")
        add("HF transformers, fp32 CPU, greedy, from fixed prompts (cut at `<|endoftext|>`):")
        add("")
        for s in samples:
            add("```python")
            add(s["prompt"] + s["completion"])
            add("```")
            add("")
    add("## Reproducing")
    add("")
    add(f"    {m['command']}")
    add("")
    add("(on the lent GPU machine: `bash tools/gpu/train.sh`, see tools/train/README.md). The data selection, the "
        "split and the tokenizer are deterministic for a given Python install and `tokenizers` version; GPU "
        "training is not bitwise reproducible (non-deterministic CUDA kernels, and the run stops by wall clock), "
        "so another run gives a similar, not identical, model.")
    add("")
    lim = m.get("limitations") or []
    if lim:
        add("## Limitations")
        add("")
        for x in lim:
            add(f"- {x}")
        add("")
    return "\n".join(lines)
