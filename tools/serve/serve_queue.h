/* halo serve's scheduler: a bounded FIFO of jobs (serve_job.h) and
 * `parallel` worker threads, each with its own session of the one model,
 * that take jobs in arrival order and generate (runtime/generate.h).
 *
 * Concurrency: sessions of one model run on their own threads at the same
 * time (runtime/halo.h says what a model shares between them). A worker
 * starts every job from an empty session (no prefix reuse across requests).
 * Ownership: the queue owns its sessions and threads; the model, tokenizer
 * and eos ids in the config are borrowed and must outlive the queue. A job
 * pushed is referenced by the queue until its worker is done with it. */
#ifndef HALO_TOOLS_SERVE_QUEUE_H
#define HALO_TOOLS_SERVE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/halo.h"
#include "runtime/tokenizer.h"
#include "tools/serve/serve_job.h"

typedef struct {
	halo_model *model;
	const halo_tokenizer *tok; /* decode only, which threads may share */
	const int32_t *eos_ids;
	size_t n_eos;
	bool spec_mtp;
	int draft_n;
	int parallel;  /* worker threads and sessions, >= 1 */
	int capacity;  /* jobs waiting at most (running ones not counted), >= 0 */
} serve_queue_config;

typedef struct serve_queue serve_queue;

/* Creates the sessions and starts the workers; NULL with a message when a
 * session cannot be made. */
serve_queue *serve_queue_create(const serve_queue_config *c, char *err, size_t errlen);
/* Appends j (the queue takes a reference of its own); false with a 503
 * error when the queue is full or stopping. */
bool serve_queue_push(serve_queue *q, serve_job *j, serve_error *e);
/* Stops: waiting jobs end with a 503, running ones are cancelled (they end
 * at their next token), and the workers are joined. */
void serve_queue_stop(serve_queue *q);
/* Stops if not stopped, then frees the sessions. NULL is fine. */
void serve_queue_free(serve_queue *q);

#endif
