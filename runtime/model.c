/* Model and session: the public API of runtime/halo.h over a backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/op_table.h"
#include "runtime/backend.h"
#include "runtime/backend_registry.h"
#include "runtime/bundle.h"
#include "runtime/halo.h"
#include "runtime/manifest.h"
#include "runtime/tuning.h"

struct halo_model {
	halo_bundle *bundle;
	halo_manifest *manifest;
	const halo_backend_ops *ops;
	halo_backend *backend;
};

struct halo_session {
	halo_model *model;
	halo_backend_session *bs;
	int64_t pos;
	/* T of the last step when its entry kept per-token state slots and
	 * nothing ran since: what halo_session_keep may choose from; else 0. */
	int64_t slots_T;
	/* The last step's output, backend-owned: logits (halo_session_logits)
	 * or, from an entry with tokens_out, greedy tokens (halo_session_tokens). */
	const void *out;
	bool out_tokens;
	int64_t out_rows;
	double **prof_ns; /* while profiling: [entry][dispatch] accumulated time */
	int64_t *prof_steps;
};

static const void *section(halo_model *m, const char *name, uint64_t *size, char *err, size_t errlen)
{
	size_t n = 0;
	const void *p = halo_bundle_section(m->bundle, name, &n);
	if (!p)
		snprintf(err, errlen, "bundle has no '%s' section", name);
	*size = n;
	return p;
}

halo_model *halo_model_open(const char *path, const halo_open_options *opts, char *err, size_t errlen)
{
	halo_model *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->ops = halo_backend_lookup(opts->backend ? opts->backend : "vulkan", err, errlen);
	m->bundle = m->ops ? halo_bundle_open(path, err, errlen) : NULL;
	if (!m->bundle)
		goto fail;
	uint64_t msize, wsize;
	const char *json = section(m, "manifest", &msize, err, errlen);
	const void *weights = json ? section(m, "weights", &wsize, err, errlen) : NULL;
	if (!weights)
		goto fail;
	halo_backend_load load = {.weights = weights, .weights_size = wsize, .device = opts->device,
				  .validation = opts->validation, .tuning = opts->tuning, .tune = opts->tune};
	for (int t = 0; t < HALO_TARGET_COUNT; t++) { /* each is optional: the backend says what it needs */
		size_t n;
		load.code[t] = halo_bundle_section(m->bundle, halo_targets[t].section, &n);
		load.code_size[t] = n;
	}
	char merr[512];
	m->manifest = manifest_parse(json, msize, wsize, load.code_size, merr, sizeof(merr));
	if (!m->manifest) {
		snprintf(err, errlen, "%s: %s", path, merr);
		goto fail;
	}
	load.manifest = m->manifest;
	m->backend = m->ops->create(&load, err, errlen);
	if (!m->backend)
		goto fail;
	return m;
fail:
	halo_model_close(m);
	return NULL;
}

void halo_model_close(halo_model *m)
{
	if (!m)
		return;
	if (m->backend)
		m->ops->destroy(m->backend);
	manifest_free(m->manifest);
	halo_bundle_close(m->bundle);
	free(m);
}

int64_t halo_model_vocab(const halo_model *m)
{
	return m->manifest->vocab;
}

int64_t halo_model_n_ctx(const halo_model *m)
{
	return m->manifest->n_ctx;
}

const void *halo_model_section(const halo_model *m, const char *name, size_t *size)
{
	return halo_bundle_section(m->bundle, name, size);
}

bool halo_model_entry(const halo_model *m, const char *name, halo_entry_info *out)
{
	const halo_entry *e = manifest_entry(m->manifest, name);
	if (e)
		*out = (halo_entry_info){e->t_min, e->t_max, e->width, e->logits_all, e->caller_position,
					 e->state_slots, e->tokens_out};
	return e != NULL;
}

int halo_model_validation_messages(const halo_model *m)
{
	return m->ops->validation_messages(m->backend);
}

