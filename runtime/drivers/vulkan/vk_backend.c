/* The Vulkan backend: weights uploaded once, one candidate picked per kernel
 * choice at load (a forced position, the tuning database's record for this
 * device, or the heuristic: the first candidate the device can run), a
 * pipeline per picked kernel (per runnable candidate when tuning), one
 * descriptor set per dispatch, and per (entry, T) a command buffer recorded
 * once and replayed for every step of that shape: one submit per step.
 *
 * All candidates of a choice bind the same buffers (manifest_parse checks
 * it), so a dispatch's descriptor set, allocated from one candidate's set
 * layout, stays valid for the others (identically defined layouts are
 * compatible): changing a pick re-records command buffers, nothing else.
 *
 * What changes between replays lives in memory, not in the recording: the
 * host writes the step record {pos, T} and the token ids into a mapped
 * staging buffer; the recording copies them into the step buffer every
 * kernel sees as its last binding (kernels/vulkan/README.md) and into the
 * activation arena, runs the dispatches, and copies the logits back into the
 * staging buffer. T is also a push constant, fixed per recording; a
 * recording of T <= VK_PIPELINE_SPEC_T_MAX binds the kernels' pipelines
 * specialised for T (vk_pipeline_for_t), made when first recorded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/backend.h"
#include "runtime/halo.h"
#include "runtime/drivers/vulkan/vk_buffer.h"
#include "runtime/drivers/vulkan/vk_cmd.h"
#include "runtime/drivers/vulkan/vk_device.h"
#include "runtime/drivers/vulkan/vk_pipeline.h"
#include "runtime/drivers/vulkan/vk_weight_chunks.h"

typedef struct {
	vk_chunk_range range;
	vk_buffer buf;
} weight_chunk;

struct halo_backend {
	const halo_manifest *manifest;
	vk_ctx *ctx;
	int n_chunks;
	weight_chunk *chunks;
	vk_pipeline *pipelines; /* per manifest kernel; created for picked kernels (runnable candidates when tuning) */
	bool tune;
	int *pick;                  /* per choice: the candidate position it runs */
	halo_pick_source *source;   /* per choice: where the pick came from */
	uint64_t generation;        /* bumped when picks change; older recordings are recorded again */
};

/* One recorded replay of an entry for one token count; a profiled one also
 * writes a timestamp after every dispatch (slot i + 1 after dispatch i). */
typedef struct {
	const halo_entry *entry;
	int64_t T;
	int64_t chain; /* 0, or the steps of a greedy chain (vk_chain) */
	bool profiled;
	uint64_t generation; /* the backend's picks it was recorded with */
	vk_cmd cmd;
	vk_timer timer;
} recording;

static void recording_destroy(vk_ctx *ctx, recording *r)
{
	vk_cmd_destroy(ctx, &r->cmd);
	vk_timer_destroy(ctx, &r->timer);
}

/* Layout of the mapped staging buffer `io`: step records (a chain's one
 * per step), token ids, then the output (a chain's tokens). */
#define IO_STEP 0
#define IO_TOKENS 256
_Static_assert(IO_STEP + 16 * HALO_CHAIN_MAX <= IO_TOKENS, "a chain's step records overlap the token ids");

struct halo_backend_session {
	halo_backend *b;
	vk_buffer state, act, step;
	vk_buffer io;          /* host-visible: step record, token ids, logits */
	uint64_t io_logits;    /* offset of the logits in io */
	uint64_t act_bytes;
	vk_descriptors desc;
	VkDescriptorSet **sets; /* [entry][dispatch] */
	int n_rec;
	recording *rec;
	/* keep[i]: the copies that make slot i the state (vk_keep_slot),
	 * recorded at first use; n_keep = the slots' count. */
	int64_t n_keep;
	vk_cmd *keep;
};

static bool vk_to_err(const vk_error *e, char *err, size_t errlen)
{
	snprintf(err, errlen, "vulkan backend: %s", e->msg);
	return false;
}

/* Cuts the weights into chunks within the device's limits
 * (vk_weight_chunks.h). */
static bool plan_chunks(halo_backend *b, char *err, size_t errlen)
{
	const halo_manifest *m = b->manifest;
	const vk_device_info *d = &b->ctx->info;
	vk_weight_limits lim = {.chunk = d->max_allocation < d->max_buffer ? d->max_allocation : d->max_buffer,
				.binding = d->max_storage_range};
	vk_chunk_range *ranges = calloc((size_t)m->n_weights + 1, sizeof(*ranges));
	b->chunks = calloc((size_t)m->n_weights + 1, sizeof(*b->chunks));
	bool ok = ranges && b->chunks;
	if (!ok)
		snprintf(err, errlen, "vulkan backend: out of memory");
	else
		ok = vk_plan_weight_chunks(m->weights, m->n_weights, &lim, ranges, &b->n_chunks, err, errlen);
	for (int i = 0; ok && i < b->n_chunks; i++)
		b->chunks[i].range = ranges[i];
	free(ranges);
	return ok;
}

