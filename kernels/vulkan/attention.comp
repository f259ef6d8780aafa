// attention: q [T,HQ,D], k cache [C,HK,D], v cache [C,HK,DV] -> y [T,HQ,DV].
// Query t attends cache rows 0..pos+t; q head j reads kv head j / (HQ / HK).
// One workgroup per (head, token) (grid x = HQ, y = T).
//
// Keys are taken in passes of KP = LS_X / LPK keys from the first: LPK
// neighbouring lanes score one key, each over the channels i = p, p + LPK,
// ... (vec4s with VEC4, so the LPK lanes read a key row's consecutive 16-byte
// words together), their partial dots summed in lane order through shared
// memory. An online softmax carries the running max and denominator across
// passes: every lane takes the pass's max over its KP scores (a max is exact
// in any order), the pass's first KP lanes write the weights e^(s - max),
// and lane l accumulates output channels l, l + LS_X, ... and the
// denominator over the pass's keys in key order. Three barriers a pass.
// A pass's loads are issued early: its values with its keys, before the
// scores that weight them are known, and the next pass's keys before this
// pass's values are summed, so a pass waits on memory about once, not once
// for the keys and again for the values (the scores and sums are the same
// operations in the same order). The passes, dots and sums are fixed by the
// key positions alone, so a row's result depends only on its own query and
// keys, never on T (decode of m tokens = m decodes of one). Prefill and
// decode share this kernel.
//
// masked_attention is this kernel with MASKED: key c of query t counts only
// when mask[t * MASK_C + c] != 0. A row with no such key divides by a zero
// sum (the reference rejects it). masked_attention_blocks is MASKED with
// BLOCKS (below): a block whose keys are all masked writes NEG_BIG and 0,
// as a block past the row's last key. With PARTIAL (the blocks) a workgroup
// first stages its block's mask a bit a key (MASK_STAGED): a masked key's
// rows are not loaded (zeros in their place), and a pass with no kept key
// is skipped, loads and all. Neither changes a bit: a masked key's weight
// is exactly 0 and its score is dropped, and a skipped pass would have left
// the max, the denominator and the sums as they were (its correction
// exp(m - m) is exactly 1, and a running sum is never -0, so adding 0 * v
// is the identity).
//
// attention_partial is this kernel with PARTIAL (grid z = NBLK): workgroup
// (j, t, b) attends keys [b * BLOCK, min((b + 1) * BLOCK, pos + t + 1)) and
// writes, at part[((t * HQ + j) * NBLK + b) * (DV + 2)], the unnormalised
// sums, then the max score and the denominator (NEG_BIG and 0 for a block
// with no key); attention_combine.comp merges the blocks.
//
// attention_blocks is the PARTIAL kernel with BLOCKS: the blocks go to part
// (attention_merge.glsl declares it and y, the prelude the counters), a
// block past the row's last key returns at once, and the last of the row's
// live blocks to finish merges them into y (last_workgroup, merge_row): one
// dispatch instead of partial and combine, with the combine's operations in
// its order.
//
// attention_rope is attention_blocks with ROPE_IN: q holds the query heads
// and k_new the step's keys as the projection made them. Each workgroup
// normalises (rms_norm with q_w or k_w, NORM_EPS, NORM_OFFSET) and rotates
// (rope_math.glsl) its query head into qs, and the step's keys it scores
// (rows step_pos .. of its block) into knew, which load_key reads in place
// of the cache's rows from step_pos: the cache is read below step_pos only.
// Key row step_pos + t is stored to k_out (the cache's rows from step_pos
// with POS2) by one workgroup, that of query t, the first head of the kv
// group, and the block holding the key. Every workgroup computes a key the
// same way, so the scores use the stored bits.

#extension GL_EXT_control_flow_attributes : require

// restrict: no dispatch reads memory that it also writes. attention_rope's
// k_out is the k cache's buffer, but rows from step_pos, which no workgroup
// reads from the cache (load_key takes them from knew); without the
// qualifier a compiler must assume k_out's stores may change what kc's
// loads see.
layout(set = 0, binding = B_Q) restrict readonly buffer Qb { float q[]; };
layout(set = 0, binding = B_K) restrict readonly buffer Kb { float kc[]; };
#if VEC4
layout(set = 0, binding = B_Q) restrict readonly buffer Q4b { vec4 q4[]; };
layout(set = 0, binding = B_K) restrict readonly buffer K4b { vec4 kc4[]; };
#endif
layout(set = 0, binding = B_V) restrict readonly buffer Vb { float vc[]; };
#ifndef BLOCKS
layout(set = 0, binding = B_Y) restrict writeonly buffer Yb { float y[]; };
#endif
#ifdef MASKED
layout(set = 0, binding = B_M) restrict readonly buffer Mb { float mask[]; };
#endif
#ifdef ROPE_IN
layout(set = 0, binding = B_KN) restrict readonly buffer KNb { float k_new[]; };
layout(set = 0, binding = B_QW) restrict readonly buffer QWb { float q_w[]; };
layout(set = 0, binding = B_KW) restrict readonly buffer KWb { float k_w[]; };
layout(set = 0, binding = B_KO) restrict writeonly buffer KOb { float k_out[]; };
#endif

