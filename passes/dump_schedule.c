/* The schedule view of a plan (see plan_dump.h). */
#include "passes/plan_dump.h"

/* A read shows where it comes from when that is not an activation. */
static void print_value(const ir_func *f, const plan_entry *e, int v, FILE *out)
{
	const plan_buffer *b = &e->buffers[e->value_buffer[v]];
	fputs(f->values[v].name ? f->values[v].name : "?", out);
	if (b->region == PLAN_STATE)
		fprintf(out, "=state:%s%s", b->name, e->value_at_pos[v] ? "@pos" : "");
}

/* Whether matmul n's weight (a merged one's parts) has a norm weight
 * folded in; else a bare prologue's norm had none. */
static bool weight_folded(const ir_module *m, const ir_func *f, const ir_node *n)
{
	int p = n->n_in > 1 ? f->values[n->in[1]].producer : -1;
	const ir_node *wn = p >= 0 ? &f->nodes[p] : NULL;
	if (!wn || wn->op != IR_OP_WEIGHT || wn->ref_local || wn->ref < 0)
		return false;
	const ir_weight *w = &m->weights[wn->ref];
	return w->n_parts ? m->weights[w->parts[0]].folded : w->folded;
}

static void print_fused(const ir_module *m, const ir_func *f, const ir_node *n, FILE *out)
{
	for (int k = 0; k < n->n_fused; k++) {
		const ir_fused *fz = &n->fused[k];
		fprintf(out, " [%s %s", fz->pos == IR_FUSE_PROLOGUE ? "pro" : "epi", ir_op_name(fz->op));
		for (int j = 0; j < fz->n_extra; j++)
			fprintf(out, "%s%s", j ? ", " : " ", f->values[fz->extra[j]].name);
		if (fz->pos == IR_FUSE_PROLOGUE && fz->n_extra == 0)
			fputs(weight_folded(m, f, n) ? " (weight folded)" : " (no weight)", out);
		fputc(']', out);
	}
}

static void print_dispatch(const ir_module *m, const ir_func *f, const plan_entry *e, int d,
			   FILE *out)
{
	const plan_dispatch *pd = &e->dispatch[d];
	const ir_node *n = &f->nodes[pd->node];
	fprintf(out, "%4d %c %s %s:", d, pd->barrier ? '|' : ' ', ir_op_name(n->op), n->name);
	if (n->op == IR_OP_STATE_WRITE)
		fprintf(out, " state:%s", m->states[n->ref].name);
	for (int k = 0; k < n->n_out; k++) {
		fputs(k ? ", " : " ", out);
		print_value(f, e, n->out[k], out);
	}
	fputs(" <-", out);
	for (int k = 0; k < n->n_in; k++) {
		fputs(k ? ", " : " ", out);
		print_value(f, e, n->in[k], out);
	}
	print_fused(m, f, n, out);
	fputc('\n', out);
}

void plan_dump_schedule(const ir_module *m, const plan_entry *e, FILE *out)
{
	const ir_func *f = &m->funcs[e->func];
	fprintf(out, "# entry %s: graph %s, T <= %lld, %d dispatches, %d barriers ('|' = barrier before)\n",
		e->name, f->name, (long long)e->t_max, e->n_dispatch, e->n_barriers);
	for (int d = 0; d < e->n_dispatch; d++)
		print_dispatch(m, f, e, d, out);
}
