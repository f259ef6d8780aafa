// rope, NeoX half split on the first ROT channels of each of HH heads of D
// (channels from ROT on pass through), or with ROPE_TAIL DeepSeek V4's
// adjacent pairs on the last ROT: token t has position pos + t (plus
// ROPE_OFFSET), the angle float(position) * THETA[i] in f32 (THETA: the
// plan's f32 table). Then the epilogue. The twin of kernels/vulkan/rope.comp, whose comment gives the
// PRO_RMS form (one workgroup per head of a token, its sum of squares by the
// fixed tree as rms_norm.hip sums it).
// Grid: x = ceil(HH * D / LS_X), y = T; with PRO_RMS x = HH, y = T.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
float *__restrict__ y = (float *)args.b[B_Y];
#if PRO_RMS
const float *__restrict__ nw = (const float *)args.b[B_NW];
#endif

// The one store of a result (both forms): element i of the result (its index in the rope's own output); with POS0
// the rows start at the step's position (rope.comp's store).
void store_y(uint i, float v) { y[POS0 * step_pos * HH * D + i] = v; }

// Channel i of the head at base (as normalised with inv, under PRO_RMS):
// what rope_math.hip's rotated() rotates.
float at(uint base, uint i, float inv)
{
#if PRO_RMS
	return x[base + i] * inv * (nw[i] + PRO_OFFSET);
#else
	return x[base + i];
#endif
}

#if PRO_RMS
void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
	uint base = (t * HH + gl_WorkGroupID.x) * D;
	float s = 0.0f;
	for (uint i = l; i < D; i += LS_X)
		s += x[base + i] * x[base + i];
	float inv = 1.0f / sqrt(tree_sum(l, s) / float(D) + PRO_EPS);
	float p = ROPE_POS(t);
	for (uint i = l; i < D; i += LS_X)
		store_y(base + i, epilogue(rotated(base, i, p, inv), base + i));
}
#else
void main()
{
	uint t = gl_WorkGroupID.y;
	uint e = gl_GlobalInvocationID.x;
	if (e >= HH * D)
		return;
	uint base = t * HH * D + (e / D) * D;
	store_y(base + e % D, epilogue(rotated(base, e % D, ROPE_POS(t), 1.0f), base + e % D));
}
#endif