#define NCH ((DV + LS_X - 1u) / LS_X)
#define KP (LS_X / LPK)
// Stands in for -infinity: exp(NEG_BIG - m) is exactly 0 for any finite score.
#ifndef NEG_BIG
#define NEG_BIG -3.0e38
#endif
#ifdef BLOCKS
#define PART_OUT part
#else
#define PART_OUT y
#endif

#if VEC4
shared vec4 qs4[D / 4u];
#else
shared float qs[D];
#endif
shared float part_dot[LS_X];
shared float score[KP];
shared float weight[KP];
#ifdef ROPE_IN
// The prologue's head (normalised and weighted: at() reads it) and the
// step's keys this workgroup scores (row r = key - step_pos) live in the
// merge's staging array (attention_merge), idle until the row's last
// workgroup merges after its loop, so the kernel holds no more shared memory
// than attention_blocks (MERGE_STAGE covers both uses). With arrays of their
// own, 3.5 KB more, it ran 45.5 us a call against attention_blocks' 35.3 at
// 32 live key blocks a head, 1024 workgroups: fewer of its workgroups fit on
// a core. In this layout it runs 38.3 us, against 35.2 + 8.6 for
// attention_blocks and its two ropes (bench/results-h100-qwen3_8b.txt).
#define HEAD_N(i) merge_stage[i]
#define KNEW(r, i) merge_stage[D + (r) * D + (i)]
#endif

#if defined(MASKED) && PARTIAL
#define MASK_STAGED 1
// Bit i of the block's mask: key lo + i is kept (lo = z * BLOCK, so i is
// key % BLOCK).
shared uint kept_bits[(BLOCK + 31u) / 32u];

// Stages the mask of query t's keys [lo, hi) (at most BLOCK of them), a
// word of 32 keys a lane. Every lane calls it.
void stage_mask(uint l, uint t, uint lo, uint hi)
{
	for (uint w = l; w < (BLOCK + 31u) / 32u; w += LS_X) {
		uint bits = 0u;
		for (uint i = 0u; i < 32u; i++)
			if (lo + w * 32u + i < hi && mask[t * MASK_C + lo + w * 32u + i] != 0.0)
				bits |= 1u << i;
		kept_bits[w] = bits;
	}
	barrier();
}

bool kept(uint key)
{
	uint i = key % BLOCK;
	return (kept_bits[i / 32u] & (1u << (i % 32u))) != 0u;
}

// The first pass from c0 on (c0, c0 + KP, ...) with a kept key below hi,
// or hi. The same for every lane.
uint live_pass(uint c0, uint hi)
{
	for (; c0 < hi; c0 += KP)
		for (uint key = c0; key < min(c0 + KP, hi); key++)
			if (kept(key))
				return c0;
	return hi;
}
#define KEY_KEPT(key) kept(key)
#else
#define MASK_STAGED 0
#define KEY_KEPT(key) true
#define live_pass(c0, hi) (c0)
#endif

bool key_live(uint key, uint hi, uint t)
{
#if MASK_STAGED
	return key < hi && kept(key);
#elif defined(MASKED)
	return key < hi && mask[t * MASK_C + key] != 0.0;
#else
	return key < hi;
#endif
}

// A lane's share of one key row: channels p, p + LPK, ... (vec4s with VEC4).
#if VEC4
#define KW (D / 4u)
#define KREG vec4
#else
#define KW D
#define KREG float
#endif
#define NKR ((KW + LPK - 1u) / LPK)

