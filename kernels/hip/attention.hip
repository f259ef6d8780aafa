// attention: q [T,HQ,D], k cache [C,HK,D], v cache [C,HK,DV] -> y [T,HQ,DV];
// with MASKED the masked_attention op, with PARTIAL attention_partial (grid
// z = NBLK, each block's unnormalised sums, max score and denominator).
// The twin of kernels/vulkan/attention.comp, whose comment gives the scheme:
// passes of KP = LS_X / LPK keys, LPK lanes a key summed in lane order, an
// online softmax, lane l owning output channels l, l + LS_X, ... summed in
// key order, each pass's keys and values loaded before they are needed.
// Loops over acc, kr and vv carry `#pragma unroll` where the GLSL
// has none: an array indexed in a rolled loop would live in local memory
// (the compile test refuses it); the order of the sums is the same.
// With BLOCKS (attention_blocks; with MASKED too, masked_attention_blocks)
// the blocks go to part and the row's last live block merges them
// (attention_merge.hip), as the GLSL's BLOCKS. MASKED with PARTIAL stages
// the block's mask a bit a key and skips masked keys' loads and passes
// with no kept key, as the GLSL's MASK_STAGED.
// With ROPE_IN (attention_rope) each workgroup normalises and rotates its
// query head and the step's keys it scores (rope_math.hip), reads those
// keys from knew in place of the cache's rows from step_pos, and the
// workgroup of query t, the kv group's first head and the key's block
// stores key step_pos + t to k_out, as the GLSL's ROPE_IN.
// Grid: x = HQ, y = T, z = NBLK (1 without PARTIAL).

#define NCH ((DV + LS_X - 1u) / LS_X)
#define KP (LS_X / LPK)
// Stands in for -infinity: exp(NEG_BIG - m) is exactly 0 for any finite score.
#ifndef NEG_BIG
#define NEG_BIG -3.0e38f
#endif
#ifdef BLOCKS
#define PART_OUT part
#else
#define PART_OUT y
#endif

#if VEC4
HALO_SHARED vec4 qs4[D / 4u];
#else
HALO_SHARED float qs[D];
#endif
HALO_SHARED float part_dot[LS_X];
HALO_SHARED float score[KP];
HALO_SHARED float weight[KP];
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
#if defined(MASKED) && defined(PARTIAL)
#define MASK_STAGED 1
// Bit i of the block's mask: key lo + i, i = key % BLOCK, is kept
// (attention.comp).
HALO_SHARED uint kept_bits[(BLOCK + 31u) / 32u];
#else
#define MASK_STAGED 0
#endif
// @struct

const float *__restrict__ q = (const float *)args.b[B_Q];
const float *__restrict__ kc = (const float *)args.b[B_K];
#if VEC4
const vec4 *__restrict__ q4 = (const vec4 *)args.b[B_Q];
const vec4 *__restrict__ kc4 = (const vec4 *)args.b[B_K];
#endif
const float *__restrict__ vc = (const float *)args.b[B_V];
#ifndef BLOCKS
float *__restrict__ y = (float *)args.b[B_Y];
#endif
#ifdef MASKED
const float *__restrict__ mask = (const float *)args.b[B_M];
#endif
#ifdef ROPE_IN
const float *__restrict__ k_new = (const float *)args.b[B_KN];
const float *__restrict__ q_w = (const float *)args.b[B_QW];
const float *__restrict__ k_w = (const float *)args.b[B_KW];
float *k_out = (float *)args.b[B_KO]; // the cache's rows from step_pos: kc's buffer
#endif

