#include "codegen/weights.h"

#include <ctype.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/parallel.h"
#include "codegen/quant_policy.h"
#include "passes/graph_query.h"
#include "runtime/drivers/ref/half.h"
#include "runtime/drivers/ref/quant.h"

struct cg_weights {
	const ir_module *m;
	cg_weight_source src;
	uint64_t *offset;
	uint64_t *size;
	halo_dtype *dtype;
	int *alias; /* the earlier weight whose bytes weight i shares, or -1 */
	bool *stored; /* weight i is read by a node: it has bytes in the section */
	char **name; /* the checkpoint name weight i reads (malloc'd; NULL: random weights) */
	int64_t *need_rows; /* stack_pad weights: the real rows their readers reach (0: no bound) */
	int64_t *id_range;  /* tables of ids (moe_route_hash's): random weights draw ids below it (0: none) */
	uint64_t total;
	int n_fallbacks;       /* weights --quant q4_k stores q8_0 (K not a multiple of 256) */
	char fallbacks[512];   /* their names and shapes */
	/* The weight whose stored bytes are in `bytes` (the fill callback walks
	 * the section in order, so one tensor at a time is enough). */
	int cached;
	uint8_t *bytes;
	uint64_t bytes_cap;
	float *f32; /* the tensor being converted, as read */
	uint64_t f32_cap;
	float *parts32; /* an interleaved merge's parts, before interleaving */
	uint64_t parts32_cap;
	cg_progress_fn progress;
	void *progress_ctx;
};

/* Elements a parallel loop's grain takes (codegen/parallel.h). */
enum { GRAIN = 1 << 16 };

/* Rows of K elements a grain takes: about GRAIN elements, at least a row. */
static size_t row_grain(uint64_t K)
{
	return K >= GRAIN ? 1 : GRAIN / K;
}

static uint64_t weight_numel(const ir_weight *w)
{
	uint64_t n = 1;
	for (int i = 0; i < w->shape.rank; i++)
		n *= (uint64_t)w->shape.dim[i].c;
	return n;
}

static char *source_name(const cg_weights *w, const ir_weight *d);

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether two weights take the same rows of their tensors (ir_weight.takes). */
static bool same_takes(const ir_weight *a, const ir_weight *b)
{
	if (a->n_takes != b->n_takes || (a->n_takes && a->rows_groups != b->rows_groups))
		return false;
	for (int k = 0; k < 2 * a->n_takes; k++)
		if (a->takes[k] != b->takes[k])
			return false;
	return true;
}

/* An earlier weight that reads the same checkpoint tensor, transformed and
 * stored the same way (the lm_head of tied embeddings, which falls back to
 * the embedding table): its bytes serve both. Random weights never alias,
 * since each weight's stream follows its own name. */
static int alias_of(const cg_weights *w, int i)
{
	const ir_weight *d = &w->m->weights[i];
	for (int j = 0; w->name[i] && j < i; j++) {
		const ir_weight *e = &w->m->weights[j];
		if (w->alias[j] < 0 && w->dtype[j] == w->dtype[i] && ir_shape_eq(&e->shape, &d->shape) &&
		    same_str(e->transform, d->transform) && same_takes(e, d) && !e->folded && !d->folded &&
		    same_str(w->name[j], w->name[i]))
			return j;
	}
	return -1;
}

/* Appends one fallback's name and shape to w->fallbacks; ", ..." once the
 * next would not fit. */
static void note_fallback(cg_weights *w, const ir_weight *d)
{
	size_t at = strlen(w->fallbacks), room = sizeof(w->fallbacks) - at;
	bool full = at >= 3 && strcmp(w->fallbacks + at - 3, "...") == 0;
	char one[160];
	int n = snprintf(one, sizeof one, "%s%s [", w->n_fallbacks++ ? ", " : "", d->name);
	for (int k = 0; k < d->shape.rank && n > 0 && (size_t)n < sizeof one; k++)
		n += snprintf(one + n, sizeof one - (size_t)n, "%s%lld", k ? ", " : "", (long long)d->shape.dim[k].c);
	if (n > 0 && (size_t)n < sizeof one)
		snprintf(one + n, sizeof one - (size_t)n, "]");
	if (full)
		return;
	snprintf(w->fallbacks + at, room, "%s", strlen(one) + 6 <= room ? one : ", ...");
}

static bool stored_as(const cg_weights *w, int id, halo_dtype t);

/* The block format weight id of class c takes when --quant would store it
 * as `chosen`: the format its checkpoint tensors ship in (fp8 with block
 * scales, MXFP4) when the class allows it and it takes no more bytes than
 * `chosen`, so those bytes are kept, not dequantized and quantized again
 * (V4-Flash's FP4 experts under --quant f8e4m3 stay FP4: exact, and half
 * the bytes); else `chosen`. */
static halo_dtype kept_format(const cg_weights *w, int id, cg_weight_class c, halo_dtype chosen)
{
	static const halo_dtype shipped[] = {HALO_MXFP4, HALO_F8E4M3_B128};
	const ir_shape *s = &w->m->weights[id].shape;
	int64_t k = s->dim[s->rank - 1].c;
	for (size_t i = 0; i < sizeof shipped / sizeof *shipped; i++) {
		halo_dtype t = shipped[i];
		/* 256 elements: a whole block of each format; the rows whole
		 * blocks (a checkpoint's fp8 may end a row in a partial one) */
		if (t != chosen && cg_quant_class_allows(c, t) && k % (int64_t)halo_dtype_block(t) == 0 &&
		    halo_dtype_bytes(t, 1, 256) <= halo_dtype_bytes(chosen, 1, 256) && stored_as(w, id, t))
			return t;
	}
	return chosen;
}

