/* runtime/generate.h on the ref backend:
 *   test_generate QWEN3_TEXT.halo
 *     on the qwen3_text bundle (tiny random Qwen3, real tokenizer): the text
 *     streamed is the decode of the ids emitted; an eos id, a stop string,
 *     max_tokens and a cancel end it where they should; a second call from
 *     the session's position generates what one call over the whole
 *     sequence does (the chat's premise)
 *   test_generate spec
 *     models/qwen3_next.yaml with the fixture's MTP head and a byte-level
 *     tokenizer of its 256 ids: greedy spec_mtp streams plain decoding's
 *     text and ids, and an eos ends it mid-round at the same token */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/generate.h"
#include "runtime/tokenizer_meta.h"
#include "tests/check.h"
#include "tests/runtime/model_check.h"

/* What the text callback saw. */
typedef struct {
	char text[1 << 14];
	size_t len;
	int calls, cancel_at; /* cancel_at > 0: return false on that call */
} sink;

static bool collect(void *user, const char *text, size_t len)
{
	sink *k = user;
	if (k->len + len < sizeof(k->text)) {
		memcpy(k->text + k->len, text, len);
		k->len += len;
	}
	return ++k->calls != k->cancel_at;
}

typedef struct {
	halo_model *m;
	const halo_tokenizer *tok;
	int32_t ids[256];
	halo_gen_result res;
	sink out;
} run;

/* A fresh session, prompt, options o (ids_out set here). */
static bool generate(run *r, const int32_t *prompt, int64_t n, halo_gen_options o)
{
	char err[1024];
	halo_session *s = mc_session(r->m);
	o.ids_out = r->ids;
	memset(&r->out.text, 0, sizeof(r->out.text));
	r->out.len = 0;
	r->out.calls = 0;
	bool ok = halo_generate(r->m, s, r->tok, prompt, n, &o, collect, &r->out, &r->res, err, sizeof err);
	CHECK(ok, "generate: %s", err);
	halo_session_free(s);
	return ok;
}

static void check_text(const run *r, size_t n_ids, const char *what)
{
	char *want, err[256];
	size_t len;
	CHECK(halo_tokenizer_decode(r->tok, r->ids, n_ids, false, &want, &len, err, sizeof err), "decode");
	CHECK(len == r->out.len && memcmp(want, r->out.text, len) == 0, "%s: streamed '%.*s', the ids decode to '%s'",
	      what, (int)r->out.len, r->out.text, want);
	free(want);
}

static const int32_t prompt[] = {785, 3974, 13876, 38835}; /* "The quick brown fox" */

static void test_stops(run *r)
{
	halo_gen_options o = {.sampling = {.temperature = 1.0f, .top_p = 1}, .seed = 4, .max_tokens = 24};
	if (!generate(r, prompt, 4, o))
		return;
	CHECK(r->res.finish == HALO_FINISH_LENGTH && r->res.completion_tokens == 24 && r->res.prompt_tokens == 4,
	      "max_tokens: finish %s after %lld tokens", halo_finish_reason_name(r->res.finish),
	      (long long)r->res.completion_tokens);
	check_text(r, 24, "max_tokens");
	CHECK(r->out.calls == 24, "%d text calls for 24 tokens", r->out.calls);
	int32_t all[24];
	memcpy(all, r->ids, sizeof(all));
	char full[1 << 14];
	size_t full_len = r->out.len;
	memcpy(full, r->out.text, full_len);

	/* an eos: the first occurrence of the 10th token ends it, its text left out */
	int j = 0;
	while (all[j] != all[9])
		j++;
	o.eos_ids = &all[9];
	o.n_eos = 1;
	if (generate(r, prompt, 4, o)) {
		CHECK(r->res.finish == HALO_FINISH_STOP && r->res.completion_tokens == j + 1,
		      "eos: finish %s after %lld tokens, want stop after %d", halo_finish_reason_name(r->res.finish),
		      (long long)r->res.completion_tokens, j + 1);
		check_text(r, (size_t)j, "eos");
	}
	o.n_eos = 0;

	/* a stop string: four bytes from the middle of the text */
	char stop[5];
	memcpy(stop, full + full_len / 2, 4);
	stop[4] = '\0';
	const char *stops[] = {stop};
	size_t cut = (size_t)(strstr(full, stop) - full);
	o.stop = stops;
	o.n_stop = 1;
	if (generate(r, prompt, 4, o)) {
		CHECK(r->res.finish == HALO_FINISH_STOP && r->res.completion_tokens < 24, "stop string: finish %s",
		      halo_finish_reason_name(r->res.finish));
		CHECK(r->out.len == cut && memcmp(r->out.text, full, cut) == 0, "stop string '%s': got '%.*s', want '%.*s'",
		      stop, (int)r->out.len, r->out.text, (int)cut, full);
	}
	o.n_stop = 0;

	/* a cancel on the 5th token */
	r->out.cancel_at = 5;
	if (generate(r, prompt, 4, o))
		CHECK(r->res.finish == HALO_FINISH_CANCELLED && r->res.completion_tokens == 5, "cancel: %s after %lld",
		      halo_finish_reason_name(r->res.finish), (long long)r->res.completion_tokens);
	r->out.cancel_at = 0;
}

/* Two calls on one session (the second from its position, fed the first's
 * last token) generate what one call over the whole sequence does. */
