// rope, NeoX half split on the first ROT channels of each of HH heads of D
// (channels from ROT on pass through), or with ROPE_TAIL DeepSeek V4's
// adjacent pairs on the last ROT: token t has position pos + t (plus
// ROPE_OFFSET); THETA[i] is an f32 table (base^(-2i/ROT) computed in f64,
// or with YaRN or the tail layout the reference's f32 frequencies,
// ref_rope_inv_freq), the angle is float(position) * THETA[i] in f32.
// Then the epilogue. The rotation is rope_math.glsl's, shared with the
// attention_rope kernel.
// Grid: x = ceil(HH * D / LS_X), y = T.
//
// With the rms_norm prologue (PRO_RMS: a per-head q_norm or k_norm,
// passes/fuse_norm_rope.c) one workgroup takes one head of one token: its
// sum of squares by the fixed tree, as rms_norm.comp sums it with the same
// LS_X, then each lane rotates channels l, l + LS_X, ... of the normalised
// head, x * inv * (w + OFFSET) recomputed for both channels of a pair (the
// same f32 operations as rms_norm.comp's outputs: the same bits as the two
// dispatches). Grid: x = HH, y = T.
//
// POS0 = 1: y is a state's rows from the step's position (a KV-cache write
// fused into the rope, passes/fuse_state_store.c): token t's heads are
// stored at row step_pos + t.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };
#if PRO_RMS
layout(set = 0, binding = B_NW) readonly buffer NW { float nw[]; };
#endif

// Stores element i of the result (i: its index in the rope's own output).
void store(uint i, float v)
{
	y[POS0 * step_pos * HH * D + i] = epilogue(v, i);
}

// Channel i of the head at base (as normalised with inv, under PRO_RMS):
// what rope_math.glsl's rotated() rotates.
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
	float s = 0.0;
	for (uint i = l; i < D; i += LS_X)
		s += x[base + i] * x[base + i];
	float inv = 1.0 / sqrt(tree_sum(l, s) / float(D) + PRO_EPS);
	float p = ROPE_POS(t);
	for (uint i = l; i < D; i += LS_X)
		store(base + i, rotated(base, i, p, inv));
}
#else
void main()
{
	uint t = gl_WorkGroupID.y;
	uint e = gl_GlobalInvocationID.x;
	if (e >= HH * D)
		return;
	uint base = t * HH * D + (e / D) * D;
	store(base + e % D, rotated(base, e % D, ROPE_POS(t), 1.0));
}
#endif
