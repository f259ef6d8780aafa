// gated_delta_rule, recurrent form: q, k [T,HK,DK], v [T,HV,DV], g, beta
// [T,HV], S [HV,DK,DV] -> o [T,HV,DV], S' [HV,DK,DV]. Value head h reads key
// head h / (HV / HK). Column c of a head's state evolves on its own (its kv,
// delta, update and output read only column c), so lane l of workgroup
// (x, h) owns column c = x * LS_X + l and keeps it in registers across the T
// tokens, in docs/ops.md order per token: decay, kv = S^T k, delta =
// (v - kv) beta, S += k (x) delta, o = S^T (q SCALE). Every sum runs over i
// in order inside one lane: no reductions across lanes, no atomics, and the
// state passes between tokens as the same f32 values whether the tokens share
// a dispatch or not (T tokens in one dispatch = T one-token dispatches,
// bitwise). S' is written once at the end, so it must not alias S. With
// STEPS the lane also writes its column after each token t into steps
// [T,HV,DK,DV]: the same registers, so slot T-1 is S' bitwise.
// Grid: x = ceil(DV / LS_X), y = HV.

layout(set = 0, binding = B_Q) readonly buffer Qb { float qg[]; };
layout(set = 0, binding = B_K) readonly buffer Kb { float kg[]; };
layout(set = 0, binding = B_V) readonly buffer Vb { float vg[]; };
layout(set = 0, binding = B_G) readonly buffer Gb { float gg[]; };
layout(set = 0, binding = B_BETA) readonly buffer Bb { float bg[]; };
layout(set = 0, binding = B_S) readonly buffer Sb { float s_in[]; };
layout(set = 0, binding = B_O) writeonly buffer Ob { float og[]; };
layout(set = 0, binding = B_SO) writeonly buffer SOb { float s_out[]; };
#ifdef STEPS
layout(set = 0, binding = B_ST) writeonly buffer STb { float steps[]; };
#endif

// The token's key and scaled query, shared by the workgroup's columns.
shared float ks[DK];
shared float qs[DK];

void main()
{
	uint l = gl_LocalInvocationID.x, h = gl_WorkGroupID.y;
	uint c = gl_WorkGroupID.x * LS_X + l;
	uint kh = h / (HV / HK);
	bool live = c < DV;
	uint sb = h * DK * DV + c;
	float s[DK];
	for (uint i = 0u; i < DK; i++)
		s[i] = live ? s_in[sb + i * DV] : 0.0;
	for (uint t = 0u; t < STEP_T; t++) {
		uint kb = (t * HK + kh) * DK;
		barrier(); // the previous token is done with ks, qs
		for (uint i = l; i < DK; i += LS_X) {
			ks[i] = kg[kb + i];
			qs[i] = qg[kb + i] * SCALE;
		}
		barrier();
		uint th = t * HV + h;
		float decay = exp(gg[th]);
		float kv = 0.0;
		for (uint i = 0u; i < DK; i++) {
			s[i] *= decay;
			kv += s[i] * ks[i];
		}
		float delta = ((live ? vg[th * DV + c] : 0.0) - kv) * bg[th];
		float acc = 0.0;
		for (uint i = 0u; i < DK; i++) {
			s[i] += ks[i] * delta;
			acc += s[i] * qs[i];
		}
		if (live)
			og[th * DV + c] = acc;
#ifdef STEPS
		if (live)
			for (uint i = 0u; i < DK; i++)
				steps[(th * DK + i) * DV + c] = s[i];
#endif
	}
	if (live)
		for (uint i = 0u; i < DK; i++)
			s_out[sb + i * DV] = s[i];
}
