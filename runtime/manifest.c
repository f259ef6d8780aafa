#include "runtime/manifest.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device_features.h"
#include "kernels/dtype.h"

/* Parsing context: the first error wins and names the JSON path. */
typedef struct {
	char *err;
	size_t errlen;
	bool failed;
	uint64_t weights_size;
	const uint64_t *code_size; /* [HALO_TARGET_COUNT] */
	/* The block-quantized weight declarations, in offset order without
	 * repeats (aliases), disjoint: check_weight_ref looks operands up here. */
	const halo_buffer_decl **quant;
	int n_quant;
} mctx;

static bool fail(mctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool fail(mctx *c, const char *path, const char *fmt, ...)
{
	if (c->failed)
		return false;
	c->failed = true;
	int n = snprintf(c->err, c->errlen, "manifest %s: ", path);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < c->errlen)
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

static json_object *get(mctx *c, json_object *o, const char *path, const char *key, json_type type)
{
	json_object *v = NULL;
	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v)) {
		fail(c, path, "missing key '%s'", key);
		return NULL;
	}
	if (!json_object_is_type(v, type) &&
	    !(type == json_type_double && json_object_is_type(v, json_type_int))) {
		fail(c, path, "key '%s' has the wrong type (expected %s)", key, json_type_to_name(type));
		return NULL;
	}
	return v;
}

static bool get_i64(mctx *c, json_object *o, const char *path, const char *key, int64_t lo, int64_t hi,
		    int64_t *out)
{
	json_object *v = get(c, o, path, key, json_type_int);
	if (!v)
		return false;
	int64_t x = json_object_get_int64(v);
	if (x < lo || x > hi)
		return fail(c, path, "'%s' = %lld is outside [%lld, %lld]", key, (long long)x, (long long)lo,
			    (long long)hi);
	*out = x;
	return true;
}

static char *get_str(mctx *c, json_object *o, const char *path, const char *key)
{
	json_object *v = get(c, o, path, key, json_type_string);
	if (!v)
		return NULL;
	char *s = strdup(json_object_get_string(v));
	if (!s)
		fail(c, path, "out of memory");
	return s;
}

static bool get_dtype(mctx *c, json_object *o, const char *path, halo_dtype *out)
{
	json_object *v = get(c, o, path, "dtype", json_type_string);
	if (!v)
		return false;
	if (!halo_dtype_from_name(json_object_get_string(v), out))
		return fail(c, path, "unknown dtype '%s'", json_object_get_string(v));
	return true;
}

static json_object *get_array(mctx *c, json_object *o, const char *path, const char *key, size_t max, size_t *n)
{
	json_object *v = get(c, o, path, key, json_type_array);
	if (!v)
		return NULL;
	*n = json_object_array_length(v);
	if (*n > max) {
		fail(c, path, "'%s' has %zu elements, at most %zu allowed", key, *n, max);
		return NULL;
	}
	return v;
}

/* [coef_T, c] pairs. */
static bool parse_affine(mctx *c, json_object *v, const char *path, halo_affine *out)
{
	if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 2)
		return fail(c, path, "a dim must be [coef_T, c]");
	json_object *a = json_object_array_get_idx(v, 0), *b = json_object_array_get_idx(v, 1);
	if (!json_object_is_type(a, json_type_int) || !json_object_is_type(b, json_type_int))
		return fail(c, path, "a dim must hold two integers");
	out->coef_T = json_object_get_int64(a);
	out->c = json_object_get_int64(b);
	if (out->coef_T < 0 || out->coef_T > (1 << 20) || out->c < 0 || out->c > ((int64_t)1 << 40))
		return fail(c, path, "dim [%lld, %lld] out of range", (long long)out->coef_T, (long long)out->c);
	return true;
}

/* At most cap attributes into attr. */
static bool parse_attrs(mctx *c, json_object *o, const char *path, halo_attr *attr, int cap, int *n_attr)
{
	json_object *a = get(c, o, path, "attrs", json_type_object);
	if (!a)
		return false;
	*n_attr = 0;
	json_object_object_foreach(a, key, val)
	{
		if (*n_attr >= cap)
			return fail(c, path, "more than %d attrs", cap);
		halo_attr *x = &attr[(*n_attr)++];
		memset(x, 0, sizeof(*x));
		if (strlen(key) >= sizeof(x->name))
			return fail(c, path, "attr name '%s' too long", key);
		strcpy(x->name, key);
		if (json_object_is_type(val, json_type_int)) {
			x->i = json_object_get_int64(val);
			x->f = (double)x->i;
		} else if (json_object_is_type(val, json_type_double)) {
			x->is_float = true;
			x->f = json_object_get_double(val);
		} else if (json_object_is_type(val, json_type_string)) {
			const char *s = json_object_get_string(val);
			if (strlen(s) >= sizeof(x->s))
				return fail(c, path, "attr '%s' string too long", key);
			x->is_str = true;
			strcpy(x->s, s);
		} else {
			return fail(c, path, "attr '%s' must be a number or a string", key);
		}
	}
	return true;
}

/* [offset, offset + size) lies inside [0, limit), without wrapping. */
static bool range_fits(uint64_t offset, uint64_t size, uint64_t limit)
{
	return size <= limit && offset <= limit - size;
}

static const char *space_names[HALO_SPACE_COUNT] = {"weight", "state", "act"};

/* A block-quantized operand: a weight of constant dims whose last dim (its
 * rows' K) is a whole number of blocks. */
static bool check_quant_ref(mctx *c, const halo_tensor_ref *t, const char *path)
{
	const char *name = halo_dtype_name(t->dtype);
	size_t block = halo_dtype_block(t->dtype);
	if (t->space != HALO_SPACE_WEIGHT)
		return fail(c, path, "a %s operand in space '%s': only weights are stored block-quantized", name,
			    space_names[t->space]);
	if (t->rank < 1)
		return fail(c, path, "a %s operand must have a last dim (rows of K elements)", name);
	for (int i = 0; i < t->rank; i++)
		if (t->dim[i].coef_T)
			return fail(c, path, "a %s weight operand's dims must be constant", name);
	if (t->dim[t->rank - 1].c % (int64_t)block != 0)
		return fail(c, path, "a %s operand's last dim %lld is not a multiple of its block of %zu", name,
			    (long long)t->dim[t->rank - 1].c, block);
	return true;
}

