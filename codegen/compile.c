#include "codegen/compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/bundle_write.h"
#include "codegen/checkpoint.h"
#include "codegen/draft_sidecar.h"
#include "codegen/emit_manifest.h"
#include "codegen/lower.h"
#include "codegen/quant_policy.h"
#include "codegen/select_kernels.h"
#include "codegen/tokenizer_section.h"
#include "codegen/kernel_variant.h"
#include "codegen/weights.h"
#include "ir/read_model.h"
#include "passes/pipeline.h"
#include "runtime/drivers/ref/ref_ops.h"

/* Everything one compilation owns, released by compile_free(). */
typedef struct {
	ir_module *m;
	halo_plan *plan;
	halo_safetensors *st;
	halo_safetensors *drafter_st; /* --mtp-from sidecar, or NULL */
	cg_split_checkpoint split;
	cg_weights *weights;
	halo_manifest man;
	cg_kernel_sections code;
	char *json;
	cg_tokenizer_sections tokenizer;
} compile_state;

static void compile_free(compile_state *c)
{
	for (int i = 0; c->man.entries && i < c->man.n_entries; i++)
		cg_entry_free(&c->man.entries[i]);
	free(c->man.entries);
	manifest_free_kernels(&c->man);
	free(c->man.weights); /* names borrowed from the module */
	free(c->man.states);
	free(c->json);
	cg_kernel_sections_free(&c->code);
	cg_tokenizer_sections_free(&c->tokenizer);
	cg_weights_free(c->weights);
	halo_st_close(c->st);
	halo_st_close(c->drafter_st);
	plan_free(c->plan);
	ir_module_free(c->m);
}

static int64_t param_int(const ir_module *m, const char *name)
{
	const ir_param *p = ir_module_param(m, name);
	return p && !p->is_float ? p->i : -1;
}

static bool read_and_plan(compile_state *c, const cg_compile_options *o, char *err, size_t errlen)
{
	char config[4096], drafter_config[4096];
	snprintf(config, sizeof(config), "%s/config.json", o->hf_dir);
	if (o->mtp_dir && o->no_mtp) {
		snprintf(err, errlen, "--mtp-from and --no-mtp contradict each other");
		return false;
	}
	if (o->mtp_dir) {
		snprintf(drafter_config, sizeof(drafter_config), "%s/config.json", o->mtp_dir);
		if (!cg_check_drafter_config(config, drafter_config, err, errlen))
			return false;
	}
	ir_error ierr = {0};
	ir_read_options ro = {.no_draft = o->no_mtp, .force_draft = o->mtp_dir != NULL, .n_ctx = o->n_ctx,
			      .draft_max = o->draft_max, .draft_vocab = o->draft_vocab};
	c->m = ir_read_model_opts(o->model_path, config, &ro, &ierr);
	if (c->m) {
		c->m->no_fold_norms = o->no_fold_norms || halo_dtype_is_quant(o->quant);
		c->m->int8_max_rows = o->int8_activations ? KV_MATVEC_MAX_T : 0;
		c->m->no_merge_matmuls = o->no_merge;
		c->m->no_fuse_state_store = o->no_store_fusion;
		c->m->no_fuse_attention_rope = o->no_rope_fusion;
		/* under --quant such small gates keep --dtype (a merged matrix
		 * has one dtype); left apart whatever the dtype, so that bundles
		 * of two dtypes hold the same weights */
		c->m->merge_min_rows = CG_QUANT_MIN_ROWS;
	}
	c->plan = c->m ? plan_new() : NULL;
	if (!c->m || !c->plan || !pipeline_run(c->m, c->plan, &ierr)) {
		snprintf(err, errlen, "%s", ierr.set ? ierr.msg : "out of memory");
		return false;
	}
	c->man.model = (char *)c->m->model;
	c->man.vocab = param_int(c->m, "vocab");
	c->man.n_ctx = param_int(c->m, "n_ctx");
	if (c->man.vocab < 1 || c->man.n_ctx < 1) {
		snprintf(err, errlen, "%s: the model file must define int params 'vocab' and 'n_ctx'", o->model_path);
		return false;
	}
	return true;
}

