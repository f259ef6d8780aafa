/* The op table and shape rules on hand-built functions, and ir_func_compact. */
#include <stdio.h>
#include <string.h>

#include "ir/ops.h"
#include "tests/check.h"

static ir_module *m;
static ir_func *f;

static void fresh(void)
{
	ir_module_free(m);
	m = ir_module_new("x.yaml");
	m->funcs = ir_arena_alloc(&m->arena, sizeof(ir_func));
	m->n_funcs = 1;
	f = &m->funcs[0];
	f->name = "g";
}

/* A function input of the given shape ({coef_T, c} pairs). */
static int input(const char *name, halo_dtype t, int rank, const ir_dim *dims)
{
	int v = ir_func_add_value(m, f, name, -1, 0);
	f->values[v].shape.rank = rank;
	for (int i = 0; i < rank; i++)
		f->values[v].shape.dim[i] = dims[i];
	f->values[v].dtype = t;
	f->values[v].shape_known = true;
	return v;
}

#define T1 ((ir_dim){1, 0})
#define C(n) ((ir_dim){0, n})

static int node(ir_op op, const char *name, int n_in, const int *in, int n_out)
{
	int nid = ir_func_add_node(m, f, op, name, (ir_loc){"x.yaml", 12, 9});
	ir_node *n = &f->nodes[nid];
	n->in = ir_arena_alloc(&m->arena, sizeof(int) * 8);
	memcpy(n->in, in, sizeof(int) * (size_t)n_in);
	n->n_in = n_in;
	n->out = ir_arena_alloc(&m->arena, sizeof(int) * 8);
	n->n_out = n_out;
	for (int i = 0; i < n_out; i++)
		n->out[i] = ir_func_add_value(m, f, name, nid, i);
	return nid;
}

static void attr_f(int nid, const char *name, double v)
{
	ir_attr a = {.name = name, .kind = IR_ATTR_FLOAT, .f = v};
	ir_node_add_attr(m, f, nid, &a);
}

static void attr_i(int nid, const char *name, int64_t v)
{
	ir_attr a = {.name = name, .kind = IR_ATTR_INT, .i = v};
	ir_node_add_attr(m, f, nid, &a);
}

static bool infer(int nid, ir_shape *s, halo_dtype *t, ir_error *err)
{
	*err = (ir_error){0};
	return ir_op_infer(m, f, &f->nodes[nid], s, t, err);
}

static const char *str(const ir_shape *s)
{
	static char buf[128];
	return ir_shape_str(s, buf, sizeof(buf));
}

static void test_matmul(void)
{
	fresh();
	int x = input("x", HALO_F32, 2, (ir_dim[]){T1, C(64)}), w = input("w", HALO_F32, 2, (ir_dim[]){C(96), C(32)});
	int nid = node(IR_OP_MATMUL, "q", 2, (int[]){x, w}, 1);
	ir_shape s[2];
	halo_dtype t[2];
	ir_error err;
	CHECK(!infer(nid, s, t, &err), "mismatched matmul accepted");
	CHECK(strcmp(err.msg, "x.yaml:12:9: matmul 'q': inner dims differ: x is [T, 64], w is [96, 32]") == 0, "got %s",
	      err.msg);
	int w2 = input("w2", HALO_F32, 2, (ir_dim[]){C(96), C(64)});
	nid = node(IR_OP_MATMUL, "q2", 2, (int[]){x, w2}, 1);
	CHECK(infer(nid, s, t, &err) && strcmp(str(&s[0]), "[T, 96]") == 0, "matmul: %s %s", err.msg, str(&s[0]));
}

/* A recurrent op's optional steps result: [T, ...state], one more than the
 * table's count; a fourth result is refused. */
static void test_steps_result(void)
{
	fresh();
	int x = input("x", HALO_F32, 2, (ir_dim[]){T1, C(8)}), st = input("st", HALO_F32, 2, (ir_dim[]){C(3), C(8)});
	int w = input("w", HALO_F32, 2, (ir_dim[]){C(8), C(4)});
	int nid = node(IR_OP_CONV1D_CAUSAL, "c", 3, (int[]){x, st, w}, 3);
	ir_shape s[4];
	halo_dtype t[4];
	ir_error err;
	CHECK(infer(nid, s, t, &err) && strcmp(str(&s[2]), "[T, 3, 8]") == 0, "conv1d_causal steps: %s %s", err.msg,
	      str(&s[2]));
	nid = node(IR_OP_CONV1D_CAUSAL, "c4", 3, (int[]){x, st, w}, 4);
	CHECK(!infer(nid, s, t, &err) && strstr(err.msg, "got 4"), "a fourth result accepted: %s", err.msg);
}