/* The last quantized declaration starting before `end`, or NULL. */
static const halo_buffer_decl *quant_before(const mctx *c, uint64_t end)
{
	int lo = 0, hi = c->n_quant - 1, found = -1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (c->quant[mid]->offset < end) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found >= 0 ? c->quant[found] : NULL;
}

/* A weight operand that touches a block-quantized weight reads all of it as
 * stored: it starts where the declaration does, in its dtype and K, and
 * stays inside it (backends convert or index quantized weights whole). A
 * quantized operand must name such a declaration. */
static bool check_weight_ref(mctx *c, const halo_tensor_ref *t, const char *path)
{
	uint64_t bytes = halo_tensor_bytes(t, 0);
	const halo_buffer_decl *q = quant_before(c, t->offset + (bytes ? bytes : 1));
	bool touches = q && q->offset + q->size > t->offset;
	if (!touches)
		return !halo_dtype_is_quant(t->dtype) ||
		       fail(c, path, "a %s operand at weight offset %llu, where no %s weight is declared",
			    halo_dtype_name(t->dtype), (unsigned long long)t->offset, halo_dtype_name(t->dtype));
	if (t->dtype != q->dtype || t->offset != q->offset || bytes > q->size ||
	    t->dim[t->rank - 1].c != q->shape[q->rank - 1])
		return fail(c, path, "an operand (%s at weight offset %llu) reads %s weight '%s' other than as stored "
			    "(%s from offset %llu, rows of %lld)",
			    halo_dtype_name(t->dtype), (unsigned long long)t->offset, halo_dtype_name(q->dtype),
			    q->name, halo_dtype_name(q->dtype), (unsigned long long)q->offset,
			    (long long)q->shape[q->rank - 1]);
	return true;
}

static bool same_range(const halo_buffer_decl *a, const halo_buffer_decl *b)
{
	return a->offset == b->offset && a->size == b->size && a->dtype == b->dtype;
}

/* Weights are sorted by offset (docs/manifest.md); a block-quantized one
 * shares its bytes with no other declaration but its aliases (same range,
 * same dtype). Collects the quantized ones for check_weight_ref. */
static bool index_quant_weights(mctx *c, const halo_manifest *m)
{
	c->quant = calloc((size_t)m->n_weights + 1, sizeof(*c->quant));
	if (!c->quant)
		return fail(c, "weights", "out of memory");
	uint64_t max_end = 0;
	const halo_buffer_decl *last_q = NULL;
	for (int i = 0; i < m->n_weights; i++) {
		const halo_buffer_decl *d = &m->weights[i];
		bool alias = i > 0 && same_range(d, &m->weights[i - 1]);
		if (i > 0 && d->offset < m->weights[i - 1].offset)
			return fail(c, "weights[]", "'%s' is out of offset order", d->name);
		if (last_q && d->offset < last_q->offset + last_q->size && !same_range(d, last_q))
			return fail(c, "weights[]", "'%s' overlaps %s weight '%s'", d->name,
				    halo_dtype_name(last_q->dtype), last_q->name);
		if (halo_dtype_is_quant(d->dtype) && !alias) {
			if (max_end > d->offset)
				return fail(c, "weights[]", "%s weight '%s' overlaps an earlier weight",
					    halo_dtype_name(d->dtype), d->name);
			c->quant[c->n_quant++] = d;
			last_q = d;
		}
		if (d->offset + d->size > max_end)
			max_end = d->offset + d->size;
	}
	return true;
}

/* "pos_rows" (optional): a state operand of T rows that lies in the
 * pos_rows rows of a state tensor from row pos. */
static bool parse_pos_rows(mctx *c, json_object *o, const char *path, halo_tensor_ref *t)
{
	if (!json_object_object_get_ex(o, "pos_rows", NULL))
		return true;
	int64_t rows;
	if (!get_i64(c, o, path, "pos_rows", 1, INT32_MAX, &rows))
		return false;
	if (t->space != HALO_SPACE_STATE || t->rank < 1 || t->dim[0].coef_T != 1 || t->dim[0].c != 0)
		return fail(c, path, "'pos_rows' is for a state operand whose first dim is T ([1, 0])");
	for (int i = 1; i < t->rank; i++)
		if (t->dim[i].coef_T)
			return fail(c, path, "'pos_rows': a row's dims must not depend on T");
	t->pos_rows = rows;
	return true;
}

static bool parse_tensor(mctx *c, json_object *o, const char *path, halo_tensor_ref *t)
{
	json_object *sp = get(c, o, path, "space", json_type_string);
	if (!sp)
		return false;
	int space = -1;
	for (int i = 0; i < HALO_SPACE_COUNT; i++)
		if (strcmp(json_object_get_string(sp), space_names[i]) == 0)
			space = i;
	if (space < 0)
		return fail(c, path, "unknown space '%s'", json_object_get_string(sp));
	t->space = (halo_space)space;
	int64_t off;
	if (!get_i64(c, o, path, "offset", 0, INT64_MAX, &off) || !get_dtype(c, o, path, &t->dtype))
		return false;
	t->offset = (uint64_t)off;
	size_t n;
	json_object *shape = get_array(c, o, path, "shape", HALO_MAX_RANK, &n);
	if (!shape)
		return false;
	t->rank = (int)n;
	for (size_t i = 0; i < n; i++)
		if (!parse_affine(c, json_object_array_get_idx(shape, i), path, &t->dim[i]))
			return false;
	if (halo_dtype_is_quant(t->dtype) && !check_quant_ref(c, t, path))
		return false;
	if (!parse_pos_rows(c, o, path, t))
		return false;
	if (t->space == HALO_SPACE_WEIGHT && !range_fits(t->offset, halo_tensor_bytes(t, 0), c->weights_size))
		return fail(c, path, "weight range ends past the weights section (%llu bytes)",
			    (unsigned long long)c->weights_size);
	return t->space != HALO_SPACE_WEIGHT || check_weight_ref(c, t, path);
}

