/* Rules of individual passes on hybrid_tiny:
 *  - infer_shapes rejects a call whose inputs differ from the block's first
 *    call site, naming the block and both shapes;
 *  - expand_blocks names per-layer weights, states, nodes layers.<i>.<block>.*
 *    with {i} substituted in checkpoint names, and leaves no call;
 *  - dce drops an unused node but keeps every state_write sink;
 *  - the epilogue fusions stop at HALO_MAX_EPILOGUE ops on one host (a
 *    six-op chain after a matmul: four fold, the rest stay a dispatch);
 *  - fuse_norm_matmul fuses a norm read only by matmuls, not one that also
 *    feeds moe_experts; it folds the norm weight into per-layer readers'
 *    matrices, never into a module-level one (a head of 16384 x 2048 keeps
 *    its final norm) or one with a fallback name (a tied lm_head); unfolded
 *    (no_fold_norms, as under --quant) it fuses no norm whose readers'
 *    weights are large, but with int8 activations (--act-quant q8) it
 *    fuses those too in the graphs of the steps that take them (decode's,
 *    a copy "forward.xq", and verify's own), with the norm weight as the
 *    prologue's operand, and leaves the prompt's graph alone;
 *  - schedule names a node on a cycle instead of looping or dropping nodes,
 *    and the verifier rejects an out-of-range edge;
 *  - order_effects refuses a graph output that aliases a state overwritten
 *    later in the step;
 *  - state_slots gives the verify entry (recurrent: slots) a copy of the
 *    graph it shares with decode, in which every recurrent state write has
 *    a twin writing the producer's per-token states into the state's slots
 *    ([t_max, ...state], kind slots), and leaves decode's graph alone; it
 *    refuses a recurrent state written from anything but a recurrent op;
 *  - entry_tokens (on qwen4_exp) gives draft_greedy (output: tokens) a copy
 *    of mtp_step ending in an argmax of the logits, [T] i32, and leaves
 *    draft's graph returning logits; it refuses an entry whose graph does
 *    not return logits;
 *  - fuse_norm_rope makes q_norm and k_norm the ropes' prologues (with
 *    their weights as operands), leaving no norm node;
 *  - merge_matmuls merges q, k and v (split, in weight-name order, under the
 *    first part's name) and the shared expert's gate and up (pair), not the
 *    router (its logits feed moe_route) nor matmuls with epilogues (the GDN
 *    gates); a part under merge_min_rows rows stays apart, and
 *    no_merge_matmuls merges nothing;
 *  - fuse_state_store makes the KV-cache writes (at: pos, of the k rope's
 *    rows and the merged matmul's v rows) in place, not the GDN layers'
 *    whole-state writes, and nothing under no_fuse_state_store
 *    (plan_invariants_test checks where the plan puts those values); nor a
 *    write with `every` (DeepSeek V4's compressed entries,
 *    tests/models/dsv4_attention.yaml: its value's row t is not state row
 *    pos + t), while the same model's KV-cache write is in place;
 *  - on DeepSeek V4's forms (dsv4_rules.yaml): no norm fuses into a
 *    grouped matmul nor do grouped siblings merge, an unweighted norm becomes
 *    a matmul's bare prologue (no weight operand, nothing folded) but stays
 *    apart from a rope, and split_moe gives the experts'
 *    limit to moe_gate_up; the whole pipeline plans the mHC ops and routers;
 *  - split_attention at a 32k context (dsv4_split.yaml) makes index_topk
 *    over 8192 entries index_score (blocks of 128) + index_select, and each
 *    sink_attention whose key list passes one block (the window's 128, 384
 *    with HCA's entries, 640 with CSA's picks) sink_attention_partial
 *    (blocks of 64) + attention_combine, with their names, attributes and
 *    shapes, the partial right before its combine; it keeps a 64-entry
 *    indexer and a 10-key sink_attention whole;
 *  - fuse_attention_rope gives decode (T <= 5) a copy "forward.rope" of the
 *    graph it shares with the prompt entries, in which the attention layer's
 *    two ropes are gone into one attention_rope that makes the k rope's
 *    value, its cache's read listed before the in-place write that now
 *    follows it; verify's own graph is fused in place, the prompt's graph
 *    keeps its ropes, and no_fuse_attention_rope fuses nothing;
 *  - fuse_inject_norm (on qwen4_exp) makes a sublayer's exit and the next
 *    sublayer's per-stream norm (hc_read's, or the PLE query's) one
 *    hc_inject_norm in the norm's place, making the streams as the norm
 *    read them and the norm, with the norm's eps and offset, leaving no
 *    hc_inject; a norm over whole rows (group 0) takes no inject. */
#include <stdio.h>
#include <string.h>

#include "ir/ops.h"
#include "kernels/op_table.h"
#include "ir/read_model.h"
#include "passes/passes.h"
#include "passes/pipeline.h"
#include "tests/passes/test_util.h"

#define MODEL "tests/models/hybrid_tiny.yaml"
#define CONFIG "tests/models/hybrid_tiny.config.json"

static void call_site_mismatch(void)
{
	ir_module *m = test_run_to(MODEL, CONFIG, "verify", NULL);
	if (!m)
		return;
	ir_func *f = &m->funcs[m->entries[0].func];
	int calls = 0;
	for (int i = 0; i < f->n_nodes; i++) {
		ir_node *n = &f->nodes[i];
		if (n->op != IR_OP_CALL || strcmp(m->funcs[n->ref].name, "moe_ffn") != 0 || calls++ != 1)
			continue;
		/* A fresh operand list: the reader may share it with the
		 * previous call's results, which chain into it. */
		n->in = ir_arena_alloc(&m->arena, sizeof(int));
		n->in[0] = f->inputs[0]; /* tokens: [T] i32 instead of [T, 64] f32 */
	}
	ir_error err = {0};
	CHECK(calls == 2, "expected two moe_ffn calls, found %d", calls);
	CHECK(!pass_infer_shapes(m, &err), "a mismatching call site was accepted");
	CHECK(strstr(err.msg, "moe_ffn") && strstr(err.msg, "first call") && strstr(err.msg, "[T] i32") &&
	      strstr(err.msg, "[T, 64] f32") && strstr(err.msg, "hybrid_tiny.yaml:"),
	      "unclear message: %s", err.msg);
	ir_module_free(m);
}

