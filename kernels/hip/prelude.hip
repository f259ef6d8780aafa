// Shared by every kernel: the HIP twin of kernels/vulkan/prelude.glsl (the
// same helpers, computing the same thing in the same order). Above the
// `// @struct` line: file scope (shared memory); below it: members of the
// kernel's struct, which sees the launch's buffers (README.md).

#if defined(USE_TREE) && USE_TREE
HALO_SHARED float tree[LS_X];
#endif
#ifdef B_SY
HALO_SHARED bool ticket_last;
#endif
// @struct

// T of this step: the struct's TS where the entry fixes it (codegen/
// emit_hip.c: a matvec's halo_main_t1), else the launch's (Vulkan's push
// constant; HIP has no specialisation constants).
#define STEP_T (TS != 0u ? TS : args.T)

// The step record, the last binding: uint pos; uint T.
#define step_pos (((const uint *)args.b[B_STEP])[0])
#define step_T (((const uint *)args.b[B_STEP])[1])

#ifdef B_SY
// The last-workgroup ticket (prelude.glsl): one counter per slot, zero
// before the launch and zero again after it.
uint *counts = (uint *)args.b[B_SY];

// True in the last of the n workgroups sharing counter slot to arrive, which
// has zeroed it and may read every workgroup's results (prelude.glsl).
bool last_workgroup(uint slot, uint n)
{
	memoryBarrierBuffer();
	barrier();
	if (gl_LocalInvocationID.x == 0u) {
		ticket_last = atomicAdd(counts[slot], 1u) + 1u == n;
		if (ticket_last)
			counts[slot] = 0u;
	}
	barrier();
	memoryBarrierBuffer();
	return ticket_last;
}
#endif

// A dim affine in T: AFF(X) = X_T * T + X_C.
#define AFF(n) (n##_T * STEP_T + n##_C)

#ifdef RPT
#define ROWS (RPT * STEP_T)
#endif

// The functions kernels/ops.def's elementwise expressions call.
static float exp_f(float x) { return exp(x); }
static float sigmoid_f(float x) { return 1.0f / (1.0f + exp(-x)); }
static float silu_f(float x) { return x * sigmoid_f(x); }

// log(1 + e^x), x past PyTorch's threshold 20 passes through (prelude.glsl
// says why the ratio).
static float softplus_f(float x)
{
	if (x > 20.0f)
		return x;
	float y = exp(x);
	float u = 1.0f + y;
	return u == 1.0f ? y : log(u) * (y / (u - 1.0f));
}

#ifdef B_W
// Weights are f32 or f16 (WTYPE_F16); f16 read as 32-bit words and unpacked.
#if WTYPE_F16
const uint *__restrict__ w_u32 = (const uint *)args.b[B_W];
float load_w(uint i)
{
	vec2 pair = unpackHalf2x16(w_u32[i >> 1]);
	return (i & 1u) == 0u ? pair.x : pair.y;
}
#else
const float *__restrict__ w_f32 = (const float *)args.b[B_W];
float load_w(uint i) { return w_f32[i]; }
#endif
#endif

#if defined(USE_TREE) && USE_TREE
// Workgroup reductions over the LS_X lanes in a fixed pairwise order: the
// result never depends on the subgroup size or on T, and every lane receives
// it. Call from uniform control flow only.
static float tree_sum(uint l, float v)
{
	barrier();
	tree[l] = v;
	for (uint s = LS_X / 2u; s > 0u; s >>= 1) {
		barrier();
		if (l < s)
			tree[l] += tree[l + s];
	}
	barrier();
	return tree[0];
}

static float tree_max(uint l, float v)
{
	barrier();
	tree[l] = v;
	for (uint s = LS_X / 2u; s > 0u; s >>= 1) {
		barrier();
		if (l < s)
			tree[l] = max(tree[l], tree[l + s]);
	}
	barrier();
	return tree[0];
}
#endif
