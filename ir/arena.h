/* Bump allocator owning all memory of one ir_module.
 * Blocks are malloc'd and released together by ir_arena_free(); individual
 * objects are never freed. Allocation failure aborts (out of memory in the
 * compiler is not a recoverable input error). */
#ifndef HALO_IR_ARENA_H
#define HALO_IR_ARENA_H

#include <stddef.h>

typedef struct ir_arena_block ir_arena_block;

typedef struct {
	ir_arena_block *head;
} ir_arena;

void *ir_arena_alloc(ir_arena *a, size_t size);          /* zeroed, 16-aligned */
void *ir_arena_grow(ir_arena *a, void *old, size_t old_size, size_t new_size);
char *ir_arena_strdup(ir_arena *a, const char *s);
char *ir_arena_printf(ir_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3), nonnull(2)));
void ir_arena_free(ir_arena *a);

#endif