static void expansion_names(void)
{
	ir_module *m = test_run_to(MODEL, CONFIG, "expand_blocks", NULL);
	if (!m)
		return;
	CHECK(m->expanded, "module not marked expanded");
	int w = ir_module_weight(m, "layers.1.attn.wq");
	CHECK(w >= 0 && m->weights[w].layer == 1 &&
	      strcmp(m->weights[w].hf_name, "model.layers.1.self_attn.q_proj.weight") == 0,
	      "layers.1.attn.wq missing or misnamed");
	CHECK(ir_module_weight(m, "layers.0.attn.wq") < 0, "layer 0 is gdn, not attn");
	int s = ir_module_state(m, "layers.0.gdn.ssm");
	CHECK(s >= 0 && m->states[s].layer == 0 && strcmp(m->states[s].kind, "ssm") == 0,
	      "layers.0.gdn.ssm missing");
	const ir_func *f = test_graph(m);
	int n = test_node(m, "layers.1.moe_ffn.s_out");
	CHECK(n >= 0 && f->nodes[n].layer == 1, "layers.1.moe_ffn.s_out missing or wrong layer");
	for (int i = 0; i < f->n_nodes; i++)
		CHECK(f->nodes[i].op != IR_OP_CALL, "call %s left after expansion", f->nodes[i].name);
	ir_module_free(m);
}

static int count_op(const ir_func *f, ir_op op)
{
	int k = 0;
	for (int i = 0; i < f->n_nodes; i++)
		k += f->nodes[i].op == op;
	return k;
}

static void dce_keeps_sinks(void)
{
	ir_module *m = test_run_to(MODEL, CONFIG, "expand_blocks", NULL);
	if (!m)
		return;
	ir_func *f = &m->funcs[m->entries[0].func];
	int x0 = ir_func_value(f, "x0"), n0 = f->n_nodes;
	int id = ir_func_add_node(m, f, IR_OP_NEG, "unused_neg", (ir_loc){0});
	int v = ir_func_add_value(m, f, "unused", id, 0);
	f->nodes[id].n_in = f->nodes[id].n_out = 1;
	f->nodes[id].in = ir_arena_alloc(&m->arena, sizeof(int));
	f->nodes[id].out = ir_arena_alloc(&m->arena, sizeof(int));
	f->nodes[id].in[0] = x0;
	f->nodes[id].out[0] = v;
	int sinks = count_op(f, IR_OP_STATE_WRITE);
	ir_error err = {0};
	CHECK(pass_dce(m, &err), "dce failed: %s", err.msg);
	CHECK(sinks == 4 && count_op(f, IR_OP_STATE_WRITE) == sinks, "state_write sinks: %d before, %d after",
	      sinks, count_op(f, IR_OP_STATE_WRITE));
	CHECK(ir_func_node(f, "unused_neg") < 0 && f->n_nodes == n0, "unused node kept (%d nodes, %d before)",
	      f->n_nodes, n0);
	ir_module_free(m);
}

static void norm_fusion(void)
{
	ir_module *m = test_run_to(MODEL, CONFIG, "fuse_norm_matmul", NULL);
	if (!m)
		return;
	const ir_func *f = test_graph(m);
	const char *fused[] = {"layers.1.attn.q_flat", "layers.1.attn.k_flat", "layers.1.attn.v_flat",
			       "layers.0.gdn.qkv", "logits"};
	for (size_t i = 0; i < sizeof fused / sizeof fused[0]; i++) {
		int n = test_node(m, fused[i]);
		CHECK(n >= 0 && f->nodes[n].n_fused == 1 && f->nodes[n].fused[0].op == IR_OP_RMS_NORM &&
		      f->nodes[n].fused[0].pos == IR_FUSE_PROLOGUE, "%s has no rms_norm prologue", fused[i]);
	}
	CHECK(test_node(m, "layers.1.attn.h") < 0, "the fused attn norm is still a node");
	CHECK(test_node(m, "layers.0.moe_ffn.h") >= 0, "the moe norm (read by moe_experts) was fused");
	ir_module_free(m);
}

/* The model through pass `pass` alone, after set(m, ctx) has changed the
 * module's settings for it; NULL (a failure counted) when the pipeline
 * fails. */
typedef void (*module_setup)(ir_module *m, const void *ctx);

static ir_module *run_one_pass(const char *model, const char *config, const char *pass, module_setup set,
			       const void *ctx)
{
	ir_error err = {0};
	ir_module *m = NULL;
	int at = pipeline_find(pass);
	halo_plan *p = NULL;
	bool ok = at > 0 && test_try_run_to(model, config, pipeline_pass_at(at - 1)->name, &m, &p, &err);
	if (ok) {
		set(m, ctx);
		ok = pipeline_run_range(m, p, at, at, &err);
	}
	plan_free(p);
	if (!ok) {
		fprintf(stderr, "pipeline failed: %s\n", err.msg);
		test_failures++;
		ir_module_free(m);
		return NULL;
	}
	return m;
}

typedef struct {
	bool no_fold;
	int64_t int8_max_rows;
} fuse_flags;

static void set_fuse_flags(ir_module *m, const void *flags)
{
	m->no_fold_norms = ((const fuse_flags *)flags)->no_fold;
	m->int8_max_rows = ((const fuse_flags *)flags)->int8_max_rows;
}

/* The model through fuse_norm_matmul, with fuse_norm_matmul's folding
 * turned off when no_fold. */
static ir_module *run_fuse_norm(const char *model, const char *config, bool no_fold)
{
	return run_one_pass(model, config, "fuse_norm_matmul", set_fuse_flags, &(fuse_flags){no_fold, 0});
}

/* The prologue of node name: NULL when it has none. */
static const ir_fused *prologue_of(const ir_module *m, const char *name)
{
	int n = test_node(m, name);
	const ir_node *node = n >= 0 ? &test_graph(m)->nodes[n] : NULL;
	return node && node->n_fused == 1 && node->fused[0].pos == IR_FUSE_PROLOGUE &&
			       node->fused[0].op == IR_OP_RMS_NORM
		       ? &node->fused[0]
		       : NULL;
}