static bool parse_grid(mctx *c, json_object *o, const char *path, halo_grid_dim g[3])
{
	size_t n;
	json_object *arr = get_array(c, o, path, "groups", 3, &n);
	if (!arr)
		return false;
	if (n != 3)
		return fail(c, path, "groups must have 3 entries");
	for (size_t i = 0; i < 3; i++) {
		json_object *v = json_object_array_get_idx(arr, i);
		if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 3)
			return fail(c, path, "a group count must be [a, b, d]");
		int64_t x[3];
		for (size_t j = 0; j < 3; j++) {
			json_object *e = json_object_array_get_idx(v, j);
			if (!json_object_is_type(e, json_type_int))
				return fail(c, path, "a group count must hold integers");
			x[j] = json_object_get_int64(e);
		}
		if (x[0] < 0 || x[1] < 0 || x[2] < 1 || x[0] > 65535 || x[1] > ((int64_t)1 << 32))
			return fail(c, path, "group count [%lld, %lld, %lld] out of range", (long long)x[0],
				    (long long)x[1], (long long)x[2]);
		g[i] = (halo_grid_dim){x[0], x[1], x[2]};
	}
	return true;
}

static bool parse_fused(mctx *c, json_object *o, const char *path, int n_operands, halo_fused_op *f)
{
	int64_t op, side;
	if (!get_i64(c, o, path, "op", 0, 1000, &op) || !get_i64(c, o, path, "side", 0, 1, &side))
		return false;
	f->op = (int)op;
	f->side = (int)side;
	char *pos = get_str(c, o, path, "pos");
	if (!pos)
		return false;
	f->prologue = strcmp(pos, "prologue") == 0;
	bool ok = f->prologue || strcmp(pos, "epilogue") == 0;
	free(pos);
	if (!ok)
		return fail(c, path, "pos must be prologue or epilogue");
	size_t n;
	json_object *ops = get_array(c, o, path, "operands", 2, &n);
	if (!ops)
		return false;
	f->n_operand = (int)n;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(ops, i);
		int64_t idx = json_object_is_type(e, json_type_int) ? json_object_get_int64(e) : -1;
		if (idx < 0 || idx >= n_operands)
			return fail(c, path, "fused operand index out of range");
		f->operand[i] = (int)idx;
	}
	return parse_attrs(c, o, path, f->attr, HALO_MAX_FUSED_ATTRS, &f->n_attr);
}

/* The dispatch's choice: -1 in a bundle without GPU kernels, else an
 * index into choices whose candidates bind the dispatch's operands and the
 * step record. Format 1's per-dispatch kernel and grid are refused by name. */
static bool parse_dispatch_choice(mctx *c, json_object *o, const char *path, const halo_manifest *m,
				  halo_dispatch *d)
{
	static const char *const old_keys[] = {"kernel", "groups"};
	for (size_t i = 0; i < sizeof old_keys / sizeof old_keys[0]; i++)
		if (json_object_object_get_ex(o, old_keys[i], NULL))
			return fail(c, path, "'%s' is manifest format 1 (a kernel per dispatch); format %d dispatches "
				    "name a 'choice': recompile the bundle", old_keys[i], HALO_MANIFEST_FORMAT);
	int64_t choice;
	d->choice = -1;
	if (!m->has_kernels)
		return get_i64(c, o, path, "choice", -1, -1, &choice);
	if (m->n_choices == 0)
		return fail(c, path, "the bundle has GPU kernels but no choices");
	if (!get_i64(c, o, path, "choice", 0, m->n_choices - 1, &choice))
		return false;
	d->choice = (int)choice;
	const halo_kernel *k = &m->kernels[m->choices[choice].kernel[0]];
	int n_ops = d->n_in + d->n_extra + d->n_out;
	if (k->n_bindings != (uint32_t)n_ops + 1)
		return fail(c, path, "choice %lld's kernels bind %u buffers, the dispatch has %d operands + the step record",
			    (long long)choice, k->n_bindings, n_ops);
	return true;
}

static bool parse_dispatch(mctx *c, json_object *o, const char *path, const halo_manifest *m, halo_dispatch *d)
{
	int64_t op, n_in, n_extra, n_out;
	d->node = get_str(c, o, path, "node");
	if (!d->node || !get_i64(c, o, path, "op", 0, 1000, &op) ||
	    !get_i64(c, o, path, "n_in", 0, HALO_MAX_OPERANDS, &n_in) ||
	    !get_i64(c, o, path, "n_extra", 0, HALO_MAX_OPERANDS, &n_extra) ||
	    !get_i64(c, o, path, "n_out", 0, HALO_MAX_OPERANDS, &n_out))
		return false;
	d->op = (int)op;
	d->n_in = (int)n_in;
	d->n_extra = (int)n_extra;
	d->n_out = (int)n_out;
	size_t n;
	json_object *ops = get_array(c, o, path, "operands", HALO_MAX_OPERANDS, &n);
	if (!ops)
		return false;
	if ((int64_t)n != n_in + n_extra + n_out)
		return fail(c, path, "%zu operands, but n_in + n_extra + n_out = %lld", n,
			    (long long)(n_in + n_extra + n_out));
	for (size_t i = 0; i < n; i++)
		if (!parse_tensor(c, json_object_array_get_idx(ops, i), path, &d->operand[i]))
			return false;
	json_object *fused = get_array(c, o, path, "fused", HALO_MAX_FUSED, &n);
	if (!fused)
		return false;
	d->n_fused = (int)n;
	for (size_t i = 0; i < n; i++)
		if (!parse_fused(c, json_object_array_get_idx(fused, i), path, (int)(n_in + n_extra + n_out),
				 &d->fused[i]))
			return false;
	json_object *b = get(c, o, path, "barrier", json_type_boolean);
	if (!b)
		return false;
	d->barrier = json_object_get_boolean(b);
	return parse_attrs(c, o, path, d->attr, HALO_MAX_ATTRS, &d->n_attr) && parse_dispatch_choice(c, o, path, m, d);
}

static bool parse_io(mctx *c, json_object *o, const char *path, const char *key, halo_io *io)
{
	json_object *v = get(c, o, path, key, json_type_object);
	if (!v)
		return false;
	io->name = get_str(c, v, path, "name");
	return io->name && parse_tensor(c, v, path, &io->t);
}

