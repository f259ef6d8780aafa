/* Kernel instantiation without a device: signatures are stable and name the
 * fusion, workgroup counts follow T, invalid descriptors are refused with a
 * message saying what is wrong, and every template compiles to valid SPIR-V
 * (a GLSL error is reported as such). */
#include <stdio.h>
#include <string.h>

#include "codegen/glsl_compile.h"
#include "codegen/kernel_variant.h"

static int failures;

static void expect(const char *what, bool cond)
{
	if (!cond) {
		printf("FAIL %s\n", what);
		failures++;
	}
}

static kv_desc attention_desc(int64_t hq, int64_t hk)
{
	kv_desc d = {.op = IR_OP_ATTENTION, .t_max = 4};
	d.u.attention.hq = hq;
	d.u.attention.hk = hk;
	d.u.attention.D = 8;
	d.u.attention.dv = 8;
	d.u.attention.C = 16;
	d.u.attention.scale = 1.0f;
	return d;
}

static kv_desc matmul_desc(int64_t t_max)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = t_max, .wtype = HALO_F16};
	d.u.matmul.K = 64;
	d.u.matmul.N = 100;
	return d;
}

/* Building d fails with a message containing `needle`. */
static void expect_error(const char *what, const kv_desc *d, const char *needle)
{
	kv_kernel k;
	char err[512] = "";
	bool built = kernel_variant_build(d, &k, err, sizeof err);
	if (built)
		kv_kernel_free(&k);
	expect(what, !built && strstr(err, needle));
	if (!built)
		printf("refused as expected: %s\n", err);
}

/* The matvec space: the heuristic first, every choice builds, no two alike,
 * one needs nothing, for a square layer, a narrow long one and a vocabulary head. */
static void test_matvec_space(void)
{
	const int64_t shapes[][2] = {{4096, 4096}, {10240, 4}, {2560, 248320}, {131, 37}};
	for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
		kv_desc d = matmul_desc(8);
		d.u.matmul.K = shapes[s][0];
		d.u.matmul.N = shapes[s][1];
		d.pro = (kv_prologue){.on = true, .eps = 1e-6f, .offset = 1};
		kv_tiles t[16];
		int n = kv_variant_space(&d, t, 16);
		char what[128], sigs[16][160], err[512];
		bool portable = false;
		snprintf(what, sizeof what, "matvec space K=%lld N=%lld: %d choices", (long long)shapes[s][0],
			 (long long)shapes[s][1], n);
		expect(what, n >= 2 && n <= 16);
		for (int i = 0; i < n; i++) {
			kv_kernel k;
			d.tiles = t[i];
			bool ok = kernel_variant_build(&d, &k, err, sizeof err);
			expect(ok ? "space choice builds" : err, ok);
			if (!ok)
				continue;
			snprintf(sigs[i], sizeof sigs[i], "%s", k.signature);
			for (int j = 0; j < i; j++)
				expect("space choices differ", strcmp(sigs[i], sigs[j]) != 0);
			portable |= k.needs == 0;
			if (i == 0) {
				kv_kernel h;
				d.tiles = (kv_tiles){0};
				expect("first choice is the heuristic", kernel_variant_build(&d, &h, err, sizeof err) &&
										!strcmp(h.signature, k.signature));
				kv_kernel_free(&h);
			}
			kv_kernel_free(&k);
		}
		expect("a choice that needs no device feature", portable);
	}
}