static bool open_weights(compile_state *c, const cg_compile_options *o, char *err, size_t errlen)
{
	cg_weight_source src = {.seed = o->seed, .period = o->random_period, .matrix_dtype = o->matrix_dtype,
				.quant = o->quant};
	if (!o->random_weights) {
		c->st = halo_st_open_dir(o->hf_dir, err, errlen);
		if (!c->st)
			return false;
		cg_checkpoint_source(c->st, &src);
		if (o->mtp_dir) {
			if (!(c->drafter_st = halo_st_open_dir(o->mtp_dir, err, errlen)))
				return false;
			c->split = (cg_split_checkpoint){c->st, c->drafter_st};
			cg_split_checkpoint_source(&c->split, &src);
		}
	}
	c->weights = cg_weights_new(c->m, &src, err, errlen);
	if (c->weights && o->progress)
		cg_weights_set_progress(c->weights, o->progress, o->progress_ctx);
	return c->weights != NULL;
}

static void shape_of(const ir_shape *s, halo_buffer_decl *d)
{
	d->rank = s->rank;
	for (int i = 0; i < s->rank; i++)
		d->shape[i] = s->dim[i].c;
}

/* Declarations in offset order (docs/manifest.md); names (unique in a
 * module) order the ties: one stored tensor under two names. */
static int by_offset_then_name(const void *a, const void *b)
{
	const halo_buffer_decl *x = a, *y = b;
	if (x->offset != y->offset)
		return (x->offset > y->offset) - (x->offset < y->offset);
	return strcmp(x->name, y->name);
}

/* The manifest's weight and state tables (names borrowed from the module). */
static bool declare_buffers(compile_state *c, char *err, size_t errlen)
{
	const ir_module *m = c->m;
	c->man.weights = calloc((size_t)m->n_weights + 1, sizeof(*c->man.weights));
	c->man.states = calloc((size_t)m->n_states + 1, sizeof(*c->man.states));
	if (!c->man.weights || !c->man.states) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	const uint64_t *off = cg_weights_offsets(c->weights);
	for (int i = 0; i < m->n_weights; i++) {
		if (!cg_weights_stored(c->weights, i))
			continue;
		halo_buffer_decl *d = &c->man.weights[c->man.n_weights++];
		d->name = (char *)m->weights[i].name;
		d->dtype = cg_weights_dtype(c->weights, i);
		shape_of(&m->weights[i].shape, d);
		d->offset = off[i];
		uint64_t rows = 1;
		for (int k = 0; k + 1 < d->rank; k++)
			rows *= (uint64_t)d->shape[k];
		d->size = halo_dtype_bytes(d->dtype, rows, d->rank ? (uint64_t)d->shape[d->rank - 1] : 1);
	}
	qsort(c->man.weights, (size_t)c->man.n_weights, sizeof(*c->man.weights), by_offset_then_name);
	const plan_entry *pe = &c->plan->entries[0];
	for (int i = 0; i < pe->n_buffers; i++) {
		const plan_buffer *b = &pe->buffers[i];
		if (b->region != PLAN_STATE)
			continue;
		const ir_state *s = &m->states[b->ref];
		halo_buffer_decl *d = &c->man.states[c->man.n_states++];
		d->name = (char *)s->name;
		d->kind = (char *)s->kind;
		d->slots_of = strcmp(s->kind, "slots") == 0 ? (char *)m->states[s->slots_of].name : NULL;
		d->dtype = s->dtype;
		shape_of(&s->shape, d);
		d->offset = (uint64_t)b->offset;
		d->size = (uint64_t)b->size;
	}
	c->man.state_bytes = (uint64_t)c->plan->state_bytes;
	return true;
}

/* want: the GPU targets to build kernels for (none: a ref-only bundle);
 * int8: give the decode matvecs int8 activations (counted in *marked). */
