// qsa_select: the QSA indexer (docs/ops.md). The twin of
// kernels/vulkan/qsa_select.comp, which gives the scheme: query t at
// p = pos + t scores the nb = (p+1) / BLOCK complete key blocks (lane l
// builds block keys b = l, l+LS_X, ... alone: mean, (1+w) rms norm, NeoX
// rope on the first ROT channels, then sum_h relu(q_h . key) / sqrt(D), every
// sum in one lane in order); lane 0 picks the best min(TOP, nb) (ties: lower
// index) and the mask row gets them plus the tail rows nb*BLOCK .. p. The
// loops over key[] are unrolled so it stays in registers (README.md).
// Grid: x = 1, y = T.

HALO_SHARED float qs[H * D];
HALO_SHARED float score[NB_MAX];
HALO_SHARED uint picked[NB_MAX];
// @struct

const float *__restrict__ q = (const float *)args.b[B_Q];
const float *__restrict__ keys = (const float *)args.b[B_K];
const float *__restrict__ kw = (const float *)args.b[B_NW];
float *__restrict__ mask = (float *)args.b[B_Y];

float block_score(uint b)
{
	float key[D];
	float ss = 0.0f;
#pragma unroll
	for (uint i = 0u; i < D; i++) {
		float acc = 0.0f;
		for (uint r = 0u; r < BLOCK; r++)
			acc += keys[(b * BLOCK + r) * D + i];
		key[i] = acc / float(BLOCK);
		ss += key[i] * key[i];
	}
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

// True when block a ranks before block b: higher score, then lower index.
static bool ranks_before(uint a, uint b)
{
	return score[a] > score[b] || (score[a] == score[b] && a < b);
}

static void pick_top(uint nb)
{
	uint prev = NB_MAX;
	for (uint b = 0u; b < nb; b++)
		picked[b] = 0u;
	for (uint n = 0u; n < min(TOP, nb); n++) {
		uint best = NB_MAX;
		for (uint b = 0u; b < nb; b++)
			if ((prev == NB_MAX || ranks_before(prev, b)) && (best == NB_MAX || ranks_before(b, best)))
				best = b;
		picked[best] = 1u;
		prev = best;
	}
}

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
	uint p = step_pos + t, nb = (p + 1u) / BLOCK;
	for (uint i = l; i < H * D; i += LS_X)
		qs[i] = q[t * H * D + i];
	barrier();
	for (uint b = l; b < nb; b += LS_X)
		score[b] = block_score(b);
	barrier();
	if (l == 0u)
		pick_top(nb);
	barrier();
	for (uint j = l; j < C; j += LS_X) {
		uint b = j / BLOCK;
		bool on = j <= p && (b >= nb || picked[b] != 0u);
		mask[t * C + j] = on ? 1.0f : 0.0f;
	}
}