/* argmax takes one row a token: [T, N] gives [T] i32; [2T, N] is refused. */
static void test_argmax_rows(void)
{
	fresh();
	int x = input("x", HALO_F32, 2, (ir_dim[]){T1, C(50)});
	int x2 = input("x2", HALO_F32, 2, (ir_dim[]){(ir_dim){2, 0}, C(50)});
	ir_shape s[1];
	halo_dtype t[1];
	ir_error err;
	CHECK(infer(node(IR_OP_ARGMAX, "a", 1, (int[]){x}, 1), s, t, &err) && strcmp(str(&s[0]), "[T]") == 0 &&
		      t[0] == HALO_I32,
	      "argmax [T, 50]: %s %s", err.msg, str(&s[0]));
	CHECK(!infer(node(IR_OP_ARGMAX, "a2", 1, (int[]){x2}, 1), s, t, &err) &&
		      strstr(err.msg, "argmax 'a2': operand 0 must be [T, N], one row a token: x2 is [2*T, 50]"),
	      "argmax over [2T, 50]: %s", err.msg);
}

static void test_broadcast(void)
{
	fresh();
	int a = input("a", HALO_F32, 2, (ir_dim[]){T1, C(4)}), trail = input("b", HALO_F32, 1, (ir_dim[]){C(4)});
	int last1 = input("c", HALO_F32, 2, (ir_dim[]){T1, C(1)}), bad = input("d", HALO_F32, 1, (ir_dim[]){C(3)});
	ir_shape s[2];
	halo_dtype t[2];
	ir_error err;
	CHECK(infer(node(IR_OP_ADD, "t", 2, (int[]){a, trail}, 1), s, t, &err), "trailing broadcast: %s", err.msg);
	CHECK(infer(node(IR_OP_MUL, "l", 2, (int[]){a, last1}, 1), s, t, &err), "last-dim-1 broadcast: %s", err.msg);
	CHECK(!infer(node(IR_OP_SUB, "x", 2, (int[]){a, bad}, 1), s, t, &err) &&
		      strstr(err.msg, "sub 'x': b does not broadcast to a: a is [T, 4], d is [3]"),
	      "bad broadcast: %s", err.msg);
}

static void test_reshape_and_rope(void)
{
	fresh();
	int x = input("x", HALO_F32, 2, (ir_dim[]){T1, C(64)});
	int r = node(IR_OP_RESHAPE, "r", 1, (int[]){x}, 1);
	ir_attr a = {.name = "shape", .kind = IR_ATTR_SHAPE, .shape = {3, {T1, C(4), C(16)}}};
	ir_node_add_attr(m, f, r, &a);
	ir_shape s[2];
	halo_dtype t[2];
	ir_error err;
	CHECK(infer(r, s, t, &err) && strcmp(str(&s[0]), "[T, 4, 16]") == 0, "reshape: %s", err.msg);
	int bad = node(IR_OP_RESHAPE, "bad", 1, (int[]){x}, 1);
	a.shape = (ir_shape){2, {C(64), C(1)}};
	ir_node_add_attr(m, f, bad, &a);
	CHECK(!infer(bad, s, t, &err) && strstr(err.msg, "element count differs: x is [T, 64], shape is [64, 1]"),
	      "reshape numel: %s", err.msg);
	int q = input("q", HALO_F32, 3, (ir_dim[]){T1, C(4), C(16)});
	int rope = node(IR_OP_ROPE, "rope", 1, (int[]){q}, 1);
	attr_f(rope, "base", 10000);
	attr_i(rope, "rot_dim", 7);
	CHECK(!infer(rope, s, t, &err) && strstr(err.msg, "rot_dim 7 must be even"), "rope: %s", err.msg);
}

static void attr_s(int nid, const char *name, const char *v)
{
	ir_attr a = {.name = name, .kind = IR_ATTR_STR, .s = v};
	ir_node_add_attr(m, f, nid, &a);
}

/* rope's DeepSeek V4 options: a YaRN factor of 0 is none, whatever the
 * other yarn_ attributes say; a positive one needs the original context and
 * a base its correction range can divide by; a negative one is refused. */
