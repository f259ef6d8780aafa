#!/usr/bin/env python3
"""DeepSeek V4 facts the oracle fixtures are checked against, without torch.

make_fixtures.py (families deepseek_v4_tiny, deepseek_v4_b and
deepseek_v4_fp8) imports this module for its configs, its parameter counts,
the rotary tables it expects transformers to build, the upstream checkpoint
names (docs/models.md sections 3, 6.2 and 7.2; transformers'
conversion_mapping.py; vLLM's deepseek_v4_mtp.py) and, for deepseek_v4_fp8,
V4-Flash's checkpoint form: which tensor is stored how, and the FP8 (E4M3 +
E8M0 block scale) and MXFP4 (E2M1 + E8M0 group scale) encoders and decoders
(docs/quantization.md "Checkpoint formats read"). Everything here is plain
Python, so it can be checked on a machine without torch:

  python3 tools/oracle/dsv4_spec.py      # the self-check
"""

import bisect
import math
import re

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


def main_checkpoint_names(c):
    """Every upstream tensor name of DeepseekV4ForCausalLM(c)'s checkpoint, in
    model order: the globals, then per layer the LAYER_UPSTREAM names its types
    have (a compressor on CSA and HCA layers, an indexer on CSA ones, tid2eid on
    hash layers and the correction bias on top-k ones) and its experts."""
    names = list(GLOBAL_UPSTREAM.values())
    for i, (lt, mt) in enumerate(zip(c["layer_types"], c["mlp_layer_types"])):
        names += _layer_checkpoint_names(f"layers.{i}.", lt, mt, c["n_routed_experts"])
    return names


def mtp_checkpoint_names(c):
    """The MTP layer's upstream names (mtp.0.*: its own tensors, then one
    sliding_attention + moe layer's)."""
    return ["mtp.0." + n for n in MTP_UPSTREAM.values()] + \
        _layer_checkpoint_names("mtp.0.", SLIDING, "moe", c["n_routed_experts"])


def _layer_checkpoint_names(prefix, lt, mt, n_experts):
    names = []
    for up in LAYER_UPSTREAM.values():
        if (up.startswith("attn.indexer.") and lt != CSA) or (up.startswith("attn.compressor.") and lt == SLIDING):
            continue
        if (up == "ffn.gate.tid2eid" and mt != "hash_moe") or (up == "ffn.gate.bias" and mt != "moe"):
            continue
        names.append(prefix + up)
    for e in range(n_experts):
        names += expert_names(prefix, e)
    return names


def mtp_upstream_names(hf_name, n_experts):
    """The upstream names holding the MTP head's tensor hf_name (make_fixtures'
    DeepseekV4MtpHead: its own tensors, and its decoder layer's under `layer.`).
    KeyError when it has none."""
    if hf_name in MTP_UPSTREAM:
        return ["mtp.0." + MTP_UPSTREAM[hf_name]]
    if not hf_name.startswith("layer."):
        raise KeyError(hf_name)
    return layer_upstream_names("mtp.0.", hf_name[len("layer."):], n_experts)


# ---- V4-Flash's checkpoint form ---------------------------------------------
# How DeepSeek V4-Flash stores each tensor (docs/models.md 7.2's "ckpt dtype"
# column, 7.3 items 6 and 7; docs/quantization.md "Checkpoint formats read"):
# - FP8: F8_E4M3 codes `<base>.weight` [out, in] and an E8M0 `<base>.scale`
#   [ceil(out/128), ceil(in/128)], one power of two per 128x128 block (partial
#   at the edges): W = e4m3(code) * 2^(byte - 127). The attention's wq_a,
#   wq_b, wkv, wo_a and wo_b, the indexer's wq_b, the shared experts, and the
#   MTP layer's e_proj and h_proj.
# - MXFP4: the routed experts (`ffn.experts.<e>.w1/w2/w3`, MTP's too): packed
#   E2M1 `<base>.weight` I8 [out, in/2], the even element of a row in the low
#   nibble, and an E8M0 `<base>.scale` [out, in/32], one per 32 consecutive
#   values of a row: W = e2m1(nibble) * 2^(byte - 127).
# - BF16: the embedding, the output head, the router and the compressors' and
#   indexer's own projections (wkv, wgate, weights_proj), kept unquantized.
# - F32: norms, mHC parameters, sinks, position biases, the correction bias
#   ("FP32 (rt)" in models.md: HF holds them in f32; their on-disk dtype in a
#   real shard was not read here).
# - INT: tid2eid, int64 as transformers holds it.
# Scales are E8M0 powers of two chosen as DeepSeek's ue8m0 scale_fmt (and
# transformers' block-fp8 quantizer with ue8m0) choose them: the smallest
# power of two s with amax <= fmax * s, i.e. s = 2^ceil(log2(amax / fmax)),
# fmax = 448 (E4M3) or 6 (E2M1); an all-zero block gets s = 1.
FP8, FP4, BF16, F32, INT = "fp8", "mxfp4", "bf16", "f32", "int"
FP8_BLOCK = 128
FP8_MAX = 448.0
FP4_GROUP = 32
FP4_MAX = 6.0
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)

