/* libFuzzer target for halo serve's request parser
 * (tools/serve/serve_request.h). An input is a body for both routes: each
 * parse either gives a request or refuses with a 400 that has a message,
 * and a request's parts hold what the header promises (stop strings
 * non-empty without NUL, a prompt present, a chat context with messages). */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "tools/serve/serve_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const serve_request *r)
{
	if (r->kind == SERVE_COMPLETION && !r->prompt && !r->n_prompt_ids)
		abort();
	if (r->kind == SERVE_CHAT && !json_object_object_get_ex(r->chat_context, "messages", NULL))
		abort();
	for (size_t i = 0; i < r->n_stop; i++)
		if (!r->stop[i][0])
			abort();
	/* the template context must serialize (the renderer walks it) */
	if (r->chat_context && !json_object_to_json_string(r->chat_context))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int k = SERVE_COMPLETION; k <= SERVE_CHAT; k++) {
		serve_request r;
		serve_error e = {0};
		if (serve_request_parse((serve_kind)k, (const char *)data, size, &r, &e)) {
			check(&r);
			serve_request_free(&r);
		} else if ((e.status != 400 && e.status != 413) || !e.message[0] || r.body) {
			abort();
		}
	}
	return 0;
}