static void test_rope_options(void)
{
	fresh();
	int q = input("q", HALO_F32, 3, (ir_dim[]){T1, C(4), C(32)});
	ir_shape s[2];
	halo_dtype t[2];
	ir_error err;
	int ok = node(IR_OP_ROPE, "ds", 1, (int[]){q}, 1);
	attr_f(ok, "base", 160000);
	attr_i(ok, "rot_dim", 8);
	attr_s(ok, "layout", "interleaved_tail");
	attr_i(ok, "inverse", 1);
	attr_i(ok, "offset", -3);
	attr_f(ok, "yarn_factor", 4);
	attr_i(ok, "yarn_orig_ctx", 64);
	CHECK(infer(ok, s, t, &err) && strcmp(str(&s[0]), "[T, 4, 32]") == 0, "deepseek rope: %s", err.msg);
	int none = node(IR_OP_ROPE, "none", 1, (int[]){q}, 1);
	attr_f(none, "base", 1);
	attr_f(none, "yarn_factor", 0);
	attr_i(none, "yarn_orig_ctx", 0);
	CHECK(infer(none, s, t, &err), "yarn_factor 0 is no YaRN: %s", err.msg);
	int no_ctx = node(IR_OP_ROPE, "no_ctx", 1, (int[]){q}, 1);
	attr_f(no_ctx, "base", 160000);
	attr_f(no_ctx, "yarn_factor", 4);
	CHECK(!infer(no_ctx, s, t, &err) && strstr(err.msg, "with yarn_orig_ctx >= 1, got 0"),
	      "yarn without its context: %s", err.msg);
	int negative = node(IR_OP_ROPE, "negative", 1, (int[]){q}, 1);
	attr_f(negative, "base", 160000);
	attr_f(negative, "yarn_factor", -2);
	attr_i(negative, "yarn_orig_ctx", 64);
	CHECK(!infer(negative, s, t, &err) && strstr(err.msg, "yarn_factor -2 must be positive (0: no YaRN)"),
	      "a negative factor: %s", err.msg);
	int base1 = node(IR_OP_ROPE, "base1", 1, (int[]){q}, 1);
	attr_f(base1, "base", 1);
	attr_f(base1, "yarn_factor", 4);
	attr_i(base1, "yarn_orig_ctx", 64);
	CHECK(!infer(base1, s, t, &err) && strstr(err.msg, "YaRN needs base > 1"), "yarn base 1: %s", err.msg);
}

/* state_write's every: with at: pos, rows of the state's trailing dims. */
static void test_state_write_every(void)
{
	fresh();
	m->states = ir_arena_alloc(&m->arena, sizeof(ir_state));
	m->states[0] = (ir_state){.name = "entries", .shape = {2, {C(16), C(8)}}, .dtype = HALO_F32, .kind = "kv"};
	m->n_states = 1;
	int v = input("v", HALO_F32, 2, (ir_dim[]){T1, C(8)}), v6 = input("v6", HALO_F32, 2, (ir_dim[]){T1, C(6)});
	ir_shape s[1];
	halo_dtype t[1];
	ir_error err;
	static const struct {
		const char *at;
		int value;
		const char *want; /* NULL: accepted */
	} cases[] = {{"pos", 0, NULL},
		     {"start", 0, "every needs at: pos"},
		     {NULL, 0, "value and state shapes differ"},
		     {"pos", 1, "rows must match the state's trailing dims: v6 is [T, 6], state is [16, 8]"}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int w = node(IR_OP_STATE_WRITE, "w", 1, (int[]){cases[i].value ? v6 : v}, 0);
		f->nodes[w].ref = 0;
		if (cases[i].at)
			attr_s(w, "at", cases[i].at);
		attr_i(w, "every", 4);
		bool got = infer(w, s, t, &err);
		CHECK(cases[i].want ? !got && strstr(err.msg, cases[i].want) : got, "state_write every, case %zu: %s", i,
		      err.msg);
	}
}

/* compress_kv, index_topk and sink_attention: shapes, dtypes, and what each
 * refuses. */
