/* Speculative decoding on real bundles: models/<family>.yaml compiled with
 * tests/fixtures/<family>_tiny, run on a backend (validation on for Vulkan).
 *
 * usage: test_spec_exact greedy|sampled BACKEND FAMILY N_TOKENS K,K,... [DRAFT_VOCAB]
 *
 * DRAFT_VOCAB: the bundle's draft head narrowed to token ids
 * 0 .. DRAFT_VOCAB - 1 (halo compile --draft-vocab): every check below
 * holds as for the whole vocabulary, and the head's own drafts (greedy)
 * stay inside its vocabulary.
 *
 * greedy: for each K, a drafter proposes the target's own plain-greedy
 * continuation (precomputed) with one token perturbed at position
 * round % (K + 1), so every round's acceptance length is forced and every
 * length 0..K occurs. The spec-decoded tokens must equal plain greedy
 * decoding's, and the state left behind must be the same bits: feeding the
 * last token to both sessions gives bitwise equal logits. For the recurrent
 * hybrid this is the check that conv and SSM state roll back exactly.
 *
 * When the bundle has a draft head (the fixture's MTP head), the forcing
 * drafter runs the MTP drafter first and then perturbs its proposal: the
 * head's caches see every acceptance length, and after each run a fresh
 * session and drafter fed the same tokens must propose the same drafts
 * (the head's state rolled back by position alone). Its natural acceptance
 * against plain greedy is printed.
 *
 * Adaptive k (halo_spec_options.adaptive, K the most): with the forcing
 * drafter, and with a drafter that is never right, which must turn drafting
 * down to plain decode steps and one-draft probes; tokens and state as above.
 *
 * sampled: temperature 0.8, top-k 40, drafts drawn from a q: the MTP head's
 * sampling distribution when the bundle has one, else a q of the test's own.
 * The same seed gives the same tokens, another seed other tokens, and the
 * first token is the plain sampler's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/mtp_draft.h"
#include "runtime/spec.h"
#include "tests/runtime/model_check.h"

typedef struct {
	const int32_t *ref; /* the plain continuation: ref[0] is the first generated token */
	int64_t n_ref, n_prompt, vocab;
	int64_t draft_width; /* the MTP head's logits a row (its --draft-vocab) */
	int k;
	long round;
	int expect;                      /* forced acceptance length of the round in flight */
	long hist[HALO_SPEC_K_MAX + 1];  /* rounds by acceptance length */
	bool sampled;
	bool never_right;                /* every draft wrong (expect 0) */
	halo_rng rng;
	float *q;                        /* [HALO_SPEC_K_MAX, vocab] */
	halo_drafter inner;              /* the MTP drafter, run before perturbing; propose NULL: none */
	long natural, proposed;          /* inner drafts equal to plain greedy, inner drafts */
} forcing_drafter;

static int32_t ref_at(const forcing_drafter *f, int64_t i)
{
	return f->ref[i < f->n_ref ? i : f->n_ref - 1];
}

/* Half the mass on the plain continuation, half spread evenly. */
static halo_draft sampled_draft(forcing_drafter *f, int64_t e, int i)
{
	float *q = f->q + (size_t)i * (size_t)f->vocab;
	for (int64_t v = 0; v < f->vocab; v++)
		q[v] = 0.5f / (float)f->vocab;
	q[ref_at(f, e + i)] += 0.5f;
	return (halo_draft){halo_sample_from(q, f->vocab, &f->rng), q};
}

static int forcing_propose(void *self, const int32_t *ctx, int64_t n, int k, halo_draft *out, char *err,
			   size_t errlen)
{
	forcing_drafter *f = self;
	int64_t e = n - f->n_prompt; /* tokens emitted so far; the next one is ref[e] */
	if (f->sampled) {
		for (int i = 0; i < k; i++)
			out[i] = sampled_draft(f, e, i);
		return k;
	}
	for (int64_t i = 0; i < e; i++) {
		if (ctx[f->n_prompt + i] != f->ref[i]) {
			snprintf(err, errlen, "the context left plain greedy decoding at token %lld", (long long)i);
			return -1;
		}
	}
	int m = e + k <= f->n_ref ? k : (int)(f->n_ref - e);
	if (f->inner.propose) {
		/* the head's own greedy drafts, then counted and overwritten */
		int got = f->inner.propose(f->inner.self, ctx, n, k, out, err, errlen);
		if (got != k)
			return got < 0 ? -1 : (snprintf(err, errlen, "MTP drafter proposed %d of %d", got, k), -1);
		for (int i = 0; i < k; i++)
			if (out[i].token < 0 || out[i].token >= f->draft_width) {
				snprintf(err, errlen, "MTP draft %d is token %d, outside the head's %lld", i,
					 out[i].token, (long long)f->draft_width);
				return -1;
			}
		for (int i = 0; i < m; i++)
			f->natural += out[i].token == f->ref[e + i];
		f->proposed += m;
	}
	int reject = f->never_right ? 0 : (int)(f->round++ % (f->k + 1));
	for (int i = 0; i < m; i++)
		out[i] = (halo_draft){i == reject ? (f->ref[e + i] + 1) % (int32_t)f->vocab : f->ref[e + i], NULL};
	f->expect = reject < m ? reject : m;
	return m;
}

