// moe_down: act [T,KSEL,F], ids [T,KSEL] i32, w [T,KSEL], down [E,H,F] ->
// y [T,H] = sum_j w[t,j] down[e] act[t,j], e = ids[t,j] (an id outside
// [0,E) reads expert 0). The twin of kernels/vulkan/moe_down.comp (the
// scheme: NR outputs per workgroup; with VEC8 a row's chunks of all KSEL
// experts one range g = j * CF + c that the lanes split, without it each
// lane's share summed over j in order; one fixed tree at the end,
// moe_weights.hip). The loops over acc[] are unrolled so it stays in
// registers (README.md).
// Grid: x = ceil(H / NR), y = T.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
const int *__restrict__ ids = (const int *)args.b[B_IDS];
const float *__restrict__ wr = (const float *)args.b[B_WR];
float *__restrict__ y = (float *)args.b[B_Y];
#if VEC8
const vec4 *__restrict__ x4 = (const vec4 *)args.b[B_X];
#endif

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y, h0 = gl_WorkGroupID.x * NR;
	float acc[NR];
#pragma unroll
	for (uint i = 0u; i < NR; i++)
		acc[i] = 0.0f;
#if VEC8
	const uint CF = F / 8u, G = KSEL * CF;
	for (uint g0 = 0u; g0 < G; g0 += CPR * LS_X) {
		W8 w[NR * CPR];
#pragma unroll
		for (uint q = 0u; q < CPR; q++) {
			uint g = g0 + q * LS_X + l, j = g / CF, c = g % CF;
			if (g < G) {
				uint e = expert(ids[t * KSEL + j]);
#pragma unroll
				for (uint i = 0u; i < NR; i++)
					if (h0 + i < H)
						w[i * CPR + q] = load8_raw_a(((e * H + h0 + i) * F) / 8u + c);
			}
		}
#pragma unroll
		for (uint q = 0u; q < CPR; q++) {
			uint g = g0 + q * LS_X + l, j = g / CF, c = g % CF;
			if (g < G) {
				uint xb = ((t * KSEL + j) * F) / 4u + 2u * c;
				vec4 xa = x4[xb], xc = x4[xb + 1u];
				float wj = wr[t * KSEL + j];
#pragma unroll
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
#pragma unroll
		for (uint i = 0u; i < NR; i++) {
			uint h = h0 + i;
			float d = 0.0f;
			if (h < H) {
				uint base = (e * H + h) * F;
				for (uint f = l; f < F; f += LS_X)
					d += load_a(base + f) * x[xb + f];
			}
			acc[i] += wj * d;
		}
	}
#endif
#pragma unroll
	for (uint i = 0u; i < NR; i++)
		red[i][l] = acc[i];
	reduce_rows(l, NR, LS_X);
	if (l < NR && h0 + l < H)
		y[t * H + h0 + l] = red[l][0];
}
