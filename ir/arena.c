#include "ir/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ir_arena_block {
	ir_arena_block *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

enum { ARENA_BLOCK = 64 * 1024 };

static void *oom(void)
{
	fputs("halo: out of memory\n", stderr);
	abort();
}

void *ir_arena_alloc(ir_arena *a, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	ir_arena_block *b = a->head;
	if (!b || b->cap - b->used < size) {
		size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return oom();
		b->next = a->head;
		b->used = 0;
		b->cap = cap;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += size;
	memset(p, 0, size);
	return p;
}

void *ir_arena_grow(ir_arena *a, void *old, size_t old_size, size_t new_size)
{
	if (new_size <= old_size)
		return old;
	void *p = ir_arena_alloc(a, new_size);
	if (old_size)
		memcpy(p, old, old_size);
	return p;
}

char *ir_arena_strdup(ir_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = ir_arena_alloc(a, n);
	memcpy(p, s, n);
	return p;
}

char *ir_arena_printf(ir_arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *p = ir_arena_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void ir_arena_free(ir_arena *a)
{
	ir_arena_block *b = a->head;
	while (b) {
		ir_arena_block *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
}
