/* The `draft:` section: a draft head (MTP) kept apart from the target so
 * that a config without one, or `halo compile --no-mtp`, compiles exactly
 * the target: no head state, no hidden-state export, no draft entries.
 *
 *   draft:
 *     layers: mtp_layers        # 0: the section is skipped
 *     state:   {...}            # module states of the head (e.g. the export)
 *     export:                   # target values the head reads, written as
 *       - {graph: forward, value: xn, state: mtp_hidden}   # rows at pos
 *     graphs:  {...}            # the head's graphs (op block for its layer)
 *     entries: {...}            # usually position: caller
 *
 * The export is a state_write sink appended to the target graph: the
 * hidden state reaches the head through device memory, written in the
 * schedule's explicit effect order like every other cache write. */
#include "ir/read_parts.h"

#include <stdio.h>
#include <string.h>

static const char *const draft_keys[] = {"layers", "state", "export", "graphs", "entries", NULL};
static const char *const export_keys[] = {"graph", "value", "state", NULL};

bool rd_draft_wanted(rd_ctx *rd, const yaml_node_t *draft, bool *on)
{
	*on = false;
	if (!draft)
		return true;
	if (!rd_want_map(rd, draft, "draft") || !rd_check_keys(rd, draft, draft_keys, "draft"))
		return false;
	yaml_node_t *ln = rd_need(rd, draft, "layers", "draft");
	yaml_node_t *g = ln ? rd_need(rd, draft, "graphs", "draft") : NULL;
	int64_t n;
	if (!g || !rd_need(rd, draft, "entries", "draft") || !rd_int(rd, ln, "draft layers", &n))
		return false;
	if (n < 0 || n > 1)
		return rd_fail(rd, ln, "draft: %lld MTP layers; halo serves 0 or 1 (one layer applied recursively "
			       "for k drafts, as the released checkpoints do)", (long long)n);
	*on = n == 1;
	return true;
}

/* Appends the section's states to the module table. */
bool rd_draft_states(rd_ctx *rd, const yaml_node_t *draft)
{
	yaml_node_t *sn = rd_get(rd, draft, "state");
	ir_module *m = rd->m;
	ir_state *add;
	int n_add;
	if (!sn)
		return true;
	if (!rd_states(rd, sn, &add, &n_add))
		return false;
	for (int i = 0; i < n_add; i++)
		if (ir_module_state(m, add[i].name) >= 0)
			return rd_fail(rd, sn, "draft state '%s' is declared twice", add[i].name);
	ir_state *all = ir_arena_alloc(&m->arena, (size_t)(m->n_states + n_add) * sizeof(ir_state));
	if (m->n_states)
		memcpy(all, m->states, (size_t)m->n_states * sizeof(ir_state));
	memcpy(all + m->n_states, add, (size_t)n_add * sizeof(ir_state));
	m->states = all;
	m->n_states += n_add;
	m->cap_states = m->n_states;
	return true;
}

static bool read_export(rd_ctx *rd, const yaml_node_t *item)
{
	ir_module *m = rd->m;
	if (!rd_want_map(rd, item, "an export") || !rd_check_keys(rd, item, export_keys, "an export"))
		return false;
	yaml_node_t *gn = rd_need(rd, item, "graph", "an export"), *vn = gn ? rd_need(rd, item, "value", "an export") : NULL;
	yaml_node_t *sn = vn ? rd_need(rd, item, "state", "an export") : NULL;
	const char *gname = sn ? rd_scalar(rd, gn, "a graph name") : NULL;
	const char *vname = gname ? rd_scalar(rd, vn, "a value name") : NULL;
	const char *sname = vname ? rd_scalar(rd, sn, "a state name") : NULL;
	if (!sname)
		return false;
	int f = ir_module_func(m, gname), st = ir_module_state(m, sname);
	if (f < 0 || m->funcs[f].is_block)
		return rd_fail(rd, gn, "export: unknown graph '%s'", gname);
	int v = ir_func_value(&m->funcs[f], vname);
	if (v < 0)
		return rd_fail(rd, vn, "export: graph '%s' has no value '%s'", gname, vname);
	if (st < 0)
		return rd_fail(rd, sn, "export: unknown state '%s' (declare it under draft: state:)", sname);
	const char *name = ir_arena_printf(&m->arena, "%s_export", sname);
	if (!rd_name_free(rd, &m->funcs[f], item, name))
		return false;
	int nid = ir_func_add_node(m, &m->funcs[f], IR_OP_STATE_WRITE, name, rd_loc(rd, item));
	ir_node *n = &m->funcs[f].nodes[nid];
	n->in = ir_arena_alloc(&m->arena, sizeof(int));
	n->in[0] = v;
	n->n_in = 1;
	n->ref = st;
	ir_attr at = {.name = "at", .kind = IR_ATTR_STR, .s = "pos"};
	ir_node_add_attr(m, &m->funcs[f], nid, &at);
	return true;
}

bool rd_draft_exports(rd_ctx *rd, const yaml_node_t *draft)
{
	yaml_node_t *ex = rd_get(rd, draft, "export");
	if (!ex)
		return true;
	if (!rd_want_seq(rd, ex, "export"))
		return false;
	for (int i = 0; i < rd_seq_len(ex); i++)
		if (!read_export(rd, rd_seq_item(rd, ex, i)))
			return false;
	return true;
}
