#include "runtime/spec.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

bool halo_spec_check_model(const halo_model *m, const char *draft_entry, int k, char *err, size_t errlen)
{
	halo_entry_info ver, dec, drf;
	if (k < 1 || k > HALO_SPEC_K_MAX)
		snprintf(err, errlen, "%d drafts per round: want 1..%d", k, HALO_SPEC_K_MAX);
	else if (!halo_model_entry(m, "verify", &ver))
		snprintf(err, errlen, "no 'verify' entry point to check drafts with (recompile: the model file "
			 "declares one with recurrent: slots)");
	else if (!ver.state_slots)
		snprintf(err, errlen, "its 'verify' entry keeps no per-token state slots (recurrent: slots)");
	else if (!ver.logits_all)
		snprintf(err, errlen, "its 'verify' entry returns only the last row's logits; verifying drafts "
			 "needs every row (logits: all)");
	else if (ver.t_max < (int64_t)k + 1)
		snprintf(err, errlen, "its 'verify' entry takes at most %lld tokens; %d drafts need %d (halo compile "
			 "--draft-max)", (long long)ver.t_max, k, k + 1);
	else if (!halo_model_entry(m, "decode", &dec))
		snprintf(err, errlen, "no 'decode' entry point for the rounds without drafts");
	else if (dec.t_min != ver.t_min || dec.t_max != ver.t_max)
		snprintf(err, errlen, "its 'decode' and 'verify' entries take different token ranges ([%lld, %lld] "
			 "and [%lld, %lld]), so they may run different kernels and speculation would not be exact",
			 (long long)dec.t_min, (long long)dec.t_max, (long long)ver.t_min, (long long)ver.t_max);
	else if (draft_entry && !halo_model_entry(m, draft_entry, &drf))
		snprintf(err, errlen, "no '%s' entry point: the drafter needs the model's draft head compiled "
			 "into the bundle", draft_entry);
	else
		return true;
	return false;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Everything one generation owns. */
typedef struct {
	halo_model *m;
	halo_session *s;
	const halo_drafter *d;
	const halo_spec_options *o;
	int64_t vocab, n_ctx;
	int32_t *ctx;  /* prompt, then every emitted token */
	int64_t n;     /* tokens in ctx */
	halo_verify_work work;
	halo_rng rng;  /* the verifier's stream */
	double p;      /* adaptive: moving average of the per-draft acceptance */
	int plain_run; /* adaptive: plain rounds since the last drafting one */
	bool ended;    /* on_tokens ended the generation */
	halo_spec_stats *st;
} spec_run;

/* Acceptance below which drafting loses to plain decoding, the weight of the
 * newest verdict in the moving average, the chance that every draft of a
 * round is accepted that the adaptive k keeps, and the acceptance assumed
 * before any verdict: neutral, so a generation starts at one draft a round
 * and grows k with every accepted draft (k = 4 after four). It started at 1
 * (K drafts a round until rejections pulled it down): a drafter that is never
 * right then drafted 10-11 tokens in five rounds before its first plain one,
 * which cost 12-16% of 64 tokens' time on the Flash cut (0.84-0.88x plain,
 * bench/results-h200-qwen4.txt); from 0.5 two one-draft rounds take it below
 * SPEC_P_MIN. */
#define SPEC_P_MIN 0.3
#define SPEC_P_WEIGHT 0.25
#define SPEC_ALL_ACCEPTED 0.35
#define SPEC_P_START 0.5

static void spec_run_free(spec_run *r)
{
	free(r->ctx);
	free(r->work.p);
	free(r->work.residual);
	free(r->work.scratch);
}

static bool spec_run_init(spec_run *r, const int32_t *prompt, int64_t n_prompt, int64_t n_predict, char *err,
			  size_t errlen)
{
	r->vocab = halo_model_vocab(r->m);
	r->n_ctx = halo_model_n_ctx(r->m);
	size_t v = (size_t)r->vocab;
	r->ctx = malloc((size_t)(n_prompt + n_predict) * sizeof(*r->ctx));
	r->work.p = malloc(v * sizeof(float));
	r->work.residual = malloc(v * sizeof(float));
	r->work.scratch = malloc(v * sizeof(int32_t));
	if (!r->ctx || !r->work.p || !r->work.residual || !r->work.scratch) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	memcpy(r->ctx, prompt, (size_t)n_prompt * sizeof(*prompt));
	r->n = n_prompt;
	r->p = SPEC_P_START;
	halo_verifier_rng_seed(&r->rng, r->o->seed);
	return true;
}

/* The drafts this round asks for: the options' k, or the adaptive choice. */
static int wanted_k(spec_run *r)
{
	int k = r->o->k;
	if (!r->o->adaptive)
		return k;
	if (r->p < SPEC_P_MIN) {
		if (++r->plain_run <= HALO_SPEC_PROBE_EVERY)
			return 0;
		r->plain_run = 0;
		return 1;
	}
	r->plain_run = 0;
	int fit = 1;
	for (double all = r->p; fit < k && all * r->p >= SPEC_ALL_ACCEPTED; fit++)
		all *= r->p;
	return fit;
}

/* The most drafts this round may verify: its k + 1 emitted tokens stay within
 * n_predict, and the k + 1 tokens it feeds within the context. */
static int round_k(const spec_run *r, int k, int64_t emitted, int64_t n_predict)
{
	int64_t most = k;
	if (most > n_predict - emitted - 1)
		most = n_predict - emitted - 1;
	if (most > r->n_ctx - halo_session_pos(r->s) - 1)
		most = r->n_ctx - halo_session_pos(r->s) - 1;
	return most < 0 ? 0 : (int)most;
}

static int propose(spec_run *r, int k, halo_draft *drafts, char *err, size_t errlen)
{
	if (k == 0)
		return 0;
	double t0 = now_s();
	int m = r->d->propose(r->d->self, r->ctx, r->n, k, drafts, err, errlen);
	r->st->draft_s += now_s() - t0;
	if (m > k) {
		snprintf(err, errlen, "the drafter proposed %d tokens when asked for at most %d", m, k);
		return -1;
	}
	for (int i = 0; i < m; i++) {
		if (drafts[i].token < 0 || drafts[i].token >= r->vocab) {
			snprintf(err, errlen, "the drafter proposed token %d (draft %d), outside the vocabulary [0, %lld)",
				 drafts[i].token, i, (long long)r->vocab);
			return -1;
		}
	}
	return m;
}

/* Feeds [t, drafts] (through `decode` when there are no drafts) and decides. */
static bool verify(spec_run *r, int32_t t, const halo_draft *drafts, int m, halo_verdict *v, char *err,
		   size_t errlen)
{
	double t0 = now_s();
	int32_t batch[HALO_SPEC_K_MAX + 1];
	batch[0] = t;
	for (int i = 0; i < m; i++)
		batch[i + 1] = drafts[i].token;
	/* the rows are judged where the backend left them: no copy */
	if (!halo_session_step(r->s, m > 0 ? "verify" : "decode", batch, m + 1, NULL, err, errlen))
		return false;
	const float *rows = halo_session_logits(r->s, NULL);
	if (r->o->sampling.temperature > 0)
		*v = halo_verify_sampled(&r->o->sampling, rows, r->vocab, drafts, m, &r->rng, &r->work);
	else
		*v = halo_verify_greedy(rows, r->vocab, drafts, m);
	r->st->verify_s += now_s() - t0;
	return true;
}

/* Keeps t and the first n - 1 emitted tokens (the accepted drafts, unless
 * on_tokens kept fewer): the state after them is the verify step's slot
 * n - 1 (no copy when every draft was kept). */
static bool keep(spec_run *r, int n, bool rejected, char *err, size_t errlen)
{
	double t0 = now_s();
	bool ok = halo_session_keep(r->s, n, err, errlen);
	r->st->accept_s += now_s() - t0;
	r->st->rejected_rounds += rejected;
	return ok;
}

/* Hands tokens[0..n) to on_tokens; returns how many the generation keeps. */
static int deliver(spec_run *r, const int32_t *tokens, int n)
{
	int kept = n;
	if (!r->o->on_tokens || r->o->on_tokens(r->o->user, tokens, n, &kept))
		return n;
	r->ended = true;
	return kept < 1 ? 1 : kept > n ? n : kept;
}

/* The verdicts seen: acceptance per draft position, and the moving average
 * of the drafts judged (every accepted one and the first rejected; later
 * ones were never judged). */
static void count(spec_run *r, int m, const halo_verdict *v)
{
	halo_spec_stats *st = r->st;
	st->rounds++;
	st->plain_rounds += m == 0;
	st->drafted += m;
	st->accepted += v->accepted;
	for (int i = 0; i < m; i++) {
		st->drafted_at[i]++;
		st->accepted_at[i] += i < v->accepted;
	}
	for (int i = 0; i < m && i <= v->accepted; i++)
		r->p += SPEC_P_WEIGHT * ((i < v->accepted ? 1.0 : 0.0) - r->p);
}

/* One round from t = ctx[n - 1]: emits the accepted drafts and the target's
 * next token into ctx (those on_tokens keeps). */
static bool round_once(spec_run *r, int k, char *err, size_t errlen)
{
	halo_draft drafts[HALO_SPEC_K_MAX];
	int32_t t = r->ctx[r->n - 1];
	int m = propose(r, k, drafts, err, errlen);
	halo_verdict v;
	if (m < 0 || !verify(r, t, drafts, m, &v, err, errlen))
		return false;
	/* round_k left room in ctx for every draft and the next token */
	int32_t *emitted = r->ctx + r->n;
	for (int i = 0; i < v.accepted; i++)
		emitted[i] = drafts[i].token;
	emitted[v.accepted] = v.next;
	int n = deliver(r, emitted, v.accepted + 1);
	if (m > 0 && !keep(r, n, v.accepted < m, err, errlen))
		return false;
	int kept_drafts = n < v.accepted ? n : v.accepted;
	if (m > 0 && r->d->accepted && !r->d->accepted(r->d->self, kept_drafts, err, errlen))
		return false;
	count(r, m, &v);
	r->n += n;
	return true;
}

bool halo_spec_generate(halo_model *m, halo_session *s, const halo_drafter *d, const halo_spec_options *o,
			const int32_t *prompt, int64_t n_prompt, const float *last_logits, int64_t n_predict,
			int32_t *out, halo_spec_stats *st, char *err, size_t errlen)
{
	memset(st, 0, sizeof(*st));
	if (o->k < 1 || o->k > HALO_SPEC_K_MAX) {
		snprintf(err, errlen, "%d drafts per round: want 1..%d", o->k, HALO_SPEC_K_MAX);
		return false;
	}
	if (n_predict <= 0)
		return true;
	spec_run r = {.m = m, .s = s, .d = d, .o = o, .st = st};
	bool ok = spec_run_init(&r, prompt, n_prompt, n_predict, err, errlen);
	if (ok) {
		/* The first token is the plain sampler's, from the same stream. */
		halo_rng sampler;
		halo_rng_seed(&sampler, o->seed);
		r.ctx[r.n] = halo_sample(&o->sampling, last_logits, r.vocab, &sampler, r.work.p, r.work.scratch);
		r.n += deliver(&r, r.ctx + r.n, 1);
	}
	while (ok && !r.ended && r.n - n_prompt < n_predict)
		ok = round_once(&r, round_k(&r, wanted_k(&r), r.n - n_prompt, n_predict), err, errlen);
	st->emitted = r.n > n_prompt ? r.n - n_prompt : 0;
	if (st->emitted > 0)
		memcpy(out, r.ctx + n_prompt, (size_t)st->emitted * sizeof(*out));
	spec_run_free(&r);
	return ok;
}

void halo_spec_stats_print(const halo_spec_stats *st, int k, FILE *out)
{
	double rounds = st->rounds ? (double)st->rounds : 1;
	fprintf(out, "spec: %lld rounds, K <= %d: %lld of %lld drafts accepted (%.1f%%), %.2f tokens per round; "
		"%lld rounds rejected a draft, %lld drafted nothing\n", (long long)st->rounds, k,
		(long long)st->accepted, (long long)st->drafted,
		st->drafted ? 100.0 * (double)st->accepted / (double)st->drafted : 0.0,
		(double)(st->emitted - 1) / rounds, (long long)st->rejected_rounds, (long long)st->plain_rounds);
	fprintf(out, "spec: acceptance by draft position:");
	for (int i = 0; i < k && i < HALO_SPEC_K_MAX; i++)
		fprintf(out, " %d: %.1f%% of %lld", i + 1,
			st->drafted_at[i] ? 100.0 * (double)st->accepted_at[i] / (double)st->drafted_at[i] : 0.0,
			(long long)st->drafted_at[i]);
	fprintf(out, "\nspec: time: draft %.3f s, verify %.3f s, accept %.3f s\n", st->draft_s, st->verify_s,
		st->accept_s);
}