static void norm_fusion_large_readers(void)
{
	const char *wide = "tests/passes/models/hybrid_wide_head.config.json";
	ir_module *m = run_fuse_norm(MODEL, wide, false);
	if (m) {
		const ir_fused *qkv = prologue_of(m, "layers.0.gdn.qkv");
		int w = ir_module_weight(m, "layers.0.gdn.w_qkv"), g = ir_module_weight(m, "layers.0.gdn.norm");
		int head = ir_module_weight(m, "lm_head");
		CHECK(qkv && qkv->n_extra == 0, "the GDN input projection did not take its norm folded");
		CHECK(w >= 0 && m->weights[w].folded && m->weights[w].fold_norm == g && m->weights[w].fold_offset == 1,
		      "w_qkv does not record the fold of its norm (offset 1)");
		/* a module-level head is never folded (a draft head may share it)
		 * and, this large, keeps its norm a node */
		CHECK(head >= 0 && !m->weights[head].folded && !prologue_of(m, "logits") && test_node(m, "xn") >= 0,
		      "the 16384 x 2048 module-level head was folded or took its norm");
		ir_module_free(m);
	}
	m = run_fuse_norm(MODEL, wide, true);
	if (m) {
		const ir_fused *q = prologue_of(m, "layers.1.attn.q_flat");
		CHECK(!prologue_of(m, "logits"), "unfolded, the 16384 x 2048 head took the norm as a prologue");
		CHECK(test_node(m, "xn") >= 0, "unfolded, the final norm before a large head is not a node of its own");
		CHECK(q && q->n_extra == 1, "unfolded, a small attention matmul lost its norm prologue");
		for (int i = 0; i < m->n_weights; i++)
			CHECK(!m->weights[i].folded, "weight %s folded under no_fold_norms", m->weights[i].name);
		ir_module_free(m);
	}
	/* unfolded with int8 activations (steps of at most 8 tokens): decode's
	 * and verify's large head takes its norm too, prefill's (64) does not */
	m = run_one_pass(MODEL, wide, "fuse_norm_matmul", set_fuse_flags, &(fuse_flags){true, 8});
	if (m) {
		for (int i = 1; i < m->n_entries; i++) { /* decode and verify */
			const ir_func *step = &m->funcs[m->entries[i].func];
			int logits = ir_func_node(step, "logits");
			const ir_node *head = logits >= 0 ? &step->nodes[logits] : NULL;
			CHECK(head && head->n_fused == 1 && head->fused[0].op == IR_OP_RMS_NORM &&
				      head->fused[0].n_extra == 1 && ir_func_node(step, "xn") < 0,
			      "with int8 activations, %s's 16384 x 2048 head did not take its norm (weight as operand)",
			      m->entries[i].name);
			CHECK(strcmp(m->entries[i].name, "decode") || !strcmp(step->name, "forward.xq"),
			      "decode runs %s, not a copy forward.xq", step->name);
		}
		CHECK(!strcmp(m->entries[0].name, "prefill") && !prologue_of(m, "logits") && test_node(m, "xn") >= 0,
		      "prefill's head took the norm");
		ir_module_free(m);
	}
	/* qwen3's lm_head falls back to the embedding table (tied): not folded,
	 * its norm fused with the weight operand (the head is small here) */
	m = run_fuse_norm("models/qwen3.yaml", "tests/fixtures/qwen3_tiny/config.json", false);
	if (m) {
		const ir_fused *head = prologue_of(m, "logits"), *q = prologue_of(m, "layers.0.decoder.q_flat");
		int w = ir_module_weight(m, "lm_head");
		CHECK(head && head->n_extra == 1 && w >= 0 && !m->weights[w].folded,
		      "a head with a fallback name (tied embeddings) was folded");
		CHECK(q && q->n_extra == 0, "qwen3's q projection did not take attn_norm folded");
		ir_module_free(m);
	}
}

/* Fusion folds elementwise ops only into ops whose kernels run an epilogue:
 * never into an embedding gather, a slice or the MoE experts. */
static void epilogue_hosts(void)
{
	ir_module *m = test_run_to("tests/passes/models/epilogue_hosts.yaml",
				   "tests/passes/models/epilogue_hosts.config.json", "fuse_elementwise", NULL);
	if (!m)
		return;
	const ir_func *f = test_graph(m);
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		for (int j = 0; j < n->n_fused; j++)
			CHECK(n->fused[j].pos != IR_FUSE_EPILOGUE || ir_op_takes_epilogue(n->op),
			      "'%s' (%s) took an epilogue its kernels cannot run", n->name, ir_op_name(n->op));
	}
	const char *alone[] = {"x_act", "half_gate", "y_neg"};
	for (size_t i = 0; i < sizeof alone / sizeof alone[0]; i++)
		CHECK(test_node(m, alone[i]) >= 0, "'%s' was folded into a producer without epilogues", alone[i]);
	CHECK(test_node(m, "g_sig") < 0, "the sigmoid after a matmul was not folded");
	for (int i = 0; i < f->n_nodes; i++) {
		int epi = 0;
		for (int j = 0; j < f->nodes[i].n_fused; j++)
			epi += f->nodes[i].fused[j].pos == IR_FUSE_EPILOGUE;
		CHECK(epi <= HALO_MAX_EPILOGUE, "'%s' took %d epilogue ops, more than a kernel runs (%d)",
		      f->nodes[i].name, epi, HALO_MAX_EPILOGUE);
		CHECK(strcmp(f->nodes[i].name, "c0") != 0 || epi == HALO_MAX_EPILOGUE,
		      "the matmul c0 took %d of its six unary consumers, not %d", epi, HALO_MAX_EPILOGUE);
	}
	ir_module_free(m);
}

/* Makes node `n` also wait for node `t`. */
static void add_after(ir_module *m, ir_node *n, int t)
{
	int *after = ir_arena_alloc(&m->arena, (size_t)(n->n_after + 1) * sizeof(int));
	for (int k = 0; k < n->n_after; k++)
		after[k] = n->after[k];
	after[n->n_after++] = t;
	n->after = after;
}

