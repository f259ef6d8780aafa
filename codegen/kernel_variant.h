/* Kernel variants: one node's kernel, instantiated ahead of time from the
 * kernels/vulkan templates (kernels/vulkan/README.md has the ABI).
 *
 * A kv_desc says what the kernel computes: the op, its compile-time dims, the
 * largest token count T of a dispatch, the weight dtype, a fused rms_norm
 * prologue, a chain of up to KV_MAX_EPILOGUE fused elementwise ops, and tile
 * parameters (0 = the default). kernel_variant_build() plans it from the op's
 * row of one table (template, bindings, fusion allowed, dims checks, tile
 * space; the plan is target-neutral: codegen/kernel_plan.h) and emits it
 * (codegen/emit_glsl.h) as a kv_kernel: GLSL source, a stable signature
 * naming the variant (the tuning-database key), the workgroup size, the
 * workgroup count as a function of T, the push-constant size and the binding
 * count.
 *
 * Operand bindings (set 0): the op's inputs in docs/ops.md order, then the
 * prologue's norm weight, then each binary epilogue's extra operand in chain
 * order, then the outputs (with `steps`, the states after each token last).
 * state_write binds (v, state).
 */
#ifndef HALO_KERNEL_VARIANT_H
#define HALO_KERNEL_VARIANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "kernels/dtype.h"
#include "kernels/device_features.h"
#include "kernels/op_table.h"
#include "runtime/drivers/ref/ref_ops.h"

#define KV_MAX_EPILOGUE HALO_MAX_EPILOGUE
/* The most results of a split matmul (passes/merge_matmuls.c). */
#define KV_MAX_SPLIT 4
/* The decode matrix-vector kernel serves dispatches of at most this many rows. */
#define KV_MATVEC_MAX_T 8
/* ngram_embed: the most orders and heads the op allows (ngram <= 16, heads_per_ngram <= 64). */
#define KV_NGRAM_MAX 16
#define KV_NGRAM_MAX_HEADS (15 * 64)

/* moe_route's scores (docs/ops.md, `scoring`). */
typedef enum { KV_SCORE_SOFTMAX, KV_SCORE_SIGMOID, KV_SCORE_SQRTSOFTPLUS } kv_scoring;

/* How a binary op's second operand is indexed for element i of the running
 * value (docs/ops.md): FULL b[i]; TRAILING b[i % n] (b is the trailing dims,
 * n = numel(b)); LASTDIM b[i / n] (b has last dim 1, n = the value's last dim). */
typedef enum { KV_BCAST_FULL, KV_BCAST_TRAILING, KV_BCAST_LASTDIM } kv_bcast;

/* One elementwise op of a chain. */
typedef struct {
	ir_op op;        /* SILU SIGMOID SOFTPLUS EXP NEG SCALE | ADD SUB MUL SWIGLU */
	float value;     /* SCALE's factor */
	int operand;     /* binary: side taken by the running value, 0 (a/gate) or 1 (b/up) */
	kv_bcast bcast;  /* binary: indexing of the other operand */
	int64_t bcast_n; /* TRAILING / LASTDIM: the n above */
} kv_elem_op;

/* rms_norm fused before a matmul over the whole K row: x' = x * (mean(x^2) +
 * eps)^-1/2 * (w + offset), w [K] f32; folded, x' = x * (mean(x^2) +
 * eps)^-1/2 and the matrix's columns already carry w + offset. */
typedef struct {
	bool on;
	bool folded; /* the norm weight is folded into the matrix: no B_NW operand */
	float eps;
	int offset;
} kv_prologue;

