/* Elementwise ops: binary with broadcast, unary activations, swiglu. */
#include "runtime/ref/ref_ops.h"

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

void ref_add(const float *a, const float *b, float *y, int64_t n, ref_bcast bc)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = a[i] + b[ref_bcast_index(bc, i)];
}

void ref_sub(const float *a, const float *b, float *y, int64_t n, ref_bcast bc)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = a[i] - b[ref_bcast_index(bc, i)];
}

void ref_mul(const float *a, const float *b, float *y, int64_t n, ref_bcast bc)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = a[i] * b[ref_bcast_index(bc, i)];
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

void ref_silu(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = ref_silu_f(x[i]);
}

void ref_sigmoid(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = ref_sigmoid_f(x[i]);
}

void ref_softplus(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = ref_softplus_f(x[i]);
}

void ref_exp(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = expf(x[i]);
}

void ref_neg(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = -x[i];
}

void ref_scale(const float *x, float *y, int64_t n, float value)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] * value;
}

void ref_swiglu(const float *gate, const float *up, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = ref_silu_f(gate[i]) * up[i];
}
