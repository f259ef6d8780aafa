#include "tools/serve/serve_job.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

serve_job *serve_job_create(serve_request *req, int32_t *prompt, int64_t n_prompt, int64_t max_tokens,
			    uint64_t seed, const serve_reply_head *head)
{
	serve_job *j = calloc(1, sizeof *j);
	if (!j) {
		serve_request_free(req);
		free(prompt);
		return NULL;
	}
	j->req = *req;
	*req = (serve_request){0};
	j->prompt = prompt;
	j->n_prompt = n_prompt;
	j->max_tokens = max_tokens;
	j->seed = seed;
	j->head = *head;
	j->refs = 1;
	pthread_mutex_init(&j->mu, NULL);
	/* timed waits measure on the monotonic clock: wall-clock steps must
	 * not stretch them */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cv, &ca);
	pthread_condattr_destroy(&ca);
	return j;
}

void serve_job_retain(serve_job *j)
{
	pthread_mutex_lock(&j->mu);
	j->refs++;
	pthread_mutex_unlock(&j->mu);
}

void serve_job_release(serve_job *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->mu);
	bool last = --j->refs == 0;
	pthread_mutex_unlock(&j->mu);
	if (!last)
		return;
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	serve_request_free(&j->req);
	free(j->prompt);
	free(j->out);
	free(j);
}

bool serve_job_append(serve_job *j, const char *bytes, size_t len)
{
	pthread_mutex_lock(&j->mu);
	bool ok = true;
	if (j->out_len + len + 1 > j->out_cap) {
		size_t cap = j->out_cap ? j->out_cap : 256;
		while (cap < j->out_len + len + 1)
			cap *= 2;
		char *p = realloc(j->out, cap);
		ok = p != NULL;
		if (ok) {
			j->out = p;
			j->out_cap = cap;
		}
	}
	if (ok) {
		memcpy(j->out + j->out_len, bytes, len);
		j->out_len += len;
		j->out[j->out_len] = '\0';
		pthread_cond_broadcast(&j->cv);
	}
	pthread_mutex_unlock(&j->mu);
	return ok;
}

void serve_job_finish(serve_job *j, const serve_error *e)
{
	pthread_mutex_lock(&j->mu);
	j->done = true;
	j->failed = e != NULL;
	if (e)
		j->err = *e;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

bool serve_job_is_cancelled(serve_job *j)
{
	pthread_mutex_lock(&j->mu);
	bool c = j->cancelled;
	pthread_mutex_unlock(&j->mu);
	return c;
}

void serve_job_cancel(serve_job *j)
{
	pthread_mutex_lock(&j->mu);
	j->cancelled = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

/* Waits on the job's condition until woken or timeout_ms passes; called
 * with the mutex held. */
static void wait_ms(serve_job *j, int timeout_ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&j->cv, &j->mu, &ts);
}

bool serve_job_wait_done(serve_job *j, int timeout_ms)
{
	pthread_mutex_lock(&j->mu);
	if (!j->done)
		wait_ms(j, timeout_ms);
	bool done = j->done;
	pthread_mutex_unlock(&j->mu);
	return done;
}

size_t serve_job_take(serve_job *j, char *buf, size_t max, int timeout_ms, bool *end)
{
	pthread_mutex_lock(&j->mu);
	if (j->out_sent == j->out_len && !j->done)
		wait_ms(j, timeout_ms);
	size_t n = j->out_len - j->out_sent;
	if (n > max)
		n = max;
	if (n)
		memcpy(buf, j->out + j->out_sent, n);
	j->out_sent += n;
	*end = j->done && j->out_sent == j->out_len;
	pthread_mutex_unlock(&j->mu);
	return n;
}