static bool forcing_accepted(void *self, int accepted, char *err, size_t errlen)
{
	forcing_drafter *f = self;
	f->hist[accepted]++;
	if (!f->sampled && accepted != f->expect) {
		snprintf(err, errlen, "round %ld accepted %d drafts, the perturbation forced %d", f->round, accepted,
			 f->expect);
		return false;
	}
	return true;
}

typedef struct {
	halo_model *m;
	halo_session *s;
	int32_t *prompt;
	int64_t n_prompt, vocab;
	float *last; /* the prompt's final logits row */
	bool has_mtp; /* the bundle has the MTP head's entry points */
	int64_t draft_width; /* their logits a row */
} target;

static void prefill(target *t)
{
	char err[2048];
	MC_CHECK(halo_session_reset(t->s, err, sizeof(err)), "%s", err);
	MC_CHECK(halo_session_prefill(t->s, t->prompt, t->n_prompt, NULL, t->last, err, sizeof(err)), "%s", err);
}

/* Plain decoding, one token per step, as halo run does it. */
static void plain(target *t, const halo_sampling *smp, uint64_t seed, int32_t *out, int64_t n)
{
	char err[2048];
	float *row = malloc((size_t)t->vocab * sizeof(float)), *p = malloc((size_t)t->vocab * sizeof(float));
	int32_t *scratch = malloc((size_t)t->vocab * sizeof(int32_t));
	halo_rng rng;
	halo_rng_seed(&rng, seed);
	prefill(t);
	memcpy(row, t->last, (size_t)t->vocab * sizeof(float));
	for (int64_t i = 0; i < n; i++) {
		out[i] = halo_sample(smp, row, t->vocab, &rng, p, scratch);
		if (i + 1 < n)
			MC_CHECK(halo_session_step(t->s, "decode", &out[i], 1, row, err, sizeof(err)), "%s", err);
	}
	free(row);
	free(p);
	free(scratch);
}

/* Prefills the prompt, then generates n tokens through drafter d. */
static bool speculate(target *t, const halo_drafter *d, const halo_spec_options *o, int32_t *out, int64_t n)
{
	char err[2048];
	halo_spec_stats st;
	prefill(t);
	bool ok = halo_spec_generate(t->m, t->s, d, o, t->prompt, t->n_prompt, t->last, n, out, &st, err,
				     sizeof(err));
	MC_CHECK(ok, "K = %d: %s", o->k, err);
	MC_CHECK(st.emitted == n, "K = %d: emitted %lld of %lld", o->k, (long long)st.emitted, (long long)n);
	halo_spec_stats_print(&st, o->k, stdout);
	return ok;
}

/* Feeds the last token and returns the logits: the state must match too. */
static float *final_logits(target *t, int32_t last)
{
	char err[2048];
	float *row = malloc((size_t)t->vocab * sizeof(float));
	MC_CHECK(halo_session_step(t->s, "decode", &last, 1, row, err, sizeof(err)), "%s", err);
	return row;
}

static int count_distinct(const int32_t *tok, int64_t n, int64_t vocab)
{
	int distinct = 0;
	bool *seen = calloc((size_t)vocab, sizeof(bool));
	for (int64_t i = 0; i < n; i++) {
		distinct += !seen[tok[i]];
		seen[tok[i]] = true;
	}
	free(seen);
	return distinct;
}

/* A fresh session fed prompt + got[0..n-1) and a fresh MTP drafter must
 * propose what the drafter that went through the speculation proposes. */
