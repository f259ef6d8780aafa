/* Elementwise ops: binary with broadcast, unary activations, swiglu. */
#include "runtime/drivers/ref/ref_ops.h"

#include <math.h>

int64_t ref_bcast_index(ref_bcast bc, int64_t i)
{
	switch (bc.kind) {
	case REF_BCAST_TRAILING:
		return i % bc.n;
	case REF_BCAST_LASTDIM:
		return i / bc.n;
	case REF_BCAST_FULL:
		break;
	}
	return i;
}

float ref_sigmoid_f(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

float ref_silu_f(float x)
{
	return x * ref_sigmoid_f(x);
}

float ref_softplus_f(float x)
{
	return x > 20.0f ? x : log1pf(expf(x));
}

/* The names kernels/ops.def's expressions call. */
#define silu_f ref_silu_f
#define sigmoid_f ref_sigmoid_f
#define softplus_f ref_softplus_f
#define exp_f expf

/* One loop per elementwise op, from its ops.def expression. */
enum {
#define IR_OP(id, name, cls, expr) REF_OP_##id,
#include "kernels/ops.def"
#undef IR_OP
};

#define EW_OTHER(id, expr)
/* Unary ops, SCALED ones (s = their `value`) among them. */
#define EW_UNARY(id, expr)                                 \
	case REF_OP_##id:                                  \
		for (int64_t i = 0; i < n; i++) {          \
			float a = x[i], s = value;         \
			(void)s;                           \
			y[i] = expr;                       \
		}                                          \
		return true;
#define EW_SCALED EW_UNARY
#define EW_BINARY(id, expr)                                \
	case REF_OP_##id:                                  \
		for (int64_t i = 0; i < n; i++) {          \
			float a = x[i];                    \
			float b = other[ref_bcast_index(bc, i)]; \
			y[i] = expr;                       \
		}                                          \
		return true;
#define EW_GATE EW_BINARY

bool ref_elementwise(int op, const float *x, const float *other, float *y, int64_t n, ref_bcast bc, float value)
{
	switch (op) {
#define IR_OP(id, name, cls, expr) EW_##cls(id, expr)
#include "kernels/ops.def"
#undef IR_OP
	default:
		return false;
	}
}