static void cycle_and_bad_edge(void)
{
	ir_module *m = test_run_to(MODEL, CONFIG, "check_effects", NULL);
	if (!m)
		return;
	ir_func *f = &m->funcs[m->entries[0].func];
	int rd = test_node(m, "layers.0.gdn.conv_old"), wr = test_node(m, "layers.0.gdn.conv_store");
	CHECK(rd >= 0 && wr >= 0, "conv_old / conv_store not found");
	if (rd < 0 || wr < 0)
		goto out;
	/* The read must come after the write, but the write consumes what
	 * conv1d made from the read: a cycle. */
	add_after(m, &f->nodes[rd], wr);
	ir_error err = {0};
	CHECK(!pass_schedule(m, &err), "a cyclic graph was scheduled");
	CHECK(strstr(err.msg, "cycle") && strstr(err.msg, "layers.0.gdn."), "unclear message: %s", err.msg);
	f->nodes[rd].after[f->nodes[rd].n_after - 1] = f->n_nodes;
	err = (ir_error){0};
	CHECK(!pass_verify(m, &err) && strstr(err.msg, "after edge"), "bad edge accepted: %s", err.msg);
out:
	ir_module_free(m);
}

static void output_aliasing_state(void)
{
	ir_module *m = test_run_to(MODEL, CONFIG, "fuse_elementwise", NULL);
	if (!m)
		return;
	ir_func *f = &m->funcs[m->entries[0].func];
	f->outputs[0] = ir_func_value(f, "layers.0.gdn.conv_old");
	ir_error err = {0};
	CHECK(f->outputs[0] >= 0 && !pass_order_effects(m, &err), "an output aliasing state was accepted");
	CHECK(strstr(err.msg, "graph output") && strstr(err.msg, "layers.0.gdn.conv_store"),
	      "unclear message: %s", err.msg);
	ir_module_free(m);
}

static int entry_func(const ir_module *m, const char *name)
{
	for (int i = 0; i < m->n_entries; i++)
		if (strcmp(m->entries[i].name, name) == 0)
			return m->entries[i].func;
	return -1;
}

/* A slot sink of f writing state s's slots from a steps result, as the pass makes them. */
static bool slot_sink_ok(const ir_module *m, const ir_func *f, const ir_node *n, int64_t t_max)
{
	const ir_state *slots = &m->states[n->ref];
	const ir_state *of = &m->states[slots->slots_of];
	const ir_value *v = &f->values[n->in[0]];
	const ir_node *p = &f->nodes[v->producer];
	return strcmp(slots->kind, "slots") == 0 && slots->shape.rank == of->shape.rank + 1 &&
	       slots->shape.dim[0].c == t_max && p->n_out == 3 && v->producer_out == 2 &&
	       v->shape.dim[0].coef_T == 1 && strcmp(ir_node_attr_str(n, "at", ""), "start") == 0;
}

static void state_slots_graph(void)
{
	ir_module *m = test_run_to(MODEL, CONFIG, "state_slots", NULL);
	if (!m)
		return;
	int dec = entry_func(m, "decode"), ver = entry_func(m, "verify");
	CHECK(dec >= 0 && ver >= 0 && dec != ver && strcmp(m->funcs[ver].name, "forward.slots") == 0,
	      "verify runs graph %d, decode %d: want its own copy forward.slots", ver, dec);
	if (dec < 0 || ver < 0 || dec == ver)
		goto out;
	const ir_func *fd = &m->funcs[dec], *fv = &m->funcs[ver];
	int recurrent = 0, slots = 0, plain_slots = 0;
	for (int i = 0; i < fv->n_nodes; i++) {
		const ir_node *n = &fv->nodes[i];
		if (n->op != IR_OP_STATE_WRITE)
			continue;
		const char *kind = m->states[n->ref].kind;
		recurrent += !strcmp(kind, "conv") || !strcmp(kind, "ssm");
		if (!strcmp(kind, "slots")) {
			slots++;
			CHECK(slot_sink_ok(m, fv, n, 5), "slot sink %s is not what the pass makes", n->name);
		}
	}
	for (int i = 0; i < fd->n_nodes; i++)
		plain_slots += fd->nodes[i].op == IR_OP_STATE_WRITE && !strcmp(m->states[fd->nodes[i].ref].kind, "slots");
	CHECK(recurrent == 2 && slots == 2 && plain_slots == 0,
	      "verify: %d recurrent writes and %d slot writes (want 2 and 2); decode: %d slot writes (want 0)",
	      recurrent, slots, plain_slots);
	int ss = ir_module_state(m, "layers.0.gdn.ssm.slots");
	CHECK(ss >= 0 && m->states[ss].slots_of == ir_module_state(m, "layers.0.gdn.ssm"), "ssm slots missing");
out:
	ir_module_free(m);
}

static void state_slots_refusal(void)
{
	ir_module *m = test_run_to(MODEL, CONFIG, "expand_blocks", NULL);
	if (!m)
		return;
	int fv = entry_func(m, "verify");
	ir_func *f = &m->funcs[fv];
	int w = ir_func_node(f, "layers.0.gdn.ssm_store");
	/* the old state written back: not a recurrent op's state result */
	if (w >= 0)
		f->nodes[w].in[0] = ir_func_value(f, "layers.0.gdn.ssm_old");
	ir_error err = {0};
	CHECK(w >= 0 && !pass_state_slots(m, &err), "a state written from a state_read was accepted");
	CHECK(strstr(err.msg, "entry 'verify'") && strstr(err.msg, "layers.0.gdn.ssm_store") &&
	      strstr(err.msg, "cannot give its state after each token") && strstr(err.msg, "hybrid_tiny.yaml:"),
	      "unclear message: %s", err.msg);
	ir_module_free(m);
}

/* output: tokens (passes/entry_tokens.c): Qwen3.8 Flash's draft_greedy
 * shares mtp_step with draft, so it gets a copy ending in an argmax whose
 * [T] i32 result is the output; draft still returns the logits. */
