#include "tools/serve/serve_queue.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	serve_queue *q;
	halo_session *session;
	serve_job *running; /* under q->mu */
	pthread_t thread;
	bool started;
} worker;

struct serve_queue {
	serve_queue_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a job was pushed, or the queue is stopping */
	serve_job **ring;  /* capacity + parallel slots: the jobs idle workers will take fit too */
	int ring_len, head, count;
	int idle; /* workers waiting for a job */
	bool stopping;
	worker *workers;
};

/* Ends a job that produced nothing to send: a stream carries the error as
 * its last event (its 200 is on the wire already), a whole reply sends it
 * with its status. */
static void fail_job(serve_job *j, const serve_error *e)
{
	size_t len;
	char *ev = j->req.stream ? serve_error_sse(e, &len) : NULL;
	if (ev) {
		serve_job_append(j, ev, len);
		serve_job_append(j, SERVE_SSE_DONE, strlen(SERVE_SSE_DONE));
	}
	free(ev);
	serve_job_finish(j, e);
}

/* A cancelled job's end: its client has left (nobody reads this) or the
 * server is stopping (the client reads it). */
static const serve_error *cancelled_error(serve_error *e)
{
	serve_fail(e, 503, "shutting_down", NULL, "the request was cancelled: the server is shutting down");
	return e;
}

static bool append_chunk(serve_job *j, const serve_chunk *c)
{
	size_t len;
	char *ev = serve_chunk_sse(&j->head, c, &len);
	bool ok = ev && serve_job_append(j, ev, len);
	free(ev);
	return ok;
}

/* Each accepted piece of text: a stream's chunk or the reply's text. The
 * generation goes on while the client is there and memory lasts. */
static bool on_text(void *user, const char *text, size_t len)
{
	serve_job *j = user;
	if (serve_job_is_cancelled(j))
		return false;
	if (len == 0)
		return true;
	if (!j->req.stream)
		return serve_job_append(j, text, len);
	serve_chunk c = {.kind = SERVE_CHUNK_TEXT, .text = text, .text_len = len, .usage_field = j->req.include_usage};
	return append_chunk(j, &c);
}

/* A stream's last events: the finish reason, the usage when asked for, [DONE]. */
static bool end_stream(serve_job *j, const char *finish)
{
	serve_usage u = {j->res.prompt_tokens, j->res.completion_tokens};
	serve_chunk fin = {.kind = SERVE_CHUNK_FINISH, .finish = finish, .usage_field = j->req.include_usage};
	serve_chunk use = {.kind = SERVE_CHUNK_USAGE, .usage = &u};
	return append_chunk(j, &fin) && (!j->req.include_usage || append_chunk(j, &use)) &&
	       serve_job_append(j, SERVE_SSE_DONE, strlen(SERVE_SSE_DONE));
}

/* One line on stderr per job the workers take: what a client got, and
 * whether a client that left had its generation cancelled. */
static void log_job(const serve_job *j, const char *outcome)
{
	fprintf(stderr, "halo serve: %s: prompt %lld tokens, completion %lld, %s, %.3f s\n", j->head.id,
		(long long)j->res.prompt_tokens, (long long)j->res.completion_tokens, outcome,
		j->res.prefill_s + j->res.decode_s);
}

/* Runs j; returns the outcome for the log. */
static const char *run_job(worker *w, serve_job *j)
{
	const serve_queue_config *c = &w->q->cfg;
	serve_error e;
	char err[1024];
	if (serve_job_is_cancelled(j)) { /* its client left while it waited */
		fail_job(j, cancelled_error(&e));
		return "cancelled while waiting";
	}
	if (!halo_session_reset(w->session, err, sizeof err)) {
		serve_fail(&e, 500, NULL, NULL, "cannot reset the session: %s", err);
		fail_job(j, &e);
		return "failed";
	}
	halo_gen_options o = {
		.sampling = j->req.sampling, .seed = j->seed, .max_tokens = j->max_tokens,
		.eos_ids = c->eos_ids, .n_eos = c->n_eos, .stop = j->req.stop, .n_stop = j->req.n_stop,
		.skip_special = true, /* as OpenAI's and vLLM's replies */
		.spec_mtp = c->spec_mtp, .draft_n = c->draft_n,
	};
	serve_chunk role = {.kind = SERVE_CHUNK_ROLE, .usage_field = j->req.include_usage};
	bool ok = !j->req.stream || j->req.kind != SERVE_CHAT || append_chunk(j, &role);
	if (ok && !halo_generate(c->model, w->session, c->tok, j->prompt, j->n_prompt, &o, on_text, j, &j->res, err,
				 sizeof err)) {
		serve_fail(&e, 500, NULL, NULL, "generation failed: %s", err);
		fail_job(j, &e);
		return "failed";
	}
	if (j->res.finish == HALO_FINISH_CANCELLED && serve_job_is_cancelled(j)) {
		fail_job(j, cancelled_error(&e));
		return "cancelled";
	}
	/* cancelled without a cancel: the output could not be stored */
	if (!ok || j->res.finish == HALO_FINISH_CANCELLED ||
	    (j->req.stream && !end_stream(j, halo_finish_reason_name(j->res.finish)))) {
		serve_fail(&e, 500, NULL, NULL, "out of memory for the reply");
		fail_job(j, &e);
		return "failed";
	}
	serve_job_finish(j, NULL);
	return halo_finish_reason_name(j->res.finish);
}

