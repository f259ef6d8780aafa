// Shared by every kernel (kernels/vulkan/README.md): workgroup size, push
// constants, activations, weight loads, fixed-order workgroup reductions.
// The instantiation (codegen/kernel_variant.c) puts the #defines above this.

layout(local_size_x = LS_X, local_size_y = LS_Y, local_size_z = 1) in;

// T: token count of this step, fixed for a recorded command buffer.
layout(push_constant) uniform Push {
	uint T;
} pc;

// The runtime specialises each kernel for the small T of decode and
// verification steps (runtime/drivers/vulkan/vk_pipeline.h, VK_PIPELINE_SPEC_T_MAX):
// with T a constant, loops over rows unroll and a per-T path (matvec's
// columns per group) is the only one compiled, so a kernel that serves T = 8
// costs no registers at T = 1. 0: T is the push constant's (large steps,
// whose every T would otherwise be a pipeline of its own).
layout(constant_id = 0) const uint T_SPEC = 0u;
#define STEP_T (T_SPEC != 0u ? T_SPEC : pc.T)

// The step record, the last binding of every kernel: what changes from one
// replay of a recording to the next lives in memory, not in the commands.
// pos: position of the step's first token.
layout(set = 0, binding = B_STEP) readonly buffer Step {
	uint step_pos;
	uint step_T;
};

// The last-workgroup ticket of the kernels whose workgroups leave work for
// whichever of them finishes last (attention_blocks' merge, qsa_select_blocks'
// pick): one counter per slot, zero before the dispatch and zero again after.
#ifdef B_SY
layout(set = 0, binding = B_SY) coherent buffer Sb { uint counts[]; };
shared bool ticket_last;

// Called by every lane of each of the n workgroups sharing counter `slot`
// once its results are written: true in the last of them to arrive, which
// has then zeroed the counter and may read every workgroup's results. The
// classic last-block reduction: each workgroup's writes are made visible
// before its count (memoryBarrierBuffer), and the last reads them after.
bool last_workgroup(uint slot, uint n)
{
	memoryBarrierBuffer();
	barrier();
	if (gl_LocalInvocationID.x == 0u) {
		ticket_last = atomicAdd(counts[slot], 1u) + 1u == n;
		if (ticket_last)
			counts[slot] = 0u; // all n have counted: nothing else touches it in this dispatch
	}
	barrier();
	memoryBarrierBuffer();
	return ticket_last;
}
#endif

// A dim affine in T: AFF(X) = X_T * T + X_C.
#define AFF(n) (n##_T * STEP_T + n##_C)

// The rows of x a matmul step covers: RPT rows per token (several for the
// hyper-connection streams of one token, codegen/kernel_variant.c).
#ifdef RPT
#define ROWS (RPT * STEP_T)
#endif

// The functions kernels/ops.def's elementwise expressions call.
float exp_f(float x) { return exp(x); }
float sigmoid_f(float x) { return 1.0 / (1.0 + exp(-x)); }
float silu_f(float x) { return x * sigmoid_f(x); }

// log(1 + e^x), x past PyTorch's threshold 20 passes through. log(1 + y)
// alone loses y when it is tiny; the ratio y / (u - 1) corrects the rounding
// of u = 1 + y.
float softplus_f(float x)
{
	if (x > 20.0)
		return x;
	float y = exp(x);
	float u = 1.0 + y;
	return u == 1.0 ? y : log(u) * (y / (u - 1.0));
}

// An angle reduced to about [-pi, pi] by k = roundEven(a / 2pi), for cos and
// sin of rope's angles (up to position * 1 rad): drivers' cos and sin reduce
// a large argument in f32 (an H100's doubled the attention_rope test's error
// at a 32k context against lavapipe's). 2pi is split in three (Cody-Waite)
// so that no step needs a fused multiply-add, which Vulkan does not promise
// (lavapipe's fma is a multiply and an add): 201/32 and 254 * 2^-17 have 8
// significant bits, so for |k| < 2^16 (|a| < 411775) their products with k
// are exact and so are the subtractions (each result a multiple of the
// operands' common grid, smaller than either); only the last term, below
// 2^-18, rounds. The HIP twin's sin and cos reduce with fmas
// (kernels/hip/halo_hip.h).
float reduce_2pi(float a)
{
	float k = roundEven(a * 0.159154937);
	float r = a - k * 6.28125;
	r -= k * 0.0019378662109375;
	return r - k * -2.55903137e-6;
}

#ifdef B_W
// Weights are f32 or f16 (WTYPE_F16). f16 is read as 32-bit words and
// unpacked, so no 16-bit storage feature is needed.
#if WTYPE_F16
layout(set = 0, binding = B_W) readonly buffer WBuf { uint w_u32[]; };
float load_w(uint i)
{
	vec2 pair = unpackHalf2x16(w_u32[i >> 1]);
	return (i & 1u) == 0u ? pair.x : pair.y;
}
#else
layout(set = 0, binding = B_W) readonly buffer WBuf { float w_f32[]; };
float load_w(uint i) { return w_f32[i]; }
#endif
#endif

#if USE_TREE
// Workgroup reductions over the LS_X lanes of a 1-D workgroup in a fixed
// pairwise order: the result never depends on the subgroup size or on T, and
// every lane receives it. Call from uniform control flow only.
shared float tree[LS_X];

float tree_sum(uint l, float v)
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

float tree_max(uint l, float v)
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