// Loads the lane's share of key `key` (row * HK + kvh); a key at or past hi
// loads nothing. With ROPE_IN the step's keys (from step_pos) come from
// knew: the cache's loads keep the plain kernel's form (one predicated load
// each, all issued before any is used) and the staged rows are a separate,
// workgroup-uniform path that only the block holding step_pos takes.
void load_key(out KREG kr[NKR], uint key, uint hi, uint kvh, uint p)
{
#ifdef ROPE_IN
	uint cached = min(hi, step_pos);
#else
	uint cached = hi;
#endif
	for (uint r = 0u; r < NKR; r++) {
		uint i = p + r * LPK;
#if VEC4
		kr[r] = key < cached && i < KW && KEY_KEPT(key) ? kc4[(key * HK + kvh) * KW + i] : vec4(0.0);
#else
		kr[r] = key < cached && i < KW && KEY_KEPT(key) ? kc[(key * HK + kvh) * KW + i] : 0.0;
#endif
	}
#ifdef ROPE_IN
	if (key >= step_pos && key < hi) {
		for (uint r = 0u; r < NKR; r++) {
			uint i = p + r * LPK;
#if VEC4
			if (i < KW)
				kr[r] = vec4(KNEW(key - step_pos, 4u * i), KNEW(key - step_pos, 4u * i + 1u),
					     KNEW(key - step_pos, 4u * i + 2u), KNEW(key - step_pos, 4u * i + 3u));
#else
			if (i < KW)
				kr[r] = KNEW(key - step_pos, i);
#endif
		}
	}
#endif
}

// This lane's share of q . k from its loaded share kr of the key row.
float partial_dot(KREG kr[NKR], uint p)
{
	float d = 0.0;
	for (uint r = 0u; r < NKR; r++) {
		uint i = p + r * LPK;
		if (i >= KW)
			break;
#if VEC4
		d += dot(qs4[i], kr[r]);
#else
		d += qs[i] * kr[r];
#endif
	}
	return d;
}

// Loads output channel l + ci * LS_X of the pass's values from c0, for the
// pass's keys below hi.
void load_values(out float vv[NCH][KP], uint c0, uint hi, uint kvh, uint l)
{
	for (uint ci = 0u; ci < NCH; ci++) {
		uint c = min(l + ci * LS_X, DV - 1u);
		[[unroll]] for (uint i = 0u; i < KP; i++)
			vv[ci][i] = c0 + i < hi && KEY_KEPT(c0 + i) ? vc[((c0 + i) * HK + kvh) * DV + c] : 0.0;
	}
}

#ifdef ROPE_IN
float at(uint base, uint i, float inv)
{
	return HEAD_N(i);
}

// Channel i of head h of row `row` of the queries (is_q) or the step's keys.
float raw_at(bool is_q, uint row, uint h, uint i)
{
	return is_q ? q[(row * HQ + h) * D + i] : k_new[(row * HK + h) * D + i];
}

#define NHV ((D + LS_X - 1u) / LS_X)

// Head h of row `row` of the queries or keys, normalised (rms_norm.comp's
// sums with LS_X lanes) and weighted, into head_n. Every lane calls it. The
// lane's channels and weights are loaded together, once, before the sum.
void norm_head(bool is_q, uint row, uint h, uint l)
{
	float v[NHV], w[NHV];
	for (uint c = 0u; c < NHV; c++) {
		uint i = l + c * LS_X;
		v[c] = i < D ? raw_at(is_q, row, h, i) : 0.0;
		w[c] = i < D ? (is_q ? q_w[i] : k_w[i]) + NORM_OFFSET : 0.0;
	}
	float s = 0.0;
	for (uint c = 0u; c < NHV; c++)
		s += v[c] * v[c];
	float inv = 1.0 / sqrt(tree_sum(l, s) / float(D) + NORM_EPS);
	for (uint c = 0u; c < NHV; c++)
		if (l + c * LS_X < D)
			HEAD_N(l + c * LS_X) = v[c] * inv * w[c];
	barrier();
}

// Query head j of token t rotated into qs, and the step's keys among this
// workgroup's [lo, hi) into knew, key step_pos + t also into k_out by the
// workgroup that owns it. Every lane calls it; qs and knew are complete
// when it returns.
void rope_in(uint l, uint j, uint t, uint kvh, uint lo, uint hi)
{
	norm_head(true, t, j, l);
	for (uint i = l; i < D; i += LS_X) {
#if VEC4
		qs4[i / 4u][i % 4u] = rotated(0u, i, ROPE_POS(t), 1.0);
#else
		qs[i] = rotated(0u, i, ROPE_POS(t), 1.0);
#endif
	}
	for (uint key = max(lo, step_pos); key < hi; key++) {
		uint r = key - step_pos;
		norm_head(false, r, kvh, l);
		bool owner = j % (HQ / HK) == 0u && r == t;
		for (uint i = l; i < D; i += LS_X) {
			float v = rotated(0u, i, ROPE_POS(r), 1.0);
			KNEW(r, i) = v;
			if (owner)
				k_out[((POS2 * step_pos + r) * HK + kvh) * D + i] = v;
		}
	}
	barrier();
}
#endif

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint j = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
	uint kvh = j / (HQ / HK);
	uint n = step_pos + t + 1u;
