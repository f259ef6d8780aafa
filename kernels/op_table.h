/* What kernels/ops.def says of each op, as lookups for the code that must
 * not depend on the IR library (kernel generation, the runtime): its name
 * and its elementwise class. Static storage; no allocation. */
#ifndef HALO_KERNELS_OP_TABLE_H
#define HALO_KERNELS_OP_TABLE_H

/* The most elementwise ops fused after a kernel's main op (its epilogue
 * chain): the kernels' limit (codegen/kernel_variant.h), which the fusion
 * passes respect, so a longer chain stays a dispatch of its own. */
#define HALO_MAX_EPILOGUE 4

/* ops.def's class column: OTHER, or how an elementwise op takes its operands. */
typedef enum {
	HALO_OP_OTHER,
	HALO_OP_UNARY,  /* one operand */
	HALO_OP_SCALED, /* one operand and the `value` attribute */
	HALO_OP_BINARY, /* two, the second broadcast against the first */
	HALO_OP_GATE,   /* two of one shape */
} halo_op_class;

/* The op's name ("add"), or "?" for a number outside ops.def. */
const char *halo_op_name(int op);
/* The op's class; HALO_OP_OTHER for a number outside ops.def. */
halo_op_class halo_op_class_of(int op);

#endif