static void test_compressed_attention(void)
{
	fresh();
	int cz = input("c", HALO_F32, 2, (ir_dim[]){C(64), C(32)});
	int bias = input("bias", HALO_F32, 2, (ir_dim[]){C(4), C(32)});
	int bias8 = input("bias8", HALO_F32, 2, (ir_dim[]){C(8), C(32)});
	int odd = input("odd", HALO_F32, 2, (ir_dim[]){C(64), C(33)});
	int odd_bias = input("odd_bias", HALO_F32, 2, (ir_dim[]){C(4), C(33)});
	ir_shape s[1];
	halo_dtype t[1];
	ir_error err;
	int ck = node(IR_OP_COMPRESS_KV, "ck", 3, (int[]){cz, cz, bias}, 1);
	attr_i(ck, "ratio", 4);
	attr_i(ck, "overlap", 1);
	CHECK(infer(ck, s, t, &err) && strcmp(str(&s[0]), "[T, 16]") == 0 && t[0] == HALO_F32, "compress_kv: %s %s",
	      err.msg, str(&s[0]));
	int rows = node(IR_OP_COMPRESS_KV, "rows", 3, (int[]){cz, cz, bias8}, 1);
	attr_i(rows, "ratio", 4);
	attr_i(rows, "overlap", 0);
	CHECK(!infer(rows, s, t, &err) && strstr(err.msg, "one row per slot of a window, ratio = 4: bias8 is [8, 32]"),
	      "compress_kv bias rows: %s", err.msg);
	int halves = node(IR_OP_COMPRESS_KV, "halves", 3, (int[]){odd, odd, odd_bias}, 1);
	attr_i(halves, "ratio", 4);
	attr_i(halves, "overlap", 1);
	CHECK(!infer(halves, s, t, &err) && strstr(err.msg, "its width must be even: odd is [64, 33]"),
	      "compress_kv odd halves: %s", err.msg);

	int q = input("q", HALO_F32, 3, (ir_dim[]){T1, C(2), C(16)}), w = input("w", HALO_F32, 2, (ir_dim[]){T1, C(2)});
	int keys = input("keys", HALO_F32, 2, (ir_dim[]){C(16), C(16)});
	int keys8 = input("keys8", HALO_F32, 2, (ir_dim[]){C(16), C(8)});
	int it = node(IR_OP_INDEX_TOPK, "it", 3, (int[]){q, w, keys}, 1);
	attr_i(it, "k", 3);
	attr_i(it, "ratio", 4);
	attr_f(it, "scale", 0.25);
	CHECK(infer(it, s, t, &err) && strcmp(str(&s[0]), "[T, 3]") == 0 && t[0] == HALO_I32, "index_topk: %s", err.msg);
	int dims = node(IR_OP_INDEX_TOPK, "dims", 3, (int[]){q, w, keys8}, 1);
	attr_i(dims, "k", 3);
	attr_i(dims, "ratio", 4);
	attr_f(dims, "scale", 0.25);
	CHECK(!infer(dims, s, t, &err) && strstr(err.msg, "head dims of q and keys differ"), "index_topk dims: %s",
	      err.msg);

	int qa = input("qa", HALO_F32, 3, (ir_dim[]){T1, C(4), C(16)});
	int kv = input("kv", HALO_F32, 2, (ir_dim[]){C(64), C(16)});
	int sinks = input("sinks", HALO_F32, 1, (ir_dim[]){C(4)}), ids = input("ids", HALO_I32, 2, (ir_dim[]){T1, C(2)});
	int fids = input("fids", HALO_F32, 2, (ir_dim[]){T1, C(2)});
	static const struct {
		int n;
		bool ratio, float_ids;
		const char *want; /* NULL: accepted */
	} cases[] = {{3, false, false, NULL},
		     {4, true, false, NULL},
		     {5, true, false, NULL},
		     {4, false, false, "entries need ratio"},
		     {3, true, false, "ratio applies to entries only"},
		     {5, true, true, "operand 4 ('fids') must be i32, not f32"},
		     {6, true, false, "takes 3 to 5 operands, got 6"}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int in[6] = {qa, kv, sinks, kv, cases[i].float_ids ? fids : ids, ids};
		int a = node(IR_OP_SINK_ATTENTION, "sa", cases[i].n, in, 1);
		attr_f(a, "scale", 0.25);
		attr_i(a, "window", 8);
		if (cases[i].ratio)
			attr_i(a, "ratio", 4);
		bool got = infer(a, s, t, &err);
		CHECK(cases[i].want ? !got && strstr(err.msg, cases[i].want) : got && strcmp(str(&s[0]), "[T, 4, 16]") == 0,
		      "sink_attention case %zu: %s", i, err.msg);
	}
	/* the split halves (passes/split_attention.c): the key list's blocks are
	 * ceil((min(window, N) + k or E) / block) */
	static const struct {
		int n;
		int64_t window;
		const char *want;
	} parts[] = {{3, 8, "[T, 4, 2, 18]"}, {3, 100, "[T, 4, 13, 18]"}, {4, 8, "[T, 4, 15, 18]"}, {5, 8, "[T, 4, 2, 18]"}};
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
		int a = node(IR_OP_SINK_ATTENTION_PARTIAL, "sap", parts[i].n, (int[]){qa, kv, sinks, kv, ids}, 1);
		attr_f(a, "scale", 0.25);
		attr_i(a, "window", parts[i].window);
		if (parts[i].n > 3)
			attr_i(a, "ratio", 4);
		attr_i(a, "block", 5);
		CHECK(infer(a, s, t, &err) && strcmp(str(&s[0]), parts[i].want) == 0 && t[0] == HALO_F32,
		      "sink_attention_partial case %zu: %s %s", i, err.msg, str(&s[0]));
	}
	int sc = node(IR_OP_INDEX_SCORE, "sc", 3, (int[]){q, w, keys}, 1);
	attr_i(sc, "ratio", 4);
	attr_f(sc, "scale", 0.25);
	attr_i(sc, "block", 8);
	CHECK(infer(sc, s, t, &err) && strcmp(str(&s[0]), "[T, 16]") == 0 && t[0] == HALO_F32, "index_score: %s",
	      err.msg);
	int scores = input("scores", HALO_F32, 2, (ir_dim[]){T1, C(16)});
	int sel = node(IR_OP_INDEX_SELECT, "sel", 1, (int[]){scores}, 1);
	attr_i(sel, "k", 3);
	attr_i(sel, "ratio", 4);
	CHECK(infer(sel, s, t, &err) && strcmp(str(&s[0]), "[T, 3]") == 0 && t[0] == HALO_I32, "index_select: %s",
	      err.msg);
}

