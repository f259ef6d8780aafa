// matvec, for steps of T <= T_MAX <= 8 tokens: y[t,n] = sum_k x'[t,k] w[n,k]
// (x' = x, or rms_norm(x) with the fused prologue), then the epilogue.
//
// Decode is bound by weight bytes, so each weight is read once for all T
// rows, in 16-byte loads (VEC8: 8 consecutive k per chunk), UNROLL of them in
// flight per lane and column before any is used.
//
// A workgroup of LS_X lanes is GROUPS = LS_X / SPLIT column groups. Group g
// owns the NC consecutive columns from n0 = (wg * GROUPS + g) * NC and splits
// K over its SPLIT lanes: lane l sums the chunks j = l, l + SPLIT, ... in
// increasing order (UNROLL only changes how many loads are issued ahead, not
// that order). The SPLIT partial sums are then combined in a fixed order:
// with SG_SHUFFLE a butterfly of subgroup shuffles within each subgroup
// (or within the group, when the group is narrower than a subgroup), then
// the per-subgroup sums in subgroup order through shared memory; without it
// a pairwise tree in shared memory. Nothing depends on T, so row t's result
// is bitwise the same for T = 1 as for T = m (batch invariance); variants
// with the same SPLIT and reduction kind give bitwise the same results.
//
// The fused rms_norm is factored out of the dot product: the group also sums
// x[t,k]^2 over its chunks, reduced the same way, and scales the result by
// (mean + eps)^-1/2 at the end, so x is read once, not once more per
// workgroup for the norm. Grid: x = ceil(N / (GROUPS * NC)).

#if SG_SHUFFLE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };
#if VEC8
layout(set = 0, binding = B_X) readonly buffer X4 { vec4 x4[]; };
#endif
#if PRO_RMS
layout(set = 0, binding = B_NW) readonly buffer NW { float nw[]; };
#if VEC8
layout(set = 0, binding = B_NW) readonly buffer NW4 { vec4 nw4[]; };
#endif
#endif

#define GROUPS (LS_X / SPLIT)
// Values each lane reduces: NC * T_MAX dot products, then T_MAX sums of
// squares when the norm is fused.
#define NDOT (NC * T_MAX)
#define NVAL (NDOT + PRO_RMS * T_MAX)
#if VEC8
#define KC (K / 8u)
#else
#define KC K
#endif

#if SG_SHUFFLE
// Per-subgroup sums, one slot per subgroup of at least MIN_SG lanes.
#define MIN_SG 4u
shared float part[LS_X / MIN_SG][NVAL];
#else
shared float part[LS_X][NVAL];
#endif

float v_acc[NVAL];

#if VEC8
#if WTYPE_F16
layout(set = 0, binding = B_W) readonly buffer W8 { uvec4 w8[]; };
#define WCHUNK uvec4
WCHUNK load_chunk(uint n, uint j) { return w8[n * KC + j]; }
void unpack_chunk(WCHUNK u, out vec4 a, out vec4 b)
{
	a = vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
	b = vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));
}
#else
layout(set = 0, binding = B_W) readonly buffer W8 { vec4 w4[]; };
#define WCHUNK mat2x4
WCHUNK load_chunk(uint n, uint j) { return mat2x4(w4[2u * (n * KC + j)], w4[2u * (n * KC + j) + 1u]); }
void unpack_chunk(WCHUNK u, out vec4 a, out vec4 b)
{
	a = u[0];
	b = u[1];
}
#endif
#else
#define WCHUNK float
WCHUNK load_chunk(uint n, uint j) { return load_w(n * K + j); }
#endif

// Adds chunk j of every live row, against the NC columns' chunks w[c].
void accumulate(uint j, WCHUNK w[NC])
{
	for (uint t = 0u; t < T_MAX; t++) {
		if (t >= pc.T)
			break;
#if VEC8
		vec4 xa = x4[t * (K / 4u) + 2u * j], xb = x4[t * (K / 4u) + 2u * j + 1u];
#if PRO_RMS
		v_acc[NDOT + t] += dot(xa, xa) + dot(xb, xb);
		xa *= nw4[2u * j] + PRO_OFFSET;
		xb *= nw4[2u * j + 1u] + PRO_OFFSET;
#endif
		for (uint c = 0u; c < NC; c++) {
			vec4 wa, wb;
			unpack_chunk(w[c], wa, wb);
			v_acc[c * T_MAX + t] += dot(xa, wa) + dot(xb, wb);
		}
#else
		float xv = x[t * K + j];
#if PRO_RMS
		v_acc[NDOT + t] += xv * xv;
		xv *= nw[j] + PRO_OFFSET;
#endif
		for (uint c = 0u; c < NC; c++)
			v_acc[c * T_MAX + t] += xv * w[c];
#endif
	}
}

