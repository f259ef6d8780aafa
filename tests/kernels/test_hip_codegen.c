/* The HIP dialect's codegen (codegen/emit_hip.c, codegen/hip_compile.c):
 * for variants of every template with a twin under kernels/hip (several
 * tiles, fused prologues and epilogues, a broadcast operand, a scaled op,
 * each weight type; for the others each form their #if's select (DeepSeek
 * V4's among them: the unweighted norm, the routers' scorings, bias and
 * scaling, the clamped experts, the clamps), planned
 * on the template named: the recurrent and chunked gated_delta_rule,
 * topk's shuffle and tree combines, the MoE halves' weight formats), the
 * emitted source compiles with clang-19 for
 * both targets, and
 *  - gfx1151: an AMDGPU HSA code object, code object v5 (ABI version 3),
 *    e_flags naming gfx1151, wave32 (the disassembly has no wave64 code);
 *  - sm_90: PTX for `.target sm_90` with the entry `halo_main` (and a
 *    matvec, only a matvec, `halo_main_t1`), no f64
 *    arithmetic (a `1.0` literal in a template would be a double), no call
 *    into a device library the compile does not link;
 *  - the same source gives the same bytes twice (bundles are deterministic;
 *    shown on each description's first variant: what made clang's output
 *    vary once, a compilation-unit id from the scratch path, was in its
 *    flags, not in a kernel);
 *  - no local memory in the PTX: a twin's per-lane arrays stay in registers;
 *  - the gfx1151 matmul_coopmat multiplies with v_wmma_f32_16x16x16_f16,
 *    the sm_90 one with mma.sync.aligned.m16n8k16; the int8 activations'
 *    matvec sums four products with v_dot4_i32_iu8, dp4a.
 * The code runs nowhere here: the CUDA twin's correctness is the H200's to
 * show (tools/gpu, README). Skipped (77) without clang-19. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/hip_compile.h"
#include "codegen/kernel_variant.h"
#include "tests/check.h"

/* ELF64 header fields of an AMDGPU code object. */
enum { EI_OSABI = 7, EI_ABIVERSION = 8, E_MACHINE = 18, E_FLAGS = 48 };
enum { ELFOSABI_AMDGPU_HSA = 64, EM_AMDGPU = 224, EF_AMDGPU_MACH_GFX1151 = 0x4a, COV5_ABI = 3 };

static void check_hsaco(const char *what, const uint8_t *o, size_t n)
{
	CHECK(n > 64 && memcmp(o, "\x7f" "ELF", 4) == 0 && o[4] == 2, "%s: not an ELF64 object", what);
	if (n <= 64)
		return;
	uint16_t machine = (uint16_t)(o[E_MACHINE] | o[E_MACHINE + 1] << 8);
	uint32_t flags = (uint32_t)o[E_FLAGS] | (uint32_t)o[E_FLAGS + 1] << 8;
	CHECK(o[EI_OSABI] == ELFOSABI_AMDGPU_HSA && o[EI_ABIVERSION] == COV5_ABI,
	      "%s: OS/ABI %u version %u, want AMDGPU HSA (64) code object v5 (3)", what, o[EI_OSABI], o[EI_ABIVERSION]);
	CHECK(machine == EM_AMDGPU && (flags & 0xff) == EF_AMDGPU_MACH_GFX1151, "%s: machine %u flags 0x%x", what,
	      machine, flags);
}

/* t1: the kernel is a matvec, which has the one-token entry too
 * (kernels/gpu_target.h); no other kernel has it. */
static void check_ptx(const char *what, const char *ptx, bool t1)
{
	CHECK(strstr(ptx, ".target sm_90") != NULL, "%s: PTX is not for sm_90", what);
	CHECK(strstr(ptx, ".entry halo_main(") != NULL, "%s: PTX has no entry halo_main", what);
	CHECK((strstr(ptx, ".entry halo_main_t1(") != NULL) == t1, "%s: PTX %s entry halo_main_t1", what,
	      t1 ? "has no" : "has an");
	CHECK(strstr(ptx, ".f64") == NULL, "%s: PTX computes in f64 (a double literal in the template?)", what);
	CHECK(strstr(ptx, "__local_depot") == NULL, "%s: PTX keeps values in local memory (spilled or not inlined)",
	      what);
}

/* Compiles src for arch (twice: and the bytes are the same) and checks the
 * result; without the kernel cache, so clang runs each time. */