static void test_attention_and_routing(void)
{
	fresh();
	int q = input("q", HALO_F32, 3, (ir_dim[]){T1, C(4), C(16)});
	int k = input("k", HALO_F32, 3, (ir_dim[]){C(256), C(3), C(16)}), v = input("v", HALO_F32, 3, (ir_dim[]){C(256), C(3), C(8)});
	ir_shape s[2];
	halo_dtype t[2];
	ir_error err;
	int att = node(IR_OP_ATTENTION, "att", 3, (int[]){q, k, v}, 1);
	attr_f(att, "scale", 0.25);
	CHECK(!infer(att, s, t, &err) && strstr(err.msg, "head count of q is [T, 4, 16] is not a multiple of k"),
	      "attention heads: %s", err.msg);
	int lg = input("lg", HALO_F32, 2, (ir_dim[]){T1, C(8)});
	int route = node(IR_OP_MOE_ROUTE, "route", 1, (int[]){lg}, 2);
	attr_i(route, "k", 2);
	CHECK(infer(route, s, t, &err) && t[0] == HALO_I32 && t[1] == HALO_F32 && strcmp(str(&s[1]), "[T, 2]") == 0,
	      "moe_route: %s", err.msg);
	int missing = node(IR_OP_TOPK, "tk", 1, (int[]){lg}, 2);
	CHECK(!infer(missing, s, t, &err) && strstr(err.msg, "topk 'tk': missing attribute 'k'"), "topk: %s", err.msg);
}

/* DeepSeek V4's attributes on existing ops: the unweighted rms_norm, the
 * grouped matmul, the router's bias and the experts' limit. */
