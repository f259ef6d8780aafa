/* Kernel selection (codegen/select_kernels.c) for DeepSeek V4's forms of
 * existing ops, without a device: an unweighted rms_norm, a router with a
 * scoring, a bias and a scaling, moe_gate_up with a limit get kernels whose
 * keys name what they add and whose bindings leave out an absent operand;
 * the softmax router and the weighted norm keep their keys; a grouped matmul
 * gets the matvec with its groups in the key and x's K read from the
 * weight; hash routing gets topk.comp's HASH form, its table's dtype and
 * rows in the key; the mHC ops get their kernels (hc_weights in both forms,
 * binding only the results it has); a limit on moe_down is refused with a
 * message naming the dispatch; compress_kv, index_topk and sink_attention
 * (window only, with entries, with ids) get kernels binding exactly the
 * operands they are given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/kernel_variant.h"
#include "codegen/select_kernels.h"
#include "ir/ir.h"

static int failures;

static void expect(const char *what, bool cond)
{
	printf("%s %s\n", cond ? "ok  " : "FAIL", what);
	failures += !cond;
}

static const halo_affine T = {1, 0};

static halo_tensor_ref ref(halo_space sp, halo_dtype t, int rank, const int64_t *dims)
{
	halo_tensor_ref r = {.space = sp, .dtype = t, .rank = rank};
	r.dim[0] = T;
	for (int i = 1; i < rank; i++)
		r.dim[i] = (halo_affine){0, dims[i - 1]};
	return r;
}

#define ACT(t, ...) ref(HALO_SPACE_ACT, t, 1 + (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__})

static halo_tensor_ref weight(int rank, const int64_t *dims)
{
	halo_tensor_ref r = {.space = HALO_SPACE_WEIGHT, .dtype = HALO_F32, .rank = rank};
	for (int i = 0; i < rank; i++)
		r.dim[i] = (halo_affine){0, dims[i]};
	return r;
}

#define WEIGHT(...) weight((int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__})

static void set_attr(halo_dispatch *d, const char *name, bool is_float, double v, const char *s)
{
	halo_attr *a = &d->attr[d->n_attr++];
	*a = (halo_attr){.is_float = is_float, .i = (int64_t)v, .f = v, .is_str = s != NULL};
	snprintf(a->name, sizeof a->name, "%s", name);
	if (s)
		snprintf(a->s, sizeof a->s, "%s", s);
}

typedef struct {
	bool ok;
	char err[512], key[256];
	uint32_t n_bindings;
} selection;

/* Selection for one entry of 8 tokens with dispatch d: the first kernel's
 * key and binding count, or the error. */
static selection select_one(halo_dispatch d)
{
	selection s = {0};
	halo_entry e = {.name = "step", .t_min = 1, .t_max = 8, .n_dispatch = 1, .dispatch = &d};
	halo_manifest m = {.model = "ds", .has_kernels = true, .has_target = {[HALO_TARGET_VULKAN] = true},
			   .n_entries = 1, .entries = &e};
	cg_kernel_sections code;
	s.ok = cg_select_kernels(&m, m.has_target, false, &code, s.err, sizeof s.err);
	if (s.ok && m.n_kernels > 0) {
		snprintf(s.key, sizeof s.key, "%s", m.kernels[0].key);
		s.n_bindings = m.kernels[0].n_bindings;
	}
	for (int i = 0; i < m.n_kernels; i++) {
		free(m.kernels[i].name), free(m.kernels[i].signature), free(m.kernels[i].key);
		free(m.kernels[i].tile);
	}
	for (int i = 0; i < m.n_choices; i++)
		free(m.choices[i].key);
	free(m.kernels), free(m.choices);
	cg_kernel_sections_free(&code);
	return s;
}