static void compile_check(const char *what, const char *src, cg_gpu_arch arch, bool twice, bool t1)
{
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	char err[2048];
	bool ok = cg_hip_compile(arch, src, what, NULL, &a, &na, err, sizeof err);
	CHECK(ok, "%s: %s", what, err);
	if (ok && twice) {
		ok = cg_hip_compile(arch, src, what, NULL, &b, &nb, err, sizeof err);
		CHECK(b && na == nb && memcmp(a, b, na) == 0, "%s: two compiles differ", what);
	}
	if (a && arch == CG_ARCH_GFX1151)
		check_hsaco(what, a, na);
	else if (a)
		check_ptx(what, (const char *)a, t1);
	free(a);
	free(b);
}

/* The first `max` variants of d's space (at most 8), each planned on the
 * template `tmpl` (a base name; NULL: any). */
static void check_desc_of(const char *what, kv_desc d, int max, const char *tmpl)
{
	kv_tiles t[8];
	int n = kv_variant_space(&d, t, max < 8 ? max : 8);
	for (int i = 0; i < n; i++) {
		d.tiles = t[i];
		kv_kernel k;
		char err[512];
		if (!kernel_variant_build(&d, &k, err, sizeof err)) {
			CHECK(false, "%s: %s", what, err);
			continue;
		}
		CHECK(!tmpl || (strncmp(k.template_name, tmpl, strlen(tmpl)) == 0 && k.template_name[strlen(tmpl)] == '.'),
		      "%s: planned on %s, want %s", what, k.template_name, tmpl);
		CHECK(k.hip != NULL, "%s: no HIP source for %s", what, k.signature);
		bool matvec = strncmp(k.template_name, "matvec.", 7) == 0;
		if (k.hip) {
			compile_check(k.signature, k.hip, CG_ARCH_GFX1151, i == 0, matvec);
			compile_check(k.signature, k.hip, CG_ARCH_SM90, i == 0, matvec);
		}
		kv_kernel_free(&k);
	}
}

static void check_desc(const char *what, kv_desc d, int max)
{
	check_desc_of(what, d, max, NULL);
}

/* A matmul descriptor: K x N weights of type w, T up to t_max. */
static kv_desc matmul_desc(int64_t K, int64_t N, int64_t t_max, halo_dtype w)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = t_max, .wtype = w};
	d.u.matmul.K = K;
	d.u.matmul.N = N;
	return d;
}

/* With the rms prologue (folded: the norm weight is in w) and a residual
 * add and an activation as the epilogue. */
static kv_desc fused(kv_desc d, bool folded)
{
	d.pro = (kv_prologue){.on = true, .folded = folded, .eps = 1e-6f, .offset = !folded};
	d.n_epi = 2;
	d.epi[0] = (kv_elem_op){.op = IR_OP_ADD};
	d.epi[1] = (kv_elem_op){.op = IR_OP_SILU};
	return d;
}

/* d with split results of the given widths, or as a (gate, up) pair. */
static kv_desc merged(kv_desc d, const int64_t *split, int n_split, bool pair)
{
	d.u.matmul.pair = pair;
	d.u.matmul.n_split = n_split;
	for (int i = 0; i < n_split; i++)
		d.u.matmul.split[i] = split[i];
	return d;
}

/* matvec (T <= 8: f16 and f32, 16-byte and element chunks, the shuffle and
 * tree reductions, growing columns), the quantized formats, the tiled
 * matmul and matmul_coopmat, split and pair results, groups. */