static void test_continue(run *r)
{
	char err[1024];
	halo_gen_options o = {.max_tokens = 5};
	halo_session *s = mc_session(r->m);
	int32_t first[5], seq[16];
	o.ids_out = first;
	CHECK(halo_generate(r->m, s, r->tok, prompt, 4, &o, collect, &r->out, &r->res, err, sizeof err), "%s", err);
	CHECK(halo_session_pos(s) == 4 + 4, "the session holds %lld tokens, want 8", (long long)halo_session_pos(s));
	int32_t second[3] = {first[4], 11, 1879}; /* the unfed token, ", world" */
	int32_t got[5];
	o.ids_out = got;
	CHECK(halo_generate(r->m, s, r->tok, second, 3, &o, collect, &r->out, &r->res, err, sizeof err), "%s", err);
	halo_session_free(s);
	memcpy(seq, prompt, sizeof(prompt));
	memcpy(seq + 4, first, sizeof(first));
	memcpy(seq + 9, second + 1, 2 * sizeof(int32_t));
	if (!generate(r, seq, 11, o))
		return;
	CHECK(memcmp(got, r->ids, sizeof(got)) == 0, "the continued session generated other tokens than one call");
}

static int text_tests(const char *bundle)
{
	char err[1024];
	run r = {.m = mc_open(bundle, "ref")};
	size_t size;
	const void *json = halo_model_section(r.m, "tokenizer", &size);
	halo_tokenizer *tok = json ? halo_tokenizer_load_mem(json, size, bundle, err, sizeof err) : NULL;
	CHECK(tok != NULL, "%s: no tokenizer", bundle);
	if (tok) {
		r.tok = tok;
		test_stops(&r);
		test_continue(&r);
	}
	halo_tokenizer_free(tok);
	halo_model_close(r.m);
	return check_failures != 0;
}

/* A tokenizer whose 256 ids are the 256 bytes (GPT-2's byte-level
 * alphabet, no merges). */
static halo_tokenizer *byte_tokenizer(void)
{
	json_object *vocab = json_object_new_object();
	for (unsigned b = 0, extra = 0; b < 256; b++) {
		bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
		unsigned cp = printable ? b : 256 + extra++;
		char s[3] = {0};
		if (cp < 0x80) {
			s[0] = (char)cp;
		} else {
			s[0] = (char)(0xC0 | (cp >> 6));
			s[1] = (char)(0x80 | (cp & 0x3F));
		}
		json_object_object_add(vocab, s, json_object_new_int((int)b));
	}
	json_object *model = json_object_new_object(), *root = json_object_new_object();
	json_object_object_add(model, "type", json_object_new_string("BPE"));
	json_object_object_add(model, "vocab", vocab);
	json_object_object_add(model, "merges", json_object_new_array());
	json_object *dec = json_object_new_object();
	json_object_object_add(dec, "type", json_object_new_string("ByteLevel"));
	json_object_object_add(root, "model", model);
	json_object_object_add(root, "decoder", dec);
	const char *text = json_object_to_json_string(root);
	char err[512];
	halo_tokenizer *t = halo_tokenizer_load_mem(text, strlen(text), "byte tokenizer", err, sizeof err);
	CHECK(t != NULL, "%s", err);
	json_object_put(root);
	return t;
}

static int spec_tests(void)
{
	char bundle[64];
	snprintf(bundle, sizeof bundle, "generate_%d.halo", (int)getpid());
	mc_compile("models/qwen3_next.yaml", "tests/fixtures/qwen3_next_tiny", bundle, false);
	run r = {.m = mc_open(bundle, "ref"), .tok = byte_tokenizer()};
	halo_gen_options o = {.max_tokens = 48, .draft_n = 3};
	static const int32_t p[] = {5, 6, 7, 8};
	int32_t plain[48];
	sink plain_text;
	if (r.tok && generate(&r, p, 4, o)) {
		memcpy(plain, r.ids, sizeof(plain));
		plain_text = r.out;
		o.spec_mtp = true;
		if (generate(&r, p, 4, o)) {
			CHECK(memcmp(plain, r.ids, sizeof(plain)) == 0, "greedy spec_mtp emitted other ids than plain");
			CHECK(r.out.len == plain_text.len && memcmp(r.out.text, plain_text.text, r.out.len) == 0,
			      "greedy spec_mtp streamed other text than plain");
			/* the fixture's head rarely agrees with its target: what counts is that it drafted */
			CHECK(r.res.spec.rounds > 0 && r.res.spec.drafted > 0, "spec_mtp drafted nothing (%lld rounds)",
			      (long long)r.res.spec.rounds);
		}
		/* an eos late in the sequence ends speculation at the same token */
		int j = 0;
		while (plain[j] != plain[40])
			j++;
		o.eos_ids = &plain[40];
		o.n_eos = 1;
		if (generate(&r, p, 4, o))
			CHECK(r.res.completion_tokens == j + 1 && r.res.finish == HALO_FINISH_STOP,
			      "spec eos: %lld tokens, want %d", (long long)r.res.completion_tokens, j + 1);
	}
	halo_tokenizer_free((halo_tokenizer *)r.tok);
	halo_model_close(r.m);
	remove(bundle);
	return check_failures != 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_generate QWEN3_TEXT.halo | spec\n");
		return 2;
	}
	int rc = strcmp(argv[1], "spec") == 0 ? spec_tests() : text_tests(argv[1]);
	if (!rc)
		printf("generate %s: ok\n", strcmp(argv[1], "spec") == 0 ? "spec" : "text");
	return rc;
}