static bool upload_weights(halo_backend *b, const uint8_t *weights, char *err, size_t errlen)
{
	vk_error e;
	for (int i = 0; i < b->n_chunks; i++) {
		weight_chunk *c = &b->chunks[i];
		uint64_t size = c->range.end - c->range.start;
		if (!vk_buffer_create(b->ctx, size ? size : 4, VK_BUFFER_DEVICE, &c->buf, &e))
			return vk_to_err(&e, err, errlen);
		/* Pieces of 64 MiB keep the staging buffer small. */
		for (uint64_t off = 0; off < size; off += (uint64_t)64 << 20) {
			uint64_t n = size - off < ((uint64_t)64 << 20) ? size - off : (uint64_t)64 << 20;
			if (!vk_buffer_upload(b->ctx, &c->buf, off, weights + c->range.start + off, n, &e))
				return vk_to_err(&e, err, errlen);
		}
	}
	return true;
}

/* A candidate runs when the bundle has its SPIR-V and the device its
 * features. */
static bool device_runs(const halo_backend *b, const halo_kernel *k)
{
	return k->code[HALO_TARGET_VULKAN].size && (k->needs & ~b->ctx->info.features) == 0;
}

static const halo_kernel *candidate(const halo_backend *b, int choice, int pos)
{
	const halo_manifest *m = b->manifest;
	return &m->kernels[m->choices[choice].kernel[pos]];
}

/* The kernel dispatch d runs. */
static int picked_kernel(const halo_backend *b, const halo_dispatch *d)
{
	return b->manifest->choices[d->choice].kernel[b->pick[d->choice]];
}

/* The first candidate the device runs; manifest_parse made sure every
 * choice has one that needs nothing. */
static int heuristic_pick(const halo_backend *b, int choice)
{
	const halo_choice *ch = &b->manifest->choices[choice];
	for (int i = 0; i < ch->n; i++)
		if (device_runs(b, candidate(b, choice, i)))
			return i;
	return 0;
}

/* The candidate with the database's tile for this device and key, if the
 * device runs it; else -1 (no record, a tile this bundle lacks, or needs the
 * device has not: all fall back to the heuristic). */
static int tuned_pick(const halo_backend *b, const halo_tuning_db *db, int choice)
{
	const vk_device_info *d = &b->ctx->info;
	const halo_choice *ch = &b->manifest->choices[choice];
	const halo_tuning_record *r = halo_tuning_db_find(db, d->vendor_id, d->device_id, d->driver_version, ch->key);
	for (int i = 0; r && i < ch->n; i++)
		if (strcmp(candidate(b, choice, i)->tile, r->tile) == 0 && device_runs(b, candidate(b, choice, i)))
			return i;
	return -1;
}

/* Forced positions: each in range and runnable here, else nothing changes. */
static bool check_forced(const halo_backend *b, const int *picks, char *err, size_t errlen)
{
	const halo_manifest *m = b->manifest;
	for (int c = 0; picks && c < m->n_choices; c++) {
		int p = picks[c];
		if (p < 0)
			continue;
		if (p >= m->choices[c].n) {
			snprintf(err, errlen, "vulkan backend: choice %d ('%s') has %d candidates, position %d asked for", c,
				 m->choices[c].key, m->choices[c].n, p);
			return false;
		}
		if (!device_runs(b, candidate(b, c, p)) || (b->pipelines && !b->pipelines[m->choices[c].kernel[p]].pipeline)) {
			snprintf(err, errlen, "vulkan backend: kernel %s needs device features %s lacks",
				 candidate(b, c, p)->signature, b->ctx->info.name);
			return false;
		}
	}
	return true;
}

static bool choose_kernels(halo_backend *b, const halo_backend_load *load, char *err, size_t errlen)
{
	const halo_manifest *m = b->manifest;
	b->pick = calloc((size_t)m->n_choices + 1, sizeof(*b->pick));
	b->source = calloc((size_t)m->n_choices + 1, sizeof(*b->source));
	if (!b->pick || !b->source) {
		snprintf(err, errlen, "vulkan backend: out of memory");
		return false;
	}
	if (!check_forced(b, load->picks, err, errlen))
		return false;
	for (int c = 0; c < m->n_choices; c++) {
		int tuned = load->tuning ? tuned_pick(b, load->tuning, c) : -1;
		if (load->picks && load->picks[c] >= 0) {
			b->pick[c] = load->picks[c];
			b->source[c] = HALO_PICK_FORCED;
		} else if (tuned >= 0) {
			b->pick[c] = tuned;
			b->source[c] = HALO_PICK_TUNED;
		} else {
			b->pick[c] = heuristic_pick(b, c);
			b->source[c] = HALO_PICK_HEURISTIC;
		}
	}
	return true;
}