static void check_matmuls(void)
{
	check_desc("matvec T=1 f16 pro", fused(matmul_desc(256, 320, 1, HALO_F16), false), 2);
	check_desc("matvec T=8 f32 pro", fused(matmul_desc(256, 96, 8, HALO_F32), true), 2);
	check_desc("matvec T=8 f16 ragged K", matmul_desc(100, 64, 8, HALO_F16), 1);
	kv_desc tree = fused(matmul_desc(512, 64, 8, HALO_F16), false);
	tree.tiles = (kv_tiles){.local = 128, .split = 32, .cols = 1, .unroll = 2, .tree = 1, .grow = 1};
	check_desc("matvec T=8 tree", tree, 1);
	check_desc("matvec T=4 q8_0 pro", fused(matmul_desc(256, 64, 4, HALO_Q8_0), false), 2);
	check_desc("matvec T=2 q4_k pro", fused(matmul_desc(256, 64, 2, HALO_Q4_K), false), 2);
	check_desc("matvec T=1 f8e4m3_b128", matmul_desc(256, 64, 1, HALO_F8E4M3_B128), 1);
	check_desc("matvec T=3 mxfp4 pro", fused(matmul_desc(96, 64, 3, HALO_MXFP4), false), 2);
	/* int8 activations: two tiles of x's codes at T = 8 (K = 2304) */
	kv_desc xq = fused(matmul_desc(2304, 64, 8, HALO_Q8_0), false);
	xq.u.matmul.xq = 8;
	check_desc("matvec T=8 q8_0 xq pro", xq, 2);
	xq = fused(matmul_desc(2304, 64, 1, HALO_Q4_K), false);
	xq.u.matmul.xq = 8;
	check_desc("matvec T=1 q4_k xq pro", xq, 2);

	kv_desc mm = fused(matmul_desc(200, 96, 64, HALO_F32), false);
	check_desc("matmul f32 pro", mm, 1);
	mm = matmul_desc(256, 96, 64, HALO_Q8_0);
	mm.tiles = (kv_tiles){.bm = 64, .bn = 32, .bk = 8, .tm = 4, .tn = 2};
	check_desc("matmul q8_0 tiles", mm, 1);
	check_desc("matmul_coopmat f16 pro", fused(matmul_desc(256, 256, 512, HALO_F16), false), 2);
	kv_desc cm = fused(matmul_desc(100, 200, 64, HALO_F16), true);
	cm.tiles = (kv_tiles){.coopmat = 1, .bm = 64, .bn = 64, .bk = 16, .tm = 16, .tn = 32};
	check_desc("matmul_coopmat ragged K", cm, 1);
	check_desc("matmul_coopmat q4_k", matmul_desc(256, 128, 64, HALO_Q4_K), 1);
	mm = matmul_desc(96, 96, 64, HALO_MXFP4);
	mm.tiles = (kv_tiles){.bm = 64, .bn = 32, .bk = 8, .tm = 4, .tn = 2};
	check_desc("matmul mxfp4 tiles", mm, 1);
	check_desc("matmul_coopmat mxfp4", matmul_desc(256, 128, 64, HALO_MXFP4), 1);

	/* merged siblings (matmul_out.hip): three split results, a swiglu pair */
	static const int64_t qkv[] = {128, 64, 64};
	check_desc("matvec split", merged(matmul_desc(256, 256, 5, HALO_F16), qkv, 3, false), 1);
	check_desc("matvec pair", merged(fused(matmul_desc(256, 192, 5, HALO_F16), true), NULL, 0, true), 1);
	check_desc("matmul split", merged(matmul_desc(256, 256, 64, HALO_F32), qkv, 3, false), 1);
	check_desc("matmul_coopmat pair", merged(matmul_desc(256, 192, 512, HALO_F16), NULL, 0, true), 1);

	/* grouped (DeepSeek V4's o_a_proj: x holds 8 inputs of K): matvec, tiled */
	kv_desc g = matmul_desc(256, 128, 5, HALO_F16);
	g.u.matmul.groups = 8;
	check_desc("matvec groups", g, 1);
	g = matmul_desc(256, 128, 64, HALO_F32);
	g.u.matmul.groups = 8;
	check_desc("matmul groups", g, 1);
}

/* The twins past the matmuls, rms_norm and elementwise: a row a form that
 * the template's #if's select, and the template it must be planned on. */