static void check_drafter_state(target *t, halo_drafter *used, const int32_t *got, int64_t n, int k)
{
	char err[2048];
	int64_t len = t->n_prompt + n;
	int32_t *ctx = malloc((size_t)len * sizeof(int32_t));
	memcpy(ctx, t->prompt, (size_t)t->n_prompt * sizeof(int32_t));
	memcpy(ctx + t->n_prompt, got, (size_t)n * sizeof(int32_t));
	halo_draft a[HALO_SPEC_K_MAX], b[HALO_SPEC_K_MAX];
	int na = used->propose(used->self, ctx, len, k, a, err, sizeof(err));
	MC_CHECK(na == k, "K = %d: drafter after speculation: %s", k, err);
	halo_session *s = mc_session(t->m);
	const halo_sampling greedy = {.temperature = 0, .top_k = 0, .top_p = 1};
	halo_mtp_drafter *md = halo_mtp_drafter_create(t->m, s, &greedy, 0, err, sizeof(err));
	MC_CHECK(md, "%s", err);
	MC_CHECK(halo_session_prefill(s, ctx, len - 1, NULL, NULL, err, sizeof(err)), "%s", err);
	halo_drafter fresh = halo_mtp_drafter_iface(md);
	int nb = md ? fresh.propose(fresh.self, ctx, len, k, b, err, sizeof(err)) : -1;
	MC_CHECK(nb == k, "K = %d: fresh drafter: %s", k, err);
	for (int i = 0; na == k && nb == k && i < k; i++)
		MC_CHECK(a[i].token == b[i].token, "K = %d: draft %d after speculation is %d, a fresh head's %d", k, i,
			 a[i].token, b[i].token);
	halo_mtp_drafter_free(md);
	halo_session_free(s);
	free(ctx);
}

/* Speculates with drafter f, adaptive up to k when asked, and checks tokens
 * and final state against plain greedy decoding (want, want_last). */
static bool greedy_run(target *t, forcing_drafter *f, bool adaptive, const int32_t *want, const float *want_last,
		       int32_t *got, int64_t n, halo_spec_stats *st)
{
	const halo_sampling greedy = {.temperature = 0, .top_k = 0, .top_p = 1};
	halo_spec_options o = {.k = f->k, .adaptive = adaptive, .sampling = greedy, .seed = 0};
	char err[2048];
	halo_mtp_drafter *md = t->has_mtp ? halo_mtp_drafter_create(t->m, t->s, &greedy, 0, err, sizeof(err)) : NULL;
	MC_CHECK(!t->has_mtp || md, "%s", err);
	if (md)
		f->inner = halo_mtp_drafter_iface(md);
	f->draft_width = t->draft_width;
	halo_drafter d = {f, forcing_propose, forcing_accepted};
	prefill(t);
	bool ok = halo_spec_generate(t->m, t->s, &d, &o, t->prompt, t->n_prompt, t->last, n, got, st, err, sizeof(err));
	MC_CHECK(ok, "K = %d: %s", o.k, err);
	MC_CHECK(!ok || st->emitted == n, "K = %d: emitted %lld of %lld", o.k, (long long)st->emitted, (long long)n);
	if (ok)
		halo_spec_stats_print(st, o.k, stdout);
	if (ok && md) {
		printf("K = %d: the MTP head's own drafts matched plain greedy %ld of %ld times\n", f->k, f->natural,
		       f->proposed);
		check_drafter_state(t, &f->inner, got, n, f->k);
	}
	halo_mtp_drafter_free(md);
	if (!ok)
		return false;
	for (int64_t i = 0; i < n; i++)
		if (got[i] != want[i]) {
			MC_CHECK(0, "K = %d%s: token %lld is %d, plain greedy gives %d", f->k, adaptive ? " adaptive" : "",
				 (long long)i, got[i], want[i]);
			return false;
		}
	float *last = final_logits(t, got[n - 1]);
	bool same = mc_bitwise("state after speculation", last, want_last, (size_t)t->vocab);
	MC_CHECK(same, "K = %d%s: the state after speculating differs from plain decoding's", f->k,
		 adaptive ? " adaptive" : "");
	free(last);
	return same;
}

/* Adaptive k up to k_max: the forcing drafter, then one never right, which
 * must leave most rounds plain: the first rounds' drafts while the moving
 * average falls (at most 4 rounds of k_max drafts), then one-draft probes. */
static void check_adaptive(target *t, int k_max, const int32_t *want, const float *want_last, int32_t *got, int64_t n)
{
	halo_spec_stats st;
	forcing_drafter f = {.ref = want, .n_ref = n, .n_prompt = t->n_prompt, .vocab = t->vocab, .k = k_max};
	greedy_run(t, &f, true, want, want_last, got, n, &st);
	forcing_drafter never = {.ref = want, .n_ref = n, .n_prompt = t->n_prompt, .vocab = t->vocab, .k = k_max,
				 .never_right = true};
	if (!greedy_run(t, &never, true, want, want_last, got, n, &st))
		return;
	/* two one-draft rounds from the neutral start (p 0.5, 0.375, then under
	 * 0.3), then a probe every HALO_SPEC_PROBE_EVERY plain rounds */
	int64_t most = 2 + n / HALO_SPEC_PROBE_EVERY + 1;
	MC_CHECK(st.accepted == 0 && st.drafted <= most && st.plain_rounds > 0,
		 "K <= %d, never right: %lld drafts (want <= %lld), %lld accepted, %lld plain rounds", k_max,
		 (long long)st.drafted, (long long)most, (long long)st.accepted, (long long)st.plain_rounds);
}

