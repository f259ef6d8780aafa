// moe_gate_up: x [T,H], ids [T,KSEL] i32, gate/up [E,F,H] -> act [T,KSEL,F]:
// act[t,j,f] = silu(gate[e] x[t])[f] * (up[e] x[t])[f], e = ids[t,j] (an id
// outside [0,E) reads expert 0). With LIMIT (defined only when set, DeepSeek
// V4's swiglu_limit) g = min(g, LIMIT) and u = clamp(u, -LIMIT, LIMIT) first.
// The first half of a routed-expert FFN; the second is moe_down. Split so
// that decode spreads KSEL*F dot products over the whole GPU instead of one
// workgroup per token.
// Each workgroup owns NR consecutive rows r = j*F + f of one token: lane l
// sums h = l, l + LS_X, ... (VEC8: 8-wide chunks, one 16-byte load of f16
// weights, CPR of gate's and up's loaded before any is used) and a fixed
// tree combines the lanes, so a row's result depends neither on T nor on
// the subgroup size. Grid: x = ceil(KSEL*F / NR), y = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_IDS) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };
#if VEC8
layout(set = 0, binding = B_X) readonly buffer X4 { vec4 x4[]; };
#endif

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y, r0 = gl_WorkGroupID.x * NR;
	for (uint i = 0u; i < NR; i++) {
		uint r = r0 + i;
		float g = 0.0, u = 0.0;
		if (r < KSEL * F) {
			uint base = (expert(ids[t * KSEL + r / F]) * F + r % F) * H;
#if VEC8
			// CPR chunks of gate and up loaded, then used: the loads of a
			// round are in flight together
			for (uint u0 = 0u; u0 < CPL; u0 += CPR) {
				vec4 ga[CPR], gb[CPR], ua[CPR], ub[CPR];
				for (uint q = 0u; q < CPR; q++) {
					uint c = l + (u0 + q) * LS_X;
					if (c < H / 8u) {
						load8_a(base / 8u + c, ga[q], gb[q]);
						load8_b(base / 8u + c, ua[q], ub[q]);
					}
				}
				for (uint q = 0u; q < CPR; q++) {
					uint c = l + (u0 + q) * LS_X;
					if (c < H / 8u) {
						vec4 xa = x4[(t * H) / 4u + 2u * c], xb = x4[(t * H) / 4u + 2u * c + 1u];
						g += dot(xa, ga[q]) + dot(xb, gb[q]);
						u += dot(xa, ua[q]) + dot(xb, ub[q]);
					}
				}
			}
#else
			for (uint h = l; h < H; h += LS_X) {
				g += load_a(base + h) * x[t * H + h];
				u += load_b(base + h) * x[t * H + h];
			}
#endif
		}
		red[2u * i][l] = g;
		red[2u * i + 1u][l] = u;
	}
	reduce_rows(l, 2u * NR);
#ifdef LIMIT
	if (l < NR && r0 + l < KSEL * F)
		y[t * KSEL * F + r0 + l] =
			silu_f(min(red[2u * l][0], LIMIT)) * clamp(red[2u * l + 1u][0], -LIMIT, LIMIT);
#else
	if (l < NR && r0 + l < KSEL * F)
		y[t * KSEL * F + r0 + l] = silu_f(red[2u * l][0]) * red[2u * l + 1u][0];
#endif
}