#define ATT(h_q, h_k, d, d_v, s, blk) {.hq = h_q, .hk = h_k, .D = d, .dv = d_v, .C = 512, .scale = s, .block = blk}
static const struct {
	const char *what, *tmpl;
	kv_desc d;
	int max;
} other_cases[] = {
	{"embed f16", "embed", {.op = IR_OP_EMBED, .t_max = 8, .wtype = HALO_F16, .u.embed = {.V = 1000, .H = 256}}, 1},
	{"state_write at pos", "copy_rows",
	 {.op = IR_OP_STATE_WRITE, .t_max = 64,
	  .u.copy = {.rows = {.coef_T = 1}, .width = 128, .src_stride = 128, .dst_stride = 256, .at_pos = true}},
	 1},
	{"rows_at_pos from pos", "copy_rows",
	 {.op = IR_OP_ROWS_AT_POS, .t_max = 8,
	  .u.copy = {.rows = {.c = 4}, .width = 64, .src_stride = 64, .dst_stride = 64, .from_pos = true,
		     .src_rows = 512, .pos_offset = -3}},
	 1},
	{"state_write every", "copy_rows",
	 {.op = IR_OP_STATE_WRITE, .t_max = 64,
	  .u.copy = {.rows = {.coef_T = 1}, .width = 128, .src_stride = 128, .dst_stride = 128, .at_pos = true,
		     .every = 4}},
	 1},
	{"rope partial rot", "rope",
	 {.op = IR_OP_ROPE, .t_max = 64, .u.rope = {.heads = 4, .D = 64, .p = {.rot_dim = 32, .base = 1e6f}}, .n_epi = 1,
	  .epi = {{.op = IR_OP_SCALE, .value = 0.125f}}},
	 1},
	{"rope pro_rms", "rope",
	 {.op = IR_OP_ROPE, .t_max = 8, .u.rope = {.heads = 4, .D = 128, .p = {.rot_dim = 128, .base = 1e6f}},
	  .pro = {.on = true, .eps = 1e-6f, .offset = 1}},
	 2},
	{"rope deepseek (tail, inverse, offset, yarn)", "rope",
	 {.op = IR_OP_ROPE, .t_max = 64,
	  .u.rope = {.heads = 4, .D = 64,
		     .p = {.rot_dim = 16, .base = 1.6e5f, .layout = REF_ROPE_INTERLEAVED_TAIL, .inverse = true,
			   .offset = -3, .yarn_factor = 4.0f, .yarn_orig_ctx = 64, .yarn_beta_fast = 32.0f,
			   .yarn_beta_slow = 1.0f}}},
	 1},
	{"attention vec4", "attention",
	 {.op = IR_OP_ATTENTION, .t_max = 8, .u.attention = ATT(4, 2, 64, 64, 0.125f, 0), .n_epi = 1,
	  .epi = {{.op = IR_OP_ADD}}},
	 1},
	{"attention scalar", "attention",
	 {.op = IR_OP_ATTENTION, .t_max = 8, .u.attention = ATT(4, 4, 30, 160, 0.2f, 0)}, 1},
	{"masked_attention", "attention",
	 {.op = IR_OP_MASKED_ATTENTION, .t_max = 8, .u.attention = ATT(4, 1, 64, 64, 0.125f, 0)}, 1},
	{"attention_partial", "attention",
	 {.op = IR_OP_ATTENTION_PARTIAL, .t_max = 8, .u.attention = ATT(4, 2, 64, 64, 0.125f, 64)}, 1},
	{"attention_partial rows", "attention_rows",
	 {.op = IR_OP_ATTENTION_PARTIAL, .t_max = 64, .u.attention = ATT(4, 2, 64, 64, 0.125f, 64)}, 1},
	{"attention_blocks", "attention",
	 {.op = IR_OP_ATTENTION_BLOCKS, .t_max = 8, .u.attention = {.hq = 4, .hk = 2, .D = 64, .dv = 64, .C = 256,
	  .scale = 0.125f, .block = 64, .sync_rows = 8}, .n_epi = 1, .epi = {{.op = IR_OP_ADD}}},
	 1},
	{"masked_attention_blocks", "attention",
	 {.op = IR_OP_MASKED_ATTENTION_BLOCKS, .t_max = 64, .u.attention = {.hq = 4, .hk = 2, .D = 64, .dv = 64,
	  .C = 256, .scale = 0.125f, .block = 64, .sync_rows = 64}},
	 1},
	{"attention_rope", "attention",
	 {.op = IR_OP_ATTENTION_ROPE, .t_max = 8, .out_at_pos = 4,
	  .u.attention = {.hq = 4, .hk = 2, .D = 64, .dv = 64, .C = 256, .scale = 0.125f, .block = 64, .sync_rows = 8,
			  .rope = {.rot_dim = 32, .base = 10000.0f}, .norm_eps = 1e-6f, .norm_offset = 1}},
	 1},
	{"attention_blocks rows", "attention_rows",
	 {.op = IR_OP_ATTENTION_BLOCKS, .t_max = 64, .u.attention = {.hq = 4, .hk = 2, .D = 64, .dv = 64, .C = 256,
	  .scale = 0.125f, .block = 64, .sync_rows = 64}},
	 1},
	{"attention_combine", "attention_combine",
	 {.op = IR_OP_ATTENTION_COMBINE, .t_max = 8, .u.attention = {.hq = 4, .dv = 64, .blocks = 8}, .n_epi = 1,
	  .epi = {{.op = IR_OP_ADD}}},
	 1},
	{"argmax", "argmax", {.op = IR_OP_ARGMAX, .t_max = 8, .u.argmax = {.N = 1000}}, 1},
	{"softmax", "softmax", {.op = IR_OP_SOFTMAX, .t_max = 8, .u.softmax = {.rows_per_t = 2, .D = 300}}, 1},
	{"concat", "concat",
	 {.op = IR_OP_CONCAT, .t_max = 8, .u.concat = {.rows = {.coef_T = 1}, .wa = {.c = 64}, .wb = {.c = 32}}}, 1},
	{"l2_norm", "l2_norm",
	 {.op = IR_OP_L2_NORM, .t_max = 8, .u.norm = {.rows_per_t = 4, .D = 128, .eps = 1e-6f}}, 1},
	{"gated_rms_norm", "gated_rms_norm",
	 {.op = IR_OP_GATED_RMS_NORM, .t_max = 8, .u.norm = {.rows_per_t = 4, .D = 128, .eps = 1e-6f}}, 1},
	{"reduce_mean", "reduce_mean",
	 {.op = IR_OP_REDUCE_MEAN, .t_max = 8, .u.reduce = {.outer = {.coef_T = 1}, .n = 4, .inner = 64}}, 1},
	{"signed_sqrt", "signed_sqrt",
	 {.op = IR_OP_SIGNED_SQRT, .t_max = 8, .u.signed_sqrt = {.numel = {.coef_T = 64}, .eps = 1e-6f}}, 1},
	{"conv1d_causal steps", "conv1d_causal",
	 {.op = IR_OP_CONV1D_CAUSAL, .t_max = 8, .wtype = HALO_F16, .steps = true,
	  .u.conv1d = {.C = 96, .K = 4, .silu = true}},
	 1},
	{"conv1d_dilated", "conv1d_causal",
	 {.op = IR_OP_CONV1D_DILATED, .t_max = 8, .wtype = HALO_F32, .u.conv_dilated = {.C = 96, .K = 3, .dilation = 2}},
	 1},
	{"gated_delta_rule steps", "gated_delta_rule",
	 {.op = IR_OP_GATED_DELTA_RULE, .t_max = 8, .steps = true,
	  .u.gdr = {.hk = 2, .hv = 4, .dk = 64, .dv = 96, .scale = 0.125f}},
	 1},
	{"gated_delta_rule_chunked", "gated_delta_rule_chunked",
	 {.op = IR_OP_GATED_DELTA_RULE, .t_max = 200, .u.gdr = {.hk = 2, .hv = 4, .dk = 128, .dv = 128, .scale = 0.088f}},
	 1},
	{"topk shuffle, tree", "topk", {.op = IR_OP_TOPK, .t_max = 8, .u.topk = {.N = 300, .k = 8}}, 2},
	{"moe_route norm", "topk", {.op = IR_OP_MOE_ROUTE, .t_max = 8, .u.topk = {.N = 64, .k = 6, .norm = true}}, 2},
	{"moe_route sqrtsoftplus bias scaled", "topk",
	 {.op = IR_OP_MOE_ROUTE, .t_max = 8,
	  .u.topk = {.N = 256, .k = 6, .norm = true, .scoring = KV_SCORE_SQRTSOFTPLUS, .bias = true, .scaling = 1.5f}},
	 1},
	{"moe_route softmax bias", "topk",
	 {.op = IR_OP_MOE_ROUTE, .t_max = 8, .u.topk = {.N = 64, .k = 4, .norm = true, .bias = true}}, 1},
	{"moe_route sigmoid", "topk",
	 {.op = IR_OP_MOE_ROUTE, .t_max = 8, .u.topk = {.N = 64, .k = 4, .scoring = KV_SCORE_SIGMOID}}, 1},
	{"moe_route_hash f16 sqrtsoftplus scaled", "topk",
	 {.op = IR_OP_MOE_ROUTE_HASH, .t_max = 8, .wtype = HALO_F16,
	  .u.topk = {.N = 256, .k = 6, .norm = true, .scoring = KV_SCORE_SQRTSOFTPLUS, .scaling = 1.5f, .V = 1000}},
	 1},
	{"moe_route_hash softmax", "topk",
	 {.op = IR_OP_MOE_ROUTE_HASH, .t_max = 8, .wtype = HALO_F32, .u.topk = {.N = 64, .k = 4, .norm = true, .V = 100}},
	 1},
	{"moe_gate_up f32 vec8", "moe_gate_up",
	 {.op = IR_OP_MOE_GATE_UP, .t_max = 8, .wtype = HALO_F32, .u.moe = {.H = 256, .F = 96, .E = 8, .k = 2}}, 1},
	{"moe_gate_up f16 scalar", "moe_gate_up",
	 {.op = IR_OP_MOE_GATE_UP, .t_max = 8, .wtype = HALO_F16, .u.moe = {.H = 100, .F = 96, .E = 8, .k = 2}}, 1},
	{"moe_gate_up f16 limit", "moe_gate_up",
	 {.op = IR_OP_MOE_GATE_UP, .t_max = 8, .wtype = HALO_F16, .u.moe = {.H = 256, .F = 96, .E = 8, .k = 2, .limit = 7}},
	 1},
	{"moe_gate_up q4_k", "moe_gate_up",
	 {.op = IR_OP_MOE_GATE_UP, .t_max = 8, .wtype = HALO_Q4_K, .u.moe = {.H = 256, .F = 64, .E = 4, .k = 2}}, 1},
	{"moe_down f16 vec8", "moe_down",
	 {.op = IR_OP_MOE_DOWN, .t_max = 8, .wtype = HALO_F16, .u.moe = {.H = 100, .F = 96, .E = 8, .k = 2}}, 1},
	{"moe_down f32 scalar", "moe_down",
	 {.op = IR_OP_MOE_DOWN, .t_max = 8, .wtype = HALO_F32, .u.moe = {.H = 96, .F = 60, .E = 8, .k = 2}}, 1},
	{"moe_down q8_0", "moe_down",
	 {.op = IR_OP_MOE_DOWN, .t_max = 8, .wtype = HALO_Q8_0, .u.moe = {.H = 64, .F = 256, .E = 4, .k = 2}}, 1},
	{"moe_down f8e4m3_b128", "moe_down",
	 {.op = IR_OP_MOE_DOWN, .t_max = 8, .wtype = HALO_F8E4M3_B128, .u.moe = {.H = 64, .F = 256, .E = 4, .k = 2}},
	 1},
	{"moe_gate_up mxfp4 limit", "moe_gate_up",
	 {.op = IR_OP_MOE_GATE_UP, .t_max = 8, .wtype = HALO_MXFP4, .u.moe = {.H = 96, .F = 64, .E = 4, .k = 2, .limit = 7}},
	 1},
	{"moe_down mxfp4", "moe_down",
	 {.op = IR_OP_MOE_DOWN, .t_max = 8, .wtype = HALO_MXFP4, .u.moe = {.H = 64, .F = 96, .E = 4, .k = 2}}, 1},
	{"ngram_embed f16 steps", "ngram_embed",
	 {.op = IR_OP_NGRAM_EMBED, .t_max = 8, .wtype = HALO_F16, .steps = true,
	  .u.ngram = {.ngram = 3, .hpn = 2, .eos = 0, .vocab = 1000, .rows = 420, .dp = 16,
		      .mult = {1, 999, 1997}, .size = {101, 103, 107, 109}}},
	 1},
	{"hc_weights", "hc_weights",
	 {.op = IR_OP_HC_WEIGHTS, .t_max = 64, .u.hc = {.n = 4, .iters = 20, .eps = 1e-6f, .full = true}}, 1},
	{"hc_weights pre", "hc_weights", {.op = IR_OP_HC_WEIGHTS, .t_max = 8, .u.hc = {.n = 4, .eps = 1e-6f}}, 1},
	{"hc_collapse vec4", "hc_streams", {.op = IR_OP_HC_COLLAPSE, .t_max = 8, .u.hc = {.n = 4, .H = 7168}}, 1},
	{"hc_collapse scalar", "hc_streams", {.op = IR_OP_HC_COLLAPSE, .t_max = 8, .u.hc = {.n = 3, .H = 37}}, 1},
	{"hc_expand vec4", "hc_streams", {.op = IR_OP_HC_EXPAND, .t_max = 8, .u.hc = {.n = 4, .H = 7168}}, 1},
	{"hc_expand scalar", "hc_streams", {.op = IR_OP_HC_EXPAND, .t_max = 64, .u.hc = {.n = 5, .H = 130}}, 1},
	{"hc_inject vec4", "hc_streams", {.op = IR_OP_HC_INJECT, .t_max = 8, .u.hc = {.n = 4, .H = 2560}}, 1},
	{"hc_inject scalar", "hc_streams", {.op = IR_OP_HC_INJECT, .t_max = 64, .u.hc = {.n = 3, .H = 37}}, 1},
	{"hc_inject_norm", "rms_norm",
	 {.op = IR_OP_HC_INJECT_NORM, .t_max = 8,
	  .u.rms_norm = {.rows_per_t = 1, .D = 4 * 2560, .group = 2560, .eps = 1e-6f, .offset = 1, .inject = true}},
	 1},
	{"qsa_select", "qsa_select",
	 {.op = IR_OP_QSA_SELECT, .t_max = 8, .wtype = HALO_F32,
	  .u.qsa = {.h = 4, .D = 64, .C = 512, .block = 16, .top = 4, .rot_dim = 32, .base = 1e4f, .eps = 1e-6f}},
	 1},
	{"qsa_select_blocks", "qsa_select",
	 {.op = IR_OP_QSA_SELECT_BLOCKS, .t_max = 8, .wtype = HALO_F32,
	  .u.qsa = {.h = 4, .D = 128, .C = 8192, .block = 4, .top = 512, .rot_dim = 64, .sync_rows = 8, .base = 1e7f,
		    .eps = 1e-6f}},
	 1},
	{"compress_kv overlap", "compress_kv",
	 {.op = IR_OP_COMPRESS_KV, .t_max = 64, .u.compress = {.N = 4096, .D = 512, .ratio = 4, .overlap = true}}, 1},
	{"compress_kv", "compress_kv",
	 {.op = IR_OP_COMPRESS_KV, .t_max = 8, .u.compress = {.N = 4096, .D = 512, .ratio = 128}}, 1},
	{"index_topk V4-Flash", "index_topk",
	 {.op = IR_OP_INDEX_TOPK, .t_max = 8, .u.index = {.h = 64, .d = 128, .E = 8192, .k = 512, .ratio = 4, .scale = 0.088f}},
	 1},
	{"index_topk tiny", "index_topk",
	 {.op = IR_OP_INDEX_TOPK, .t_max = 64, .u.index = {.h = 2, .d = 16, .E = 64, .k = 2, .ratio = 4, .scale = 0.25f}}, 1},
	{"sink_attention window", "sink_attention",
	 {.op = IR_OP_SINK_ATTENTION, .t_max = 8, .u.sink = {.h = 64, .D = 512, .N = 4096, .window = 128, .scale = 0.044f}},
	 1},
	{"sink_attention entries", "sink_attention",
	 {.op = IR_OP_SINK_ATTENTION, .t_max = 64,
	  .u.sink = {.h = 64, .D = 512, .N = 4096, .E = 32, .window = 128, .ratio = 128, .scale = 0.044f}},
	 1},
	{"sink_attention ids", "sink_attention",
	 {.op = IR_OP_SINK_ATTENTION, .t_max = 8,
	  .u.sink = {.h = 64, .D = 512, .N = 4096, .E = 1024, .k = 512, .window = 128, .ratio = 4, .scale = 0.044f}},
	 1},
	/* the split for long contexts (passes/split_attention.c) */
	{"sink_attention_partial ids", "sink_attention",
	 {.op = IR_OP_SINK_ATTENTION_PARTIAL, .t_max = 8,
	  .u.sink = {.h = 64, .D = 512, .N = 639, .E = 8192, .k = 512, .window = 128, .ratio = 4, .block = 64,
		     .blocks = 10, .scale = 0.044f}},
	 1},
	{"sink_attention_partial entries", "sink_attention",
	 {.op = IR_OP_SINK_ATTENTION_PARTIAL, .t_max = 64,
	  .u.sink = {.h = 64, .D = 512, .N = 639, .E = 256, .window = 128, .ratio = 128, .block = 64, .blocks = 6,
		     .scale = 0.044f}},
	 1},
	{"index_score V4-Flash", "index_topk",
	 {.op = IR_OP_INDEX_SCORE, .t_max = 8,
	  .u.index = {.h = 64, .d = 128, .E = 8192, .ratio = 4, .block = 128, .scale = 0.088f}},
	 1},
	{"index_select V4-Flash", "index_topk",
	 {.op = IR_OP_INDEX_SELECT, .t_max = 8, .u.index = {.E = 8192, .k = 512, .ratio = 4}}, 1},
};
#undef ATT

