// matvec, for steps of T <= T_MAX <= 8 tokens: y[t,n] = sum_k x'[t,k] w[n,k]
// (x' = x, or rms_norm(x) with the fused prologue), then the epilogue.
// Decode is memory-bound, so the weights are streamed once for all T rows:
// each workgroup owns NC consecutive columns n and computes them for every t.
// Lane l sums k = l, l + LS_X, ... in order (with VEC8, the 8-wide chunks
// j = l, l + LS_X, ... of k = 8j..8j+7, one 16-byte weight load per chunk for
// f16), and the lanes are combined by a fixed tree, so row t's result never
// depends on T (batch invariance). Grid: x = ceil(N / NC).

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };
#if PRO_RMS
layout(set = 0, binding = B_NW) readonly buffer NW { float nw[]; };
#endif

#define NROWS (NC * T_MAX)
shared float red[NROWS][LS_X];

// red[j][0] = sum over lanes of red[j][*] for the rows j < rows, in a fixed
// tree order (the same for every row, whatever rows is).
void reduce_rows(uint l, uint rows)
{
	for (uint s = LS_X / 2u; s > 0u; s >>= 1) {
		barrier();
		if (l < s)
			for (uint j = 0u; j < rows; j++)
				red[j][l] += red[j][l + s];
	}
	barrier();
}

#if PRO_RMS
shared float rscale[T_MAX];

void row_scales(uint l)
{
	for (uint t = 0u; t < T_MAX; t++) {
		float s = 0.0;
		if (t < pc.T)
			for (uint k = l; k < K; k += LS_X)
				s += x[t * K + k] * x[t * K + k];
		red[t][l] = s;
	}
	reduce_rows(l, T_MAX);
	if (l < T_MAX)
		rscale[l] = 1.0 / sqrt(red[l][0] / float(K) + PRO_EPS);
	barrier();
}

float xin(uint t, uint k) { return x[t * K + k] * rscale[t] * (nw[k] + PRO_OFFSET); }
#else
float xin(uint t, uint k) { return x[t * K + k]; }
#endif

#if VEC8
layout(set = 0, binding = B_X) readonly buffer X4 { vec4 x4[]; };
#if WTYPE_F16
layout(set = 0, binding = B_W) readonly buffer W8 { uvec4 w8[]; };
void load_w8(uint n, uint j, out vec4 a, out vec4 b)
{
	uvec4 u = w8[n * (K / 8u) + j];
	a = vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
	b = vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));
}
#else
layout(set = 0, binding = B_W) readonly buffer W8 { vec4 w4[]; };
void load_w8(uint n, uint j, out vec4 a, out vec4 b)
{
	uint i = n * (K / 4u) + 2u * j;
	a = w4[i];
	b = w4[i + 1u];
}
#endif
#if PRO_RMS
layout(set = 0, binding = B_NW) readonly buffer NW4 { vec4 nw4[]; };
#endif
void load_x8(uint t, uint j, out vec4 a, out vec4 b)
{
	uint i = t * (K / 4u) + 2u * j;
	a = x4[i];
	b = x4[i + 1u];
#if PRO_RMS
	a *= rscale[t] * (nw4[2u * j] + PRO_OFFSET);
	b *= rscale[t] * (nw4[2u * j + 1u] + PRO_OFFSET);
#endif
}
#endif

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint n0 = gl_WorkGroupID.x * NC;
#if PRO_RMS
	row_scales(l);
#endif
	float acc[NC][T_MAX];
	for (uint c = 0u; c < NC; c++)
		for (uint t = 0u; t < T_MAX; t++)
			acc[c][t] = 0.0;
#if VEC8
	for (uint j = l; j < K / 8u; j += LS_X) {
		vec4 xa[T_MAX], xb[T_MAX];
		for (uint t = 0u; t < T_MAX && t < pc.T; t++)
			load_x8(t, j, xa[t], xb[t]);
		for (uint c = 0u; c < NC; c++) {
			if (n0 + c >= N)
				break;
			vec4 wa, wb;
			load_w8(n0 + c, j, wa, wb);
			for (uint t = 0u; t < T_MAX && t < pc.T; t++)
				acc[c][t] += dot(xa[t], wa) + dot(xb[t], wb);
		}
	}
#else
	for (uint k = l; k < K; k += LS_X) {
		float xv[T_MAX];
		for (uint t = 0u; t < T_MAX; t++)
			xv[t] = t < pc.T ? xin(t, k) : 0.0;
		for (uint c = 0u; c < NC; c++) {
			if (n0 + c >= N)
				break;
			float wv = load_w((n0 + c) * K + k);
			for (uint t = 0u; t < T_MAX; t++)
				acc[c][t] += xv[t] * wv;
		}
	}
#endif
	// Only the T live rows are reduced, packed as c * T + t.
	for (uint c = 0u; c < NC; c++)
		for (uint t = 0u; t < T_MAX && t < pc.T; t++)
			red[c * pc.T + t][l] = acc[c][t];
	reduce_rows(l, NC * pc.T);
	if (l < NC * pc.T) {
		uint n = n0 + l / pc.T, t = l % pc.T;
		if (n < N)
			y[t * N + n] = epilogue(red[l][0], t * N + n);
	}
}
