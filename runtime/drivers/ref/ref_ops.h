/* The CPU reference ops: the definition of every op's semantics (docs/ops.md).
 *
 * Conventions shared by every function here:
 * - Tensors are f32, row-major, last dim fastest, passed as raw pointers with
 *   explicit dims; ids are i32. f16/bf16 weights are converted to f32 first
 *   (runtime/drivers/ref/half.h), so a kernel reading f16 weights is compared against
 *   these functions on the same rounded values.
 * - Float math is f32; reductions (dot products, sums of squares, softmax
 *   denominators) accumulate in f64 in a fixed order and are rounded to f32
 *   once at the end.
 * - Outputs never alias inputs unless a function says so. Nothing here
 *   allocates memory that outlives a call; the caller owns every buffer.
 * - Functions that can meet bad runtime data (an id out of range, a position
 *   past the cache) return false and describe the problem in *err.
 */
#ifndef HALO_REF_OPS_H
#define HALO_REF_OPS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
	char msg[256];
} ref_error;

/* ---- data movement ------------------------------------------------------ */

/* y[t] = table[ids[t]]; table [V,H], y [T,H]. False for an id outside [0,V). */
bool ref_embed(const float *table, const int32_t *ids, float *y, int64_t T, int64_t V, int64_t H,
	       ref_error *err);

/* x viewed as [outer, dim, inner]; y [outer, len, inner] = x[:, start:start+len, :].
 * False when start+len exceeds dim. */
bool ref_slice(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner, int64_t start,
	       int64_t len, ref_error *err);

/* a [outer, da, inner], b [outer, db, inner] -> y [outer, da+db, inner]. */
void ref_concat(const float *a, const float *b, float *y, int64_t outer, int64_t da, int64_t db,
		int64_t inner);

/* x [T,h,d] -> y [T,h*r,d]; head j of y is head j/r of x. */
void ref_repeat_heads(const float *x, float *y, int64_t T, int64_t h, int64_t d, int64_t r);

/* y[r] = x[pos + offset + r] for r < T (rows of `row` floats); a row
 * outside [0, C) reads as zeros. */
void ref_rows_at_pos(const float *x, float *y, int64_t T, int64_t C, int64_t row, int64_t pos, int64_t offset);

/* state_write at pos: v [T,row] into state [C,row] rows pos..pos+T-1.
 * False when pos+T > C. */
bool ref_state_write_at(const float *v, float *state, int64_t T, int64_t C, int64_t row,
			int64_t pos, ref_error *err);
/* state_write at pos with `every` m: row t of v [T,row] goes to state row
 * (pos+t+1)/m - 1 when (pos+t+1) mod m = 0 (the window it closes), other
 * rows nowhere; state [C,row]. False when a window past the state closes. */
/* state_write at pos with `ring`: row t of v [T,row] goes to state row
 * (pos+t) mod C, state [C,row]: a ring of the last C positions. False when
 * T > C (the step would overwrite its own rows). */
bool ref_state_write_ring(const float *v, float *state, int64_t T, int64_t C, int64_t row, int64_t pos,
			  ref_error *err);
bool ref_state_write_every(const float *v, float *state, int64_t T, int64_t C, int64_t row, int64_t pos,
			   int64_t m, ref_error *err);

/* ---- linear algebra ----------------------------------------------------- */

/* y[t,n] = sum_k x[t,k] * w[n,k]; x [T,K], w [N,K], y [T,N]. */
void ref_matmul(const float *x, const float *w, float *y, int64_t T, int64_t K, int64_t N);
/* matmul with `groups` g (docs/ops.md): x [T, g*K], w [N,K], N a multiple
 * of g; output n reads x's group n / (N/g): y[t,n] = sum_k x[t, i*K + k] * w[n,k]. */
void ref_matmul_grouped(const float *x, const float *w, float *y, int64_t T, int64_t K, int64_t N, int64_t groups);
/* matmul with `pair` (docs/ops.md): w [2N, K] holds (gate, up) row pairs;
 * y[t,n] = silu(g) * u of the two dot products, each rounded to f32 as a
 * matmul's result is, so the value is the bit pattern of a matmul per
 * weight followed by swiglu. */
void ref_matmul_pair(const float *x, const float *w, float *y, int64_t T, int64_t K, int64_t N);

