// argmax: ids[t] = first index of the maximum of row t of x [T,N]. The twin
// of kernels/vulkan/argmax.comp: lane l scans n = l, l + LS_X, ... keeping
// its first maximum; a fixed tree then keeps the larger value, or the lower
// index on equal values.
// Grid: x = T.

#define NONE 0xffffffffu
HALO_SHARED float bv[LS_X];
HALO_SHARED uint bi[LS_X];
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
int *__restrict__ ids = (int *)args.b[B_Y];

bool better(float v, uint i, float w, uint j)
{
	return j == NONE || (i != NONE && (v > w || (v == w && i < j)));
}

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint t = gl_WorkGroupID.x;
	float best = 0.0f;
	uint idx = NONE;
	for (uint n = l; n < N; n += LS_X) {
		float v = x[t * N + n];
		if (idx == NONE || v > best) {
			best = v;
			idx = n;
		}
	}
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
