// The HIP dialect's compatibility layer: what the kernel templates under
// kernels/hip/ may use, for both compilers of that dialect (README.md):
//   clang-19 -x hip  --offload-arch=gfx1151 (AMDGPU, wave32)   __AMDGCN__
//   clang-19 -x cuda --cuda-gpu-arch=sm_90  (NVPTX, warp 32)    __NVPTX__
// Neither ROCm's nor CUDA's headers are used (-nogpuinc / -nocudainc): the
// builtins below are the compilers' own, so a bundle builds anywhere
// clang-19 is installed. No device library is linked either, so math is
// spelled with hardware instructions here; a call to a libm function would
// stay undefined and the compile tests refuse it.
//
// The names follow GLSL (vec4, uint, barrier(), gl_WorkGroupID, exp ...) so a
// template reads like its kernels/vulkan twin and computes the same thing in
// the same order. Everything is device code: codegen/emit_hip.c opens
// `#pragma clang force_cuda_host_device begin` before this file.
//
// A third form runs the same source on the CPU, for tests only
// (tests/kernels/test_hip_host.c): clang++-19 -x c++ -std=c++20 -DHALO_HOST.
// Each lane is a thread, barrier() and the subgroup's shuffles are real
// barriers among them, shared memory is file-scope storage (one workgroup
// runs at a time), and halo_host_launch runs a grid. A twin that relied on
// lanes running in lockstep without saying so (subgroupBarrier) races here,
// as it would under sm_90's independent thread scheduling.

#if !defined(__AMDGCN__) && !defined(__NVPTX__) && !defined(HALO_HOST)
#error "kernels/hip: compile for amdgcn (gfx1151) or nvptx (sm_90) only"
#endif
#if defined(HALO_HOST)
#include <barrier>
#include <cmath>
#include <thread>
#include <vector>
#endif

typedef unsigned int uint;
typedef unsigned long long uint64;
typedef float vec2 __attribute__((ext_vector_type(2)));
typedef float vec4 __attribute__((ext_vector_type(4)));
typedef uint uvec2 __attribute__((ext_vector_type(2)));
typedef uint uvec3 __attribute__((ext_vector_type(3)));
typedef uint uvec4 __attribute__((ext_vector_type(4)));
typedef int ivec4 __attribute__((ext_vector_type(4)));

#if defined(HALO_HOST)
#define HALO_SHARED
#define HALO_CONSTANT
#define HALO_GLOBAL extern "C"
#else
#define HALO_SHARED __attribute__((shared))
#define HALO_CONSTANT __attribute__((constant))
#define HALO_GLOBAL extern "C" __attribute__((global))
#endif

// The kernel ABI (README.md): binding i of the Vulkan twin is b[i]; T is the
// step's token count (Vulkan's push constant).
#define HALO_MAX_BINDINGS 24
struct halo_args {
	void *b[HALO_MAX_BINDINGS];
	uint T;
};

// ---- work-item ids --------------------------------------------------------
#if defined(__AMDGCN__)
static inline uint halo_lid(int a)
{
	return a == 0 ? __builtin_amdgcn_workitem_id_x() : a == 1 ? __builtin_amdgcn_workitem_id_y()
	                                                          : __builtin_amdgcn_workitem_id_z();
}
static inline uint halo_gid(int a)
{
	return a == 0 ? __builtin_amdgcn_workgroup_id_x() : a == 1 ? __builtin_amdgcn_workgroup_id_y()
	                                                           : __builtin_amdgcn_workgroup_id_z();
}
// Code object v5: the grid's workgroup counts are the implicit kernarg's
// first three u32.
static inline uint halo_ngroups(int a)
{
	return ((const __attribute__((address_space(4))) uint *)__builtin_amdgcn_implicitarg_ptr())[a];
}
#elif defined(HALO_HOST)
// The running lane's ids and its index in the workgroup (x-major), set by
// halo_host_launch; the grid's size.
static thread_local uint halo_host_lid[3], halo_host_gid[3], halo_host_flat;
static uint halo_host_groups[3];
static inline uint halo_lid(int a) { return halo_host_lid[a]; }
static inline uint halo_gid(int a) { return halo_host_gid[a]; }
static inline uint halo_ngroups(int a) { return halo_host_groups[a]; }
#else
static inline uint halo_lid(int a)
{
	return a == 0 ? __nvvm_read_ptx_sreg_tid_x() : a == 1 ? __nvvm_read_ptx_sreg_tid_y() : __nvvm_read_ptx_sreg_tid_z();
}
static inline uint halo_gid(int a)
{
	return a == 0 ? __nvvm_read_ptx_sreg_ctaid_x() : a == 1 ? __nvvm_read_ptx_sreg_ctaid_y()
	                                                        : __nvvm_read_ptx_sreg_ctaid_z();
}
static inline uint halo_ngroups(int a)
{
	return a == 0 ? __nvvm_read_ptx_sreg_nctaid_x() : a == 1 ? __nvvm_read_ptx_sreg_nctaid_y()
	                                                         : __nvvm_read_ptx_sreg_nctaid_z();
}
#endif

