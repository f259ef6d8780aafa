// moe_gate_up: x [T,H], ids [T,KSEL] i32, gate/up [E,F,H] -> act [T,KSEL,F]:
// act[t,j,f] = silu(gate[e] x[t])[f] * (up[e] x[t])[f], e = ids[t,j] (an id
// outside [0,E) reads expert 0). With LIMIT (defined only when set, DeepSeek
// V4's swiglu_limit) g = min(g, LIMIT) and u = clamp(u, -LIMIT, LIMIT) first.
// The twin of kernels/vulkan/moe_gate_up.comp (the scheme: NR rows per
// workgroup, lanes over h, moe_weights.hip's fixed tree).
// Grid: x = ceil(KSEL*F / NR), y = T.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
const int *__restrict__ ids = (const int *)args.b[B_IDS];
float *__restrict__ y = (float *)args.b[B_Y];
#if VEC8
const vec4 *__restrict__ x4 = (const vec4 *)args.b[B_X];
#endif

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y, r0 = gl_WorkGroupID.x * NR;
	for (uint i = 0u; i < NR; i++) {
		uint r = r0 + i;
		float g = 0.0f, u = 0.0f;
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
