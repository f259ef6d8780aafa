#!/usr/bin/env python3
"""DeepSeek V4 facts the oracle fixtures are checked against, without torch.

make_fixtures.py (families deepseek_v4_tiny and deepseek_v4_b) imports this
module for its configs, its parameter counts, the rotary tables it expects
transformers to build, and the upstream checkpoint names (docs/models.md
sections 3, 6.2 and 7.2; transformers' conversion_mapping.py; vLLM's
deepseek_v4_mtp.py). Everything here is plain Python, so it can be checked
on a machine without torch:

  python3 tools/oracle/dsv4_spec.py      # the self-check
"""

import math

CSA = "compressed_sparse_attention"
HCA = "heavily_compressed_attention"
SLIDING = "sliding_attention"

# docs/models.md section 6.2, as DeepseekV4Config keyword arguments.
# num_nextn_predict_layers is not here: make_fixtures.py builds the target
# with 0 and writes 1 into config.json once the MTP head's tensors are in the
# checkpoint (a fixture whose head failed says 0 and has no mtp.* tensors).
TINY = dict(
    vocab_size=256, hidden_size=64, num_hidden_layers=4,
    layer_types=[SLIDING, CSA, HCA, CSA],
    mlp_layer_types=["hash_moe", "moe", "moe", "moe"],
    compress_rates={CSA: 4, HCA: 16},
    num_attention_heads=4, num_key_value_heads=1, head_dim=32, partial_rotary_factor=0.25,
    q_lora_rank=32, o_groups=2, o_lora_rank=16, sliding_window=8,
    index_n_heads=2, index_head_dim=16, index_topk=2,
    n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
    scoring_func="sqrtsoftplus", norm_topk_prob=True, routed_scaling_factor=1.5, swiglu_limit=1.0,
    hc_mult=4, hc_sinkhorn_iters=20, hc_eps=1e-6,
    rope_theta=10000.0, compress_rope_theta=160000.0,
    rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                     "beta_fast": 32, "beta_slow": 1},
    max_position_embeddings=256, rms_norm_eps=1e-6,
    tie_word_embeddings=False, bos_token_id=0, eos_token_id=1,
)

# A second configuration unlike the tiny one in every dimension that has a
# choice: 3 streams, 5 layers starting with HCA, two hash layers, CSA every 2
# tokens and HCA every 8, a 5-token window, 6 heads in 3 output groups,
# index heads of 8 (the whole index head rotated: r = dI = 8), top-3 of 6
# experts, a YaRN factor of 2 whose ramp has a fractional pair (lo 0, hi 2).
B = dict(
    vocab_size=256, hidden_size=48, num_hidden_layers=5,
    layer_types=[HCA, CSA, SLIDING, HCA, CSA],
    mlp_layer_types=["hash_moe", "hash_moe", "moe", "moe", "moe"],
    compress_rates={CSA: 2, HCA: 8},
    num_attention_heads=6, num_key_value_heads=1, head_dim=16, partial_rotary_factor=0.5,
    q_lora_rank=24, o_groups=3, o_lora_rank=8, sliding_window=5,
    index_n_heads=3, index_head_dim=8, index_topk=3,
    n_routed_experts=6, num_experts_per_tok=3, n_shared_experts=1, moe_intermediate_size=24,
    scoring_func="sqrtsoftplus", norm_topk_prob=True, routed_scaling_factor=1.5, swiglu_limit=0.8,
    hc_mult=3, hc_sinkhorn_iters=20, hc_eps=1e-6,
    rope_theta=10000.0, compress_rope_theta=160000.0,
    rope_parameters={"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 128,
                     "beta_fast": 32, "beta_slow": 1},
    max_position_embeddings=256, rms_norm_eps=1e-6,
    tie_word_embeddings=False, bos_token_id=0, eos_token_id=1,
)

# docs/models.md section 6.2's counts for TINY (they include the persistent
# buffers: tid2eid [256, 2] of the hash layer and the three routers' [8] biases).
TINY_MAIN_COUNT = 389317
TINY_MTP_COUNT = 90055


def rot_dim(c):
    return int(c["head_dim"] * c["partial_rotary_factor"])


