/* pass_fuse_state_store: a KV-cache write `state_write at: pos` whose value
 * comes straight from a rope or a matmul is made in place: the producer
 * writes its result into the state's rows pos.. itself (node.in_place on the
 * write, which stays in the graph as the effect's marker but is no dispatch).
 *
 * Why: in decode every attention layer wrote its new key and value rows
 * with two copy dispatches of a few KB each, one behind a barrier of its
 * own (on the H200 4.0 us each, bench/results-h200-qwen3_8b.txt); the rope
 * that makes the keys and the merged q/k/v matmul that makes the values
 * can store them where they belong.
 *
 * Conditions, each needed for the write to keep its meaning:
 *   - the write is `at: pos` into a module state (positional rows of the
 *     step's T tokens), and its value's rows are the step's T tokens; not
 *     with `every` (one row per closed window: the producer's row t does
 *     not land at row pos + t);
 *   - the value, and every reshape between it and the write, has exactly
 *     one reader and is no graph output: nobody else reads the rows that
 *     now live in the state;
 *   - the producer is a rope or a matmul (their kernels' stores take a row
 *     offset: kernels/vulkan/rope.comp, matmul_out.glsl), with one row of
 *     the value per token;
 *   - no effect on the same state is listed before the write: the producer,
 *     which now performs the write, runs wherever its inputs allow, so an
 *     earlier read or write of the state could otherwise be overtaken
 *     (order_effects would have to order the producer after it, and that
 *     producer may feed the earlier effect). check_effects checks the
 *     producer, not the marker, as the write. */
#include "passes/fuse_common.h"
#include "passes/passes.h"

#include <string.h>

/* The value in_place writes would take over: v's producer result, looking
 * up through single-reader reshapes; -1 when a link has another reader. */
static int produced_value(const ir_func *f, const func_uses *u, int v)
{
	for (;;) {
		if (u->is_output[v] || func_uses_count(u, v) != 1)
			return -1;
		int p = f->values[v].producer;
		if (p < 0)
			return -1;
		if (f->nodes[p].op != IR_OP_RESHAPE)
			return v;
		v = f->nodes[p].in[0];
	}
}

/* Whether an effect on state s is listed before node w. */
static bool earlier_effect(const ir_func *f, int w, int s)
{
	for (int i = 0; i < w; i++) {
		const ir_node *n = &f->nodes[i];
		if (!n->dead && !n->ref_local && n->ref == s &&
		    (n->op == IR_OP_STATE_READ || n->op == IR_OP_STATE_WRITE))
			return true;
	}
	return false;
}

static bool token_rows(const ir_shape *s)
{
	if (s->rank < 1 || s->dim[0].coef_T != 1 || s->dim[0].c != 0)
		return false;
	for (int i = 1; i < s->rank; i++)
		if (s->dim[i].coef_T)
			return false;
	return true;
}

static bool can_store(const ir_func *f, const func_uses *u, int w)
{
	const ir_node *n = &f->nodes[w];
	const ir_attr *at = ir_node_attr(n, "at");
	if (n->dead || n->op != IR_OP_STATE_WRITE || n->ref_local || n->in_place || !at ||
	    at->kind != IR_ATTR_STR || strcmp(at->s, "pos") != 0 || ir_node_attr(n, "every") ||
	    ir_node_attr_int(n, "ring", 0))
		return false;
	int v = produced_value(f, u, n->in[0]);
	if (v < 0 || !token_rows(&f->values[v].shape) || !token_rows(&f->values[n->in[0]].shape))
		return false;
	ir_op op = f->nodes[f->values[v].producer].op;
	return (op == IR_OP_ROPE || op == IR_OP_MATMUL) && !earlier_effect(f, w, n->ref);
}

/* Marks node w in place when it qualifies; folds nothing, so no compaction. */
static bool mark_node(ir_module *m, ir_func *f, const func_uses *u, int w)
{
	(void)m;
	if (can_store(f, u, w))
		f->nodes[w].in_place = true;
	return false;
}

bool pass_fuse_state_store(ir_module *m, ir_error *err)
{
	(void)err;
	if (!m->no_fuse_state_store)
		fuse_each_node(m, mark_node);
	return true;
}
