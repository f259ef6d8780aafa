"""Training loop, evaluation, the Qwen4 MTP objective and a vectorised QSA indexer.

Nothing here knows about files: train.py feeds token tensors in and takes
models, histories and metrics out.
"""

import inspect
import math
import sys
import time
import traceback

import torch
import torch.nn.functional as F


def log(msg):
    print(msg, flush=True)


# ---- data ------------------------------------------------------------------------------------------

class Stream:
    """One long token stream (documents joined by EOS) on the training device;
    batches are windows at uniformly random offsets drawn from a seeded generator."""

    def __init__(self, tokens, device, seed):
        self.tokens = torch.as_tensor(tokens, dtype=torch.long).to(device)
        self.device = device
        self.gen = torch.Generator(device=device).manual_seed(seed)

    def __len__(self):
        return self.tokens.numel()

    def sample(self, batch, length):
        hi = self.tokens.numel() - length
        if hi <= 0:
            raise RuntimeError(f"stream of {self.tokens.numel()} tokens is shorter than a window of {length}")
        starts = torch.randint(0, hi, (batch,), generator=self.gen, device=self.device)
        return self.tokens[starts[:, None] + torch.arange(length, device=self.device)]


def windows(tokens, length, max_windows=None):
    """Consecutive non-overlapping windows [N, length] from the start of a token list."""
    t = torch.as_tensor(tokens, dtype=torch.long)
    n = t.numel() // length
    if max_windows is not None:
        n = min(n, max_windows)
    return t[:n * length].view(n, length)


# ---- schedule and optimizer ------------------------------------------------------------------------

def lr_at(step, progress, peak, warmup_steps, min_frac):
    """Linear warm-up over warmup_steps, then cosine from peak to min_frac * peak
    over the wall-clock fraction of the training time (the run stops by time)."""
    warm = min(1.0, (step + 1) / max(1, warmup_steps))
    p = min(max(progress, 0.0), 1.0)
    return peak * warm * (min_frac + (1.0 - min_frac) * 0.5 * (1.0 + math.cos(math.pi * p)))


def make_optimizer(named_params, tcfg, device):
    """AdamW; weight decay on matrices (dim >= 2), none on norms, biases, A_log, dt_bias."""
    decay, no_decay, seen = [], [], set()
    for _, p in named_params:
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": tcfg["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}]
    kwargs = dict(lr=tcfg["peak_lr"], betas=tuple(tcfg["betas"]), eps=1e-8)
    if device.type == "cuda":
        try:
            return torch.optim.AdamW(groups, fused=True, **kwargs)
        except (TypeError, RuntimeError) as e:
            log(f"fused AdamW not available ({e}); using the default implementation")
    return torch.optim.AdamW(groups, **kwargs)


# ---- vectorised QSA indexer ------------------------------------------------------------------------
# transformers' Qwen4ExpTextQSAIndexer selects blocks with a Python loop over
# (batch, query) pairs, each with a host sync (torch.nonzero): fine for the CPU
# oracle, hopeless for training batches (B*T = 32k iterations per QSA layer).
# For an uncached causal pass (training and evaluation: no cache, no padding)
# the same selection is computed for all queries at once. It is checked
# against transformers' own loop on the device before use (IndexerPatch.validate)
# and never used for the oracle references, which run in another process.

