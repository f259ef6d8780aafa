/* runtime/text_stream.h with the real Qwen3 tokenizer:
 *   test_text_stream TOKENIZER.json
 * Characters split over byte tokens come out whole, invalid bytes come out
 * as decode gives them, stop strings cut the text even when split over
 * tokens, a stop string's beginning is held back and released when the text
 * diverges, and over random token sequences the pieces always add up to
 * halo_tokenizer_decode of the whole sequence. */
#include <stdlib.h>
#include <string.h>

#include "runtime/sample.h"
#include "runtime/text_stream.h"
#include "tests/check.h"

static halo_tokenizer *tok;

/* The token of one byte: GPT-2's byte-level alphabet maps printable bytes
 * to themselves and the others, in order, to U+0100 upwards. */
static int32_t byte_id(unsigned char b)
{
	unsigned cp = b;
	if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
		cp = 256;
		for (unsigned x = 0; x < b; x++)
			cp += !((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE);
	}
	char s[4] = {0};
	if (cp < 0x80) {
		s[0] = (char)cp;
	} else {
		s[0] = (char)(0xC0 | (cp >> 6));
		s[1] = (char)(0x80 | (cp & 0x3F));
	}
	return halo_tokenizer_token_id(tok, s);
}

/* A growing text, the pieces of one stream appended. */
typedef struct {
	char s[4096];
	size_t n;
} text;

static void add(text *t, const char *piece, size_t len)
{
	CHECK(t->n + len < sizeof(t->s), "text overflow");
	if (t->n + len < sizeof(t->s)) {
		memcpy(t->s + t->n, piece, len);
		t->n += len;
	}
}

static halo_text_stream *stream(const char *const *stop, size_t n_stop)
{
	char err[256];
	halo_text_stream *ts = halo_text_stream_create(tok, false, stop, n_stop, err, sizeof err);
	CHECK(ts != NULL, "create: %s", err);
	return ts;
}

/* Pushes id, checks the piece is want (NULL: don't care) and the status. */
static void push(halo_text_stream *ts, int32_t id, const char *want, halo_text_status want_st, text *acc)
{
	const char *piece;
	size_t len;
	char err[256];
	halo_text_status st = halo_text_stream_push(ts, id, &piece, &len, err, sizeof err);
	CHECK(st == want_st, "push %d: status %d, want %d", id, st, want_st);
	if (want)
		CHECK(len == strlen(want) && memcmp(piece, want, len) == 0, "push %d: piece '%.*s', want '%s'", id,
		      (int)len, piece, want);
	add(acc, piece, len);
}

static void finish(halo_text_stream *ts, const char *want, halo_text_status want_st, text *acc)
{
	const char *piece;
	size_t len;
	char err[256];
	halo_text_status st = halo_text_stream_finish(ts, &piece, &len, err, sizeof err);
	CHECK(st == want_st, "finish: status %d, want %d", st, want_st);
	CHECK(len == strlen(want) && memcmp(piece, want, len) == 0, "finish: piece '%.*s', want '%s'", (int)len, piece,
	      want);
	add(acc, piece, len);
}

/* decode(ids) equals the text streamed. */
static void check_whole(const int32_t *ids, size_t n, const text *acc, const char *what)
{
	char *want, err[256];
	size_t len;
	CHECK(halo_tokenizer_decode(tok, ids, n, false, &want, &len, err, sizeof err), "decode: %s", err);
	CHECK(len == acc->n && memcmp(want, acc->s, len) == 0, "%s: streamed '%.*s', decode gives '%s'", what,
	      (int)acc->n, acc->s, want);
	free(want);
}

/* "a€b🎉" one byte per token: each character comes out whole, with the
 * token that completes it. */
static void test_split_characters(void)
{
	static const char bytes[] = "a\xE2\x82\xAC" "b\xF0\x9F\x8E\x89";
	static const char *const want[] = {"a", "", "", "\xE2\x82\xAC", "b", "", "", "", "\xF0\x9F\x8E\x89"};
	halo_text_stream *ts = stream(NULL, 0);
	text acc = {0};
	int32_t ids[16];
	for (size_t i = 0; i < strlen(bytes); i++) {
		ids[i] = byte_id((unsigned char)bytes[i]);
		push(ts, ids[i], want[i], HALO_TEXT_MORE, &acc);
	}
	finish(ts, "", HALO_TEXT_MORE, &acc);
	check_whole(ids, strlen(bytes), &acc, "split characters");
	halo_text_stream_free(ts);
}

/* An invalid byte inside the text and a character cut off at the end: the
 * stream gives what decoding the whole sequence gives (U+FFFD for each). */
static void test_invalid_bytes(void)
{
	static const unsigned char bytes[] = {'o', 0xFF, 'k', 0xF0, 0x9F};
	halo_text_stream *ts = stream(NULL, 0);
	text acc = {0};
	int32_t ids[5];
	for (int i = 0; i < 5; i++)
		ids[i] = byte_id(bytes[i]);
	push(ts, ids[0], "o", HALO_TEXT_MORE, &acc);
	push(ts, ids[1], "", HALO_TEXT_MORE, &acc); /* U+FFFD at the end: may still be a cut character */
	push(ts, ids[2], "\xEF\xBF\xBDk", HALO_TEXT_MORE, &acc);
	push(ts, ids[3], "", HALO_TEXT_MORE, &acc);
	push(ts, ids[4], "", HALO_TEXT_MORE, &acc);
	finish(ts, "\xEF\xBF\xBD", HALO_TEXT_MORE, &acc);
	check_whole(ids, 5, &acc, "invalid bytes");
	halo_text_stream_free(ts);
}

