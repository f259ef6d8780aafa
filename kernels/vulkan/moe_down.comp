// moe_down: act [T,KSEL,F], ids [T,KSEL] i32, w [T,KSEL], down [E,H,F] ->
// y [T,H] = sum_j w[t,j] down[e] act[t,j], e = ids[t,j] (an id outside
// [0,E) reads expert 0). The second half of a routed-expert FFN (moe_gate_up
// is the first).
// Each workgroup owns NR consecutive outputs h of one token. Lane l sums,
// for each j in order, w[t,j] times its part of row h of expert e (f = l,
// l + LS_X, ...; VEC8: 8-wide chunks, CPR of each row
// loaded before any is used), and one fixed tree combines the lanes
// at the end: the order depends neither on T nor on the subgroup size, and
// no atomics are needed. One tree for all KSEL experts, not one per expert:
// with no barrier between them the experts' loads are in flight together (a
// tree per expert left decode of 10 experts of 2560 x 640 f16 at 155 GB/s on
// the H200, bench/results-h200-qwen4.txt). Grid: x = ceil(H / NR), y = T.

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
	for (uint j = 0u; j < KSEL; j++) {
		uint e = expert(ids[t * KSEL + j]), xb = (t * KSEL + j) * F;
		float wj = wr[t * KSEL + j];
#if VEC8
		// CPR chunks of each of the NR rows loaded, then used: the loads
		// of a round are in flight together
		float d[NR];
		for (uint i = 0u; i < NR; i++)
			d[i] = 0.0;
		for (uint u0 = 0u; u0 < CPL; u0 += CPR) {
			vec4 wa[NR * CPR], wb[NR * CPR];
			for (uint i = 0u; i < NR; i++)
				for (uint q = 0u; q < CPR; q++) {
					uint c = l + (u0 + q) * LS_X;
					if (h0 + i < H && c < F / 8u)
						load8_a(((e * H + h0 + i) * F) / 8u + c, wa[i * CPR + q], wb[i * CPR + q]);
				}
			for (uint i = 0u; i < NR; i++)
				for (uint q = 0u; q < CPR; q++) {
					uint c = l + (u0 + q) * LS_X;
					if (h0 + i < H && c < F / 8u)
						d[i] += dot(x4[xb / 4u + 2u * c], wa[i * CPR + q]) +
							dot(x4[xb / 4u + 2u * c + 1u], wb[i * CPR + q]);
				}
		}
		for (uint i = 0u; i < NR; i++)
			acc[i] += wj * d[i];
#else
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
#endif
	}
	for (uint i = 0u; i < NR; i++)
		red[i][l] = acc[i];
	reduce_rows(l, NR);
	if (l < NR && h0 + l < H)
		y[t * H + h0 + l] = red[l][0];
}