static bool act_fits(mctx *c, const halo_tensor_ref *t, const halo_entry *e, const char *path)
{
	if (t->space == HALO_SPACE_ACT && !range_fits(t->offset, halo_tensor_bytes(t, e->t_max), e->act_bytes))
		return fail(c, path, "activation range ends past act_bytes (%llu)", (unsigned long long)e->act_bytes);
	return true;
}

/* "position": "session" (runs at the session's position and advances it) or
 * "caller" (runs at a position the caller gives: a draft head). */
static bool parse_position(mctx *c, json_object *o, const char *path, bool *caller)
{
	json_object *v = get(c, o, path, "position", json_type_string);
	if (!v)
		return false;
	const char *s = json_object_get_string(v);
	*caller = strcmp(s, "caller") == 0;
	if (!*caller && strcmp(s, "session") != 0)
		return fail(c, path, "unknown position '%.32s' (session or caller)", s);
	return true;
}

/* The output holds whole rows at every token count: f32 logits of its last
 * dim each (the vocabulary; a draft head's entry, at a caller's position,
 * may cover a prefix of it), or (an i32 output) one greedy token each; as
 * many rows as tokens, or (logits_all false) at least the last one. */
static bool output_rows(mctx *c, const halo_manifest *m, halo_entry *e, const char *path)
{
	const halo_tensor_ref *t = &e->output.t;
	e->tokens_out = t->dtype == HALO_I32;
	if (!e->tokens_out && t->dtype != HALO_F32)
		return fail(c, path, "output is %s, not f32 logits or i32 tokens", halo_dtype_name(t->dtype));
	e->width = 1;
	if (!e->tokens_out) {
		halo_affine w = t->rank ? t->dim[t->rank - 1] : (halo_affine){0, 0};
		e->width = w.c;
		if (w.coef_T != 0 || w.c < 1 || w.c > m->vocab || (w.c != m->vocab && !e->caller_position))
			return fail(c, path, "output rows of %lld*T+%lld logits; want the vocabulary's %lld (a draft "
				    "entry, at a caller's position, 1..%lld)", (long long)w.coef_T, (long long)w.c,
				    (long long)m->vocab, (long long)m->vocab);
	}
	uint64_t row = halo_entry_row_bytes(e);
	for (int64_t T = e->t_min; T <= e->t_max; T++) {
		uint64_t bytes = halo_tensor_bytes(t, T);
		if (bytes % row || bytes < row || (e->logits_all && bytes / row != (uint64_t)T))
			return fail(c, path, "output of %llu bytes at %lld tokens is not %s rows of %llu bytes",
				    (unsigned long long)bytes, (long long)T, e->logits_all ? "T" : "whole",
				    (unsigned long long)row);
	}
	return true;
}

static bool parse_entry(mctx *c, json_object *o, const halo_manifest *m, halo_entry *e)
{
	char path[96];
	snprintf(path, sizeof(path), "entries[?]");
	e->name = get_str(c, o, path, "name");
	if (!e->name)
		return false;
	snprintf(path, sizeof(path), "entry '%.60s'", e->name);
	int64_t act;
	json_object *la = get(c, o, path, "logits_all", json_type_boolean);
	if (!la || !get_i64(c, o, path, "t_min", 1, 1 << 20, &e->t_min) ||
	    !get_i64(c, o, path, "t_max", e->t_min, 1 << 20, &e->t_max) ||
	    !parse_position(c, o, path, &e->caller_position) || !get_i64(c, o, path, "act_bytes", 0, INT64_MAX, &act) ||
	    !parse_io(c, o, path, "input", &e->input) || !parse_io(c, o, path, "output", &e->output))
		return false;
	e->logits_all = json_object_get_boolean(la);
	e->act_bytes = (uint64_t)act;
	json_object *ss;
	if (json_object_object_get_ex(o, "state_slots", &ss)) {
		if (!json_object_is_type(ss, json_type_boolean))
			return fail(c, path, "'state_slots' must be a boolean");
		e->state_slots = json_object_get_boolean(ss);
	}
	if (e->state_slots && !m->n_slots && m->n_recurrent)
		return fail(c, path, "keeps per-token state slots, but no state has any");
	size_t n;
	json_object *ds = get_array(c, o, path, "dispatches", 1 << 20, &n);
	if (!ds)
		return false;
	e->dispatch = calloc(n ? n : 1, sizeof(*e->dispatch));
	if (!e->dispatch)
		return fail(c, path, "out of memory");
	e->n_dispatch = (int)n;
	for (size_t i = 0; i < n; i++) {
		char dpath[128];
		snprintf(dpath, sizeof(dpath), "%s dispatch %zu", path, i);
		halo_dispatch *d = &e->dispatch[i];
		if (!parse_dispatch(c, json_object_array_get_idx(ds, i), dpath, m, d))
			return false;
		for (int j = 0; j < d->n_in + d->n_extra + d->n_out; j++) {
			const halo_tensor_ref *t = &d->operand[j];
			if (!act_fits(c, t, e, dpath))
				return false;
			if (t->space == HALO_SPACE_STATE &&
			    !range_fits(t->offset, halo_tensor_span(t, e->t_max), m->state_bytes))
				return fail(c, dpath, "state range ends past state_bytes");
			/* a step writes rows pos.. for any pos + T <= n_ctx */
			if (t->pos_rows && t->pos_rows < m->n_ctx)
				return fail(c, dpath, "an operand in %lld rows from the position, fewer than n_ctx %lld",
					    (long long)t->pos_rows, (long long)m->n_ctx);
		}
	}
	return act_fits(c, &e->input.t, e, path) && act_fits(c, &e->output.t, e, path) && output_rows(c, m, e, path);
}

/* "targets": "ref", then GPU targets (kernels/gpu_target.h), each once. */
static bool parse_targets(mctx *c, json_object *root, halo_manifest *m)
{
	size_t n;
	json_object *t = get_array(c, root, "root", "targets", 1 + HALO_TARGET_COUNT, &n);
	if (!t)
		return false;
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(t, i);
		const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		int g = halo_target_find(s);
		if (strcmp(s, "ref") == 0)
			continue;
		if (g < 0 || strcmp(s, halo_targets[g].name) != 0)
			return fail(c, "targets", "unknown target '%s' (ref, vulkan, hip-gfx1151 or cuda-sm90)", s);
		if (m->has_target[g])
			return fail(c, "targets", "target '%s' is listed twice", s);
		m->has_target[g] = m->has_kernels = true;
	}
	return true;
}

