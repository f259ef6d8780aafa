/* weights / state declarations (module-level or block-local). */
#include "ir/read_parts.h"

#include <stdio.h>
#include <string.h>

static const char *const weight_keys[] = {"shape", "hf", "fallback", "dtype", "transform", NULL};
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
	return w->transform != NULL && check_stack(rd, hf, fb, w);
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
