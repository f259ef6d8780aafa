/* halo serve's request parser (tools/serve/serve_request.h): bodies that
 * must be refused give the status, param and code named here; bodies that
 * parse give the typed values named here. */
#include <json-c/json.h>
#include <string.h>

#include "tests/check.h"
#include "tools/serve/serve_request.h"

typedef struct {
	serve_kind kind;
	const char *body;
	int status;        /* 0: must parse */
	const char *param; /* of the error ("" for none) */
	const char *code;  /* of the error (NULL for none) */
} refusal;

static const refusal refusals[] = {
	{SERVE_CHAT, "", 400, "", "invalid_json"},
	{SERVE_CHAT, "{\"messages\": [", 400, "", "invalid_json"},
	{SERVE_CHAT, "{\"messages\": []} x", 400, "", "invalid_json"},
	{SERVE_CHAT, "{\"messages\": 'x'}", 400, "", "invalid_json"},
	{SERVE_CHAT, "{\"messages\": [], }", 400, "", "invalid_json"},
	{SERVE_CHAT, "[1, 2]", 400, "", "invalid_json"},
	{SERVE_CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}", 400, "", "invalid_json"},
	{SERVE_CHAT, "{}", 400, "messages", "missing_field"},
	{SERVE_CHAT, "{\"messages\": null}", 400, "messages", "missing_field"},
	{SERVE_CHAT, "{\"messages\": \"hi\"}", 400, "messages", "invalid_type"},
	{SERVE_CHAT, "{\"messages\": []}", 400, "messages", "invalid_value"},
	{SERVE_CHAT, "{\"messages\": [1]}", 400, "messages", "invalid_value"},
	{SERVE_CHAT, "{\"messages\": [{\"content\": \"hi\"}]}", 400, "messages", "invalid_value"},
	{SERVE_CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", 400, "messages", "invalid_value"},
	{SERVE_CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}", 400,
	 "messages", "invalid_value"},
	{SERVE_CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": null}]}]}", 400, "messages",
	 "invalid_value"},
	{SERVE_COMPLETION, "{}", 400, "prompt", "missing_field"},
	{SERVE_COMPLETION, "{\"prompt\": \"\"}", 400, "prompt", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": []}", 400, "prompt", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": [1, -2]}", 400, "prompt", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": [1, 2.5]}", 400, "prompt", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": [1, 4294967296]}", 400, "prompt", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": [\"a\", \"b\"]}", 400, "prompt", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": {}}", 400, "prompt", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"max_tokens\": \"5\"}", 400, "max_tokens", "invalid_type"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"max_tokens\": 5.0}", 400, "max_tokens", "invalid_type"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"max_tokens\": 0}", 400, "max_tokens", "invalid_value"},
	{SERVE_CHAT, "{\"messages\": [{\"role\": \"user\"}], \"max_completion_tokens\": -1}", 400,
	 "max_completion_tokens", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"temperature\": 2.5}", 400, "temperature", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"temperature\": true}", 400, "temperature", "invalid_type"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"top_p\": 0}", 400, "top_p", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"top_k\": -2}", 400, "top_k", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"seed\": 1.5}", 400, "seed", "invalid_type"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"stop\": 3}", 400, "stop", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"stop\": [\"x\", 3]}", 400, "stop", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"stop\": \"\"}", 400, "stop", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"stop\": \"a\\u0000b\"}", 400, "stop", "invalid_value"},
	{SERVE_COMPLETION,
	 "{\"prompt\": \"a\", \"stop\": [\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\",\"10\",\"11\",\"12\","
	 "\"13\",\"14\",\"15\",\"16\",\"17\"]}",
	 400, "stop", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"stream\": \"yes\"}", 400, "stream", "invalid_type"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"stream_options\": {\"include_usage\": 1}}", 400, "stream_options",
	 "invalid_type"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"n\": 2}", 400, "n", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"logprobs\": 1}", 400, "logprobs", "invalid_value"},
	{SERVE_CHAT, "{\"messages\": [{\"role\": \"user\"}], \"logprobs\": true}", 400, "logprobs", "invalid_value"},
	{SERVE_CHAT, "{\"messages\": [{\"role\": \"user\"}], \"logprobs\": 1}", 400, "logprobs", "invalid_type"},
	{SERVE_CHAT, "{\"messages\": [{\"role\": \"user\"}], \"top_logprobs\": 2}", 400, "top_logprobs",
	 "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"echo\": true}", 400, "echo", "invalid_value"},
	{SERVE_COMPLETION, "{\"prompt\": \"a\", \"model\": 7}", 400, "model", "invalid_type"},
	{SERVE_CHAT, "{\"messages\": [{\"role\": \"user\"}], \"chat_template_kwargs\": []}", 400,
	 "chat_template_kwargs", "invalid_type"},
};

static void check_refusals(void)
{
	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		const refusal *t = &refusals[i];
		serve_request r;
		serve_error e = {0};
		bool ok = serve_request_parse(t->kind, t->body, strlen(t->body), &r, &e);
		CHECK(!ok, "#%zu %s: parsed", i, t->body);
		if (ok) {
			serve_request_free(&r);
			continue;
		}
		CHECK(e.status == t->status, "#%zu %s: status %d", i, t->body, e.status);
		CHECK(strcmp(e.type, "invalid_request_error") == 0, "#%zu: type %s", i, e.type);
		CHECK(strcmp(e.param, t->param) == 0, "#%zu %s: param '%s', want '%s' (%s)", i, t->body, e.param,
		      t->param, e.message);
		CHECK(e.code && strcmp(e.code, t->code) == 0, "#%zu %s: code %s, want %s", i, t->body,
		      e.code ? e.code : "(null)", t->code);
		CHECK(e.message[0], "#%zu: no message", i);
		CHECK(!r.body && !r.chat_context && !r.prompt_ids, "#%zu: a refused request holds memory", i);
	}
}