class IndexerPatch:
    def __init__(self, indexer_cls):
        self.cls = indexer_cls
        self.orig = indexer_cls.forward
        self.rope = sys.modules[indexer_cls.__module__].apply_rotary_pos_emb
        self.sig = inspect.signature(self.orig)
        self.mode = "orig"
        self.counts = {"fast": 0, "fallback": 0, "errors": 0, "compared": 0, "identical": 0, "tie_rows": 0,
                       "bad_rows": 0}
        self.installed = False

    def install(self):
        patch = self

        def forward(module, *args, **kwargs):
            return patch.dispatch(module, args, kwargs)

        self.cls.forward = forward
        self.installed = True

    def uninstall(self):
        if self.installed:
            self.cls.forward = self.orig
            self.installed = False

    def dispatch(self, module, args, kwargs):
        if self.mode == "orig":
            return self.orig(module, *args, **kwargs)
        try:
            bound = self.sig.bind(module, *args, **kwargs).arguments
        except TypeError:
            bound = {}
        hs, pe = bound.get("hidden_states"), bound.get("position_embeddings")
        mask, pkv = bound.get("attention_mask"), bound.get("past_key_values")
        fast = None
        if pkv is None and hs is not None and pe is not None and mask is not None:
            try:
                fast = self.fast(module, hs, pe, mask)
            except Exception:  # noqa: BLE001 - transformers' own loop is always right
                if self.counts["errors"] == 0:
                    log("vectorised QSA indexer failed; using transformers' loop:\n" + traceback.format_exc())
                self.counts["errors"] += 1
                fast = None
        if fast is None:
            self.counts["fallback"] += 1
            return self.orig(module, *args, **kwargs)
        if self.mode == "compare":
            out = self.orig(module, *args, **kwargs)
            self.compare(module, out, fast)
            return out
        self.counts["fast"] += 1
        return fast[0]

    def fast(self, module, hs, pe, mask):
        """(mask to return, selection [B,T,T] bool, block scores [B,T,NB], complete blocks per query [T]),
        or None when the call is not an uncached causal pass."""
        b, t, _ = hs.shape
        full_cos, full_sin = pe
        if mask.dim() != 4 or mask.shape[-1] != t or mask.shape[-2] != t or full_cos.shape[-2] != t:
            return None
        if module.index_kv_heads != 1:
            return None
        dev = hs.device
        vis = mask if mask.dtype == torch.bool else mask == 0
        causal = torch.ones(t, t, dtype=torch.bool, device=dev).tril()
        if not torch.equal(vis[:, 0], causal.expand(vis.shape[0], t, t)):
            return None
        n_i, d_i = module.index_n_heads, module.index_head_dim
        c, block_topk = module.compress_ratio, module.block_topk
        qk = module.index_qk_proj(hs)
        q, kraw = torch.split(qk, [n_i * d_i, d_i], dim=-1)
        q = module.q_layernorm(q.reshape(b, t, n_i, d_i))
        q = self.rope(q, cos=full_cos, sin=full_sin, unsqueeze_dim=2)
        n_blk = t // c
        pos = torch.arange(t, device=dev)
        nb = (pos + 1) // c                                     # complete blocks visible to query i
        tail = (pos[None, :] >= (nb * c)[:, None]) & (pos[None, :] <= pos[:, None])  # [T, T]
        if n_blk == 0:
            sel = tail[None].expand(b, t, t)
            scores = hs.new_zeros(b, t, 0, dtype=torch.float32)
        else:
            pooled = kraw[:, :n_blk * c].reshape(b, n_blk, c, d_i).float().mean(dim=2).to(kraw.dtype)
            pooled = module.k_layernorm(pooled)
            starts = torch.arange(n_blk, device=dev) * c
            bk = self.rope(pooled.unsqueeze(2), cos=full_cos[:, starts], sin=full_sin[:, starts],
                           unsqueeze_dim=2).squeeze(2)          # [B, NB, dI]
            scores = torch.einsum("btnd,bjd->btjn", q.float(), bk.float()).relu().sum(-1) / math.sqrt(d_i)
            valid = torch.arange(n_blk, device=dev)[None, :] < nb[:, None]   # [T, NB]
            k = min(block_topk, n_blk)
            idx = scores.masked_fill(~valid[None], float("-inf")).topk(k, dim=-1).indices   # [B, T, k]
            idx = torch.where(idx < nb[None, :, None], idx, n_blk)
            blk = torch.zeros(b, t, n_blk + 1, dtype=torch.bool, device=dev).scatter(-1, idx, True)[..., :n_blk]
            tok = blk.repeat_interleave(c, dim=-1)
            if n_blk * c < t:
                tok = torch.cat([tok, torch.zeros(b, t, t - n_blk * c, dtype=torch.bool, device=dev)], dim=-1)
            sel = tok | tail[None]
        out = sel.unsqueeze(1)
        if mask.is_floating_point():
            out = torch.where(out, mask.new_zeros(()), torch.finfo(mask.dtype).min)
        return out, sel, scores, nb

    def compare(self, module, orig_out, fast):
        """Counts rows where the fast selection differs from transformers'; a
        difference is a tie when the selected blocks' scores sum to the same
        value (equal-score blocks swapped) and the tails agree."""
        _, sel_f, scores, nb = fast
        sel_o = (orig_out if orig_out.dtype == torch.bool else orig_out == 0)[:, 0]
        self.counts["compared"] += 1
        if torch.equal(sel_o, sel_f):
            self.counts["identical"] += 1
            return
        c, t = module.compress_ratio, sel_f.shape[-1]
        n_blk = scores.shape[-1]
        pos = torch.arange(t, device=sel_f.device)
        tail_zone = pos[None, :] >= (nb * c)[:, None]
        rows_diff = (sel_o != sel_f).any(-1)                     # [B, T]
        tails_ok = ((sel_o & tail_zone) == (sel_f & tail_zone)).all(-1)
        if n_blk:
            first = torch.arange(n_blk, device=sel_f.device) * c
            valid = torch.arange(n_blk, device=sel_f.device)[None, :] < nb[:, None]
            blk_o, blk_f = sel_o[..., first] & valid, sel_f[..., first] & valid
            # a complete block is selected whole or not at all
            whole = (sel_o[..., :n_blk * c].unflatten(-1, (n_blk, c)) == sel_o[..., first].unsqueeze(-1)).all(-1)
            uniform = (whole | ~valid[None]).all(-1)
            s_o, s_f = (scores * blk_o).sum(-1), (scores * blk_f).sum(-1)
            same = (blk_o.sum(-1) == blk_f.sum(-1)) & ((s_o - s_f).abs() <= 1e-4 * (1 + s_f.abs())) & uniform
        else:
            same = torch.ones_like(tails_ok)
        ok = tails_ok & same
        self.counts["tie_rows"] += int((rows_diff & ok).sum())
        self.counts["bad_rows"] += int((rows_diff & ~ok).sum())

    @torch.no_grad()
    def validate(self, model, tokens):
        """Runs one uncached fp32 pass in 'compare' mode, then the same pass with
        the fast path; switches to 'fast' only when every differing row is a tie."""
        was_training = model.training
        model.eval()
        self.mode = "compare"
        try:
            ref = model(input_ids=tokens, use_cache=False).logits.float()
            self.mode = "fast"
            got = model(input_ids=tokens, use_cache=False).logits.float()
            diff = float((ref - got).abs().max())
        finally:
            model.train(was_training)
        ok = self.counts["compared"] > 0 and self.counts["bad_rows"] == 0 and self.counts["errors"] == 0
        self.mode = "fast" if ok else "orig"
        result = dict(self.counts, logits_max_abs_diff=diff, used=ok)
        log(f"QSA indexer: vectorised selection vs transformers' loop on {tuple(tokens.shape)}: {result}")
        return result


