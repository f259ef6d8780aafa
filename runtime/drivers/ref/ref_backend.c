/* The CPU reference backend: runs a bundle's dispatch lists with the
 * runtime/ref ops, in f32. It is the oracle the GPU backends are held to, so
 * it interprets every dispatch's recorded semantics (op, attributes, fused
 * prologue and epilogue) and never looks at the kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/backend.h"
#include "runtime/drivers/ref/half.h"
#include "runtime/drivers/ref/quant.h"
#include "runtime/drivers/ref/ref_ops.h"
#include "runtime/drivers/ref/ref_exec.h"

struct halo_backend {
	const halo_manifest *manifest;
	const uint8_t *weights;
	/* f32 copies of f16/bf16 and block-quantized weights, parallel to
	 * manifest->weights; NULL where the bundle already stores f32. */
	float **converted;
	uint64_t act_bytes; /* the largest activation arena of any entry */
};

struct halo_backend_session {
	halo_backend *b;
	uint8_t *state;
	uint8_t *act;
};

static uint64_t decl_numel(const halo_buffer_decl *w)
{
	uint64_t n = 1;
	for (int i = 0; i < w->rank; i++)
		n *= (uint64_t)w->shape[i];
	return n;
}

static bool convert_weights(halo_backend *b, char *err, size_t errlen)
{
	const halo_manifest *m = b->manifest;
	b->converted = calloc((size_t)m->n_weights + 1, sizeof(*b->converted));
	if (!b->converted)
		goto oom;
	for (int i = 0; i < m->n_weights; i++) {
		const halo_buffer_decl *w = &m->weights[i];
		if (w->dtype == HALO_F32 || w->dtype == HALO_I32)
			continue;
		uint64_t n = decl_numel(w);
		float *f = malloc(n * sizeof(float) + 1);
		if (!f)
			goto oom;
		const uint16_t *src = (const uint16_t *)(b->weights + w->offset);
		if (halo_dtype_is_quant(w->dtype)) {
			/* rows of the last dim (the manifest reader checked it is a
			 * whole number of blocks and the bytes fit) */
			uint64_t k = (uint64_t)w->shape[w->rank - 1];
			halo_dequantize_rows(w->dtype, b->weights + w->offset, n / k, k, 0, n / k, f);
		} else if (w->dtype == HALO_F16)
			half_to_f32_array(src, f, n);
		else if (w->dtype == HALO_BF16)
			bf16_to_f32_array(src, f, n);
		else {
			free(f);
			snprintf(err, errlen, "ref backend: weight '%s' has dtype %s, which it cannot read", w->name,
				 halo_dtype_name(w->dtype));
			return false;
		}
		b->converted[i] = f;
	}
	return true;
oom:
	snprintf(err, errlen, "ref backend: out of memory converting weights");
	return false;
}

static void ref_destroy(halo_backend *b)
{
	if (!b)
		return;
	for (int i = 0; b->converted && i < b->manifest->n_weights; i++)
		free(b->converted[i]);
	free(b->converted);
	free(b);
}

static halo_backend *ref_create(const halo_backend_load *load, char *err, size_t errlen)
{
	halo_backend *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "ref backend: out of memory");
		return NULL;
	}
	b->manifest = load->manifest;
	b->weights = load->weights;
	for (int i = 0; i < b->manifest->n_entries; i++)
		if (b->manifest->entries[i].act_bytes > b->act_bytes)
			b->act_bytes = b->manifest->entries[i].act_bytes;
	if (!convert_weights(b, err, errlen)) {
		ref_destroy(b);
		return NULL;
	}
	return b;
}

static void ref_session_destroy(halo_backend_session *s)
{
	if (!s)
		return;
	free(s->state);
	free(s->act);
	free(s);
}

static halo_backend_session *ref_session_create(halo_backend *b, char *err, size_t errlen)
{
	halo_backend_session *s = calloc(1, sizeof(*s));
	if (s) {
		s->b = b;
		s->state = calloc(1, b->manifest->state_bytes + 16);
		s->act = calloc(1, b->act_bytes + 16);
	}
	if (!s || !s->state || !s->act) {
		ref_session_destroy(s);
		snprintf(err, errlen, "ref backend: out of memory for session buffers");
		return NULL;
	}
	return s;
}

static bool ref_state_clear(halo_backend_session *s, char *err, size_t errlen)
{
	memset(s->state, 0, s->b->manifest->state_bytes);
	return true;
}

/* Weight operands are addressed by byte offset into the weights section;
 * converted weights are found through the declaration that starts there. */