#define gl_LocalInvocationID (uvec3{halo_lid(0), halo_lid(1), halo_lid(2)})
#define gl_WorkGroupID (uvec3{halo_gid(0), halo_gid(1), halo_gid(2)})
#define gl_NumWorkGroups (uvec3{halo_ngroups(0), halo_ngroups(1), halo_ngroups(2)})
// A workgroup is LS_X x LS_Y x 1 lanes (the launch bounds), so z is the group's.
#define gl_GlobalInvocationID                                                                              \
	(uvec3{halo_gid(0) * LS_X + halo_lid(0), halo_gid(1) * LS_Y + halo_lid(1), halo_gid(2)})

// ---- barriers and the subgroup (32 lanes on both targets) ----------------
#define gl_SubgroupSize 32u
// subgroups are runs of 32 lanes in x-major order, as on both targets' hardware
#define gl_SubgroupInvocationID ((halo_lid(1) * LS_X + halo_lid(0)) & 31u)
#define gl_SubgroupID ((halo_lid(1) * LS_X + halo_lid(0)) >> 5)
#define gl_NumSubgroups ((LS_X * LS_Y + 31u) >> 5)

#if defined(__AMDGCN__)
// GLSL's barrier(): every invocation's shared-memory writes before it are
// visible to the workgroup after it (HIP's __syncthreads).
static inline void barrier()
{
	__builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
	__builtin_amdgcn_s_barrier();
	__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// A wave runs in lockstep: ordering its shared-memory accesses is enough.
static inline void subgroupBarrier() { __builtin_amdgcn_fence(__ATOMIC_ACQ_REL, "wavefront"); }
static inline float subgroupShuffleXor(float v, uint mask)
{
	int lane = (int)__builtin_amdgcn_mbcnt_lo(~0u, 0u);
	return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute((lane ^ (int)mask) << 2, __builtin_bit_cast(int, v)));
}
#elif defined(HALO_HOST)
// The running workgroup's barrier and its subgroups' (runs of 32 lanes),
// and the slots a shuffle exchanges values through.
static std::barrier<> *halo_host_wg;
static std::barrier<> *halo_host_sg[32];
static float halo_host_xchg[1024];
static inline void barrier() { halo_host_wg->arrive_and_wait(); }
static inline void subgroupBarrier() { halo_host_sg[halo_host_flat >> 5]->arrive_and_wait(); }
static inline float subgroupShuffleXor(float v, uint mask)
{
	uint f = halo_host_flat;
	halo_host_xchg[f] = v;
	subgroupBarrier();
	float r = halo_host_xchg[(f & ~31u) | ((f & 31u) ^ mask)];
	subgroupBarrier(); /* every lane has read before the next shuffle writes */
	return r;
}
#else
static inline void barrier() { __syncthreads(); }
static inline void subgroupBarrier() { __nvvm_bar_warp_sync(0xffffffffu); }
static inline float subgroupShuffleXor(float v, uint mask) { return __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, (int)mask, 31); }
#endif
// GLSL's memoryBarrierBuffer(): the lane's global-memory writes before it
// are visible on the whole device before its accesses after it; and
// atomicAdd on a global uint (the last-block merge, attention_merge.hip).
#if defined(__AMDGCN__)
static inline void memoryBarrierBuffer() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
#elif defined(HALO_HOST)
static inline void memoryBarrierBuffer() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#else
static inline void memoryBarrierBuffer() { __nvvm_membar_gl(); }
#endif
static inline uint atomicAdd(uint &p, uint v) { return __atomic_fetch_add(&p, v, __ATOMIC_RELAXED); }