static void expect_key(const char *what, selection s, const char *key, uint32_t bindings)
{
	char line[1024];
	snprintf(line, sizeof line, "%s: %s (%u bindings)", what, s.ok ? s.key : s.err, s.n_bindings);
	expect(line, s.ok && !strcmp(s.key, key) && s.n_bindings == bindings);
}

static void test_norms(void)
{
	halo_dispatch n = {.node = "hc_norm", .op = IR_OP_RMS_NORM, .n_in = 1, .n_out = 1};
	n.operand[0] = ACT(HALO_F32, 64);
	n.operand[1] = ACT(HALO_F32, 64);
	set_attr(&n, "eps", true, 1e-6, NULL);
	expect_key("unweighted rms_norm: x, y, step", select_one(n),
		   "rms_norm R=1 D=64 G=64 eps=9.99999997e-07 off=0 unweighted tmax=8", 3);
	n.n_in = 2;
	n.operand[1] = WEIGHT(64);
	n.operand[2] = ACT(HALO_F32, 64);
	expect_key("weighted rms_norm: its key as before", select_one(n),
		   "rms_norm R=1 D=64 G=64 eps=9.99999997e-07 off=0 tmax=8", 4);
}

static void test_routers(void)
{
	halo_dispatch r = {.node = "router", .op = IR_OP_MOE_ROUTE, .n_in = 1, .n_out = 2};
	r.operand[0] = ACT(HALO_F32, 64);
	r.operand[1] = ACT(HALO_I32, 6);
	r.operand[2] = ACT(HALO_F32, 6);
	set_attr(&r, "k", false, 6, NULL);
	set_attr(&r, "norm_topk", false, 1, NULL);
	expect_key("softmax router: its key as before", select_one(r), "moe_route E=64 k=6 norm=1 tmax=8", 4);
	halo_dispatch b = r;
	set_attr(&b, "scoring", false, 0, "sqrtsoftplus");
	set_attr(&b, "scaling", true, 1.5, NULL);
	b.n_in = 2;
	b.operand[1] = WEIGHT(64);
	b.operand[2] = ACT(HALO_I32, 6);
	b.operand[3] = ACT(HALO_F32, 6);
	expect_key("DeepSeek V4 router: logits, bias, ids, w, step", select_one(b),
		   "moe_route E=64 k=6 norm=1 scoring=sqrtsoftplus bias scaling=1.5 tmax=8", 5);
	set_attr(&r, "scoring", false, 0, "sigmoid");
	expect_key("sigmoid router without a bias", select_one(r), "moe_route E=64 k=6 norm=1 scoring=sigmoid tmax=8",
		   4);
	halo_dispatch hr = {.node = "hash_router", .op = IR_OP_MOE_ROUTE_HASH, .n_in = 3, .n_out = 2};
	hr.operand[0] = ACT(HALO_F32, 64);
	hr.operand[1] = WEIGHT(1000, 6);
	hr.operand[1].dtype = HALO_F16;
	hr.operand[2] = ref(HALO_SPACE_ACT, HALO_I32, 1, NULL);
	hr.operand[3] = ACT(HALO_I32, 6);
	hr.operand[4] = ACT(HALO_F32, 6);
	set_attr(&hr, "scoring", false, 0, "sqrtsoftplus");
	set_attr(&hr, "scaling", true, 1.5, NULL);
	expect_key("hash router: logits, table, tokens, ids, w, step", select_one(hr),
		   "moe_route_hash E=64 k=6 norm=1 scoring=sqrtsoftplus scaling=1.5 V=1000 w=f16 tmax=8", 6);
}

