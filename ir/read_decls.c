/* weights / state declarations (module-level or block-local). */
#include "ir/read_parts.h"

#include <stdio.h>
#include <string.h>

static const char *const weight_keys[] = {"shape", "hf", "fallback", "dtype", "transform", "rows", NULL};
static const char *const rows_keys[] = {"groups", "take", NULL};
static const char *const state_keys[] = {"shape", "kind", "dtype", NULL};
static const char *const transforms[] = {"none", "offset1", "transpose", "stack", "stack_pad", NULL};
static const char *const state_kinds[] = {"kv", "conv", "ssm", "indexer", "ngram", "hidden", NULL};

/* "stack" builds dim 0 from one checkpoint tensor per value of {e} in the
 * name (codegen/weights.c), so {e} belongs in every name of a stack and in
 * no other weight's. */
static bool check_stack(rd_ctx *rd, const yaml_node_t *hf, const yaml_node_t *fb, const ir_weight *w)
{
	bool stack = strcmp(w->transform, "stack") == 0 || strcmp(w->transform, "stack_pad") == 0;
	if (stack && w->shape.rank < 2)
		return rd_fail(rd, hf, "weight '%s': transform 'stack' needs a rank >= 2 shape (dim 0 is the {e} index)",
			       w->name);
	const yaml_node_t *nodes[] = {hf, fb};
	const char *names[] = {w->hf_name, w->hf_fallback};
	for (int i = 0; i < 2; i++) {
		if (!names[i] || (strstr(names[i], "{e}") != NULL) == stack)
			continue;
		if (stack)
			return rd_fail(rd, nodes[i], "weight '%s': transform 'stack' needs '{e}' (the dim 0 index) in '%s'",
				       w->name, names[i]);
		return rd_fail(rd, nodes[i], "weight '%s': '{e}' in '%s' needs transform: stack", w->name, names[i]);
	}
	return true;
}

/* `rows: {groups: G, take: [[start, len], ...]}`: a weight made of some rows
 * of every group of a checkpoint tensor whose dim 0 holds G groups (Qwen3-Next
 * interleaves each key head's q, k, v and z rows in one matrix; a model
 * takes its q, k, v rows as one weight and its z rows as another). The
 * declared dim 0 is G times the ranges' lengths; that the tensor's groups
 * hold every range is checked when it is read (codegen/weights.c). */
static bool read_rows(rd_ctx *rd, const yaml_node_t *spec, ir_weight *w)
{
	char what[200];
	snprintf(what, sizeof(what), "the rows of weight '%s'", w->name);
	if (!rd_want_map(rd, spec, what) || !rd_check_keys(rd, spec, rows_keys, what))
		return false;
	yaml_node_t *groups = rd_need(rd, spec, "groups", what), *take = groups ? rd_need(rd, spec, "take", what) : NULL;
	if (!take || !rd_int(rd, groups, "a group count", &w->rows_groups))
		return false;
	int64_t rows = w->shape.dim[0].c; /* the declared dim 0: at most RD_MAX_DIM, so no sum below overflows */
	if (w->rows_groups < 1 || w->rows_groups > rows)
		return rd_fail(rd, groups, "weight '%s': rows: groups must be 1 to %lld (its shape's dim 0), not %lld",
			       w->name, (long long)rows, (long long)w->rows_groups);
	if (!rd_want_seq(rd, take, "a list of [start, len] row ranges"))
		return false;
	int n = rd_seq_len(take);
	if (n < 1)
		return rd_fail(rd, take, "weight '%s': rows: take lists no row range", w->name);
	int64_t *t = ir_arena_alloc(&rd->m->arena, (size_t)n * 2 * sizeof(int64_t)), sum = 0;
	for (int k = 0; k < n; k++) {
		yaml_node_t *r = rd_seq_item(rd, take, k);
		if (!rd_want_seq(rd, r, "a [start, len] row range"))
			return false;
		if (rd_seq_len(r) != 2)
			return rd_fail(rd, r, "weight '%s': a row range is [start, len], two values", w->name);
		if (!rd_int(rd, rd_seq_item(rd, r, 0), "a first row", &t[2 * k]) ||
		    !rd_int(rd, rd_seq_item(rd, r, 1), "a row count", &t[2 * k + 1]))
			return false;
		if (t[2 * k] < 0 || t[2 * k] > RD_MAX_DIM || t[2 * k + 1] < 1 || t[2 * k + 1] > rows)
			return rd_fail(rd, r, "weight '%s': row range [%lld, %lld]: the start must be 0 to %lld, the length "
				       "1 to %lld", w->name, (long long)t[2 * k], (long long)t[2 * k + 1],
				       (long long)RD_MAX_DIM, (long long)rows);
		sum += t[2 * k + 1];
	}
	if (rows % w->rows_groups != 0 || rows / w->rows_groups != sum)
		return rd_fail(rd, spec, "weight '%s': rows: %lld groups of %lld rows are not its shape's dim 0, %lld",
			       w->name, (long long)w->rows_groups, (long long)sum, (long long)rows);
	if (strcmp(w->transform, "none") != 0 && strcmp(w->transform, "offset1") != 0)
		return rd_fail(rd, spec, "weight '%s': rows takes no transform '%s' (only none or offset1)", w->name,
			       w->transform);
	w->n_takes = n;
	w->takes = t;
	return true;
}

