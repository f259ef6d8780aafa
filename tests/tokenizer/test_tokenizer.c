/* runtime/tokenizer.h against Hugging Face tokenizers' own output
 * (tests/fixtures/tokenizer, written by tools/oracle/make_tokenizer_refs.js):
 *   test_tokenizer refs TOKENIZER.json REFS.json
 *     every corpus text encodes to the reference ids and those ids decode to
 *     the reference text; every decode case gives its reference text
 *   test_tokenizer refusals
 *     unsupported components and malformed files are refused, naming the
 *     file and the JSON path */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/tokenizer.h"
#include "tests/check.h"

static json_object *read_json(const char *path)
{
	json_object *o = json_object_from_file(path);
	CHECK(o != NULL, "%s: cannot read: %s", path, json_util_get_last_err());
	return o;
}

static void ids_of(json_object *arr, int32_t **ids, size_t *n)
{
	*n = json_object_array_length(arr);
	*ids = malloc((*n + 1) * sizeof(**ids));
	for (size_t i = 0; i < *n; i++)
		(*ids)[i] = json_object_get_int(json_object_array_get_idx(arr, i));
}

static const char *str_of(json_object *o, const char *key, size_t *len)
{
	json_object *v = json_object_object_get(o, key);
	*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

static void check_decode(const halo_tokenizer *t, const char *name, const int32_t *ids, size_t n, bool skip,
			 const char *want, size_t want_len)
{
	char *text, err[256];
	size_t len;
	if (!halo_tokenizer_decode(t, ids, n, skip, &text, &len, err, sizeof err)) {
		CHECK(0, "%s: decode: %s", name, err);
		return;
	}
	CHECK(len == want_len && memcmp(text, want, len) == 0, "%s: decodes to '%s', HF gives '%s'", name, text, want);
	free(text);
}

static void check_encode(halo_tokenizer *t, json_object *c)
{
	size_t text_len, dec_len, n_want;
	const char *name = json_object_get_string(json_object_object_get(c, "name"));
	const char *text = str_of(c, "text", &text_len), *decoded = str_of(c, "decoded", &dec_len);
	int32_t *want, *got;
	size_t n;
	char err[256];
	ids_of(json_object_object_get(c, "ids"), &want, &n_want);
	if (!halo_tokenizer_encode(t, text, text_len, &got, &n, err, sizeof err)) {
		CHECK(0, "%s: encode: %s", name, err);
		free(want);
		return;
	}
	size_t at = 0;
	while (at < n && at < n_want && got[at] == want[at])
		at++;
	CHECK(n == n_want && at == n, "%s: %zu ids, HF gives %zu; first difference at %zu (%d vs HF %d)", name, n,
	      n_want, at, at < n ? got[at] : -1, at < n_want ? want[at] : -1);
	check_decode(t, name, want, n_want, false, decoded, dec_len);
	free(want);
	free(got);
}

static int run_refs(const char *tokenizer, const char *refs_path)
{
	char err[512];
	halo_tokenizer *t = halo_tokenizer_load(tokenizer, err, sizeof err);
	json_object *refs = read_json(refs_path);
	CHECK(t != NULL, "load: %s", err);
	if (!t || !refs) {
		halo_tokenizer_free(t);
		json_object_put(refs);
		return 1;
	}
	json_object *enc = json_object_object_get(refs, "encode"), *dec = json_object_object_get(refs, "decode");
	/* twice: the second pass goes through the pre-token cache */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < json_object_array_length(enc); i++)
			check_encode(t, json_object_array_get_idx(enc, i));
	for (size_t i = 0; i < json_object_array_length(dec); i++) {
		json_object *c = json_object_array_get_idx(dec, i);
		int32_t *ids;
		size_t n, len;
		ids_of(json_object_object_get(c, "ids"), &ids, &n);
		const char *want = str_of(c, "text", &len);
		check_decode(t, json_object_get_string(json_object_object_get(c, "name")), ids, n,
			     json_object_get_boolean(json_object_object_get(c, "skip_special")), want, len);
		free(ids);
	}
	printf("%s: %zu encode and %zu decode cases\n", refs_path, json_object_array_length(enc),
	       json_object_array_length(dec));
	json_object_put(refs);
	halo_tokenizer_free(t);
	return check_failures != 0;
}