static serve_job *next_job(serve_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->idle++;
	while (!q->stopping && q->count == 0)
		pthread_cond_wait(&q->cv, &q->mu);
	q->idle--;
	serve_job *j = NULL;
	if (!q->stopping) {
		j = q->ring[q->head];
		q->head = (q->head + 1) % q->ring_len;
		q->count--;
	}
	pthread_mutex_unlock(&q->mu);
	return j;
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	serve_job *j;
	while ((j = next_job(w->q))) {
		pthread_mutex_lock(&w->q->mu);
		w->running = j;
		pthread_mutex_unlock(&w->q->mu);
		log_job(j, run_job(w, j));
		pthread_mutex_lock(&w->q->mu);
		w->running = NULL;
		pthread_mutex_unlock(&w->q->mu);
		serve_job_release(j);
	}
	return NULL;
}

serve_queue *serve_queue_create(const serve_queue_config *c, char *err, size_t errlen)
{
	serve_queue *q = calloc(1, sizeof *q);
	if (!q) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	q->cfg = *c;
	q->ring_len = c->capacity + c->parallel;
	q->workers = calloc((size_t)c->parallel, sizeof *q->workers);
	q->ring = calloc((size_t)q->ring_len, sizeof *q->ring);
	if (!q->workers || !q->ring) {
		snprintf(err, errlen, "out of memory");
		serve_queue_free(q);
		return NULL;
	}
	for (int i = 0; i < c->parallel; i++) {
		worker *w = &q->workers[i];
		w->q = q;
		if (!(w->session = halo_session_create(c->model, err, errlen))) {
			serve_queue_free(q);
			return NULL;
		}
	}
	for (int i = 0; i < c->parallel; i++) {
		worker *w = &q->workers[i];
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			snprintf(err, errlen, "cannot start worker thread %d", i);
			serve_queue_free(q);
			return NULL;
		}
		w->started = true;
	}
	return q;
}

bool serve_queue_push(serve_queue *q, serve_job *j, serve_error *e)
{
	pthread_mutex_lock(&q->mu);
	bool ok = !q->stopping && q->count < q->cfg.capacity + q->idle;
	if (ok) {
		serve_job_retain(j);
		q->ring[(q->head + q->count) % q->ring_len] = j;
		q->count++;
		pthread_cond_signal(&q->cv);
	} else if (q->stopping) {
		serve_fail(e, 503, "shutting_down", NULL, "the server is shutting down");
	} else {
		serve_fail(e, 503, "queue_full", NULL,
			   "the server is busy: %d request(s) running and %d waiting, the most it queues (--queue); "
			   "retry later",
			   q->cfg.parallel, q->count);
	}
	pthread_mutex_unlock(&q->mu);
	return ok;
}

void serve_queue_stop(serve_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->stopping = true;
	pthread_cond_broadcast(&q->cv);
	for (int i = 0; i < q->cfg.parallel; i++)
		if (q->workers[i].running)
			serve_job_cancel(q->workers[i].running);
	serve_error e;
	cancelled_error(&e);
	for (; q->count > 0; q->count--) {
		serve_job *j = q->ring[q->head];
		q->head = (q->head + 1) % q->ring_len;
		fail_job(j, &e);
		serve_job_release(j);
	}
	pthread_mutex_unlock(&q->mu);
	for (int i = 0; i < q->cfg.parallel; i++)
		if (q->workers[i].started) {
			pthread_join(q->workers[i].thread, NULL);
			q->workers[i].started = false;
		}
}

void serve_queue_free(serve_queue *q)
{
	if (!q)
		return;
	if (q->workers) {
		serve_queue_stop(q);
		for (int i = 0; i < q->cfg.parallel; i++)
			halo_session_free(q->workers[i].session);
	}
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q->workers);
	free(q->ring);
	free(q);
}