/* d (its first variant) compiled for arch: its object (gfx1151) or PTX
 * (sm_90), NULL after a failed check. *n its size; sig receives the
 * kernel's signature. */
static uint8_t *kernel_code(kv_desc d, cg_gpu_arch arch, size_t *n, char *sig, size_t siglen)
{
	kv_kernel k;
	char err[2048];
	uint8_t *o = NULL;
	bool ok = kernel_variant_build(&d, &k, err, sizeof err);
	CHECK(ok && k.hip, "%s", ok ? "no HIP source" : err);
	if (!ok)
		return NULL;
	snprintf(sig, siglen, "%s", k.signature);
	if (k.hip) {
		ok = cg_hip_compile(arch, k.hip, k.signature, NULL, &o, n, err, sizeof err);
		CHECK(ok, "%s", err);
	}
	kv_kernel_free(&k);
	return o;
}

/* How many times the gfx1151 object's disassembly (llvm-objdump-19) has
 * insn; -1 where llvm-objdump-19 is not installed. A disassembly that
 * cannot be made (the object not written, llvm-objdump failing) is a
 * failed check, and counts 0. */
static int gfx1151_count(const uint8_t *o, size_t n, const char *insn)
{
	if (system("llvm-objdump-19 --version >/dev/null 2>&1") != 0)
		return -1;
	char path[] = "/tmp/halo-gfx1151-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "cannot write %s", path);
	if (fd < 0)
		return 0;
	bool ok = write(fd, o, n) == (ssize_t)n;
	close(fd);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "llvm-objdump-19 -d --mcpu=gfx1151 %s", path);
	FILE *p = ok ? popen(cmd, "r") : NULL;
	char line[512];
	int found = 0;
	while (p && fgets(line, sizeof line, p))
		found += strstr(line, insn) != NULL;
	ok = p && pclose(p) == 0;
	CHECK(ok, "%s: writing or disassembling the gfx1151 object failed", path);
	unlink(path);
	return ok ? found : 0;
}

