/* Greedy draft chains (halo_session_chain_at) against the step-by-step
 * drafts they replace, on models/<FAMILY>.yaml with its tiny fixture (an MTP
 * head) and the backend argv[1] (validation on for Vulkan, whose chain runs
 * every step in one submission with the tokens kept on the device).
 *
 * After a prompt and the head's catch-up, K = 8 chained steps of
 * `draft_greedy` from the first draft must give exactly the tokens that K
 * steps of `draft` give when each is fed the host argmax of the previous
 * step's logits: the same kernels compute the same logits (the entries run
 * copies of one graph at T = 1), and both argmaxes take the first index of
 * the largest value. Also: a single `draft_greedy` step's token through
 * halo_session_tokens, and the refusals (a chain of a logits entry, a
 * logits buffer for a tokens entry, a chain longer than HALO_CHAIN_MAX or
 * past the context).
 *
 * usage: test_draft_chain BACKEND FAMILY */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/mtp_draft.h"
#include "runtime/sample.h"
#include "tests/runtime/model_check.h"

enum { P = 24, K = 8 };

/* The head over positions [0, P - 1): pairs (hidden p, prompt[p + 1]). */
static void catch_up(halo_model *m, halo_session *s, const int32_t *prompt)
{
	char err[2048];
	halo_entry_info ext, cat;
	MC_CHECK(halo_model_entry(m, HALO_MTP_EXTEND_ENTRY, &ext), "no %s entry", HALO_MTP_EXTEND_ENTRY);
	bool has_cat = halo_model_entry(m, HALO_MTP_CATCHUP_ENTRY, &cat);
	const char *name = has_cat ? HALO_MTP_CATCHUP_ENTRY : HALO_MTP_EXTEND_ENTRY;
	int64_t most = has_cat ? cat.t_max : ext.t_max;
	for (int64_t done = 0; done < P - 1;) {
		int64_t n = P - 1 - done < most ? P - 1 - done : most;
		MC_CHECK(halo_session_step_at(s, name, done, prompt + done + 1, n, NULL, err, sizeof(err)), "%s", err);
		done += n;
	}
}

static void check_refusals(halo_session *s, int32_t first)
{
	char err[2048] = "";
	int32_t out[HALO_CHAIN_MAX + 1];
	float logits[1];
	MC_CHECK(!halo_session_chain_at(s, HALO_MTP_STEP_ENTRY, P - 1, first, 2, out, err, sizeof(err)) &&
			 strstr(err, "returns logits"),
		 "a chain of a logits entry: %s", err);
	MC_CHECK(!halo_session_step_at(s, HALO_MTP_GREEDY_ENTRY, P - 1, &first, 1, logits, err, sizeof(err)) &&
			 strstr(err, "returns tokens"),
		 "a logits buffer for a tokens entry: %s", err);
	MC_CHECK(!halo_session_chain_at(s, HALO_MTP_GREEDY_ENTRY, P - 1, first, HALO_CHAIN_MAX + 1, out, err,
					sizeof(err)) && strstr(err, "steps"),
		 "a chain of %d steps: %s", HALO_CHAIN_MAX + 1, err);
	MC_CHECK(!halo_session_chain_at(s, HALO_MTP_GREEDY_ENTRY, 0, first, 0, out, err, sizeof(err)),
		 "a chain of 0 steps was accepted");
}

int main(int argc, char **argv)
{
	if (argc != 3 || !halo_backend_check(argv[1], NULL, 0)) {
		fprintf(stderr, "usage: test_draft_chain BACKEND FAMILY\n");
		return 2;
	}
	const char *backend = argv[1];
	char model[256], fixture[256], path[300], bundle[64], err[2048];
	snprintf(model, sizeof(model), "models/%s.yaml", argv[2]);
	snprintf(fixture, sizeof(fixture), "tests/fixtures/%s_tiny", argv[2]);
	snprintf(bundle, sizeof(bundle), "draft_chain_%d.halo", (int)getpid());
	snprintf(path, sizeof(path), "%s/prompt_tokens.i32", fixture);
	size_t bytes;
	int32_t *prompt = mc_read_file(mc_source_path(path), &bytes);
	MC_CHECK(bytes >= P * sizeof(int32_t), "%s holds fewer than %d tokens", path, P);
	mc_compile_for(model, fixture, bundle, false, backend);
	halo_model *m = mc_open(bundle, backend);
	halo_session *s = mc_session(m);
	int64_t vocab = halo_model_vocab(m);

	MC_CHECK(halo_session_prefill(s, prompt, P, NULL, NULL, err, sizeof(err)), "%s", err);
	catch_up(m, s, prompt);
	int32_t first = halo_argmax(halo_session_logits(s, NULL), vocab);

	int32_t stepped[K], chained[K], tok = first;
	for (int i = 0; i < K; i++) {
		MC_CHECK(halo_session_step_at(s, HALO_MTP_STEP_ENTRY, P - 1 + i, &tok, 1, NULL, err, sizeof(err)), "%s",
			 err);
		tok = stepped[i] = halo_argmax(halo_session_logits(s, NULL), vocab);
	}
	MC_CHECK(halo_session_chain_at(s, HALO_MTP_GREEDY_ENTRY, P - 1, first, K, chained, err, sizeof(err)), "%s",
		 err);
	for (int i = 0; i < K; i++)
		MC_CHECK(chained[i] == stepped[i], "%s %s: chained draft %d is %d, step by step %d", argv[2], backend,
			 i, chained[i], stepped[i]);

	int64_t rows = -1;
	MC_CHECK(halo_session_step_at(s, HALO_MTP_GREEDY_ENTRY, P - 1, &first, 1, NULL, err, sizeof(err)), "%s", err);
	const int32_t *t = halo_session_tokens(s, &rows);
	MC_CHECK(t && rows == 1 && t[0] == stepped[0], "one draft_greedy step: %d row(s), token %d, want %d",
		 (int)rows, t ? t[0] : -1, stepped[0]);
	MC_CHECK(!halo_session_logits(s, NULL), "logits after a step that returned tokens");
	check_refusals(s, first);
	MC_CHECK(halo_model_validation_messages(m) == 0, "validation messages");

	halo_session_free(s);
	halo_model_close(m);
	remove(bundle);
	free(prompt);
	if (mc_failures)
		return 1;
	printf("draft chain %s %s: ok (%d drafts)\n", backend, argv[2], K);
	return 0;
}
