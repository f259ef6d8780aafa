// moe_down: act [T,KSEL,F], ids [T,KSEL] i32, w [T,KSEL], down [E,H,F] ->
// y [T,H] = sum_j w[t,j] down[e] act[t,j], e = ids[t,j] (an id outside
// [0,E) reads expert 0). The second half of a routed-expert FFN (moe_gate_up
// is the first).
// Each workgroup owns NR consecutive outputs h of one token. With VEC8 a row's
// KSEL * F / 8 16-byte chunks of all its experts are one range (chunk g =
// j * CF + c: expert j's chunk c), and lane l sums w[t,j] times chunks g = l,
// l + LS_X, ... in order, CPR of them for each of the NR rows loaded before
// any is used; every expert's loads are in flight together, across the whole
// workgroup. (A loop over the experts, each spread over the lanes, had
// 1.25 chunks a lane per expert at F = 640 and left 10 experts of 2560 x 640
// f16 at 0.77 TB/s on the H200, a sixth of its ceiling: ten rounds of load
// latency a token; bench/results-h200-qwen4.txt.) Without VEC8 lane l sums,
// for each j in order, w[t,j] times its part of row h of expert e (f = l,
// l + LS_X, ...). One fixed tree combines the lanes at the end: the order
// depends neither on T nor on the subgroup size, and no atomics are needed.
// Grid: x = ceil(H / NR), y = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_IDS) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = B_WR) readonly buffer WR { float wr[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };
#if VEC8
layout(set = 0, binding = B_X) readonly buffer X4 { vec4 x4[]; };
#endif

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y, h0 = gl_WorkGroupID.x * NR;
	float acc[NR];
	for (uint i = 0u; i < NR; i++)
		acc[i] = 0.0;
#if VEC8
	const uint CF = F / 8u, G = KSEL * CF;
	for (uint g0 = 0u; g0 < G; g0 += CPR * LS_X) {
		W8 w[NR * CPR];
		for (uint q = 0u; q < CPR; q++) {
			uint g = g0 + q * LS_X + l, j = g / CF, c = g % CF;
			if (g < G) {
				uint e = expert(ids[t * KSEL + j]);
				for (uint i = 0u; i < NR; i++)
					if (h0 + i < H)
						w[i * CPR + q] = load8_raw_a(((e * H + h0 + i) * F) / 8u + c);
			}
		}
		for (uint q = 0u; q < CPR; q++) {
			uint g = g0 + q * LS_X + l, j = g / CF, c = g % CF;
			if (g < G) {
				uint xb = ((t * KSEL + j) * F) / 4u + 2u * c;
				vec4 xa = x4[xb], xc = x4[xb + 1u];
				float wj = wr[t * KSEL + j];
				for (uint i = 0u; i < NR; i++)
					if (h0 + i < H) {
						vec4 wa, wb;
						unpack8_raw(w[i * CPR + q], wa, wb);
						acc[i] += wj * (dot(xa, wa) + dot(xc, wb));
					}
			}
		}
	}
#else
	for (uint j = 0u; j < KSEL; j++) {
		uint e = expert(ids[t * KSEL + j]), xb = (t * KSEL + j) * F;
		float wj = wr[t * KSEL + j];
		for (uint i = 0u; i < NR; i++) {
			uint h = h0 + i;
			float d = 0.0;
			if (h < H) {
				uint base = (e * H + h) * F;
				for (uint f = l; f < F; f += LS_X)
					d += load_a(base + f) * x[xb + f];
			}
			acc[i] += wj * d;
		}
	}
#endif
	for (uint i = 0u; i < NR; i++)
		red[i][l] = acc[i];
	reduce_rows(l, NR, LS_X);
	if (l < NR && h0 + l < H)
		y[t * H + h0 + l] = red[l][0];
}
