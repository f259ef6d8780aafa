/* The op cases (op_cases.h says how each becomes a model). Dims are small
 * but not degenerate: odd widths, rows that span several workgroups, a
 * prefill of 19 tokens (past one 16-row tile) and decode steps of 1..5.
 * Random weights are scaled by 1/sqrt(fan-in) (codegen's random weights) and
 * the embedding rows are of magnitude about 1/sqrt(H). */
#include "tests/ops/op_cases.h"

/* Elementwise ops: one to five f32 operations per element, GPU exp/log
 * within a few ulps of libm's (clamp_* only choose). */
#define EW_TOL .tol = 1e-5, .floor = 1e-2, .why = "a few f32 operations per element; GPU exp/log a few ulps off libm"
/* Norms: each output is one f32 sum of squares over a row (<= 301 terms) by
 * a tree (f64 in ref), a square root, and up to three products (silu's exp
 * a few ulps); inputs are never near 0 relative to their row. */
#define NORM_TOL .tol = 1e-5, .floor = 1e-3, .why = "one f32 sum of squares a row by a tree (f64 in ref), a sqrt, products"
/* Dots of K <= 256 products of magnitude <= 1 in f32 (f64 in ref). */
#define MATMUL_TOL .tol = 2e-5, .floor = 1e-2, .why = "f32 sums of K products (f64 in ref)"
/* f16 weights: f32 sums as MATMUL_TOL's; prefill's matrix units round x to f16. */
#define F16_TOL                                                                                      \
	.tol = 2e-5, .floor = 1e-2, .why = "f32 sums of K products (f64 in ref)", .prefill_tol = 2e-2, \
	.prefill_why = "prefill on the matrix units rounds x to f16"
/* An f16-weight case of H x vocab whose body reads xs = 1.1 x (op_cases[]'s comment says why). */
#define F16_CASE(n, h, v, w, ops)                                                                    \
	{                                                                                             \
		.name = n, .params = "H: {default: " #h "}\nvocab: {default: " #v "}", .weights = w,    \
		.matrix = HALO_F16, .body = "- {op: scale, out: xs, in: [x], value: 1.1}\n" ops, F16_TOL \
	}
/* rope: the angle (pos + t) * theta in f32 on the GPU (f64 in the plain
 * reference) at positions below 40, GPU cos/sin a few ulps. */
#define ROPE_TOL .tol = 1e-4, .floor = 1e-2, .why = "the angle in f32 (f64 in ref) and GPU cos/sin"
#define ATTENTION_TOL .tol = 2e-5, .floor = 1e-2, \
	.why = "f32 score dots and an online softmax rescaled per pass (ref normalises once in f64)"
#define CONV_TOL .tol = 1e-5, .floor = 1e-2, .why = "f32 sums of K <= 4 products in order (f64 in ref), silu's exp"
/* moe: k weighted f32 dots of F terms over silu activations of H-term dots
 * (f64 in ref), after a router whose f32 scores must pick the same experts
 * (random logits: no ties within rounding). */
#define MOE_TOL .tol = 2e-5, .floor = 1e-2, .why = "k weighted f32 dots of F over H-term dots through silu (f64 in ref)"
/* E experts of F rows over H, and their router; softmax routing to 2 of
 * them, the layer's output named `out`. */
#define MOE_WEIGHTS(E, F)                                                                                      \
	"router: {shape: [" E ", H]}\ngate: {shape: [" E ", " F ", H]}\nup: {shape: [" E ", " F ", H]}\n"         \
	"down: {shape: [" E ", H, " F "]}"
#define MOE_SOFTMAX_BODY(out)                                                                                  \
	"- {op: matmul, out: rl, in: [x, router]}\n"                                                            \
	"- {op: moe_route, out: [ids, wts], in: [rl], k: 2}\n"                                                  \
	"- {op: moe_experts, out: " out ", in: [x, ids, wts, gate, up, down]}"
/* QSA (Qwen4-Exp): heads of 16, written to the caches, the indexer's mask of
 * the best `top` blocks of `block` rows, attention over the kept rows. */
#define QSA_STATE(kvh)                                                                                          \
	"k_cache: {shape: [n_ctx, " kvh ", 16], kind: kv}\nv_cache: {shape: [n_ctx, " kvh ", 16], kind: kv}\n"     \
	"idx_keys: {shape: [n_ctx, 16], kind: kv}"
#define QSA_BODY(qh, kvh, block, top)                                                                          \
	"- {op: matmul, out: qf, in: [x, wq]}\n"                                                                \
	"- {op: matmul, out: kf, in: [x, wk]}\n"                                                                \
	"- {op: matmul, out: vf, in: [x, wv]}\n"                                                                \
	"- {op: matmul, out: ik, in: [x, wi]}\n"                                                                \
	"- {op: reshape, out: q3, in: [qf], shape: [T, " qh ", 16]}\n"                                          \
	"- {op: reshape, out: k3, in: [kf], shape: [T, " kvh ", 16]}\n"                                         \
	"- {op: reshape, out: v3, in: [vf], shape: [T, " kvh ", 16]}\n"                                         \
	"- {op: state_write, name: k_store, state: k_cache, in: [k3], at: pos}\n"                               \
	"- {op: state_write, name: v_store, state: v_cache, in: [v3], at: pos}\n"                               \
	"- {op: state_write, name: i_store, state: idx_keys, in: [ik], at: pos}\n"                              \
	"- {op: state_read, out: kc, state: k_cache}\n"                                                         \
	"- {op: state_read, out: vc, state: v_cache}\n"                                                         \
	"- {op: state_read, out: ic, state: idx_keys}\n"                                                        \
	"- {op: qsa_select, out: sel, in: [q3, ic, k_norm], block: " block ", top_blocks: " top ",\n"            \
	"   base: 10000.0, rot_dim: 8, eps: 1.0e-6}\n"                                                          \
	"- {op: masked_attention, out: att, in: [q3, kc, vc, sel], scale: 0.25}\n"                              \
	"- {op: reshape, out: logits, in: [att], shape: [T, vocab]}"