/* Which kernels get a pipeline: the picked ones; when tuning, every
 * candidate the device runs (any may be picked later). */
static bool *wanted_kernels(const halo_backend *b)
{
	const halo_manifest *m = b->manifest;
	bool *want = calloc((size_t)m->n_kernels + 1, sizeof(*want));
	for (int c = 0; want && c < m->n_choices; c++)
		for (int i = 0; i < m->choices[c].n; i++)
			want[m->choices[c].kernel[i]] |= i == b->pick[c] || (b->tune && device_runs(b, candidate(b, c, i)));
	return want;
}

static bool create_pipelines(halo_backend *b, const uint8_t *spirv, char *err, size_t errlen)
{
	const halo_manifest *m = b->manifest;
	bool *want = wanted_kernels(b);
	b->pipelines = calloc((size_t)m->n_kernels + 1, sizeof(*b->pipelines));
	if (!b->pipelines || !want) {
		free(want);
		snprintf(err, errlen, "vulkan backend: out of memory");
		return false;
	}
	for (int i = 0; i < m->n_kernels; i++) {
		const halo_kernel *k = &m->kernels[i];
		vk_error e;
		if (want[i] && !vk_pipeline_create(b->ctx, (const uint32_t *)(spirv + k->code[HALO_TARGET_VULKAN].offset),
						   k->code[HALO_TARGET_VULKAN].size / 4, k->n_bindings, k->push_size,
						   &b->pipelines[i], &e)) {
			snprintf(err, errlen, "vulkan backend: kernel '%s': %s", k->signature, e.msg);
			free(want);
			return false;
		}
	}
	free(want);
	return true;
}

static void vk_backend_destroy(halo_backend *b)
{
	if (!b)
		return;
	for (int i = 0; b->pipelines && i < b->manifest->n_kernels; i++)
		vk_pipeline_destroy(b->ctx, &b->pipelines[i]);
	free(b->pipelines);
	free(b->pick);
	free(b->source);
	for (int i = 0; i < b->n_chunks; i++)
		vk_buffer_destroy(b->ctx, &b->chunks[i].buf);
	free(b->chunks);
	vk_ctx_destroy(b->ctx);
	free(b);
}

static halo_backend *vk_backend_create(const halo_backend_load *load, char *err, size_t errlen)
{
	halo_backend *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "vulkan backend: out of memory");
		return NULL;
	}
	b->manifest = load->manifest;
	b->tune = load->tune;
	if (!b->manifest->has_target[HALO_TARGET_VULKAN] || !load->code[HALO_TARGET_VULKAN]) {
		snprintf(err, errlen, "vulkan backend: the bundle was compiled without Vulkan kernels (halo compile "
				      "--targets without vulkan); run it with --backend ref or recompile it");
		free(b);
		return NULL;
	}
	vk_ctx_options opt = {.validation = load->validation, .device_index = load->device};
	vk_error e;
	if (!vk_ctx_create(&opt, &b->ctx, &e)) {
		vk_to_err(&e, err, errlen);
		goto fail;
	}
	if (!choose_kernels(b, load, err, errlen) || !plan_chunks(b, err, errlen) ||
	    !upload_weights(b, load->weights, err, errlen) || !create_pipelines(b, load->code[HALO_TARGET_VULKAN], err, errlen))
		goto fail;
	return b;
fail:
	vk_backend_destroy(b);
	return NULL;
}

static int vk_picked(const halo_backend *b, int choice, halo_pick_source *source)
{
	if (source)
		*source = b->source[choice];
	return b->pick[choice];
}

static bool vk_set_picks(halo_backend *b, const int *picks, char *err, size_t errlen)
{
	if (!b->tune) {
		snprintf(err, errlen, "vulkan backend: picks change only on a model opened for tuning");
		return false;
	}
	if (!check_forced(b, picks, err, errlen))
		return false;
	for (int c = 0; c < b->manifest->n_choices; c++) {
		if (picks[c] < 0)
			continue;
		b->pick[c] = picks[c];
		b->source[c] = HALO_PICK_FORCED;
	}
	b->generation++;
	return true;
}