/* d's kernel uses the instruction it exists for: at least min_amd of
 * amd_insn in the gfx1151 disassembly (not checked without
 * llvm-objdump-19) and min_ptx of ptx_insn in the sm_90 PTX. */
static void check_insns(kv_desc d, const char *amd_insn, int min_amd, const char *ptx_insn, int min_ptx)
{
	char sig[512];
	size_t n = 0;
	uint8_t *o = kernel_code(d, CG_ARCH_GFX1151, &n, sig, sizeof sig);
	int found = o ? gfx1151_count(o, n, amd_insn) : 0;
	if (found < 0)
		printf("skip: llvm-objdump-19 is not installed (no %s check)\n", amd_insn);
	else
		CHECK(!o || found >= min_amd, "%s: the gfx1151 disassembly has %d %s", sig, found, amd_insn);
	free(o);
	o = kernel_code(d, CG_ARCH_SM90, &n, sig, sizeof sig);
	found = 0;
	for (const char *p = (const char *)o; p && (p = strstr(p, ptx_insn)); p++)
		found++;
	CHECK(!o || found >= min_ptx, "%s: the sm_90 PTX has %d %s", sig, found, ptx_insn);
	free(o);
}

/* matmul_coopmat (f16 weights, 256 x 256 x 512) multiplies its tiles on the
 * matrix units: v_wmma_f32_16x16x16_f16 on gfx1151, and on sm_90's tensor
 * cores mma.sync.aligned.m16n8k16 (two a 16x16x16 product). The int8
 * activations' matvec (q8_0 and q4_k) sums four products in one
 * instruction: v_dot4_i32_iu8, dp4a. */