static void entry_tokens_graph(void)
{
	ir_module *m = test_run_to("models/qwen4_exp.yaml", "tests/fixtures/qwen4_exp_tiny/config.json", "entry_tokens",
				   NULL);
	if (!m)
		return;
	int fl = entry_func(m, "draft"), ft = entry_func(m, "draft_greedy");
	CHECK(fl >= 0 && ft >= 0 && fl != ft && strcmp(m->funcs[ft].name, "mtp_step.tokens") == 0,
	      "draft_greedy runs graph %d, draft %d: want its own copy mtp_step.tokens", ft, fl);
	if (fl >= 0 && ft >= 0 && fl != ft) {
		const ir_func *f = &m->funcs[ft], *g = &m->funcs[fl];
		const ir_value *out = &f->values[f->outputs[0]], *logits = &g->values[g->outputs[0]];
		const ir_node *am = out->producer >= 0 ? &f->nodes[out->producer] : NULL;
		CHECK(am && am->op == IR_OP_ARGMAX && out->dtype == HALO_I32 && out->shape.rank == 1 &&
			      strcmp(f->output_names[0], "tokens") == 0 &&
			      strcmp(f->values[am->in[0]].name, logits->name) == 0,
		      "draft_greedy's output is not the argmax of the logits");
		CHECK(logits->dtype == HALO_F32 && logits->shape.rank == 2, "draft no longer returns logits");
	}
	ir_module_free(m);

	/* a graph whose output is not logits is refused, naming the entry */
	m = test_run_to(MODEL, CONFIG, "state_slots", NULL);
	if (!m)
		return;
	ir_func *f = &m->funcs[m->entries[0].func];
	f->outputs[0] = f->inputs[0];
	m->entries[0].tokens_out = true;
	ir_error err = {0};
	CHECK(!pass_entry_tokens(m, &err), "an entry whose graph returns token ids was given an argmax");
	CHECK(strstr(err.msg, m->entries[0].name) && strstr(err.msg, "not f32 logits"), "unclear message: %s",
	      err.msg);
	ir_module_free(m);
}

static void norm_rope_fusion(void)
{
	ir_module *m = test_run_to(MODEL, CONFIG, "fuse_norm_rope", NULL);
	if (!m)
		return;
	const char *ropes[] = {"layers.1.attn.qr", "layers.1.attn.kr"}, *norms[] = {"layers.1.attn.qn", "layers.1.attn.kn"};
	for (int i = 0; i < 2; i++) {
		const ir_fused *p = prologue_of(m, ropes[i]);
		CHECK(p && p->n_extra == 1 && test_node(m, norms[i]) < 0, "%s has no rms_norm prologue or %s is left",
		      ropes[i], norms[i]);
	}
	ir_module_free(m);
}

typedef struct {
	bool no_merge;
	int64_t min_rows;
} merge_settings;

static void set_merge(ir_module *m, const void *ctx)
{
	const merge_settings *s = ctx;
	m->no_merge_matmuls = s->no_merge;
	m->merge_min_rows = s->min_rows;
}

/* hybrid_tiny through merge_matmuls, with the module's merge settings. */
static ir_module *run_merge(bool no_merge, int64_t min_rows)
{
	merge_settings s = {no_merge, min_rows};
	return run_one_pass(MODEL, CONFIG, "merge_matmuls", set_merge, &s);
}

/* Node name's matrix: its module weight, or NULL. */
static const ir_weight *matrix_of(const ir_module *m, const ir_node *n)
{
	const ir_func *f = test_graph(m);
	int p = f->values[n->in[1]].producer;
	return p >= 0 && f->nodes[p].op == IR_OP_WEIGHT ? &m->weights[f->nodes[p].ref] : NULL;
}

static const ir_node *node_named(const ir_module *m, const char *name)
{
	int n = test_node(m, name);
	return n >= 0 ? &test_graph(m)->nodes[n] : NULL;
}

static void merge_rules(void)
{
	ir_module *m = run_merge(false, 0);
	if (!m)
		return;
	const ir_func *f = test_graph(m);
	const ir_node *qkv = node_named(m, "layers.1.attn.k_flat");
	const ir_weight *w = qkv ? matrix_of(m, qkv) : NULL;
	const ir_attr *split = qkv ? ir_node_attr(qkv, "split") : NULL;
	CHECK(qkv && qkv->n_out == 3 && split && split->n_ints == 3 && w && w->n_parts == 3 && !w->interleave &&
	      strcmp(w->name, "layers.1.attn.wk+wq+wv") == 0 &&
	      strcmp(f->values[qkv->out[0]].name, "layers.1.attn.k_flat") == 0 &&
	      strcmp(f->values[qkv->out[1]].name, "layers.1.attn.q_flat") == 0 &&
	      strcmp(f->values[qkv->out[2]].name, "layers.1.attn.v_flat") == 0,
	      "q, k, v are not one split matmul over wk+wq+wv with results k, q, v");
	CHECK(test_node(m, "layers.1.attn.q_flat") < 0 && test_node(m, "layers.1.attn.v_flat") < 0,
	      "the merged q and v matmuls are still nodes");
	const ir_node *su = node_named(m, "layers.0.moe_ffn.s_u");
	w = su ? matrix_of(m, su) : NULL;
	CHECK(su && strcmp(ir_node_attr_str(su, "pair", ""), "swiglu") == 0 && w && w->interleave &&
	      w->n_parts == 2 && strcmp(m->weights[w->parts[0]].name, "layers.0.moe_ffn.sh_gate") == 0 &&
	      su->n_fused == 0 && test_node(m, "layers.0.moe_ffn.s_g") < 0,
	      "the shared expert's gate and up are not one pair matmul over sh_gate, sh_up");
	const char *apart[] = {"layers.0.moe_ffn.r_logits", "layers.0.gdn.a", "layers.0.gdn.b"};
	for (size_t i = 0; i < sizeof apart / sizeof *apart; i++) {
		const ir_node *n = node_named(m, apart[i]);
		CHECK(n && n->n_out == 1 && n->n_attr == 0, "%s was merged", apart[i]);
	}
	ir_module_free(m);

	m = run_merge(false, 33); /* k and v have 32 rows: q is left alone */
	qkv = m ? node_named(m, "layers.1.attn.q_flat") : NULL;
	CHECK(qkv && qkv->n_out == 1 && qkv->n_attr == 0, "q merged though k and v are under merge_min_rows");
	ir_module_free(m);

	m = run_merge(true, 0);
	for (int i = 0; m && i < test_graph(m)->n_nodes; i++)
		CHECK(test_graph(m)->nodes[i].n_attr == 0 || test_graph(m)->nodes[i].op != IR_OP_MATMUL,
		      "no_merge_matmuls: %s merged", test_graph(m)->nodes[i].name);
	ir_module_free(m);
}