static void vk_device(const halo_backend *b, halo_device_id *out)
{
	const vk_device_info *d = &b->ctx->info;
	memset(out, 0, sizeof(*out));
	out->vendor = d->vendor_id;
	out->device = d->device_id;
	out->driver = d->driver_version;
	out->features = d->features;
	snprintf(out->name, sizeof(out->name), "%s", d->name);
}

/* The (buffer, offset, range) an operand binds, at the entry's t_max. */
static bool operand_binding(halo_backend_session *s, const halo_entry *e, const halo_tensor_ref *t, vk_binding *out)
{
	uint64_t range = halo_tensor_span(t, e->t_max); /* at pos: the kernel adds pos rows itself */
	if (range == 0)
		range = 4;
	switch (t->space) {
	case HALO_SPACE_WEIGHT:
		for (int i = 0; i < s->b->n_chunks; i++) {
			const weight_chunk *c = &s->b->chunks[i];
			if (t->offset >= c->range.start && t->offset + range <= c->range.end) {
				*out = (vk_binding){c->buf.buffer, t->offset - c->range.start, range};
				return true;
			}
		}
		return false;
	case HALO_SPACE_STATE:
		*out = (vk_binding){s->state.buffer, t->offset, range};
		return true;
	case HALO_SPACE_ACT:
	case HALO_SPACE_COUNT:
		break;
	}
	*out = (vk_binding){s->act.buffer, t->offset, range};
	return true;
}

static bool bind_dispatch(halo_backend_session *s, const halo_entry *e, const halo_dispatch *d,
			  VkDescriptorSet *set, char *err, size_t errlen)
{
	const vk_pipeline *p = &s->b->pipelines[picked_kernel(s->b, d)];
	int n_ops = d->n_in + d->n_extra + d->n_out;
	if (p->n_bindings != (uint32_t)n_ops + 1) {
		snprintf(err, errlen, "vulkan backend: dispatch '%s': kernel has %u bindings, dispatch %d operands + step",
			 d->node, p->n_bindings, n_ops);
		return false;
	}
	vk_binding bind[HALO_MAX_OPERANDS + 1];
	for (int i = 0; i < n_ops; i++) {
		if (!operand_binding(s, e, &d->operand[i], &bind[i])) {
			snprintf(err, errlen, "vulkan backend: dispatch '%s': operand %d is outside every weight chunk",
				 d->node, i);
			return false;
		}
	}
	bind[n_ops] = (vk_binding){s->step.buffer, 0, s->step.size};
	vk_error ve;
	return vk_descriptors_bind(s->b->ctx, &s->desc, p, bind, set, &ve) || vk_to_err(&ve, err, errlen);
}

static bool create_sets(halo_backend_session *s, char *err, size_t errlen)
{
	const halo_manifest *m = s->b->manifest;
	uint32_t n_sets = 0, n_bufs = 0;
	for (int i = 0; i < m->n_entries; i++) {
		n_sets += (uint32_t)m->entries[i].n_dispatch;
		for (int j = 0; j < m->entries[i].n_dispatch; j++)
			n_bufs += m->kernels[picked_kernel(s->b, &m->entries[i].dispatch[j])].n_bindings;
	}
	vk_error e;
	if (!vk_descriptors_create(s->b->ctx, n_sets + 1, n_bufs + 1, &s->desc, &e))
		return vk_to_err(&e, err, errlen);
	s->sets = calloc((size_t)m->n_entries, sizeof(*s->sets));
	if (!s->sets)
		goto oom;
	for (int i = 0; i < m->n_entries; i++) {
		const halo_entry *en = &m->entries[i];
		s->sets[i] = calloc((size_t)en->n_dispatch + 1, sizeof(**s->sets));
		if (!s->sets[i])
			goto oom;
		for (int j = 0; j < en->n_dispatch; j++)
			if (!bind_dispatch(s, en, &en->dispatch[j], &s->sets[i][j], err, errlen))
				return false;
	}
	return true;
oom:
	snprintf(err, errlen, "vulkan backend: out of memory");
	return false;
}

static void vk_session_destroy(halo_backend_session *s)
{
	if (!s)
		return;
	vk_ctx *ctx = s->b->ctx;
	for (int i = 0; i < s->n_rec; i++)
		recording_destroy(ctx, &s->rec[i]);
	free(s->rec);
	for (int64_t i = 0; i < s->n_keep; i++)
		vk_cmd_destroy(ctx, &s->keep[i]);
	free(s->keep);
	for (int i = 0; s->sets && i < s->b->manifest->n_entries; i++)
		free(s->sets[i]);
	free(s->sets);
	vk_descriptors_destroy(ctx, &s->desc);
	vk_buffer_destroy(ctx, &s->state);
	vk_buffer_destroy(ctx, &s->act);
	vk_buffer_destroy(ctx, &s->step);
	vk_buffer_destroy(ctx, &s->io);
	free(s);
}