/* A block-quantized declaration: a weight of rows of K elements, K a whole
 * number of blocks, whose size is the format's bytes for its elements. */
static bool check_quant_decl(mctx *c, const char *path, const halo_buffer_decl *d)
{
	const char *name = halo_dtype_name(d->dtype);
	size_t block = halo_dtype_block(d->dtype);
	uint64_t numel = 1;
	for (int i = 0; i < d->rank; i++)
		if (d->shape[i] < 1 || d->shape[i] > ((int64_t)1 << 40) ||
		    __builtin_mul_overflow(numel, (uint64_t)d->shape[i], &numel))
			return fail(c, path, "%s weight '%s' has a bad dim %lld", name, d->name, (long long)d->shape[i]);
	if (d->rank < 1 || d->shape[d->rank - 1] % (int64_t)block != 0)
		return fail(c, path, "%s weight '%s': its last dim (K) %lld is not a multiple of the block of %zu", name,
			    d->name, d->rank < 1 ? 0LL : (long long)d->shape[d->rank - 1], block);
	uint64_t k = (uint64_t)d->shape[d->rank - 1], bytes = halo_dtype_bytes(d->dtype, numel / k, k);
	if (d->size != bytes)
		return fail(c, path, "%s weight '%s' of %llu elements takes %llu bytes, not %llu", name, d->name,
			    (unsigned long long)numel, (unsigned long long)bytes, (unsigned long long)d->size);
	return true;
}

static bool parse_decl(mctx *c, json_object *o, const char *path, bool is_state, uint64_t limit,
		       halo_buffer_decl *d)
{
	int64_t off, size;
	d->name = get_str(c, o, path, "name");
	if (!d->name || !get_dtype(c, o, path, &d->dtype) || !get_i64(c, o, path, "offset", 0, INT64_MAX, &off) ||
	    !get_i64(c, o, path, "size", 0, INT64_MAX, &size))
		return false;
	if (is_state && halo_dtype_is_quant(d->dtype))
		return fail(c, path, "state '%s' has dtype %s: only weights are stored block-quantized", d->name,
			    halo_dtype_name(d->dtype));
	if (is_state && !(d->kind = get_str(c, o, path, "kind")))
		return false;
	json_object *of;
	bool has_of = json_object_object_get_ex(o, "slots_of", &of);
	if (is_state && strcmp(d->kind, "slots") == 0 && !(d->slots_of = get_str(c, o, path, "slots_of")))
		return false;
	if (has_of && !d->slots_of)
		return fail(c, path, "'%s': 'slots_of' belongs to a state of kind 'slots' only", d->name);
	d->offset = (uint64_t)off;
	d->size = (uint64_t)size;
	if (!range_fits(d->offset, d->size, limit))
		return fail(c, path, "'%s' [%llu, +%llu) ends past its region (%llu bytes)", d->name,
			    (unsigned long long)d->offset, (unsigned long long)d->size, (unsigned long long)limit);
	size_t n;
	json_object *shape = get_array(c, o, path, "shape", HALO_MAX_RANK, &n);
	if (!shape)
		return false;
	d->rank = (int)n;
	for (size_t i = 0; i < n; i++)
		d->shape[i] = json_object_get_int64(json_object_array_get_idx(shape, i));
	return !halo_dtype_is_quant(d->dtype) || check_quant_decl(c, path, d);
}

/* Positional kinds: row p belongs to position p, and rows past the session's
 * position are rewritten before anything reads them, so they roll back with
 * the position alone. A "slots" state is filled by every step, and a "sync"
 * state (workgroup counters) is zero between dispatches. Every other kind, an
 * unknown one included, is taken as recurrent (the state after the last
 * token), which a checkpoint copies:
 * copying a cache needlessly costs time, missing a recurrent state gives
 * wrong tokens. */
const halo_attr *halo_attr_find(const halo_attr *a, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(a[i].name, name) == 0)
			return &a[i];
	return NULL;
}

bool halo_state_kind_positional(const char *kind)
{
	return strcmp(kind, "kv") == 0 || strcmp(kind, "indexer") == 0 || strcmp(kind, "hidden") == 0;
}

bool halo_state_kind_recurrent(const char *kind)
{
	return !halo_state_kind_positional(kind) && strcmp(kind, "slots") != 0 && strcmp(kind, "sync") != 0;
}

static int by_offset(const void *a, const void *b)
{
	const halo_buffer_decl *x = *(const halo_buffer_decl *const *)a, *y = *(const halo_buffer_decl *const *)b;
	return (x->offset > y->offset) - (x->offset < y->offset);
}

/* The recurrent states as ranges in offset order. A run of recurrent states
 * with no positional state between them is one range, the alignment padding
 * between them included: one copy per run instead of one per state. */
static bool plan_recurrent(mctx *c, halo_manifest *m)
{
	const halo_buffer_decl **order = malloc(((size_t)m->n_states + 1) * sizeof(*order));
	m->recurrent = calloc((size_t)m->n_states + 1, sizeof(*m->recurrent));
	if (!order || !m->recurrent) {
		free(order);
		return fail(c, "states", "out of memory");
	}
	for (int i = 0; i < m->n_states; i++)
		order[i] = &m->states[i];
	qsort(order, (size_t)m->n_states, sizeof(*order), by_offset);
	halo_state_range *run = NULL;
	for (int i = 0; i < m->n_states; i++) {
		const halo_buffer_decl *d = order[i];
		if (d->size == 0)
			continue;
		uint64_t end = d->offset + d->size; /* parse_decl checked it against state_bytes */
		if (!halo_state_kind_recurrent(d->kind)) {
			run = NULL;
		} else if (!run) {
			run = &m->recurrent[m->n_recurrent++];
			*run = (halo_state_range){d->offset, d->size, 0};
		} else if (end > run->offset + run->size) {
			run->size = end - run->offset;
		}
	}
	free(order);
	for (int i = 0; i < m->n_recurrent; i++) {
		m->recurrent[i].packed = m->recurrent_bytes;
		m->recurrent_bytes += m->recurrent[i].size;
	}
	return true;
}