static bool parse(serve_kind kind, const char *body, serve_request *r)
{
	serve_error e = {0};
	bool ok = serve_request_parse(kind, body, strlen(body), r, &e);
	CHECK(ok, "%s: refused: %s", body, e.message);
	return ok;
}

/* Defaults, every field read, unknown and null fields ignored. */
static void check_completion_fields(void)
{
	serve_request r;
	if (parse(SERVE_COMPLETION, "{\"prompt\": \"hello\"}", &r)) {
		CHECK(r.prompt_len == 5 && memcmp(r.prompt, "hello", 5) == 0, "prompt");
		CHECK(r.sampling.temperature == 1.0f && r.sampling.top_p == 1.0f && r.sampling.top_k == 0,
		      "OpenAI's sampling defaults");
		CHECK(!r.max_tokens && !r.has_seed && !r.stream && !r.n_stop && !r.model, "defaults");
		serve_request_free(&r);
	}
	const char *full = "{\"model\": \"m\", \"prompt\": [[5, 6, 7]], \"max_tokens\": 9, \"temperature\": 0,"
			   " \"top_p\": 0.5, \"top_k\": 40, \"seed\": -1, \"stop\": [\"a\", \"bc\"], \"stream\": true,"
			   " \"stream_options\": {\"include_usage\": true}, \"n\": 1, \"logprobs\": null,"
			   " \"echo\": false, \"frequency_penalty\": 0.1, \"user\": {\"x\": [1]}, \"suffix\": null}\n";
	if (parse(SERVE_COMPLETION, full, &r)) {
		CHECK(!r.prompt && r.n_prompt_ids == 3 && r.prompt_ids[0] == 5 && r.prompt_ids[2] == 7, "ids prompt");
		CHECK(strcmp(r.model, "m") == 0 && r.max_tokens == 9, "model, max_tokens");
		CHECK(r.sampling.temperature == 0 && r.sampling.top_p == 0.5f && r.sampling.top_k == 40, "sampling");
		CHECK(r.has_seed && r.seed == UINT64_MAX, "seed -1 -> %llu", (unsigned long long)r.seed);
		CHECK(r.n_stop == 2 && strcmp(r.stop[1], "bc") == 0, "stop list");
		CHECK(r.stream && r.include_usage, "stream options");
		serve_request_free(&r);
	}
	if (parse(SERVE_COMPLETION, "{\"prompt\": [\"hi\"], \"stop\": \"x\", \"top_k\": -1}", &r)) {
		CHECK(r.prompt_len == 2 && r.n_stop == 1 && strcmp(r.stop[0], "x") == 0, "batch of one, stop string");
		CHECK(r.sampling.top_k == 0, "top_k -1 is off");
		serve_request_free(&r);
	}
}

static const char *context_text(const serve_request *r)
{
	return json_object_to_json_string_ext(r->chat_context, JSON_C_TO_STRING_PLAIN);
}

/* The template context: content parts joined, other message keys kept,
 * add_generation_prompt on by default, kwargs passed through (over
 * add_generation_prompt as vLLM does, never over the messages). */
static void check_chat_context(void)
{
	serve_request r;
	const char *body = "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"},"
			   " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"},"
			   " {\"type\": \"text\", \"text\": \"b\"}]},"
			   " {\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"r\"}],"
			   " \"max_completion_tokens\": 4, \"chat_template_kwargs\": {\"enable_thinking\": false,"
			   " \"messages\": 1, \"add_generation_prompt\": false}}";
	if (parse(SERVE_CHAT, body, &r)) {
		const char *want = "{\"messages\":[{\"role\":\"system\",\"content\":\"S\"},"
				   "{\"role\":\"user\",\"content\":\"a\\nb\"},"
				   "{\"role\":\"assistant\",\"reasoning_content\":\"r\",\"content\":null}],"
				   "\"enable_thinking\":false,\"add_generation_prompt\":false}";
		CHECK(strcmp(context_text(&r), want) == 0, "context %s\n  want %s", context_text(&r), want);
		CHECK(r.max_tokens == 4, "max_completion_tokens");
		serve_request_free(&r);
	}
	if (parse(SERVE_CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}", &r)) {
		json_object *agp = json_object_object_get(r.chat_context, "add_generation_prompt");
		CHECK(json_object_get_boolean(agp), "add_generation_prompt is on by default");
		serve_request_free(&r);
	}
	body = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"add_generation_prompt\": false}";
	if (parse(SERVE_CHAT, body, &r)) {
		json_object *agp = json_object_object_get(r.chat_context, "add_generation_prompt");
		CHECK(!json_object_get_boolean(agp), "add_generation_prompt false kept");
		serve_request_free(&r);
	}
	/* completions read no chat fields, chat no completion fields */
	if (parse(SERVE_CHAT, "{\"messages\": [{\"role\": \"u\"}], \"prompt\": 5, \"echo\": 1}", &r))
		serve_request_free(&r);
	if (parse(SERVE_COMPLETION, "{\"prompt\": \"p\", \"messages\": 5, \"logprobs\": null}", &r)) {
		CHECK(!r.chat_context, "a completion built a chat context");
		serve_request_free(&r);
	}
}

int main(void)
{
	check_refusals();
	check_completion_fields();
	check_chat_context();
	if (check_failures)
		return 1;
	puts("serve request: ok");
	return 0;
}
