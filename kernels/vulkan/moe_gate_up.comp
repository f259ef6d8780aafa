// moe_gate_up: x [T,H], ids [T,KSEL] i32, gate/up [E,F,H] -> act [T,KSEL,F]:
// act[t,j,f] = silu(gate[e] x[t])[f] * (up[e] x[t])[f], e = ids[t,j] (an id
// outside [0,E) reads expert 0). With LIMIT (defined only when set, DeepSeek
// V4's swiglu_limit) g = min(g, LIMIT) and u = clamp(u, -LIMIT, LIMIT) first.
// The first half of a routed-expert FFN; the second is moe_down. Split so
// that decode spreads KSEL*F dot products over the whole GPU instead of one
// workgroup per token.
// Each workgroup owns NR consecutive rows r = j*F + f of one token: lane l
// sums h = l, l + LS_X, ... (VEC8: 8-wide chunks, one 16-byte load of f16
// weights) and a fixed tree combines the lanes, so a row's result depends
// neither on T nor on the subgroup size. Grid: x = ceil(KSEL*F / NR), y = T.

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
			for (uint c = l; c < H / 8u; c += LS_X) {
				vec4 xa = x4[(t * H) / 4u + 2u * c], xb = x4[(t * H) / 4u + 2u * c + 1u];
				vec4 wa, wb;
				load8_a(base / 8u + c, wa, wb);
				g += dot(xa, wa) + dot(xb, wb);
				load8_b(base / 8u + c, wa, wb);
				u += dot(xa, wa) + dot(xb, wb);
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