V4FLASH_GLOBAL_FORMS = {"embed.weight": BF16, "head.weight": BF16}  # norm.weight, hc_head_*: F32
V4FLASH_LAYER_FORMS = {
    "attn.wq_a.weight": FP8, "attn.wq_b.weight": FP8, "attn.wkv.weight": FP8,
    "attn.wo_a.weight": FP8, "attn.wo_b.weight": FP8, "attn.indexer.wq_b.weight": FP8,
    "ffn.shared_experts.w1.weight": FP8, "ffn.shared_experts.w2.weight": FP8, "ffn.shared_experts.w3.weight": FP8,
    "attn.compressor.wkv.weight": BF16, "attn.compressor.wgate.weight": BF16,
    "attn.indexer.compressor.wkv.weight": BF16, "attn.indexer.compressor.wgate.weight": BF16,
    "attn.indexer.weights_proj.weight": BF16, "ffn.gate.weight": BF16,
    "ffn.gate.tid2eid": INT,
}  # the other LAYER_UPSTREAM names: F32
V4FLASH_MTP_FORMS = {"e_proj.weight": FP8, "h_proj.weight": FP8}  # enorm, hnorm, norm, hc_head_*: F32
_EXPERT_RE = re.compile(r"ffn\.experts\.\d+\.w[123]\.weight")
_PREFIX_RE = re.compile(r"(layers|mtp)\.\d+\.(.+)")


def v4flash_form(name):
    """How V4-Flash stores the upstream tensor `name`: FP8, FP4, BF16, F32 or
    INT. KeyError for a name that is not a DeepSeek V4 tensor, so that a new
    tensor is never stored in a guessed form."""
    m = _PREFIX_RE.fullmatch(name)
    if m is None:
        if name in V4FLASH_GLOBAL_FORMS:
            return V4FLASH_GLOBAL_FORMS[name]
        if name in GLOBAL_UPSTREAM.values():
            return F32
        raise KeyError(name)
    kind, rest = m.group(1), m.group(2)
    if _EXPERT_RE.fullmatch(rest):
        return FP4
    if kind == "mtp" and rest in MTP_UPSTREAM.values():
        return V4FLASH_MTP_FORMS.get(rest, F32)
    if rest in LAYER_UPSTREAM.values():
        return V4FLASH_LAYER_FORMS.get(rest, F32)
    raise KeyError(name)


def scale_name(name):
    """The upstream scale companion of `<base>.weight`: `<base>.scale`."""
    if not name.endswith(".weight"):
        raise KeyError(f"{name} has no .scale companion (not a .weight)")
    return name[:-len(".weight")] + ".scale"


def e8m0_byte(amax, fmax):
    """The biased exponent (E8M0 byte) of the smallest power of two s with
    amax <= fmax * s; 127 (s = 1) when amax is 0. ValueError outside E8M0's
    range (bytes 0..254; 255 is its NaN)."""
    if not (math.isfinite(amax) and amax >= 0):
        raise ValueError(f"block maximum {amax} is not a finite magnitude")
    if amax == 0:
        return 127
    e = math.frexp(amax / fmax)[1]
    while amax > math.ldexp(fmax, e):
        e += 1
    while amax <= math.ldexp(fmax, e - 1):
        e -= 1
    if not -127 <= e <= 127:
        raise ValueError(f"scale 2^{e} for block maximum {amax} is outside E8M0")
    return e + 127


def e8m0_value(byte):
    """2^(byte - 127) (exact in f32: byte 0 is the subnormal 2^-127); 255 is NaN."""
    if not 0 <= byte <= 254:
        raise ValueError(f"E8M0 byte {byte} is not a finite scale")
    return math.ldexp(1.0, byte - 127)


def _negative(x):
    return math.copysign(1.0, x) < 0