#if PARTIAL
	uint lo = gl_WorkGroupID.z * BLOCK, hi = min(n, lo + BLOCK);
#ifdef BLOCKS
	if (lo >= n)
		return;
#endif
#else
	uint lo = 0u, hi = n;
#endif
	uint kk = l / LPK, p = l % LPK;
	KREG kr[NKR];
	float vv[NCH][KP];
#ifdef ROPE_IN
	// The first pass's cache rows are loaded before the prologue, whose
	// loads and barriers they overlap; its staged keys after it.
	load_key(kr, lo + kk, min(hi, step_pos), kvh, p);
	load_values(vv, lo, hi, kvh, l);
	rope_in(l, j, t, kvh, lo, hi);
	if (lo + kk >= step_pos)
		load_key(kr, lo + kk, hi, kvh, p);
#else
#if MASK_STAGED
	stage_mask(l, t, lo, hi);
#endif
	uint first = live_pass(lo, hi);
	load_key(kr, first + kk, hi, kvh, p);
	load_values(vv, first, hi, kvh, l);
#if VEC4
	for (uint i = l; i < D / 4u; i += LS_X)
		qs4[i] = q4[(t * HQ + j) * (D / 4u) + i];
#else
	for (uint i = l; i < D; i += LS_X)
		qs[i] = q[(t * HQ + j) * D + i];
#endif
	barrier();
#endif
	float m = NEG_BIG, lsum = 0.0;
	float acc[NCH];
	for (uint ci = 0u; ci < NCH; ci++)
		acc[ci] = 0.0;
#ifdef ROPE_IN
	uint first = lo;
#endif
	for (uint c0 = first, next; c0 < hi; c0 = next) {
		uint key = c0 + kk;
		part_dot[l] = key < hi ? partial_dot(kr, p) : 0.0;
		barrier();
		if (l < KP) {
			float s = 0.0;
			for (uint r = 0u; r < LPK; r++)
				s += part_dot[l * LPK + r];
			score[l] = key_live(c0 + l, hi, t) ? s * SCALE : NEG_BIG;
		}
		barrier();
		float m_new = m;
		for (uint i = 0u; i < KP; i++)
			m_new = max(m_new, score[i]);
		if (l < KP)
			weight[l] = key_live(c0 + l, hi, t) ? exp(score[l] - m_new) : 0.0;
		barrier();
		// The next pass writes weight only after two more barriers, which
		// every lane reaches only when done reading it here.
		next = live_pass(c0 + KP, hi);
		load_key(kr, next + kk, hi, kvh, p);
		float corr = exp(m - m_new);
		uint cnt = min(KP, hi - c0);
		float wsum = 0.0;
		if (cnt == KP) {
			[[unroll]] for (uint i = 0u; i < KP; i++)
				wsum += weight[i];
		} else {
			for (uint i = 0u; i < cnt; i++)
				wsum += weight[i];
		}
		lsum = lsum * corr + wsum;
		for (uint ci = 0u; ci < NCH; ci++) {
			uint c = l + ci * LS_X;
			if (c >= DV)
				break;
			float a = acc[ci] * corr;
			// All KP loads were issued before the first use (a loop of
			// load-then-add waited out each load's latency in turn: 30 us
			// a decode call at 576 keys).
			[[unroll]] for (uint i = 0u; i < KP; i++)
				if (i < cnt)
					a += weight[i] * vv[ci][i];
			acc[ci] = a;
		}
		load_values(vv, next, hi, kvh, l);
		m = m_new;
	}
#if PARTIAL
	uint base = ((t * HQ + j) * NBLK + gl_WorkGroupID.z) * (DV + 2u);
	for (uint ci = 0u; ci < NCH; ci++) {
		uint c = l + ci * LS_X;
		if (c < DV)
			PART_OUT[base + c] = acc[ci];
	}
	if (l == 0u) {
		PART_OUT[base + DV] = m;
		PART_OUT[base + DV + 1u] = lsum;
	}
#ifdef BLOCKS
	uint live = min(NBLK, (n + BLOCK - 1u) / BLOCK);
	if (last_workgroup(t * HQ + j, live))
		merge_row(t * HQ + j, live);
#endif
#else
	for (uint ci = 0u; ci < NCH; ci++) {
		uint c = l + ci * LS_X;
		if (c < DV)
			y[(t * HQ + j) * DV + c] = epilogue(acc[ci] / lsum, (t * HQ + j) * DV + c);
	}
#endif
}