#if MASK_STAGED
// Stages the mask of query t's keys [lo, hi), a word of 32 keys a lane
// (attention.comp's stage_mask).
void stage_mask(uint l, uint t, uint lo, uint hi)
{
	for (uint w = l; w < (BLOCK + 31u) / 32u; w += LS_X) {
		uint bits = 0u;
		for (uint i = 0u; i < 32u; i++)
			if (lo + w * 32u + i < hi && mask[t * MASK_C + lo + w * 32u + i] != 0.0f)
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

// The first pass from c0 on with a kept key below hi, or hi (attention.comp).
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
#define KEY_KEPT(key) true
#define live_pass(c0, hi) (c0)
#endif

bool key_live(uint key, uint hi, uint t)
{
#if MASK_STAGED
	return key < hi && kept(key);
#elif defined(MASKED)
	return key < hi && mask[t * MASK_C + key] != 0.0f;
#else
	return key < hi;
#endif
}

#if VEC4
#define KW (D / 4u)
#define KREG vec4
#else
#define KW D
#define KREG float
#endif
#define NKR ((KW + LPK - 1u) / LPK)

// The lane's share of key `key` (channels p, p + LPK, ...); nothing at or
// past hi.
void load_key(KREG (&kr)[NKR], uint key, uint hi, uint kvh, uint p)
{
#ifdef ROPE_IN
	uint cached = min(hi, step_pos); // the step's keys come from knew
#else
	uint cached = hi;
#endif
#pragma unroll
	for (uint r = 0u; r < NKR; r++) {
		uint i = p + r * LPK;
#if VEC4
		kr[r] = key < cached && i < KW && KEY_KEPT(key) ? kc4[(key * HK + kvh) * KW + i] : vec4(0.0f);
#else
		kr[r] = key < cached && i < KW && KEY_KEPT(key) ? kc[(key * HK + kvh) * KW + i] : 0.0f;
#endif
	}
#ifdef ROPE_IN
	if (key >= step_pos && key < hi) {
#pragma unroll
		for (uint r = 0u; r < NKR; r++) {
			uint i = p + r * LPK;
#if VEC4
			if (i < KW)
				kr[r] = vec4{KNEW(key - step_pos, 4u * i), KNEW(key - step_pos, 4u * i + 1u),
					     KNEW(key - step_pos, 4u * i + 2u), KNEW(key - step_pos, 4u * i + 3u)};
#else
			if (i < KW)
				kr[r] = KNEW(key - step_pos, i);
#endif
		}
	}
#endif
}

// This lane's share of q . k from its share kr of the key row.
float partial_dot(const KREG (&kr)[NKR], uint p)
{
	float d = 0.0f;
#pragma unroll
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

// Output channel l + ci * LS_X of the pass's values from c0, keys below hi.
void load_values(float (&vv)[NCH][KP], uint c0, uint hi, uint kvh, uint l)
{
#pragma unroll
	for (uint ci = 0u; ci < NCH; ci++) {
		uint c = min(l + ci * LS_X, DV - 1u);
#pragma unroll
		for (uint i = 0u; i < KP; i++)
			vv[ci][i] = c0 + i < hi && KEY_KEPT(c0 + i) ? vc[((c0 + i) * HK + kvh) * DV + c] : 0.0f;
	}
}

#ifdef ROPE_IN
float at(uint base, uint i, float inv) { return HEAD_N(i); }

// Channel i of head h of row `row` of the queries (is_q) or the step's keys.
float raw_at(bool is_q, uint row, uint h, uint i)
{
	return is_q ? q[(row * HQ + h) * D + i] : k_new[(row * HK + h) * D + i];
}

#define NHV ((D + LS_X - 1u) / LS_X)

// Head h of row `row`, normalised and weighted, into head_n (the GLSL's
// norm_head: channels and weights loaded together, once).
void norm_head(bool is_q, uint row, uint h, uint l)
{
	float v[NHV], w[NHV];
#pragma unroll
	for (uint c = 0u; c < NHV; c++) {
		uint i = l + c * LS_X;
		v[c] = i < D ? raw_at(is_q, row, h, i) : 0.0f;
		w[c] = i < D ? (is_q ? q_w[i] : k_w[i]) + NORM_OFFSET : 0.0f;
	}
	float s = 0.0f;
#pragma unroll
	for (uint c = 0u; c < NHV; c++)
		s += v[c] * v[c];
	float inv = 1.0f / sqrt(tree_sum(l, s) / float(D) + NORM_EPS);
#pragma unroll
	for (uint c = 0u; c < NHV; c++)
		if (l + c * LS_X < D)
			HEAD_N(l + c * LS_X) = v[c] * inv * w[c];
	barrier();
}

// The query head into qs, the step's keys of [lo, hi) into knew, key
// step_pos + t into k_out by its owner (the GLSL's rope_in).
void rope_in(uint l, uint j, uint t, uint kvh, uint lo, uint hi)
{
	norm_head(true, t, j, l);
	for (uint i = l; i < D; i += LS_X) {
#if VEC4
		qs4[i / 4u][i % 4u] = rotated(0u, i, ROPE_POS(t), 1.0f);
#else
		qs[i] = rotated(0u, i, ROPE_POS(t), 1.0f);
#endif
	}
	for (uint key = max(lo, step_pos); key < hi; key++) {
		uint r = key - step_pos;
		norm_head(false, r, kvh, l);
		bool owner = j % (HQ / HK) == 0u && r == t;
		for (uint i = l; i < D; i += LS_X) {
			float v = rotated(0u, i, ROPE_POS(r), 1.0f);
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
#ifdef PARTIAL
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
	// the first pass's cache rows before the prologue, its staged keys after
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
	float m = NEG_BIG, lsum = 0.0f;
	float acc[NCH];
#pragma unroll
	for (uint ci = 0u; ci < NCH; ci++)
		acc[ci] = 0.0f;
#ifdef ROPE_IN
	uint first = lo;
#endif
	for (uint c0 = first, next; c0 < hi; c0 = next) {
		uint key = c0 + kk;
		part_dot[l] = key < hi ? partial_dot(kr, p) : 0.0f;
		barrier();
		if (l < KP) {
			float s = 0.0f;
			for (uint r = 0u; r < LPK; r++)
				s += part_dot[l * LPK + r];
			score[l] = key_live(c0 + l, hi, t) ? s * SCALE : NEG_BIG;
		}
		barrier();
		float m_new = m;
		for (uint i = 0u; i < KP; i++)
			m_new = max(m_new, score[i]);
		if (l < KP)
			weight[l] = key_live(c0 + l, hi, t) ? exp(score[l] - m_new) : 0.0f;
		barrier();
		// The next pass writes weight only after two more barriers, which
		// every lane reaches only when done reading it here.
		next = live_pass(c0 + KP, hi);
		load_key(kr, next + kk, hi, kvh, p);
		float corr = exp(m - m_new);
		uint cnt = min(KP, hi - c0);
		float wsum = 0.0f;
		if (cnt == KP) {
#pragma unroll
			for (uint i = 0u; i < KP; i++)
				wsum += weight[i];
		} else {
			for (uint i = 0u; i < cnt; i++)
				wsum += weight[i];
		}
		lsum = lsum * corr + wsum;
#pragma unroll
		for (uint ci = 0u; ci < NCH; ci++) {
			uint c = l + ci * LS_X;
			if (c >= DV)
				break;
			float a = acc[ci] * corr;
#pragma unroll
			for (uint i = 0u; i < KP; i++)
				if (i < cnt)
					a += weight[i] * vv[ci][i];
			acc[ci] = a;
		}
		load_values(vv, next, hi, kvh, l);
		m = m_new;
	}
#ifdef PARTIAL
	uint base = ((t * HQ + j) * NBLK + gl_WorkGroupID.z) * (DV + 2u);
#pragma unroll
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
#pragma unroll
	for (uint ci = 0u; ci < NCH; ci++) {
		uint c = l + ci * LS_X;
		if (c < DV)
			y[(t * HQ + j) * DV + c] = epilogue(acc[ci] / lsum, (t * HQ + j) * DV + c);
	}
#endif
}