/* ---- normalisation ------------------------------------------------------ */

/* x, y [rows, D]; per group of `group` elements (0 = D) of a row:
 * y = x * (mean(x^2) + eps)^-1/2 * (w + offset); w [D], or NULL for
 * y = x * (mean(x^2) + eps)^-1/2 (a norm folded into the next weights). */
void ref_rms_norm(const float *x, const float *w, float *y, int64_t rows, int64_t D, int64_t group,
		  float eps, int offset);
/* The (mean(x^2) + eps)^-1/2 of x[0..n) that ref_rms_norm multiplies by. */
float ref_rms_inv(const float *x, int64_t n, float eps);

/* y = x * (sum(x^2) + eps)^-1/2 per row of D. */
void ref_l2_norm(const float *x, float *y, int64_t rows, int64_t D, float eps);

/* y = w * x * (mean(x^2) + eps)^-1/2 * silu(z) per row of D; w [D]. */
void ref_gated_rms_norm(const float *x, const float *z, const float *w, float *y, int64_t rows,
			int64_t D, float eps);

/* ---- elementwise ---------------------------------------------------------- */

/* How b of a binary op is indexed for element i of a (docs/ops.md):
 * FULL: b has a's shape, b[i]; TRAILING: b's shape is a's trailing dims,
 * n = numel(b), b[i % n]; LASTDIM: b is a's shape with the last dim 1,
 * n = a's last dim, b[i / n]. */
typedef enum { REF_BCAST_FULL, REF_BCAST_TRAILING, REF_BCAST_LASTDIM } ref_bcast_kind;

typedef struct {
	ref_bcast_kind kind;
	int64_t n;
} ref_bcast;

int64_t ref_bcast_index(ref_bcast bc, int64_t i);

/* Scalar forms, shared by the ops that apply them inside (norms, conv, moe). */
float ref_silu_f(float x);
float ref_sigmoid_f(float x);
float ref_softplus_f(float x); /* x for x > 20 (PyTorch's threshold) */

/* The elementwise op `op` (its kernels/ops.def number) over n elements:
 * y[i] = EXPR(a = x[i], b = other[bcast(i)], s = value), EXPR from
 * kernels/ops.def; other is unused by unary ops. y may alias x, or other
 * when bc is FULL. False for an op that is not elementwise. */
bool ref_elementwise(int op, const float *x, const float *other, float *y, int64_t n, ref_bcast bc, float value);

/* ---- positional and attention ---------------------------------------------- */

/* rope's attributes (docs/ops.md). A zeroed struct with rot_dim and base
 * set is the plain NeoX rope. */
typedef enum {
	REF_ROPE_NEOX,		   /* pairs (i, i + r/2) of the first r channels */
	REF_ROPE_INTERLEAVED_TAIL, /* pairs (d-r+2i, d-r+2i+1) of the last r channels (DeepSeek V4) */
} ref_rope_layout;

typedef struct {
	int64_t rot_dim; /* r, even */
	float base;
	ref_rope_layout layout;
	bool inverse;	     /* rotate by -angle */
	int64_t offset;	     /* token t is at position pos + t + offset */
	float yarn_factor;   /* > 0: transformers' YaRN blend of the frequencies */
	int64_t yarn_orig_ctx;
	float yarn_beta_fast, yarn_beta_slow;
} ref_rope_params;

/* Whether the angles follow transformers' f32 recipe (ref_rope_inv_freq):
 * with YaRN or the interleaved layout, the models whose oracle builds its
 * tables so. The plain NeoX rope keeps the f64 angles the Qwen references
 * were checked with. */
bool ref_rope_f32_angles(const ref_rope_params *p);

/* Pair i's frequency as transformers computes it in f32:
 * 1 / base^(2i/r), then with yarn_factor f > 0 the blend
 * (1 - ramp_i) * theta_i + ramp_i * theta_i / f (its correction range
 * in f64, as Python computes it). */
float ref_rope_inv_freq(const ref_rope_params *p, int64_t i);

/* Rotary embedding of x into y, both [T,h,d]; token t is at position
 * p = pos + t + offset. Angle p * theta_i: with ref_rope_f32_angles the
 * product and its cos/sin in f32 (theta from ref_rope_inv_freq), else
 * theta = base^(-2i/r) and the angle in f64, cos/sin rounded to f32.
 * Channels outside the rotated r pass through. */
