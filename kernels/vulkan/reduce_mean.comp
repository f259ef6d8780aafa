// reduce_mean: x viewed as [OUTER, N, INNER] -> y [OUTER, INNER], the mean over
// the middle axis. Lane i owns output i and sums its N inputs in order in one
// lane (f32), so a row's result never depends on T.
// Grid: x = ceil(OUTER(T) * INNER / LS_X).

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x;
	if (i >= AFF(OUTER) * INNER)
		return;
	uint o = i / INNER, in_i = i % INNER;
	float acc = 0.0;
	for (uint a = 0u; a < N; a++)
		acc += x[(o * N + a) * INNER + in_i];
	y[i] = acc / float(N);
}
