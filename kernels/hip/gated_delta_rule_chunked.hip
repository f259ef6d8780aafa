// gated_delta_rule, chunked form for prefill: the same function as
// gated_delta_rule.hip taken CH = 64 tokens at a time. The twin of
// kernels/vulkan/gated_delta_rule_chunked.comp, which gives the chunk's
// algebra (forward substitution for delta, no inverse), the lanes' shares
// and the shared memory; the same sums in the same order here. The loops
// over oi[] are unrolled so it stays in registers (README.md).
// Grid: x = ceil(DV / LS_X), y = HV.

#define CH 64u
#define NL (LS_X * LS_Y)

HALO_SHARED float ss[DK * LS_X];  // state slice, row j at ss[j * LS_X]
HALO_SHARED float mm[CH * CH];    // L below the diagonal, P transposed on and above
HALO_SHARED float dd[CH * LS_X];  // delta of token t at dd[t * LS_X]
HALO_SHARED float gam[CH];        // cumulative log-decay within the chunk, gam + gaml
HALO_SHARED float gaml[CH];       // (two floats: see chunk_decays)
HALO_SHARED float bts[CH];        // beta
HALO_SHARED float eg[CH];         // e^gamma_t
HALO_SHARED float el[CH];         // e^(gamma_last - gamma_t)
// @struct

const float *__restrict__ qg = (const float *)args.b[B_Q];
const float *__restrict__ kg = (const float *)args.b[B_K];
const float *__restrict__ vg = (const float *)args.b[B_V];
const float *__restrict__ gg = (const float *)args.b[B_G];
const float *__restrict__ bg = (const float *)args.b[B_BETA];
const float *__restrict__ s_in = (const float *)args.b[B_S];
float *__restrict__ og = (float *)args.b[B_O];
float *__restrict__ s_out = (float *)args.b[B_SO];

static uint key_row(uint t, uint kh) { return (t * HK + kh) * DK; }

float dot_rows_kk(uint a, uint b)
{
	float acc = 0.0f;
	for (uint i = 0u; i < DK; i++)
		acc += kg[a + i] * kg[b + i];
	return acc;
}

float dot_rows_qk(uint a, uint b)
{
	float acc = 0.0f;
	for (uint i = 0u; i < DK; i++)
		acc += qg[a + i] * kg[b + i];
	return acc;
}

// gamma_i - gamma_j, both carried as two floats.
static float gdiff(uint i, uint j) { return (gam[i] - gam[j]) + (gaml[i] - gaml[j]); }

// One lane takes the cumulative sum, carrying its rounding errors in gaml
// (Knuth's two-sum; the GLSL says why). It has no products, so clang's fma
// contraction cannot regroup it, and it is not reassociated: GLSL's
// `precise` holds as written.
void chunk_decays(uint lid, uint t0, uint n, uint h)
{
	if (lid != 0u)
		return;
	float hi = 0.0f, lo = 0.0f;
	for (uint t = 0u; t < n; t++) {
		float g = gg[(t0 + t) * HV + h];
		float sum = hi + g;
		float gv = sum - hi;
		lo += (hi - (sum - gv)) + (g - gv);
		hi = sum;
		gam[t] = hi;
		gaml[t] = lo;
		bts[t] = bg[(t0 + t) * HV + h];
	}
	for (uint t = 0u; t < n; t++) {
		eg[t] = exp(gam[t] + gaml[t]);
		el[t] = exp(gdiff(n - 1u, t));
	}
}

// Differences of gamma are formed before exp (no 0 / 0 in strong decay).
void chunk_matrix(uint lid, uint t0, uint n, uint kh)
{
	for (uint e = lid; e < CH * CH; e += NL) {
		uint i = e / CH, j = e % CH;
		float m = 0.0f;
		if (i < n && j < n) {
			if (j < i)
				m = bts[i] * exp(gdiff(i, j)) *
				    dot_rows_kk(key_row(t0 + i, kh), key_row(t0 + j, kh));
			else
				m = exp(gdiff(j, i)) * SCALE *
				    dot_rows_qk(key_row(t0 + j, kh), key_row(t0 + i, kh));
		}
		mm[e] = m;
	}
}

