// rope, NeoX half split on the first ROT channels of each of HH heads of D:
// token t has position pos + t; THETA[i] = base^(-2i/ROT) is generated as an
// f32 table (computed in f64), the angle is float(pos + t) * THETA[i] in f32.
// Channels from ROT on pass through. Then the epilogue.
// Grid: x = ceil(HH * D / LS_X), y = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

void main()
{
	uint t = gl_WorkGroupID.y;
	uint e = gl_GlobalInvocationID.x;
	if (e >= HH * D)
		return;
	uint base = t * HH * D + (e / D) * D;
	uint i = e % D;
	float p = float(step_pos + t);
	float v;
	if (i < HALF) {
		float a = p * THETA[i];
		v = x[base + i] * cos(a) - x[base + i + HALF] * sin(a);
	} else if (i < ROT) {
		float a = p * THETA[i - HALF];
		v = x[base + i] * cos(a) + x[base + i - HALF] * sin(a);
	} else {
		v = x[base + i];
	}
	y[base + i] = epilogue(v, base + i);
}
