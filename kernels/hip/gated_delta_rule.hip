// gated_delta_rule, recurrent form: q, k [T,HK,DK], v [T,HV,DV], g, beta
// [T,HV], S [HV,DK,DV] -> o [T,HV,DV], S' [HV,DK,DV]; with STEPS also the
// state after each token, steps [T,HV,DK,DV]. The twin of
// kernels/vulkan/gated_delta_rule.comp, which gives the scheme: lane l of
// workgroup (x, h) keeps column c = x * LS_X + l of the state in registers
// across the tokens, every sum over i in order inside the lane. The loops
// over s[] are unrolled so the column stays in registers (README.md).
// Grid: x = ceil(DV / LS_X), y = HV.

// The token's key and scaled query, shared by the workgroup's columns.
HALO_SHARED float ks[DK];
HALO_SHARED float qs[DK];
// @struct

const float *__restrict__ qg = (const float *)args.b[B_Q];
const float *__restrict__ kg = (const float *)args.b[B_K];
const float *__restrict__ vg = (const float *)args.b[B_V];
const float *__restrict__ gg = (const float *)args.b[B_G];
const float *__restrict__ bg = (const float *)args.b[B_BETA];
const float *__restrict__ s_in = (const float *)args.b[B_S];
float *__restrict__ og = (float *)args.b[B_O];
float *__restrict__ s_out = (float *)args.b[B_SO];
#ifdef STEPS
float *__restrict__ steps = (float *)args.b[B_ST];
#endif

void main()
{
	uint l = gl_LocalInvocationID.x, h = gl_WorkGroupID.y;
	uint c = gl_WorkGroupID.x * LS_X + l;
	uint kh = h / (HV / HK);
	bool live = c < DV;
	uint sb = h * DK * DV + c;
	float s[DK];
#pragma unroll
	for (uint i = 0u; i < DK; i++)
		s[i] = live ? s_in[sb + i * DV] : 0.0f;
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
		float kv = 0.0f;
#pragma unroll
		for (uint i = 0u; i < DK; i++) {
			s[i] *= decay;
			kv += s[i] * ks[i];
		}
		float delta = ((live ? vg[th * DV + c] : 0.0f) - kv) * bg[th];
		float acc = 0.0f;
#pragma unroll
		for (uint i = 0u; i < DK; i++) {
			s[i] += ks[i] * delta;
			acc += s[i] * qs[i];
		}
		if (live)
			og[th * DV + c] = acc;
#ifdef STEPS
		if (live) {
#pragma unroll
			for (uint i = 0u; i < DK; i++)
				steps[(th * DK + i) * DV + c] = s[i];
		}
#endif
	}
	if (live) {
#pragma unroll
		for (uint i = 0u; i < DK; i++)
			s_out[sb + i * DV] = s[i];
	}
}