static bool zero_buffer(vk_ctx *ctx, vk_buffer *buf, uint64_t size, char *err, size_t errlen)
{
	enum { PIECE = 16 << 20 };
	void *zeros = calloc(1, PIECE);
	bool ok = zeros != NULL;
	vk_error e;
	for (uint64_t off = 0; ok && off < size; off += PIECE) {
		uint64_t n = size - off < PIECE ? size - off : PIECE;
		ok = vk_buffer_upload(ctx, buf, off, zeros, n, &e) || vk_to_err(&e, err, errlen);
	}
	free(zeros);
	if (!zeros)
		snprintf(err, errlen, "vulkan backend: out of memory");
	return ok;
}

static halo_backend_session *vk_session_create(halo_backend *b, char *err, size_t errlen)
{
	halo_backend_session *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "vulkan backend: out of memory");
		return NULL;
	}
	s->b = b;
	for (int i = 0; i < b->manifest->n_entries; i++)
		if (b->manifest->entries[i].act_bytes > s->act_bytes)
			s->act_bytes = b->manifest->entries[i].act_bytes;
	uint64_t tokens = 0, logits = 0;
	for (int i = 0; i < b->manifest->n_entries; i++) {
		const halo_entry *e = &b->manifest->entries[i];
		uint64_t t = (uint64_t)e->t_max * sizeof(int32_t), l = halo_tensor_bytes(&e->output.t, e->t_max);
		tokens = t > tokens ? t : tokens;
		logits = l > logits ? l : logits;
	}
	s->io_logits = (IO_TOKENS + tokens + 255) / 256 * 256;
	if (logits < HALO_CHAIN_MAX * sizeof(int32_t))
		logits = HALO_CHAIN_MAX * sizeof(int32_t);
	vk_error e;
	uint64_t state_bytes = b->manifest->state_bytes;
	if (!vk_buffer_create(b->ctx, state_bytes ? state_bytes : 4, VK_BUFFER_DEVICE, &s->state, &e) ||
	    !vk_buffer_create(b->ctx, s->act_bytes ? s->act_bytes : 4, VK_BUFFER_DEVICE, &s->act, &e) ||
	    !vk_buffer_create(b->ctx, 16, VK_BUFFER_DEVICE, &s->step, &e) ||
	    !vk_buffer_create(b->ctx, s->io_logits + logits, VK_BUFFER_STAGING, &s->io, &e)) {
		vk_to_err(&e, err, errlen);
		goto fail;
	}
	if (!create_sets(s, err, errlen))
		goto fail;
	for (int i = 0; i < b->manifest->n_slots; i++)
		if (b->manifest->slots[i].n > s->n_keep)
			s->n_keep = b->manifest->slots[i].n;
	if (s->n_keep && !(s->keep = calloc((size_t)s->n_keep, sizeof(*s->keep)))) {
		s->n_keep = 0;
		snprintf(err, errlen, "vulkan backend: out of memory");
		goto fail;
	}
	return s;
fail:
	vk_session_destroy(s);
	return NULL;
}

static bool vk_state_clear(halo_backend_session *s, char *err, size_t errlen)
{
	return zero_buffer(s->b->ctx, &s->state, s->b->manifest->state_bytes, err, errlen);
}

static int entry_index(const halo_manifest *m, const halo_entry *e)
{
	return (int)(e - m->entries);
}

/* e's dispatches for T tokens into r, after a barrier the caller placed. */
static bool record_dispatches(halo_backend_session *s, const halo_entry *e, int64_t T, recording *r, char *err,
			      size_t errlen)
{
	vk_error ve;
	int ei = entry_index(s->b->manifest, e);
	uint32_t push[1] = {(uint32_t)T};
	/* Tuning times each dispatch alone: nothing of its neighbours overlaps. */
	bool isolate = r->profiled && s->b->tune;
	for (int i = 0; i < e->n_dispatch; i++) {
		const halo_dispatch *d = &e->dispatch[i];
		const halo_kernel *k = &s->b->manifest->kernels[picked_kernel(s->b, d)];
		vk_pipeline *p = &s->b->pipelines[picked_kernel(s->b, d)];
		VkPipeline pipeline;
		if (!vk_pipeline_for_t(s->b->ctx, p, (uint32_t)T, &pipeline, &ve))
			return vk_to_err(&ve, err, errlen);
		if ((d->barrier || isolate) && i > 0) /* dispatch 0's barrier is the one above */
			vk_cmd_barrier(&r->cmd);
		vk_cmd_dispatch(&r->cmd, p, pipeline, s->sets[ei][i], push, halo_grid_eval(k->groups[0], T),
				halo_grid_eval(k->groups[1], T), halo_grid_eval(k->groups[2], T));
		if (r->profiled)
			vk_cmd_timestamp(&r->cmd, &r->timer, (uint32_t)i + 1);
	}
	return true;
}

