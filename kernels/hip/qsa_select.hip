// qsa_select: the QSA indexer (docs/ops.md). The twin of
// kernels/vulkan/qsa_select.comp, which gives the scheme: query t at
// p = pos + t scores the nb = (p+1) / BLOCK complete key blocks (lane l
// builds block keys b = l, l+LS_X, ... alone: mean, (1+w) rms norm, NeoX
// rope on the first ROT channels, then sum_h relu(q_h . key) / sqrt(D), every
// sum in one lane in order, the scores kept in the token's mask row); the
// lanes pick the best min(TOP, nb) (ties: lower index) together (pick_top)
// and the mask row gets them plus the tail rows nb*BLOCK .. p. The loops
// over key[] are unrolled so it stays in registers (README.md).
// With BLOCKS (qsa_select_blocks) a token's blocks are spread over grid x,
// a block a lane, and the token's last workgroup to finish scoring picks,
// as the GLSL's BLOCKS.
// Grid: x = 1 (BLOCKS: ceil(C / BLOCK / LS_X)), y = T.

HALO_SHARED float qs[H * D];
HALO_SHARED uint picked[PICK_WORDS]; // bit b % 32 of word b / 32: block b is kept
HALO_SHARED uint lane_n[LS_X];
HALO_SHARED uint bins[256]; // select_key's counts of one byte's values
// @struct

const float *__restrict__ q = (const float *)args.b[B_Q];
const float *__restrict__ keys = (const float *)args.b[B_K];
#if VEC4
const vec4 *__restrict__ keys4 = (const vec4 *)args.b[B_K];
#endif
const float *__restrict__ kw = (const float *)args.b[B_NW];
#ifdef BLOCKS
// the scores of the token's other workgroups are read by its last: volatile,
// so that those loads reach the device's coherent cache (attention_merge.hip's part)
volatile float *mask = (volatile float *)args.b[B_Y];
#else
float *mask = (float *)args.b[B_Y]; // scores, then the mask: read and written
#endif

float block_score(uint b)
{
	float key[D];
	float ss = 0.0f;
	// the mean key, four channels a load with VEC4 (qsa_select.comp)
#if VEC4
#pragma unroll
	for (uint i = 0u; i < D; i += 4u) {
		vec4 acc = vec4(0.0f);
		for (uint r = 0u; r < BLOCK; r++)
			acc += keys4[((b * BLOCK + r) * D + i) / 4u];
#pragma unroll
		for (uint c = 0u; c < 4u; c++) {
			key[i + c] = acc[c] / float(BLOCK);
			ss += key[i + c] * key[i + c];
		}
	}
#else
#pragma unroll
	for (uint i = 0u; i < D; i++) {
		float acc = 0.0f;
		for (uint r = 0u; r < BLOCK; r++)
			acc += keys[(b * BLOCK + r) * D + i];
		key[i] = acc / float(BLOCK);
		ss += key[i] * key[i];
	}
#endif
	float inv = inversesqrt(ss / float(D) + EPS);
#pragma unroll
	for (uint i = 0u; i < D; i++)
		key[i] = key[i] * inv * (kw[i] + 1.0f);
	float p = float(b * BLOCK);
#pragma unroll
	for (uint i = 0u; i < ROT / 2u; i++) {
		float a = p * THETA[i], c = cos(a), s = sin(a);
		float x1 = key[i], x2 = key[i + ROT / 2u];
		key[i] = x1 * c - x2 * s;
		key[i + ROT / 2u] = x2 * c + x1 * s;
	}
	float total = 0.0f;
	for (uint h = 0u; h < H; h++) {
		float d = 0.0f;
#pragma unroll
		for (uint i = 0u; i < D; i++)
			d += qs[h * D + i] * key[i];
		total += max(d, 0.0f);
	}
	return total / sqrt(float(D));
}

// A score's rank key: a higher score has a higher key, and +0 and -0 (equal
// scores, which rank by index) have one key.
static uint rank_key(float s)
{
	uint u = floatBitsToUint(s);
	if ((u & 0x7fffffffu) == 0u)
		u = 0u;
	return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
}

// The TOP-th best of the nb >= TOP blocks' keys a byte at a time, and in
// need how many of the blocks at it are among the TOP (qsa_select.comp's
// select_key).
uint select_key(uint l, uint row, uint nb, uint &need)
{
	uint v = 0u;
	need = TOP;
	for (int shift = 24; shift >= 0; shift -= 8) {
		uint high = shift == 24 ? 0u : ~0u << uint(shift + 8);
		for (uint i = l; i < 256u; i += LS_X)
			bins[i] = 0u;
		barrier();
		for (uint b = l; b < nb; b += LS_X) {
			uint k = rank_key(mask[row + b]);
			if ((k & high) == v)
				atomicAdd(bins[(k >> uint(shift)) & 255u], 1u);
		}
		barrier();
		uint above = 0u, digit = 255u;
		while (above + bins[digit] < need) {
			above += bins[digit];
			digit--;
		}
		need -= above;
		v |= digit << uint(shift);
		barrier();
	}
	return v;
}

// The TOP best of nb > TOP blocks (qsa_select.comp's pick_top).
void pick_top(uint l, uint row, uint nb)
{
	uint need;
	uint v = select_key(l, row, nb, need);
	uint per = (((nb + LS_X - 1u) / LS_X) + 31u) & ~31u;
	uint b0 = min(l * per, nb), b1 = min(b0 + per, nb);
	uint eq = 0u;
	for (uint b = b0; b < b1; b++)
		eq += uint(rank_key(mask[row + b]) == v);
	lane_n[l] = eq;
	barrier();
	uint before = 0u;
	for (uint i = 0u; i < l; i++)
		before += lane_n[i];
	for (uint w = b0; w < b1; w += 32u) {
		uint bits = 0u;
		for (uint b = w; b < min(w + 32u, b1); b++) {
			uint k = rank_key(mask[row + b]);
			if (k > v || (k == v && before < need))
				bits |= 1u << (b - w);
			before += uint(k == v);
		}
		picked[w / 32u] = bits;
	}
}

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
	uint p = step_pos + t, nb = (p + 1u) / BLOCK, row = t * C;
	// nb <= TOP keeps every block, so nothing is scored (qsa_select.comp);
	// nb is the same for every lane. Workgroup g of the `live` ones with
	// blocks scores blocks g * LS_X + l, then every live * LS_X-th.
#ifdef BLOCKS
	uint g = gl_WorkGroupID.x, live = nb > TOP ? (nb + LS_X - 1u) / LS_X : 1u;
	if (g >= live)
		return;
#else
	uint g = 0u, live = 1u;
#endif
	if (nb > TOP) {
		for (uint i = l; i < H * D; i += LS_X)
			qs[i] = q[t * H * D + i];
		barrier();
		for (uint b = g * LS_X + l; b < nb; b += live * LS_X)
			mask[row + b] = block_score(b);
#ifdef BLOCKS
		if (!last_workgroup(t, live))
			return;
#endif
		barrier();
		pick_top(l, row, nb);
		barrier();
	}
	for (uint j = l; j < C; j += LS_X) {
		uint b = j / BLOCK;
		bool on = j <= p && (b >= nb || nb <= TOP || ((picked[b / 32u] >> (b % 32u)) & 1u) != 0u);
		mask[row + j] = on ? 1.0f : 0.0f;
	}
}