/* The ids of s (at most cap of them). */
static size_t encode(const char *s, int32_t *ids, size_t cap)
{
	int32_t *got;
	size_t n;
	char err[256];
	CHECK(halo_tokenizer_encode(tok, s, strlen(s), &got, &n, err, sizeof err), "encode: %s", err);
	CHECK(n <= cap, "'%s' is %zu tokens", s, n);
	memcpy(ids, got, (n < cap ? n : cap) * sizeof(*ids));
	free(got);
	return n;
}

/* A stop string split over tokens ("<E" + "ND>") cuts the text before it;
 * the earliest of two stop strings wins. */
static void test_stop_split(void)
{
	static const char *const stops[] = {"ND>x", "<END>"};
	int32_t a[8], b[8];
	size_t na = encode("abc<E", a, 8), nb = encode("ND>xyz", b, 8);
	halo_text_stream *ts = stream(stops, 2);
	text acc = {0};
	for (size_t i = 0; i < na; i++)
		push(ts, a[i], NULL, HALO_TEXT_MORE, &acc);
	CHECK(acc.n == 3 && memcmp(acc.s, "abc", 3) == 0, "before the stop string's end: '%.*s', want 'abc'",
	      (int)acc.n, acc.s);
	halo_text_status st = HALO_TEXT_MORE;
	for (size_t i = 0; i < nb && st == HALO_TEXT_MORE; i++) {
		const char *piece;
		size_t len;
		char err[256];
		st = halo_text_stream_push(ts, b[i], &piece, &len, err, sizeof err);
		add(&acc, piece, len);
	}
	CHECK(st == HALO_TEXT_STOP, "no stop at '<END>' split over tokens");
	CHECK(acc.n == 3 && memcmp(acc.s, "abc", 3) == 0, "with a stop string: '%.*s', want 'abc'", (int)acc.n, acc.s);
	halo_text_stream_free(ts);
}

/* "hello wor" holds "wor" back (stop "world!"), "ld?" releases it. */
static void test_stop_diverges(void)
{
	static const char *const stops[] = {"world!"};
	int32_t a[8], b[8], all[16];
	size_t na = encode("hello wor", a, 8), nb = encode("ld?", b, 8);
	halo_text_stream *ts = stream(stops, 1);
	text acc = {0};
	for (size_t i = 0; i < na; i++)
		push(ts, a[i], NULL, HALO_TEXT_MORE, &acc);
	CHECK(acc.n == 6 && memcmp(acc.s, "hello ", 6) == 0, "held back: '%.*s', want 'hello '", (int)acc.n, acc.s);
	for (size_t i = 0; i < nb; i++)
		push(ts, b[i], NULL, HALO_TEXT_MORE, &acc);
	finish(ts, "", HALO_TEXT_MORE, &acc);
	memcpy(all, a, na * sizeof(*a));
	memcpy(all + na, b, nb * sizeof(*b));
	check_whole(all, na + nb, &acc, "a stop string's beginning that diverges");
	halo_text_stream_free(ts);
	/* the end of the sequence releases a held beginning as it is */
	ts = stream(stops, 1);
	acc.n = 0;
	for (size_t i = 0; i < na; i++)
		push(ts, a[i], NULL, HALO_TEXT_MORE, &acc);
	finish(ts, "wor", HALO_TEXT_MORE, &acc);
	check_whole(a, na, &acc, "a held beginning at the end");
	halo_text_stream_free(ts);
}

/* Random ids (any token, or single bytes that may cut characters), with a
 * stop string that never occurs: the pieces add up to decode's text. */
static void test_random_sequences(void)
{
	static const char *const stops[] = {"\x01\x02\x03 never"};
	halo_rng rng;
	halo_rng_seed(&rng, 7);
	for (int round = 0; round < 200; round++) {
		halo_text_stream *ts = stream(stops, 1);
		text acc = {0};
		int32_t ids[24];
		size_t n = 1 + halo_rng_next(&rng) % 24;
		for (size_t i = 0; i < n; i++) {
			bool byte = halo_rng_next(&rng) % 2;
			ids[i] = byte ? byte_id((unsigned char)(0x80 + halo_rng_next(&rng) % 0x78))
				      : (int32_t)(halo_rng_next(&rng) % 151000);
			push(ts, ids[i], NULL, HALO_TEXT_MORE, &acc);
		}
		const char *piece;
		size_t len;
		char err[256];
		CHECK(halo_text_stream_finish(ts, &piece, &len, err, sizeof err) == HALO_TEXT_MORE, "finish");
		add(&acc, piece, len);
		check_whole(ids, n, &acc, "random sequence");
		halo_text_stream_free(ts);
	}
}

static void test_refusals(void)
{
	static const char *const stops[] = {"ok", ""};
	char err[256] = "";
	CHECK(halo_text_stream_create(tok, false, stops, 2, err, sizeof err) == NULL, "an empty stop string passed");
	CHECK(strstr(err, "stop string 1 is empty") != NULL, "message: %s", err);
}

int main(int argc, char **argv)
{
	char err[512];
	if (argc != 2) {
		fprintf(stderr, "usage: test_text_stream TOKENIZER.json\n");
		return 2;
	}
	if (!(tok = halo_tokenizer_load(argv[1], err, sizeof err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	test_split_characters();
	test_invalid_bytes();
	test_stop_split();
	test_stop_diverges();
	test_random_sequences();
	test_refusals();
	halo_tokenizer_free(tok);
	if (check_failures)
		return 1;
	printf("text_stream: ok\n");
	return 0;
}