static inline uint subgroupShuffleXor(uint v, uint mask)
{
	return __builtin_bit_cast(uint, subgroupShuffleXor(__builtin_bit_cast(float, v), mask));
}

// ---- bits and halves ------------------------------------------------------
static inline float uintBitsToFloat(uint u) { return __builtin_bit_cast(float, u); }
static inline uint floatBitsToUint(float f) { return __builtin_bit_cast(uint, f); }
static inline vec2 unpackHalf2x16(uint u)
{
	return vec2{(float)__builtin_bit_cast(_Float16, (unsigned short)(u & 0xffffu)),
	            (float)__builtin_bit_cast(_Float16, (unsigned short)(u >> 16))};
}
// Round to nearest even, as GLSL's packHalf2x16 on every driver we run.
static inline uint packHalf2x16(vec2 v)
{
	return (uint)__builtin_bit_cast(unsigned short, (_Float16)v.x) |
	       (uint)__builtin_bit_cast(unsigned short, (_Float16)v.y) << 16;
}
// GLSL's umulExtended: the 64-bit product of a and b as (msb, lsb) words.
static inline void umulExtended(uint a, uint b, uint &msb, uint &lsb)
{
	uint64 p = (uint64)a * b;
	msb = (uint)(p >> 32);
	lsb = (uint)p;
}
static inline vec4 unpack8(uint u) /* the four signed bytes of u, low first */
{
	return vec4{(float)(signed char)(u & 0xffu), (float)(signed char)(u >> 8 & 0xffu),
	            (float)(signed char)(u >> 16 & 0xffu), (float)(signed char)(u >> 24)};
}

// The sum of the products of a's and b's four signed bytes, exact in 32 bits
// (GLSL's OpSDot, which matvec's int8 activations use): in integer
// operations (sdot4_int), or one instruction on both targets, V_DOT4_I32_IU8
// and dp4a (clang-19 has no builtin for the latter).
static inline int sdot4_int(uint a, uint b)
{
	int s = 0;
	for (int i = 0; i < 32; i += 8)
		s += (int)(signed char)(a >> i) * (int)(signed char)(b >> i);
	return s;
}
static inline int sdot4(uint a, uint b)
{
#if defined(__AMDGCN__)
	return __builtin_amdgcn_sudot4(true, (int)a, true, (int)b, 0, false);
#elif defined(HALO_HOST)
	return sdot4_int(a, b);
#else
	int s;
	asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(b), "r"(0));
	return s;
#endif
}