static void *weight_ptr(const halo_backend *b, uint64_t offset)
{
	const halo_manifest *m = b->manifest;
	int lo = 0, hi = m->n_weights - 1;
	while (lo <= hi) { /* declarations are sorted by offset (docs/manifest.md) */
		int mid = (lo + hi) / 2;
		const halo_buffer_decl *w = &m->weights[mid];
		if (offset < w->offset)
			hi = mid - 1;
		else if (offset >= w->offset + w->size)
			lo = mid + 1;
		else if (b->converted[mid] && halo_dtype_is_quant(w->dtype))
			/* a quantized weight is only ever read whole: the manifest
			 * reader refuses a quantized operand anywhere but at the start
			 * of a weight declared in its format */
			return offset == w->offset ? b->converted[mid] : NULL;
		else if (b->converted[mid])
			return (uint8_t *)b->converted[mid] + (offset - w->offset) / halo_dtype_size(w->dtype) * 4;
		else
			break;
	}
	return (void *)(b->weights + offset);
}

static void *resolve(void *ctx, const halo_tensor_ref *t)
{
	halo_backend_session *s = ctx;
	switch (t->space) {
	case HALO_SPACE_WEIGHT:
		return weight_ptr(s->b, t->offset);
	case HALO_SPACE_STATE:
		return s->state + t->offset;
	case HALO_SPACE_ACT:
	case HALO_SPACE_COUNT:
		break;
	}
	return s->act + t->offset;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static bool ref_run(halo_backend_session *s, const halo_entry *e, int64_t T, int64_t pos, const int32_t *tokens,
		    const void **out, double *dispatch_ns, char *err, size_t errlen)
{
	memcpy(s->act + e->input.t.offset, tokens, (size_t)T * sizeof(int32_t));
	for (int i = 0; i < e->n_dispatch; i++) {
		double t0 = dispatch_ns ? now_ns() : 0;
		if (!ref_exec_dispatch(&e->dispatch[i], T, pos, resolve, s, err, errlen))
			return false;
		if (dispatch_ns)
			dispatch_ns[i] += now_ns() - t0;
	}
	*out = s->act + e->output.t.offset;
	return true;
}

/* The recurrent ranges of the state arena (manifest->recurrent), packed. */
struct halo_backend_checkpoint {
	halo_backend_session *s;
	uint8_t *state;
};

static halo_backend_checkpoint *ref_checkpoint_create(halo_backend_session *s, char *err, size_t errlen)
{
	halo_backend_checkpoint *c = calloc(1, sizeof(*c));
	if (c)
		c->state = malloc(s->b->manifest->recurrent_bytes + 1); /* + 1: never malloc(0) */
	if (!c || !c->state) {
		free(c);
		snprintf(err, errlen, "ref backend: out of memory for a checkpoint");
		return NULL;
	}
	c->s = s;
	return c;
}

static void ref_checkpoint_destroy(halo_backend_checkpoint *c)
{
	if (c)
		free(c->state);
	free(c);
}

static bool ref_checkpoint_copy(halo_backend_checkpoint *c, bool save, char *err, size_t errlen)
{
	const halo_manifest *m = c->s->b->manifest;
	for (int i = 0; i < m->n_recurrent; i++) {
		const halo_state_range *r = &m->recurrent[i];
		uint8_t *live = c->s->state + r->offset, *kept = c->state + r->packed;
		memcpy(save ? kept : live, save ? live : kept, r->size);
	}
	return true;
}

static bool ref_keep_slot(halo_backend_session *s, int64_t slot, char *err, size_t errlen)
{
	const halo_manifest *m = s->b->manifest;
	for (int i = 0; i < m->n_slots; i++) {
		const halo_state_slots *k = &m->slots[i];
		memcpy(s->state + k->state, s->state + k->slots + (uint64_t)slot * k->size, k->size);
	}
	return true;
}

static int ref_validation_messages(const halo_backend *b)
{
	return 0;
}

const halo_backend_ops halo_ref_backend = {
	.name = "ref",
	.create = ref_create,
	.destroy = ref_destroy,
	.session_create = ref_session_create,
	.session_destroy = ref_session_destroy,
	.state_clear = ref_state_clear,
	.run = ref_run,
	.validation_messages = ref_validation_messages,
	.checkpoint_create = ref_checkpoint_create,
	.checkpoint_destroy = ref_checkpoint_destroy,
	.checkpoint_copy = ref_checkpoint_copy,
	.keep_slot = ref_keep_slot,
};