def check_config(c):
    """The constraints of docs/models.md section 6.2; raises ValueError."""
    L, r = c["num_hidden_layers"], rot_dim(c)
    problems = []
    if c["num_key_value_heads"] != 1:
        problems.append("num_key_value_heads must be 1")
    if c["num_attention_heads"] % c["o_groups"]:
        problems.append("num_attention_heads must be a multiple of o_groups")
    if r % 2 or r > c["index_head_dim"] or r > c["head_dim"]:
        problems.append(f"rotary dim {r} must be even and <= index_head_dim and head_dim")
    if len(c["layer_types"]) != L or len(c["mlp_layer_types"]) != L:
        problems.append("layer_types and mlp_layer_types must have num_hidden_layers entries")
    if c["num_experts_per_tok"] > c["n_routed_experts"]:
        problems.append("num_experts_per_tok > n_routed_experts: tid2eid rows cannot be distinct")
    y = c["rope_parameters"]
    if y["factor"] != c["max_position_embeddings"] / y["original_max_position_embeddings"]:
        problems.append("YaRN factor must equal max_position_embeddings / original_max_position_embeddings")
    if SLIDING not in c["layer_types"] or "moe" not in c["mlp_layer_types"]:
        problems.append("needs a sliding layer and a moe layer (the MTP layer's names and inputs are checked on them)")
    if problems:
        raise ValueError("; ".join(problems))


def _hc(c):
    n, H = c["hc_mult"], c["hidden_size"]
    return (2 + n) * n * n * H + (2 + n) * n + 3


