/* Golden files for the IR tests (golden.h). */
#include "tests/ir/golden.h"

#include <stdio.h>
#include <stdlib.h>

char *golden_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	buf[n] = 0;
	*len = (size_t)n;
	return buf;
}

bool golden_matches(const char *path, const char *text, size_t len, char *why, size_t whylen)
{
	const char *regen = getenv("HALO_IR_REGEN");
	if (regen && *regen == '1') {
		FILE *f = fopen(path, "wb");
		bool ok = f && fwrite(text, 1, len, f) == len;
		if (f)
			ok &= fclose(f) == 0;
		snprintf(why, whylen, "cannot write %s", path);
		return ok;
	}
	size_t glen = 0, at = 0;
	char *golden = golden_slurp(path, &glen);
	if (!golden) {
		snprintf(why, whylen, "cannot read %s (HALO_IR_REGEN=1 writes it)", path);
		return false;
	}
	while (at < len && at < glen && text[at] == golden[at])
		at++;
	free(golden);
	snprintf(why, whylen, "dump differs from %s at byte %zu (HALO_IR_REGEN=1 rewrites it)", path, at);
	return glen == len && at == len;
}
