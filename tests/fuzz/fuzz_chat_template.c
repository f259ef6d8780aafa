/* libFuzzer target for chat templates (runtime/chat_template.h). An input
 * is a template: it must be refused with "fuzz:LINE: ..." or parse; a
 * parsed template renders over a fixed small conversation (with tools, a
 * tool call and reasoning) to NUL-terminated text, or fails with a message
 * naming the template. The interpreter's own limits bound time and memory;
 * the step and memory limits are what keep a hostile loop short here. */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat_template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char context_json[] =
	"{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
	" {\"role\": \"user\", \"content\": \"Hi \\u00e9 \\ud83d\\ude42\"},"
	" {\"role\": \"assistant\", \"content\": \"<think>\\nhm\\n</think>\\n\\nHello\", \"reasoning_content\": null,"
	"  \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"a\": [1, 2.5]}}}]},"
	" {\"role\": \"tool\", \"content\": \"42\"}, {\"role\": \"user\", \"content\": \"\"}],"
	" \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}],"
	" \"documents\": null, \"add_generation_prompt\": true, \"enable_thinking\": false,"
	" \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_object *context;
	if (!context)
		context = json_tokener_parse(context_json);
	char err[512] = "";
	halo_chat_template *t = halo_chat_template_parse((const char *)data, size, "fuzz", err, sizeof err);
	if (!t) {
		if (strncmp(err, "fuzz:", 5) != 0)
			abort();
		return 0;
	}
	char *out;
	size_t len;
	if (halo_chat_template_render(t, context, &out, &len, err, sizeof err)) {
		if (out[len] != '\0')
			abort();
		free(out);
	} else if (strncmp(err, "fuzz:", 5) != 0) {
		abort();
	}
	halo_chat_template_free(t);
	return 0;
}