static void test_dsv4_attrs(void)
{
	fresh();
	int x = input("x", HALO_F32, 2, (ir_dim[]){T1, C(96)}), w = input("w", HALO_F32, 2, (ir_dim[]){C(64), C(24)});
	ir_shape s[3];
	halo_dtype t[3];
	ir_error err;
	int norm = node(IR_OP_RMS_NORM, "n", 1, (int[]){x}, 1);
	attr_f(norm, "eps", 1e-6);
	CHECK(infer(norm, s, t, &err) && strcmp(str(&s[0]), "[T, 96]") == 0, "unweighted rms_norm: %s", err.msg);
	attr_i(norm, "offset", 1);
	CHECK(!infer(norm, s, t, &err) && strstr(err.msg, "rms_norm 'n': offset 1 needs a weight operand"),
	      "unweighted rms_norm with offset: %s", err.msg);
	int mm = node(IR_OP_MATMUL, "o", 2, (int[]){x, w}, 1);
	attr_i(mm, "groups", 4);
	CHECK(infer(mm, s, t, &err) && strcmp(str(&s[0]), "[T, 64]") == 0, "grouped matmul: %s", err.msg);
	int bad = node(IR_OP_MATMUL, "o3", 2, (int[]){x, w}, 1);
	attr_i(bad, "groups", 3);
	CHECK(!infer(bad, s, t, &err) &&
		      strstr(err.msg, "groups 3: x's last dim must be 3 times w's: x is [T, 96], w is [64, 24]"),
	      "groups 3: %s", err.msg);
	int w6 = input("w6", HALO_F32, 2, (ir_dim[]){C(6), C(24)});
	bad = node(IR_OP_MATMUL, "o6", 2, (int[]){x, w6}, 1);
	attr_i(bad, "groups", 4);
	CHECK(!infer(bad, s, t, &err) && strstr(err.msg, "groups 4 does not divide w's rows: w6 is [6, 24]"),
	      "groups vs N: %s", err.msg);
	bad = node(IR_OP_MATMUL, "op", 2, (int[]){x, w}, 1);
	attr_i(bad, "groups", 4);
	attr_s(bad, "pair", "swiglu");
	CHECK(!infer(bad, s, t, &err) && strstr(err.msg, "groups 4 excludes split and pair"), "groups + pair: %s",
	      err.msg);
	/* w_rows: the weight's first rows (a draft head's vocabulary prefix) */
	int x24 = input("x24", HALO_F32, 2, (ir_dim[]){T1, C(24)});
	int pre = node(IR_OP_MATMUL, "pre", 2, (int[]){x24, w}, 1);
	attr_i(pre, "w_rows", 40);
	CHECK(infer(pre, s, t, &err) && strcmp(str(&s[0]), "[T, 40]") == 0, "w_rows 40 of 64: %s", err.msg);
	pre = node(IR_OP_MATMUL, "all", 2, (int[]){x24, w}, 1);
	attr_i(pre, "w_rows", 64);
	CHECK(infer(pre, s, t, &err) && strcmp(str(&s[0]), "[T, 64]") == 0, "w_rows of all 64: %s", err.msg);
	pre = node(IR_OP_MATMUL, "past", 2, (int[]){x24, w}, 1);
	attr_i(pre, "w_rows", 65);
	CHECK(!infer(pre, s, t, &err) && strstr(err.msg, "w_rows 65 is more than the weight's rows: w is [64, 24]"),
	      "w_rows past the rows: %s", err.msg);
	bad = node(IR_OP_MATMUL, "pre2", 2, (int[]){x24, w}, 1);
	attr_i(bad, "w_rows", 8);
	attr_s(bad, "pair", "swiglu");
	CHECK(!infer(bad, s, t, &err) && strstr(err.msg, "w_rows 8 excludes split, pair and groups"),
	      "w_rows + pair: %s", err.msg);

	int lg = input("lg", HALO_F32, 2, (ir_dim[]){T1, C(8)}), bias = input("bias", HALO_F32, 1, (ir_dim[]){C(8)});
	int b7 = input("b7", HALO_F32, 1, (ir_dim[]){C(7)});
	int route = node(IR_OP_MOE_ROUTE, "r", 2, (int[]){lg, bias}, 2);
	attr_i(route, "k", 2);
	CHECK(infer(route, s, t, &err) && strcmp(str(&s[1]), "[T, 2]") == 0, "moe_route with bias: %s", err.msg);
	route = node(IR_OP_MOE_ROUTE, "r7", 2, (int[]){lg, b7}, 2);
	attr_i(route, "k", 2);
	CHECK(!infer(route, s, t, &err) && strstr(err.msg, "expert counts of logits and bias differ"), "bias [7]: %s",
	      err.msg);
	ir_attr relu = {.name = "scoring", .kind = IR_ATTR_STR, .s = "relu"};
	err = (ir_error){0};
	CHECK(!ir_op_check_attr(IR_OP_MOE_ROUTE, &relu, (ir_loc){"x.yaml", 1, 1}, &err) &&
		      strstr(err.msg, "must be one of softmax, sigmoid, sqrtsoftplus, got 'relu'"),
	      "scoring choices: %s", err.msg);
	CHECK(ir_op_attr_schema(IR_OP_MOE_ROUTE, "scoring")->presence == IR_ATTR_OPTIONAL &&
		      ir_op_attr_schema(IR_OP_MOE_EXPERTS, "limit")->presence == IR_ATTR_OPTIONAL &&
		      ir_op_attr_schema(IR_OP_MATMUL, "groups")->presence == IR_ATTR_OPTIONAL,
	      "the attributes added to existing ops are optional (no default written into their nodes)");

	int h = input("h", HALO_F32, 2, (ir_dim[]){T1, C(16)}), ids = input("ids", HALO_I32, 2, (ir_dim[]){T1, C(2)});
	int wt = input("wt", HALO_F32, 2, (ir_dim[]){T1, C(2)}), gu = input("gu", HALO_F32, 3, (ir_dim[]){C(8), C(4), C(16)});
	int dn = input("dn", HALO_F32, 3, (ir_dim[]){C(8), C(16), C(4)});
	int ex = node(IR_OP_MOE_EXPERTS, "ex", 6, (int[]){h, ids, wt, gu, gu, dn}, 1);
	attr_f(ex, "limit", -1);
	CHECK(!infer(ex, s, t, &err) && strstr(err.msg, "limit -1 must be finite and >= 0"), "limit: %s", err.msg);
}

/* DeepSeek V4's new ops: hc_weights (both forms), hc_collapse, hc_expand,
 * moe_route_hash. */