def _attention(c):
    H, nH, D, q = c["hidden_size"], c["num_attention_heads"], c["head_dim"], c["q_lora_rank"]
    g, o = c["o_groups"], c["o_lora_rank"]
    return q * H + q + nH * D * q + D * H + D + (g * o) * (nH * D // g) + H * (g * o) + nH


def _moe(c):
    H, E, I = c["hidden_size"], c["n_routed_experts"], c["moe_intermediate_size"]
    return E * H + E * 2 * I * H + E * H * I + 3 * I * H


def _layer(c):
    return 2 * c["hidden_size"] + 2 * _hc(c) + _attention(c) + _moe(c)


def _compressor(c, kind):
    H, D = c["hidden_size"], c["head_dim"]
    if kind == HCA:
        return 2 * D * H + c["compress_rates"][HCA] * D + D
    if kind != CSA:
        return 0
    m, nI, dI, q = c["compress_rates"][CSA], c["index_n_heads"], c["index_head_dim"], c["q_lora_rank"]
    main = 2 * (2 * D * H) + m * 2 * D + D
    indexer = 2 * (2 * dI * H) + m * 2 * dI + dI + nI * dI * q + nI * H
    return main + indexer


def main_counts(c):
    """(parameters, persistent buffer elements) of DeepseekV4ForCausalLM(c)."""
    n, H, V, E = c["hc_mult"], c["hidden_size"], c["vocab_size"], c["n_routed_experts"]
    params = 2 * V * H + H + n * n * H + n + 1 + c["num_hidden_layers"] * _layer(c)
    params += sum(_compressor(c, t) for t in c["layer_types"])
    buffers = sum(E if t == "moe" else V * c["num_experts_per_tok"] for t in c["mlp_layer_types"])
    return params, buffers


def mtp_counts(c):
    """(parameters, buffer elements) of the MTP layer (docs/models.md section 3.10):
    enorm, hnorm, e_proj, h_proj, norm, hc_head_* and one sliding + moe layer."""
    n, H = c["hc_mult"], c["hidden_size"]
    return 3 * H + 2 * H * H + n * n * H + n + 1 + _layer(c), c["n_routed_experts"]


def default_inv_freq(base, r):
    return [1.0 / base ** (2 * i / r) for i in range(r // 2)]


def yarn_ramp(base, r, original_max, beta_fast=32, beta_slow=1):
    """docs/models.md section 0.2 (truncate=True): (lo, hi, ramp per pair)."""
    def corr(rot):
        return r * math.log(original_max / (rot * 2 * math.pi)) / (2 * math.log(base))
    lo = max(math.floor(corr(beta_fast)), 0)
    hi = min(math.ceil(corr(beta_slow)), r - 1)
    den = (hi + 0.001 if hi == lo else hi) - lo
    return lo, hi, [min(max((i - lo) / den, 0.0), 1.0) for i in range(r // 2)]


def yarn_inv_freq(base, r, factor, original_max, beta_fast=32, beta_slow=1):
    """Pair i keeps theta_i where the ramp is 0 and gets theta_i / factor where it is 1."""
    _, _, ramp = yarn_ramp(base, r, original_max, beta_fast, beta_slow)
    return [t * (1 - w) + t / factor * w for t, w in zip(default_inv_freq(base, r), ramp)]


def compress_inv_freq(c):
    y = c["rope_parameters"]
    return yarn_inv_freq(c["compress_rope_theta"], rot_dim(c), y["factor"], y["original_max_position_embeddings"],
                         y.get("beta_fast", 32), y.get("beta_slow", 1))


# ---- checkpoint names --------------------------------------------------------
# transformers' names -> the upstream (V4-Flash checkpoint) names that
# save_pretrained writes back through conversion_mapping.py and that vLLM's
# loaders read (docs/models.md section 7.2).
GLOBAL_UPSTREAM = {
    "model.embed_tokens.weight": "embed.weight",
    "lm_head.weight": "head.weight",
    "model.norm.weight": "norm.weight",
    "model.hc_head.hc_fn": "hc_head_fn",
    "model.hc_head.hc_base": "hc_head_base",
    "model.hc_head.hc_scale": "hc_head_scale",
}

# one decoder layer, relative to model.layers.<i>. / layers.<i>. (mtp.0. for the MTP layer)
LAYER_UPSTREAM = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "attn_hc.fn": "hc_attn_fn",
    "attn_hc.base": "hc_attn_base",
    "attn_hc.scale": "hc_attn_scale",
    "ffn_hc.fn": "hc_ffn_fn",
    "ffn_hc.base": "hc_ffn_base",
    "ffn_hc.scale": "hc_ffn_scale",
    "self_attn.q_a_proj.weight": "attn.wq_a.weight",
    "self_attn.q_a_norm.weight": "attn.q_norm.weight",
    "self_attn.q_b_proj.weight": "attn.wq_b.weight",
    "self_attn.kv_proj.weight": "attn.wkv.weight",
    "self_attn.kv_norm.weight": "attn.kv_norm.weight",
    "self_attn.o_a_proj.weight": "attn.wo_a.weight",
    "self_attn.o_b_proj.weight": "attn.wo_b.weight",
    "self_attn.sinks": "attn.attn_sink",
    "self_attn.compressor.kv_proj.weight": "attn.compressor.wkv.weight",
    "self_attn.compressor.gate_proj.weight": "attn.compressor.wgate.weight",
    "self_attn.compressor.position_bias": "attn.compressor.ape",
    "self_attn.compressor.kv_norm.weight": "attn.compressor.norm.weight",
    "self_attn.compressor.indexer.q_b_proj.weight": "attn.indexer.wq_b.weight",
    "self_attn.compressor.indexer.scorer.weights_proj.weight": "attn.indexer.weights_proj.weight",
    "self_attn.compressor.indexer.kv_proj.weight": "attn.indexer.compressor.wkv.weight",
    "self_attn.compressor.indexer.gate_proj.weight": "attn.indexer.compressor.wgate.weight",
    "self_attn.compressor.indexer.position_bias": "attn.indexer.compressor.ape",
    "self_attn.compressor.indexer.kv_norm.weight": "attn.indexer.compressor.norm.weight",
    "mlp.gate.weight": "ffn.gate.weight",
    "mlp.gate.e_score_correction_bias": "ffn.gate.bias",
    "mlp.gate.tid2eid": "ffn.gate.tid2eid",
    "mlp.shared_experts.gate_proj.weight": "ffn.shared_experts.w1.weight",
    "mlp.shared_experts.up_proj.weight": "ffn.shared_experts.w3.weight",
    "mlp.shared_experts.down_proj.weight": "ffn.shared_experts.w2.weight",
}
# stacked experts: gate_up_proj[e] = [w1[e] (gate rows) ; w3[e] (up rows)], down_proj[e] = w2[e]
EXPERTS_GATE_UP = "mlp.experts.gate_up_proj"
EXPERTS_DOWN = "mlp.experts.down_proj"

# the MTP layer's own tensors (vLLM deepseek_v4_mtp.py), relative to mtp.0.
MTP_UPSTREAM = {
    "enorm.weight": "enorm.weight",
    "hnorm.weight": "hnorm.weight",
    "e_proj.weight": "e_proj.weight",
    "h_proj.weight": "h_proj.weight",
    "norm.weight": "norm.weight",
    "hc_head.hc_fn": "hc_head_fn",
    "hc_head.hc_base": "hc_head_base",
    "hc_head.hc_scale": "hc_head_scale",
}


def expert_names(prefix, e):
    """(gate, up, down) upstream names of expert e under prefix (e.g. 'layers.1.' or 'mtp.0.')."""
    return tuple(f"{prefix}ffn.experts.{e}.{w}.weight" for w in ("w1", "w3", "w2"))


def upstream_names(hf_name, n_experts):
    """The upstream checkpoint names holding the transformers tensor hf_name, in
    order (experts: every expert's w1, w3 for gate_up_proj, w2 for down_proj).
    KeyError when the name is not a DeepSeek V4 tensor."""
    if hf_name in GLOBAL_UPSTREAM:
        return [GLOBAL_UPSTREAM[hf_name]]
    parts = hf_name.split(".")
    if len(parts) < 4 or parts[:2] != ["model", "layers"] or not parts[2].isdigit():
        raise KeyError(hf_name)
    prefix, suffix = f"layers.{parts[2]}.", ".".join(parts[3:])
    return layer_upstream_names(prefix, suffix, n_experts)


def layer_upstream_names(prefix, suffix, n_experts):
    if suffix == EXPERTS_GATE_UP:
        return [n for e in range(n_experts) for n in expert_names(prefix, e)[:2]]
    if suffix == EXPERTS_DOWN:
        return [expert_names(prefix, e)[2] for e in range(n_experts)]
    return [prefix + LAYER_UPSTREAM[suffix]]


def self_check():
    passed = failed = 0

    def check(what, ok):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL: {what}")

    for name, c in (("tiny", TINY), ("b", B)):
        try:
            check_config(c)
            check(f"{name}: config constraints", True)
        except ValueError as e:
            check(f"{name}: config constraints ({e})", False)
        p, b = main_counts(c)
        mp, mb = mtp_counts(c)
        print(f"{name}: main {p} parameters + {b} buffer elements = {p + b}; MTP {mp} + {mb} = {mp + mb}; "
              f"rotary dim {rot_dim(c)}; YaRN lo/hi/ramp {yarn_ramp(c['compress_rope_theta'], rot_dim(c), c['rope_parameters']['original_max_position_embeddings'])}")
    p, b = main_counts(TINY)
    check("tiny main count = docs/models.md 6.2 (389 317)", p + b == TINY_MAIN_COUNT)
    check("tiny main parameters proper (388 781)", p == 388781)
    mp, mb = mtp_counts(TINY)
    check("tiny MTP count = docs/models.md 6.2 (90 055)", mp + mb == TINY_MTP_COUNT)
    # docs/models.md 6.2: lo = 0, hi = 1, pair 0 keeps its frequency, pairs 1-3 divided by 4
    lo, hi, ramp = yarn_ramp(160000.0, 8, 64)
    check("tiny YaRN lo 0 hi 1", (lo, hi) == (0, 1) and ramp == [0.0, 1.0, 1.0, 1.0])
    ratio = [a / b for a, b in zip(compress_inv_freq(TINY), default_inv_freq(160000.0, 8))]
    check("tiny YaRN ratios 1, 1/4, 1/4, 1/4", all(abs(x - y) < 1e-12 for x, y in zip(ratio, [1, .25, .25, .25])))
    lo, hi, ramp = yarn_ramp(160000.0, 8, 128)
    check("b YaRN lo 0 hi 2, a fractional pair", (lo, hi) == (0, 2) and ramp == [0.0, 0.5, 1.0, 1.0])
    check("embed name", upstream_names("model.embed_tokens.weight", 8) == ["embed.weight"])
    check("wq_a name", upstream_names("model.layers.0.self_attn.q_a_proj.weight", 8) == ["layers.0.attn.wq_a.weight"])
    check("weights_proj name", upstream_names("model.layers.3.self_attn.compressor.indexer.scorer.weights_proj.weight",
                                              8) == ["layers.3.attn.indexer.weights_proj.weight"])
    check("gate_up names", upstream_names("model.layers.1.mlp.experts.gate_up_proj", 2) ==
          ["layers.1.ffn.experts.0.w1.weight", "layers.1.ffn.experts.0.w3.weight",
           "layers.1.ffn.experts.1.w1.weight", "layers.1.ffn.experts.1.w3.weight"])
    check("down names", upstream_names("model.layers.1.mlp.experts.down_proj", 2) ==
          ["layers.1.ffn.experts.0.w2.weight", "layers.1.ffn.experts.1.w2.weight"])
    check("bias name", upstream_names("model.layers.2.mlp.gate.e_score_correction_bias", 8) ==
          ["layers.2.ffn.gate.bias"])
    try:
        upstream_names("model.layers.0.self_attn.q_b_norm.weight", 8)
        check("unknown names raise", False)
    except KeyError:
        check("unknown names raise", True)
    check("upstream names unique", len(set(LAYER_UPSTREAM.values())) == len(LAYER_UPSTREAM))
    print(f"{passed} passed, {failed} failed")
    return failed == 0


if __name__ == "__main__":
    raise SystemExit(0 if self_check() else 1)