// The entering state's part: delta's right-hand side into dd and the
// inter-chunk output into oi (token ly + r * LS_Y).
void chunk_inter(uint lx, uint ly, uint t0, uint n, uint h, uint kh, uint c, bool live,
		 float (&oi)[CH / LS_Y])
{
#pragma unroll
	for (uint r = 0u; r < CH / LS_Y; r++) {
		uint t = ly + r * LS_Y;
		oi[r] = 0.0f;
		if (t >= n)
			continue;
		uint kb = key_row(t0 + t, kh);
		float ks = 0.0f, qs = 0.0f;
		for (uint j = 0u; j < DK; j++) {
			float sj = ss[j * LS_X + lx];
			ks += kg[kb + j] * sj;
			qs += qg[kb + j] * sj;
		}
		float v = live ? vg[((t0 + t) * HV + h) * DV + c] : 0.0f;
		dd[t * LS_X + lx] = bts[t] * (v - eg[t] * ks);
		oi[r] = eg[t] * (qs * SCALE);
	}
}

// (I + L) delta = rhs, one column per lane, rows in order.
static void chunk_solve(uint lx, uint n)
{
	for (uint t = 1u; t < n; t++) {
		float acc = dd[t * LS_X + lx];
		for (uint m = 0u; m < t; m++)
			acc -= mm[t * CH + m] * dd[m * LS_X + lx];
		dd[t * LS_X + lx] = acc;
	}
}

void chunk_outputs(uint lx, uint ly, uint t0, uint n, uint h, uint c, bool live,
		   const float (&oi)[CH / LS_Y])
{
#pragma unroll
	for (uint r = 0u; r < CH / LS_Y; r++) {
		uint t = ly + r * LS_Y;
		if (t >= n || !live)
			continue;
		float acc = oi[r];
		for (uint m = 0u; m <= t; m++)
			acc += mm[m * CH + t] * dd[m * LS_X + lx];
		og[((t0 + t) * HV + h) * DV + c] = acc;
	}
}

void chunk_state(uint lx, uint ly, uint t0, uint n, uint kh)
{
	float decay = eg[n - 1u];
	for (uint j = ly; j < DK; j += LS_Y) {
		float acc = 0.0f;
		for (uint t = 0u; t < n; t++)
			acc += kg[key_row(t0 + t, kh) + j] * (el[t] * dd[t * LS_X + lx]);
		ss[j * LS_X + lx] = decay * ss[j * LS_X + lx] + acc;
	}
}

void main()
{
	uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
	uint lid = ly * LS_X + lx, h = gl_WorkGroupID.y;
	uint c = gl_WorkGroupID.x * LS_X + lx;
	uint kh = h / (HV / HK);
	bool live = c < DV;
	uint sb = h * DK * DV + c;
	for (uint j = ly; j < DK; j += LS_Y)
		ss[j * LS_X + lx] = live ? s_in[sb + j * DV] : 0.0f;
	float oi[CH / LS_Y];
	for (uint t0 = 0u; t0 < STEP_T; t0 += CH) {
		uint n = min(CH, STEP_T - t0);
		barrier(); // the state is in; the previous chunk is done with mm, dd
		chunk_decays(lid, t0, n, h);
		barrier();
		chunk_matrix(lid, t0, n, kh);
		chunk_inter(lx, ly, t0, n, h, kh, c, live, oi);
		barrier();
		if (ly == 0u)
			chunk_solve(lx, n);
		barrier();
		chunk_outputs(lx, ly, t0, n, h, c, live, oi);
		chunk_state(lx, ly, t0, n, kh);
	}
	if (live)
		for (uint j = ly; j < DK; j += LS_Y)
			s_out[sb + j * DV] = ss[j * LS_X + lx];
}