static void test_dsv4_ops(void)
{
	fresh();
	int mix = input("mix", HALO_F32, 2, (ir_dim[]){T1, C(24)}), base = input("base", HALO_F32, 1, (ir_dim[]){C(24)});
	int sc3 = input("sc3", HALO_F32, 1, (ir_dim[]){C(3)}), sc1 = input("sc1", HALO_F32, 1, (ir_dim[]){C(1)});
	ir_shape s[3];
	halo_dtype t[3];
	ir_error err;
	int hw = node(IR_OP_HC_WEIGHTS, "hw", 3, (int[]){mix, base, sc3}, 3);
	CHECK(infer(hw, s, t, &err) && strcmp(str(&s[0]), "[T, 4]") == 0 && strcmp(str(&s[1]), "[T, 4]") == 0 &&
		      strcmp(str(&s[2]), "[T, 4, 4]") == 0 && t[2] == HALO_F32,
	      "hc_weights: %s %s", err.msg, str(&s[2]));
	int head = node(IR_OP_HC_WEIGHTS, "head", 3, (int[]){mix, base, sc1}, 1);
	CHECK(infer(head, s, t, &err) && strcmp(str(&s[0]), "[T, 24]") == 0, "hyperhead hc_weights: %s", err.msg);
	int two = node(IR_OP_HC_WEIGHTS, "two", 3, (int[]){mix, base, sc3}, 2);
	CHECK(!infer(two, s, t, &err) && strstr(err.msg, "has 1 result (the HyperHead's pre) or 3"), "2 results: %s",
	      err.msg);
	int m25 = input("m25", HALO_F32, 2, (ir_dim[]){T1, C(25)}), b25 = input("b25", HALO_F32, 1, (ir_dim[]){C(25)});
	int odd = node(IR_OP_HC_WEIGHTS, "odd", 3, (int[]){m25, b25, sc3}, 3);
	CHECK(!infer(odd, s, t, &err) && strstr(err.msg, "mix's width must be (2+n)*n for pre, post and comb: m25 is [T, 25]"),
	      "width 25: %s", err.msg);
	int sc = node(IR_OP_HC_WEIGHTS, "sc", 3, (int[]){mix, base, sc1}, 3);
	CHECK(!infer(sc, s, t, &err) && strstr(err.msg, "scale holds 3 factor(s) for 3 result(s): sc1 is [1]"),
	      "scale [1] for 3 results: %s", err.msg);

	int x = input("x", HALO_F32, 3, (ir_dim[]){T1, C(4), C(32)}), pre = input("pre", HALO_F32, 2, (ir_dim[]){T1, C(4)});
	int y = input("y", HALO_F32, 2, (ir_dim[]){T1, C(32)}), comb = input("comb", HALO_F32, 3, (ir_dim[]){T1, C(4), C(4)});
	int p3 = input("p3", HALO_F32, 2, (ir_dim[]){T1, C(3)});
	int col = node(IR_OP_HC_COLLAPSE, "col", 2, (int[]){x, pre}, 1);
	CHECK(infer(col, s, t, &err) && strcmp(str(&s[0]), "[T, 32]") == 0, "hc_collapse: %s", err.msg);
	col = node(IR_OP_HC_COLLAPSE, "col3", 2, (int[]){x, p3}, 1);
	CHECK(!infer(col, s, t, &err) && strstr(err.msg, "stream counts differ: x is [T, 4, 32], p3 is [T, 3]"),
	      "hc_collapse streams: %s", err.msg);
	int xp = node(IR_OP_HC_EXPAND, "xp", 4, (int[]){x, y, pre, comb}, 1);
	CHECK(infer(xp, s, t, &err) && strcmp(str(&s[0]), "[T, 4, 32]") == 0, "hc_expand: %s", err.msg);
	xp = node(IR_OP_HC_EXPAND, "xp2", 4, (int[]){x, pre, pre, comb}, 1);
	CHECK(!infer(xp, s, t, &err) && strstr(err.msg, "widths of x and y differ"), "hc_expand y: %s", err.msg);
	/* Qwen3.8 Flash's sublayer exit: the same operands without comb */
	int inj = node(IR_OP_HC_INJECT, "inj", 3, (int[]){x, y, pre}, 1);
	CHECK(infer(inj, s, t, &err) && strcmp(str(&s[0]), "[T, 4, 32]") == 0, "hc_inject: %s", err.msg);
	inj = node(IR_OP_HC_INJECT, "inj3", 3, (int[]){x, y, p3}, 1);
	CHECK(!infer(inj, s, t, &err) && strstr(err.msg, "stream counts differ"), "hc_inject gates: %s", err.msg);
	/* ... with the next sublayer's per-stream norm (passes/fuse_inject_norm.c): both results [T, n*H] */
	int nw = input("nw", HALO_F32, 1, (ir_dim[]){C(128)}), nw_short = input("nw_short", HALO_F32, 1, (ir_dim[]){C(32)});
	int in = node(IR_OP_HC_INJECT_NORM, "in", 4, (int[]){x, y, pre, nw}, 2);
	attr_f(in, "eps", 1e-6);
	CHECK(infer(in, s, t, &err) && strcmp(str(&s[0]), "[T, 128]") == 0 && strcmp(str(&s[1]), "[T, 128]") == 0,
	      "hc_inject_norm: %s", err.msg);
	in = node(IR_OP_HC_INJECT_NORM, "in_short", 4, (int[]){x, y, pre, nw_short}, 2);
	attr_f(in, "eps", 1e-6);
	CHECK(!infer(in, s, t, &err) && strstr(err.msg, "the norm weight must hold n * H = 128 values: nw_short is [32]"),
	      "hc_inject_norm weight: %s", err.msg);

	int lg = input("lg", HALO_F32, 2, (ir_dim[]){T1, C(8)}), table = input("table", HALO_F32, 2, (ir_dim[]){C(50), C(3)});
	int tok = input("tok", HALO_I32, 1, (ir_dim[]){T1}), ftok = input("ftok", HALO_F32, 1, (ir_dim[]){T1});
	int big = input("big", HALO_F32, 2, (ir_dim[]){C(50), C(9)});
	int hr = node(IR_OP_MOE_ROUTE_HASH, "hr", 3, (int[]){lg, table, tok}, 2);
	CHECK(infer(hr, s, t, &err) && strcmp(str(&s[0]), "[T, 3]") == 0 && t[0] == HALO_I32 && t[1] == HALO_F32,
	      "moe_route_hash: %s", err.msg);
	hr = node(IR_OP_MOE_ROUTE_HASH, "hf", 3, (int[]){lg, table, ftok}, 2);
	CHECK(!infer(hr, s, t, &err) && strstr(err.msg, "operand 2 ('ftok') must be i32"), "float tokens: %s", err.msg);
	hr = node(IR_OP_MOE_ROUTE_HASH, "hk", 3, (int[]){lg, big, tok}, 2);
	CHECK(!infer(hr, s, t, &err) && strstr(err.msg, "selects more experts per token than there are"),
	      "k > E: %s", err.msg);
}

