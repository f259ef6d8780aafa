/* A kernel plan: everything codegen/kernel_variant.c decides about one
 * variant, in no target language. The template to instantiate (a base name:
 * each emitter adds its own file suffix), its named constants in the order
 * they were decided, the buffers' binding indices, the fused ops as data
 * (the descriptor's epilogue chain with the binding of each extra operand),
 * and what a template instantiates beyond constants: matvec's per-column-
 * count paths and the shared helper files. An emitter renders it as source:
 * codegen/emit_glsl.h for Vulkan today; a HIP emitter reads the same plan.
 *
 * Ownership: a kv_plan owns its constant list and the arrays in it
 * (kv_plan_free); names and template strings are static. */
#ifndef HALO_KERNEL_PLAN_H
#define HALO_KERNEL_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "codegen/kernel_variant.h"

#define KV_MAX_HELPERS 2

typedef enum {
	KV_CONST_UINT,        /* i: a 32-bit unsigned value */
	KV_CONST_INT,         /* i: a signed value (flags are 0 or 1) */
	KV_CONST_FLOAT,       /* f: an f32 value */
	KV_CONST_BINDING,     /* i: the binding index of the buffer the name stands for */
	KV_CONST_UINT_ARRAY,  /* n values in u32 */
	KV_CONST_FLOAT_ARRAY, /* n values in f32 */
} kv_const_kind;

typedef struct {
	kv_const_kind kind;
	const char *name; /* static */
	int64_t i;
	float f;
	int64_t n;
	uint32_t *u32; /* malloc'd */
	float *f32;    /* malloc'd */
} kv_const;

typedef struct {
	const char *template; /* e.g. "matvec" */
	kv_const *c;
	int n_c, cap_c;
	/* Binary epilogue op j reads its extra operand from binding epi_binding[j]
	 * (-1 for a unary op); the ops themselves are the descriptor's epi[]. */
	int epi_binding[KV_MAX_EPILOGUE];
	/* Elementwise kernels: the main op (the descriptor's u.elementwise.main)
	 * reads a and b (b_binding -1 when unary) and writes y. */
	bool elementwise;
	int a_binding, b_binding, y_binding;
	/* matvec: one path per column count cols, 2 cols, ... cols_max (0: none). */
	uint32_t cols, cols_max;
	/* The helper files the template uses ("quant_weights", "moe_weights"),
	 * placed before it in this order; NULL past the last. */
	const char *helpers[KV_MAX_HELPERS];
} kv_plan;

void kv_plan_free(kv_plan *p);

#endif
