// gated_delta_rule, chunked form for prefill: the same function as
// gated_delta_rule.comp (q, k [T,HK,DK], v [T,HV,DV], g, beta [T,HV], S
// [HV,DK,DV] -> o [T,HV,DV], S' [HV,DK,DV]) taken CH = 64 tokens at a time.
// Within a chunk entered with state S, with gamma_i the chunk's cumulative
// log-decay up to token i (docs/ops.md's recurrence unrolled):
//   L[i][j] = beta_i (k_i . k_j) e^(gamma_i - gamma_j), j < i
//   (I + L) delta = beta (v - e^gamma (K S))        forward substitution
//   o_i = e^gamma_i (q_i SCALE)^T S + sum_{j <= i} (q_i SCALE . k_j) e^(gamma_i - gamma_j) delta_j
//   S <- e^gamma_last S + sum_j e^(gamma_last - gamma_j) k_j delta_j^T
// delta_j is the recurrent kernel's per-token delta, so no inverse is formed.
// Every sum runs in a fixed order inside one lane: no atomics, no cross-lane
// reductions, so a run is reproducible; it is not bitwise the recurrent
// kernel (the sums are regrouped), which is why decode keeps that one.
//
// Workgroup (x, h): value head h, value columns x * LS_X .. + LS_X. Lane
// (lx, ly) owns column lx of the slice; the LS_Y lanes of a column split the
// chunk's tokens (t = ly mod LS_Y) and the state's rows (j = ly mod LS_Y).
// Shared: the state slice [DK][LS_X], the chunk matrix M [CH][CH] holding L
// strictly below the diagonal and the intra-chunk scores P[i][j] (j <= i)
// transposed at M[j][i], delta [CH][LS_X] and five per-token vectors. The
// builder checks the total against 32 KiB. S' must not alias S.
// Grid: x = ceil(DV / LS_X), y = HV.

#define CH 64u
#define NL (LS_X * LS_Y)

layout(set = 0, binding = B_Q) readonly buffer Qb { float qg[]; };
layout(set = 0, binding = B_K) readonly buffer Kb { float kg[]; };
layout(set = 0, binding = B_V) readonly buffer Vb { float vg[]; };
layout(set = 0, binding = B_G) readonly buffer Gb { float gg[]; };
layout(set = 0, binding = B_BETA) readonly buffer Bb { float bg[]; };
layout(set = 0, binding = B_S) readonly buffer Sb { float s_in[]; };
layout(set = 0, binding = B_O) writeonly buffer Ob { float og[]; };
layout(set = 0, binding = B_SO) writeonly buffer SOb { float s_out[]; };

shared float ss[DK * LS_X];  // state slice, row j at ss[j * LS_X]
shared float mm[CH * CH];    // L below the diagonal, P transposed on and above
shared float dd[CH * LS_X];  // delta of token t at dd[t * LS_X]
shared float gam[CH];        // cumulative log-decay within the chunk, gam + gaml
shared float gaml[CH];       // (two floats: see chunk_decays)
shared float bts[CH];        // beta
shared float eg[CH];         // e^gamma_t
shared float el[CH];         // e^(gamma_last - gamma_t)

uint key_row(uint t, uint kh) { return (t * HK + kh) * DK; }

float dot_rows_kk(uint a, uint b)
{
	float acc = 0.0;
	for (uint i = 0u; i < DK; i++)
		acc += kg[a + i] * kg[b + i];
	return acc;
}

float dot_rows_qk(uint a, uint b)
{
	float acc = 0.0;
	for (uint i = 0u; i < DK; i++)
		acc += qg[a + i] * kg[b + i];
	return acc;
}

// gamma_i - gamma_j, both carried as two floats.
float gdiff(uint i, uint j) { return (gam[i] - gam[j]) + (gaml[i] - gaml[j]); }

// One lane takes the cumulative sum so its order is fixed. Within a chunk
// |gamma| reaches hundreds while the decay factors need gamma_i - gamma_j
// for nearby i, j to a few ulps of 1: a plain f32 sum would leave absolute
// errors of ulp(gamma) ~ 3e-5 in those exponents. So the sum carries its
// rounding errors in gaml (Knuth's two-sum, kept exact by `precise`).
void chunk_decays(uint lid, uint t0, uint n, uint h)
{
	if (lid != 0u)
		return;
	precise float hi = 0.0, lo = 0.0;
	for (uint t = 0u; t < n; t++) {
		precise float g = gg[(t0 + t) * HV + h];
		precise float sum = hi + g;
		precise float gv = sum - hi;
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

// Differences of gamma are formed before exp, so no factor underflows to a
// 0 / 0 as e^gamma_i / e^gamma_j would in chunks with strong decay.
void chunk_matrix(uint lid, uint t0, uint n, uint kh)
{
	for (uint e = lid; e < CH * CH; e += NL) {
		uint i = e / CH, j = e % CH;
		float m = 0.0;
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
		 inout float oi[CH / LS_Y])
{
	for (uint r = 0u; r < CH / LS_Y; r++) {
		uint t = ly + r * LS_Y;
		oi[r] = 0.0;
		if (t >= n)
			continue;
		uint kb = key_row(t0 + t, kh);
		float ks = 0.0, qs = 0.0;
		for (uint j = 0u; j < DK; j++) {
			float sj = ss[j * LS_X + lx];
			ks += kg[kb + j] * sj;
			qs += qg[kb + j] * sj;
		}
		float v = live ? vg[((t0 + t) * HV + h) * DV + c] : 0.0;
		dd[t * LS_X + lx] = bts[t] * (v - eg[t] * ks);
		oi[r] = eg[t] * (qs * SCALE);
	}
}

// (I + L) delta = rhs, one column per lane, rows in order.
void chunk_solve(uint lx, uint n)
{
	for (uint t = 1u; t < n; t++) {
		float acc = dd[t * LS_X + lx];
		for (uint m = 0u; m < t; m++)
			acc -= mm[t * CH + m] * dd[m * LS_X + lx];
		dd[t * LS_X + lx] = acc;
	}
}

void chunk_outputs(uint lx, uint ly, uint t0, uint n, uint h, uint c, bool live,
		   float oi[CH / LS_Y])
{
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
		float acc = 0.0;
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
		ss[j * LS_X + lx] = live ? s_in[sb + j * DV] : 0.0;
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