static void test_signatures(void)
{
	kv_desc d = matmul_desc(8);
	kv_kernel a, b;
	char err[512];
	expect("heuristic build", kernel_variant_build(&d, &a, err, sizeof err));
	expect("zero tiles take the heuristic's", !strcmp(a.tile, "ls128,sp16,nc1,u1,v8"));
	kv_kernel_free(&a);
	d.tiles.local = 64;
	d.tiles.cols = 2;
	expect("build a", kernel_variant_build(&d, &a, err, sizeof err));
	expect("build b", kernel_variant_build(&d, &b, err, sizeof err));
	expect("same descriptor, same signature and source",
	       !strcmp(a.signature, b.signature) && !strcmp(a.source, b.source));
	expect("signature names the kernel",
	       !strcmp(a.signature, "matvec K=64 N=100 w=f16 tmax=8 tile=ls64,sp16,nc2,u1,v8"));
	expect("key is the signature without the tile", !strcmp(a.key, "matvec K=64 N=100 w=f16 tmax=8") &&
							       !strcmp(a.tile, "ls64,sp16,nc2,u1,v8"));
	expect("matvec grid: ceil(N / (local / split * cols)), no T",
	       kv_groups_eval(&a, 0, 1) == 13 && kv_groups_eval(&a, 0, 8) == 13);
	expect("shuffle reduction needs subgroup shuffles", a.needs == HALO_NEED_SUBGROUP_SHUFFLE);
	expect("bindings x, w, y, step", a.n_bindings == 4 && a.push_size == 4);
	kv_kernel_free(&b);
	d.n_epi = 1;
	d.epi[0] = (kv_elem_op){.op = IR_OP_ADD, .bcast = KV_BCAST_FULL};
	d.pro = (kv_prologue){.on = true, .eps = 1e-6f, .offset = 1};
	expect("fused build", kernel_variant_build(&d, &b, err, sizeof err));
	expect("fusion changes the signature", strcmp(a.signature, b.signature) != 0 &&
						      strstr(b.signature, "pro=rms") &&
						      strstr(b.signature, "epi=add(side=0,full)"));
	expect("bindings x, w, norm, residual, y, step", b.n_bindings == 6);
	printf("%s\n%s\n", a.signature, b.signature);
	kv_kernel_free(&a);
	kv_kernel_free(&b);
	kv_desc t = matmul_desc(64);
	expect("tiled build", kernel_variant_build(&t, &a, err, sizeof err));
	expect("tiled grid: ceil(T / 32) rows of tiles", kv_groups_eval(&a, 1, 37) == 2 &&
								  kv_groups_eval(&a, 1, 9) == 1 &&
								  kv_groups_eval(&a, 0, 9) == 4);
	kv_kernel_free(&a);
}

static void test_errors(void)
{
	kv_desc d = matmul_desc(8);
	d.t_max = 0;
	expect_error("t_max 0", &d, "t_max 0");
	d = matmul_desc(8);
	d.wtype = HALO_BF16;
	expect_error("bf16 weights", &d, "weight dtype bf16");
	d = matmul_desc(8);
	d.u.matmul.K = 0;
	expect_error("K = 0", &d, "K = 0");
	d = matmul_desc(8);
	d.n_epi = 1;
	d.epi[0] = (kv_elem_op){.op = IR_OP_SUB, .operand = 1, .bcast = KV_BCAST_TRAILING, .bcast_n = 4};
	expect_error("side 1 with broadcast", &d, "must have its shape");
	d.epi[0] = (kv_elem_op){.op = IR_OP_SOFTMAX};
	expect_error("softmax in an epilogue", &d, "not an elementwise op");
	d = matmul_desc(8);
	d.tiles.cols = 16;
	expect_error("matvec cols", &d, "cols and unroll must be powers of two <= 8");
	d.tiles.cols = 1;
	d.tiles.local = 64;
	d.tiles.split = 128;
	expect_error("matvec split wider than the workgroup", &d, "4 <= split <= local");
	kv_desc r = {.op = IR_OP_RMS_NORM, .t_max = 4};
	r.u.rms_norm.rows_per_t = 1;
	r.u.rms_norm.D = 10;
	r.u.rms_norm.group = 3;
	expect_error("group does not divide D", &r, "group 3 does not divide D = 10");
	r.u.rms_norm.group = 0;
	r.pro.on = true;
	expect_error("prologue on rms_norm", &r, "no fused rms_norm prologue");
	kv_desc e = {.op = IR_OP_EMBED, .t_max = 4, .wtype = HALO_F32, .n_epi = 1};
	e.u.embed.V = 4;
	e.u.embed.H = 4;
	e.epi[0] = (kv_elem_op){.op = IR_OP_SILU};
	expect_error("epilogue on embed", &e, "no fused epilogue");
	kv_desc g = {.op = IR_OP_RESHAPE, .t_max = 4};
	expect_error("op without template", &g, "no kernel template for this op");
	kv_desc a = attention_desc(3, 2);
	expect_error("hq not a multiple of hk", &a, "not a multiple");
	kv_desc w = {.op = IR_OP_ADD, .t_max = 100000};
	w.u.elementwise.numel = (ir_dim){4096, 0};
	w.u.elementwise.main = (kv_elem_op){.op = IR_OP_ADD};
	expect_error("too many workgroups", &w, "workgroups along axis 0");
}

/* Every template, instantiated once, compiles and validates (optimised and not);
 * rope and copy_rows also with every option they take (DeepSeek V4's). */