/* Each state of kind "slots" against the recurrent state it names: the same
 * dtype and trailing dims, one slot per leading row. */
static bool check_slots(mctx *c, const halo_buffer_decl *d, const halo_buffer_decl *of)
{
	bool ok = of && halo_state_kind_recurrent(of->kind) && of->dtype == d->dtype && d->rank == of->rank + 1 &&
		  d->shape[0] >= 1;
	for (int k = 0; ok && k < of->rank; k++)
		ok = d->shape[k + 1] == of->shape[k];
	if (!ok)
		return fail(c, "states[]", "'%s' (kind slots) must be [n, ...shape] of the recurrent state '%s' it "
			    "names in slots_of, with its dtype", d->name, d->slots_of);
	if (d->size < (uint64_t)d->shape[0] * of->size)
		return fail(c, "states[]", "'%s' holds %llu bytes, fewer than %lld slots of '%s' (%llu bytes each)",
			    d->name, (unsigned long long)d->size, (long long)d->shape[0], of->name,
			    (unsigned long long)of->size);
	return true;
}

static bool plan_slots(mctx *c, halo_manifest *m)
{
	m->slots = calloc((size_t)m->n_states + 1, sizeof(*m->slots));
	if (!m->slots)
		return fail(c, "states", "out of memory");
	for (int i = 0; i < m->n_states; i++) {
		const halo_buffer_decl *d = &m->states[i], *of = NULL;
		if (!d->slots_of)
			continue;
		for (int j = 0; j < m->n_states && !of; j++)
			if (strcmp(m->states[j].name, d->slots_of) == 0)
				of = &m->states[j];
		if (!check_slots(c, d, of))
			return false;
		m->slots[m->n_slots++] = (halo_state_slots){of->offset, d->offset, of->size, d->shape[0]};
	}
	return true;
}

/* "needs": names of the device features (kernels/device_features.h). */
static bool parse_needs(mctx *c, json_object *o, const char *path, uint32_t *needs)
{
	size_t n;
	json_object *arr = get_array(c, o, path, "needs", 32, &n);
	if (!arr)
		return false;
	*needs = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(arr, i);
		uint32_t bit;
		if (!json_object_is_type(v, json_type_string))
			return fail(c, path, "'needs' holds feature names (strings)");
		if (!halo_need_from_name(json_object_get_string(v), &bit))
			return fail(c, path, "unknown device feature '%.64s' in 'needs' (subgroup_shuffle, coopmat_nv or int_dot)",
				    json_object_get_string(v));
		*needs |= bit;
	}
	return true;
}

/* The signature is the key, then " tile=" and the tile unless it is empty. */
static bool signature_consistent(const halo_kernel *k)
{
	size_t nk = strlen(k->key);
	if (strncmp(k->signature, k->key, nk) != 0)
		return false;
	const char *rest = k->signature + nk;
	if (!k->tile[0])
		return rest[0] == '\0';
	return strncmp(rest, " tile=", 6) == 0 && strcmp(rest + 6, k->tile) == 0;
}

static bool parse_local(mctx *c, json_object *o, const char *path, uint32_t local[3])
{
	size_t n;
	json_object *arr = get_array(c, o, path, "local", 3, &n);
	if (!arr)
		return false;
	if (n != 3)
		return fail(c, path, "local must have 3 entries");
	for (size_t i = 0; i < 3; i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		int64_t v = json_object_is_type(e, json_type_int) ? json_object_get_int64(e) : 0;
		if (v < 1 || v > 1024)
			return fail(c, path, "local size out of range");
		local[i] = (uint32_t)v;
	}
	return true;
}

/* "code": {section: [offset, size], ...}: the kernel's bytes in the
 * section of each target the bundle lists, aligned for the target and
 * inside its section. */
static bool parse_code(mctx *c, json_object *o, const char *path, const halo_manifest *m, halo_kernel *k)
{
	json_object *code;
	if (!json_object_object_get_ex(o, "code", &code) || !json_object_is_type(code, json_type_object))
		return fail(c, path, "missing object 'code'");
	json_object_object_foreach(code, sec, range)
	{
		int t = 0;
		while (t < HALO_TARGET_COUNT && strcmp(sec, halo_targets[t].section) != 0)
			t++;
		if (t == HALO_TARGET_COUNT || !m->has_target[t])
			return fail(c, path, "kernel '%s' has code in section '%.64s', which is no target of the bundle",
				    k->name, sec);
		bool pair = json_object_is_type(range, json_type_array) && json_object_array_length(range) == 2;
		json_object *off = pair ? json_object_array_get_idx(range, 0) : NULL;
		json_object *size = pair ? json_object_array_get_idx(range, 1) : NULL;
		if (!json_object_is_type(off, json_type_int) || !json_object_is_type(size, json_type_int))
			return fail(c, path, "code '%.64s' must be [offset, size]", sec);
		int64_t at = json_object_get_int64(off), n = json_object_get_int64(size);
		uint32_t align = halo_targets[t].code_align;
		if (at < 0 || n < 1 || !range_fits((uint64_t)at, (uint64_t)n, c->code_size[t]) || at % align || n % align)
			return fail(c, path, "kernel '%s' range [%lld, +%lld) is outside the %s section or unaligned",
				    k->name, (long long)at, (long long)n, sec);
		k->code[t].offset = (uint64_t)at;
		k->code[t].size = (uint64_t)n;
	}
	return true;
}

static bool parse_kernel(mctx *c, json_object *o, size_t index, const halo_manifest *m, halo_kernel *k)
{
	char path[32];
	snprintf(path, sizeof(path), "kernels[%zu]", index);
	int64_t push, nb;
	if (!(k->name = get_str(c, o, path, "name")) || !(k->signature = get_str(c, o, path, "signature")) ||
	    !(k->key = get_str(c, o, path, "key")) || !(k->tile = get_str(c, o, path, "tile")) ||
	    !parse_needs(c, o, path, &k->needs) || !get_i64(c, o, path, "push_size", 0, 128, &push) ||
	    !get_i64(c, o, path, "bindings", 0, HALO_MAX_OPERANDS + 1, &nb) || !parse_code(c, o, path, m, k))
		return false;
	if (!k->key[0])
		return fail(c, path, "kernel '%s' has an empty key", k->name);
	if (!signature_consistent(k))
		return fail(c, path, "signature '%.200s' is not key + \" tile=\" + tile", k->signature);
	k->push_size = (uint32_t)push;
	k->n_bindings = (uint32_t)nb;
	return parse_local(c, o, path, k->local) && parse_grid(c, o, path, k->groups);
}