static bool record_begin(halo_backend_session *s, const halo_entry *e, int64_t T, int64_t chain, bool profiled,
			 recording *r, char *err, size_t errlen)
{
	vk_error ve;
	r->entry = e;
	r->T = T;
	r->chain = chain;
	r->profiled = profiled;
	r->generation = s->b->generation;
	if (!vk_cmd_create(s->b->ctx, &r->cmd, &ve) || !vk_cmd_begin(s->b->ctx, &r->cmd, &ve) ||
	    (profiled && !vk_timer_create(s->b->ctx, (uint32_t)e->n_dispatch + 1, &r->timer, &ve)))
		return vk_to_err(&ve, err, errlen);
	if (profiled)
		vk_cmd_timer_reset(&r->cmd, &r->timer);
	/* Everything before (the previous step) finished first. */
	vk_cmd_barrier_all(&r->cmd);
	return true;
}

/* A step of T tokens: the io's step record and token ids in, the output out. */
static bool record(halo_backend_session *s, const halo_entry *e, int64_t T, bool profiled, recording *r, char *err,
		   size_t errlen)
{
	vk_error ve;
	if (!record_begin(s, e, T, 0, profiled, r, err, errlen))
		return false;
	vk_cmd_copy(&r->cmd, &s->io, IO_STEP, &s->step, 0, 16);
	vk_cmd_copy(&r->cmd, &s->io, IO_TOKENS, &s->act, e->input.t.offset, (uint64_t)T * sizeof(int32_t));
	vk_cmd_barrier_all(&r->cmd);
	if (profiled)
		vk_cmd_timestamp(&r->cmd, &r->timer, 0);
	if (!record_dispatches(s, e, T, r, err, errlen))
		return false;
	/* Logits out, visible to the host after the fence. */
	vk_cmd_barrier_all(&r->cmd);
	vk_cmd_copy(&r->cmd, &s->act, e->output.t.offset, &s->io, s->io_logits, halo_tensor_bytes(&e->output.t, T));
	vk_cmd_barrier_all(&r->cmd);
	return vk_cmd_end(&r->cmd, &ve) || vk_to_err(&ve, err, errlen);
}

/* A greedy chain of k single-token steps of e (tokens_out): step i's record
 * from io slot i, its token from the io (i = 0) or step i - 1's output,
 * its token out to the io's output area at i. */
static bool record_chain(halo_backend_session *s, const halo_entry *e, int64_t k, recording *r, char *err,
			 size_t errlen)
{
	vk_error ve;
	if (!record_begin(s, e, 1, k, false, r, err, errlen))
		return false;
	uint64_t in = e->input.t.offset, tok = e->output.t.offset + halo_entry_last_row(e, 1);
	for (int64_t i = 0; i < k; i++) {
		vk_cmd_copy(&r->cmd, &s->io, IO_STEP + 16 * (uint64_t)i, &s->step, 0, 16);
		/* The memory plan may give the token the input's bytes: then it is
		 * already in place. */
		if (i == 0)
			vk_cmd_copy(&r->cmd, &s->io, IO_TOKENS, &s->act, in, sizeof(int32_t));
		else if (tok != in)
			vk_cmd_copy(&r->cmd, &s->act, tok, &s->act, in, sizeof(int32_t));
		vk_cmd_barrier_all(&r->cmd);
		if (!record_dispatches(s, e, 1, r, err, errlen))
			return false;
		vk_cmd_barrier_all(&r->cmd);
		vk_cmd_copy(&r->cmd, &s->act, tok, &s->io, s->io_logits + (uint64_t)i * sizeof(int32_t),
			    sizeof(int32_t));
		/* the next step overwrites what this copy reads; the host reads it */
		vk_cmd_barrier_all(&r->cmd);
	}
	return vk_cmd_end(&r->cmd, &ve) || vk_to_err(&ve, err, errlen);
}

static bool record_kind(halo_backend_session *s, const halo_entry *e, int64_t T, int64_t chain, bool profiled,
			recording *r, char *err, size_t errlen)
{
	return chain ? record_chain(s, e, chain, r, err, errlen) : record(s, e, T, profiled, r, err, errlen);
}