/* A quantized matmul: the weight [2V, K] is a linear layer (not V rows, as
 * a head would be: codegen/quant_policy.c), split into two halves added. The
 * kernels dequantize to the reference's values (q4_k: up to one fma's
 * rounding) and scale each block's sum once where ref scales each weight.
 * Prefill (19 rows) may run on the matrix units (matmul_coopmat, where the
 * device has them: H200 Vulkan, cuda), which round x and the dequantized
 * weights to f16 (u = 2^-11 each, tests/kernels/test_matmul_quant.c). Its
 * outputs here are of rms 0.03-0.05 (ref), so those roundings, summed over
 * K products of random sign, move one by about u sqrt(2K) of a product's
 * scale, a few 1e-5: 2e-2 of the 1e-2 floor is 2e-4, 5-7 times the worst
 * errors measured on the H200's cuda (q8_0 3.1e-3, f8e4m3 4.2e-3 by this
 * measure) and under an output's own size. K: a multiple of the format's
 * block (32, 256 and 128 values). */
#define QUANT_CASE_OF(n, q, K, w_rows_body)                                                                     \
	{                                                                                                       \
		.name = n, .params = "H: {default: " #K "}\nvocab: {default: 45}",                            \
		.weights = "w: {shape: [2 * vocab, H]}", .quant = q, .body = w_rows_body,                       \
		.tol = 1e-4, .floor = 1e-2, .why = "block sums scaled once (ref: per weight), f32 sums (f64 in ref)", \
		.prefill_tol = 2e-2,                                                                            \
		.prefill_why = "prefill on the matrix units rounds x and the dequantized weights to f16"       \
	}
#define QUANT_CASE(n, q, K)                                                                                     \
	QUANT_CASE_OF(n, q, K,                                                                                  \
		      "- {op: matmul, out: [a, b], in: [x, w], split: [vocab, vocab]}\n"                          \
		      "- {op: add, out: logits, in: [a, b]}")
/* q, k and v from x, the cache written at pos, attention over it. */
#define ATTENTION_BODY(hq, hk, d)                                                                            \
	"- {op: matmul, out: qf, in: [x, wq]}\n"                                                            \
	"- {op: matmul, out: kf, in: [x, wk]}\n"                                                            \
	"- {op: matmul, out: vf, in: [x, wv]}\n"                                                            \
	"- {op: reshape, out: q3, in: [qf], shape: [T, " #hq ", " #d "]}\n"                                \
	"- {op: reshape, out: k3, in: [kf], shape: [T, " #hk ", " #d "]}\n"                                \
	"- {op: reshape, out: v3, in: [vf], shape: [T, " #hk ", " #d "]}\n"                                \
	"- {op: state_write, name: k_store, state: k_cache, in: [k3], at: pos}\n"                           \
	"- {op: state_write, name: v_store, state: v_cache, in: [v3], at: pos}\n"                           \
	"- {op: state_read, out: kc, state: k_cache}\n"                                                     \
	"- {op: state_read, out: vc, state: v_cache}\n"                                                     \
	"- {op: attention, out: att, in: [q3, kc, vc], scale: 1.0 / sqrt(" #d ")}\n"                       \
	"- {op: reshape, out: logits, in: [att], shape: [T, vocab]}"