def e2m1_code(x):
    """x (already divided by its group's scale) to the nearest E2M1 value, ties
    to the even code, saturating at +-6; bit 3 is the sign, kept for values
    that round to zero (-0.0 is code 8)."""
    if x != x:
        raise ValueError("NaN has no E2M1 code")
    a, best = min(abs(x), FP4_MAX), 0
    for i in range(1, 8):
        d, db = abs(a - E2M1_MAGNITUDES[i]), abs(a - E2M1_MAGNITUDES[best])
        if d < db or (d == db and i % 2 == 0):
            best = i
    return best | (8 if _negative(x) else 0)


def e2m1_value(code):
    mag = E2M1_MAGNITUDES[code & 7]
    return -mag if code & 8 else mag


def pack_e2m1(codes):
    """Two codes a byte, element 2j in the low nibble of byte j, 2j+1 in the high one."""
    if len(codes) % 2:
        raise ValueError("an odd number of E2M1 codes does not pack into bytes")
    return bytes(codes[i] | codes[i + 1] << 4 for i in range(0, len(codes), 2))


def unpack_e2m1(data):
    return [c for b in data for c in (b & 15, b >> 4)]


def mxfp4_quantize_row(row):
    """One row of values (a multiple of 32 of them) -> (packed bytes, len/2;
    scale bytes, one E8M0 per 32 values: its group's maximum fits 6)."""
    if len(row) % FP4_GROUP:
        raise ValueError(f"a row of {len(row)} values is not whole groups of {FP4_GROUP}")
    codes, scales = [], []
    for g in range(0, len(row), FP4_GROUP):
        group = row[g:g + FP4_GROUP]
        b = e8m0_byte(max(abs(v) for v in group), FP4_MAX)
        s = e8m0_value(b)
        scales.append(b)
        codes += [e2m1_code(v / s) for v in group]
    return pack_e2m1(codes), bytes(scales)