static void test_experts(void)
{
	halo_dispatch g = {.node = "experts.gate_up", .op = IR_OP_MOE_GATE_UP, .n_in = 4, .n_out = 1};
	g.operand[0] = ACT(HALO_F32, 32);
	g.operand[1] = ACT(HALO_I32, 2);
	g.operand[2] = WEIGHT(4, 16, 32);
	g.operand[3] = WEIGHT(4, 16, 32);
	g.operand[4] = ACT(HALO_F32, 2, 16);
	set_attr(&g, "limit", true, 7.0, NULL);
	expect_key("moe_gate_up with a limit", select_one(g), "moe_gate_up H=32 F=16 E=4 k=2 limit=7 w=f32 tmax=8", 6);
	halo_dispatch d = {.node = "experts", .op = IR_OP_MOE_DOWN, .n_in = 4, .n_out = 1};
	d.operand[0] = ACT(HALO_F32, 2, 16);
	d.operand[1] = ACT(HALO_I32, 2);
	d.operand[2] = ACT(HALO_F32, 2);
	d.operand[3] = WEIGHT(4, 32, 16);
	d.operand[4] = ACT(HALO_F32, 32);
	set_attr(&d, "limit", true, 7.0, NULL);
	selection s = select_one(d);
	expect(s.ok ? "a limit on moe_down accepted" : s.err,
	       !s.ok && strstr(s.err, "moe_down") && strstr(s.err, "limit 7"));
}

static void test_grouped_matmul(void)
{
	halo_dispatch mm = {.node = "o_a_proj", .op = IR_OP_MATMUL, .n_in = 2, .n_out = 1};
	mm.operand[0] = ACT(HALO_F32, 128);
	mm.operand[1] = WEIGHT(64, 32);
	mm.operand[2] = ACT(HALO_F32, 64);
	set_attr(&mm, "groups", false, 4, NULL);
	expect_key("grouped matmul: x [T, 4*32], w [64, 32], y, step", select_one(mm),
		   "matvec K=32 N=64 groups=4 w=f32 tmax=8", 4);
}

static void test_hc(void)
{
	halo_dispatch w = {.node = "hc_attn", .op = IR_OP_HC_WEIGHTS, .n_in = 3, .n_out = 3};
	w.operand[0] = ACT(HALO_F32, 24);
	w.operand[1] = WEIGHT(24);
	w.operand[2] = WEIGHT(3);
	w.operand[3] = ACT(HALO_F32, 4);
	w.operand[4] = ACT(HALO_F32, 4);
	w.operand[5] = ACT(HALO_F32, 4, 4);
	set_attr(&w, "iters", false, 20, NULL);
	set_attr(&w, "eps", true, 1e-6, NULL);
	expect_key("hc_weights: mix, base, scale, pre, post, comb, step", select_one(w),
		   "hc_weights n=4 eps=9.99999997e-07 iters=20 tmax=8", 7);
	halo_dispatch p = {.node = "hc_head", .op = IR_OP_HC_WEIGHTS, .n_in = 3, .n_out = 1};
	p.operand[0] = ACT(HALO_F32, 4);
	p.operand[1] = WEIGHT(4);
	p.operand[2] = WEIGHT(1);
	p.operand[3] = ACT(HALO_F32, 4);
	set_attr(&p, "eps", true, 1e-6, NULL);
	expect_key("the HyperHead's hc_weights: mix, base, scale, pre, step", select_one(p),
		   "hc_weights n=4 eps=9.99999997e-07 pre tmax=8", 5);
	halo_dispatch c = {.node = "collapse", .op = IR_OP_HC_COLLAPSE, .n_in = 2, .n_out = 1};
	c.operand[0] = ACT(HALO_F32, 4, 64);
	c.operand[1] = ACT(HALO_F32, 4);
	c.operand[2] = ACT(HALO_F32, 64);
	expect_key("hc_collapse: x, pre, y, step", select_one(c), "hc_collapse n=4 H=64 tmax=8", 4);
	halo_dispatch e = {.node = "expand", .op = IR_OP_HC_EXPAND, .n_in = 4, .n_out = 1};
	e.operand[0] = ACT(HALO_F32, 4, 64);
	e.operand[1] = ACT(HALO_F32, 64);
	e.operand[2] = ACT(HALO_F32, 4);
	e.operand[3] = ACT(HALO_F32, 4, 4);
	e.operand[4] = ACT(HALO_F32, 4, 64);
	expect_key("hc_expand: x, y, post, comb, out, step", select_one(e), "hc_expand n=4 H=64 tmax=8", 6);
}