/* Candidate j of a choice: a kernel of the choice's key, not listed twice,
 * binding what the first candidate binds. */
static bool check_candidate(mctx *c, const char *path, const halo_manifest *m, const halo_choice *ch, int j)
{
	int k = ch->kernel[j];
	for (int i = 0; i < j; i++)
		if (ch->kernel[i] == k)
			return fail(c, path, "kernel %d is listed twice", k);
	const halo_kernel *a = &m->kernels[ch->kernel[0]], *b = &m->kernels[k];
	if (strcmp(b->key, ch->key) != 0)
		return fail(c, path, "kernel %d computes '%.200s', not the choice's key", k, b->key);
	if (a->n_bindings != b->n_bindings || a->push_size != b->push_size)
		return fail(c, path, "kernel %d binds %u buffers with %u push bytes, kernel %d %u with %u: the candidates "
			    "of a choice must share bindings and push size", k, b->n_bindings, b->push_size,
			    ch->kernel[0], a->n_bindings, a->push_size);
	return true;
}

static bool parse_choice(mctx *c, json_object *o, size_t index, const halo_manifest *m, halo_choice *ch)
{
	char path[32];
	snprintf(path, sizeof(path), "choices[%zu]", index);
	size_t n;
	json_object *arr;
	if (!(ch->key = get_str(c, o, path, "key")) || !(arr = get_array(c, o, path, "kernels", HALO_MAX_CANDIDATES, &n)))
		return false;
	if (n == 0)
		return fail(c, path, "a choice needs at least one kernel");
	bool portable = false, on[HALO_TARGET_COUNT] = {false};
	for (size_t j = 0; j < n; j++) {
		json_object *e = json_object_array_get_idx(arr, j);
		int64_t k = json_object_is_type(e, json_type_int) ? json_object_get_int64(e) : -1;
		if (k < 0 || k >= m->n_kernels)
			return fail(c, path, "kernel index %lld is outside the %d kernels", (long long)k, m->n_kernels);
		ch->kernel[j] = (int)k;
		ch->n = (int)j + 1;
		if (!check_candidate(c, path, m, ch, (int)j))
			return false;
		portable |= m->kernels[k].needs == 0 && m->kernels[k].code[HALO_TARGET_VULKAN].size;
		for (int t = 0; t < HALO_TARGET_COUNT; t++)
			on[t] |= m->kernels[k].code[t].size != 0;
	}
	if (m->has_target[HALO_TARGET_VULKAN] && !portable)
		return fail(c, path, "every Vulkan candidate of '%.200s' needs a device feature: one must run everywhere",
			    ch->key);
	for (int t = 0; t < HALO_TARGET_COUNT; t++)
		if (m->has_target[t] && !on[t])
			return fail(c, path, "no candidate of '%.200s' has %s code", ch->key, halo_targets[t].name);
	return true;
}

static int by_choice_key(const void *a, const void *b)
{
	const halo_choice *x = *(const halo_choice *const *)a, *y = *(const halo_choice *const *)b;
	return strcmp(x->key, y->key);
}

/* One choice per key: the tuning database picks per key. */
static bool check_choice_keys(mctx *c, const halo_manifest *m)
{
	const halo_choice **order = malloc(((size_t)m->n_choices + 1) * sizeof(*order));
	if (!order)
		return fail(c, "choices", "out of memory");
	for (int i = 0; i < m->n_choices; i++)
		order[i] = &m->choices[i];
	qsort(order, (size_t)m->n_choices, sizeof(*order), by_choice_key);
	int dup = -1;
	for (int i = 1; i < m->n_choices && dup < 0; i++)
		if (strcmp(order[i - 1]->key, order[i]->key) == 0)
			dup = i;
	bool ok = dup < 0 || fail(c, "choices", "key '%.200s' has two choices (%d and %d)", order[dup]->key,
				  (int)(order[dup - 1] - m->choices), (int)(order[dup] - m->choices));
	free(order);
	return ok;
}

/* "format": only this reader's; an older bundle is named as such. */
static bool check_format(mctx *c, json_object *root)
{
	json_object *v = get(c, root, "root", "format", json_type_int);
	if (!v)
		return false;
	int64_t f = json_object_get_int64(v);
	if (f == 1)
		return fail(c, "root", "'format' is 1, a manifest from before kernel choices (each dispatch named "
			    "one 'kernel'); this reader reads format %d: recompile the bundle", HALO_MANIFEST_FORMAT);
	if (f != HALO_MANIFEST_FORMAT)
		return fail(c, "root", "'format' is %lld; this reader reads format %d", (long long)f, HALO_MANIFEST_FORMAT);
	return true;
}

#define PARSE_LIST(key, max, count, arr, ...)                                                          \
	do {                                                                                           \
		size_t n_;                                                                             \
		json_object *a_ = get_array(&c, root, "root", key, max, &n_);                         \
		if (!a_)                                                                               \
			goto out;                                                                      \
		m->arr = calloc(n_ ? n_ : 1, sizeof(*m->arr));                                         \
		if (!m->arr) {                                                                         \
			fail(&c, key, "out of memory");                                                \
			goto out;                                                                      \
		}                                                                                      \
		m->count = (int)n_;                                                                    \
		for (size_t i = 0; i < n_; i++)                                                        \
			if (!(__VA_ARGS__))                                                            \
				goto out;                                                              \
	} while (0)

