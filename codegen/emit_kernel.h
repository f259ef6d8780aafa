/* What the kernel emitters share (codegen/emit_glsl.c for Vulkan,
 * codegen/emit_hip.c for the HIP dialect): the plan's constants, the fused
 * ops as `epilogue(v, i)`, an elementwise kernel's `main_op(i)` and
 * matvec's per-column-count paths, spelled in a dialect (kv_dialect). The
 * two languages differ only in the spellings the dialect names; the code
 * they generate computes the same thing in the same order. */
#ifndef HALO_EMIT_KERNEL_H
#define HALO_EMIT_KERNEL_H

#include "codegen/kernel_plan.h"
#include "codegen/strbuf.h"
#include "kernels/vulkan/kernel_sources.h"

typedef struct {
	const char *float_suffix; /* after a float literal: "" (GLSL) or "f" (C++, whose 1.0 is a double) */
	const char *fn;           /* before a function that reads no buffer ("static " in a C++ struct) */
	/* A read-only f32 buffer `name` at binding b: printf formats taking
	 * (binding, block name, name) in that order. */
	const char *ro_buffer;
	const char *wo_buffer; /* likewise, written */
	/* A constant table: printf formats for its head (type, name, count)
	 * and the element list's open (type) and close; the type is uint or
	 * float in both languages. */
	const char *table_head, *table_open, *table_close;
} kv_dialect;

extern const kv_dialect kv_dialect_glsl, kv_dialect_hip;

/* The embedded file `name` (kernels/vulkan or kernels/hip), or NULL. */
const kernel_source *kv_source_file(const char *name);
/* The embedded file base + suffix, or NULL. */
const kernel_source *kv_source_of(const char *base, const char *suffix);

/* The plan's constants as #defines and tables. */
void kv_emit_consts(strbuf *g, const kv_dialect *dl, const kv_plan *p);
/* The ew_ functions of the ops d uses, then `epilogue`, and for an
 * elementwise plan its buffers a, b, y and `main_op`. */
void kv_emit_fused(strbuf *g, const kv_dialect *dl, const kv_desc *d, const kv_plan *p);
/* matvec: the column-count body `body` (its @NC@ replaced) once per count
 * into tail, their prototypes and the dispatch on nc as #defines into
 * defs. */
void kv_emit_matvec_paths(strbuf *defs, strbuf *tail, const kv_plan *p, const char *body);

#endif
