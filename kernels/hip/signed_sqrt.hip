// signed_sqrt: y = sign(x) * sqrt(max(|x|, EPS)), sign(0) = 0. The twin of
// kernels/vulkan/signed_sqrt.comp.
// Grid: x = ceil(NUMEL(T) / LS_X).
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint i = gl_GlobalInvocationID.x;
	if (i >= AFF(NUMEL))
		return;
	float v = x[i];
	y[i] = sign(v) * sqrt(max(abs(v), EPS));
}
