// reduce_mean: x viewed as [OUTER, N, INNER] -> y [OUTER, INNER], the mean
// over the middle axis, lane i summing output i's N inputs in order. The
// twin of kernels/vulkan/reduce_mean.comp.
// Grid: x = ceil(OUTER(T) * INNER / LS_X).
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint i = gl_GlobalInvocationID.x;
	if (i >= AFF(OUTER) * INNER)
		return;
	uint o = i / INNER, in_i = i % INNER;
	float acc = 0.0f;
	for (uint a = 0u; a < N; a++)
		acc += x[(o * N + a) * INNER + in_i];
	y[i] = acc / float(N);
}