halo_session *halo_session_create(halo_model *m, char *err, size_t errlen)
{
	halo_session *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->model = m;
	s->bs = m->ops->session_create(m->backend, err, errlen);
	if (!s->bs || !m->ops->state_clear(s->bs, err, errlen)) {
		halo_session_free(s);
		return NULL;
	}
	return s;
}

void halo_session_free(halo_session *s)
{
	if (!s)
		return;
	if (s->bs)
		s->model->ops->session_destroy(s->bs);
	halo_session_set_profiling(s, false, NULL, 0);
	free(s);
}

int64_t halo_session_pos(const halo_session *s)
{
	return s->pos;
}

bool halo_session_reset(halo_session *s, char *err, size_t errlen)
{
	s->pos = 0;
	s->slots_T = 0;
	s->out = NULL;
	return s->model->ops->state_clear(s->bs, err, errlen);
}

/* The entry `name` when it runs in the position mode of the calling function
 * (caller: halo_session_step_at), else NULL with a message naming the one to use. */
static const halo_entry *find_entry(const halo_manifest *m, const char *name, bool caller, char *err,
				    size_t errlen)
{
	const halo_entry *e = manifest_entry(m, name);
	if (!e)
		snprintf(err, errlen, "bundle has no entry point '%s'", name);
	else if (e->caller_position && !caller)
		snprintf(err, errlen, "entry '%s' runs at a position the caller gives: use halo_session_step_at",
			 name);
	else if (!e->caller_position && caller)
		snprintf(err, errlen, "entry '%s' runs at the session's position: use halo_session_step or "
			 "halo_session_prefill", name);
	else
		return e;
	return NULL;
}

/* n within the entry's token range and every token inside the vocabulary. */
static bool check_tokens(const halo_manifest *man, const halo_entry *e, const int32_t *tokens, int64_t n, char *err,
			 size_t errlen)
{
	if (n < e->t_min || n > e->t_max) {
		snprintf(err, errlen, "entry '%s' takes %lld..%lld tokens per step, got %lld", e->name,
			 (long long)e->t_min, (long long)e->t_max, (long long)n);
		return false;
	}
	for (int64_t i = 0; i < n; i++) {
		if (tokens[i] < 0 || tokens[i] >= man->vocab) {
			snprintf(err, errlen, "token %d at index %lld is outside the vocabulary [0, %lld)", tokens[i],
				 (long long)i, (long long)man->vocab);
			return false;
		}
	}
	return true;
}

/* Runs checked tokens through e at pos; the output stays where the backend
 * put it (halo_session_logits, halo_session_tokens) and the logits are
 * copied to logits when it is not NULL (which an entry returning tokens
 * refuses). */
static bool run_entry(halo_session *s, const halo_entry *e, int64_t pos, const int32_t *tokens, int64_t n,
		      float *logits, char *err, size_t errlen)
{
	const halo_manifest *man = s->model->manifest;
	int ei = (int)(e - man->entries);
	if (logits && e->tokens_out) {
		snprintf(err, errlen, "entry '%s' returns tokens, not logits: pass NULL and read halo_session_tokens",
			 e->name);
		return false;
	}
	s->slots_T = 0;
	s->out = NULL;
	const void *out;
	if (!s->model->ops->run(s->bs, e, n, pos, tokens, &out, s->prof_ns ? s->prof_ns[ei] : NULL, err, errlen))
		return false;
	if (s->prof_ns)
		s->prof_steps[ei]++;
	/* An entry that returns only the last row hands out the last of the
	 * rows its output holds. */
	s->out_rows = e->logits_all ? n : 1;
	s->out_tokens = e->tokens_out;
	s->out = (const uint8_t *)out + (e->logits_all ? 0 : halo_entry_last_row(e, n));
	if (logits)
		memcpy(logits, s->out, (size_t)s->out_rows * halo_entry_row_bytes(e));
	return true;
}