const op_case op_cases[] = {
	/* ---- elementwise (kernels/ops.def) ---- */
	{
		.name = "add_broadcast",
		.params = "H: {default: 37}\nvocab: {default: H}",
		.weights = "b: {shape: [H]}",
		.body = "- {op: add, out: logits, in: [x, b]}",
		EW_TOL,
	},
	{
		.name = "binary_tokens",
		.params = "H: {default: 37}\nvocab: {default: H}",
		.weights = "t2: {shape: [vocab, H]}",
		.body = "- {op: embed, out: y, in: [t2, tokens]}\n"
			"- {op: sub, out: d, in: [x, y]}\n"
			"- {op: mul, out: p, in: [d, x]}\n"
			"- {op: swiglu, out: logits, in: [p, y]}",
		EW_TOL,
	},
	{
		.name = "broadcast_last",
		.params = "H: {default: 37}\nvocab: {default: H}",
		.weights = "ws: {shape: [1, H]}",
		.body = "- {op: matmul, out: s, in: [x, ws]}\n"
			"- {op: mul, out: m, in: [x, s]}\n"
			"- {op: clamp_abs, out: logits, in: [m], value: 0.004}",
		EW_TOL,
	},
	{
		/* eight ops: the first dispatch takes four as its epilogue (the
		 * kernels' HALO_MAX_EPILOGUE), the fifth hosts the rest */
		.name = "unary_chain",
		.params = "H: {default: 37}\nvocab: {default: H}",
		.body = "- {op: scale, out: a, in: [x], value: 6.0}\n"
			"- {op: silu, out: b, in: [a]}\n"
			"- {op: softplus, out: c, in: [b]}\n"
			"- {op: neg, out: d, in: [c]}\n"
			"- {op: exp, out: e, in: [d]}\n"
			"- {op: clamp_max, out: f, in: [e], value: 0.1}\n"
			"- {op: clamp_abs, out: g, in: [f], value: 0.12}\n"
			"- {op: sigmoid, out: logits, in: [g]}",
		EW_TOL,
	},
	/* ---- normalisation ---- */
	{
		.name = "rms_norm",
		.params = "H: {default: 301}\nvocab: {default: H}",
		.weights = "g: {shape: [H]}",
		.body = "- {op: rms_norm, out: n, in: [x, g], eps: 1.0e-6, offset: 1}\n"
			"- {op: add, out: logits, in: [n, x]}",
		NORM_TOL,
	},
	{
		.name = "rms_norm_groups",
		.params = "H: {default: 96}\nvocab: {default: H}",
		.body = "- {op: rms_norm, out: n, in: [x], eps: 1.0e-6, group: 24}\n"
			"- {op: silu, out: logits, in: [n]}",
		NORM_TOL,
	},
	{
		/* Rows of 10240 in groups of 2560 (Qwen3.8 Flash's hyper-connection
		 * streams), made from the embedding by repeating it, averaged back
		 * over the copies for a small output. */
		.name = "rms_norm_wide",
		.params = "H: {default: 160}\nvocab: {default: H}",
		.weights = "g: {shape: [64 * H]}",
		.body = "- {op: reshape, out: x3, in: [x], shape: [T, 1, H]}\n"
			"- {op: repeat_heads, out: r3, in: [x3], r: 64}\n"
			"- {op: reshape, out: r, in: [r3], shape: [T, 64 * H]}\n"
			"- {op: rms_norm, out: n, in: [r, g], eps: 1.0e-6, offset: 1, group: 2560}\n"
			"- {op: reshape, out: n3, in: [n], shape: [T, 64, H]}\n"
			"- {op: reduce_mean, out: logits, in: [n3], axis: 1}",
		NORM_TOL,
	},
	{
		/* Rows of one element: every norm is then a sign (and softmax 1). */
		.name = "norms_d1",
		.params = "H: {default: 37}\nvocab: {default: H}",
		.body = "- {op: reshape, out: x3, in: [x], shape: [T, H, 1]}\n"
			"- {op: rms_norm, out: a, in: [x3], eps: 1.0e-6}\n"
			"- {op: l2_norm, out: b, in: [a]}\n"
			"- {op: softmax, out: c, in: [b]}\n"
			"- {op: add, out: d, in: [b, c]}\n"
			"- {op: reshape, out: logits, in: [d], shape: [T, H]}",
		NORM_TOL,
	},
	{
		.name = "l2_gated_norm",
		.params = "H: {default: 99}\nvocab: {default: H}",
		.weights = "t2: {shape: [vocab, H]}\nw: {shape: [33]}",
		.body = "- {op: embed, out: z, in: [t2, tokens]}\n"
			"- {op: reshape, out: x3, in: [x], shape: [T, 3, 33]}\n"
			"- {op: reshape, out: z3, in: [z], shape: [T, 3, 33]}\n"
			"- {op: l2_norm, out: n3, in: [x3]}\n"
			"- {op: gated_rms_norm, out: g3, in: [n3, z3, w], eps: 1.0e-6}\n"
			"- {op: scale, out: s3, in: [g3], value: 3.0}\n"
			"- {op: reshape, out: logits, in: [s3], shape: [T, H]}",
		NORM_TOL,
	},
	{
		.name = "softmax",
		.params = "H: {default: 301}\nvocab: {default: H}",
		.body = "- {op: scale, out: a, in: [x], value: 8.0}\n"
			"- {op: softmax, out: logits, in: [a]}",
		.tol = 1e-5,
		.floor = 3e-6,
		.why = "one f32 sum of H exponentials by a tree (f64 in ref) and a division; outputs are of order 1/H",
	},
	/* ---- matmul ---- */
	{
		.name = "matmul",
		.params = "H: {default: 96}\nvocab: {default: 77}",
		.weights = "w: {shape: [vocab, H]}",
		.body = "- {op: matmul, out: logits, in: [x, w]}",
		MATMUL_TOL,
	},
	{
		.name = "matmul_norm_prologue",
		.params = "H: {default: 130}\nvocab: {default: 45}",
		.weights = "g: {shape: [H]}\nw: {shape: [vocab, H]}",
		.body = "- {op: rms_norm, out: h, in: [x, g], eps: 1.0e-6}\n"
			"- {op: matmul, out: logits, in: [h, w]}",
		.tol = 2e-5,
		.floor = 1,
		.why = "f32 sums of K products (f64 in ref) of normed rows: outputs of order 1, a few f32 roundings of the scale",
	},
	{
		.name = "matmul_swiglu_pair",
		.params = "H: {default: 96}\nvocab: {default: 40}",
		.weights = "wg: {shape: [vocab, H]}\nwu: {shape: [vocab, H]}",
		.body = "- {op: matmul, out: g, in: [x, wg]}\n"
			"- {op: matmul, out: u, in: [x, wu]}\n"
			"- {op: swiglu, out: logits, in: [g, u]}",
		MATMUL_TOL,
	},
	{
		.name = "matmul_grouped",
		.params = "H: {default: 96}\nvocab: {default: 70}",
		.weights = "w: {shape: [vocab, H / 2]}",
		.body = "- {op: matmul, out: logits, in: [x, w], groups: 2}",
		MATMUL_TOL,
	},
	QUANT_CASE("matmul_q8_0", HALO_Q8_0, 96),
	QUANT_CASE("matmul_q4_k", HALO_Q4_K, 256),
	QUANT_CASE("matmul_f8e4m3_b128", HALO_F8E4M3_B128, 128),
	/* A draft head's vocabulary prefix (halo compile --draft-vocab): w's
	 * first vocab rows of 2 * vocab, whose scales follow all of them. The
	 * sum keeps the matmul from writing the graph's output, which would
	 * make w a head (q8_0 under --quant q4_k: codegen/quant_policy.c). */
	QUANT_CASE_OF("matmul_q8_0_w_rows", HALO_Q8_0, 96,
		      "- {op: matmul, out: a, in: [x, w], w_rows: vocab}\n- {op: add, out: logits, in: [a, a]}"),
	QUANT_CASE_OF("matmul_q4_k_w_rows", HALO_Q4_K, 256,
		      "- {op: matmul, out: a, in: [x, w], w_rows: vocab}\n- {op: add, out: logits, in: [a, a]}"),
	{
		.name = "matmul_w_rows",
		.params = "H: {default: 96}\nvocab: {default: 45}",
		.weights = "w: {shape: [70, H]}",
		.body = "- {op: matmul, out: logits, in: [x, w], w_rows: vocab}",
		MATMUL_TOL,
	},
	/* f16 weights, as the models' bundles store them (the cases above are
	 * f32): decode's matvec.comp and its cuda twin read them in 16-byte
	 * loads, prefill runs the cooperative-matrix matmul where the device has
	 * one. x is scaled by 1.1 first: the f16 embedding's rows are f16 values,
	 * and a kernel that rounded x to f16 would pass on those. */
	F16_CASE("matmul_f16", 256, 96, "w: {shape: [vocab, H]}", "- {op: matmul, out: logits, in: [xs, w]}"),
	{
		.name = "matmul_f16_norm_prologue",
		.params = "H: {default: 512}\nvocab: {default: 32}",
		.weights = "g: {shape: [H]}\nw: {shape: [vocab, H]}",
		.matrix = HALO_F16,
		.body = "- {op: rms_norm, out: h, in: [x, g], eps: 1.0e-6}\n"
			"- {op: matmul, out: logits, in: [h, w]}",
		.tol = 2e-5,
		.floor = 1,
		.why = "f32 sums of K products (f64 in ref) of normed rows: outputs of order 1, a few f32 roundings of"
		       " the scale",
		.prefill_tol = 2e-2,
		.prefill_why = "prefill on the matrix units rounds x to f16",
	},
	F16_CASE("matmul_f16_swiglu_pair", 96, 48, "wg: {shape: [vocab, H]}\nwu: {shape: [vocab, H]}",
		 "- {op: matmul, out: g, in: [xs, wg]}\n"
		 "- {op: matmul, out: u, in: [xs, wu]}\n"
		 "- {op: swiglu, out: logits, in: [g, u]}"),
	F16_CASE("matmul_f16_split", 128, 48, "w: {shape: [2 * vocab, H]}",
		 "- {op: matmul, out: [a, b], in: [xs, w], split: [vocab, vocab]}\n"
		 "- {op: add, out: logits, in: [a, b]}"),
	/* ---- rope ---- */
	{
		.name = "rope_neox_partial",
		.params = "H: {default: 96}\nvocab: {default: H}",
		.body = "- {op: reshape, out: x3, in: [x], shape: [T, 3, 32]}\n"
			"- {op: rope, out: r3, in: [x3], base: 10000.0, rot_dim: 16}\n"
			"- {op: reshape, out: logits, in: [r3], shape: [T, H]}",
		ROPE_TOL,
	},
	{
		.name = "rope_dsv4",
		.params = "H: {default: 96}\nvocab: {default: H}",
		.body = "- {op: reshape, out: x3, in: [x], shape: [T, 4, 24]}\n"
			"- {op: rope, out: r3, in: [x3], base: 160000.0, rot_dim: 8, layout: interleaved_tail, inverse: 1,\n"
			"   offset: -3, yarn_factor: 4.0, yarn_orig_ctx: 64}\n"
			"- {op: reshape, out: logits, in: [r3], shape: [T, H]}",
		ROPE_TOL,
	},
	{
		.name = "rope_norm_prologue",
		.params = "H: {default: 96}\nvocab: {default: H}",
		.weights = "g: {shape: [32]}",
		.body = "- {op: reshape, out: x3, in: [x], shape: [T, 3, 32]}\n"
			"- {op: rms_norm, out: n3, in: [x3, g], eps: 1.0e-6}\n"
			"- {op: rope, out: r3, in: [n3], base: 1000000.0}\n"
			"- {op: reshape, out: logits, in: [r3], shape: [T, H]}",
		ROPE_TOL,
	},
	/* ---- data movement ---- */
	{
		.name = "repeat_slice_concat",
		.params = "H: {default: 48}\nvocab: {default: 148}",
		.body = "- {op: reshape, out: x3, in: [x], shape: [T, 2, 24]}\n"
			"- {op: repeat_heads, out: r, in: [x3], r: 2}\n"
			"- {op: slice, out: s, in: [r], axis: 2, start: 5, len: 13}\n"
			"- {op: concat, out: c, in: [r, s], axis: 2}\n"
			"- {op: reshape, out: logits, in: [c], shape: [T, vocab]}",
		.why = "copies: the reference's bits",
	},
	{
		/* One table row (vocab 1): the rope makes each position's row
		 * differ. An i32 output makes the entries return ids
		 * (halo_session_tokens), compared as the output rows' bits. */
		.name = "argmax",
		.params = "H: {default: 301}\nvocab: {default: 1}",
		.body = "- {op: reshape, out: x3, in: [x], shape: [T, 1, H]}\n"
			"- {op: rope, out: r3, in: [x3], base: 100.0, rot_dim: 300}\n"
			"- {op: reshape, out: r2, in: [r3], shape: [T, H]}\n"
			"- {op: argmax, out: i, in: [r2]}\n"
			"- {op: reshape, out: logits, in: [i], shape: [T, vocab]}",
		.why = "ids: the reference's (the rope's f32 rounding cannot reorder random values this far apart)",
	},
	{
		/* A row of 4100 (N % 4 == 0): the 16-byte loads, a full round of
		 * unrolled loads on every lane and one lane's remainder chunk. */
		.name = "argmax_vec4",
		.params = "H: {default: 4100}\nvocab: {default: 1}",
		.body = "- {op: reshape, out: x3, in: [x], shape: [T, 1, H]}\n"
			"- {op: rope, out: r3, in: [x3], base: 100.0, rot_dim: 300}\n"
			"- {op: reshape, out: r2, in: [r3], shape: [T, H]}\n"
			"- {op: argmax, out: i, in: [r2]}\n"
			"- {op: reshape, out: logits, in: [i], shape: [T, vocab]}",
		.why = "ids: the reference's (as argmax)",
	},
	{
		/* embed zeroing position 0 (DeepSeek V4's MTP layer), its rows kept
		 * in a positional state, read back at the step's positions and one
		 * before (rows_at_pos: a row before 0 reads as zeros). */
		.name = "embed_rows_at_pos",
		.params = "H: {default: 37}\nvocab: {default: 74}",
		.weights = "t2: {shape: [vocab, H]}",
		.state = "hid: {shape: [n_ctx, H], kind: hidden}",
		.body = "- {op: embed, out: e, in: [t2, tokens], zero_pos0: 1}\n"
			"- {op: state_write, name: hid_store, state: hid, in: [e], at: pos}\n"
			"- {op: state_read, out: all, state: hid}\n"
			"- {op: rows_at_pos, out: now, in: [all]}\n"
			"- {op: rows_at_pos, out: prev, in: [all], offset: -1}\n"
			"- {op: concat, out: logits, in: [now, prev], axis: 1}",
		.why = "copies: the reference's bits",
	},
	/* ---- attention ---- */
	{
		.name = "attention_split",
		.params = "H: {default: 64}\nvocab: {default: 96}",
		.weights = "wq: {shape: [96, H]}\nwk: {shape: [48, H]}\nwv: {shape: [48, H]}",
		.state = "k_cache: {shape: [n_ctx, 2, 24], kind: kv}\nv_cache: {shape: [n_ctx, 2, 24], kind: kv}",
		.body = ATTENTION_BODY(4, 2, 24),
		ATTENTION_TOL,
	},
	{
		.name = "attention_odd",
		.params = "H: {default: 64}\nvocab: {default: 63}",
		.weights = "wq: {shape: [63, H]}\nwk: {shape: [21, H]}\nwv: {shape: [21, H]}",
		.state = "k_cache: {shape: [n_ctx, 1, 21], kind: kv}\nv_cache: {shape: [n_ctx, 1, 21], kind: kv}",
		.n_ctx = 40, /* one block of keys: attention unsplit */
		.sweep = "attention",
		.body = ATTENTION_BODY(3, 1, 21),
		ATTENTION_TOL,
	},
	{
		/* DeepSeek V4's compressed sparse attention as it composes
		 * (tests/models/dsv4_attention.yaml without the norms and ropes):
		 * per-token compressor caches pooled one entry per closed window of
		 * m = 4 (overlapping windows), the indexer's top-2 of its own
		 * entries, and sink_attention over the window alone, every entry
		 * (HCA) and the indexer's picks (CSA). */
		.name = "dsv4_sparse_attention",
		.params = "H: {default: 48}\nvocab: {default: 96}\nD: {default: 24}\nm: {default: 4}\ndI: {default: 16}",
		.weights = "wq: {shape: [4 * D, H]}\nwkv: {shape: [D, H]}\nc_kv: {shape: [2 * D, H]}\n"
			   "c_gate: {shape: [2 * D, H]}\nc_bias: {shape: [m, 2 * D]}\ni_kv: {shape: [2 * dI, H]}\n"
			   "i_gate: {shape: [2 * dI, H]}\ni_bias: {shape: [m, 2 * dI]}\ni_q: {shape: [2 * dI, H]}\n"
			   "i_w: {shape: [2, H]}\nsinks: {shape: [4]}",
		.state = "kv_cache: {shape: [n_ctx, D], kind: kv}\nc_c: {shape: [n_ctx, 2 * D], kind: kv}\n"
			 "c_z: {shape: [n_ctx, 2 * D], kind: kv}\nentries: {shape: [n_ctx / m, D], kind: kv}\n"
			 "i_c: {shape: [n_ctx, 2 * dI], kind: kv}\ni_z: {shape: [n_ctx, 2 * dI], kind: kv}\n"
			 "keys: {shape: [n_ctx / m, dI], kind: kv}",
		.sweep = "compress_kv index_topk sink_attention",
		.body = "- {op: matmul, out: qf, in: [x, wq]}\n"
			"- {op: reshape, out: q, in: [qf], shape: [T, 4, D]}\n"
			"- {op: matmul, out: kv, in: [x, wkv]}\n"
			"- {op: state_write, name: kv_store, state: kv_cache, in: [kv], at: pos}\n"
			"- {op: matmul, out: cc, in: [x, c_kv]}\n"
			"- {op: matmul, out: cz, in: [x, c_gate]}\n"
			"- {op: state_write, name: cc_store, state: c_c, in: [cc], at: pos}\n"
			"- {op: state_write, name: cz_store, state: c_z, in: [cz], at: pos}\n"
			"- {op: state_read, out: c_all, state: c_c}\n"
			"- {op: state_read, out: z_all, state: c_z}\n"
			"- {op: compress_kv, out: pooled, in: [c_all, z_all, c_bias], ratio: m, overlap: 1}\n"
			"- {op: state_write, name: entry_store, state: entries, in: [pooled], at: pos, every: m}\n"
			"- {op: matmul, out: ic, in: [x, i_kv]}\n"
			"- {op: matmul, out: iz, in: [x, i_gate]}\n"
			"- {op: state_write, name: ic_store, state: i_c, in: [ic], at: pos}\n"
			"- {op: state_write, name: iz_store, state: i_z, in: [iz], at: pos}\n"
			"- {op: state_read, out: ic_all, state: i_c}\n"
			"- {op: state_read, out: iz_all, state: i_z}\n"
			"- {op: compress_kv, out: ikey, in: [ic_all, iz_all, i_bias], ratio: m, overlap: 1}\n"
			"- {op: state_write, name: key_store, state: keys, in: [ikey], at: pos, every: m}\n"
			"- {op: matmul, out: iqf, in: [x, i_q]}\n"
			"- {op: reshape, out: iq, in: [iqf], shape: [T, 2, dI]}\n"
			"- {op: matmul, out: iw, in: [x, i_w]}\n"
			"- {op: state_read, out: key_all, state: keys}\n"
			"- {op: index_topk, out: picks, in: [iq, iw, key_all], k: 2, ratio: m, scale: 0.25}\n"
			"- {op: state_read, out: kv_all, state: kv_cache}\n"
			"- {op: state_read, out: entry_all, state: entries}\n"
			"- {op: sink_attention, out: a_win, in: [q, kv_all, sinks], scale: 0.2, window: 6}\n"
			"- {op: sink_attention, out: a_hca, in: [q, kv_all, sinks, entry_all], scale: 0.2, window: 6, ratio: m}\n"
			"- {op: sink_attention, out: a_csa, in: [q, kv_all, sinks, entry_all, picks], scale: 0.2, window: 6,\n"
			"   ratio: m}\n"
			"- {op: add, out: a2, in: [a_win, a_hca]}\n"
			"- {op: add, out: a3, in: [a2, a_csa]}\n"
			"- {op: reshape, out: logits, in: [a3], shape: [T, vocab]}",
		.tol = 2e-5,
		.floor = 1e-2,
		.why = "f32 score dots and softmax sums (f64 in ref) over convex combinations of keys; the indexer's "
		       "scores on random keys leave no two picks within rounding",
	},
	{
		/* Qwen4-Exp's QSA: the indexer's block mask over the cache, then
		 * attention over the masked keys. */
		.name = "qsa_masked_attention",
		.params = "H: {default: 48}\nvocab: {default: 64}",
		.weights = "wq: {shape: [64, H]}\nwk: {shape: [32, H]}\nwv: {shape: [32, H]}\nwi: {shape: [16, H]}\n"
			   "k_norm: {shape: [16]}",
		.state = QSA_STATE("2"),
		.sweep = "qsa_select_blocks masked_attention_blocks",
		.body = QSA_BODY("4", "2", "4", "2"),
		ATTENTION_TOL,
	},
	{
		/* The indexer's selection over many blocks: blocks of one row and
		 * up to 80 of them, so that the lanes' runs of picked[] words and
		 * their counts before each run are exercised, and one head, so
		 * that about half the scores are relu's exact zeros: the 40 kept
		 * cut through equal scores, kept by lower index. */
		.name = "qsa_select_ties",
		.params = "H: {default: 48}\nvocab: {default: 16}",
		.weights = "wq: {shape: [16, H]}\nwk: {shape: [16, H]}\nwv: {shape: [16, H]}\nwi: {shape: [16, H]}\n"
			   "k_norm: {shape: [16]}",
		.state = QSA_STATE("1"),
		.t_prefill = 64,
		.n_ctx = 96,
		.sweep = "qsa_select_blocks",
		.body = QSA_BODY("1", "1", "1", "40"),
		ATTENTION_TOL,
	},
	/* ---- recurrent ---- */
	{
		.name = "conv1d_causal",
		.params = "H: {default: 37}\nvocab: {default: H}",
		.weights = "cw: {shape: [H, 4]}",
		.state = "conv: {shape: [3, H], kind: conv}",
		.body = "- {op: state_read, out: c0, state: conv}\n"
			"- {op: conv1d_causal, out: [logits, c1], in: [x, c0, cw], act: silu}\n"
			"- {op: state_write, name: conv_store, state: conv, in: [c1]}",
		CONV_TOL,
	},
	{
		.name = "conv1d_dilated",
		.params = "H: {default: 37}\nvocab: {default: H}",
		.weights = "cw: {shape: [H, 3]}",
		.state = "conv: {shape: [4, H], kind: conv}",
		.body = "- {op: state_read, out: c0, state: conv}\n"
			"- {op: conv1d_dilated, out: [logits, c1], in: [x, c0, cw], dilation: 2}\n"
			"- {op: state_write, name: conv_store, state: conv, in: [c1]}",
		CONV_TOL,
	},
	{
		.name = "gated_delta_rule",
		.params = "H: {default: 48}\nvocab: {default: 48}",
		.weights = "wq: {shape: [32, H]}\nwk: {shape: [32, H]}\nwv: {shape: [48, H]}\nwg: {shape: [4, H]}\n"
			   "wb: {shape: [4, H]}",
		.state = "ssm: {shape: [4, 16, 12], kind: ssm}",
		.sweep = "l2_norm gated_delta_rule",
		.body = "- {op: matmul, out: qf, in: [x, wq]}\n"
			"- {op: matmul, out: kf, in: [x, wk]}\n"
			"- {op: matmul, out: vf, in: [x, wv]}\n"
			"- {op: matmul, out: gl, in: [x, wg]}\n"
			"- {op: matmul, out: bl, in: [x, wb]}\n"
			"- {op: reshape, out: q3, in: [qf], shape: [T, 2, 16]}\n"
			"- {op: reshape, out: k3, in: [kf], shape: [T, 2, 16]}\n"
			"- {op: reshape, out: v3, in: [vf], shape: [T, 4, 12]}\n"
			"- {op: l2_norm, out: qn, in: [q3]}\n"
			"- {op: l2_norm, out: kn, in: [k3]}\n"
			"- {op: sigmoid, out: beta, in: [bl]}\n"
			"- {op: softplus, out: sp, in: [gl]}\n"
			"- {op: neg, out: g, in: [sp]}\n"
			"- {op: state_read, out: s0, state: ssm}\n"
			"- {op: gated_delta_rule, out: [o, s1], in: [qn, kn, v3, g, beta, s0], scale: 0.25}\n"
			"- {op: state_write, name: ssm_store, state: ssm, in: [s1]}\n"
			"- {op: reshape, out: logits, in: [o], shape: [T, vocab]}",
		.tol = 2e-5,
		.floor = 1e-2,
		.why = "f32 dots of dk terms in order (f64 in ref), GPU exp in the decay, each step mixing the last back in",
	},
	/* ---- routing and experts ---- */
	{
		.name = "moe_softmax",
		.params = "H: {default: 40}\nvocab: {default: H}",
		.weights = MOE_WEIGHTS("6", "24"),
		.sweep = "moe_route moe_gate_up moe_down",
		.body = MOE_SOFTMAX_BODY("logits"),
		MOE_TOL,
	},
	{
		.name = "moe_dsv4",
		.params = "H: {default: 40}\nvocab: {default: H}",
		.weights = "router: {shape: [6, H]}\nbias: {shape: [6]}\ngate: {shape: [6, 24, H]}\n"
			   "up: {shape: [6, 24, H]}\ndown: {shape: [6, H, 24]}",
		.sweep = "moe_route moe_gate_up moe_down",
		.body = "- {op: matmul, out: rl, in: [x, router]}\n"
			"- {op: moe_route, out: [ids, wts], in: [rl, bias], k: 3, scoring: sqrtsoftplus, scaling: 1.5}\n"
			"- {op: moe_experts, out: logits, in: [x, ids, wts, gate, up, down], limit: 0.01}",
		MOE_TOL,
	},
	{
		/* Rows long enough that the expert kernels' lanes take several
		 * 16-byte chunks each, the last round partial (moe_down's loads
		 * in rounds: codegen's CPR): moe_gate_up's rows of H = 1040 are
		 * 130 chunks (4 for each of 32 lanes and 2 more), moe_down's of
		 * F = 528 (the next case) 66. Each case keeps the other dimension
		 * small, and this one compares 8 columns of the output (each sums
		 * every moe_gate_up row it routes to) over an 8-token vocabulary:
		 * the weights travel to the GPU machine (tools/gpu/pack.sh). */
		.name = "moe_rounds_gate_up",
		.params = "H: {default: 1040}\nvocab: {default: 8}",
		.weights = MOE_WEIGHTS("3", "24"),
		.sweep = "moe_gate_up moe_down",
		.body = MOE_SOFTMAX_BODY("y") "\n"
			"- {op: slice, out: logits, in: [y], axis: 1, start: 0, len: vocab}",
		MOE_TOL,
	},
	{
		.name = "moe_rounds_down",
		.params = "H: {default: 40}\nvocab: {default: H}",
		.weights = MOE_WEIGHTS("3", "528"),
		.sweep = "moe_gate_up moe_down",
		.body = MOE_SOFTMAX_BODY("logits"),
		MOE_TOL,
	},
	{
		/* DeepSeek V4's hash layers: the experts from a frozen token table
		 * (random weights draw its ids below the expert count). */
		.name = "moe_hash",
		.params = "H: {default: 40}\nvocab: {default: H}",
		.weights = "router: {shape: [6, H]}\ntable: {shape: [vocab, 2]}\ngate: {shape: [6, 24, H]}\n"
			   "up: {shape: [6, 24, H]}\ndown: {shape: [6, H, 24]}",
		.sweep = "moe_route_hash moe_gate_up moe_down",
		.body = "- {op: matmul, out: rl, in: [x, router]}\n"
			"- {op: moe_route_hash, out: [ids, wts], in: [rl, table, tokens], scoring: sqrtsoftplus}\n"
			"- {op: moe_experts, out: logits, in: [x, ids, wts, gate, up, down]}",
		MOE_TOL,
	},
	{
		/* Experts in q8_0 (--quant): the kernels dequantize to the
		 * reference's values and sum in f32 as for f32 weights. */
		.name = "moe_q8_0",
		.params = "H: {default: 64}\nvocab: {default: H}",
		.weights = MOE_WEIGHTS("6", "32"),
		.quant = HALO_Q8_0,
		.sweep = "moe_route moe_gate_up moe_down",
		.body = MOE_SOFTMAX_BODY("logits"),
		MOE_TOL,
	},
	/* ---- DeepSeek V4 ---- */
	{
		.name = "hc_weights_collapse_expand",
		.params = "H: {default: 96}\nvocab: {default: H}",
		.weights = "fn: {shape: [24, H]}\nbase: {shape: [24]}\nscale: {shape: [3]}",
		.sweep = "rms_norm hc_weights hc_collapse hc_expand",
		.body = "- {op: rms_norm, out: xn, in: [x], eps: 1.0e-6}\n"
			"- {op: matmul, out: mix, in: [xn, fn]}\n"
			"- {op: hc_weights, out: [pre, post, comb], in: [mix, base, scale]}\n"
			"- {op: reshape, out: x3, in: [x], shape: [T, 4, 24]}\n"
			"- {op: hc_collapse, out: c, in: [x3, pre]}\n"
			"- {op: hc_expand, out: o3, in: [x3, c, post, comb]}\n"
			"- {op: reshape, out: logits, in: [o3], shape: [T, H]}",
		.tol = 2e-5,
		.floor = 1e-2,
		.why = "the mHC weights' sigmoids and 39 normalisations in f32 (ref: f64 sums), then n-term f32 sums",
	},
	/* ---- Qwen4-Exp ---- */
	{
		/* A sublayer's exit read by a per-stream norm (hc_inject_norm,
		 * passes/fuse_inject_norm.c), the streams read after it too */
		.name = "hc_inject_norm",
		.params = "H: {default: 96}\nvocab: {default: 128}",
		.weights = "wy: {shape: [32, H]}\nwg: {shape: [3, H]}\nnw: {shape: [H]}",
		.sweep = "hc_inject_norm",
		.body = "- {op: matmul, out: y, in: [x, wy]}\n"
			"- {op: matmul, out: g, in: [x, wg]}\n"
			"- {op: reshape, out: x3, in: [x], shape: [T, 3, 32]}\n"
			"- {op: hc_inject, out: s3, in: [x3, y, g]}\n"
			"- {op: reshape, out: s, in: [s3], shape: [T, H]}\n"
			"- {op: rms_norm, out: n, in: [s, nw], eps: 1.0e-6, offset: 1, group: 32}\n"
			"- {op: reshape, out: n3, in: [n], shape: [T, 3, 32]}\n"
			"- {op: reduce_mean, out: m, in: [n3], axis: 1}\n"
			"- {op: concat, out: logits, in: [m, s], axis: 1}",
		.tol = 2e-5,
		.floor = 1e-2,
		.why = "the gates' f32 dots of H terms (f64 in ref), one f32 sum of squares a stream by a tree, a mean of 3",
	},
	{
		.name = "reduce_mean_signed_sqrt",
		.params = "H: {default: 96}\nvocab: {default: 32}",
		.body = "- {op: reshape, out: x3, in: [x], shape: [T, 3, 32]}\n"
			"- {op: reduce_mean, out: m, in: [x3], axis: 1}\n"
			"- {op: signed_sqrt, out: logits, in: [m]}",
		.tol = 1e-5,
		.floor = 1e-2,
		.why = "a mean of 3 f32 terms (f64 in ref) and one sqrt",
	},
};

const int op_case_count = (int)(sizeof(op_cases) / sizeof(op_cases[0]));