/* The recording of (e, T, chain, profiled) with the backend's current picks. */
static recording *find_recording(halo_backend_session *s, const halo_entry *e, int64_t T, int64_t chain,
				 bool profiled, char *err, size_t errlen)
{
	for (int i = 0; i < s->n_rec; i++) {
		recording *r = &s->rec[i];
		if (r->entry != e || r->T != T || r->chain != chain || r->profiled != profiled)
			continue;
		if (r->generation == s->b->generation)
			return r;
		recording_destroy(s->b->ctx, r); /* the picks changed: record it again in place */
		memset(r, 0, sizeof(*r));
		if (record_kind(s, e, T, chain, profiled, r, err, errlen))
			return r;
		recording_destroy(s->b->ctx, r);
		s->rec[i] = s->rec[--s->n_rec];
		return NULL;
	}
	recording *grown = realloc(s->rec, (size_t)(s->n_rec + 1) * sizeof(*s->rec));
	if (!grown) {
		snprintf(err, errlen, "vulkan backend: out of memory");
		return NULL;
	}
	s->rec = grown;
	recording *r = &s->rec[s->n_rec];
	memset(r, 0, sizeof(*r));
	if (!record_kind(s, e, T, chain, profiled, r, err, errlen)) {
		recording_destroy(s->b->ctx, r);
		return NULL;
	}
	s->n_rec++;
	return r;
}

/* Bottom-of-pipe timestamps: dispatch i's share is the time between the
 * completion of everything before it and its own completion. */
static bool add_dispatch_times(vk_ctx *ctx, const recording *r, double *dispatch_ns, char *err, size_t errlen)
{
	vk_error ve;
	for (int i = 0; i < r->entry->n_dispatch; i++) {
		double ns;
		if (!vk_timer_elapsed_ns(ctx, &r->timer, (uint32_t)i, (uint32_t)i + 1, &ns, &ve))
			return vk_to_err(&ve, err, errlen);
		dispatch_ns[i] += ns;
	}
	return true;
}

static bool vk_run(halo_backend_session *s, const halo_entry *e, int64_t T, int64_t pos, const int32_t *tokens,
		   const void **out, double *dispatch_ns, char *err, size_t errlen)
{
	recording *r = find_recording(s, e, T, 0, dispatch_ns != NULL, err, errlen);
	if (!r)
		return false;
	uint8_t *io = s->io.mapped;
	uint32_t step[4] = {(uint32_t)pos, (uint32_t)T, 0, 0};
	memcpy(io + IO_STEP, step, sizeof(step));
	memcpy(io + IO_TOKENS, tokens, (size_t)T * sizeof(int32_t));
	vk_error ve;
	if (!vk_cmd_submit_wait(s->b->ctx, &r->cmd, &ve))
		return vk_to_err(&ve, err, errlen);
	*out = io + s->io_logits; /* host-cached: read in place */
	return !dispatch_ns || add_dispatch_times(s->b->ctx, r, dispatch_ns, err, errlen);
}

static bool vk_chain(halo_backend_session *s, const halo_entry *e, int64_t pos, int32_t first, int64_t k, int32_t *out,
		     char *err, size_t errlen)
{
	recording *r = find_recording(s, e, 1, k, false, err, errlen);
	if (!r)
		return false;
	uint8_t *io = s->io.mapped;
	for (int64_t i = 0; i < k; i++) {
		uint32_t step[4] = {(uint32_t)(pos + i), 1, 0, 0};
		memcpy(io + IO_STEP + 16 * i, step, sizeof(step));
	}
	memcpy(io + IO_TOKENS, &first, sizeof(first));
	vk_error ve;
	if (!vk_cmd_submit_wait(s->b->ctx, &r->cmd, &ve))
		return vk_to_err(&ve, err, errlen);
	memcpy(out, io + s->io_logits, (size_t)k * sizeof(int32_t));
	return true;
}

/* Save and restore are each recorded once: one device-to-device copy per
 * recurrent range of the state arena (manifest->recurrent), packed in buf. */
struct halo_backend_checkpoint {
	halo_backend_session *s;
	vk_buffer buf;
	vk_cmd save, restore;
};

static void vk_checkpoint_destroy(halo_backend_checkpoint *c)
{
	if (!c)
		return;
	vk_ctx *ctx = c->s->b->ctx;
	vk_cmd_destroy(ctx, &c->save);
	vk_cmd_destroy(ctx, &c->restore);
	vk_buffer_destroy(ctx, &c->buf);
	free(c);
}