/* A state's rows (the caches these ops read whole): constant dims. */
static halo_tensor_ref state(halo_dtype t, int rank, const int64_t *dims)
{
	halo_tensor_ref r = weight(rank, dims);
	r.space = HALO_SPACE_STATE;
	r.dtype = t;
	return r;
}

#define STATE(...) state(HALO_F32, (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__})

/* compress_kv, index_topk and sink_attention in each of its three forms:
 * keys naming their dims, and bindings for exactly the operands given. */
static void test_compressed_attention(void)
{
	halo_dispatch c = {.node = "attn.compress", .op = IR_OP_COMPRESS_KV, .n_in = 3, .n_out = 1};
	c.operand[0] = STATE(256, 64);
	c.operand[1] = STATE(256, 64);
	c.operand[2] = WEIGHT(4, 64);
	c.operand[3] = ACT(HALO_F32, 32);
	set_attr(&c, "ratio", false, 4, NULL);
	set_attr(&c, "overlap", false, 1, NULL);
	expect_key("compress_kv: c, z, bias, y, step", select_one(c), "compress_kv N=256 D=32 ratio=4 overlap=1 tmax=8",
		   5);
	halo_dispatch x = {.node = "attn.indexer", .op = IR_OP_INDEX_TOPK, .n_in = 3, .n_out = 1};
	x.operand[0] = ACT(HALO_F32, 2, 16);
	x.operand[1] = ACT(HALO_F32, 2);
	x.operand[2] = STATE(64, 16);
	x.operand[3] = ACT(HALO_I32, 2);
	set_attr(&x, "k", false, 2, NULL);
	set_attr(&x, "ratio", false, 4, NULL);
	set_attr(&x, "scale", true, 0.25, NULL);
	expect_key("index_topk: q, w, keys, ids, step", select_one(x),
		   "index_topk h=2 d=16 E=64 k=2 ratio=4 scale=0.25 tmax=8", 5);
	halo_dispatch a = {.node = "attn.core", .op = IR_OP_SINK_ATTENTION, .n_in = 3, .n_out = 1};
	a.operand[0] = ACT(HALO_F32, 4, 32);
	a.operand[1] = STATE(256, 32);
	a.operand[2] = WEIGHT(4);
	a.operand[3] = ACT(HALO_F32, 4, 32);
	set_attr(&a, "scale", true, 0.25, NULL);
	set_attr(&a, "window", false, 8, NULL);
	expect_key("sink_attention, window only: q, kv, sinks, y, step", select_one(a),
		   "sink_attention h=4 D=32 N=256 window=8 scale=0.25 tmax=8", 5);
	halo_dispatch e = a;
	e.n_in = 4;
	e.operand[3] = STATE(16, 32);
	e.operand[4] = ACT(HALO_F32, 4, 32);
	set_attr(&e, "ratio", false, 16, NULL);
	expect_key("sink_attention with entries: + entries", select_one(e),
		   "sink_attention h=4 D=32 N=256 window=8 scale=0.25 entries=16 ratio=16 tmax=8", 6);
	e.n_in = 5;
	e.operand[4] = ACT(HALO_I32, 2);
	e.operand[5] = ACT(HALO_F32, 4, 32);
	expect_key("sink_attention with ids: + entries, ids", select_one(e),
		   "sink_attention h=4 D=32 N=256 window=8 scale=0.25 entries=16 ratio=16 ids=2 tmax=8", 7);
}

int main(void)
{
	test_norms();
	test_routers();
	test_experts();
	test_grouped_matmul();
	test_hc();
	test_compressed_attention();
	printf("%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
