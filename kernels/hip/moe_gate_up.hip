// moe_gate_up: x [T,H], ids [T,KSEL] i32, gate/up [E,F,H] -> act [T,KSEL,F]:
// act[t,j,f] = silu(gate[e] x[t])[f] * (up[e] x[t])[f], e = ids[t,j] (an id
// outside [0,E) reads expert 0). With LIMIT (defined only when set, DeepSeek
// V4's swiglu_limit) g = min(g, LIMIT) and u = clamp(u, -LIMIT, LIMIT) first.
// The twin of kernels/vulkan/moe_gate_up.comp (the scheme: with VEC8 SPLIT
// lanes a row, CPR rounds of chunks loaded before use, a fixed tree over the
// SPLIT lanes; without, NR rows per workgroup one after another, lanes over
// h, moe_weights.hip's tree over the workgroup).
// Grid: x = ceil(KSEL*F / NR), y = T.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
const int *__restrict__ ids = (const int *)args.b[B_IDS];
float *__restrict__ y = (float *)args.b[B_Y];
#if VEC8
const vec4 *__restrict__ x4 = (const vec4 *)args.b[B_X];
#endif

#ifdef LIMIT
static float swiglu(float g, float u) { return silu_f(min(g, LIMIT)) * clamp(u, -LIMIT, LIMIT); }
#else
static float swiglu(float g, float u) { return silu_f(g) * u; }
#endif

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y, r0 = gl_WorkGroupID.x * NR;
#if VEC8
	const uint CH = H / 8u;
	uint m = l % SPLIT, r = r0 + l / SPLIT, xb = (t * H) / 4u;
	float g = 0.0f, u = 0.0f;
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
		float g = 0.0f, u = 0.0f;
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