static void check_greedy(target *t, const int *ks, int n_ks, int64_t n)
{
	const halo_sampling greedy = {.temperature = 0, .top_k = 0, .top_p = 1};
	int32_t *want = malloc((size_t)n * sizeof(int32_t)), *got = malloc((size_t)n * sizeof(int32_t));
	plain(t, &greedy, 0, want, n);
	float *want_last = final_logits(t, want[n - 1]);
	/* A continuation stuck on one token would not notice a wrong state. */
	MC_CHECK(count_distinct(want, n, t->vocab) >= 8, "plain greedy uses only %d distinct tokens",
		 count_distinct(want, n, t->vocab));
	int k_max = 1;
	for (int ki = 0; ki < n_ks; ki++) {
		forcing_drafter f = {.ref = want, .n_ref = n, .n_prompt = t->n_prompt, .vocab = t->vocab,
				     .k = ks[ki]};
		halo_spec_stats st;
		if (!greedy_run(t, &f, false, want, want_last, got, n, &st))
			continue;
		for (int a = 0; a <= f.k; a++)
			MC_CHECK(f.hist[a] > 0, "K = %d: no round accepted exactly %d drafts", f.k, a);
		k_max = f.k > k_max ? f.k : k_max;
	}
	check_adaptive(t, k_max, want, want_last, got, n);
	free(want_last);
	free(want);
	free(got);
}

/* The MTP head drafting from its sampling distribution. */
static void sampled_mtp_run(target *t, int k, uint64_t seed, int32_t *out, int64_t n)
{
	char err[2048];
	halo_spec_options o = {.k = k, .sampling = {.temperature = 0.8f, .top_k = 40, .top_p = 1}, .seed = seed};
	halo_mtp_drafter *md = halo_mtp_drafter_create(t->m, t->s, &o.sampling, seed, err, sizeof(err));
	MC_CHECK(md, "%s", err);
	if (!md)
		return;
	halo_drafter d = halo_mtp_drafter_iface(md);
	speculate(t, &d, &o, out, n);
	halo_mtp_drafter_free(md);
}

static void sampled_run(target *t, int k, uint64_t seed, int32_t *out, int64_t n)
{
	if (t->has_mtp) {
		sampled_mtp_run(t, k, seed, out, n);
		return;
	}
	forcing_drafter f = {.n_prompt = t->n_prompt, .vocab = t->vocab, .k = k, .sampled = true};
	f.q = malloc((size_t)HALO_SPEC_K_MAX * (size_t)t->vocab * sizeof(float));
	int32_t *ref = malloc((size_t)n * sizeof(int32_t));
	const halo_sampling greedy = {.temperature = 0, .top_k = 0, .top_p = 1};
	plain(t, &greedy, 0, ref, n);
	f.ref = ref;
	f.n_ref = n;
	halo_rng_seed(&f.rng, seed + 1000);
	halo_spec_options o = {.k = k, .sampling = {.temperature = 0.8f, .top_k = 40, .top_p = 1}, .seed = seed};
	halo_drafter d = {&f, forcing_propose, forcing_accepted};
	speculate(t, &d, &o, out, n);
	free(ref);
	free(f.q);
}

static void check_sampled(target *t, const int *ks, int n_ks, int64_t n)
{
	int32_t *a = malloc((size_t)n * sizeof(int32_t)), *b = malloc((size_t)n * sizeof(int32_t));
	int32_t *c = malloc((size_t)n * sizeof(int32_t)), *first = malloc((size_t)n * sizeof(int32_t));
	const halo_sampling smp = {.temperature = 0.8f, .top_k = 40, .top_p = 1};
	plain(t, &smp, 5, first, 1);
	for (int ki = 0; ki < n_ks; ki++) {
		int k = ks[ki];
		sampled_run(t, k, 5, a, n);
		sampled_run(t, k, 5, b, n);
		sampled_run(t, k, 6, c, n);
		MC_CHECK(memcmp(a, b, (size_t)n * sizeof(int32_t)) == 0, "K = %d: seed 5 twice gave different tokens",
			 k);
		MC_CHECK(memcmp(a, c, (size_t)n * sizeof(int32_t)) != 0, "K = %d: seeds 5 and 6 gave the same tokens",
			 k);
		MC_CHECK(a[0] == first[0], "K = %d: first token %d, the plain sampler's is %d", k, a[0], first[0]);
	}
	free(a);
	free(b);
	free(c);
	free(first);
}