/* ---- refusals ---- */

/* A minimal valid file; a case replaces one part of it. */
#define VOCAB "\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}"
#define MODEL(extra) "\"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [\"a b\"]" extra "}"
#define FILE_WITH(parts) "{" parts "}"

static const struct {
	const char *json, *message;
} refusals[] = {
	{FILE_WITH(MODEL("") ", \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\"}, "
			     "{\"type\": \"Metaspace\"}]}"),
	 "t.json: pre_tokenizer.pretokenizers[1].type: 'Metaspace' is not supported"},
	{FILE_WITH(MODEL("") ", \"normalizer\": {\"type\": \"Lowercase\"}"),
	 "t.json: normalizer.type: 'Lowercase' is not supported"},
	{FILE_WITH(MODEL("") ", \"decoder\": {\"type\": \"WordPiece\"}"), "t.json: decoder.type: 'WordPiece' is not supported"},
	{FILE_WITH(MODEL("") ", \"post_processor\": {\"type\": \"TemplateProcessing\"}"),
	 "t.json: post_processor.type: 'TemplateProcessing' is not supported"},
	{FILE_WITH("\"model\": {\"type\": \"WordPiece\", " VOCAB "}"), "t.json: model.type: 'WordPiece' is not supported"},
	{FILE_WITH(MODEL(", \"byte_fallback\": true")), "t.json: model.byte_fallback: true is not supported"},
	{FILE_WITH(MODEL(", \"dropout\": 0.1")), "t.json: model.dropout: only null is supported"},
	{FILE_WITH(MODEL(", \"continuing_subword_prefix\": \"##\"")),
	 "t.json: model.continuing_subword_prefix: '##' is not supported, only \"\""},
	{FILE_WITH(MODEL(", \"unk_token\": \"<unk>\"")), "t.json: model.unk_token: '<unk>' is not in the vocab"},
	{FILE_WITH(MODEL(", \"frobnicate\": 1")), "t.json: model.frobnicate: unknown key, not supported"},
	{FILE_WITH("\"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [\"a c\"]}"),
	 "t.json: model.merges[0]: 'c' is not in the vocab"},
	{FILE_WITH("\"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [\"a b c\"]}"),
	 "t.json: model.merges[0]: 'a b c' is not two tokens separated by one space"},
	{FILE_WITH("\"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [[\"b\", \"a\"]]}"),
	 "t.json: model.merges[0]: 'ba' is not in the vocab"},
	{FILE_WITH("\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}"),
	 "t.json: model.vocab: 'a' and 'b' both have id 0"},
	{FILE_WITH("\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}"),
	 "t.json: model.vocab.a: id -1 is out of range"},
	{FILE_WITH(MODEL("") ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, "
			     "\"behavior\": \"Isolated\"}"),
	 "t.json: pre_tokenizer.pattern.Regex: PCRE2 cannot compile the pattern (at offset 1): missing closing parenthesis"},
	{FILE_WITH(MODEL("") ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"x\"}, "
			     "\"behavior\": \"Contiguous\"}"),
	 "t.json: pre_tokenizer.behavior: 'Contiguous' is not supported"},
	{FILE_WITH(MODEL("") ", \"added_tokens\": [{\"id\": 3, \"content\": \"\"}]"), "t.json: added_tokens[0].content: empty"},
	{FILE_WITH(MODEL("") ", \"added_tokens\": [{\"id\": 3, \"content\": \"x\"}, {\"id\": 4, \"content\": \"x\"}]"),
	 "t.json: added_tokens[1].content: 'x' is also added_tokens[0]'s"},
	{FILE_WITH(MODEL("") ", \"added_tokens\": [{\"id\": 3, \"content\": \"x\"}, {\"id\": 3, \"content\": \"y\"}]"),
	 "t.json: added_tokens[1].id: 3, but tokenizers gives 'y' id 4"},
	{FILE_WITH(MODEL("") ", \"added_tokens\": [{\"id\": 7, \"content\": \"ab\"}]"),
	 "t.json: added_tokens[0].id: 7, but tokenizers gives 'ab' id 2"},
	{FILE_WITH(MODEL("") ", \"added_tokens\": [{\"id\": \"3\", \"content\": \"x\"}]"),
	 "t.json: added_tokens[0].id: expected int, found string"},
	{FILE_WITH(MODEL("") ", \"truncation\": {\"max_length\": 5}"), "t.json: truncation: only null is supported"},
	{FILE_WITH(MODEL("") ", \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"use_regex\": 1}"),
	 "t.json: pre_tokenizer.use_regex: expected boolean, found int"},
	{FILE_WITH("\"normalizer\": null"), "t.json: model: missing"},
	{"[1, 2]", "t.json: (top level): expected object, found array"},
	{"{\"model\": ", "t.json: malformed JSON at byte 10: unexpected end of data"},
	{"{\"model\": {}} x", "t.json: malformed JSON at byte 14: unexpected character"},
	{"", "t.json: malformed JSON at byte 0: unexpected end of data"},
	{"{\"a\": \"\xff\"}", "t.json: malformed JSON at byte 7"},
};