static void test_compile_all(void)
{
	kv_desc ds[14];
	int n = 0;
	ds[n++] = matmul_desc(8);
	ds[n++] = matmul_desc(64);
	ds[n] = (kv_desc){.op = IR_OP_EMBED, .t_max = 4, .wtype = HALO_F16};
	ds[n].u.embed.V = 10, ds[n++].u.embed.H = 8;
	ds[n] = (kv_desc){.op = IR_OP_RMS_NORM, .t_max = 4};
	ds[n].u.rms_norm.rows_per_t = 2, ds[n].u.rms_norm.D = 8, ds[n++].u.rms_norm.eps = 1e-6f;
	ds[n] = (kv_desc){.op = IR_OP_ROPE, .t_max = 4};
	ds[n].u.rope.heads = 2, ds[n].u.rope.D = 8, ds[n++].u.rope.p = (ref_rope_params){.rot_dim = 4, .base = 1e4f};
	ds[n] = (kv_desc){.op = IR_OP_ROPE, .t_max = 4};
	ds[n].u.rope.heads = 2, ds[n].u.rope.D = 8;
	ds[n++].u.rope.p = (ref_rope_params){.rot_dim = 4, .base = 1.6e5f, .layout = REF_ROPE_INTERLEAVED_TAIL,
					     .inverse = true, .offset = -3, .yarn_factor = 4.0f, .yarn_orig_ctx = 64,
					     .yarn_beta_fast = 32.0f, .yarn_beta_slow = 1.0f};
	ds[n++] = attention_desc(4, 2);
	ds[n] = (kv_desc){.op = IR_OP_SOFTMAX, .t_max = 4};
	ds[n].u.softmax.rows_per_t = 1, ds[n++].u.softmax.D = 8;
	ds[n] = (kv_desc){.op = IR_OP_SILU, .t_max = 4};
	ds[n].u.elementwise.numel = (ir_dim){8, 0}, ds[n++].u.elementwise.main.op = IR_OP_SILU;
	ds[n] = (kv_desc){.op = IR_OP_ARGMAX, .t_max = 4};
	ds[n++].u.argmax.N = 8;
	ds[n] = (kv_desc){.op = IR_OP_SLICE, .t_max = 4};
	ds[n].u.copy.rows = (ir_dim){1, 0}, ds[n].u.copy.width = 4, ds[n].u.copy.src_stride = 8;
	ds[n++].u.copy.dst_stride = 4;
	ds[n] = (kv_desc){.op = IR_OP_STATE_WRITE, .t_max = 4};
	ds[n].u.copy.rows = (ir_dim){1, 0}, ds[n].u.copy.width = 4, ds[n].u.copy.src_stride = 4;
	ds[n].u.copy.dst_stride = 4, ds[n].u.copy.at_pos = true, ds[n++].u.copy.every = 4;
	ds[n] = (kv_desc){.op = IR_OP_CONCAT, .t_max = 4};
	ds[n].u.concat.rows = (ir_dim){1, 0}, ds[n].u.concat.wa = (ir_dim){0, 3};
	ds[n++].u.concat.wb = (ir_dim){0, 5};
	glsl_compiler *cc = glsl_compiler_new();
	expect("shaderc starts", cc != NULL);
	for (int i = 0; cc && i < n; i++) {
		kv_kernel k;
		char err[4096];
		if (!kernel_variant_build(&ds[i], &k, err, sizeof err)) {
			expect(err, false);
			continue;
		}
		for (int opt = 0; opt < 2; opt++) {
			glsl_spirv spv;
			bool ok = glsl_compile(cc, k.source, k.template_name, opt, &spv, err, sizeof err);
			if (!ok)
				printf("%s\n", err);
			expect(k.signature, ok && spv.n_words > 5 && spv.words[0] == 0x07230203);
			if (ok)
				glsl_spirv_free(&spv);
		}
		kv_kernel_free(&k);
	}
	if (cc) {
		glsl_spirv spv;
		char err[1024] = "";
		bool ok = glsl_compile(cc, "#version 450\nvoid main() { undefined_name = 1; }\n", "broken.comp",
				       true, &spv, err, sizeof err);
		expect("a GLSL error is reported", !ok && strstr(err, "broken.comp") &&
							   strstr(err, "undefined_name"));
		printf("refused as expected: %s", err);
	}
	glsl_compiler_free(cc);
}

int main(void)
{
	test_signatures();
	test_matvec_space();
	test_errors();
	test_compile_all();
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
