/* Instantiation of the GDN-hybrid kernels without a device: workgroup counts
 * follow T as each template's grid says, signatures name what differs, the
 * recurrent ops' steps output (one more binding, the plain kernel's grid,
 * the recurrent gated_delta_rule at any t_max), and invalid descriptors are
 * refused with a message saying what is wrong. The
 * Vulkan tests (test_conv1d, test_delta_rule, test_routing, test_moe, and
 * the op suite tests/ops for l2_norm and gated_rms_norm) compile and run
 * every template. */
#include <stdio.h>
#include <string.h>

#include "codegen/kernel_variant.h"

static int failures;

static void expect(const char *what, bool cond)
{
	if (!cond) {
		printf("FAIL %s\n", what);
		failures++;
	}
}

static void expect_error(const char *what, const kv_desc *d, const char *needle)
{
	kv_kernel k;
	char err[512] = "";
	bool ok = kernel_variant_build(d, &k, err, sizeof err);
	if (ok)
		kv_kernel_free(&k);
	expect(what, !ok && strstr(err, needle));
	if (!ok)
		printf("refused as expected: %s\n", err);
}

/* Builds d, checks the template and the workgroup counts at T = 1 and T = 37. */
static void expect_grid(const kv_desc *d, const char *tmpl, const uint32_t g1[3],
			const uint32_t g37[3])
{
	kv_kernel k;
	char err[512];
	if (!kernel_variant_build(d, &k, err, sizeof err)) {
		printf("FAIL %s: %s\n", tmpl, err);
		failures++;
		return;
	}
	expect(tmpl, strcmp(k.template_name, tmpl) == 0);
	for (int a = 0; a < 3; a++) {
		expect("groups at T=1", kv_groups_eval(&k, a, 1) == g1[a]);
		expect("groups at T=37", kv_groups_eval(&k, a, 37) == g37[a]);
	}
	printf("ok   %s\n", k.signature);
	kv_kernel_free(&k);
}

static kv_desc gdr_desc(int64_t hk, int64_t hv)
{
	kv_desc d = {.op = IR_OP_GATED_DELTA_RULE, .t_max = 8};
	d.u.gdr.hk = hk;
	d.u.gdr.hv = hv;
	d.u.gdr.dk = 16;
	d.u.gdr.dv = 130;
	d.u.gdr.scale = 0.25f;
	return d;
}

static kv_desc conv_desc(int64_t K)
{
	kv_desc d = {.op = IR_OP_CONV1D_CAUSAL, .t_max = 64, .wtype = HALO_F16};
	d.u.conv1d.C = 300;
	d.u.conv1d.K = K;
	d.u.conv1d.silu = true;
	return d;
}

static kv_desc topk_desc(ir_op op, int64_t N, int64_t k)
{
	kv_desc d = {.op = op, .t_max = 64};
	d.u.topk.N = N;
	d.u.topk.k = k;
	return d;
}

static kv_desc moe_desc(int64_t H, int64_t F)
{
	kv_desc d = {.op = IR_OP_MOE_GATE_UP, .t_max = 64, .wtype = HALO_F32};
	d.u.moe.H = H;
	d.u.moe.F = F;
	d.u.moe.E = 8;
	d.u.moe.k = 2;
	return d;
}

static void test_grids(void)
{
	kv_desc n = {.op = IR_OP_GATED_RMS_NORM, .t_max = 64};
	n.u.norm.rows_per_t = 3;
	n.u.norm.D = 64;
	n.u.norm.eps = 1e-6f;
	expect_grid(&n, "gated_rms_norm.comp", (uint32_t[]){3, 1, 1}, (uint32_t[]){3, 37, 1});
	kv_desc c = conv_desc(4);
	expect_grid(&c, "conv1d_causal.comp", (uint32_t[]){2, 4, 1}, (uint32_t[]){2, 40, 1});
	kv_desc g = gdr_desc(2, 4);
	expect_grid(&g, "gated_delta_rule.comp", (uint32_t[]){3, 4, 1}, (uint32_t[]){3, 4, 1});
	kv_desc gc = gdr_desc(2, 4); /* prefill: the chunked kernel, 16 value columns per workgroup */
	gc.t_max = 64;
	expect_grid(&gc, "gated_delta_rule_chunked.comp", (uint32_t[]){9, 4, 1}, (uint32_t[]){9, 4, 1});
	kv_desc r = topk_desc(IR_OP_MOE_ROUTE, 64, 8);
	r.u.topk.norm = true;
	expect_grid(&r, "topk.comp", (uint32_t[]){1, 1, 1}, (uint32_t[]){37, 1, 1});
	kv_desc m = moe_desc(64, 32);
	/* k*F = 64 activation rows per token; H = 64 is whole 16-byte chunks,
	 * so a row is 16 lanes' and the default 128 lanes take 8 rows */
	expect_grid(&m, "moe_gate_up.comp", (uint32_t[]){8, 1, 1}, (uint32_t[]){8, 37, 1});
	m.op = IR_OP_MOE_DOWN; /* H = 64 outputs, 4 per workgroup, per token */
	expect_grid(&m, "moe_down.comp", (uint32_t[]){16, 1, 1}, (uint32_t[]){16, 37, 1});
}