/* Tile parameters; 0 picks the default (in parentheses). Power-of-two sizes.
 * matvec: local lanes per workgroup, split lanes per column group (they
 * share the K loop of its columns), cols columns per column group, unroll
 * 16-byte weight loads in flight per lane and column, tree (0: subgroup
 * shuffles, needs HALO_NEED_SUBGROUP_SHUFFLE; 1: a shared-memory tree), grow
 * (1: cols doubles at T = 2 and again at T >= 3, up to 8; bitwise the same
 * sums), qw (quantized weights only: a lane's load is qw 32-bit words of a
 * row, 1, 2 or 4; the weights' scales apply once per load, so qw changes the
 * sums' rounding as split does); all-zero tiles are the built-in heuristic's for the shape
 * (kv_variant_space), zero sizes among set ones take its sizes.
 * matmul: bm, bn (32), bk (16), tm, tn (2): tile and per-lane outputs;
 * coopmat 1 takes the cooperative-matrix kernel instead (f16 or quantized weights,
 * needs HALO_NEED_COOPMAT_NV): bm, bn (64) the workgroup tile, bk (32) the K
 * step, tm, tn (32) the rows and columns of y each 32-lane subgroup owns,
 * all multiples of 16.
 * gated_delta_rule: local value columns per workgroup (recurrent: 64; chunked: the
 * widest of 16, 8, ... whose tile fits 32 KiB of shared memory).
 * sink_attention: local (256) lanes, cols heads per workgroup (the largest
 * power of two <= 4 dividing h), bk keys per chunk (the largest power of two
 * <= 16 that fits). index_topk: local lanes (512 with t_max <= 8, else 256),
 * cols heads per q stage (16, at most h), bk keys per chunk (a power of two
 * >= k and >= local; the larger of the two powers); index_select the same
 * lanes and bk; index_score local lanes (the largest power of two <= 128
 * and <= the block), cols heads per q stage (16 halved while the block's
 * keys per lane times it pass 64 accumulators).
 * others: local (64; elementwise, embed, rope, copies, conv1d, moe_experts 256). */
typedef struct {
	uint32_t local;
	uint32_t split;
	uint32_t cols;
	uint32_t unroll;
	uint32_t tree;
	uint32_t grow;
	uint32_t bm, bn, bk, tm, tn;
	uint32_t coopmat; /* matmul: 1 = matmul_coopmat.comp on the matrix units, 0 = matmul.comp */
	uint32_t qw;      /* matvec, quantized weights: 32-bit words per lane load (1, 2, 4) */
	/* matvec with int8 activations (xq): 1 = the four-byte dot products in
	 * 32-bit integer operations, for devices without OpSDot (needs no
	 * int_dot); exact either way, so the same bits */
	uint32_t dot_emul;
} kv_tiles;

