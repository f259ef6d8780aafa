// qsa_select: the QSA indexer (docs/ops.md). For query t at p = pos + t, the
// nb = (p+1) / BLOCK complete key blocks are scored and the best
// min(TOP, nb) of them (ties: lower index) plus the tail rows nb*BLOCK .. p
// get mask 1, every other row of the C-wide mask row 0.
// One workgroup per token. Lane l computes block keys b = l, l+LS_X, ... on
// its own: the mean of the block's BLOCK rows (in order), the (1+w) rms norm
// (sum of squares in order), NeoX rope at position b*BLOCK on the first ROT
// channels (θ from the f64 table THETA, angle in f32), then the score
// sum_h relu(q_h . key) / sqrt(D) against the token's q staged in shared
// memory. Every sum runs in one lane in a fixed order, so a token's scores,
// and so its mask, never depend on T. Lane 0 then picks the TOP blocks, each
// scan finding the best block ranked after the previous pick (so nothing is
// marked), and every lane writes its share of the mask row.
// Grid: x = 1, y = T.

layout(set = 0, binding = B_Q) readonly buffer Qb { float q[]; };
layout(set = 0, binding = B_K) readonly buffer Kb { float keys[]; };
layout(set = 0, binding = B_NW) readonly buffer Wb { float kw[]; };
layout(set = 0, binding = B_Y) writeonly buffer Mb { float mask[]; };

shared float qs[H * D];
shared float score[NB_MAX];
shared uint picked[NB_MAX];

float block_score(uint b)
{
	float key[D];
	float ss = 0.0;
	for (uint i = 0u; i < D; i++) {
		float acc = 0.0;
		for (uint r = 0u; r < BLOCK; r++)
			acc += keys[(b * BLOCK + r) * D + i];
		key[i] = acc / float(BLOCK);
		ss += key[i] * key[i];
	}
	float inv = inversesqrt(ss / float(D) + EPS);
	for (uint i = 0u; i < D; i++)
		key[i] = key[i] * inv * (kw[i] + 1.0);
	float p = float(b * BLOCK);
	for (uint i = 0u; i < ROT / 2u; i++) {
		float a = p * THETA[i], c = cos(a), s = sin(a);
		float x1 = key[i], x2 = key[i + ROT / 2u];
		key[i] = x1 * c - x2 * s;
		key[i + ROT / 2u] = x2 * c + x1 * s;
	}
	float total = 0.0;
	for (uint h = 0u; h < H; h++) {
		float dot = 0.0;
		for (uint i = 0u; i < D; i++)
			dot += qs[h * D + i] * key[i];
		total += max(dot, 0.0);
	}
	return total / sqrt(float(D));
}

// True when block a ranks before block b: higher score, then lower index.
bool ranks_before(uint a, uint b)
{
	return score[a] > score[b] || (score[a] == score[b] && a < b);
}

void pick_top(uint nb)
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
		mask[t * C + j] = on ? 1.0 : 0.0;
	}
}