void ref_rope(const ref_rope_params *p, const float *x, float *y, int64_t T, int64_t h, int64_t d, int64_t pos);

/* q [T,hq,d], k [C,hk,d], v [C,hk,dv] -> y [T,hq,dv]. Query t attends cache rows
 * 0..pos+t; q head j uses kv head j/(hq/hk); softmax in f32 (max-subtracted,
 * f64 denominator). False when pos+T > C. */
bool ref_attention(const float *q, const float *k, const float *v, float *y, int64_t T, int64_t hq,
		   int64_t hk, int64_t d, int64_t dv, int64_t C, int64_t pos, float scale,
		   ref_error *err);

/* Split attention (docs/ops.md): key block b of query row (t, j) covers
 * keys [b * block, min((b + 1) * block, pos + t + 1)), those with
 * mask[t * C + c] != 0 where mask [T,C] is not NULL; part [T,hq,S,dv+2],
 * S = ceil(C / block), gets per block sum_c e^(s_c - m) v_c, then m (the
 * block's max score, -3e38 for a block with no key) and sum_c e^(s_c - m)
 * (0 for none). False when pos+T > C or a masked row sees no key. */
bool ref_attention_partial(const float *q, const float *k, const float *v, const float *mask, float *part, int64_t T,
			   int64_t hq, int64_t hk, int64_t d, int64_t dv, int64_t C, int64_t block, int64_t pos,
			   float scale, ref_error *err);
/* part [T,hq,S,dv+2] -> y [T,hq,dv]: the blocks' sums rescaled to their
 * common max, over their rescaled denominators (f64 sums). */
void ref_attention_combine(const float *part, float *y, int64_t rows, int64_t S, int64_t dv);

/* Softmax over each row of D, max-subtracted; y may alias x. */
void ref_softmax(const float *x, float *y, int64_t rows, int64_t D);

/* ---- recurrent ------------------------------------------------------------------ */

/* The recurrent ops below take a nullable `steps`: when given, it receives
 * the state after each token, [T, ...state shape], row T-1 equal to the
 * final state (the per-token state slots of a verify entry, docs/ir.md). */

/* x [T,C], state [K-1,C], w [C,K] -> y [T,C], new_state [K-1,C] over s = [state; x]:
 * y[t,c] = act(sum_j w[c,j] * s[t+j,c]); act = silu when act_silu.
 * new_state may alias state; steps [T,K-1,C]: row t = rows t+1 .. t+K-1 of s. */
void ref_conv1d_causal(const float *x, const float *state, const float *w, float *y,
		       float *new_state, float *steps, int64_t T, int64_t C, int64_t K, bool act_silu);

/* Gated delta rule, per value head h (key head h/(hv/hk)), t in order:
 * S <- S*exp(g); kv = S^T k; delta = (v - kv)*beta; S <- S + k (x) delta;
 * o = S^T (q*scale). q,k [T,hk,dk], v [T,hv,dv], g,beta [T,hv], S [hv,dk,dv]
 * -> o [T,hv,dv], S_out [hv,dk,dv] (the final S; may alias S), steps
 * [T,hv,dk,dv] (S after each token). */
void ref_gated_delta_rule(const float *q, const float *k, const float *v, const float *g,
			  const float *beta, const float *S, float *o, float *S_out, float *steps, int64_t T,
			  int64_t hk, int64_t hv, int64_t dk, int64_t dv, float scale);

/* ---- routing and selection ---------------------------------------------------- */

/* Largest k of each row of x [T,N], descending, ties to the lower index. */
void ref_topk(const float *x, int32_t *ids, float *vals, int64_t T, int64_t N, int64_t k);

/* The router's scores (moe_route's `scoring`). */
typedef enum { REF_SCORE_SOFTMAX, REF_SCORE_SIGMOID, REF_SCORE_SQRTSOFTPLUS } ref_scoring;

/* moe_route / moe_route_hash attributes: k experts per token (the table's
 * width for the hash), norm_topk, scoring, scaling (1: none). */
typedef struct {
	int64_t k;
	bool norm_topk;
	ref_scoring scoring;
	float scaling;
} ref_route_params;