/* Stored dtypes: vectors keep the model file's dtype, matrices take --dtype,
 * and under --quant the weight classes codegen/quant_policy.c names take the
 * block format, or the one their checkpoint tensors ship in (kept_format).
 * Needs the checkpoint names (w->name). */
static bool choose_dtypes(cg_weights *w, char *err, size_t errlen)
{
	const ir_module *m = w->m;
	bool quant = halo_dtype_is_quant(w->src.quant);
	cg_weight_class *cls = quant ? calloc((size_t)m->n_weights + 1, sizeof(*cls)) : NULL;
	if (quant && (!cls || !cg_weight_classes(m, cls))) {
		free(cls);
		snprintf(err, errlen, "out of memory classifying weights");
		return false;
	}
	bool ok = true;
	for (int i = 0; i < m->n_weights && ok; i++) {
		const ir_weight *d = &m->weights[i];
		bool fallback = false;
		w->dtype[i] = d->shape.rank >= 2 ? w->src.matrix_dtype : d->dtype;
		if (quant && d->shape.rank >= 2)
			ok = cg_quant_dtype(cls[i], d->name, &d->shape, w->src.matrix_dtype, w->src.quant, &w->dtype[i],
					    &fallback, err, errlen);
		halo_dtype chosen = w->dtype[i];
		if (ok && quant && halo_dtype_is_quant(chosen))
			w->dtype[i] = kept_format(w, i, cls[i], chosen);
		if (fallback && w->dtype[i] == chosen)
			note_fallback(w, d);
	}
	free(cls);
	return ok;
}

/* The weights some live node reads: the only ones the section holds. A
 * weight that is only a merged matrix's part (passes/merge_matmuls.c) or a
 * norm folded into its readers' matrices is read from the checkpoint while
 * those are built, and stores nothing of its own. */
/* Weights read as tables of expert ids (operand 1 of moe_route_hash): their
 * random stand-ins must be ids below the router's expert count, which
 * id_range[w] gets. */
static void mark_id_tables(const ir_module *m, int64_t *id_range)
{
	for (int fi = 0; fi < m->n_funcs; fi++) {
		const ir_func *f = &m->funcs[fi];
		for (int i = 0; i < f->n_nodes; i++) {
			const ir_node *n = &f->nodes[i];
			if (n->dead || n->op != IR_OP_MOE_ROUTE_HASH || n->n_in < 2)
				continue;
			int p = f->values[n->in[1]].producer;
			const ir_shape *logits = &f->values[n->in[0]].shape;
			const ir_node *src = p >= 0 ? &f->nodes[p] : NULL;
			if (src && src->op == IR_OP_WEIGHT && !src->ref_local && src->ref >= 0 && src->ref < m->n_weights &&
			    logits->rank == 2)
				id_range[src->ref] = logits->dim[1].c;
		}
	}
}

static void mark_stored(const ir_module *m, bool *stored)
{
	for (int fi = 0; fi < m->n_funcs; fi++) {
		const ir_func *f = &m->funcs[fi];
		if (!func_is_live(m, f))
			continue;
		for (int i = 0; i < f->n_nodes; i++) {
			const ir_node *n = &f->nodes[i];
			if (!n->dead && n->op == IR_OP_WEIGHT && !n->ref_local && n->ref >= 0 && n->ref < m->n_weights)
				stored[n->ref] = true;
		}
	}
}

cg_weights *cg_weights_new(const ir_module *m, const cg_weight_source *src, char *err, size_t errlen)
{
	cg_weights *w = calloc(1, sizeof(*w));
	size_t n = (size_t)m->n_weights + 1;
	if (w) {
		w->offset = calloc(n, sizeof(*w->offset));
		w->size = calloc(n, sizeof(*w->size));
		w->dtype = calloc(n, sizeof(*w->dtype));
		w->alias = calloc(n, sizeof(*w->alias));
		w->stored = calloc(n, sizeof(*w->stored));
		w->name = calloc(n, sizeof(*w->name));
		w->need_rows = calloc(n, sizeof(*w->need_rows));
		w->id_range = calloc(n, sizeof(*w->id_range));
	}
	if (!w || !w->offset || !w->size || !w->dtype || !w->alias || !w->stored || !w->name || !w->need_rows ||
	    !w->id_range) {
		cg_weights_free(w);
		snprintf(err, errlen, "out of memory laying out weights");
		return NULL;
	}
	w->m = m;
	w->src = *src;
	w->cached = -1;
	for (int i = 0; i < m->n_weights; i++) {
		const ir_weight *d = &m->weights[i];
		if (src->read && (d->hf_name || d->hf_fallback) && !(w->name[i] = source_name(w, d))) {
			cg_weights_free(w);
			snprintf(err, errlen, "out of memory resolving checkpoint names");
			return NULL;
		}
	}
	if (!choose_dtypes(w, err, errlen)) {
		cg_weights_free(w);
		return NULL;
	}
	mark_stored(m, w->stored);
	mark_id_tables(m, w->id_range);
	for (int i = 0; i < m->n_weights; i++) {
		const ir_weight *d = &m->weights[i];
		int64_t k = d->shape.rank ? d->shape.dim[d->shape.rank - 1].c : 1;
		w->size[i] = halo_dtype_bytes(w->dtype[i], weight_numel(d) / (uint64_t)k, (uint64_t)k);
		w->alias[i] = -1;
		if (!w->stored[i])
			continue; /* read only as a part of a merged matrix, or folded into one, or not at all */
		w->alias[i] = alias_of(w, i);
		if (w->alias[i] >= 0) {
			w->offset[i] = w->offset[w->alias[i]];
			continue;
		}
		w->offset[i] = w->total;
		w->total += (w->size[i] + CG_WEIGHT_ALIGN - 1) / CG_WEIGHT_ALIGN * CG_WEIGHT_ALIGN;
	}
	return w;
}

