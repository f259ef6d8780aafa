// topk (x [T,N] -> ids [T,KSEL] i32, vals [T,KSEL]) and, with ROUTE,
// moe_route (logits [T,N] -> ids, w): the values ranked are then the softmax
// of the row (max-subtracted, f32), and with NORM the KSEL selected weights
// are divided by their sum (taken in selection order).
// Order: larger value first, equal values by lower index. Selection j scans
// for the best element ranked after selection j-1, so nothing is marked:
// lane l keeps the first best of n = l, l + LS_X, ..., then a fixed tree
// keeps the better of each pair. A row's result never depends on T.
// Grid: x = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_IDS) writeonly buffer Ids { int ids[]; };
layout(set = 0, binding = B_VALS) writeonly buffer Vals { float vals[]; };

#define NONE 0xffffffffu
// Stands in for -infinity: exp(NEG_BIG - m) is exactly 0 for any finite m.
#define NEG_BIG -3.0e38
shared float bv[LS_X];
shared uint bi[LS_X];

#if ROUTE
float row_max;
float row_sum;

void softmax_stats(uint l, uint row)
{
	float m = NEG_BIG;
	for (uint n = l; n < N; n += LS_X)
		m = max(m, x[row + n]);
	row_max = tree_max(l, m);
	float s = 0.0;
	for (uint n = l; n < N; n += LS_X)
		s += exp(x[row + n] - row_max);
	row_sum = tree_sum(l, s);
}

float value(uint row, uint n) { return exp(x[row + n] - row_max) / row_sum; }
#else
float value(uint row, uint n) { return x[row + n]; }
#endif

// (v, i) ranks before (w, j); NONE ranks last.
bool before(float v, uint i, float w, uint j)
{
	return j == NONE || (i != NONE && (v > w || (v == w && i < j)));
}

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.x, row = t * N;
#if ROUTE
	softmax_stats(l, row);
#endif
	float pv = 0.0, chosen[KSEL];
	uint pi = NONE;
	for (uint j = 0u; j < KSEL; j++) {
		float best = 0.0;
		uint idx = NONE;
		for (uint n = l; n < N; n += LS_X) {
			float v = value(row, n);
			if ((pi == NONE || before(pv, pi, v, n)) && (idx == NONE || v > best)) {
				best = v;
				idx = n;
			}
		}
		bv[l] = best;
		bi[l] = idx;
		for (uint s = LS_X / 2u; s > 0u; s >>= 1) {
			barrier();
			if (l < s && before(bv[l + s], bi[l + s], bv[l], bi[l])) {
				bv[l] = bv[l + s];
				bi[l] = bi[l + s];
			}
		}
		barrier();
		pv = bv[0];
		pi = bi[0];
		chosen[j] = pv;
		if (l == 0u)
			ids[t * KSEL + j] = int(pi);
		barrier(); // every lane has read the winner before bv is reused
	}
	if (l != 0u)
		return;
#if ROUTE && NORM
	float sum = 0.0;
	for (uint j = 0u; j < KSEL; j++)
		sum += chosen[j];
	for (uint j = 0u; j < KSEL; j++)
		vals[t * KSEL + j] = chosen[j] / sum;
#else
	for (uint j = 0u; j < KSEL; j++)
		vals[t * KSEL + j] = chosen[j];
#endif
}
