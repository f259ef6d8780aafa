// moe_gate_up: x [T,H], ids [T,KSEL] i32, gate/up [E,F,H] -> act [T,KSEL,F]:
// act[t,j,f] = silu(gate[e] x[t])[f] * (up[e] x[t])[f], e = ids[t,j] (an id
// outside [0,E) reads expert 0). With LIMIT (defined only when set, DeepSeek
// V4's swiglu_limit) g = min(g, LIMIT) and u = clamp(u, -LIMIT, LIMIT) first.
// The first half of a routed-expert FFN; the second is moe_down. Split so
// that decode spreads KSEL*F dot products over the whole GPU instead of one
// workgroup per token.
// Each workgroup owns NR consecutive rows r = j*F + f of one token. With
// VEC8 (H a multiple of 8) a row is SPLIT lanes' (NR = LS_X / SPLIT): lane m
// of the row sums the 8-wide chunks c = m, m + SPLIT, ... in order, its gate
// and up chunks of CPR rounds loaded before any is used (f16 held packed), and
// a fixed tree over the SPLIT lanes combines them; every lane has loads in
// flight and the widths (LS_X) differ only in how many rows a workgroup takes,
// so they give the same bits. (All lanes of a workgroup on one row at a time,
// NR rows one after another, left 10 experts of 2560 x 640 f16 at 1.8 TB/s
// on the H200, 42% of its ceiling: bench/results-h200-qwen4.txt.) Without
// VEC8 lane l sums h = l, l + LS_X, ... of each of the NR rows in turn and one
// tree over the workgroup combines them. Either way a row's result depends
// neither on T nor on the subgroup size. Grid: x = ceil(KSEL*F / NR), y = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_IDS) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };
#if VEC8
layout(set = 0, binding = B_X) readonly buffer X4 { vec4 x4[]; };
#endif

#ifdef LIMIT
float swiglu(float g, float u) { return silu_f(min(g, LIMIT)) * clamp(u, -LIMIT, LIMIT); }
#else
float swiglu(float g, float u) { return silu_f(g) * u; }
#endif

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y, r0 = gl_WorkGroupID.x * NR;
#if VEC8
	const uint CH = H / 8u;
	uint m = l % SPLIT, r = r0 + l / SPLIT, xb = (t * H) / 4u;
	float g = 0.0, u = 0.0;
	if (r < KSEL * F) {
		uint base = ((expert(ids[t * KSEL + r / F]) * F + r % F) * H) / 8u;
		for (uint c0 = m; c0 < CH; c0 += CPR * SPLIT) {
			W8 wg[CPR], wu[CPR];
			for (uint q = 0u; q < CPR; q++)
				if (c0 + q * SPLIT < CH) {
					wg[q] = load8_raw_a(base + c0 + q * SPLIT);
					wu[q] = load8_raw_b(base + c0 + q * SPLIT);
				}
			for (uint q = 0u; q < CPR; q++) {
				uint c = c0 + q * SPLIT;
				if (c < CH) {
					vec4 xa = x4[xb + 2u * c], xc = x4[xb + 2u * c + 1u], wa, wb;
					unpack8_raw(wg[q], wa, wb);
					g += dot(xa, wa) + dot(xc, wb);
					unpack8_raw(wu[q], wa, wb);
					u += dot(xa, wa) + dot(xc, wb);
				}
			}
		}
	}
	red[0][l] = g;
	red[1][l] = u;
	reduce_rows(l, 2u, SPLIT);
	if (m == 0u && r < KSEL * F)
		y[t * KSEL * F + r] = swiglu(red[0][l], red[1][l]);
#else
	for (uint i = 0u; i < NR; i++) {
		uint r = r0 + i;
		float g = 0.0, u = 0.0;
		if (r < KSEL * F) {
			uint base = (expert(ids[t * KSEL + r / F]) * F + r % F) * H;
			for (uint h = l; h < H; h += LS_X) {
				g += load_a(base + h) * x[t * H + h];
				u += load_b(base + h) * x[t * H + h];
			}
		}
		red[2u * i][l] = g;
		red[2u * i + 1u][l] = u;
	}
	reduce_rows(l, 2u * NR, LS_X);
	if (l < NR && r0 + l < KSEL * F)
		y[t * KSEL * F + r0 + l] = swiglu(red[2u * l][0], red[2u * l + 1u][0]);
#endif
}
