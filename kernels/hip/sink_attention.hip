// sink_attention (docs/ops.md): q [T,H,D], kv [N,D] (one head, K = V),
// sinks [H]; with ENTRIES entries [E_ROWS,D], with IDS ids [T,KSEL] i32
// -> y [T,H,D]. The twin of kernels/vulkan/sink_attention.comp, which gives
// the scheme: a workgroup per (group of HG heads, token); the row's key list
// (window rows, then the closed entries or the row's valid ids, compacted in
// order) staged KC keys a chunk in shared memory and shared by the group's
// heads; LPP lanes a (head, key) pair, partial dots summed in lane order;
// lane g < HG runs head g's online softmax from the sink logit; every lane
// owns output vec4s, summed in key order. Ids outside [0, closed entries)
// are skipped; position j is cache row j mod N_ROWS (the cache may be a
// ring). The loops over pre[] and acc[] are unrolled so both stay in
// registers (README.md). With PARTIAL (sink_attention_partial) workgroup
// (x, t, b) takes keys b * BLOCK .. + BLOCK of the list, from the sink (block
// 0) or no key (the others), and writes the block's sums, max and
// denominator to part [T,H,NBLK,D+2] at y's binding.
// Grid: x = H / HG, y = T (, z = NBLK with PARTIAL).

#define D4 (D / 4u)
// A staged key row, padded.
#define KS4 (D4 + LPP)
// Vec4s a lane stages a chunk, sums into a partial dot, owns of the output.
#define NPRE ((KC * D4 + LS_X - 1u) / LS_X)
#define NDOT ((D4 + LPP - 1u) / LPP)
#define NOUT ((HG * D4 + LS_X - 1u) / LS_X)
// The row's first key this workgroup takes: its block's with PARTIAL.
#ifdef PARTIAL
#define FIRST_KEY (gl_WorkGroupID.z * BLOCK)
#else
#define FIRST_KEY 0u
#endif
// The max of a block with no key, as attention_partial writes it.
#define NO_KEY_MAX -3.0e38f

HALO_SHARED vec4 qs[HG * D4];
HALO_SHARED vec4 ks[KC * KS4];
HALO_SHARED float part[LS_X];
HALO_SHARED float wt[HG * KC];
HALO_SHARED float m_run[HG];
HALO_SHARED float l_run[HG];
HALO_SHARED float corr[HG];
#ifdef IDS
HALO_SHARED uint sel[KSEL];
HALO_SHARED uint scan[LS_X];
#endif
// @struct

const vec4 *__restrict__ q4 = (const vec4 *)args.b[B_Q];
const vec4 *__restrict__ kv4 = (const vec4 *)args.b[B_KV];
const float *__restrict__ sinks = (const float *)args.b[B_SINK];
#ifdef ENTRIES
const vec4 *__restrict__ ent4 = (const vec4 *)args.b[B_ENT];
#endif
#ifdef IDS
const int *__restrict__ ids = (const int *)args.b[B_IDS];
#endif
#ifdef PARTIAL
float *__restrict__ part_out = (float *)args.b[B_Y];
#else
vec4 *__restrict__ y4 = (vec4 *)args.b[B_Y];
#endif

// The row's key list: n_win window rows from win0, then the entries.
uint n_win, win0, n_keys;

// Vec4 i of key j of the list.
vec4 key_vec(uint j, uint i)
{
	if (j < n_win)
		return kv4[(win0 + j) % N_ROWS * D4 + i];
#ifdef ENTRIES
#ifdef IDS
	return ent4[sel[j - n_win] * D4 + i];
#else
	return ent4[(j - n_win) * D4 + i];
#endif
#else
	return vec4(0.0f);
#endif
}

// The lane's share of the chunk at c0 (zeros past the list), into registers.
void load_chunk(vec4 (&pre)[NPRE], uint c0, uint l)
{
#pragma unroll
	for (uint r = 0u; r < NPRE; r++) {
		uint idx = l + r * LS_X, c = idx / D4;
		pre[r] = idx < KC * D4 && c0 + c < n_keys ? key_vec(c0 + c, idx % D4) : vec4(0.0f);
	}
}

void store_chunk(const vec4 (&pre)[NPRE], uint l)
{
#pragma unroll
	for (uint r = 0u; r < NPRE; r++) {
		uint idx = l + r * LS_X;
		if (idx < KC * D4)
			ks[(idx / D4) * KS4 + idx % D4] = pre[r];
	}
}

#ifdef IDS
// Ids per lane: lane l checks the run l * IPL .. + IPL.
#define IPL ((KSEL + LS_X - 1u) / LS_X)

static bool id_ok(int e, uint closed)
{
	return e >= 0 && uint(e) < closed;
}

// The row's valid ids, in ids order, into sel; returns their count (a
// fixed-order inclusive scan of the lanes' counts places each lane's run).
uint compact_ids(uint t, uint l, uint closed)
{
	uint first = l * IPL, cnt = 0u;
	for (uint r = 0u; r < IPL; r++)
		if (first + r < KSEL && id_ok(ids[t * KSEL + first + r], closed))
			cnt++;
	scan[l] = cnt;
	for (uint off = 1u; off < LS_X; off <<= 1) {
		barrier();
		uint v = l >= off ? scan[l - off] : 0u;
		barrier();
		scan[l] += v;
	}
	barrier();
	uint at = scan[l] - cnt;
	for (uint r = 0u; r < IPL; r++) {
		int e = first + r < KSEL ? ids[t * KSEL + first + r] : -1;
		if (id_ok(e, closed))
			sel[at++] = uint(e);
	}
	barrier(); // sel is read by every lane's first key loads
	return scan[LS_X - 1u];
}
#endif