/* DeepSeek V4's forms of existing ops (tests/passes/models/dsv4_rules.yaml). */
static void dsv4_rules(void)
{
	const char *model = "tests/passes/models/dsv4_rules.yaml", *config = "tests/passes/models/dsv4_rules.config.json";
	ir_module *m = test_run_to(model, config, "merge_matmuls", NULL);
	if (!m)
		return;
	const char *kept[] = {"xn", "qn"}; /* read by grouped matmuls; unweighted, a rope's */
	for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
		CHECK(test_node(m, kept[i]) >= 0, "the norm %s was fused", kept[i]);
	/* An unweighted norm read by a plain matmul is its bare prologue:
	 * no norm weight operand, and the matmul's weight is not folded. */
	const ir_node *q = node_named(m, "q");
	CHECK(test_node(m, "u") < 0 && q && q->n_fused == 1 && q->fused[0].pos == IR_FUSE_PROLOGUE &&
		      q->fused[0].op == IR_OP_RMS_NORM && q->fused[0].n_extra == 0 && !matrix_of(m, q)->folded,
	      "the unweighted norm u is not q's bare prologue");
	const char *alone[] = {"oa", "ob", "qr"};
	for (size_t i = 0; i < sizeof alone / sizeof *alone; i++) {
		const ir_node *n = node_named(m, alone[i]);
		CHECK(n && n->n_fused == 0 && n->n_out == 1, "%s took a prologue or was merged", alone[i]);
	}
	ir_module_free(m);
	m = test_run_to(model, config, "check_barriers", NULL);
	if (!m)
		return;
	const ir_node *gu = node_named(m, "y.gate_up"), *down = node_named(m, "y");
	CHECK(gu && gu->op == IR_OP_MOE_GATE_UP && ir_node_attr_float(gu, "limit", 0) == 7.0, "y.gate_up lost the limit");
	CHECK(down && down->op == IR_OP_MOE_DOWN && down->n_attr == 0, "moe_down kept the experts' attributes");
	gu = node_named(m, "y2.gate_up");
	CHECK(gu && gu->op == IR_OP_MOE_GATE_UP && gu->n_attr == 0, "y2.gate_up has a limit it was not given");
	ir_module_free(m);
}

/* Node `name` is `op` with int attribute `attr` = want (NULL: no attributes). */
static bool node_is(const ir_module *m, const char *name, ir_op op, const char *attr, int64_t want)
{
	const ir_node *n = node_named(m, name);
	return n && n->op == op && (attr ? ir_node_attr_int(n, attr, -1) == want : n->n_attr == 0);
}

/* The shape of value `name` of the graph, as text. */
static const char *shape_of(const ir_module *m, const char *name)
{
	static char buf[128];
	const ir_func *f = test_graph(m);
	int v = ir_func_value(f, name);
	if (v < 0)
		return "(none)";
	const ir_shape *s = &f->values[v].shape;
	int at = 0;
	for (int i = 0; i < s->rank && at < (int)sizeof buf - 24; i++)
		at += snprintf(buf + at, sizeof buf - (size_t)at, "%s%lld%s", i ? "," : "",
			       (long long)s->dim[i].c, s->dim[i].coef_T ? "+T" : "");
	return buf;
}

/* The hyper-connection read of Qwen3.8 Flash gates the normed streams, which
 * its down and inject matmuls read too: fuse_gates folds the multiply into
 * the gate's own chain instead, so after fuse_elementwise the mix_up matmul
 * ends in sigmoid, then mul by the streams (one dispatch, not two). */
static void gate_chain_rules(void)
{
	ir_module *m = test_run_to("models/qwen4_exp.yaml", "tests/fixtures/qwen4_exp_tiny/config.json",
				   "fuse_elementwise", NULL);
	if (!m)
		return;
	const ir_node *up = node_named(m, "layers.0.gdn.a_up");
	CHECK(up && up->op == IR_OP_MATMUL && up->n_fused == 2 && up->fused[0].op == IR_OP_SIGMOID &&
		      up->fused[1].op == IR_OP_MUL && up->fused[1].n_extra == 1 &&
		      strcmp(test_graph(m)->values[up->fused[1].extra[0]].name, "layers.0.gdn.a_n") == 0,
	      "layers.0.gdn.a_up is not the matmul with sigmoid, then mul by the normed streams");
	CHECK(test_node(m, "layers.0.gdn.a_mn") < 0 || node_named(m, "layers.0.gdn.a_mn") == up,
	      "the gate multiply is still a node of its own");
	ir_module_free(m);
}

static void dsv4_split_rules(void)
{
	ir_module *m = test_run_to("tests/passes/models/dsv4_split.yaml", "tests/passes/models/dsv4_split.config.json",
				   "split_attention", NULL);
	if (!m)
		return;
	CHECK(node_is(m, "picks.score", IR_OP_INDEX_SCORE, "block", 128), "picks.score is not index_score, block 128");
	CHECK(node_is(m, "picks", IR_OP_INDEX_SELECT, "k", 512), "picks is not index_select with k 512");
	CHECK(ir_node_attr_int(node_named(m, "picks"), "ratio", 0) == 4 && node_named(m, "picks")->n_attr == 2,
	      "index_select keeps k and ratio alone");
	CHECK(strcmp(shape_of(m, "picks.scores"), "0+T,8192") == 0, "scores shaped %s", shape_of(m, "picks.scores"));
	const struct {
		const char *name, *part_shape;
	} split[] = {{"a_win", "0+T,4,2,34"}, {"a_hca", "0+T,4,6,34"}, {"a_csa", "0+T,4,10,34"}};
	for (size_t i = 0; i < sizeof split / sizeof *split; i++) {
		char partial[64], part[64];
		snprintf(partial, sizeof partial, "%s.partial", split[i].name);
		snprintf(part, sizeof part, "%s.part", split[i].name);
		CHECK(node_is(m, partial, IR_OP_SINK_ATTENTION_PARTIAL, "block", 64), "%s: no partial, block 64", partial);
		CHECK(ir_node_attr_int(node_named(m, partial), "window", 0) == 128, "%s lost the window", partial);
		CHECK(node_is(m, split[i].name, IR_OP_ATTENTION_COMBINE, NULL, 0), "%s is not a bare combine",
		      split[i].name);
		CHECK(test_node(m, partial) + 1 == test_node(m, split[i].name), "%s is not right before its combine",
		      partial);
		CHECK(strcmp(shape_of(m, part), split[i].part_shape) == 0, "%s shaped %s, want %s", part, shape_of(m, part),
		      split[i].part_shape);
	}
	CHECK(node_is(m, "picks_few", IR_OP_INDEX_TOPK, "k", 2), "the 64-entry indexer was split");
	CHECK(node_is(m, "a_few", IR_OP_SINK_ATTENTION, "window", 8), "the 10-key sink_attention was split");
	ir_module_free(m);
}

