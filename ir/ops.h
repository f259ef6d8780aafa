/* The op table: operand and result counts, attribute schema, flags and the
 * shape/dtype rule of every op in kernels/ops.def, exactly as docs/ops.md
 * states them. Everything here is static data; nothing is allocated. */
#ifndef HALO_IR_OPS_H
#define HALO_IR_OPS_H

#include "ir/ir.h"

typedef enum {
	IR_ATTR_REQUIRED, /* must be given */
	IR_ATTR_DEFAULT,  /* the reader fills in the default when absent */
	IR_ATTR_OPTIONAL, /* may stay absent; the op's rule says what absence means */
} ir_attr_presence;

typedef struct {
	const char *name;
	ir_attr_kind kind;
	ir_attr_presence presence;
	int64_t dflt_i;             /* IR_ATTR_DEFAULT, kind INT */
	double dflt_f;              /* IR_ATTR_DEFAULT, kind FLOAT */
	const char *dflt_s;         /* IR_ATTR_DEFAULT, kind STR */
	int64_t min_i, max_i;       /* allowed range of an INT attribute */
	const char *const *choices; /* allowed values of a STR attribute, NULL-terminated */
} ir_attr_schema;

enum {
	IR_OPF_UNARY = 1u << 0,  /* elementwise, one operand */
	IR_OPF_BINARY = 1u << 1, /* elementwise, two operands with broadcast */
	IR_OPF_SINK = 1u << 2,   /* has an effect and no result (state_write) */
	IR_OPF_PURE = 1u << 3,   /* result depends on operands only; may be removed or moved */
	IR_OPF_EPILOGUE = 1u << 4, /* its kernels run a fused elementwise chain on the result */
	/* A recurrent op whose last declared result is the state after the
	 * step's last token: it takes one more, optional result, the state after
	 * each token ([T, ...state shape]), which a verify entry's state slots
	 * keep (passes/state_slots.c). */
	IR_OPF_STEPS = 1u << 5,
};

#define IR_OP_VARIADIC (-1) /* result count: the called block's output count */

typedef struct {
	ir_op op;
	int min_in, max_in; /* max_in < 0: any number (call) */
	int n_out;          /* IR_OP_VARIADIC for call */
	unsigned flags;
	int n_attrs;
	const ir_attr_schema *attrs;
} ir_op_info;

/* The table entry of op (static storage); NULL for an out-of-range op. */
const ir_op_info *ir_op_get(ir_op op);
/* The schema of attribute name of op, or NULL if op has no such attribute. */
const ir_attr_schema *ir_op_attr_schema(ir_op op, const char *name);

/* True when a node of op may have n results: the table's count, or one more
 * for an IR_OPF_STEPS op (its state after each token). */
bool ir_op_result_count_ok(ir_op op, int n);

bool ir_op_is_elementwise(ir_op op); /* unary or binary elementwise */
bool ir_op_is_unary(ir_op op);
bool ir_op_is_binary(ir_op op);
bool ir_op_is_sink(ir_op op);
bool ir_op_is_pure(ir_op op);
/* True when the op's kernels accept a fused epilogue (passes/fuse_*.c may
 * fold elementwise consumers into it): a contract with kernels/vulkan. */
bool ir_op_takes_epilogue(ir_op op);

/* Checks one attribute value against its schema (kind, range, choices);
 * the error names loc, the op and the attribute. */
bool ir_op_check_attr(ir_op op, const ir_attr *a, ir_loc loc, ir_error *err);

/* The shape/dtype rule: from the shapes and dtypes of n's inputs (read from
 * f->values, which must have shape_known set) computes each result's shape
 * and dtype into out_shapes / out_dtypes (room for n->n_out entries).
 * For call, the callee's body is inferred on a scratch copy; f and the callee
 * are not modified. Errors name n's loc, op, name and the mismatching shapes. */
bool ir_op_infer(const ir_module *m, const ir_func *f, const ir_node *n, ir_shape *out_shapes,
		 halo_dtype *out_dtypes, ir_error *err);

/* The longest key list a row of sink_attention (or its partial) streams:
 * the window's rows, at most the cache's N, then `more` (the ids' k, or the
 * entries' E, or 0). */
int64_t ir_sink_keys_max(int64_t window, int64_t N, int64_t more);

#endif