static bool lower_entries(compile_state *c, const bool want[HALO_TARGET_COUNT], bool gpu_all, bool int8,
			  int *marked, char *err, size_t errlen)
{
	c->man.entries = calloc((size_t)c->plan->n_entries + 1, sizeof(*c->man.entries));
	if (!c->man.entries) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	cg_weight_layout wl = {cg_weights_offsets(c->weights), cg_weights_dtypes(c->weights)};
	for (int i = 0; i < c->plan->n_entries; i++, c->man.n_entries++) {
		ir_error ierr = {0};
		if (!cg_lower_entry(c->m, &c->plan->entries[i], &wl, &c->man.entries[i], &ierr)) {
			c->man.n_entries++; /* free what the failed entry holds */
			snprintf(err, errlen, "%s", ierr.msg);
			return false;
		}
		if (int8 && !cg_mark_int8_activations(&c->man.entries[i], marked, err, errlen))
			return false;
	}
	for (int t = 0; t < HALO_TARGET_COUNT; t++)
		c->man.has_kernels |= c->man.has_target[t] = want[t];
	return !c->man.has_kernels || cg_select_kernels(&c->man, want, gpu_all, &c->code, err, errlen);
}

static int64_t dispatch_attr(const halo_dispatch *d, const char *name)
{
	const halo_attr *a = halo_attr_find(d->attr, d->n_attr, name);
	return a ? a->i : 0;
}

/* Each n-gram table must really hold the rows its layer's hash reaches
 * (ref_ngram_tables: the layer's head primes summed), not only padding. */
static void bound_ngram_tables(compile_state *c)
{
	for (int e = 0; e < c->man.n_entries; e++)
		for (int j = 0; j < c->man.entries[e].n_dispatch; j++) {
			const halo_dispatch *d = &c->man.entries[e].dispatch[j];
			if (d->op != IR_OP_NGRAM_EMBED || d->operand[0].space != HALO_SPACE_WEIGHT)
				continue;
			ref_ngram_params p = {.ngram = dispatch_attr(d, "ngram"),
					      .heads_per_ngram = dispatch_attr(d, "heads_per_ngram"),
					      .layer_index = dispatch_attr(d, "layer_index"),
					      .table_base = dispatch_attr(d, "table_base")};
			int64_t heads = (p.ngram - 1) * p.heads_per_ngram;
			if (p.ngram < 2 || p.ngram > KV_NGRAM_MAX || heads < 1 || heads > KV_NGRAM_MAX_HEADS ||
			    p.table_base < 2)
				continue; /* kernel selection reports it */
			int64_t size[KV_NGRAM_MAX_HEADS], offset[KV_NGRAM_MAX_HEADS];
			ref_ngram_tables(&p, size, offset);
			cg_weights_need_rows(c->weights, d->operand[0].offset, offset[heads - 1] + size[heads - 1]);
		}
}

static bool write_bundle(compile_state *c, const char *path, char *err, size_t errlen)
{
	c->json = cg_emit_manifest(&c->man);
	halo_bundle_writer *w = c->json ? halo_bundle_writer_new() : NULL;
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	bool ok = halo_bundle_writer_add(w, "manifest", c->json, strlen(c->json), 0, err, errlen) == 0;
	for (int t = 0; ok && t < HALO_TARGET_COUNT; t++)
		ok = !c->man.has_target[t] || halo_bundle_writer_add(w, halo_targets[t].section, c->code.data[t],
								     c->code.size[t], 0, err, errlen) == 0;
	ok = ok &&
		  (!c->tokenizer.json ||
		   (halo_bundle_writer_add(w, "tokenizer", c->tokenizer.json, c->tokenizer.json_size, 0, err, errlen) == 0 &&
		    halo_bundle_writer_add(w, "tokenizer_meta", c->tokenizer.meta, strlen(c->tokenizer.meta), 0, err,
					   errlen) == 0)) &&
		  halo_bundle_writer_add_stream(w, "weights", cg_weights_size(c->weights), 0, cg_weights_fill,
						c->weights, err, errlen) == 0 &&
		  halo_bundle_writer_write(w, path, err, errlen) == 0;
	halo_bundle_writer_free(w);
	return ok;
}

/* The checkpoint tensors no weight reads, counted by their first two name
 * components (model.visual, mtp.layers). */
