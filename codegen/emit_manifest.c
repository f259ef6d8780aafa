#include "codegen/emit_manifest.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device_features.h"

static const char *space_names[HALO_SPACE_COUNT] = {"weight", "state", "act"};

static void put(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

static json_object *i64(int64_t v)
{
	return json_object_new_int64(v);
}

static json_object *pair(int64_t a, int64_t b)
{
	json_object *p = json_object_new_array();
	json_object_array_add(p, i64(a));
	json_object_array_add(p, i64(b));
	return p;
}

static json_object *tensor_json(const halo_tensor_ref *t)
{
	json_object *o = json_object_new_object();
	put(o, "space", json_object_new_string(space_names[t->space]));
	put(o, "offset", i64((int64_t)t->offset));
	put(o, "dtype", json_object_new_string(halo_dtype_name(t->dtype)));
	json_object *shape = json_object_new_array();
	for (int i = 0; i < t->rank; i++)
		json_object_array_add(shape, pair(t->dim[i].coef_T, t->dim[i].c));
	put(o, "shape", shape);
	if (t->pos_rows)
		put(o, "pos_rows", i64(t->pos_rows));
	return o;
}

static json_object *attrs_json(const halo_attr *a, int n)
{
	json_object *o = json_object_new_object();
	for (int i = 0; i < n; i++) {
		json_object *v = a[i].is_str ? json_object_new_string(a[i].s)
				 : a[i].is_float ? json_object_new_double(a[i].f)
						 : i64(a[i].i);
		put(o, a[i].name, v);
	}
	return o;
}

static json_object *fused_json(const halo_fused_op *f)
{
	json_object *o = json_object_new_object();
	put(o, "op", i64(f->op));
	put(o, "pos", json_object_new_string(f->prologue ? "prologue" : "epilogue"));
	put(o, "side", i64(f->side));
	json_object *ops = json_object_new_array();
	for (int i = 0; i < f->n_operand; i++)
		json_object_array_add(ops, i64(f->operand[i]));
	put(o, "operands", ops);
	put(o, "attrs", attrs_json(f->attr, f->n_attr));
	return o;
}

static json_object *dispatch_json(const halo_dispatch *d)
{
	json_object *o = json_object_new_object();
	put(o, "node", json_object_new_string(d->node));
	put(o, "op", i64(d->op));
	put(o, "attrs", attrs_json(d->attr, d->n_attr));
	put(o, "n_in", i64(d->n_in));
	put(o, "n_extra", i64(d->n_extra));
	put(o, "n_out", i64(d->n_out));
	json_object *ops = json_object_new_array();
	for (int i = 0; i < d->n_in + d->n_extra + d->n_out; i++)
		json_object_array_add(ops, tensor_json(&d->operand[i]));
	put(o, "operands", ops);
	json_object *fused = json_object_new_array();
	for (int i = 0; i < d->n_fused; i++)
		json_object_array_add(fused, fused_json(&d->fused[i]));
	put(o, "fused", fused);
	put(o, "choice", i64(d->choice));
	put(o, "barrier", json_object_new_boolean(d->barrier));
	return o;
}

static json_object *io_json(const halo_io *io)
{
	json_object *o = tensor_json(&io->t);
	put(o, "name", json_object_new_string(io->name));
	return o;
}

static json_object *entry_json(const halo_entry *e)
{
	json_object *o = json_object_new_object();
	put(o, "name", json_object_new_string(e->name));
	put(o, "t_min", i64(e->t_min));
	put(o, "t_max", i64(e->t_max));
	put(o, "logits_all", json_object_new_boolean(e->logits_all));
	put(o, "position", json_object_new_string(e->caller_position ? "caller" : "session"));
	if (e->state_slots)
		put(o, "state_slots", json_object_new_boolean(true));
	put(o, "act_bytes", i64((int64_t)e->act_bytes));
	put(o, "input", io_json(&e->input));
	put(o, "output", io_json(&e->output));
	json_object *ds = json_object_new_array();
	for (int i = 0; i < e->n_dispatch; i++)
		json_object_array_add(ds, dispatch_json(&e->dispatch[i]));
	put(o, "dispatches", ds);
	return o;
}

static json_object *decl_json(const halo_buffer_decl *d)
{
	json_object *o = json_object_new_object();
	put(o, "name", json_object_new_string(d->name));
	if (d->kind)
		put(o, "kind", json_object_new_string(d->kind));
	if (d->slots_of)
		put(o, "slots_of", json_object_new_string(d->slots_of));
	put(o, "dtype", json_object_new_string(halo_dtype_name(d->dtype)));
	json_object *shape = json_object_new_array();
	for (int i = 0; i < d->rank; i++)
		json_object_array_add(shape, i64(d->shape[i]));
	put(o, "shape", shape);
	put(o, "offset", i64((int64_t)d->offset));
	put(o, "size", i64((int64_t)d->size));
	return o;
}

/* [[a, b, d], x3]: ceil((a*T + b) / d) workgroups per axis. */
static json_object *groups_json(const halo_grid_dim g[3])
{
	json_object *groups = json_object_new_array();
	for (int i = 0; i < 3; i++) {
		json_object *axis = pair(g[i].a, g[i].b);
		json_object_array_add(axis, i64(g[i].d));
		json_object_array_add(groups, axis);
	}
	return groups;
}

/* The names of the HALO_NEED_* bits, lowest bit first. select_kernels
 * refuses bits without a name; "unknown" would make the reader refuse the
 * bundle rather than run the kernel where it cannot. */
static json_object *needs_json(uint32_t needs)
{
	json_object *arr = json_object_new_array();
	for (uint32_t bit = 1; bit && bit <= needs; bit <<= 1) {
		const char *name = halo_need_name(bit);
		if (needs & bit)
			json_object_array_add(arr, json_object_new_string(name ? name : "unknown"));
	}
	return arr;
}

static json_object *kernel_json(const halo_kernel *k)
{
	json_object *o = json_object_new_object();
	put(o, "name", json_object_new_string(k->name));
	put(o, "signature", json_object_new_string(k->signature));
	put(o, "key", json_object_new_string(k->key));
	put(o, "tile", json_object_new_string(k->tile));
	put(o, "needs", needs_json(k->needs));
	json_object *code = json_object_new_object();
	for (int t = 0; t < HALO_TARGET_COUNT; t++)
		if (k->code[t].size) {
			json_object *range = json_object_new_array();
			json_object_array_add(range, i64((int64_t)k->code[t].offset));
			json_object_array_add(range, i64((int64_t)k->code[t].size));
			put(code, halo_targets[t].section, range);
		}
	put(o, "code", code);
	put(o, "push_size", i64(k->push_size));
	put(o, "bindings", i64(k->n_bindings));
	json_object *local = json_object_new_array();
	for (int i = 0; i < 3; i++)
		json_object_array_add(local, i64(k->local[i]));
	put(o, "local", local);
	put(o, "groups", groups_json(k->groups));
	return o;
}

static json_object *choice_json(const halo_choice *c)
{
	json_object *o = json_object_new_object();
	put(o, "key", json_object_new_string(c->key));
	json_object *kernels = json_object_new_array();
	for (int i = 0; i < c->n; i++)
		json_object_array_add(kernels, i64(c->kernel[i]));
	put(o, "kernels", kernels);
	return o;
}

char *cg_emit_manifest(const halo_manifest *m)
{
	json_object *root = json_object_new_object();
	put(root, "format", i64(HALO_MANIFEST_FORMAT));
	put(root, "model", json_object_new_string(m->model));
	json_object *targets = json_object_new_array();
	json_object_array_add(targets, json_object_new_string("ref"));
	for (int t = 0; t < HALO_TARGET_COUNT; t++)
		if (m->has_target[t])
			json_object_array_add(targets, json_object_new_string(halo_targets[t].name));
	put(root, "targets", targets);
	put(root, "vocab", i64(m->vocab));
	put(root, "n_ctx", i64(m->n_ctx));
	put(root, "state_bytes", i64((int64_t)m->state_bytes));
	json_object *arr = json_object_new_array();
	for (int i = 0; i < m->n_weights; i++)
		json_object_array_add(arr, decl_json(&m->weights[i]));
	put(root, "weights", arr);
	arr = json_object_new_array();
	for (int i = 0; i < m->n_states; i++)
		json_object_array_add(arr, decl_json(&m->states[i]));
	put(root, "states", arr);
	arr = json_object_new_array();
	for (int i = 0; i < m->n_kernels; i++)
		json_object_array_add(arr, kernel_json(&m->kernels[i]));
	put(root, "kernels", arr);
	arr = json_object_new_array();
	for (int i = 0; i < m->n_choices; i++)
		json_object_array_add(arr, choice_json(&m->choices[i]));
	put(root, "choices", arr);
	arr = json_object_new_array();
	for (int i = 0; i < m->n_entries; i++)
		json_object_array_add(arr, entry_json(&m->entries[i]));
	put(root, "entries", arr);
	const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	char *out = s ? strdup(s) : NULL;
	json_object_put(root);
	return out;
}