const float *halo_session_logits(const halo_session *s, int64_t *rows)
{
	bool have = s->out && !s->out_tokens;
	if (rows)
		*rows = have ? s->out_rows : 0;
	return have ? s->out : NULL;
}

const int32_t *halo_session_tokens(const halo_session *s, int64_t *rows)
{
	bool have = s->out && s->out_tokens;
	if (rows)
		*rows = have ? s->out_rows : 0;
	return have ? s->out : NULL;
}

bool halo_session_step(halo_session *s, const char *name, const int32_t *tokens, int64_t n, float *logits, char *err,
		       size_t errlen)
{
	const halo_manifest *man = s->model->manifest;
	const halo_entry *e = find_entry(man, name, false, err, errlen);
	if (!e || !check_tokens(man, e, tokens, n, err, errlen))
		return false;
	if (s->pos + n > man->n_ctx) {
		snprintf(err, errlen, "context full: position %lld + %lld tokens exceeds n_ctx %lld", (long long)s->pos,
			 (long long)n, (long long)man->n_ctx);
		return false;
	}
	if (!run_entry(s, e, s->pos, tokens, n, logits, err, errlen))
		return false;
	s->pos += n;
	s->slots_T = e->state_slots ? n : 0;
	return true;
}

bool halo_session_keep(halo_session *s, int64_t n, char *err, size_t errlen)
{
	if (s->slots_T == 0) {
		snprintf(err, errlen, "keep: the last step did not keep per-token state slots (only a step of an "
			 "entry with recurrent: slots does, and only until the next step)");
		return false;
	}
	if (n < 1 || n > s->slots_T) {
		snprintf(err, errlen, "keep: %lld of the last step's %lld tokens; want 1..%lld", (long long)n,
			 (long long)s->slots_T, (long long)s->slots_T);
		return false;
	}
	if (n < s->slots_T && s->model->manifest->n_slots && !s->model->ops->keep_slot(s->bs, n - 1, err, errlen))
		return false;
	s->pos -= s->slots_T - n;
	s->slots_T = 0;
	return true;
}

bool halo_session_step_at(halo_session *s, const char *name, int64_t pos, const int32_t *tokens, int64_t n,
			  float *logits, char *err, size_t errlen)
{
	const halo_manifest *man = s->model->manifest;
	const halo_entry *e = find_entry(man, name, true, err, errlen);
	if (!e || !check_tokens(man, e, tokens, n, err, errlen))
		return false;
	if (pos < 0 || pos > man->n_ctx - n) { /* n <= t_max: no overflow */
		snprintf(err, errlen, "entry '%s' at position %lld with %lld tokens runs outside the context [0, %lld)",
			 name, (long long)pos, (long long)n, (long long)man->n_ctx);
		return false;
	}
	return run_entry(s, e, pos, tokens, n, logits, err, errlen);
}

/* k single-token steps, each fed the previous step's token, one at a time. */
static bool chain_steps(halo_session *s, const halo_entry *e, int64_t pos, int32_t first, int64_t k, int32_t *out,
			char *err, size_t errlen)
{
	const halo_manifest *man = s->model->manifest;
	int32_t tok = first;
	for (int64_t i = 0; i < k; i++) {
		if (!check_tokens(man, e, &tok, 1, err, errlen) || !run_entry(s, e, pos + i, &tok, 1, NULL, err, errlen))
			return false;
		tok = out[i] = *(const int32_t *)s->out;
	}
	return true;
}

