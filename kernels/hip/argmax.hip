// argmax: ids[t] = first index of the maximum of row t of x [T,N]. The twin
// of kernels/vulkan/argmax.comp: one workgroup a row; with VEC4 (N % 4 ==
// 0) lane l reads the 16-byte chunks c = l, l + LS_X, ..., UNROLL of them
// issued before any is compared; each lane keeps the first maximum of its
// elements, visited in increasing index order; a fixed tree then keeps the
// larger value, or the lower index on equal values.
// Grid: x = T.

#define NONE 0xffffffffu
HALO_SHARED float bv[LS_X];
HALO_SHARED uint bi[LS_X];
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
#if VEC4
const vec4 *__restrict__ x4 = (const vec4 *)args.b[B_X];
#endif
int *__restrict__ ids = (int *)args.b[B_Y];

bool better(float v, uint i, float w, uint j)
{
	return j == NONE || (i != NONE && (v > w || (v == w && i < j)));
}

void take(float v, uint i, float &best, uint &idx)
{
	if (idx == NONE || v > best) {
		best = v;
		idx = i;
	}
}

#if VEC4
void take4(vec4 v, uint c, float &best, uint &idx)
{
	for (uint q = 0u; q < 4u; q++)
		take(v[q], 4u * c + q, best, idx);
}
#endif

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint t = gl_WorkGroupID.x;
	float best = 0.0f;
	uint idx = NONE;
#if VEC4
	const uint NCH = N / 4u;
	uint row = t * NCH, c = l;
	for (; c + (UNROLL - 1u) * LS_X < NCH; c += UNROLL * LS_X) {
		vec4 v[UNROLL];
		for (uint u = 0u; u < UNROLL; u++)
			v[u] = x4[row + c + u * LS_X];
		for (uint u = 0u; u < UNROLL; u++)
			take4(v[u], c + u * LS_X, best, idx);
	}
	for (; c < NCH; c += LS_X)
		take4(x4[row + c], c, best, idx);
#else
	for (uint n = l; n < N; n += LS_X)
		take(x[t * N + n], n, best, idx);
#endif
	bv[l] = best;
	bi[l] = idx;
	for (uint s = LS_X / 2u; s > 0u; s >>= 1) {
		barrier();
		if (l < s && better(bv[l + s], bi[l + s], bv[l], bi[l])) {
			bv[l] = bv[l + s];
			bi[l] = bi[l + s];
		}
	}
	barrier();
	if (l == 0u)
		ids[t] = int(bi[0]);
}