# ---- Qwen4 MTP objective ---------------------------------------------------------------------------

def init_mtp_head(head, std, seed):
    """Initialises a Qwen4MtpHead (a plain nn.Module: no HF init ran, its expert
    tensors are torch.empty) the way transformers initialises the target:
    linears, experts and router N(0, std); (1+w) RMS norms zero; gated norms one."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(head.named_parameters(), key=lambda kv: kv[0]):
            leaf = name.rsplit(".", 1)[-1]
            owner = head.get_submodule(name.rsplit(".", 1)[0]) if "." in name else head
            cls = type(owner).__name__
            if cls.endswith("RMSNormGated"):
                p.fill_(1.0)
            elif cls.endswith("RMSNorm"):
                p.zero_()
            elif leaf == "dt_bias":
                p.fill_(1.0)
            elif leaf == "bias":
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * std)


def mtp_forward(head, text, lm_head, hidden, next_tokens, pe, mask, run_layer):
    """Batched Qwen4MtpHead.forward (make_fixtures): hidden [B, T, W] = the
    target's wide residual entering its final mixer, next_tokens [B, T] =
    x_{t+1}; pe and mask are those the target passed its QSA layer for the same
    positions 0..T-1. Returns (logits [B, T, V], R' [B, T, W])."""
    h = head.fc_hidden.in_features
    e = head.fc_embedding(head.pre_fc_norm_embedding(text.embed_tokens(next_tokens)))
    hn = head.pre_fc_norm_hidden(hidden).unflatten(-1, (head.hc_count, h))
    r = (head.fc_hidden(hn) + e.unsqueeze(-2)).flatten(-2)
    r = run_layer(head.layers[0], r, pe, mask)
    return lm_head(head.hyper_connection_mixer(r)), r


class Qwen4Runner:
    """Forward of target + MTP head on a batch of windows [B, T + 2]: hooks
    capture the wide residual entering the target's final mixer (what halo
    feeds the head), the position embeddings and mask the target gives its
    first QSA layer, and the head's router logits."""

    def __init__(self, model, head, mf, modeling):
        self.model, self.head, self.mf = model, head, mf
        self.text = model.model
        self.qsa_idx = list(self.text.config.layer_types).index("qwen_sparse_attention")
        self.lb_loss = getattr(modeling, "load_balancing_loss_func", None)
        self.cap = {}
        self.want_aux = True
        cap = self.cap

        def before_mixer(_m, args):
            cap["R"] = args[0]

        def before_qsa(_m, args, kwargs):
            cap["kw"] = kwargs

        def head_router(_m, _args, out):
            cap["head_router"] = out[0] if isinstance(out, tuple) else out

        self.hooks = [self.text.hyper_connection_mixer.register_forward_pre_hook(before_mixer),
                      self.text.layers[self.qsa_idx].register_forward_pre_hook(before_qsa, with_kwargs=True)]
        try:
            self.hooks.append(head.layers[0].mlp.gate.register_forward_hook(head_router))
        except AttributeError:
            log("MTP head: no router to hook; no load-balancing loss for the head")

    def remove(self):
        for h in self.hooks:
            h.remove()
        self.hooks = []

    def forward(self, win):
        """win [B, T + 2] -> (main logits [B,T,V], mtp logits [B,T,V], aux loss or None)."""
        t = win.shape[1] - 2
        x, nxt = win[:, :t], win[:, 1:t + 1]
        self.cap.clear()
        kwargs = {"output_router_logits": True} if self.want_aux else {}
        out = self.model(input_ids=x, use_cache=False, **kwargs)
        if "R" not in self.cap or "kw" not in self.cap:
            raise RuntimeError(f"hooks did not fire (caught {sorted(self.cap)})")
        kw = self.cap["kw"]
        mtp_logits, _ = mtp_forward(self.head, self.text, self.model.lm_head, self.cap["R"], nxt,
                                    kw["position_embeddings"], kw["attention_mask"], self.mf.qwen4_run_layer)
        aux = None
        if self.want_aux:
            aux = getattr(out, "aux_loss", None)
            if aux is not None and self.lb_loss is not None and "head_router" in self.cap:
                cfg = self.text.config
                aux = aux + self.lb_loss((self.cap["head_router"],), cfg.num_experts, cfg.num_experts_per_tok, None)
        return out.logits, mtp_logits, aux


@torch.no_grad()
def check_mtp_forward(model, head, mf, modeling, tokens):
    """On CPU in fp32: the batched head forward used for training equals
    make_fixtures' Qwen4MtpHead.forward (what the references use) row by row."""
    runner = Qwen4Runner(model, head, mf, modeling)
    runner.want_aux = False
    try:
        _, got, _ = runner.forward(tokens)
        t = tokens.shape[1] - 2
        r = runner.cap["R"]
        worst = 0.0
        for i in range(tokens.shape[0]):
            want, _ = head(model.model, model.lm_head, r[i], tokens[i, 1:t + 1])
            worst = max(worst, float((want - got[i].float()).abs().max()))
    finally:
        runner.remove()
    if worst > 1e-4:
        raise RuntimeError(f"batched MTP forward differs from Qwen4MtpHead.forward by {worst}")
    log(f"MTP head: batched training forward matches Qwen4MtpHead.forward (max abs diff {worst:.3g})")
    return worst


# ---- training --------------------------------------------------------------------------------------

def ce(logits, targets):
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def step_losses(kind, model, runner, win, mtp_lambda, aux_coef):
    """(total loss, main CE, MTP CE or None) of one batch of windows."""
    if kind == "qwen4_exp":
        t = win.shape[1] - 2
        logits, mtp_logits, aux = runner.forward(win)
        main = ce(logits, win[:, 1:t + 1])
        mtp = ce(mtp_logits, win[:, 2:t + 2])
        total = main + mtp_lambda * mtp
        if aux is not None:
            total = total + aux_coef * aux
        return total, main, mtp
    t = win.shape[1] - 1
    logits = model(input_ids=win[:, :t], use_cache=False).logits
    main = ce(logits, win[:, 1:])
    return main, main, None


def autocast_ctx(device, enabled):
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


@torch.no_grad()
def quick_eval(kind, model, runner, wins, batch, device, amp):
    """Held-out CE (and MTP CE) on a few fixed windows, for the loss curve."""
    model.eval()
    tot, tot_mtp, n = 0.0, 0.0, 0
    try:
        for i in range(0, wins.shape[0], batch):
            w = wins[i:i + batch].to(device)
            if kind != "qwen4_exp":
                w = w[:, :-1]  # windows are T + 2 long; the dense model needs T + 1
            with autocast_ctx(device, amp):
                _, main, mtp = step_losses(kind, model, runner, w, 0.0, 0.0)
            tot += float(main) * w.shape[0]
            tot_mtp += float(mtp) * w.shape[0] if mtp is not None else 0.0
            n += w.shape[0]
    finally:
        model.train()
    return tot / n, (tot_mtp / n if kind == "qwen4_exp" else None)


def snapshot(model, runner):
    """A CPU copy of the weights (target and MTP head)."""
    out = {"model": {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}}
    if runner is not None:
        out["head"] = {k: v.detach().to("cpu", copy=True) for k, v in runner.head.state_dict().items()}
    return out


def train(kind, model, runner, params, stream, curve_wins, tcfg, device, seq_len, deadline, smoke_steps=None,
          mtp_lambda=0.3, aux_coef=0.001, eval_every_s=10.0, max_tokens=None):
    """Trains until the deadline (wall clock), smoke_steps steps, or max_tokens
    (when the measured speed says max_tokens comes first, the schedule's
    horizon is moved to that time). curve_wins (validation windows) are
    evaluated every eval_every_s seconds for the loss curve; the weights of
    the best validation point are kept and restored at the end when the last
    point is worse. Returns the history dict."""
    amp = True
    extra = 2 if kind == "qwen4_exp" else 1
    batch = tcfg["batch"]
    opt = make_optimizer(params, tcfg, device)
    trainable = [p for _, p in params if p.requires_grad]
    hist = {"step": [], "tokens": [], "loss": [], "mtp_loss": [], "lr": [],
            "eval": [], "skipped_steps": 0, "batch": batch, "seq_len": seq_len, "params_without_gradient": None}
    best = None  # (objective, step, tokens, weights)

    def objective(e_main, e_mtp):
        return e_main + (mtp_lambda * e_mtp if e_mtp is not None else 0.0)

    def curve_point(step, tokens):
        nonlocal best
        e_main, e_mtp = quick_eval(kind, model, runner, curve_wins, batch, device, amp)
        hist["eval"].append({"step": step, "tokens": tokens, "loss": e_main, "mtp_loss": e_mtp,
                             "time_s": round(time.time() - t_start, 2)})
        obj = objective(e_main, e_mtp)
        if step > 0 and (best is None or obj < best[0]):
            best = (obj, step, tokens, snapshot(model, runner))
        return obj

    t_start = time.time()
    span = max(1e-3, deadline - t_start)
    step, tokens, train_time = 0, 0, 0.0
    speed_from = None  # (time, step, tokens) once warm
    horizon_checked = False
    next_eval = t_start
    last_log = t_start
    ema = None
    bad_run = 0
    model.train()
    while True:
        now = time.time()
        if smoke_steps is not None:
            if step >= smoke_steps:
                break
        elif now >= deadline or (max_tokens is not None and tokens >= max_tokens):
            break
        if now >= next_eval and curve_wins is not None:
            curve_point(step, tokens)
            next_eval = time.time() + eval_every_s
        if (not horizon_checked and max_tokens is not None and smoke_steps is None and speed_from is not None
                and step >= speed_from[1] + 20):
            horizon_checked = True
            rate = (tokens - speed_from[2]) / max(1e-6, time.time() - speed_from[0])
            finish = time.time() + (max_tokens - tokens) / max(rate, 1e-6)
            if finish < deadline:
                log(f"[{kind}] at {rate / 1e3:.0f}k tokens/s the epoch cap comes {deadline - finish:.0f} s before "
                    f"the time budget: schedule horizon moved to {finish - t_start:.0f} s")
                deadline = finish
                span = max(1e-3, deadline - t_start)
                hist["epoch_cap_horizon"] = True
        lr = lr_at(step, (time.time() - t_start) / span, tcfg["peak_lr"], tcfg["warmup_steps"], tcfg["min_lr_frac"])
        for g in opt.param_groups:
            g["lr"] = lr
        t0 = time.time()
        try:
            win = stream.sample(batch, seq_len + extra)
            with autocast_ctx(device, amp):
                total, main, mtp = step_losses(kind, model, runner, win, mtp_lambda, aux_coef)
            if not torch.isfinite(total):
                raise FloatingPointError("non-finite loss")
            total.backward()
            if hist["params_without_gradient"] is None:
                hist["params_without_gradient"] = [n for n, p in params if p.requires_grad and p.grad is None]
            gnorm = torch.nn.utils.clip_grad_norm_(trainable, tcfg["grad_clip"])
            if not torch.isfinite(gnorm):
                raise FloatingPointError("non-finite gradient norm")
            opt.step()
        except FloatingPointError as e:
            opt.zero_grad(set_to_none=True)
            hist["skipped_steps"] += 1
            bad_run += 1
            log(f"step {step}: {e}; step skipped ({bad_run} in a row)")
            if bad_run >= 20:
                log("20 non-finite steps in a row: training stopped")
                hist["diverged"] = True
                break
            continue
        except torch.cuda.OutOfMemoryError:
            opt.zero_grad(set_to_none=True)
            if step > 0 or batch <= 4:
                raise
            batch //= 2
            hist["batch"] = batch
            torch.cuda.empty_cache()
            log(f"out of memory on the first step: batch halved to {batch}")
            continue
        opt.zero_grad(set_to_none=True)
        bad_run = 0
        loss_v = float(main.detach())
        mtp_v = float(mtp.detach()) if mtp is not None else None
        step += 1
        tokens += batch * seq_len
        train_time += time.time() - t0
        if speed_from is None and step >= 10:
            speed_from = (time.time(), step, tokens)
        ema = loss_v if ema is None else 0.98 * ema + 0.02 * loss_v
        hist["step"].append(step)
        hist["tokens"].append(tokens)
        hist["loss"].append(loss_v)
        hist["mtp_loss"].append(mtp_v)
        hist["lr"].append(lr)
        if time.time() - last_log >= 10.0 or smoke_steps is not None or step <= 3:
            last_log = time.time()
            el = last_log - t_start
            log(f"[{kind}] step {step} tokens {tokens / 1e6:.2f}M loss {loss_v:.4f} (ema {ema:.4f})"
                + (f" mtp {mtp_v:.4f}" if mtp_v is not None else "")
                + f" lr {lr:.2e} {tokens / max(el, 1e-9) / 1e3:.0f}k tok/s elapsed {el:.0f}s")
    wall = time.time() - t_start
    if curve_wins is not None:
        last = curve_point(step, tokens)
        if best is not None and best[1] != step and last > best[0] + 1e-4:
            model.load_state_dict(best[3]["model"])
            if runner is not None:
                runner.head.load_state_dict(best[3]["head"])
            hist["restored_best"] = {"step": best[1], "tokens": best[2], "validation_objective": best[0],
                                     "last_validation_objective": last}
            log(f"[{kind}] validation was best at step {best[1]} ({best[0]:.4f} vs {last:.4f} at the end): "
                "those weights restored")
    hist.update(steps=step, tokens_seen=tokens, wall_s=round(wall, 2), train_step_s=round(train_time, 2))
    if speed_from is not None and step > speed_from[1]:
        dt = time.time() - speed_from[0]
        hist["steps_per_s"] = round((step - speed_from[1]) / dt, 3)
        hist["tokens_per_s"] = round((tokens - speed_from[2]) / dt, 1)
    elif wall > 0:
        hist["steps_per_s"] = round(step / wall, 3)
        hist["tokens_per_s"] = round(tokens / wall, 1)
    hist["final_train_loss_ema"] = ema
    return hist


# ---- final evaluation ------------------------------------------------------------------------------

@torch.no_grad()
def evaluate(kind, model, runner, wins, batch, device, unigram_logp, deadline):
    """Held-out metrics in fp32 (no autocast) over windows [N, T + 2] (in order,
    until the deadline): main CE / perplexity / top-1 over targets 1..T, the
    unigram baseline on the same targets, and for qwen4_exp the MTP head's CE and
    top-1 at t+2 (given the true t+1) and its agreement with the target's own
    greedy prediction of t+2 (the target's argmax at t+1)."""
    model.eval()
    if runner is not None:
        runner.want_aux = False
    t = wins.shape[1] - 2
    s = {"ce": 0.0, "n": 0, "top1": 0, "uni": 0.0, "mtp_ce": 0.0, "mtp_top1": 0, "agree": 0, "agree_n": 0,
         "windows": 0}
    logp = unigram_logp.to(device)
    for i in range(0, wins.shape[0], batch):
        if time.time() >= deadline and s["windows"] > 0:
            log(f"evaluation stopped by its deadline after {s['windows']} windows")
            break
        w = wins[i:i + batch].to(device)
        y = w[:, 1:t + 1]
        if kind == "qwen4_exp":
            logits, mtp_logits, _ = runner.forward(w)
        else:
            logits = model(input_ids=w[:, :t], use_cache=False).logits
        logits = logits.float()
        s["ce"] += float(F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum"))
        pred = logits.argmax(-1)
        s["top1"] += int((pred == y).sum())
        s["uni"] += float(-logp[y].sum())
        s["n"] += y.numel()
        s["windows"] += w.shape[0]
        if kind == "qwen4_exp":
            y2 = w[:, 2:t + 2]
            mtp_logits = mtp_logits.float()
            s["mtp_ce"] += float(F.cross_entropy(mtp_logits.flatten(0, 1), y2.flatten(), reduction="sum"))
            mpred = mtp_logits.argmax(-1)
            s["mtp_top1"] += int((mpred == y2).sum())
            # the target's greedy t+2 is its argmax at row t+1
            s["agree"] += int((mpred[:, :-1] == pred[:, 1:]).sum())
            s["agree_n"] += mpred[:, :-1].numel()
    model.train()
    if runner is not None:
        runner.want_aux = True
    n = max(1, s["n"])
    out = {
        "eval_windows": s["windows"], "eval_window_tokens": t, "eval_tokens": s["n"],
        "heldout_loss": s["ce"] / n, "heldout_ppl": math.exp(s["ce"] / n), "heldout_top1": s["top1"] / n,
        "unigram_loss": s["uni"] / n, "unigram_ppl": math.exp(s["uni"] / n),
    }
    if kind == "qwen4_exp":
        out.update(mtp_heldout_loss=s["mtp_ce"] / n, mtp_heldout_ppl=math.exp(s["mtp_ce"] / n),
                   mtp_top1_true_next=s["mtp_top1"] / n,
                   mtp_agree_with_target_greedy=s["agree"] / max(1, s["agree_n"]))
    return out


def round_to_f16(modules):
    """Rounds every floating parameter through float16, in place; returns how
    many values overflowed (none expected)."""
    bad = 0
    with torch.no_grad():
        for m in modules:
            for p in m.parameters():
                r = p.detach().half()
                bad += int((~torch.isfinite(r)).sum())
                p.copy_(r.float())
    return bad


def describe_exception():
    return traceback.format_exc()