static bool read_weight(rd_ctx *rd, const yaml_node_t *spec, ir_weight *w)
{
	char what[200];
	snprintf(what, sizeof(what), "weight '%s'", w->name);
	if (!rd_want_map(rd, spec, what) || !rd_check_keys(rd, spec, weight_keys, what))
		return false;
	yaml_node_t *shape = rd_need(rd, spec, "shape", what), *hf = shape ? rd_need(rd, spec, "hf", what) : NULL;
	if (!shape || !hf)
		return false;
	snprintf(what, sizeof(what), "the shape of weight '%s'", w->name);
	if (!rd_shape(rd, shape, false, what, &w->shape) || !(w->hf_name = rd_str(rd, hf, "a tensor name")))
		return false;
	yaml_node_t *fb = rd_get(rd, spec, "fallback"), *dt = rd_get(rd, spec, "dtype");
	yaml_node_t *tr = rd_get(rd, spec, "transform");
	if (fb && !(w->hf_fallback = rd_str(rd, fb, "a tensor name")))
		return false;
	if (dt && !rd_dtype(rd, dt, &w->dtype))
		return false;
	w->transform = tr ? rd_choice(rd, tr, "transform", transforms) : "none";
	yaml_node_t *rows = rd_get(rd, spec, "rows");
	return w->transform != NULL && check_stack(rd, hf, fb, w) && (!rows || read_rows(rd, rows, w));
}

bool rd_weights(rd_ctx *rd, const yaml_node_t *map, ir_weight **out, int *n_out)
{
	if (!rd_want_map(rd, map, "weights"))
		return false;
	int n = rd_map_len(map);
	ir_weight *ws = ir_arena_alloc(&rd->m->arena, (size_t)(n ? n : 1) * sizeof(ir_weight));
	for (int i = 0; i < n; i++) {
		ir_weight *w = &ws[i];
		w->name = rd_str(rd, rd_map_key(rd, map, i), "a weight name");
		w->loc = rd_loc(rd, rd_map_key(rd, map, i));
		w->dtype = HALO_F32;
		w->layer = -1;
		if (!read_weight(rd, rd_map_val(rd, map, i), w))
			return false;
	}
	*out = ws;
	*n_out = n;
	return true;
}

static bool read_state(rd_ctx *rd, const yaml_node_t *spec, ir_state *s)
{
	char what[200];
	snprintf(what, sizeof(what), "state '%s'", s->name);
	if (!rd_want_map(rd, spec, what) || !rd_check_keys(rd, spec, state_keys, what))
		return false;
	yaml_node_t *shape = rd_need(rd, spec, "shape", what), *kind = shape ? rd_need(rd, spec, "kind", what) : NULL;
	if (!shape || !kind)
		return false;
	snprintf(what, sizeof(what), "the shape of state '%s'", s->name);
	if (!rd_shape(rd, shape, false, what, &s->shape) || !(s->kind = rd_choice(rd, kind, "state kind", state_kinds)))
		return false;
	yaml_node_t *dt = rd_get(rd, spec, "dtype");
	return !dt || rd_dtype(rd, dt, &s->dtype);
}

bool rd_states(rd_ctx *rd, const yaml_node_t *map, ir_state **out, int *n_out)
{
	if (!rd_want_map(rd, map, "state"))
		return false;
	int n = rd_map_len(map);
	ir_state *ss = ir_arena_alloc(&rd->m->arena, (size_t)(n ? n : 1) * sizeof(ir_state));
	for (int i = 0; i < n; i++) {
		ir_state *s = &ss[i];
		s->name = rd_str(rd, rd_map_key(rd, map, i), "a state name");
		s->loc = rd_loc(rd, rd_map_key(rd, map, i));
		s->dtype = HALO_F32;
		s->layer = -1;
		if (!read_state(rd, rd_map_val(rd, map, i), s))
			return false;
	}
	*out = ss;
	*n_out = n;
	return true;
}