/* Scores s of each row of logits [T,E] (softmax over E, sigmoid or
 * sqrt(softplus)), the top k of s + bias (bias [E], NULL for none; it only
 * selects), w = s[ids] renormalised when norm_topk (softmax: over the sum;
 * the others: over the sum + 1e-20), times scaling. ids, w [T,k]. */
void ref_moe_route(const ref_route_params *p, const float *logits, const float *bias, int32_t *ids, float *w,
		   int64_t T, int64_t E);
/* ids[t] = table[tokens[t]] (table [V,k] of floats holding expert ids,
 * tokens [T]), w from logits [T,E] as ref_moe_route. False for a token
 * outside [0,V) or a table entry that is not an integer in [0,E). */
bool ref_moe_route_hash(const ref_route_params *p, const float *logits, const float *table, const int32_t *tokens,
			int32_t *ids, float *w, int64_t T, int64_t E, int64_t V, ref_error *err);

/* act[t,j] = silu(g) * u with g = gate[e] x[t], u = up[e] x[t], e = ids[t,j];
 * with limit L > 0, g = min(g, L) and u = clamp(u, -L, L) first (0: no
 * clamp). x [T,H], gate/up [E,F,H], act [T,k,F]. False for an id outside [0,E). */
bool ref_moe_gate_up(const float *x, const int32_t *ids, const float *gate, const float *up, float *act,
		     int64_t T, int64_t H, int64_t F, int64_t E, int64_t k, float limit, ref_error *err);
/* y[t] = sum_j w[t,j] * down[e] act[t,j], e = ids[t,j], summed in j order.
 * down [E,H,F]. False for an id outside [0,E). */
bool ref_moe_down(const float *act, const int32_t *ids, const float *w, const float *down, float *y, int64_t T,
		  int64_t H, int64_t F, int64_t E, int64_t k, ref_error *err);
/* y[t] = sum_j w[t,j] * down[e] act[t,j]: the two above in sequence. */
bool ref_moe_experts(const float *x, const int32_t *ids, const float *w, const float *gate,
		     const float *up, const float *down, float *y, int64_t T, int64_t H, int64_t F,
		     int64_t E, int64_t k, float limit, ref_error *err);

/* First index of the maximum of each row of x [T,N]. */
void ref_argmax(const float *x, int32_t *ids, int64_t T, int64_t N);

/* ---- Qwen4-Exp: reductions, PLE, QSA -------------------------------------------- */

/* x viewed as [outer, n, inner] -> y [outer, inner], the mean over n (f64 sum). */
void ref_reduce_mean(const float *x, float *y, int64_t outer, int64_t n, int64_t inner);

/* y = sign(x) * sqrt(max(|x|, eps)), sign(0) = 0; y may alias x. */
void ref_signed_sqrt(const float *x, float *y, int64_t n, float eps);

/* x [T,C], state [(K-1)*dilation, C], w [C,K] -> y [T,C], new_state like state,
 * over s = [state; x]: y[t,c] = act(sum_j w[c,j] * s[t + j*dilation, c]);
 * new_state = the last (K-1)*dilation rows of s (may alias state); steps
 * [T, (K-1)*dilation, C]: row t = rows t+1 .. t+(K-1)*dilation of s. */
void ref_conv1d_dilated(const float *x, const float *state, const float *w, float *y, float *new_state,
			float *steps, int64_t T, int64_t C, int64_t K, int64_t dilation, bool act_silu);

/* The hashed n-gram embedding's configuration (ngram_embed attributes). */
typedef struct {
	int64_t ngram;		 /* N: orders 2..N, N-1 ids of history */
	int64_t heads_per_ngram; /* heads per order; heads = (N-1) * heads_per_ngram */
	int64_t eos;		 /* the token that restarts every window */
	int64_t vocab;		 /* token vocabulary (bounds the multipliers) */
	int64_t seed;		 /* hash seed */
	int64_t layer_index;	 /* position of the layer among the PLE layers */
	int64_t table_base;	 /* every head table has a prime size >= this */
} ref_ngram_params;

/* The N hash multipliers m[0..N-1] (odd, < INT64_MAX / vocab). */
void ref_ngram_multipliers(const ref_ngram_params *p, int64_t *m);

/* Per-head table sizes (primes) and row offsets, heads = (N-1)*heads_per_ngram entries each. */
void ref_ngram_tables(const ref_ngram_params *p, int64_t *size, int64_t *offset);

