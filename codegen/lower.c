#include "codegen/lower.h"

#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"

static bool lower_fail(ir_error *err, const ir_node *n, const char *what)
{
	ir_error_set(err, n ? n->loc : (ir_loc){0}, "codegen: '%s': %s", n ? n->name : "?", what);
	return false;
}

static void tensor_shape(halo_tensor_ref *t, const ir_shape *s, halo_dtype dtype)
{
	t->dtype = dtype;
	t->rank = s->rank;
	for (int i = 0; i < s->rank; i++)
		t->dim[i] = (halo_affine){s->dim[i].coef_T, s->dim[i].c};
}

static halo_space space_of(plan_region r)
{
	return r == PLAN_WEIGHT ? HALO_SPACE_WEIGHT : r == PLAN_STATE ? HALO_SPACE_STATE : HALO_SPACE_ACT;
}

static uint64_t buffer_offset(const plan_buffer *b, const cg_weight_layout *wl)
{
	return b->region == PLAN_WEIGHT ? wl->offset[b->ref] : (uint64_t)b->offset;
}

static halo_tensor_ref value_ref(const ir_module *m, const ir_func *f, const plan_entry *pe,
				 const cg_weight_layout *wl, int v)
{
	const plan_buffer *b = &pe->buffers[pe->value_buffer[v]];
	halo_tensor_ref t = {.space = space_of(b->region), .offset = buffer_offset(b, wl)};
	if (pe->value_at_pos[v])
		t.pos_rows = m->states[b->ref].shape.dim[0].c;
	/* A weight is read in the dtype it is stored in (--dtype f16), not the
	 * dtype the model file declares. */
	tensor_shape(&t, &f->values[v].shape, b->region == PLAN_WEIGHT ? wl->dtype[b->ref] : f->values[v].dtype);
	return t;
}

/* A state_write's output operand: the whole state buffer. */
static bool state_ref(const ir_module *m, const plan_entry *pe, int state, halo_tensor_ref *t)
{
	for (int i = 0; i < pe->n_buffers; i++) {
		const plan_buffer *b = &pe->buffers[i];
		if (b->region == PLAN_STATE && b->ref == state) {
			*t = (halo_tensor_ref){.space = HALO_SPACE_STATE, .offset = (uint64_t)b->offset};
			tensor_shape(t, &m->states[state].shape, m->states[state].dtype);
			return true;
		}
	}
	return false;
}

/* At most cap attributes into out. */
static bool lower_attrs(const ir_node *n, const ir_attr *attr, int n_attr, halo_attr *out, int cap, int *n_out,
			ir_error *err)
{
	*n_out = 0;
	for (int i = 0; i < n_attr; i++) {
		const ir_attr *a = &attr[i];
		if (a->kind == IR_ATTR_INTS)
			continue; /* view shapes, resolved by the plan; a matmul's split, which its results' shapes carry */
		if (*n_out >= cap || strlen(a->name) >= sizeof(out->name))
			return lower_fail(err, n, "too many or too long attributes for a dispatch");
		halo_attr *h = &out[(*n_out)++];
		memset(h, 0, sizeof(*h));
		strcpy(h->name, a->name);
		if (a->kind == IR_ATTR_STR) {
			if (strlen(a->s) >= sizeof(h->s))
				return lower_fail(err, n, "string attribute too long for a dispatch");
			h->is_str = true;
			strcpy(h->s, a->s);
		} else if (a->kind == IR_ATTR_FLOAT) {
			h->is_float = true;
			h->f = a->f;
		} else {
			h->i = a->i;
			h->f = (double)a->i;
		}
	}
	return true;
}

static bool add_operand(halo_dispatch *d, const ir_node *n, halo_tensor_ref t, ir_error *err)
{
	int k = d->n_in + d->n_extra + d->n_out;
	if (k >= HALO_MAX_OPERANDS)
		return lower_fail(err, n, "too many operands for one dispatch");
	d->operand[k] = t;
	return true;
}