bool halo_session_chain_at(halo_session *s, const char *name, int64_t pos, int32_t first, int64_t k, int32_t *out,
			   char *err, size_t errlen)
{
	const halo_manifest *man = s->model->manifest;
	const halo_entry *e = find_entry(man, name, true, err, errlen);
	if (!e || !check_tokens(man, e, &first, 1, err, errlen))
		return false;
	if (!e->tokens_out) {
		snprintf(err, errlen, "entry '%s' returns logits: a chain needs an entry with output: tokens", name);
		return false;
	}
	if (k < 1 || k > HALO_CHAIN_MAX || pos < 0 || pos > man->n_ctx - k) {
		snprintf(err, errlen, "chain of %lld steps of '%s' at position %lld: want 1..%d steps inside the "
			 "context [0, %lld)", (long long)k, name, (long long)pos, HALO_CHAIN_MAX, (long long)man->n_ctx);
		return false;
	}
	/* Profiling times each step's dispatches: one step at a time. */
	bool ok = s->model->ops->chain && !s->prof_ns
			  ? s->model->ops->chain(s->bs, e, pos, first, k, out, err, errlen)
			  : chain_steps(s, e, pos, first, k, out, err, errlen);
	s->slots_T = 0;
	s->out = NULL;
	return ok;
}

bool halo_session_prefill(halo_session *s, const int32_t *tokens, int64_t n, float *logits_all, float *last,
			  char *err, size_t errlen)
{
	/* Without every row's logits, the prompt runs through `prefill_last`
	 * where the bundle has it: larger steps (the matmuls' grids fill the
	 * device) that compute only the last row's logits. */
	const char *name = !logits_all && manifest_entry(s->model->manifest, "prefill_last") ? "prefill_last"
											      : "prefill";
	return halo_session_prefill_entry(s, name, tokens, n, logits_all, last, err, errlen);
}

bool halo_session_prefill_entry(halo_session *s, const char *name, const int32_t *tokens, int64_t n,
				float *logits_all, float *last, char *err, size_t errlen)
{
	const halo_entry *e = find_entry(s->model->manifest, name, false, err, errlen);
	if (!e)
		return false;
	if (logits_all && !e->logits_all && e->t_max > 1) {
		snprintf(err, errlen, "the bundle's entry '%s' returns only the last position's logits", name);
		return false;
	}
	if (e->tokens_out) {
		snprintf(err, errlen, "the bundle's entry '%s' returns tokens, not logits", name);
		return false;
	}
	int64_t vocab = s->model->manifest->vocab;
	bool ok = true;
	for (int64_t done = 0; ok && done < n;) {
		int64_t chunk = n - done < e->t_max ? n - done : e->t_max, rows;
		ok = halo_session_step(s, name, tokens + done, chunk, NULL, err, errlen);
		const float *out = ok ? halo_session_logits(s, &rows) : NULL;
		if (ok && logits_all)
			memcpy(logits_all + done * vocab, out, (size_t)(rows * vocab) * sizeof(float));
		if (ok && last && done + chunk == n)
			memcpy(last, out + (rows - 1) * vocab, (size_t)vocab * sizeof(float));
		done += chunk;
	}
	return ok;
}

struct halo_checkpoint {
	halo_session *session;
	halo_backend_checkpoint *bc;
	int64_t pos;
	bool saved;
};

halo_checkpoint *halo_checkpoint_create(halo_session *s, char *err, size_t errlen)
{
	halo_checkpoint *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->session = s;
	c->bc = s->model->ops->checkpoint_create(s->bs, err, errlen);
	if (!c->bc) {
		free(c);
		return NULL;
	}
	return c;
}

void halo_checkpoint_free(halo_checkpoint *c)
{
	if (!c)
		return;
	c->session->model->ops->checkpoint_destroy(c->bc);
	free(c);
}

static bool checkpoint_owner(const halo_session *s, const halo_checkpoint *c, char *err, size_t errlen)
{
	if (c->session != s)
		snprintf(err, errlen, "checkpoint belongs to another session");
	return c->session == s;
}

bool halo_session_save(halo_session *s, halo_checkpoint *c, char *err, size_t errlen)
{
	if (!checkpoint_owner(s, c, err, errlen) || !s->model->ops->checkpoint_copy(c->bc, true, err, errlen))
		return false;
	c->pos = s->pos;
	c->saved = true;
	return true;
}

