/* Per-state effect lists and state_read readers (see state_effects.h). */
#include "passes/state_effects.h"

#include <stdlib.h>

static bool is_effect(const ir_node *n)
{
	return n->op == IR_OP_STATE_READ || n->op == IR_OP_STATE_WRITE;
}

/* Orders effects by state (module states, then block-local ones), then by
 * node id: node order inside a group is program order before scheduling. */
static const ir_func *cmp_func;

static int cmp_effect(const void *pa, const void *pb)
{
	const ir_node *a = &cmp_func->nodes[*(const int *)pa];
	const ir_node *b = &cmp_func->nodes[*(const int *)pb];
	if (a->ref_local != b->ref_local)
		return a->ref_local ? 1 : -1;
	if (a->ref != b->ref)
		return a->ref < b->ref ? -1 : 1;
	return *(const int *)pa - *(const int *)pb;
}

void state_effects_build(const ir_func *f, state_effects *se)
{
	se->node = calloc((size_t)f->n_nodes + 1, sizeof(int));
	se->start = calloc((size_t)f->n_nodes + 2, sizeof(int));
	if (!se->node || !se->start)
		abort();
	int n = 0;
	for (int i = 0; i < f->n_nodes; i++)
		if (is_effect(&f->nodes[i]))
			se->node[n++] = i;
	cmp_func = f;
	qsort(se->node, (size_t)n, sizeof(int), cmp_effect);
	se->n_groups = 0;
	for (int k = 0; k < n; k++) {
		const ir_node *cur = &f->nodes[se->node[k]];
		const ir_node *prev = k ? &f->nodes[se->node[k - 1]] : NULL;
		if (!prev || prev->ref != cur->ref || prev->ref_local != cur->ref_local)
			se->start[se->n_groups++] = k;
	}
	se->start[se->n_groups] = n;
}

void state_effects_free(state_effects *se)
{
	free(se->start);
	free(se->node);
	*se = (state_effects){0};
}

static int collect(const ir_func *f, const func_uses *u, int v, int *out, int cnt)
{
	for (int k = u->start[v]; k < u->start[v + 1]; k++) {
		int c = u->user[k];
		if (f->nodes[c].op == IR_OP_RESHAPE) {
			cnt = collect(f, u, f->nodes[c].out[0], out, cnt);
			continue;
		}
		bool seen = false;
		for (int j = 0; j < cnt && !seen; j++)
			seen = out[j] == c;
		if (!seen)
			out[cnt++] = c;
	}
	return cnt;
}

int state_read_readers(const ir_func *f, const func_uses *u, int r, int *out)
{
	return collect(f, u, f->nodes[r].out[0], out, 0);
}

int state_write_source(const ir_func *f, int n)
{
	if (f->nodes[n].op != IR_OP_STATE_WRITE || !f->nodes[n].in_place)
		return -1;
	int v = f->nodes[n].in[0], p;
	while ((p = f->values[v].producer) >= 0 && f->nodes[p].op == IR_OP_RESHAPE)
		v = f->nodes[p].in[0];
	return v;
}

int state_effect_writer(const ir_func *f, int n)
{
	int v = state_write_source(f, n);
	return v >= 0 && f->values[v].producer >= 0 ? f->values[v].producer : n;
}