typedef struct {
	ir_op op;
	int64_t t_max;     /* largest T of any dispatch; matmul uses matvec when <= 8 */
	/* embed table, matmul, conv1d and expert weights: HALO_F32 or HALO_F16;
	 * matmul and the experts also HALO_Q8_0, HALO_Q4_K, HALO_F8E4M3_B128 and HALO_MXFP4
	 * (runtime/drivers/ref/quant.h: the weight binding starts at the tensor's first
	 * byte, its values region; the kernel finds the scales region from its
	 * dims) */
	halo_dtype wtype;
	union {
		struct { int64_t V, H; bool zero_pos0; } embed;     /* (table, ids) -> y */
		/* (x[a*T,K], w[N,K]) -> y[a*T,N]: rows_per_t a rows per token (0 or
		 * 1: one; hyper-connection streams are several); matvec when a*t_max
		 * <= KV_MATVEC_MAX_T */
		/* split (n_split >= 2): the N columns are n_split results of
		 * split[i] columns each, in that order (no epilogue); pair: w's
		 * rows are (gate, up) pairs and the one result, of N / 2 columns,
		 * is silu(gate) * up (kernels/vulkan/matmul_out.glsl); groups g
		 * (0 or 1: none): x is [a*T, g*K] and column n reads x's group
		 * n / (N/g) (DeepSeek V4's block-diagonal o_a_proj; no split, pair
		 * or prologue); w_rows (0: N): the weight tensor's rows when the
		 * matmul reads its first N alone (a draft head's vocabulary
		 * prefix): a quantized tensor's scales follow all of them; xq
		 * (0: none): 8 rounds x to int8 activations per block of 32
		 * (docs/quantization.md; matvec on q8_0 and q4_k weights) */
		struct {
			int64_t K, N, rows_per_t, w_rows;
			int n_split;
			int64_t split[KV_MAX_SPLIT];
			bool pair;
			int64_t groups;
			int xq;
		} matmul;
		/* (x, w) -> y; unweighted (x) -> y, offset 0. HC_INJECT_NORM (x[T,n,H],
		 * iy[T,H], post[T,n], w) -> (sum, y), both [T,n*H]: rows_per_t 1, D
		 * n*H, group H, inject set */
		struct { int64_t rows_per_t, D, group; float eps; int offset; bool unweighted, inject; } rms_norm;
		/* (x[T,heads,D]) -> y: p holds rot_dim, base and the rest of the
		 * op's attributes (docs/ops.md) */
		struct { int64_t heads, D; ref_rope_params p; } rope;
		/* (q, k, v) -> y; MASKED_ATTENTION (q, k, v, mask[T,C]); ATTENTION_PARTIAL
		 * (q, k, v) -> part[T,hq,blocks,dv+2], blocks of `block` keys;
		 * ATTENTION_BLOCKS (q, k, v, sync[sync_rows,hq]) -> (y, part);
		 * ATTENTION_COMBINE (part) -> y: hq, dv and blocks only;
		 * ATTENTION_ROPE (q, k, v, sync, k_new, q_norm, k_norm) -> (y,
		 * part, k_out): BLOCKS' dims, rope the heads' rotation,
		 * norm_eps and norm_offset their rms_norm */
		struct {
			int64_t hq, hk, D, dv, C;
			float scale;
			int64_t block, blocks, sync_rows;
			ref_rope_params rope;
			float norm_eps;
			int norm_offset;
		} attention;
		struct { int64_t rows_per_t, D; } softmax;          /* (x) -> y */
		/* (a[, b]) -> y: main is the node's own op; main.operand must be 0 */
		struct { ir_dim numel; kv_elem_op main; } elementwise;
		struct { int64_t N; } argmax;                       /* (x) -> ids */
		/* SLICE, REPEAT_HEADS, STATE_WRITE, ROWS_AT_POS: (src) -> dst,
		 * copy_rows.comp. from_pos: source rows start at pos + pos_offset
		 * and rows outside [0, src_rows) read as zeros. every (> 0, with
		 * at_pos): row r goes to row (pos + r + 1) / every - 1 when it
		 * closes a window of that many, else nowhere (state_write's every).
		 * ring (> 0, with at_pos): row r goes to row (pos + r) mod ring
		 * (state_write's ring: the state holds the last `ring` positions). */
		struct {
			ir_dim rows;
			int64_t width, src_stride, src_offset, dst_stride, dst_offset, rep;
			bool at_pos, from_pos;
			int64_t src_rows, pos_offset, every, ring;
		} copy;
		struct { ir_dim rows, wa, wb; } concat;              /* (a, b) -> y */
		/* L2_NORM (x) -> y, GATED_RMS_NORM (x, z, w) -> y: rows_per_t rows of
		 * D per token, w [D] f32 */
		struct { int64_t rows_per_t, D; float eps; } norm;
		/* (x[T,C], state[K-1,C], w[C,K]) -> (y[T,C], new_state[K-1,C]); w has
		 * dtype wtype; new_state must not alias state (rows are copied in parallel) */
		struct { int64_t C, K; bool silu; } conv1d;
		/* (q, k [T,hk,dk], v [T,hv,dv], g, beta [T,hv], S [hv,dk,dv]) -> (o [T,hv,dv],
		 * S' [hv,dk,dv]); S' must not alias S. Recurrent kernel for t_max <= KV_MATVEC_MAX_T
		 * or with steps, chunked (64 tokens) otherwise. */
		struct { int64_t hk, hv, dk, dv; float scale; } gdr;
		/* TOPK (x[T,N]) -> (ids[T,k] i32, vals[T,k]); MOE_ROUTE (logits[T,N]
		 * [, bias[N] f32 when bias]) -> (ids[T,k] i32, w[T,k]), N = E experts,
		 * norm = the norm_topk attr, scoring, scaling (0 or 1: none);
		 * MOE_ROUTE_HASH (logits[T,N], table[V,k] of dtype wtype, tokens[T]
		 * i32) -> (ids, w): the experts from the table, the weights as
		 * MOE_ROUTE's (no bias) */
		struct {
			int64_t N, k;
			bool norm;
			kv_scoring scoring;
			bool bias;
			float scaling;
			int64_t V;
		} topk;
		/* MOE_GATE_UP (x[T,H], ids[T,k] i32, gate[E,F,H], up[E,F,H]) ->
		 * act[T,k,F], clamped first by limit when > 0 (DeepSeek V4's
		 * swiglu_limit); MOE_DOWN (act, ids, w[T,k], down[E,H,F]) -> y[T,H];
		 * gate/up/down have dtype wtype */
		struct { int64_t H, F, E, k; float limit; } moe;
		/* REDUCE_MEAN: x viewed as [outer, n, inner] -> y [outer, inner]; outer
		 * may depend on T, n and inner may not */
		struct { ir_dim outer; int64_t n, inner; } reduce;
		/* SIGNED_SQRT (x) -> y, numel elements */
		struct { ir_dim numel; float eps; } signed_sqrt;
		/* (x[T,C], state[(K-1)*dilation,C], w[C,K]) -> (y[T,C], state'); w has
		 * dtype wtype; state' must not alias state */
		struct { int64_t C, K, dilation; bool silu; } conv_dilated;
		/* (table[rows,dp], ids[T] i32, hist[ngram-1]) -> (y[T,heads*dp], hist'[ngram-1]),
		 * heads = (ngram-1)*hpn; table has dtype wtype; hist' must not alias hist.
		 * mult: the ngram hash multipliers, size: each head's prime table size
		 * (< 2^31), both from ref_ngram_multipliers / ref_ngram_tables; the
		 * heads' row offsets are the running sums of size. */
		struct {
			int64_t ngram, hpn, eos, vocab, rows, dp;
			uint64_t mult[KV_NGRAM_MAX];
			uint32_t size[KV_NGRAM_MAX_HEADS];
		} ngram;
		/* (q[T,h,D], keys[C,D], k_norm[D] f32) -> mask[T,C] f32: block = c, top =
		 * top_blocks, rot_dim, base and eps of the block keys' norm and rope */
		/* QSA_SELECT_BLOCKS: also sync[sync_rows,1] */
		struct { int64_t h, D, C, block, top, rot_dim, sync_rows; float base, eps; } qsa;
		/* COMPRESS_KV (c[N,w*D], z[N,w*D], bias[ratio,w*D]) -> y[T,D], w = 1 + overlap;
		 * position q is row q mod N of c and z */
		struct { int64_t N, D, ratio; bool overlap; } compress;
		/* INDEX_TOPK (q[T,h,d], w[T,h], keys[E,d]) -> ids[T,k] i32: the keys
		 * e < min((pos+t+1)/ratio, E) scored, the best k, then -1.
		 * INDEX_SCORE (the same operands) -> scores[T,E] over blocks of
		 * `block` keys (k unused); INDEX_SELECT (scores[T,E]) -> ids[T,k]
		 * (h, d, scale and block unused) */
		struct { int64_t h, d, E, k, ratio, block; float scale; } index;
		/* SINK_ATTENTION (q[T,h,D], kv[N,D], sinks[h]) -> y[T,h,D]; with E > 0
		 * also entries[E,D] (ratio m), with k > 0 also ids[T,k] i32;
		 * position j is row j mod N of kv. SINK_ATTENTION_PARTIAL (the
		 * same operands) -> part[T,h,blocks,D+2] over blocks of `block` keys */
		struct { int64_t h, D, N, E, k, window, ratio, block, blocks; float scale; } sink;
		/* DeepSeek V4's mHC, n streams, all f32. HC_WEIGHTS (mix[T,M],
		 * base[M], scale[3]) -> (pre[T,n], post[T,n], comb[T,n,n]) with M =
		 * (2+n)*n when full, else (mix[T,n], base[n], scale[1]) -> pre;
		 * iters, eps: the attrs. HC_COLLAPSE (x[T,n,H], pre[T,n]) -> y[T,H];
		 * HC_EXPAND (x[T,n,H], y[T,H], post[T,n], comb[T,n,n]) -> [T,n,H] */
		struct { int64_t n, H, iters; float eps; bool full; } hc;
	} u;
	/* conv1d_causal, conv1d_dilated, gated_delta_rule, ngram_embed: a third
	 * output, the op's state after each token, [T, ...state shape] f32
	 * (IR_OPF_STEPS; row t is the new state had the step ended after token t) */
	bool steps;
	kv_prologue pro;   /* matmul only */
	/* matmul and rope: bit i set when output i is stored from row pos of
	 * its binding, a state's rows (a KV-cache write fused into the
	 * producer, passes/fuse_state_store.c); one row per token */
	uint32_t out_at_pos;
	int n_epi;
	kv_elem_op epi[KV_MAX_EPILOGUE]; /* matmul, rms_norm, l2_norm, gated_rms_norm, rope,
					  attention, softmax, elementwise */
	kv_tiles tiles;
} kv_desc;