/* "1,2,4" -> ks; false unless every K is in 1..HALO_SPEC_K_MAX. */
static bool parse_ks(const char *s, int *ks, int *n)
{
	*n = 0;
	for (char *end; *s && *n < HALO_SPEC_K_MAX; s = *end ? end + 1 : end) {
		long k = strtol(s, &end, 10);
		if (end == s || (*end && *end != ',') || k < 1 || k > HALO_SPEC_K_MAX)
			return false;
		ks[(*n)++] = (int)k;
	}
	return *n > 0 && !*s;
}

int main(int argc, char **argv)
{
	int ks[HALO_SPEC_K_MAX], n_ks = 0;
	int64_t draft_vocab = argc == 7 ? atoll(argv[6]) : 0;
	if ((argc != 6 && (argc != 7 || draft_vocab < 1)) || (strcmp(argv[1], "greedy") && strcmp(argv[1], "sampled")) ||
	    !halo_backend_check(argv[2], NULL, 0) || atoll(argv[4]) < 2 || !parse_ks(argv[5], ks, &n_ks)) {
		fprintf(stderr, "usage: test_spec_exact greedy|sampled BACKEND FAMILY N_TOKENS K,K,... [DRAFT_VOCAB]\n");
		return 2;
	}
	const char *backend = argv[2];
	char model[256], fixture[256], bundle[64], path[300], err[2048];
	snprintf(model, sizeof(model), "models/%s.yaml", argv[3]);
	snprintf(fixture, sizeof(fixture), "tests/fixtures/%s_tiny", argv[3]);
	snprintf(bundle, sizeof(bundle), "spec_%d.halo", (int)getpid());
	if (draft_vocab)
		mc_compile_draft_vocab(model, fixture, bundle, draft_vocab, backend);
	else
		mc_compile_for(model, fixture, bundle, false, backend);
	target t = {.m = mc_open(bundle, backend)};
	halo_entry_info draft;
	t.has_mtp = halo_model_entry(t.m, HALO_MTP_STEP_ENTRY, &draft);
	t.draft_width = t.has_mtp ? draft.width : 0;
	MC_CHECK(!draft_vocab || (t.has_mtp && draft.width == draft_vocab && draft_vocab < halo_model_vocab(t.m)),
		 "a draft head of %lld tokens was compiled; the bundle's has %lld of %lld", (long long)draft_vocab,
		 (long long)t.draft_width, (long long)halo_model_vocab(t.m));
	for (int i = 0; i < n_ks; i++)
		MC_CHECK(halo_spec_check_model(t.m, t.has_mtp ? HALO_MTP_STEP_ENTRY : NULL, ks[i], err, sizeof(err)), "%s",
			 err);
	t.s = mc_session(t.m);
	t.vocab = halo_model_vocab(t.m);
	snprintf(path, sizeof(path), "%s/prompt_tokens.i32", fixture);
	size_t bytes;
	t.prompt = mc_read_file(mc_source_path(path), &bytes);
	t.n_prompt = (int64_t)(bytes / sizeof(int32_t));
	t.last = malloc((size_t)t.vocab * sizeof(float));
	/* N_TOKENS, within the context the bundle holds (the fixture's
	 * max_position_embeddings) with room for the final step's token and
	 * the drafts check_drafter_state proposes after the last one */
	int64_t n = atoll(argv[4]), room = halo_model_n_ctx(t.m) - t.n_prompt - 1 - HALO_SPEC_K_MAX;
	if (n > room) {
		printf("%lld tokens: the context of %lld holds %lld after the prompt\n", (long long)n,
		       (long long)halo_model_n_ctx(t.m), (long long)room);
		n = room;
	}
	if (strcmp(argv[1], "greedy") == 0)
		check_greedy(&t, ks, n_ks, n);
	else
		check_sampled(&t, ks, n_ks, n);
	MC_CHECK(halo_model_validation_messages(t.m) == 0, "validation messages");
	halo_session_free(t.s);
	halo_model_close(t.m);
	remove(bundle);
	free(t.prompt);
	free(t.last);
	if (mc_failures)
		return 1;
	printf("spec %s %s %s: ok\n", argv[1], argv[2], argv[3]);
	return 0;
}