// The lane's K loop for the group's columns n0 .. n0 + NC - 1 (columns past
// N read column N - 1 and are never written).
void stream(uint l, uint n0)
{
	for (uint i = 0u; i < NVAL; i++)
		v_acc[i] = 0.0;
	for (uint j0 = l; j0 < KC; j0 += SPLIT * UNROLL) {
		WCHUNK w[UNROLL][NC];
		for (uint u = 0u; u < UNROLL; u++) {
			uint j = min(j0 + u * SPLIT, KC - 1u);
			for (uint c = 0u; c < NC; c++)
				w[u][c] = load_chunk(min(n0 + c, N - 1u), j);
		}
		for (uint u = 0u; u < UNROLL; u++)
			if (j0 + u * SPLIT < KC)
				accumulate(j0 + u * SPLIT, w[u]);
	}
}

#if SG_SHUFFLE
// Lanes are numbered by subgroup so that a column group is whole subgroups
// (or a run of lanes inside one).
uint lane_id() { return gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID; }

// Leaves in part[s][*] (s = the group's first subgroup slot) or, for a group
// inside one subgroup, in every lane's v_acc, the group's sums.
bool reduce_group(uint lane, uint g)
{
	uint cl = min(uint(SPLIT), gl_SubgroupSize);
	for (uint o = cl / 2u; o > 0u; o >>= 1)
		for (uint i = 0u; i < NVAL; i++)
			v_acc[i] += subgroupShuffleXor(v_acc[i], o);
	if (gl_SubgroupSize >= SPLIT)
		return false;
	// Several subgroups per group: their sums, added in subgroup order.
	uint spg = SPLIT / gl_SubgroupSize;
	if (gl_SubgroupInvocationID == 0u)
		for (uint i = 0u; i < NVAL; i++)
			part[gl_SubgroupID][i] = v_acc[i];
	barrier();
	if (lane % SPLIT == 0u)
		for (uint i = 0u; i < NVAL; i++) {
			float s = part[g * spg][i];
			for (uint q = 1u; q < spg; q++)
				s += part[g * spg + q][i];
			v_acc[i] = s;
		}
	return true;
}
#else
uint lane_id() { return gl_LocalInvocationID.x; }

bool reduce_group(uint lane, uint g)
{
	for (uint i = 0u; i < NVAL; i++)
		part[lane][i] = v_acc[i];
	uint l = lane % SPLIT, base = g * SPLIT;
	for (uint s = SPLIT / 2u; s > 0u; s >>= 1) {
		barrier();
		if (l < s)
			for (uint i = 0u; i < NVAL; i++)
				part[base + l][i] += part[base + l + s][i];
	}
	barrier();
	if (l == 0u)
		for (uint i = 0u; i < NVAL; i++)
			v_acc[i] = part[base][i];
	return true;
}
#endif

void main()
{
	uint lane = lane_id(), g = lane / SPLIT, l = lane % SPLIT;
	uint n0 = (gl_WorkGroupID.x * GROUPS + g) * NC;
	stream(l, n0);
	bool leader_only = reduce_group(lane, g);
	// One lane per group writes, or (a group inside one subgroup, where
	// every lane holds the sums) lane l writes the outputs r = l, l + SPLIT, ...
	if (leader_only && l != 0u)
		return;
	for (uint r = 0u; r < NDOT; r++) {
		uint c = r / T_MAX, t = r % T_MAX, n = n0 + c;
		if (t >= pc.T || n >= N || (!leader_only && r % SPLIT != l))
			continue;
		float v = v_acc[r];
#if PRO_RMS
		v *= 1.0 / sqrt(v_acc[NDOT + t] / float(K) + PRO_EPS);
#endif
		y[t * N + n] = epilogue(v, t * N + n);
	}
}
