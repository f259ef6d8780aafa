/* One request on its way through halo serve: the prompt to generate from,
 * the output the worker writes and the connection reads, and the two flags
 * that tie them together (done, cancelled).
 *
 * Threads: the connection's thread creates the job, hands a reference to
 * the queue (serve_queue.h) and waits on it; the worker that runs it writes
 * the output. Everything below the mutex is read and written under it.
 * Ownership: reference counted; the last serve_job_release frees the job,
 * its request and its prompt. */
#ifndef HALO_TOOLS_SERVE_JOB_H
#define HALO_TOOLS_SERVE_JOB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/generate.h"
#include "tools/serve/serve_error.h"
#include "tools/serve/serve_request.h"
#include "tools/serve/serve_response.h"

typedef struct serve_job {
	serve_request req;
	int32_t *prompt; /* malloc'd */
	int64_t n_prompt;
	int64_t max_tokens; /* the request's, or the server's default */
	uint64_t seed;      /* the request's, or one the server drew */
	serve_reply_head head;

	pthread_mutex_t mu;
	pthread_cond_t cv; /* signalled when output grows, or done or cancelled changes */
	int refs;
	/* Output: a stream's SSE events, else the text. out_sent: what the
	 * connection has taken of a stream. */
	char *out;
	size_t out_len, out_cap, out_sent;
	bool done;      /* the worker has finished (or the queue dropped the job) */
	bool cancelled; /* the client went away or the server is stopping */
	bool failed;    /* err says why; the result is not to be sent */
	serve_error err;
	halo_gen_result res;
} serve_job;

/* Takes the request and prompt (they belong to the job from now on, also
 * on failure); one reference, the caller's. NULL when memory runs out. */
serve_job *serve_job_create(serve_request *req, int32_t *prompt, int64_t n_prompt, int64_t max_tokens,
			    uint64_t seed, const serve_reply_head *head);
void serve_job_retain(serve_job *j);
void serve_job_release(serve_job *j); /* NULL is fine */

/* Worker side. Appends bytes to the output (false when memory runs out). */
bool serve_job_append(serve_job *j, const char *bytes, size_t len);
/* Marks the job done, failed with e when e is not NULL. */
void serve_job_finish(serve_job *j, const serve_error *e);
bool serve_job_is_cancelled(serve_job *j);

/* Connection side. Asks the worker to stop (its next token). */
void serve_job_cancel(serve_job *j);
/* Waits up to timeout_ms for the job to be done; true when it is. */
bool serve_job_wait_done(serve_job *j, int timeout_ms);
/* Copies up to max unsent stream bytes into buf, waiting up to timeout_ms
 * for some. Returns the count; *end is set when the job is done and every
 * byte has been taken. */
size_t serve_job_take(serve_job *j, char *buf, size_t max, int timeout_ms, bool *end);

#endif
