/* libFuzzer target for the tokenizer (runtime/tokenizer.h). An input is a
 * tokenizer.json, a NUL byte, and a text: the file must be refused with a
 * message naming it, or loaded; a loaded tokenizer encodes the text (or
 * refuses it as invalid UTF-8), every id it gives names a token, and the
 * ids, and the text's bytes read as ids, decode to valid UTF-8. */
#include "runtime/tokenizer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_decode(const halo_tokenizer *t, const int32_t *ids, size_t n, bool skip)
{
	char *text, err[256];
	size_t len;
	if (!halo_tokenizer_decode(t, ids, n, skip, &text, &len, err, sizeof err))
		abort(); /* only memory can run out */
	if (text[len] != '\0')
		abort();
	free(text);
}

static void run(halo_tokenizer *t, const char *text, size_t len)
{
	int32_t *ids;
	size_t n;
	char err[256];
	if (halo_tokenizer_encode(t, text, len, &ids, &n, err, sizeof err)) {
		for (size_t i = 0; i < n; i++)
			if (!halo_tokenizer_token(t, ids[i]))
				abort();
		check_decode(t, ids, n, false);
		free(ids);
	} else if (!err[0]) {
		abort();
	}
	int32_t raw[64];
	size_t m = 0;
	for (; m < len && m < 64; m++)
		raw[m] = (int32_t)((uint8_t)text[m] * 613u % (uint32_t)(halo_tokenizer_id_end(t) + 2)) - 1;
	check_decode(t, raw, m, true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t json_len = nul ? (size_t)(nul - data) : size;
	char err[512] = "";
	halo_tokenizer *t = halo_tokenizer_load_mem(data, json_len, "fuzz.json", err, sizeof err);
	if (!t) {
		if (strncmp(err, "fuzz.json: ", 11) != 0)
			abort();
		return 0;
	}
	const char *text = nul ? (const char *)nul + 1 : "";
	size_t len = nul ? size - json_len - 1 : 0;
	run(t, text, len);
	run(t, text, len); /* again, through the cache */
	halo_tokenizer_free(t);
	return 0;
}