static void check_valid_minimal(void)
{
	char err[256];
	static const char json[] = FILE_WITH(MODEL(""));
	halo_tokenizer *t = halo_tokenizer_load_mem(json, sizeof json - 1, "t.json", err, sizeof err);
	CHECK(t != NULL, "the minimal file is refused: %s", err);
	int32_t *ids = NULL;
	size_t n = 0;
	CHECK(t && halo_tokenizer_encode(t, "abba", 4, &ids, &n, err, sizeof err), "encode: %s", err);
	CHECK(n == 3 && ids[0] == 2 && ids[1] == 1 && ids[2] == 0, "abba: %zu ids", n);
	free(ids);
	CHECK(t && !halo_tokenizer_encode(t, "a\xc3", 2, &ids, &n, err, sizeof err) &&
		      strcmp(err, "the text is not valid UTF-8 (byte 1, 0xc3)") == 0,
	      "invalid UTF-8: '%s'", err);
	halo_tokenizer_free(t);
	/* json-c stops at a NUL: what follows is refused, not ignored */
	CHECK(!halo_tokenizer_load_mem("{}\0x", 4, "t.json", err, sizeof err) &&
		      strcmp(err, "t.json: malformed JSON at byte 2: trailing bytes") == 0,
	      "NUL: '%s'", err);
}

static int run_refusals(void)
{
	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		char err[512] = "";
		halo_tokenizer *t = halo_tokenizer_load_mem(refusals[i].json, strlen(refusals[i].json), "t.json", err,
							    sizeof err);
		CHECK(t == NULL, "case %zu is accepted: %s", i, refusals[i].json);
		CHECK(strncmp(err, refusals[i].message, strlen(refusals[i].message)) == 0,
		      "case %zu:\n  got  '%s'\n  want '%s...'", i, err, refusals[i].message);
		halo_tokenizer_free(t);
	}
	char err[512];
	CHECK(!halo_tokenizer_load("/nonexistent/tokenizer.json", err, sizeof err) &&
		      strcmp(err, "/nonexistent/tokenizer.json: cannot open: No such file or directory") == 0,
	      "missing file: '%s'", err);
	check_valid_minimal();
	printf("%zu refusals\n", sizeof refusals / sizeof refusals[0]);
	return check_failures != 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "refs") == 0)
		return run_refs(argv[2], argv[3]);
	if (argc == 2 && strcmp(argv[1], "refusals") == 0)
		return run_refusals();
	fprintf(stderr, "usage: test_tokenizer refs TOKENIZER.json REFS.json | refusals\n");
	return 2;
}