static void test_table(void)
{
	CHECK(ir_op_is_elementwise(IR_OP_ADD) && ir_op_is_binary(IR_OP_ADD) && ir_op_is_unary(IR_OP_SILU) &&
		      !ir_op_is_elementwise(IR_OP_MATMUL),
	      "elementwise flags");
	CHECK(ir_op_is_sink(IR_OP_STATE_WRITE) && !ir_op_is_pure(IR_OP_STATE_READ) && ir_op_is_pure(IR_OP_MATMUL),
	      "sink/pure flags");
	const ir_attr_schema *eps = ir_op_attr_schema(IR_OP_RMS_NORM, "eps");
	CHECK(eps && eps->kind == IR_ATTR_FLOAT && eps->presence == IR_ATTR_REQUIRED, "rms_norm eps schema");
	const ir_attr_schema *l2 = ir_op_attr_schema(IR_OP_L2_NORM, "eps");
	CHECK(l2 && l2->presence == IR_ATTR_DEFAULT && l2->dflt_f == 1e-6, "l2_norm eps default");
	for (int op = 0; op < IR_OP_COUNT; op++) {
		ir_op back;
		CHECK(ir_op_get((ir_op)op) && (int)ir_op_get((ir_op)op)->op == op, "table entry %d", op);
		CHECK(ir_op_from_name(ir_op_name((ir_op)op), &back) && (int)back == op, "name round trip %d", op);
	}
}

/* Killing the middle of a -> b -> c keeps c after a, and ids stay dense. */
static void test_compact(void)
{
	fresh();
	int x = input("x", HALO_F32, 1, (ir_dim[]){C(4)});
	int a = node(IR_OP_NEG, "a", 1, (int[]){x}, 1);
	int b = node(IR_OP_EXP, "b", 1, (int[]){x}, 1);
	int c = node(IR_OP_SILU, "c", 1, (int[]){f->nodes[a].out[0]}, 1);
	f->nodes[b].after = ir_arena_alloc(&m->arena, sizeof(int));
	f->nodes[b].after[0] = a;
	f->nodes[b].n_after = 1;
	f->nodes[c].after = ir_arena_alloc(&m->arena, sizeof(int));
	f->nodes[c].after[0] = b;
	f->nodes[c].n_after = 1;
	f->inputs = ir_arena_alloc(&m->arena, sizeof(int));
	f->inputs[0] = x;
	f->n_inputs = 1;
	f->outputs = ir_arena_alloc(&m->arena, sizeof(int));
	f->outputs[0] = f->nodes[c].out[0];
	f->n_outputs = 1;
	f->nodes[b].dead = true;
	ir_func_compact(m, f);
	CHECK(f->n_nodes == 2 && strcmp(f->nodes[1].name, "c") == 0, "nodes after compact: %d", f->n_nodes);
	CHECK(f->nodes[1].n_after == 1 && f->nodes[1].after[0] == 0, "c still runs after a");
	CHECK(f->n_values == 3 && f->values[f->nodes[1].in[0]].producer == 0 && f->values[f->outputs[0]].producer == 1,
	      "values renumbered: %d", f->n_values);
}

int main(void)
{
	test_matmul();
	test_steps_result();
	test_argmax_rows();
	test_broadcast();
	test_reshape_and_rope();
	test_attention_and_routing();
	test_dsv4_attrs();
	test_dsv4_ops();
	test_rope_options();
	test_state_write_every();
	test_compressed_attention();
	test_table();
	test_compact();
	ir_module_free(m);
	printf("ops: %d failure(s)\n", check_failures);
	return check_failures ? 1 : 0;
}