static void check_matrix_and_dot_insns(void)
{
	kv_desc cm = matmul_desc(256, 256, 512, HALO_F16);
	cm.tiles = (kv_tiles){.coopmat = 1};
	check_insns(cm, "v_wmma_f32_16x16x16_f16", 1, "mma.sync.aligned.m16n8k16", 2);
	halo_dtype xq[] = {HALO_Q8_0, HALO_Q4_K};
	for (int i = 0; i < 2; i++) {
		kv_desc d = matmul_desc(2304, 64, 8, xq[i]);
		d.u.matmul.xq = 8;
		check_insns(d, "v_dot4_i32_iu8", 1, "dp4a.s32.s32", 1);
	}
}

int main(void)
{
	if (system("clang-19 --version >/dev/null 2>&1") != 0) {
		printf("SKIP: clang-19 is not installed\n");
		return 77;
	}
	kv_desc rms = {.op = IR_OP_RMS_NORM, .t_max = 8, .n_epi = 1};
	rms.u.rms_norm.rows_per_t = 2;
	rms.u.rms_norm.D = 256;
	rms.u.rms_norm.group = 128;
	rms.u.rms_norm.eps = 1e-6f;
	rms.u.rms_norm.offset = 1;
	rms.epi[0] = (kv_elem_op){.op = IR_OP_MUL, .bcast = KV_BCAST_TRAILING, .bcast_n = 256};
	check_desc("rms_norm", rms, 8);
	rms.u.rms_norm.offset = 0;
	rms.u.rms_norm.unweighted = true;
	check_desc("rms_norm unweighted", rms, 8);

	kv_desc ew = {.op = IR_OP_SWIGLU, .t_max = 64, .n_epi = 2};
	ew.u.elementwise.numel = (ir_dim){.coef_T = 512, .c = 0};
	ew.u.elementwise.main = (kv_elem_op){.op = IR_OP_SWIGLU};
	ew.epi[0] = (kv_elem_op){.op = IR_OP_SCALE, .value = 0.125f};
	ew.epi[1] = (kv_elem_op){.op = IR_OP_SOFTPLUS};
	check_desc("swiglu", ew, 8);
	ew.op = IR_OP_CLAMP_MAX;
	ew.u.elementwise.main = (kv_elem_op){.op = IR_OP_CLAMP_MAX, .value = 10.0f};
	ew.epi[0] = (kv_elem_op){.op = IR_OP_CLAMP_ABS, .value = 7.5f};
	check_desc("clamp_max, clamp_abs", ew, 8);

	check_matmuls();
	for (size_t i = 0; i < sizeof other_cases / sizeof *other_cases; i++)
		check_desc_of(other_cases[i].what, other_cases[i].d, other_cases[i].max, other_cases[i].tmpl);
	check_matrix_and_dot_insns();
	if (check_failures)
		return 1;
	printf("hip codegen: ok\n");
	return 0;
}
