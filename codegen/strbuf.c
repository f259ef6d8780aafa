#include "codegen/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_vprintf(strbuf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		abort();
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *s = realloc(b->s, cap);
		if (!s)
			abort();
		b->s = s;
		b->cap = cap;
	}
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void sb_printf(strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

char *sb_take(strbuf *b)
{
	if (!b->s)
		sb_printf(b, "%s", "");
	char *s = b->s;
	memset(b, 0, sizeof *b);
	return s;
}
