/* The bundle's tokenizer_meta section (runtime/tokenizer_meta.h): both forms
 * of chat_template, the stop ids in their order without repeats, and a
 * refusal naming the label and the key for each malformed field. */
#include <string.h>

#include "runtime/tokenizer_meta.h"
#include "tests/check.h"

#define LABEL "bundle t.halo: section 'tokenizer_meta'"

static bool parse(const char *json, halo_tokenizer_meta *m, char *err, size_t errlen)
{
	return halo_tokenizer_meta_parse(json, strlen(json), LABEL, m, err, errlen);
}

static void test_string_template(void)
{
	halo_tokenizer_meta m;
	char err[256];
	const char *json = "{\"format\": 1, \"eos_token\": {\"content\": \"<|im_end|>\", \"id\": 151645},"
			   " \"chat_template\": \"{{ messages }}\", \"eos_token_ids\": [151645, 151643]}";
	CHECK(parse(json, &m, err, sizeof err), "string form: %s", err);
	CHECK(m.chat_template && !strcmp(m.chat_template, "{{ messages }}") && m.chat_template_len == 14,
	      "the template string");
	CHECK(m.bos.id == -1 && !m.bos.text, "no bos token");
	CHECK(m.eos.id == 151645 && m.eos.text && !strcmp(m.eos.text, "<|im_end|>"), "the eos token");
	/* the eos token's id is already in the list: each id once, the list's order */
	CHECK(m.n_eos_ids == 2 && m.eos_ids[0] == 151645 && m.eos_ids[1] == 151643, "stop ids: %zu", m.n_eos_ids);
	halo_tokenizer_meta_free(&m);
}

static void test_named_templates(void)
{
	halo_tokenizer_meta m;
	char err[256];
	const char *json = "{\"eos_token\": {\"content\": \"</s>\", \"id\": 2},"
			   " \"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"},"
			   " {\"name\": \"default\", \"template\": \"D\"}], \"eos_token_ids\": [7]}";
	CHECK(parse(json, &m, err, sizeof err), "list form: %s", err);
	CHECK(m.chat_template && !strcmp(m.chat_template, "D"), "the template named default");
	CHECK(m.n_eos_ids == 2 && m.eos_ids[0] == 7 && m.eos_ids[1] == 2, "stop ids: the list, then the eos token");
	halo_tokenizer_meta_free(&m);

	CHECK(parse("{\"eos_token_ids\": []}", &m, err, sizeof err), "no template: %s", err);
	CHECK(!m.chat_template && m.n_eos_ids == 0, "no template, no stop ids");
	halo_tokenizer_meta_free(&m);
}

static void test_refusals(void)
{
	static const struct {
		const char *json, *says;
	} cases[] = {
		{"[1, 2]", "not a JSON object"},
		{"{\"eos_token_ids\": [1", "not a JSON object"},
		{"{\"bos_token\": \"<s>\", \"eos_token_ids\": []}", "bos_token is not {\"content\""},
		{"{\"eos_token\": {\"content\": \"x\", \"id\": -1}, \"eos_token_ids\": []}", "eos_token is not"},
		{"{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}], \"eos_token_ids\": []}",
		 "a template named \"default\""},
		{"{\"chat_template\": 3, \"eos_token_ids\": []}", "chat_template is neither"},
		{"{\"chat_template\": \"x\"}", "eos_token_ids is missing"},
		{"{\"eos_token_ids\": [1, -3]}", "eos_token_ids[1] is not a token id"},
		{"{\"eos_token_ids\": [1, \"2\"]}", "eos_token_ids[1] is not a token id"},
		{"{\"eos_token_ids\": [4294967296]}", "eos_token_ids[0] is not a token id"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		halo_tokenizer_meta m;
		char err[256] = "";
		bool ok = parse(cases[i].json, &m, err, sizeof err);
		CHECK(!ok, "refused: %s", cases[i].json);
		CHECK(!strncmp(err, LABEL ": ", strlen(LABEL) + 2) && strstr(err, cases[i].says),
		      "%s: message '%s' names the label and says '%s'", cases[i].json, err, cases[i].says);
		CHECK(!m.chat_template && !m.eos_ids && !m.bos.text && !m.eos.text, "%s: left empty", cases[i].json);
		halo_tokenizer_meta_free(&m);
	}
}

int main(void)
{
	test_string_template();
	test_named_templates();
	test_refusals();
	if (check_failures)
		fprintf(stderr, "FAIL: %d failure(s)\n", check_failures);
	else
		printf("tokenizer_meta: ok\n");
	return check_failures ? 1 : 0;
}