static void count_unused(const compile_state *c, cg_compile_stats *s)
{
	enum { MAX_GROUPS = 16 };
	char group[MAX_GROUPS][64];
	int count[MAX_GROUPS] = {0}, n_groups = 0;
	const halo_safetensors *sts[] = {c->st, c->drafter_st};
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; sts[k] && i < halo_st_count(sts[k]); i++) {
			const halo_st_tensor *t = halo_st_at(sts[k], i);
			const char *name = t->name;
			if (cg_weights_reads(c->weights, name)) {
				s->source_bytes += t->bytes;
				continue;
			}
			s->unused_tensors++;
			char g[64];
			size_t len = strcspn(name, ".");
			if (name[len])
				len += 1 + strcspn(name + len + 1, ".");
			snprintf(g, sizeof g, "%.*s", (int)len, name);
			int j = 0;
			while (j < n_groups && strcmp(group[j], g) != 0)
				j++;
			if (j == n_groups && n_groups < MAX_GROUPS)
				snprintf(group[n_groups++], sizeof group[0], "%s", g);
			if (j < n_groups)
				count[j]++;
		}
	size_t at = 0;
	for (int j = 0; j < n_groups && at < sizeof s->unused; j++) {
		int w = snprintf(s->unused + at, sizeof s->unused - at, "%s%s.* %d", j ? ", " : "", group[j], count[j]);
		at += w > 0 ? (size_t)w : 0;
	}
}

static void fill_stats(const compile_state *c, double weights_s, cg_compile_stats *s)
{
	*s = (cg_compile_stats){.n_ctx = c->man.n_ctx, .state_bytes = c->man.state_bytes,
				.weight_bytes = cg_weights_size(c->weights), .weights_s = weights_s};
	for (int i = 0; i < c->plan->n_entries; i++)
		if ((uint64_t)c->plan->entries[i].act_bytes > s->act_bytes)
			s->act_bytes = (uint64_t)c->plan->entries[i].act_bytes;
	for (int i = 0; i < c->man.n_weights; i++) {
		const halo_buffer_decl *d = &c->man.weights[i];
		if (i > 0 && d->offset == c->man.weights[i - 1].offset)
			continue; /* an alias: stored once */
		uint64_t numel = 1;
		for (int k = 0; k < d->rank; k++)
			numel *= (uint64_t)d->shape[k];
		s->weight_params += numel;
		s->dtype_params[d->dtype] += numel;
		s->dtype_bytes[d->dtype] += d->size;
	}
	s->quant_fallbacks = cg_weights_quant_fallbacks(c->weights, s->fallback, sizeof s->fallback);
	for (int i = 0; i < c->man.n_states; i++)
		if (halo_state_kind_positional(c->man.states[i].kind))
			s->cache_bytes += c->man.states[i].size;
		else if (c->man.states[i].slots_of)
			s->slot_bytes += c->man.states[i].size;
	count_unused(c, s);
}

bool cg_compile(const cg_compile_options *o, cg_compile_stats *stats, char *err, size_t errlen)
{
	compile_state c = {0};
	bool want[HALO_TARGET_COUNT] = {false};
	int int8_marked = 0;
	for (int t = 0; t < HALO_TARGET_COUNT && !o->ref_only; t++)
		want[t] = o->targets ? (o->targets >> t & 1u) : t == HALO_TARGET_VULKAN;
	bool ok = read_and_plan(&c, o, err, errlen) &&
		  (o->no_tokenizer || o->plan_only ||
		   cg_tokenizer_read(o->hf_dir, c.man.vocab, &c.tokenizer, err, errlen)) &&
		  open_weights(&c, o, err, errlen) &&
		  declare_buffers(&c, err, errlen) &&
		  (o->plan_only ||
		   lower_entries(&c, want, o->gpu_all_variants, o->int8_activations, &int8_marked, err, errlen));
	if (ok && !o->plan_only)
		bound_ngram_tables(&c);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ok = ok && (o->plan_only || write_bundle(&c, o->out_path, err, errlen));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ok && stats) {
		fill_stats(&c, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), stats);
		stats->int8_dispatches = int8_marked;
	}
	compile_free(&c);
	return ok;
}