def mxfp4_dequantize_row(packed, scales):
    return [e2m1_value(c) * e8m0_value(scales[k // FP4_GROUP]) for k, c in enumerate(unpack_e2m1(packed))]


def fp8_e4m3_value(byte):
    """The OCP E4M3 ("fn": bias 7, subnormals, no infinities) value of a code;
    0x7f and 0xff are NaN."""
    if byte & 0x7F == 0x7F:
        raise ValueError(f"E4M3 code {byte:#04x} is NaN")
    e, m = (byte >> 3) & 15, byte & 7
    v = math.ldexp(m, -9) if e == 0 else math.ldexp(8 + m, e - 10)
    return -v if byte & 0x80 else v


_E4M3_MAGNITUDES = [fp8_e4m3_value(b) for b in range(0x7F)]  # codes 0..126, increasing


def fp8_e4m3_code(x):
    """x to the nearest E4M3 value, ties to the even code (IEEE round to nearest
    even), saturating at +-448 (transformers clamps before its cast); the
    sign is kept for values that round to zero (-0.0 is 0x80)."""
    if x != x:
        raise ValueError("NaN has no E4M3 code")
    a = min(abs(x), FP8_MAX)
    hi = bisect.bisect_left(_E4M3_MAGNITUDES, a)
    if hi == 0 or _E4M3_MAGNITUDES[hi] == a:
        code = hi
    else:
        lo = hi - 1
        dl, dh = a - _E4M3_MAGNITUDES[lo], _E4M3_MAGNITUDES[hi] - a
        code = lo if dl < dh or (dl == dh and lo % 2 == 0) else hi
    return code | (0x80 if _negative(x) else 0)


def fp8_quantize_blocks(rows):
    """A matrix (a list of equal rows) -> (codes: rows of E4M3 bytes; scales:
    [ceil(n/128)][ceil(k/128)] E8M0 bytes), each block's maximum fitting 448."""
    n, k, b = len(rows), len(rows[0]), FP8_BLOCK
    scales = [[e8m0_byte(max(abs(v) for r in rows[i:i + b] for v in r[j:j + b]), FP8_MAX) for j in range(0, k, b)]
              for i in range(0, n, b)]
    codes = [[fp8_e4m3_code(v / e8m0_value(scales[i // b][j // b])) for j, v in enumerate(r)]
             for i, r in enumerate(rows)]
    return codes, scales


def fp8_dequantize_blocks(codes, scales):
    b = FP8_BLOCK
    return [[fp8_e4m3_value(c) * e8m0_value(scales[i // b][j // b]) for j, c in enumerate(r)]
            for i, r in enumerate(codes)]


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
    check_v4flash_form(check)
    print(f"{passed} passed, {failed} failed")
    return failed == 0


def check_v4flash_form(check):
    """The checkpoint-form tables and the encoders against hand-computed values."""
    main, mtp = main_checkpoint_names(TINY), mtp_checkpoint_names(TINY)
    # the counts the deepseek_v4_tiny fixture's checkpoint holds (transformers' save_pretrained)
    check("tiny: 210 main tensor names, 53 MTP ones, all distinct",
          (len(main), len(mtp), len(set(main + mtp))) == (210, 53, 263))
    check("b: 229 main tensor names, 47 MTP ones (the deepseek_v4_b fixture's)",
          (len(main_checkpoint_names(B)), len(mtp_checkpoint_names(B))) == (229, 47))

    def count(names, form):
        return sum(1 for n in names if v4flash_form(n) == form)

    # per layer 5 attention + 3 shared-expert projections, the 2 CSA layers' indexer wq_b; 4 x 8 x 3 experts
    check("tiny main: 34 FP8, 96 MXFP4, 1 int tensors", (count(main, FP8), count(main, FP4), count(main, INT)) ==
          (34, 96, 1))
    # embed, head, per layer the router, CSA 2 x (2 + 2 + 1) compressor/indexer, HCA 2
    check("tiny main: 18 BF16 tensors", count(main, BF16) == 2 + 4 + 2 * 5 + 2)
    check("tiny MTP: 10 FP8 (e_proj, h_proj), 24 MXFP4", (count(mtp, FP8), count(mtp, FP4)) == (10, 24))
    forms = {"layers.0.attn.wq_a.weight": FP8, "layers.1.attn.indexer.wq_b.weight": FP8,
             "layers.1.attn.wkv.weight": FP8, "layers.3.ffn.shared_experts.w2.weight": FP8,
             "layers.1.attn.compressor.wkv.weight": BF16, "layers.1.attn.indexer.compressor.wgate.weight": BF16,
             "layers.1.attn.indexer.weights_proj.weight": BF16, "layers.2.ffn.gate.weight": BF16,
             "layers.2.ffn.experts.7.w2.weight": FP4, "mtp.0.ffn.experts.0.w3.weight": FP4,
             "mtp.0.e_proj.weight": FP8, "mtp.0.attn.wo_b.weight": FP8, "embed.weight": BF16, "head.weight": BF16,
             "norm.weight": F32, "hc_head_fn": F32, "mtp.0.hc_head_fn": F32, "mtp.0.enorm.weight": F32,
             "layers.0.ffn.gate.tid2eid": INT, "layers.2.ffn.gate.bias": F32, "layers.0.attn.kv_norm.weight": F32,
             "layers.1.attn.compressor.ape": F32, "layers.0.attn.attn_sink": F32, "layers.0.hc_attn_fn": F32}
    check("forms by name", all(v4flash_form(n) == f for n, f in forms.items()))
    for bad in ("layers.0.e_proj.weight", "model.layers.0.attn.wq_a.weight", "layers.0.attn.q_b_norm.weight"):
        try:
            v4flash_form(bad)
            check(f"{bad} has no form", False)
        except KeyError:
            check(f"{bad} has no form", True)
    check("scale name", scale_name("layers.0.ffn.experts.3.w1.weight") == "layers.0.ffn.experts.3.w1.scale")
    check("MTP head names", mtp_upstream_names("layer.self_attn.q_a_proj.weight", 8) == ["mtp.0.attn.wq_a.weight"]
          and mtp_upstream_names("hc_head.hc_fn", 8) == ["mtp.0.hc_head_fn"]
          and mtp_upstream_names("layer.mlp.experts.down_proj", 2) ==
          ["mtp.0.ffn.experts.0.w2.weight", "mtp.0.ffn.experts.1.w2.weight"])

    # E8M0: the smallest power of two whose multiple of fmax holds amax
    check("e8m0 bytes", [e8m0_byte(a, m) for a, m in ((448, 448), (449, 448), (0.3, 448), (0, 448), (6, 6),
                                                       (12, 6), (3, 6), (3.0000001, 6), (6.0000001, 6))] ==
          [127, 128, 117, 127, 127, 128, 126, 127, 128])
    check("e8m0 values", (e8m0_value(0), e8m0_value(127), e8m0_value(254)) == (2.0 ** -127, 1.0, 2.0 ** 127))
    try:
        e8m0_value(255)
        check("e8m0 255 is NaN", False)
    except ValueError:
        check("e8m0 255 is NaN", True)

    # E2M1: nearest, ties to the even code, sign bit 8, saturating
    # (pairs, not a dict: 0.0 and -0.0 are one key)
    want = [(0.0, 0), (0.5, 1), (1.0, 2), (1.5, 3), (2.0, 4), (3.0, 5), (4.0, 6), (6.0, 7), (-0.5, 9), (-6.0, 15),
            (7.0, 7), (-9.0, 15), (0.25, 0), (0.75, 2), (1.25, 2), (1.75, 4), (2.5, 4), (3.5, 6), (5.0, 6),
            (0.26, 1), (5.01, 7), (-0.1, 8), (-0.0, 8), (-1.25, 10)]
    check("e2m1 codes", all(e2m1_code(x) == c for x, c in want))
    check("e2m1 values", [e2m1_value(c) for c in range(16)] ==
          [0, .5, 1, 1.5, 2, 3, 4, 6, 0, -.5, -1, -1.5, -2, -3, -4, -6] and math.copysign(1, e2m1_value(8)) < 0)
    check("e2m1 packing: even element low", pack_e2m1([1, 2, 15, 8]) == bytes([0x21, 0x8F]) and
          unpack_e2m1(bytes([0x21, 0x8F])) == [1, 2, 15, 8])
    # a row of two groups: [6, -3, 0.75, 0.2, 0...] (max 6: scale 1, byte 127) and
    # [12, 1, -2.5, 0...] (max 12: scale 2, byte 128; -2.5 / 2 = -1.25 ties to -1)
    row = [6.0, -3.0, 0.75, 0.2] + [0.0] * 28 + [12.0, 1.0, -2.5] + [0.0] * 29
    packed, scales = mxfp4_quantize_row(row)
    check("mxfp4 row bytes", scales == bytes([127, 128]) and packed[:2] == bytes([0xD7, 0x02]) and
          packed[16:18] == bytes([0x17, 0x0A]) and not any(packed[2:16]) and not any(packed[18:]))
    check("mxfp4 row values", mxfp4_dequantize_row(packed, scales) ==
          [6.0, -3.0, 1.0, 0.0] + [0.0] * 28 + [12.0, 1.0, -2.0] + [0.0] * 29)

    # E4M3 ("fn"): codes, round to nearest even, saturation, the sign of zero
    want = [(448.0, 0x7E), (-448.0, 0xFE), (1.0, 0x38), (2.0 ** -9, 0x01), (2.0 ** -10, 0x00),
            (1.5 * 2.0 ** -10, 0x01), (1.0625, 0x38), (1.1875, 0x3A), (500.0, 0x7E), (0.0, 0x00), (-0.0, 0x80),
            (240.0, 0x77), (232.0, 0x76), (0.25, 0x28), (2.0 ** -6, 0x08)]
    check("e4m3 codes", all(fp8_e4m3_code(x) == c for x, c in want))
    check("e4m3 values", (fp8_e4m3_value(0x7E), fp8_e4m3_value(0x01), fp8_e4m3_value(0x08), fp8_e4m3_value(0xB8))
          == (448.0, 2.0 ** -9, 2.0 ** -6, -1.0))
    check("e4m3 every finite code round-trips", all(fp8_e4m3_code(fp8_e4m3_value(b)) == b
                                                    for b in range(256) if b & 0x7F != 0x7F))
    # 130 x 3: two row blocks (the second partial). Block 0's max 1 needs 2^-8 (448 / 256 = 1.75 holds 1,
    # 0.875 does not: byte 119), block 1's max 900 needs 4 (byte 129)
    rows = [[1.0, -1.0, 0.5] for _ in range(130)]
    rows[129][0] = 900.0
    codes, scales = fp8_quantize_blocks(rows)
    check("fp8 block scales", scales == [[119], [129]])
    # 1 / 2^-8 = 256 (0x78), 0.5 -> 128 (0x70); 900 / 4 = 225 -> 224 (0x76), 1 / 4 = 0.25 (0x28), 0.125 (0x20)
    check("fp8 block codes", codes[0] == [0x78, 0xF8, 0x70] and codes[128] == [0x28, 0xA8, 0x20] and
          codes[129] == [0x76, 0xA8, 0x20])
    values = fp8_dequantize_blocks(codes, scales)
    check("fp8 block values", values[0] == [1.0, -1.0, 0.5] and values[129] == [896.0, -1.0, 0.5])


if __name__ == "__main__":
    raise SystemExit(0 if self_check() else 1)