// Head g's online softmax over the chunk at c0: scores from the pairs'
// partial dots (in lane order), the new max, the weights into wt (0 past
// the list), the rescale into corr, the denominator.
void softmax_step(uint g, uint c0)
{
	uint cnt = min(KC, n_keys - c0);
	float m_new = m_run[g];
	for (uint c = 0u; c < cnt; c++) {
		float s = 0.0f;
		for (uint i = 0u; i < LPP; i++)
			s += part[(g * KC + c) * LPP + i];
		s *= SCALE;
		wt[g * KC + c] = s;
		m_new = max(m_new, s);
	}
	float sum = 0.0f;
	for (uint c = 0u; c < KC; c++) {
		float w = c < cnt ? exp(wt[g * KC + c] - m_new) : 0.0f;
		wt[g * KC + c] = w;
		sum += w;
	}
	float f = exp(m_run[g] - m_new);
	corr[g] = f;
	l_run[g] = l_run[g] * f + sum;
	m_run[g] = m_new;
}

void main()
{
	uint l = gl_LocalInvocationID.x, h0 = gl_WorkGroupID.x * HG, t = gl_WorkGroupID.y;
	uint p = step_pos + t;
	n_win = min(p + 1u, WINDOW);
	win0 = p + 1u - n_win;
	n_keys = n_win;
#ifdef ENTRIES
	uint closed = min((p + 1u) / RATIO, E_ROWS);
#ifdef IDS
	n_keys += compact_ids(t, l, closed);
#else
	n_keys += closed;
#endif
#endif
	for (uint i = l; i < HG * D4; i += LS_X)
		qs[i] = q4[(t * H + h0) * D4 + i];
#ifdef PARTIAL
	// this block's keys: the list from FIRST_KEY, cut at the block's end
	uint b = gl_WorkGroupID.z;
	n_keys = min(n_keys, FIRST_KEY + BLOCK);
	if (l < HG) {
		m_run[l] = b == 0u ? sinks[h0 + l] : NO_KEY_MAX;
		l_run[l] = b == 0u ? 1.0f : 0.0f;
	}
#else
	if (l < HG) {
		m_run[l] = sinks[h0 + l];
		l_run[l] = 1.0f;
	}
#endif
	// lane l scores pair l / LPP = (head g, key c) of each chunk
	uint s = l % LPP, g = l / LPP / KC, c = l / LPP % KC;
	vec4 pre[NPRE];
	vec4 acc[NOUT];
#pragma unroll
	for (uint r = 0u; r < NOUT; r++)
		acc[r] = vec4(0.0f);
	load_chunk(pre, FIRST_KEY, l);
	// n_keys >= 1 (the window holds row p), so the loop's barriers also
	// publish qs, m_run and l_run before their first use. (A PARTIAL block
	// past the list runs no chunk: its lane g reads back only the m_run[g]
	// and l_run[g] it wrote itself.)
	for (uint c0 = FIRST_KEY; c0 < n_keys; c0 += KC) {
		store_chunk(pre, l);
		barrier();
		load_chunk(pre, c0 + KC, l);
		float dp = 0.0f;
		for (uint r = 0u; r < NDOT; r++) {
			uint i = s + r * LPP;
			if (i < D4)
				dp += dot(qs[g * D4 + i], ks[c * KS4 + i]);
		}
		part[l] = dp;
		barrier();
		if (l < HG)
			softmax_step(l, c0);
		barrier();
		uint cnt = min(KC, n_keys - c0);
#pragma unroll
		for (uint r = 0u; r < NOUT; r++) {
			uint o = l + r * LS_X, og = o / D4;
			if (o < HG * D4) {
				vec4 a = acc[r] * corr[og];
				for (uint k = 0u; k < cnt; k++)
					a += wt[og * KC + k] * ks[k * KS4 + o % D4];
				acc[r] = a;
			}
		}
		barrier();
	}
#ifdef PARTIAL
	// head h0 + g's block row: D sums, then the max and the denominator
#pragma unroll
	for (uint r = 0u; r < NOUT; r++) {
		uint o = l + r * LS_X;
		if (o < HG * D4) {
			uint at = ((t * H + h0 + o / D4) * NBLK + b) * (D + 2u) + o % D4 * 4u;
			for (uint i = 0u; i < 4u; i++)
				part_out[at + i] = acc[r][i];
		}
	}
	if (l < HG) {
		uint at = ((t * H + h0 + l) * NBLK + b) * (D + 2u) + D;
		part_out[at] = m_run[l];
		part_out[at + 1u] = l_run[l];
	}
#else
#pragma unroll
	for (uint r = 0u; r < NOUT; r++) {
		uint o = l + r * LS_X;
		if (o < HG * D4)
			y4[(t * H + h0) * D4 + o] = acc[r] / l_run[o / D4];
	}
#endif
}