bool halo_session_restore(halo_session *s, const halo_checkpoint *c, char *err, size_t errlen)
{
	if (!checkpoint_owner(s, c, err, errlen))
		return false;
	if (!c->saved) {
		snprintf(err, errlen, "restore from a checkpoint that was never saved");
		return false;
	}
	if (!s->model->ops->checkpoint_copy(c->bc, false, err, errlen))
		return false;
	s->pos = c->pos;
	s->slots_T = 0;
	return true;
}

bool halo_session_set_profiling(halo_session *s, bool on, char *err, size_t errlen)
{
	const halo_manifest *m = s->model->manifest;
	if (!on || s->prof_ns) {
		for (int i = 0; !on && s->prof_ns && i < m->n_entries; i++)
			free(s->prof_ns[i]);
		if (!on) {
			free(s->prof_ns);
			free(s->prof_steps);
			s->prof_ns = NULL;
			s->prof_steps = NULL;
		}
		return true;
	}
	s->prof_ns = calloc((size_t)m->n_entries, sizeof(*s->prof_ns));
	s->prof_steps = calloc((size_t)m->n_entries, sizeof(*s->prof_steps));
	bool ok = s->prof_ns && s->prof_steps;
	for (int i = 0; ok && i < m->n_entries; i++)
		ok = (s->prof_ns[i] = calloc((size_t)m->entries[i].n_dispatch + 1, sizeof(double))) != NULL;
	if (!ok) {
		halo_session_set_profiling(s, false, NULL, 0);
		snprintf(err, errlen, "out of memory");
	}
	return ok;
}


typedef struct {
	const char *name;
	const char *source; /* "tuned" / "heuristic" / "forced", NULL on ref */
	double ns;
	int64_t calls;
} prof_row;

