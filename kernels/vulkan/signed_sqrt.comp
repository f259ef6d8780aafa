// signed_sqrt: y = sign(x) * sqrt(max(|x|, EPS)), sign(0) = 0 (PyTorch's, so
// a zero stays zero despite the clamp). Grid: x = ceil(NUMEL(T) / LS_X).

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

void main()
{
	uint i = gl_GlobalInvocationID.x;
	if (i >= AFF(NUMEL))
		return;
	float v = x[i];
	y[i] = sign(v) * sqrt(max(abs(v), EPS));
}