void cg_weights_free(cg_weights *w)
{
	if (!w)
		return;
	free(w->offset);
	free(w->size);
	free(w->dtype);
	free(w->alias);
	free(w->stored);
	for (int i = 0; w->name && i < w->m->n_weights; i++)
		free(w->name[i]);
	free(w->name);
	free(w->need_rows);
	free(w->id_range);
	free(w->bytes);
	free(w->f32);
	free(w->parts32);
	free(w);
}

const uint64_t *cg_weights_offsets(const cg_weights *w)
{
	return w->offset;
}

bool cg_weights_stored(const cg_weights *w, int id)
{
	return w->stored[id];
}

halo_dtype cg_weights_dtype(const cg_weights *w, int id)
{
	return w->dtype[id];
}

const halo_dtype *cg_weights_dtypes(const cg_weights *w)
{
	return w->dtype;
}

int cg_weights_quant_fallbacks(const cg_weights *w, char *buf, size_t len)
{
	if (len)
		snprintf(buf, len, "%s", w->fallbacks);
	return w->n_fallbacks;
}

uint64_t cg_weights_size(const cg_weights *w)
{
	return w->total;
}

/* FNV-1a: the random stream of a tensor depends on its name and the seed
 * only, never on the order tensors are generated in. */
static uint64_t name_hash(const char *s, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* Output k of the splitmix64 stream that starts at state: counter-based, so
 * any range of a tensor can be generated on its own. */
static uint64_t splitmix_at(uint64_t state, uint64_t k)
{
	uint64_t z = state + (k + 1) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

typedef struct {
	uint64_t state;
	uint64_t period; /* even; 0: none */
	float a, center;
	float *dst;
} random_job;

/* Elements [lo, hi) (lo even): output k gives elements 2k and 2k+1, 24 bits
 * each; with a period, element i takes element i % period's values. */
static void random_range(void *ctx, size_t lo, size_t hi)
{
	const random_job *j = ctx;
	for (uint64_t i = lo; i < hi; i += 2) {
		uint64_t bits = splitmix_at(j->state, (j->period ? i % j->period : i) / 2);
		j->dst[i] = j->center + ((float)(bits >> 40) * 0x1.0p-23f - 1.0f) * j->a;
		if (i + 1 < hi)
			j->dst[i + 1] = j->center + ((float)(bits & 0xffffff) * 0x1.0p-23f - 1.0f) * j->a;
	}
}

/* Uniform in [-a, a) with a = 1/sqrt(fan_in) for matrices, so activations
 * keep unit scale through random layers; vectors (norm weights, biases,
 * decay params) get 1 ± 0.1 so norms neither vanish nor explode. Float math
 * with 24 random bits per value: benchmarks generate billions of them, on
 * every core (the ranges are even, so each output's two draws stay in one). */
static void fill_random(const ir_weight *d, const cg_weight_source *src, float *dst, uint64_t n)
{
	int64_t fan_in = d->shape.rank >= 2 ? d->shape.dim[d->shape.rank - 1].c : 0;
	random_job j = {.state = name_hash(d->name, src->seed), .period = src->period,
			.a = fan_in ? 1.0f / sqrtf((float)fan_in) : 0.1f, .center = fan_in ? 0.0f : 1.0f, .dst = dst};
	cg_parallel_for(n, GRAIN, random_range, &j);
}

/* A random table of ids: each row of k holds k distinct ids below range
 * (a random start, then the next ones around), as a hash router's table
 * does; k > range repeats them. */
static void fill_random_ids(const ir_weight *d, uint64_t seed, float *dst, uint64_t n, int64_t range)
{
	uint64_t k = d->shape.rank ? (uint64_t)d->shape.dim[d->shape.rank - 1].c : 1, state = name_hash(d->name, seed);
	for (uint64_t r = 0; k && r < n / k; r++) {
		uint64_t start = splitmix_at(state, r) % (uint64_t)range;
		for (uint64_t j = 0; j < k; j++)
			dst[r * k + j] = (float)((start + j) % (uint64_t)range);
	}
}

typedef struct {
	const float *src;
	uint16_t *dst;
} half_job;

static void half_range(void *ctx, size_t lo, size_t hi)
{
	const half_job *j = ctx;
	half_from_f32_array(j->src + lo, j->dst + lo, hi - lo);
}

typedef struct {
	halo_dtype t;
	const float *src;
	uint64_t rows, k;
	uint8_t *dst;
	atomic_uint_fast64_t bad; /* 1 + the first element found not finite, or 0 */
} quant_job;

typedef float v4f __attribute__((vector_size(16)));

/* Whether the k floats of row (k a multiple of 4) are all finite: x * 0 is
 * NaN for an infinity or a NaN, and NaN sticks in the sums (4-wide vectors:
 * this runs over every quantized element). */
static bool row_finite(const float *row, uint64_t k)
{
	v4f acc = {0, 0, 0, 0};
	for (uint64_t c = 0; c < k; c += 4) {
		v4f x;
		memcpy(&x, row + c, sizeof x);
		acc += x * 0.0f;
	}
	return acc[0] == 0.0f && acc[1] == 0.0f && acc[2] == 0.0f && acc[3] == 0.0f;
}

/* Rows [lo, hi): each row's bytes depend on its values alone
 * (runtime/drivers/ref/quant.h), so the bytes do not depend on the split. A row
 * holding a value that is not finite is left alone and reported. */
static void quant_range(void *ctx, size_t lo, size_t hi)
{
	quant_job *j = ctx;
	for (uint64_t r = lo; r < hi; r++) {
		const float *row = j->src + r * j->k;
		uint64_t bad = 0;
		if (!row_finite(row, j->k)) /* find the first culprit */
			for (uint64_t c = 0; c < j->k && !bad; c++)
				if (!isfinite(row[c]))
					bad = r * j->k + c + 1;
		if (!bad) {
			halo_quantize_rows(j->t, j->src, j->rows, j->k, r, r + 1, j->dst);
			continue;
		}
		uint_fast64_t cur = atomic_load(&j->bad);
		while ((cur == 0 || bad < cur) && !atomic_compare_exchange_weak(&j->bad, &cur, bad))
			;
	}
}

/* f, n elements of weight d, into its block format t as rows of its last dim. */
/* Row r of weight d as the checkpoint's: a merged matrix's row is its
 * part's (merged_values' placement undone). */
static const ir_weight *source_row(const ir_module *m, const ir_weight *d, uint64_t *r)
{
	if (!d->n_parts)
		return d;
	if (d->interleave) {
		const ir_weight *p = &m->weights[d->parts[*r % 2]];
		*r /= 2;
		return p;
	}
	int k = 0;
	while (k + 1 < d->n_parts && *r >= (uint64_t)m->weights[d->parts[k]].shape.dim[0].c)
		*r -= (uint64_t)m->weights[d->parts[k++]].shape.dim[0].c;
	return &m->weights[d->parts[k]];
}

static bool quantize(const ir_module *m, const ir_weight *d, halo_dtype t, const float *f, uint64_t n,
		     uint8_t *bytes, char *err, size_t errlen)
{
	uint64_t k = (uint64_t)d->shape.dim[d->shape.rank - 1].c;
	quant_job j = {.t = t, .src = f, .rows = n / k, .k = k, .dst = bytes};
	atomic_init(&j.bad, 0);
	/* about 64 Ki elements a range: the threads' start-up stays small */
	cg_parallel_for(j.rows, row_grain(k), quant_range, &j);
	uint64_t bad = atomic_load(&j.bad);
	if (bad) {
		uint64_t row = (bad - 1) / k;
		const ir_weight *s = source_row(m, d, &row);
		snprintf(err, errlen, "weight '%s': element %llu (row %llu, column %llu) is %g; %s stores finite values only",
			 s->name, (unsigned long long)(row * k + (bad - 1) % k), (unsigned long long)row,
			 (unsigned long long)((bad - 1) % k), (double)f[bad - 1], halo_dtype_name(t));
		return false;
	}
	return true;
}

/* A "stack" weight's dim 0 indexes checkpoint tensors, one per value of
 * "{e}" in its name (per-expert MoE tensors stacked into one [E, ...]);
 * "stack_pad" concatenates the pieces' rows whatever their heights and
 * zero-fills the rest of the declared size (an n-gram table sized for the
 * tallest of the layers' tables). */
static bool is_stack_pad(const ir_weight *d)
{
	return d->transform && strcmp(d->transform, "stack_pad") == 0;
}

static bool is_stack(const ir_weight *d)
{
	return d->transform && (strcmp(d->transform, "stack") == 0 || is_stack_pad(d));
}

/* Value transforms, applied to the f32 tensor once it is read. */
static bool apply_transform(const ir_weight *d, float *v, uint64_t n, char *err, size_t errlen)
{
	/* a stack is a layout: read_f32 already assembled it */
	if (!d->transform || strcmp(d->transform, "none") == 0 || is_stack(d))
		return true;
	if (strcmp(d->transform, "offset1") == 0) {
		for (uint64_t i = 0; i < n; i++)
			v[i] += 1.0f;
		return true;
	}
	snprintf(err, errlen, "weight '%s': transform '%s' is not supported by the converter", d->name, d->transform);
	return false;
}

enum { MAX_TENSOR_NAME = 512 };

/* pattern with every "{e}" replaced by e, into buf; false when it does not fit. */
static bool expert_name(const char *pattern, int64_t e, char *buf, size_t len)
{
	size_t n = 0;
	for (const char *p = pattern; *p; p++) {
		bool slot = strncmp(p, "{e}", 3) == 0;
		int k = slot ? snprintf(buf + n, len - n, "%lld", (long long)e) : snprintf(buf + n, len - n, "%c", *p);
		if (k < 0 || (size_t)k >= len - n)
			return false;
		n += (size_t)k;
		p += slot ? 2 : 0;
	}
	return true;
}

static bool tensor_exists(const cg_weights *w, const ir_weight *d, const char *name)
{
	char first[MAX_TENSOR_NAME];
	if (!is_stack(d))
		return w->src.exists(w->src.ctx, name);
	/* a stack is present when its expert 0 is */
	return expert_name(name, 0, first, sizeof(first)) && w->src.exists(w->src.ctx, first);
}

/* `name` with each hf_prefixes rewrite (docs/ir.md) the checkpoint holds
 * tried after it: a malloc'd copy of the first found, or NULL. */
static char *find_name(const cg_weights *w, const ir_weight *d, const char *name)
{
	if (tensor_exists(w, d, name))
		return strdup(name);
	const ir_module *m = w->m;
	for (int i = 0; i < m->n_hf_prefixes; i++) {
		size_t n = strlen(m->hf_prefix_from[i]);
		if (strncmp(name, m->hf_prefix_from[i], n) != 0)
			continue;
		char buf[MAX_TENSOR_NAME];
		if (snprintf(buf, sizeof buf, "%s%s", m->hf_prefix_to[i], name + n) < (int)sizeof buf &&
		    tensor_exists(w, d, buf))
			return strdup(buf);
	}
	return NULL;
}

/* The checkpoint name weight d reads (malloc'd): its hf name, else its
 * fallback (tied embeddings), each as written or rewritten by hf_prefixes;
 * when the checkpoint has none of them, the name a reader's error should
 * show (the fallback's if there is one, else hf). NULL only when out of
 * memory. */
static char *source_name(const cg_weights *w, const ir_weight *d)
{
	const char *names[] = {d->hf_name, d->hf_fallback};
	for (int k = 0; k < 2; k++) {
		char *found = names[k] ? find_name(w, d, names[k]) : NULL;
		if (found)
			return found;
	}
	return strdup(d->hf_fallback ? d->hf_fallback : d->hf_name);
}

static bool read_stacked(cg_weights *w, int id, const char *pattern, float *dst, char *err, size_t errlen)
{
	const ir_weight *d = &w->m->weights[id];
	int64_t inner_shape[IR_MAX_RANK];
	uint64_t inner = 1;
	for (int i = 1; i < d->shape.rank; i++) {
		inner_shape[i - 1] = d->shape.dim[i].c;
		inner *= (uint64_t)d->shape.dim[i].c;
	}
	char name[MAX_TENSOR_NAME];
	/* stack_pad: rows of inner_shape[1:] each, up to the whole weight's */
	uint64_t row = inner / (uint64_t)inner_shape[0], rows_max = (uint64_t)d->shape.dim[0].c * (uint64_t)inner_shape[0];
	uint64_t at = 0; /* elements written */
	for (int64_t e = 0; e < d->shape.dim[0].c; e++) {
		if (!expert_name(pattern, e, name, sizeof(name))) {
			snprintf(err, errlen, "weight '%s': the name '%s' of expert %lld is too long", d->name, pattern,
				 (long long)e);
			return false;
		}
		if (is_stack_pad(d)) {
			int64_t rows = w->src.rows ? w->src.rows(w->src.ctx, name) : -1;
			if (rows < 0 || at / row + (uint64_t)rows > rows_max) {
				snprintf(err, errlen, "weight '%s': piece '%s' %s", d->name, name,
					 rows < 0 ? "is missing" : "takes the table past its declared rows");
				return false;
			}
			inner_shape[0] = rows;
		}
		uint64_t n = is_stack_pad(d) ? (uint64_t)inner_shape[0] * row : inner;
		if (!w->src.read(w->src.ctx, name, inner_shape, d->shape.rank - 1, dst + at, err, errlen))
			return false;
		at += n;
	}
	if (is_stack_pad(d) && (int64_t)(at / row) < w->need_rows[id]) {
		snprintf(err, errlen, "weight '%s': its pieces ('%s') hold %llu rows, its readers reach row %lld", d->name,
			 pattern, (unsigned long long)(at / row), (long long)w->need_rows[id] - 1);
		return false;
	}
	memset(dst + at, 0, (rows_max * row - at) * sizeof(float));
	return true;
}

/* A `rows:` weight (ir_weight.takes): the whole tensor, its dim 0 holding
 * rows_groups equal groups that each reach every range, read into a
 * scratch copy; the ranges' rows gathered from it range-major, group-minor. */
static bool read_rows(cg_weights *w, int id, const char *name, float *dst, char *err, size_t errlen)
{
	const ir_weight *d = &w->m->weights[id];
	int64_t rows = w->src.rows ? w->src.rows(w->src.ctx, name) : -1, groups = d->rows_groups;
	int64_t group = rows > 0 && rows % groups == 0 ? rows / groups : 0;
	for (int k = 0; k < d->n_takes && group; k++)
		if (d->takes[2 * k] + d->takes[2 * k + 1] > group)
			group = 0;
	if (!group) {
		snprintf(err, errlen,
			 "weight '%s': tensor '%s' has %lld rows, not %lld equal groups that each hold its row ranges",
			 d->name, name, (long long)rows, (long long)groups);
		return false;
	}
	int64_t shape[IR_MAX_RANK];
	uint64_t row = 1;
	shape[0] = rows;
	for (int i = 1; i < d->shape.rank; i++) {
		shape[i] = d->shape.dim[i].c;
		row *= (uint64_t)shape[i];
	}
	float *all = malloc((uint64_t)rows * row * sizeof(float));
	if (!all) {
		snprintf(err, errlen, "out of memory reading '%s'", d->name);
		return false;
	}
	bool ok = w->src.read(w->src.ctx, name, shape, d->shape.rank, all, err, errlen);
	for (int k = 0; k < d->n_takes && ok; k++)
		for (int64_t g = 0; g < groups; g++) {
			uint64_t len = (uint64_t)d->takes[2 * k + 1] * row;
			memcpy(dst, all + ((uint64_t)(g * group + d->takes[2 * k])) * row, len * sizeof(float));
			dst += len;
		}
	free(all);
	return ok;
}

static bool read_f32(cg_weights *w, int id, float *dst, uint64_t n, char *err, size_t errlen)
{
	const ir_weight *d = &w->m->weights[id];
	if (!w->src.read) {
		if (w->id_range[id] > 0)
			fill_random_ids(d, w->src.seed, dst, n, w->id_range[id]);
		else
			fill_random(d, &w->src, dst, n);
		return true;
	}
	const char *name = w->name[id];
	if (!name) {
		snprintf(err, errlen, "weight '%s' names no checkpoint tensor", d->name);
		return false;
	}
	if (is_stack(d))
		return read_stacked(w, id, name, dst, err, errlen);
	if (d->n_takes)
		return read_rows(w, id, name, dst, err, errlen);
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < d->shape.rank; i++)
		shape[i] = d->shape.dim[i].c;
	return w->src.read(w->src.ctx, name, shape, d->shape.rank, dst, err, errlen);
}

/* *buf holds at least want bytes, reallocated (contents dropped) only to
 * grow: the buffers are reused from tensor to tensor, so their pages are
 * faulted in once, not once per tensor. */
static bool reserve(void **buf, uint64_t *cap, uint64_t want)
{
	if (want <= *cap)
		return true;
	free(*buf);
	*cap = 0;
	if (!(*buf = malloc(want)))
		return false;
	*cap = want;
	return true;
}

typedef struct {
	float *f;
	const float *scale;
	uint64_t k;
} fold_job;

/* Rows [lo, hi) times the norm weight, column by column. */
static void fold_range(void *ctx, size_t lo, size_t hi)
{
	const fold_job *j = ctx;
	for (uint64_t r = lo; r < hi; r++)
		for (uint64_t c = 0; c < j->k; c++)
			j->f[r * j->k + c] *= j->scale[c];
}

/* A folded matrix (ir_weight.folded): column k of each row times the norm
 * weight's element k plus the fold's offset, in f32 before the matrix is
 * rounded or quantized. The norm weight is read (and transformed) as it
 * would be for its own slot. */
static bool apply_fold(cg_weights *w, const ir_weight *d, float *f, uint64_t n, char *err, size_t errlen)
{
	if (!d->folded)
		return true;
	const ir_weight *g = &w->m->weights[d->fold_norm];
	uint64_t K = (uint64_t)d->shape.dim[d->shape.rank - 1].c;
	if (weight_numel(g) != K) {
		snprintf(err, errlen, "weight '%s': folded norm '%s' holds %llu values, not the %llu columns", d->name,
			 g->name, (unsigned long long)weight_numel(g), (unsigned long long)K);
		return false;
	}
	float *scale = malloc(K * sizeof(float) + 1);
	if (!scale) {
		snprintf(err, errlen, "out of memory folding '%s' into '%s'", g->name, d->name);
		return false;
	}
	bool ok = read_f32(w, d->fold_norm, scale, K, err, errlen) && apply_transform(g, scale, K, err, errlen);
	for (uint64_t k = 0; ok && k < K; k++)
		scale[k] += (float)d->fold_offset;
	if (ok)
		cg_parallel_for(n / K, row_grain(K), fold_range, &(fold_job){f, scale, K});
	free(scale);
	return ok;
}

/* The checkpoint tensor of piece e of weight id: expert e of a stack, else
 * its one tensor. False when the name does not fit. */
static bool piece_name(const cg_weights *w, int id, int64_t e, char *buf, size_t len)
{
	if (is_stack(&w->m->weights[id]))
		return expert_name(w->name[id], e, buf, len);
	return snprintf(buf, len, "%s", w->name[id]) < (int)len;
}

/* Whether weight id's values are checkpoint tensors that format t keeps
 * as stored: each one it reads (every expert of a stack, every part of a
 * merged matrix) is stored as t (fp8 with block scales, packed FP4 with
 * E8M0 scales), and nothing changes the values on the way (no value
 * transform, no folded norm). */
static bool stored_as(const cg_weights *w, int id, halo_dtype t)
{
	const ir_weight *d = &w->m->weights[id];
	if (d->n_parts) { /* a merged matrix: when all its parts are */
		bool all = true;
		for (int k = 0; k < d->n_parts && all; k++)
			all = stored_as(w, d->parts[k], t);
		return all;
	}
	/* rows: gathered rows would split a stored format's 2-D scale blocks */
	bool plain = (!d->transform || strcmp(d->transform, "none") == 0 || strcmp(d->transform, "stack") == 0) &&
		     !d->n_takes;
	if (!w->src.stored_as || !w->name[id] || d->folded || !plain)
		return false;
	int64_t pieces = is_stack(d) ? d->shape.dim[0].c : 1;
	char name[MAX_TENSOR_NAME];
	for (int64_t e = 0; e < pieces; e++)
		if (!piece_name(w, id, e, name, sizeof name) || w->src.stored_as(w->src.ctx, name) != t)
			return false;
	return true;
}

/* Whether weight id is stored straight from those tensors, in the format
 * they are stored in. Else it is converted to f32 and quantized like any
 * other. */
static bool keeps_stored(const cg_weights *w, int id)
{
	return halo_dtype_is_quant(w->dtype[id]) && stored_as(w, id, w->dtype[id]);
}

/* Weight id's tensors copied as stored into bytes of format t (the
 * weight's dtype, or its merged matrix's for a part): a stack's expert e is
 * rows e * N .. of the [E * N, K] rows, in both regions. */
static bool read_stored(cg_weights *w, int id, halo_dtype t, uint8_t *bytes, char *err, size_t errlen)
{
	const ir_weight *d = &w->m->weights[id];
	int first = is_stack(d) ? 1 : 0, rank = d->shape.rank - first;
	int64_t shape[IR_MAX_RANK] = {0};
	uint64_t piece = 1;
	for (int i = 0; i < rank; i++) {
		shape[i] = d->shape.dim[first + i].c;
		piece *= (uint64_t)shape[i];
	}
	uint64_t k = (uint64_t)shape[rank - 1], n = weight_numel(d);
	halo_quant_layout l = halo_quant_layout_of(t, n / k, k);
	char name[MAX_TENSOR_NAME];
	for (uint64_t at = 0; at < n; at += piece) {
		uint64_t r = at / k; /* the piece's first row */
		if (!piece_name(w, id, (int64_t)(at / piece), name, sizeof name) || /* fits: keeps_stored checked */
		    !w->src.read_stored(w->src.ctx, name, t, shape, rank, bytes + r * l.values_row_bytes,
					bytes + l.scales_offset + r * l.scales_row_bytes, err, errlen))
			return false;
	}
	return true;
}

/* A merged matrix of parts kept as stored: each part's rows, codes and
 * scales alike, placed as merged_values places f32 rows (the bytes are the
 * checkpoint's, rearranged; no value is requantized). */
static bool read_stored_merged(cg_weights *w, int id, uint8_t *bytes, char *err, size_t errlen)
{
	const ir_weight *d = &w->m->weights[id];
	halo_dtype t = w->dtype[id];
	uint64_t K = (uint64_t)d->shape.dim[1].c;
	halo_quant_layout l = halo_quant_layout_of(t, (uint64_t)d->shape.dim[0].c, K);
	uint64_t at = 0, vb = l.values_row_bytes, sb = l.scales_row_bytes;
	bool ok = true;
	for (int k = 0; ok && k < d->n_parts; k++) {
		int p = d->parts[k];
		uint64_t rows = (uint64_t)w->m->weights[p].shape.dim[0].c;
		halo_quant_layout pl = halo_quant_layout_of(t, rows, K);
		uint8_t *part = malloc(halo_dtype_bytes(t, rows, K) + 1);
		ok = part && read_stored(w, p, t, part, err, errlen);
		for (uint64_t r = 0; ok && r < rows; r++) {
			uint64_t to = d->interleave ? 2 * r + (uint64_t)k : at + r;
			memcpy(bytes + to * vb, part + r * vb, vb);
			memcpy(bytes + l.scales_offset + to * sb, part + pl.scales_offset + r * sb, sb);
		}
		if (!part)
			snprintf(err, errlen, "out of memory merging '%s'", d->name);
		free(part);
		at += rows;
	}
	return ok;
}

/* The f32 values of weight id as its readers see them: read,
 * transformed, folded. */
static bool values_of(cg_weights *w, int id, float *f, char *err, size_t errlen)
{
	const ir_weight *d = &w->m->weights[id];
	uint64_t n = weight_numel(d);
	return read_f32(w, id, f, n, err, errlen) && apply_transform(d, f, n, err, errlen) &&
	       apply_fold(w, d, f, n, err, errlen);
}

/* Rows [lo, hi) of an interleaved merge's two parts of `rows` rows each
 * (stacked in src): row r of part k to row 2r + k of dst. */
typedef struct {
	float *dst;
	const float *src;
	uint64_t rows, K;
} interleave_job;

static void interleave_range(void *ctx, size_t lo, size_t hi)
{
	const interleave_job *j = ctx;
	for (uint64_t r = lo; r < hi; r++)
		memcpy(j->dst + ((r % j->rows) * 2 + r / j->rows) * j->K, j->src + r * j->K, j->K * sizeof(float));
}

/* A merged matrix (ir_weight.parts): each part's values, its rows one after
 * another, or interleaved row by row. The parts of an interleaved one are
 * read into a second buffer kept across tensors, like f32, and interleaved
 * on every core: a fresh buffer a tensor and a one-core copy were 0.8 GB of
 * first-touch page faults and a serial 100 MB copy a layer for the gate/up
 * pairs of an 8-layer, 2048-wide checkpoint. */
static bool merged_values(cg_weights *w, const ir_weight *d, float *f, char *err, size_t errlen)
{
	uint64_t n = weight_numel(d), K = (uint64_t)d->shape.dim[1].c;
	if (d->interleave && !reserve((void **)&w->parts32, &w->parts32_cap, n * sizeof(float) + 1)) {
		snprintf(err, errlen, "out of memory merging '%s'", d->name);
		return false;
	}
	float *dst = d->interleave ? w->parts32 : f;
	bool ok = true;
	for (int k = 0; ok && k < d->n_parts; k++) {
		ok = values_of(w, d->parts[k], dst, err, errlen);
		dst += weight_numel(&w->m->weights[d->parts[k]]);
	}
	if (ok && d->interleave) {
		interleave_job j = {f, w->parts32, n / K / 2, K};
		cg_parallel_for(2 * j.rows, row_grain(K), interleave_range, &j);
	}
	return ok;
}

/* The f32 values of weight id converted to its stored dtype into bytes. */
static bool convert(cg_weights *w, int id, uint8_t *bytes, char *err, size_t errlen)
{
	const ir_weight *d = &w->m->weights[id];
	uint64_t n = weight_numel(d);
	if (!reserve((void **)&w->f32, &w->f32_cap, n * sizeof(float) + 1)) {
		snprintf(err, errlen, "out of memory loading weight '%s'", d->name);
		return false;
	}
	float *f = w->f32;
	bool ok = d->n_parts ? merged_values(w, d, f, err, errlen) : values_of(w, id, f, err, errlen);
	if (ok && w->dtype[id] == HALO_F16)
		cg_parallel_for(n, GRAIN, half_range, &(half_job){f, (uint16_t *)bytes});
	else if (ok && w->dtype[id] == HALO_F32)
		memcpy(bytes, f, n * sizeof(float));
	else if (ok && halo_dtype_is_quant(w->dtype[id]))
		ok = quantize(w->m, d, w->dtype[id], f, n, bytes, err, errlen);
	else if (ok) {
		snprintf(err, errlen, "weight '%s': cannot store dtype %s", d->name, halo_dtype_name(w->dtype[id]));
		ok = false;
	}
	return ok;
}

/* Materialises weight id's stored bytes into w->bytes. */
static bool load_weight(cg_weights *w, int id, char *err, size_t errlen)
{
	w->cached = -1; /* w->bytes is about to change */
	if (!reserve((void **)&w->bytes, &w->bytes_cap, w->size[id] + 1)) {
		snprintf(err, errlen, "out of memory loading weight '%s'", w->m->weights[id].name);
		return false;
	}
	const ir_weight *d = &w->m->weights[id];
	bool ok = !keeps_stored(w, id) ? convert(w, id, w->bytes, err, errlen)
		  : d->n_parts         ? read_stored_merged(w, id, w->bytes, err, errlen)
				       : read_stored(w, id, w->dtype[id], w->bytes, err, errlen);
	if (ok)
		w->cached = id;
	return ok;
}

/* name matches pattern with "{e}" standing for a non-empty run of digits. */
static bool matches_expert(const char *pattern, const char *name)
{
	const char *slot = strstr(pattern, "{e}");
	if (!slot)
		return strcmp(pattern, name) == 0;
	size_t head = (size_t)(slot - pattern);
	if (strncmp(pattern, name, head) != 0)
		return false;
	const char *p = name + head;
	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	return matches_expert(slot + 3, p);
}

/* The tensor whose block scale `name` is (codegen/safetensors.h): name
 * less "_scale_inv", or "B.weight" for "B.scale"; false when it is neither. */
static bool scaled_tensor(const char *name, char *base, size_t len)
{
	size_t n = strlen(name), inv = strlen("_scale_inv"), up = strlen(".scale");
	if (n > inv && strcmp(name + n - inv, "_scale_inv") == 0)
		return snprintf(base, len, "%.*s", (int)(n - inv), name) < (int)len;
	if (n > up && strcmp(name + n - up, ".scale") == 0)
		return snprintf(base, len, "%.*s.weight", (int)(n - up), name) < (int)len;
	return false;
}

bool cg_weights_reads(const cg_weights *w, const char *name)
{
	char base[MAX_TENSOR_NAME];
	bool scale = scaled_tensor(name, base, sizeof base);
	for (int i = 0; i < w->m->n_weights; i++) {
		const char *r = w->name[i];
		if (r && (matches_expert(r, name) || (scale && matches_expert(r, base))))
			return true;
	}
	return false;
}

void cg_weights_need_rows(cg_weights *w, uint64_t offset, int64_t rows)
{
	for (int i = 0; i < w->m->n_weights; i++)
		if (w->stored[i] && w->offset[i] == offset && w->alias[i] < 0 && rows > w->need_rows[i])
			w->need_rows[i] = rows;
}

void cg_weights_set_progress(cg_weights *w, cg_progress_fn fn, void *ctx)
{
	w->progress = fn;
	w->progress_ctx = ctx;
}

int cg_weights_fill(void *ctx, uint64_t offset, void *buf, size_t len, char *err, size_t errlen)
{
	cg_weights *w = ctx;
	uint8_t *out = buf;
	memset(out, 0, len); /* alignment padding is zero: same inputs, same bytes */
	for (int i = 0; i < w->m->n_weights; i++) {
		uint64_t lo = w->offset[i], hi = lo + w->size[i];
		if (!w->stored[i] || w->alias[i] >= 0 || hi <= offset || lo >= offset + len)
			continue; /* an alias's bytes are its original's */
		if (w->cached != i && !load_weight(w, i, err, errlen))
			return 1;
		uint64_t from = lo > offset ? lo : offset, to = hi < offset + len ? hi : offset + len;
		memcpy(out + (from - offset), w->bytes + (from - lo), to - from);
	}
	if (w->progress)
		w->progress(w->progress_ctx, offset + len, w->total);
	return 0;
}