/* QSA's masked_attention over a 256-row cache becomes
 * masked_attention_blocks over 4 blocks of 64 keys: (q, k, v, sync, mask),
 * its sync state read just before it, the blocks' sums its second result;
 * its qsa_select becomes qsa_select_blocks (q, keys, k_norm, sync), a
 * counter a token. */
static void masked_split_rules(void)
{
	ir_module *m = test_run_to("models/qwen4_exp.yaml", "tests/fixtures/qwen4_exp_tiny/config.json",
				   "split_attention", NULL);
	if (!m)
		return;
	const ir_func *f = test_graph(m);
	const ir_node *att = node_named(m, "layers.2.qsa.att");
	CHECK(node_is(m, "layers.2.qsa.att", IR_OP_MASKED_ATTENTION_BLOCKS, "block", 64) && att->n_in == 5 &&
		      att->n_out == 2,
	      "layers.2.qsa.att is not masked_attention_blocks (5 operands, 2 results) over blocks of 64 keys");
	if (att && att->n_in == 5) {
		int sync = f->values[att->in[3]].producer;
		CHECK(sync >= 0 && f->nodes[sync].op == IR_OP_STATE_READ &&
			      strcmp(m->states[f->nodes[sync].ref].kind, "sync") == 0 &&
			      sync < test_node(m, "layers.2.qsa.att"),
		      "operand 3 is not the sync state, read before the node");
		CHECK(strcmp(f->values[att->in[4]].name, "layers.2.qsa.sel") == 0, "operand 4 is %s, not the mask",
		      f->values[att->in[4]].name);
	}
	CHECK(strcmp(shape_of(m, "layers.2.qsa.att.part"), "0+T,4,4,18") == 0, "part shaped %s",
	      shape_of(m, "layers.2.qsa.att.part"));
	CHECK(count_op(f, IR_OP_MASKED_ATTENTION) == 0, "a masked_attention was left unsplit");
	const ir_node *sel = node_named(m, "layers.2.qsa.sel");
	CHECK(sel && sel->op == IR_OP_QSA_SELECT_BLOCKS && sel->n_in == 4 && sel->n_attr == 5,
	      "layers.2.qsa.sel is not qsa_select_blocks (4 operands) with qsa_select's attributes");
	if (sel && sel->n_in == 4) {
		int sync = f->values[sel->in[3]].producer;
		const ir_state *st = sync >= 0 ? &m->states[f->nodes[sync].ref] : NULL;
		CHECK(st && f->nodes[sync].op == IR_OP_STATE_READ && strcmp(st->kind, "sync") == 0 &&
			      st->shape.dim[1].c == 1 && sync < test_node(m, "layers.2.qsa.sel"),
		      "qsa_select_blocks' operand 3 is not a sync state of a counter a token, read before it");
	}
	ir_module_free(m);
}

static void set_no_store(ir_module *m, const void *off)
{
	m->no_fuse_state_store = *(const bool *)off;
}

static void state_store_rules(void)
{
	bool off = false;
	ir_module *m = run_one_pass(MODEL, CONFIG, "fuse_state_store", set_no_store, &off);
	if (!m)
		return;
	const ir_func *f = test_graph(m);
	int n_in_place = 0;
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		if (n->op != IR_OP_STATE_WRITE)
			continue;
		bool at_pos = strcmp(ir_node_attr_str(n, "at", ""), "pos") == 0;
		CHECK(n->in_place == at_pos, "%s: in_place %d for a write %s", n->name, n->in_place,
		      at_pos ? "at pos" : "of the whole state");
		n_in_place += n->in_place;
	}
	CHECK(n_in_place == 2, "%d in-place writes, want the k and v cache writes", n_in_place);
	ir_module_free(m);

	off = true;
	m = run_one_pass(MODEL, CONFIG, "fuse_state_store", set_no_store, &off);
	for (int i = 0; m && i < test_graph(m)->n_nodes; i++)
		CHECK(!test_graph(m)->nodes[i].in_place, "no_fuse_state_store: %s in place", test_graph(m)->nodes[i].name);
	ir_module_free(m);
}

static void every_write_stays_a_copy(void)
{
	bool off = false;
	ir_module *m = run_one_pass("tests/models/dsv4_attention.yaml", "tests/models/dsv4_attention.config.json",
				    "fuse_state_store", set_no_store, &off);
	if (!m)
		return;
	const ir_node *kv = node_named(m, "kv_store"), *entry = node_named(m, "entry_store");
	const ir_node *key = node_named(m, "key_store");
	CHECK(kv && kv->in_place, "the rope's KV-cache write is not in place");
	CHECK(entry && !entry->in_place && key && !key->in_place, "a write with every was made in place");
	ir_module_free(m);
}

static void set_no_rope(ir_module *m, const void *off)
{
	m->no_fuse_attention_rope = *(const bool *)off;
}

/* The ids of the effect nodes on module state `name` in f, in node order
 * (at most 4). */
static int effects_of(const ir_module *m, const ir_func *f, const char *name, int *out)
{
	int n = 0, s = ir_module_state(m, name);
	for (int i = 0; i < f->n_nodes && n < 4; i++)
		if ((f->nodes[i].op == IR_OP_STATE_READ || f->nodes[i].op == IR_OP_STATE_WRITE) &&
		    !f->nodes[i].ref_local && f->nodes[i].ref == s)
			out[n++] = i;
	return n;
}