/* table [rows, dp], ids [T], hist [N-1] -> y [T, heads*dp], new_hist [N-1],
 * steps [T, N-1] (nullable: the history after each token).
 * hist holds the previous N-1 token ids, oldest first, as id + 1; 0 means
 * "before the sequence" and counts as EOS, so a zeroed state is a fresh
 * sequence. Head j of token t is table row (mix_n mod size_j) + offset_j with
 * mix_n = XOR_{s<n} ctx_s * m_s, ctx_s the token s back unless an EOS lies in
 * between (then EOS). False for an id outside [0,vocab) or a table too small. */
bool ref_ngram_embed(const ref_ngram_params *p, const float *table, const int32_t *ids, const float *hist,
		     float *y, float *new_hist, float *steps, int64_t T, int64_t rows, int64_t dp, ref_error *err);

/* qsa_select attributes. */
typedef struct {
	int64_t block;	    /* c: tokens per key block, blocks aligned to position 0 */
	int64_t top_blocks; /* complete blocks kept per query */
	int64_t rot_dim;    /* rope channels of the block keys */
	float base;	    /* rope base */
	float eps;	    /* block-key rms norm eps */
} ref_qsa_params;

/* q [T,h,d] (normed and rotated indexer queries), keys [C,d] (raw indexer keys
 * of positions 0..pos+T-1), k_norm [d] -> mask [T,C] of 1/0. For query t at
 * p = pos+t, block b < nb = (p+1)/c has key rope(rms_norm_(1+w)(mean of rows
 * [bc, bc+c)), position bc) and score sum_h relu(q_h . key_b) / sqrt(d); the
 * best min(top_blocks, nb) blocks (ties to the lower index) and the tail rows
 * nb*c..p are 1. False when pos+T > C. */
bool ref_qsa_select(const ref_qsa_params *p, const float *q, const float *keys, const float *k_norm, float *mask,
		    int64_t T, int64_t h, int64_t d, int64_t C, int64_t pos, ref_error *err);

/* The first query row t of a mask [T,C] with no non-zero entry among keys
 * 0..pos+t, or -1 (also for a NULL mask). */
int64_t ref_mask_empty_row(const float *mask, int64_t T, int64_t C, int64_t pos);

/* ref_attention restricted to the keys j <= pos+t with mask[t,j] != 0;
 * mask [T,C]. False when pos+T > C or a query row sees no key. */
bool ref_masked_attention(const float *q, const float *k, const float *v, const float *mask, float *y, int64_t T,
			  int64_t hq, int64_t hk, int64_t d, int64_t dv, int64_t C, int64_t pos, float scale,
			  ref_error *err);

/* ---- DeepSeek V4: mHC (ref_hc.c) ---------------------------------------------- */

/* hc_weights per token of mix [T,(2+n)*n] (mix [T,n] when post is NULL, the
 * HyperHead's form), base like a row of mix, scale [3] (or [1]):
 * pre = sigmoid(mix[0:n]*scale[0] + base[0:n]) + eps; post =
 * 2*sigmoid(mix[n:2n]*scale[1] + base[n:2n]); comb [n,n] = the row softmax
 * of mix[2n:]*scale[2] + base[2n:], + eps, then the columns divided by their
 * sums + eps, then iters - 1 times the rows and the columns (f64 sums). pre,
 * post [T,n], comb [T,n,n]; post and comb NULL together. */
void ref_hc_weights(const float *mix, const float *base, const float *scale, float *pre, float *post, float *comb,
		    int64_t T, int64_t n, int64_t iters, float eps);
/* y[t] = sum_j pre[t,j] x[t,j], j ascending (f64). x [T,n,H], pre [T,n], y [T,H]. */
void ref_hc_collapse(const float *x, const float *pre, float *y, int64_t T, int64_t n, int64_t H);
/* out[t,k] = post[t,k] y[t] + sum_j comb[t,j,k] x[t,j], j ascending (f64).
 * x, out [T,n,H], y [T,H], post [T,n], comb [T,n,n]. */
void ref_hc_expand(const float *x, const float *y, const float *post, const float *comb, float *out, int64_t T,
		   int64_t n, int64_t H);
/* Qwen3.8 Flash's hc_inject: out[t,k] = x[t,k] + g[t,k] y[t], the product
 * rounded to f32 before the sum (the model's repeat, mul and add, bit for
 * bit). x, out [T,n,H], y [T,H], g [T,n]. */
