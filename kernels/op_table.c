#include "kernels/op_table.h"

static const char *const names[] = {
#define IR_OP(id, name, cls, expr) name,
#include "kernels/ops.def"
#undef IR_OP
};

static const halo_op_class classes[] = {
#define IR_OP(id, name, cls, expr) HALO_OP_##cls,
#include "kernels/ops.def"
#undef IR_OP
};

enum { N_OPS = (int)(sizeof names / sizeof *names) };

const char *halo_op_name(int op)
{
	return op >= 0 && op < N_OPS ? names[op] : "?";
}

halo_op_class halo_op_class_of(int op)
{
	return op >= 0 && op < N_OPS ? classes[op] : HALO_OP_OTHER;
}
