#include "runtime/generate.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/mtp_draft.h"
#include "runtime/text_stream.h"

const char *halo_finish_reason_name(halo_finish_reason r)
{
	switch (r) {
	case HALO_FINISH_STOP:
		return "stop";
	case HALO_FINISH_LENGTH:
		return "length";
	case HALO_FINISH_CANCELLED:
		return "cancelled";
	}
	return "?";
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One generation's bookkeeping, shared by plain and speculative decoding. */
typedef struct {
	const halo_gen_options *o;
	halo_text_stream *ts;
	halo_gen_text_fn fn;
	void *user;
	halo_gen_result *res;
	bool text_done; /* a stop string or a cancel: nothing held back is released */
	bool failed;    /* the text stream failed: err says why */
	char *err;
	size_t errlen;
} gen_run;

static bool is_eos(const halo_gen_options *o, int32_t id)
{
	for (size_t i = 0; i < o->n_eos; i++)
		if (o->eos_ids[i] == id)
			return true;
	return false;
}

/* One emitted token: counted, then the end at an eos, or its text streamed.
 * Returns false when the generation ends with it (res->finish says why). */
static bool take(gen_run *g, int32_t id)
{
	if (g->o->ids_out)
		g->o->ids_out[g->res->completion_tokens] = id;
	g->res->completion_tokens++;
	if (is_eos(g->o, id)) {
		g->res->finish = HALO_FINISH_STOP;
		return false;
	}
	const char *piece;
	size_t len;
	halo_text_status st = halo_text_stream_push(g->ts, id, &piece, &len, g->err, g->errlen);
	if (st == HALO_TEXT_ERROR) {
		g->failed = true;
		return false;
	}
	g->text_done = st == HALO_TEXT_STOP;
	if (!g->fn(g->user, piece, len)) {
		g->res->finish = HALO_FINISH_CANCELLED;
		g->text_done = true;
		return false;
	}
	if (st == HALO_TEXT_STOP)
		g->res->finish = HALO_FINISH_STOP;
	return st != HALO_TEXT_STOP;
}

/* The generation ended at an eos or its length: what the stream held back
 * is final now (a stop string it completes still cuts it). */
static bool flush(gen_run *g)
{
	if (g->text_done)
		return true;
	const char *piece;
	size_t len;
	halo_text_status st = halo_text_stream_finish(g->ts, &piece, &len, g->err, g->errlen);
	if (st == HALO_TEXT_ERROR)
		return false;
	if (st == HALO_TEXT_STOP)
		g->res->finish = HALO_FINISH_STOP;
	if (len && !g->fn(g->user, piece, len))
		g->res->finish = HALO_FINISH_CANCELLED;
	return true;
}

/* Plain decoding: a sample, then a `decode` step feeding it unless the
 * generation ends with it (the last token stays unfed: generate.h). */
static bool decode_plain(halo_model *m, halo_session *s, gen_run *g, const float *row, int64_t n_gen, char *err,
			 size_t errlen)
{
	int64_t vocab = halo_model_vocab(m);
	float *probs = malloc((size_t)vocab * sizeof(float));
	int32_t *scratch = malloc((size_t)vocab * sizeof(int32_t));
	bool ok = probs && scratch;
	if (!ok)
		snprintf(err, errlen, "out of memory");
	halo_rng rng;
	halo_rng_seed(&rng, g->o->seed);
	/* the prompt's last row, then each step's read where the backend left it */
	const float *cur = row;
	for (int64_t i = 0; ok; i++) {
		int32_t next = halo_sample(&g->o->sampling, cur, vocab, &rng, probs, scratch);
		if (!take(g, next) || i + 1 == n_gen)
			break;
		ok = halo_session_step(s, "decode", &next, 1, NULL, err, errlen);
		cur = halo_session_logits(s, NULL);
	}
	free(probs);
	free(scratch);
	return ok && !g->failed;
}

/* halo_spec_options.on_tokens: each emitted token through take(). */
static bool spec_tokens(void *user, const int32_t *tokens, int n, int *keep)
{
	for (int i = 0; i < n; i++) {
		if (!take(user, tokens[i])) {
			*keep = i + 1;
			return false;
		}
	}
	return true;
}

/* Speculative decoding with the MTP head, which catches up on the whole
 * sequence (context and prompt) at its first proposal: a drafter per call
 * follows one generation, whatever ran on the session before. */
static bool decode_spec(halo_model *m, halo_session *s, gen_run *g, const int32_t *prompt, int64_t n_prompt,
			const float *row, int64_t n_gen, char *err, size_t errlen)
{
	const halo_gen_options *o = g->o;
	int64_t n_ctx = o->n_context + n_prompt;
	int32_t *ctx = malloc((size_t)n_ctx * sizeof(*ctx));
	int32_t *out = malloc((size_t)n_gen * sizeof(*out));
	halo_mtp_drafter *md = ctx && out ? halo_mtp_drafter_create(m, s, &o->sampling, o->seed, err, errlen) : NULL;
	if (!ctx || !out)
		snprintf(err, errlen, "out of memory");
	bool ok = md != NULL;
	if (ok) {
		if (o->n_context)
			memcpy(ctx, o->context, (size_t)o->n_context * sizeof(*ctx));
		memcpy(ctx + o->n_context, prompt, (size_t)n_prompt * sizeof(*ctx));
		halo_drafter d = halo_mtp_drafter_iface(md);
		halo_spec_options so = {.k = o->draft_n, .adaptive = !o->draft_fixed, .sampling = o->sampling,
					.seed = o->seed, .on_tokens = spec_tokens, .user = g};
		ok = halo_spec_generate(m, s, &d, &so, ctx, n_ctx, row, n_gen, out, &g->res->spec, err, errlen);
	}
	halo_mtp_drafter_free(md);
	free(ctx);
	free(out);
	return ok && !g->failed;
}

/* What halo_generate refuses before running anything. */
static bool check_request(const halo_model *m, const halo_session *s, int64_t n_prompt, const halo_gen_options *o,
			  char *err, size_t errlen)
{
	int64_t pos = halo_session_pos(s), n_ctx = halo_model_n_ctx(m);
	char why[1024];
	if (n_prompt < 1 || o->max_tokens < 1)
		snprintf(err, errlen, "generate: %s", n_prompt < 1 ? "an empty prompt" : "max_tokens must be >= 1");
	else if (n_prompt >= n_ctx - pos)
		snprintf(err, errlen, "context full: %lld prompt tokens at position %lld leave no room to generate in "
			 "the context of %lld tokens", (long long)n_prompt, (long long)pos, (long long)n_ctx);
	else if (o->spec_mtp && o->n_context != pos)
		snprintf(err, errlen, "generate: the context given for the MTP head holds %lld tokens, the session %lld",
			 (long long)o->n_context, (long long)pos);
	else if (o->spec_mtp && (!halo_spec_check_model(m, HALO_MTP_STEP_ENTRY, o->draft_n, why, sizeof(why)) ||
				 !halo_mtp_check_model(m, why, sizeof(why))))
		snprintf(err, errlen, "speculative decoding refused: %s", why);
	else
		return true;
	return false;
}

bool halo_generate(halo_model *m, halo_session *s, const halo_tokenizer *tok, const int32_t *prompt,
		   int64_t n_prompt, const halo_gen_options *o, halo_gen_text_fn fn, void *user,
		   halo_gen_result *res, char *err, size_t errlen)
{
	*res = (halo_gen_result){.finish = HALO_FINISH_LENGTH};
	if (!check_request(m, s, n_prompt, o, err, errlen))
		return false;
	gen_run g = {.o = o, .fn = fn, .user = user, .res = res, .err = err, .errlen = errlen};
	g.ts = halo_text_stream_create(tok, o->skip_special, o->stop, o->n_stop, err, errlen);
	float *row = malloc((size_t)halo_model_vocab(m) * sizeof(float));
	bool ok = g.ts && row;
	if (g.ts && !row)
		snprintf(err, errlen, "out of memory");
	double t0 = now_s();
	ok = ok && halo_session_prefill(s, prompt, n_prompt, NULL, row, err, errlen);
	double t1 = now_s();
	res->prompt_tokens = ok ? n_prompt : 0;
	res->prefill_s = t1 - t0;
	/* n emitted tokens feed n - 1: the context's end bounds them too */
	int64_t n_gen = halo_model_n_ctx(m) - halo_session_pos(s) + 1;
	if (n_gen > o->max_tokens)
		n_gen = o->max_tokens;
	if (ok)
		ok = o->spec_mtp ? decode_spec(m, s, &g, prompt, n_prompt, row, n_gen, err, errlen)
				 : decode_plain(m, s, &g, row, n_gen, err, errlen);
	ok = ok && flush(&g);
	res->decode_s = now_s() - t1;
	halo_text_stream_free(g.ts);
	free(row);
	return ok;
}
