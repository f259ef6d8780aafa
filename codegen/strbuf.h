/* Growable strings for the code generators: out of memory aborts, as
 * elsewhere in the compiler. A strbuf owns its text until sb_take. */
#ifndef HALO_CODEGEN_STRBUF_H
#define HALO_CODEGEN_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
	char *s;
	size_t len, cap;
} strbuf;

void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(strbuf *b, const char *fmt, va_list ap);
/* The text, malloc'd (an empty string if nothing was written); b is empty again. */
char *sb_take(strbuf *b);

#endif