halo_manifest *manifest_parse(const char *json, size_t len, uint64_t weights_size,
			      const uint64_t code_size[HALO_TARGET_COUNT], char *err, size_t errlen)
{
	mctx c = {.err = err, .errlen = errlen, .weights_size = weights_size, .code_size = code_size};
	json_tokener *tok = json_tokener_new();
	json_object *root = tok ? json_tokener_parse_ex(tok, json, (int)len) : NULL;
	if (!root || json_tokener_get_error(tok) != json_tokener_success) {
		snprintf(err, errlen, "manifest: invalid JSON (%s)",
			 tok ? json_tokener_error_desc(json_tokener_get_error(tok)) : "out of memory");
		json_object_put(root);
		json_tokener_free(tok);
		return NULL;
	}
	json_tokener_free(tok);
	halo_manifest *m = calloc(1, sizeof(*m));
	int64_t sb;
	if (!m) {
		fail(&c, "root", "out of memory");
		goto out;
	}
	if (!check_format(&c, root) || !(m->model = get_str(&c, root, "root", "model")) ||
	    !get_i64(&c, root, "root", "vocab", 1, 1 << 24, &m->vocab) ||
	    !get_i64(&c, root, "root", "n_ctx", 1, 1 << 24, &m->n_ctx) ||
	    !get_i64(&c, root, "root", "state_bytes", 0, INT64_MAX, &sb))
		goto out;
	m->state_bytes = (uint64_t)sb;
	if (!parse_targets(&c, root, m))
		goto out;
	PARSE_LIST("weights", 1 << 20, n_weights, weights,
		   parse_decl(&c, json_object_array_get_idx(a_, i), "weights[]", false, weights_size, &m->weights[i]));
	PARSE_LIST("states", 1 << 16, n_states, states,
		   parse_decl(&c, json_object_array_get_idx(a_, i), "states[]", true, m->state_bytes, &m->states[i]));
	if (!index_quant_weights(&c, m) || !plan_recurrent(&c, m) || !plan_slots(&c, m))
		goto out;
	PARSE_LIST("kernels", 1 << 16, n_kernels, kernels,
		   parse_kernel(&c, json_object_array_get_idx(a_, i), i, m, &m->kernels[i]));
	PARSE_LIST("choices", 1 << 16, n_choices, choices,
		   parse_choice(&c, json_object_array_get_idx(a_, i), i, m, &m->choices[i]));
	if (!check_choice_keys(&c, m))
		goto out;
	PARSE_LIST("entries", 64, n_entries, entries, parse_entry(&c, json_object_array_get_idx(a_, i), m, &m->entries[i]));
out:
	json_object_put(root);
	free(c.quant);
	if (c.failed) {
		manifest_free(m);
		return NULL;
	}
	return m;
}

static void free_decls(halo_buffer_decl *d, int n)
{
	for (int i = 0; d && i < n; i++) {
		free(d[i].name);
		free(d[i].kind);
		free(d[i].slots_of);
	}
	free(d);
}

void manifest_free(halo_manifest *m)
{
	if (!m)
		return;
	free(m->model);
	free_decls(m->weights, m->n_weights);
	free_decls(m->states, m->n_states);
	free(m->recurrent);
	free(m->slots);
	manifest_free_kernels(m);
	for (int i = 0; m->entries && i < m->n_entries; i++) {
		halo_entry *e = &m->entries[i];
		free(e->name);
		free(e->input.name);
		free(e->output.name);
		for (int j = 0; e->dispatch && j < e->n_dispatch; j++)
			free(e->dispatch[j].node);
		free(e->dispatch);
	}
	free(m->entries);
	free(m);
}

void manifest_free_kernels(halo_manifest *m)
{
	for (int i = 0; m->kernels && i < m->n_kernels; i++) {
		free(m->kernels[i].name);
		free(m->kernels[i].signature);
		free(m->kernels[i].key);
		free(m->kernels[i].tile);
	}
	free(m->kernels);
	for (int i = 0; m->choices && i < m->n_choices; i++)
		free(m->choices[i].key);
	free(m->choices);
	m->kernels = NULL;
	m->choices = NULL;
	m->n_kernels = m->n_choices = 0;
}

const halo_entry *manifest_entry(const halo_manifest *m, const char *name)
{
	for (int i = 0; i < m->n_entries; i++)
		if (strcmp(m->entries[i].name, name) == 0)
			return &m->entries[i];
	return NULL;
}

int64_t halo_affine_eval(halo_affine a, int64_t T)
{
	return a.coef_T * T + a.c;
}

/* Saturates at UINT64_MAX so that a hostile manifest's dims fail the range
 * checks instead of wrapping around. */
uint64_t halo_entry_row_bytes(const halo_entry *e)
{
	return e->tokens_out ? sizeof(int32_t) : (uint64_t)e->width * sizeof(float);
}

uint64_t halo_entry_last_row(const halo_entry *e, int64_t T)
{
	uint64_t row = halo_entry_row_bytes(e);
	return (halo_tensor_bytes(&e->output.t, T) / row - 1) * row;
}

uint64_t halo_tensor_bytes(const halo_tensor_ref *t, int64_t T)
{
	uint64_t rows = 1, k = 1;
	for (int i = 0; i < t->rank; i++) {
		int64_t d = halo_affine_eval(t->dim[i], T);
		if (d < 0 || __builtin_mul_overflow(rows, k, &rows))
			return UINT64_MAX;
		k = (uint64_t)d;
	}
	/* a block format stores rows of whole blocks only (plain types have
	 * blocks of 1, so any row does): any other count is invalid */
	uint64_t block = halo_dtype_block(t->dtype), n;
	if (block == 0 || k % block != 0 || k > ((uint64_t)1 << 48) ||
	    __builtin_mul_overflow(rows, (uint64_t)halo_dtype_bytes(t->dtype, 1, k), &n))
		return UINT64_MAX;
	return n;
}

uint64_t halo_tensor_span(const halo_tensor_ref *t, int64_t T)
{
	if (!t->pos_rows)
		return halo_tensor_bytes(t, T);
	uint64_t row = halo_tensor_bytes(t, 1), span;
	return row == UINT64_MAX || __builtin_mul_overflow(row, (uint64_t)t->pos_rows, &span) ? UINT64_MAX : span;
}

uint32_t halo_grid_eval(halo_grid_dim g, int64_t T)
{
	return (uint32_t)((g.a * T + g.b + g.d - 1) / g.d);
}