/* groups = ceil((a * T + b) / d); d > 0. */
typedef struct {
	int64_t a, b, d;
} kv_groups;

typedef struct {
	char *source;        /* GLSL, malloc'd */
	/* The HIP-dialect source for the hip and cuda targets (malloc'd), or
	 * NULL when the template has no twin under kernels/hip yet. */
	char *hip;
	/* What the kernel computes, for a tuning database: the op, its dims,
	 * dtypes, fused ops and t_max, not the tiles (malloc'd). Variants of
	 * one descriptor that differ only in tiles share the key. */
	char *key;
	char *tile;          /* the tile parameters, e.g. "ls128,sp32,nc2" ("" for none; malloc'd) */
	char *signature;     /* key + " tile=" + tile, e.g. "matvec K=64 N=96 w=f16 ... tmax=8 tile=ls32,nc1,v8" (malloc'd) */
	uint32_t needs;      /* HALO_NEED_* bits (kernels/device_features.h): device features it requires */
	const char *template_name; /* static, e.g. "matvec.comp" */
	uint32_t local_size[3];
	kv_groups groups[3];
	uint32_t push_size;  /* bytes: uint T, uint pos */
	uint32_t n_bindings;
} kv_kernel;

/* Builds the variant; false with a message in err (errlen bytes) when the
 * descriptor is invalid or unsupported. On success the caller owns *out
 * (kv_kernel_free). On failure *out holds nothing. */
bool kernel_variant_build(const kv_desc *d, kv_kernel *out, char *err, size_t errlen);
void kv_kernel_free(kv_kernel *k);

/* The variant space of a descriptor: writes up to max tile choices that
 * kernel_variant_build accepts for d (d->tiles ignored) into out, the
 * built-in heuristic's choice first, and returns how many. Ops without a
 * tunable space give one choice, the defaults (all zero). Deterministic. */
int kv_variant_space(const kv_desc *d, kv_tiles *out, int max);

/* The workgroup count of dimension `axis` for a dispatch of T tokens. */
uint32_t kv_groups_eval(const kv_kernel *k, int axis, int64_t T);

#endif