static int by_time_desc(const void *a, const void *b)
{
	const prof_row *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The kernel dispatch d runs, or -1 on a backend without kernels. */
static int running_kernel(const halo_model *m, const halo_dispatch *d, halo_pick_source *source)
{
	if (!m->ops->picked || d->choice < 0)
		return -1;
	return m->manifest->choices[d->choice].kernel[m->ops->picked(m->backend, d->choice, source)];
}

/* The row dispatch d is grouped under: its kernel, else its op. */
static prof_row prof_key(const halo_model *m, const halo_dispatch *d)
{
	halo_pick_source src;
	int k = running_kernel(m, d, &src);
	if (k >= 0)
		return (prof_row){m->manifest->kernels[k].signature, halo_pick_source_name(src), 0, 0};
	const char *op = halo_op_name(d->op);
	return (prof_row){op, NULL, 0, 0};
}

void halo_session_profile_report(const halo_session *s, FILE *out, int top)
{
	const halo_manifest *m = s->model->manifest;
	if (!s->prof_ns)
		return;
	int cap = 0, n = 0;
	for (int i = 0; i < m->n_entries; i++)
		cap += m->entries[i].n_dispatch;
	prof_row *rows = calloc((size_t)cap + 1, sizeof(*rows));
	double total = 0;
	for (int i = 0; rows && i < m->n_entries; i++) {
		for (int j = 0; s->prof_steps[i] && j < m->entries[i].n_dispatch; j++) {
			prof_row key = prof_key(s->model, &m->entries[i].dispatch[j]);
			int r = 0;
			while (r < n && strcmp(rows[r].name, key.name) != 0)
				r++;
			if (r == n)
				rows[n++] = key;
			rows[r].ns += s->prof_ns[i][j];
			rows[r].calls += s->prof_steps[i];
			total += s->prof_ns[i][j];
		}
	}
	if (!rows || total <= 0) {
		free(rows);
		return;
	}
	qsort(rows, (size_t)n, sizeof(*rows), by_time_desc);
	fprintf(out, "profile: %.3f ms in dispatches over the profiled steps; top %d of %d kernels\n", total / 1e6,
		top < n ? top : n, n);
	for (int r = 0; r < n && r < top; r++) {
		fprintf(out, "  %5.1f%% %10.3f ms %7lld calls  ", 100.0 * rows[r].ns / total, rows[r].ns / 1e6,
			(long long)rows[r].calls);
		if (rows[r].source)
			fprintf(out, "%-9s ", rows[r].source);
		fprintf(out, "%s\n", rows[r].name);
	}
	free(rows);
}

/* ---- kernel choices (runtime/tuning.h) ---------------------------------------------------- */

_Static_assert(HALO_CHOICE_MAX_CANDIDATES == HALO_MAX_CANDIDATES, "runtime/tuning.h and manifest.h disagree");

const char *halo_pick_source_name(halo_pick_source src)
{
	static const char *const names[] = {"heuristic", "tuned", "forced"};
	return (size_t)src < sizeof(names) / sizeof(names[0]) ? names[src] : "?";
}

int halo_model_choice_count(const halo_model *m)
{
	return m->ops->picked ? m->manifest->n_choices : 0;
}

bool halo_model_choice(const halo_model *m, int choice, halo_choice_info *out)
{
	if (choice < 0 || choice >= halo_model_choice_count(m))
		return false;
	const halo_choice *c = &m->manifest->choices[choice];
	out->key = c->key;
	out->n_candidates = c->n;
	out->picked = m->ops->picked(m->backend, choice, &out->source);
	return true;
}

bool halo_model_candidate(const halo_model *m, int choice, int pos, halo_candidate_info *out)
{
	if (choice < 0 || choice >= halo_model_choice_count(m) || pos < 0 || pos >= m->manifest->choices[choice].n)
		return false;
	int kernel = m->manifest->choices[choice].kernel[pos];
	const halo_kernel *k = &m->manifest->kernels[kernel];
	halo_device_id dev;
	m->ops->device(m->backend, &dev);
	bool code = !m->ops->runs_kernel || m->ops->runs_kernel(m->backend, kernel);
	*out = (halo_candidate_info){k->signature, k->tile, k->needs, code && (k->needs & ~dev.features) == 0};
	return true;
}

bool halo_model_set_picks(halo_model *m, const int *picks, char *err, size_t errlen)
{
	if (!m->ops->set_picks) {
		snprintf(err, errlen, "the %s backend runs no kernel choices", m->ops->name);
		return false;
	}
	return m->ops->set_picks(m->backend, picks, err, errlen);
}

bool halo_model_device(const halo_model *m, halo_device_id *out)
{
	if (!m->ops->device)
		return false;
	m->ops->device(m->backend, out);
	return true;
}

int halo_model_entry_count(const halo_model *m)
{
	return m->manifest->n_entries;
}

const char *halo_model_entry_name(const halo_model *m, int i)
{
	return i >= 0 && i < m->manifest->n_entries ? m->manifest->entries[i].name : NULL;
}

bool halo_model_entry_uses(const halo_model *m, int entry, int choice)
{
	if (entry < 0 || entry >= m->manifest->n_entries)
		return false;
	const halo_entry *e = &m->manifest->entries[entry];
	for (int i = 0; i < e->n_dispatch; i++)
		if (e->dispatch[i].choice == choice)
			return true;
	return false;
}

void halo_session_choice_ns(const halo_session *s, double *ns)
{
	const halo_manifest *m = s->model->manifest;
	int n = halo_model_choice_count(s->model);
	for (int c = 0; c < n; c++)
		ns[c] = 0;
	for (int i = 0; s->prof_ns && i < m->n_entries; i++)
		for (int j = 0; j < m->entries[i].n_dispatch; j++) {
			int c = m->entries[i].dispatch[j].choice;
			if (c >= 0 && c < n)
				ns[c] += s->prof_ns[i][j];
		}
}

void halo_session_profile_clear(halo_session *s)
{
	const halo_manifest *m = s->model->manifest;
	for (int i = 0; s->prof_ns && i < m->n_entries; i++) {
		memset(s->prof_ns[i], 0, (size_t)m->entries[i].n_dispatch * sizeof(double));
		s->prof_steps[i] = 0;
	}
}