static void attention_rope_rules(void)
{
	bool off = false;
	ir_module *m = run_one_pass(MODEL, CONFIG, "fuse_attention_rope", set_no_rope, &off);
	if (!m)
		return;
	int dec = entry_func(m, "decode"), ver = entry_func(m, "verify"), pre = entry_func(m, "prefill");
	CHECK(dec >= 0 && strcmp(m->funcs[dec].name, "forward.rope") == 0, "decode runs %s, want forward.rope",
	      dec >= 0 ? m->funcs[dec].name : "nothing");
	CHECK(pre >= 0 && pre != dec && ver != pre, "the prompt shares a fused graph");
	for (int k = 0; dec >= 0 && ver >= 0 && pre >= 0 && k < 2; k++) {
		const ir_func *f = &m->funcs[k ? ver : dec];
		CHECK(count_op(f, IR_OP_ATTENTION_ROPE) == 1 && count_op(f, IR_OP_ROPE) == 0 &&
			      count_op(f, IR_OP_ATTENTION_BLOCKS) == 0,
		      "%s: %d attention_rope, %d rope, %d attention_blocks", f->name, count_op(f, IR_OP_ATTENTION_ROPE),
		      count_op(f, IR_OP_ROPE), count_op(f, IR_OP_ATTENTION_BLOCKS));
		int eff[4], n = effects_of(m, f, "layers.1.attn.k_cache", eff);
		const ir_node *w = n == 2 ? &f->nodes[eff[1]] : NULL;
		CHECK(n == 2 && f->nodes[eff[0]].op == IR_OP_STATE_READ && w->op == IR_OP_STATE_WRITE && w->in_place,
		      "%s: the k cache's effects are not its read, then the in-place write", f->name);
		int p = w ? f->values[w->in[0]].producer : -1;
		CHECK(p >= 0 && f->nodes[p].op == IR_OP_ATTENTION_ROPE && p < eff[1] && f->values[w->in[0]].producer_out == 2,
		      "%s: the write's value is not attention_rope's third result, made before it", f->name);
	}
	if (pre >= 0)
		CHECK(count_op(&m->funcs[pre], IR_OP_ROPE) == 2 && count_op(&m->funcs[pre], IR_OP_ATTENTION_ROPE) == 0,
		      "the prompt's graph lost its ropes");
	ir_module_free(m);

	off = true;
	m = run_one_pass(MODEL, CONFIG, "fuse_attention_rope", set_no_rope, &off);
	for (int i = 0; m && i < m->n_funcs; i++)
		CHECK(count_op(&m->funcs[i], IR_OP_ATTENTION_ROPE) == 0 && !strstr(m->funcs[i].name, ".rope"),
		      "no_fuse_attention_rope: %s fused", m->funcs[i].name);
	ir_module_free(m);
}

/* The first live node of f with op `op`, or -1. */
static int first_op(const ir_func *f, ir_op op)
{
	for (int i = 0; i < f->n_nodes; i++)
		if (!f->nodes[i].dead && f->nodes[i].op == op)
			return i;
	return -1;
}

static void inject_norm_rules(void)
{
	static const char *model = "models/qwen4_exp.yaml", *config = "tests/fixtures/qwen4_exp_tiny/config.json";
	ir_module *m = test_run_to(model, config, "fuse_inject_norm", NULL);
	if (!m)
		return;
	const ir_func *f = test_graph(m);
	int n = test_node(m, "layers.0.moe_ffn.m_n"), ple = test_node(m, "layers.1.gdn_ple.pqn");
	const ir_node *fz = n >= 0 ? &f->nodes[n] : NULL;
	CHECK(fz && fz->op == IR_OP_HC_INJECT_NORM && fz->n_in == 4 && fz->n_out == 2 &&
		      strcmp(f->values[fz->in[0]].name, "layers.0.gdn.x3") == 0 &&
		      strcmp(f->values[fz->out[0]].name, "layers.0.gdn.y") == 0 &&
		      strcmp(f->values[fz->out[1]].name, "layers.0.moe_ffn.m_n") == 0 && !ir_node_attr(fz, "group") &&
		      ir_node_attr_int(fz, "offset", 0) == 1 && ir_node_attr(fz, "eps"),
	      "layers.0.moe_ffn.m_n is not the hc_inject_norm of layers.0.gdn's exit");
	CHECK(ple >= 0 && f->nodes[ple].op == IR_OP_HC_INJECT_NORM, "the PLE query norm took no inject");
	CHECK(first_op(f, IR_OP_HC_INJECT) < 0, "an hc_inject is left");
	ir_module_free(m);

	/* the same graph with that norm over whole rows */
	m = test_run_to(model, config, "fuse_elementwise", NULL);
	if (!m)
		return;
	ir_func *g = &m->funcs[m->entries[0].func];
	n = ir_func_node(g, "layers.0.moe_ffn.m_n");
	for (int k = 0; n >= 0 && k < g->nodes[n].n_attr; k++)
		if (strcmp(g->nodes[n].attr[k].name, "group") == 0)
			g->nodes[n].attr[k].i = 0;
	ir_error err = {0};
	CHECK(n >= 0 && pass_fuse_inject_norm(m, &err), "%s", err.msg);
	n = ir_func_node(g, "layers.0.moe_ffn.m_n");
	CHECK(n >= 0 && g->nodes[n].op == IR_OP_RMS_NORM && ir_func_node(g, "layers.0.gdn.sum3") >= 0,
	      "a whole-row norm took the inject in");
	ir_module_free(m);
}

int main(void)
{
	call_site_mismatch();
	expansion_names();
	dce_keeps_sinks();
	norm_fusion();
	norm_fusion_large_readers();
	epilogue_hosts();
	cycle_and_bad_edge();
	output_aliasing_state();
	state_slots_graph();
	state_slots_refusal();
	entry_tokens_graph();
	gate_chain_rules();
	norm_rope_fusion();
	merge_rules();
	state_store_rules();
	dsv4_rules();
	dsv4_split_rules();
	masked_split_rules();
	every_write_stays_a_copy();
	attention_rope_rules();
	inject_norm_rules();
	return test_finish("pass_rules_test");
}