void ref_hc_inject(const float *x, const float *y, const float *g, float *out, int64_t T, int64_t n, int64_t H);

/* ---- DeepSeek V4: compressed sparse attention (runtime/drivers/ref/ref_compress.c) ---- */

/* compress_kv: c, z [N, w*D] (w = 1 + overlap: per-token caches of the
 * compressor's projections and raw gates, rows 0..pos+T-1 written), bias
 * [m, w*D] -> y [T, D]. Row t, at position p = pos + t, is zero unless p
 * closes a window of m tokens ((p+1) mod m = 0); then, for window
 * wi = (p+1)/m - 1 starting at b = wi*m, channel d is the softmax over
 * its slots of the gates z + bias weighting the c: rows b..b+m-1 at
 * channel overlap*D + d, preceded with overlap and wi > 0 by rows
 * b-m..b-1 at channel d (bias row r for the r-th row of either). Softmax
 * in f32 (f64 denominator), weighted sum in f64. False when pos+T > N. */
bool ref_compress_kv(const float *c, const float *z, const float *bias, float *y, int64_t T, int64_t N, int64_t D,
		     int64_t m, bool overlap, int64_t pos, ref_error *err);

/* index_topk: q [T,h,d], w [T,h], keys [E,d] -> ids [T,k]. At position
 * p = pos + t the keys e < n = min((p+1)/m, E) are visible, scored
 * sum_h w[t,h] * (relu(q[t,h] . keys[e]) * scale) (f32 terms, summed in f64
 * in h order); ids are the best min(k, n) (descending, ties to the lower
 * index), then -1. */
void ref_index_topk(const float *q, const float *w, const float *keys, int32_t *ids, int64_t T, int64_t h,
		    int64_t d, int64_t E, int64_t k, int64_t m, float scale, int64_t pos);

/* index_topk in two halves (the split for long contexts): index_score
 * writes scores [T,E], index_topk's score for e < n and 0 past it;
 * index_select picks the ids from them as index_topk does. */
void ref_index_score(const float *q, const float *w, const float *keys, float *scores, int64_t T, int64_t h,
		     int64_t d, int64_t E, int64_t m, float scale, int64_t pos);
void ref_index_select(const float *scores, int32_t *ids, int64_t T, int64_t E, int64_t k, int64_t m, int64_t pos);

/* sink_attention's attributes and the extents of its optional operands. */
typedef struct {
	float scale;
	int64_t window; /* Wn: query p sees cache rows max(0, p-Wn+1)..p */
	int64_t ratio;	/* m: entry e is closed for p when e < (p+1)/m */
	int64_t N;	/* cache rows */
	int64_t E;	/* entry rows; 0: no entries */
	int64_t k;	/* ids per query; 0: no ids (every closed entry) */
	int64_t block;	/* sink_attention_partial: keys per block; 0: sink_attention */
	int64_t blocks; /* sink_attention_partial: S, the blocks a row's part holds */
} ref_sink_params;

/* q [T,h,D], kv [N,D] (one head, K = V), sinks [h], entries [E,D] or NULL,
 * ids [T,k] or NULL -> y [T,h,D]. Query t at p = pos + t attends its
 * window's cache rows, then the entries e < (p+1)/m (no ids) or
 * ids[t,i] >= 0 in ids order; s_j = (q . key_j) * scale, softmax over the
 * s_j and sinks[h] (f32, max-subtracted, f64 denominator), y = sum_j
 * softmax_j key_j in f64 (the sink has no value). False when pos+T > N,
 * when closed entries lie past E, or for an id that is not a closed entry
 * or is repeated in its row.
 * With p->block (sink_attention_partial) y is [T,h,S,D+2]: block b of row
 * t's list (keys b*block .. +block) as attention_partial writes a block,
 * its sums sum_j e^(s_j - m) key_j, m and sum_j e^(s_j - m) (−3e38 and 0
 * for no key), the sink entering block 0's max and denominator only, so
 * attention_combine gives sink_attention's y. */
bool ref_sink_attention(const ref_sink_params *p, const float *q, const float *kv, const float *sinks,
			const float *entries, const int32_t *ids, float *y, int64_t T, int64_t h, int64_t D,
			int64_t pos, ref_error *err);

#endif
