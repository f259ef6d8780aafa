/* halo serve's response bodies (tools/serve/serve_response.h) byte for
 * byte: the OpenAI shapes clients parse, escaping included. */
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tools/serve/serve_response.h"

/* len is read through a pointer: the body's call fills it after the
 * arguments are evaluated. */
static void expect(char *got, const size_t *len, const char *want, const char *what)
{
	CHECK(got && *len == strlen(got) && strcmp(got, want) == 0, "%s:\n  got  %s\n  want %s", what,
	      got ? got : "(null)", want);
	free(got);
}

int main(void)
{
	size_t len = 0;
	serve_error e;
	serve_fail(&e, 400, "invalid_type", "max_tokens", "'max_tokens' must be %s", "an integer");
	expect(serve_error_json(&e, &len), &len,
	       "{\"error\":{\"message\":\"'max_tokens' must be an integer\",\"type\":\"invalid_request_error\","
	       "\"param\":\"max_tokens\",\"code\":\"invalid_type\"}}",
	       "400 error");
	serve_fail(&e, 503, "queue_full", NULL, "the queue is full");
	expect(serve_error_sse(&e, &len), &len,
	       "data: {\"error\":{\"message\":\"the queue is full\",\"type\":\"server_error\",\"param\":null,"
	       "\"code\":\"queue_full\"}}\n\n",
	       "503 error event");
	expect(serve_models_json("q/3", 7, 2048, &len), &len,
	       "{\"object\":\"list\",\"data\":[{\"id\":\"q/3\",\"object\":\"model\",\"created\":7,\"owned_by\":\"halo\","
	       "\"max_model_len\":2048}]}",
	       "models");

	serve_reply_head h = {.kind = SERVE_CHAT, .created = 9, .model = "m"};
	serve_reply_id(&h, 0xab);
	CHECK(strcmp(h.id, "chatcmpl-00000000000000ab") == 0, "id %s", h.id);
	serve_usage u = {.prompt_tokens = 3, .completion_tokens = 2};
	expect(serve_reply_json(&h, "a\"\n\0b", 5, "length", &u, &len), &len,
	       "{\"id\":\"chatcmpl-00000000000000ab\",\"object\":\"chat.completion\",\"created\":9,\"model\":\"m\","
	       "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"a\\\"\\n\\u0000b\"},"
	       "\"logprobs\":null,\"finish_reason\":\"length\"}],"
	       "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}",
	       "chat reply");
	const char *head = "data: {\"id\":\"chatcmpl-00000000000000ab\",\"object\":\"chat.completion.chunk\","
			   "\"created\":9,\"model\":\"m\",\"choices\":[";
	char want[512];
	snprintf(want, sizeof want, "%s{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
		 "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head);
	expect(serve_chunk_sse(&h, &(serve_chunk){.kind = SERVE_CHUNK_ROLE, .usage_field = true}, &len), &len, want,
	       "role chunk");
	snprintf(want, sizeof want, "%s{\"index\":0,\"delta\":{\"content\":\"a/b\"},\"logprobs\":null,"
		 "\"finish_reason\":null}]}\n\n", head);
	expect(serve_chunk_sse(&h, &(serve_chunk){.kind = SERVE_CHUNK_TEXT, .text = "a/b", .text_len = 3}, &len), &len,
	       want, "text chunk");
	snprintf(want, sizeof want, "%s{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n",
		 head);
	expect(serve_chunk_sse(&h, &(serve_chunk){.kind = SERVE_CHUNK_FINISH, .finish = "stop"}, &len), &len, want,
	       "finish chunk");
	snprintf(want, sizeof want, "%s],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\n",
		 head);
	expect(serve_chunk_sse(&h, &(serve_chunk){.kind = SERVE_CHUNK_USAGE, .usage = &u}, &len), &len, want,
	       "usage chunk");

	h.kind = SERVE_COMPLETION;
	serve_reply_id(&h, 1);
	expect(serve_reply_json(&h, "xy", 2, "stop", &u, &len), &len,
	       "{\"id\":\"cmpl-0000000000000001\",\"object\":\"text_completion\",\"created\":9,\"model\":\"m\","
	       "\"choices\":[{\"index\":0,\"text\":\"xy\",\"logprobs\":null,\"finish_reason\":\"stop\"}],"
	       "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}",
	       "completion reply");
	expect(serve_chunk_sse(&h, &(serve_chunk){.kind = SERVE_CHUNK_TEXT, .text = "z", .text_len = 1}, &len), &len,
	       "data: {\"id\":\"cmpl-0000000000000001\",\"object\":\"text_completion\",\"created\":9,\"model\":\"m\","
	       "\"choices\":[{\"index\":0,\"text\":\"z\",\"logprobs\":null,\"finish_reason\":null}]}\n\n",
	       "completion chunk");
	if (check_failures)
		return 1;
	puts("serve response: ok");
	return 0;
}