static void test_signatures(void)
{
	kv_desc a = topk_desc(IR_OP_MOE_ROUTE, 64, 8), b = a;
	b.u.topk.norm = true;
	kv_kernel ka, kb;
	char err[512];
	if (!kernel_variant_build(&a, &ka, err, sizeof err) ||
	    !kernel_variant_build(&b, &kb, err, sizeof err)) {
		printf("FAIL moe_route: %s\n", err);
		failures++;
		return;
	}
	expect("norm_topk changes the signature", strcmp(ka.signature, kb.signature) != 0);
	kv_kernel_free(&ka);
	kv_kernel_free(&kb);
}

/* d with and without steps: the steps kernel binds one more buffer, has its
 * own signature and the same template and grid. */
static void expect_steps(kv_desc d)
{
	kv_kernel plain, steps;
	char err[512];
	d.steps = false;
	if (!kernel_variant_build(&d, &plain, err, sizeof err)) {
		printf("FAIL %s\n", err);
		failures++;
		return;
	}
	d.steps = true;
	if (!kernel_variant_build(&d, &steps, err, sizeof err)) {
		printf("FAIL %s\n", err);
		failures++;
		kv_kernel_free(&plain);
		return;
	}
	expect("steps binds one more buffer", steps.n_bindings == plain.n_bindings + 1);
	expect("steps changes the signature", strcmp(steps.signature, plain.signature) != 0);
	expect("steps keeps the template", strcmp(steps.template_name, plain.template_name) == 0);
	for (int a = 0; a < 3; a++)
		expect("steps keeps the grid", kv_groups_eval(&steps, a, 1) == kv_groups_eval(&plain, a, 1) &&
						       kv_groups_eval(&steps, a, 37) == kv_groups_eval(&plain, a, 37));
	printf("ok   %s\n", steps.signature);
	kv_kernel_free(&plain);
	kv_kernel_free(&steps);
}

static void test_steps(void)
{
	expect_steps(conv_desc(4));
	kv_desc dc = {.op = IR_OP_CONV1D_DILATED, .t_max = 16, .wtype = HALO_F32};
	dc.u.conv_dilated.C = 33;
	dc.u.conv_dilated.K = 4;
	dc.u.conv_dilated.dilation = 3;
	expect_steps(dc);
	expect_steps(gdr_desc(2, 4));
	kv_desc ng = {.op = IR_OP_NGRAM_EMBED, .t_max = 16, .wtype = HALO_F32};
	ng.u.ngram.ngram = 3;
	ng.u.ngram.hpn = 2;
	ng.u.ngram.eos = 1;
	ng.u.ngram.vocab = 100;
	ng.u.ngram.rows = 64;
	ng.u.ngram.dp = 4;
	for (int j = 0; j < 4; j++)
		ng.u.ngram.size[j] = 13;
	for (int j = 0; j < 3; j++)
		ng.u.ngram.mult[j] = 2 * (uint64_t)j + 1;
	expect_steps(ng);
	/* a verify step longer than decode's kernels: still the recurrent kernel */
	kv_desc g = gdr_desc(2, 4);
	g.t_max = 64;
	g.steps = true;
	expect_grid(&g, "gated_delta_rule.comp", (uint32_t[]){3, 4, 1}, (uint32_t[]){3, 4, 1});
}

static void test_refusals(void)
{
	kv_desc g = gdr_desc(3, 4);
	expect_error("hv not a multiple of hk", &g, "not a multiple of 3 key heads");
	g = gdr_desc(2, 4);
	g.u.gdr.dk = 8192;
	expect_error("dk past shared memory", &g, "shared memory");
	g = gdr_desc(2, 4);
	g.u.gdr.dv = 0;
	expect_error("dv = 0", &g, "dv = 0");
	kv_desc c = conv_desc(1);
	expect_error("conv K = 1", &c, "must be at least 2");
	c = conv_desc(4);
	c.wtype = HALO_BF16;
	expect_error("conv bf16 weights", &c, "expected f32 or f16");
	kv_desc t = topk_desc(IR_OP_TOPK, 4, 5);
	expect_error("k > N", &t, "must be at most N = 4");
	t = topk_desc(IR_OP_TOPK, 1000, 300);
	expect_error("k past registers", &t, "at most 256");
	t = topk_desc(IR_OP_TOPK, 64, 8);
	t.u.topk.norm = true;
	expect_error("norm on topk", &t, "moe_route only");
	t.n_epi = 1;
	t.u.topk.norm = false;
	t.epi[0] = (kv_elem_op){.op = IR_OP_SILU};
	expect_error("epilogue on topk", &t, "no fused epilogue");
	kv_desc m = moe_desc(64, 32);
	m.u.moe.k = 9;
	expect_error("moe k > E", &m, "more than E = 8");
	m = moe_desc(64, 32);
	m.u.moe.E = (int64_t)1 << 22;
	expect_error("moe experts past 32-bit indices", &m, "E*F*H");
	kv_desc n = {.op = IR_OP_L2_NORM, .t_max = 4};
	n.u.norm.rows_per_t = 1;
	n.u.norm.D = 8;
	n.u.norm.eps = -1.0f;
	expect_error("negative eps", &n, "non-negative");
	t = topk_desc(IR_OP_TOPK, 64, 8);
	t.steps = true;
	expect_error("steps on an op without state", &t, "no states after each token");
	g = gdr_desc(2, 4);
	g.t_max = 600000; /* 600000 tokens of 4*16*130 state elements */
	g.steps = true;
	expect_error("steps past 32-bit indices", &g, "T*state (steps)");
}

int main(void)
{
	test_grids();
	test_signatures();
	test_steps();
	test_refusals();
	if (failures)
		printf("FAIL: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