// ---- math: the GLSL built-ins the templates call ------------------------
// exp and log go through the hardware's base-2 instructions, as Vulkan
// drivers compile GLSL's exp/log (within a few ulp; the oracle tests' stated
// tolerances cover it). sqrt is correctly rounded on both targets.
#if defined(__AMDGCN__)
static inline float halo_exp2(float x) { return __builtin_amdgcn_exp2f(x); }
static inline float halo_log2(float x) { return __builtin_amdgcn_logf(x); }
#elif defined(HALO_HOST)
static inline float halo_exp2(float x) { return std::exp2(x); }
static inline float halo_log2(float x) { return std::log2(x); }
#else
static inline float halo_exp2(float x) { return __nvvm_ex2_approx_f(x); }
static inline float halo_log2(float x) { return __nvvm_lg2_approx_f(x); }
#endif
// sin and cos (rope's angles, up to position * 1 radian): the hardware's
// instructions are accurate near 0 only (v_sin_f32 takes revolutions,
// sin.approx.f32 is within 2^-20.9 on [-pi, pi]), so the argument is first
// reduced to [-pi, pi] by k = rint(a / 2pi) with 2pi split in two f32 parts
// (Cody-Waite: the first fma is exact for the angles of any context we
// plan). Vulkan drivers scale by 1/2pi and take the fraction instead, which
// loses the angle's low bits at large positions: this is closer to the
// reference's f64 sin and cos.
static inline float halo_reduce_2pi(float a)
{
	float k = __builtin_rintf(a * 0.159154943091895336f);
	return __builtin_fmaf(-k, -1.74845553e-07f, __builtin_fmaf(-k, 6.28318548f, a));
}
#if defined(__AMDGCN__)
static inline float sin(float a) { return __builtin_amdgcn_sinf(halo_reduce_2pi(a) * 0.159154943091895336f); }
static inline float cos(float a) { return __builtin_amdgcn_cosf(halo_reduce_2pi(a) * 0.159154943091895336f); }
#elif defined(HALO_HOST)
static inline float sin(float a) { return std::sin(halo_reduce_2pi(a)); }
static inline float cos(float a) { return std::cos(halo_reduce_2pi(a)); }
#else
static inline float sin(float a) { return __nvvm_sin_approx_f(halo_reduce_2pi(a)); }
static inline float cos(float a) { return __nvvm_cos_approx_f(halo_reduce_2pi(a)); }
#endif
static inline float exp(float x) { return halo_exp2(x * 1.44269504088896341f); }
static inline float log(float x) { return halo_log2(x) * 0.693147180559945309f; }
static inline float sqrt(float x) { return __builtin_sqrtf(x); }
static inline float inversesqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
static inline float abs(float x) { return __builtin_fabsf(x); }
static inline float sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f; }
static inline float max(float a, float b) { return __builtin_fmaxf(a, b); }
static inline float min(float a, float b) { return __builtin_fminf(a, b); }
static inline uint max(uint a, uint b) { return a > b ? a : b; }
static inline uint min(uint a, uint b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline float clamp(float x, float lo, float hi) { return min(max(x, lo), hi); }
static inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline float dot(vec4 a, vec4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
static inline float dot(vec2 a, vec2 b) { return a.x * b.x + a.y * b.y; }

// The entry point's workgroup size bound (LS_X * LS_Y, the plan's).
#if defined(__AMDGCN__)
#define HALO_LAUNCH_BOUNDS(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
#elif defined(HALO_HOST)
#define HALO_LAUNCH_BOUNDS(n)
extern "C" void halo_main(halo_args a);
// Runs the grid (gx, gy, gz) of workgroups of lx x ly lanes, one workgroup
// at a time, each lane a thread (the same threads for every workgroup)
// calling halo_main. A lane that has returned leaves its barriers, as an
// exited lane stops counting on a GPU; each workgroup gets new ones.
extern "C" void halo_host_launch(halo_args a, uint gx, uint gy, uint gz, uint lx, uint ly)
{
	uint lanes = lx * ly, n_sg = (lanes + 31u) / 32u, groups = gx * gy * gz;
	halo_host_groups[0] = gx, halo_host_groups[1] = gy, halo_host_groups[2] = gz;
	std::barrier<> phase((std::ptrdiff_t)lanes);
	std::vector<std::thread> th;
	for (uint l = 0; l < lanes; l++)
		th.emplace_back([=, &phase] {
			halo_host_lid[0] = l % lx, halo_host_lid[1] = l / lx, halo_host_lid[2] = 0;
			halo_host_flat = l;
			for (uint g = 0; g < groups; g++) {
				if (l == 0) { /* the workgroup's barriers, before any lane runs it */
					halo_host_wg = new std::barrier<>((std::ptrdiff_t)lanes);
					for (uint s = 0; s < n_sg; s++)
						halo_host_sg[s] = new std::barrier<>(
						    (std::ptrdiff_t)(lanes - 32u * s < 32u ? lanes - 32u * s : 32u));
				}
				phase.arrive_and_wait();
				halo_host_gid[0] = g % gx, halo_host_gid[1] = g / gx % gy, halo_host_gid[2] = g / (gx * gy);
				halo_main(a);
				halo_host_wg->arrive_and_drop();
				halo_host_sg[l / 32u]->arrive_and_drop();
				phase.arrive_and_wait(); /* every lane is done with them */
				if (l == 0) {
					delete halo_host_wg;
					for (uint s = 0; s < n_sg; s++)
						delete halo_host_sg[s];
				}
			}
		});
	for (std::thread &t : th)
		t.join();
}
#else
#define HALO_LAUNCH_BOUNDS(n) __attribute__((launch_bounds(n)))
#endif