static bool lower_fused(const ir_module *m, const ir_func *f, const plan_entry *pe, const cg_weight_layout *wl,
			const ir_node *n, halo_dispatch *d, ir_error *err)
{
	if (n->n_fused > HALO_MAX_FUSED)
		return lower_fail(err, n, "too many fused sub-ops");
	d->n_fused = n->n_fused;
	for (int i = 0; i < n->n_fused; i++) {
		const ir_fused *fu = &n->fused[i];
		halo_fused_op *h = &d->fused[i];
		h->op = fu->op;
		h->prologue = fu->pos == IR_FUSE_PROLOGUE;
		h->side = fu->operand;
		if (fu->n_extra > 2)
			return lower_fail(err, n, "a fused sub-op has more than two extra operands");
		h->n_operand = fu->n_extra;
		for (int j = 0; j < fu->n_extra; j++) {
			h->operand[j] = d->n_in + d->n_extra;
			if (!add_operand(d, n, value_ref(m, f, pe, wl, fu->extra[j]), err))
				return false;
			d->n_extra++;
		}
		if (!lower_attrs(n, fu->attr, fu->n_attr, h->attr, HALO_MAX_FUSED_ATTRS, &h->n_attr, err))
			return false;
	}
	return true;
}

static bool lower_dispatch(const ir_module *m, const ir_func *f, const plan_entry *pe, const cg_weight_layout *wl,
			   const plan_dispatch *pd, halo_dispatch *d, ir_error *err)
{
	const ir_node *n = &f->nodes[pd->node];
	d->node = strdup(n->name);
	d->op = n->op;
	d->choice = -1; /* codegen/select_kernels.c fills it in for Vulkan bundles */
	d->barrier = pd->barrier;
	if (!d->node)
		return lower_fail(err, n, "out of memory");
	for (int i = 0; i < n->n_in; i++, d->n_in++)
		if (!add_operand(d, n, value_ref(m, f, pe, wl, n->in[i]), err))
			return false;
	if (!lower_fused(m, f, pe, wl, n, d, err))
		return false;
	if (n->op == IR_OP_STATE_WRITE) {
		halo_tensor_ref t;
		if (!state_ref(m, pe, n->ref, &t))
			return lower_fail(err, n, "the plan has no buffer for the written state");
		d->n_out = 1;
		d->operand[d->n_in + d->n_extra] = t;
	} else {
		for (int i = 0; i < n->n_out; i++, d->n_out++)
			if (!add_operand(d, n, value_ref(m, f, pe, wl, n->out[i]), err))
				return false;
	}
	return lower_attrs(n, n->attr, n->n_attr, d->attr, HALO_MAX_ATTRS, &d->n_attr, err);
}

bool cg_lower_entry(const ir_module *m, const plan_entry *pe, const cg_weight_layout *wl, halo_entry *out,
		    ir_error *err)
{
	const ir_entry *ie = &m->entries[pe->entry];
	const ir_func *f = &m->funcs[pe->func];
	memset(out, 0, sizeof(*out));
	out->name = strdup(ie->name);
	out->t_min = ie->t_min;
	out->t_max = ie->t_max;
	out->logits_all = ie->logits && strcmp(ie->logits, "all") == 0;
	out->caller_position = ie->position && strcmp(ie->position, "caller") == 0;
	out->state_slots = ie->state_slots;
	out->act_bytes = (uint64_t)pe->act_bytes;
	out->dispatch = calloc((size_t)pe->n_dispatch + 1, sizeof(*out->dispatch));
	if (!out->name || !out->dispatch)
		return lower_fail(err, NULL, "out of memory");
	if (f->n_inputs != 1 || f->n_outputs != 1)
		return lower_fail(err, NULL, "an entry graph must take token ids and return logits (one each)");
	out->input = (halo_io){strdup(f->values[f->inputs[0]].name), value_ref(m, f, pe, wl, f->inputs[0])};
	out->output = (halo_io){strdup(f->output_names[0]), value_ref(m, f, pe, wl, f->outputs[0])};
	if (!out->input.name || !out->output.name)
		return lower_fail(err, NULL, "out of memory");
	for (int i = 0; i < pe->n_dispatch; i++, out->n_dispatch++)
		if (!lower_dispatch(m, f, pe, wl, &pe->dispatch[i], &out->dispatch[i], err))
			return false;
	return true;
}

void cg_entry_free(halo_entry *e)
{
	free(e->name);
	free(e->input.name);
	free(e->output.name);
	for (int i = 0; e->dispatch && i < e->n_dispatch + 1; i++)
		free(e->dispatch[i].node);
	free(e->dispatch);
	memset(e, 0, sizeof(*e));
}