static bool record_copies(halo_backend_checkpoint *c, bool save, vk_error *e)
{
	vk_ctx *ctx = c->s->b->ctx;
	const halo_manifest *m = c->s->b->manifest;
	vk_cmd *cmd = save ? &c->save : &c->restore;
	if (!vk_cmd_create(ctx, cmd, e) || !vk_cmd_begin(ctx, cmd, e))
		return false;
	vk_cmd_barrier_all(cmd);
	for (int i = 0; i < m->n_recurrent; i++) {
		const halo_state_range *r = &m->recurrent[i];
		if (save)
			vk_cmd_copy(cmd, &c->s->state, r->offset, &c->buf, r->packed, r->size);
		else
			vk_cmd_copy(cmd, &c->buf, r->packed, &c->s->state, r->offset, r->size);
	}
	vk_cmd_barrier_all(cmd);
	return vk_cmd_end(cmd, e);
}

static halo_backend_checkpoint *vk_checkpoint_create(halo_backend_session *s, char *err, size_t errlen)
{
	halo_backend_checkpoint *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "vulkan backend: out of memory");
		return NULL;
	}
	c->s = s;
	uint64_t size = s->b->manifest->recurrent_bytes;
	vk_error e;
	if (!vk_buffer_create(s->b->ctx, size ? size : 4, VK_BUFFER_DEVICE, &c->buf, &e) ||
	    !record_copies(c, true, &e) || !record_copies(c, false, &e)) {
		vk_to_err(&e, err, errlen);
		vk_checkpoint_destroy(c);
		return NULL;
	}
	return c;
}

static bool vk_checkpoint_copy(halo_backend_checkpoint *c, bool save, char *err, size_t errlen)
{
	vk_error e;
	return vk_cmd_submit_wait(c->s->b->ctx, save ? &c->save : &c->restore, &e) || vk_to_err(&e, err, errlen);
}

static bool record_keep(halo_backend_session *s, int64_t slot, vk_cmd *cmd, vk_error *e)
{
	vk_ctx *ctx = s->b->ctx;
	const halo_manifest *m = s->b->manifest;
	if (!vk_cmd_create(ctx, cmd, e) || !vk_cmd_begin(ctx, cmd, e))
		return false;
	vk_cmd_barrier_all(cmd);
	for (int i = 0; i < m->n_slots; i++) {
		const halo_state_slots *k = &m->slots[i];
		vk_cmd_copy(cmd, &s->state, k->slots + (uint64_t)slot * k->size, &s->state, k->state, k->size);
	}
	vk_cmd_barrier_all(cmd);
	return vk_cmd_end(cmd, e);
}

static bool vk_keep_slot(halo_backend_session *s, int64_t slot, char *err, size_t errlen)
{
	vk_error e;
	vk_cmd *cmd = &s->keep[slot];
	if (!cmd->cb && !record_keep(s, slot, cmd, &e)) {
		vk_cmd_destroy(s->b->ctx, cmd);
		return vk_to_err(&e, err, errlen);
	}
	return vk_cmd_submit_wait(s->b->ctx, cmd, &e) || vk_to_err(&e, err, errlen);
}

static bool vk_probe(int device, char *err, size_t errlen)
{
	vk_ctx_options opt = {.device_index = device};
	vk_ctx *ctx;
	vk_error e;
	if (!vk_ctx_create(&opt, &ctx, &e))
		return vk_to_err(&e, err, errlen);
	vk_ctx_destroy(ctx);
	return true;
}

static int vk_devices(halo_device_name *out, int max, char *err, size_t errlen)
{
	vk_device_info *info = NULL;
	int n = 0;
	vk_error e;
	if (!vk_list_devices(&info, &n, &e)) {
		vk_to_err(&e, err, errlen);
		return -1;
	}
	for (int i = 0; i < n && i < max; i++)
		snprintf(out[i].name, sizeof out[i].name, "%s", info[i].name);
	free(info);
	return n;
}

static int vk_validation_messages(const halo_backend *b)
{
	return (int)b->ctx->validation_messages;
}

const halo_backend_ops halo_vulkan_backend = {
	.name = "vulkan",
	.create = vk_backend_create,
	.destroy = vk_backend_destroy,
	.session_create = vk_session_create,
	.session_destroy = vk_session_destroy,
	.state_clear = vk_state_clear,
	.run = vk_run,
	.chain = vk_chain,
	.validation_messages = vk_validation_messages,
	.checkpoint_create = vk_checkpoint_create,
	.checkpoint_destroy = vk_checkpoint_destroy,
	.checkpoint_copy = vk_checkpoint_copy,
	.keep_slot = vk_keep_slot,
	.picked = vk_picked,
	.set_picks = vk_set_picks,
	.device = vk_device,
	.probe = vk_probe,
	.devices = vk_devices,
};
