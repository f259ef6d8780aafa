/* The generic elementwise kernel against the reference: every unary and
 * binary op, the three broadcast forms, element counts affine in T, and
 * chains of fused ops.
 *
 * Tolerance: max |got - want| / max(|want|, 1e-2) <= 1e-5. One to five f32
 * operations per element; GPU exp/log are within a few ulps of libm's
 * (clamp_max and clamp_abs only choose: exact). */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

static bool is_binary(ir_op op)
{
	return op == IR_OP_ADD || op == IR_OP_SUB || op == IR_OP_MUL || op == IR_OP_SWIGLU;
}

static size_t other_numel(const kv_elem_op *e, size_t n)
{
	if (e->bcast == KV_BCAST_TRAILING)
		return (size_t)e->bcast_n;
	if (e->bcast == KV_BCAST_LASTDIM)
		return n / (size_t)e->bcast_n;
	return n;
}

/* main op over a [T x per_t + c] elements, then the chain. */
static bool ew_case(harness *h, kv_elem_op main_op, ir_dim numel, int64_t T, int n_epi,
		    const kv_elem_op *epi, uint32_t *seed)
{
	kv_desc d = {.op = main_op.op, .t_max = 16, .n_epi = n_epi};
	d.u.elementwise.numel = numel;
	d.u.elementwise.main = main_op;
	for (int j = 0; j < n_epi; j++)
		d.epi[j] = epi[j];
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	size_t n = (size_t)(numel.coef_T * T + numel.c);
	float *buf[2 + KV_MAX_EPILOGUE] = {0};
	hop ops[3 + KV_MAX_EPILOGUE];
	int nops = 0;
	float *a = buf[0] = alloc_floats(n);
	fill_random(a, n, 3.0f, seed);
	ops[nops++] = (hop){a, n * 4, false};
	float *b = NULL;
	if (is_binary(main_op.op)) {
		size_t nb = other_numel(&main_op, n);
		b = buf[1] = alloc_floats(nb);
		fill_random(b, nb, 3.0f, seed);
		ops[nops++] = (hop){b, nb * 4, false};
	}
	float *extra[KV_MAX_EPILOGUE] = {0};
	for (int j = 0; j < n_epi; j++)
		if (is_binary(epi[j].op)) {
			size_t ne = other_numel(&epi[j], n);
			extra[j] = buf[2 + j] = alloc_floats(ne);
			fill_random(extra[j], ne, 2.0f, seed);
			ops[nops++] = (hop){extra[j], ne * 4, false};
		}
	float *y = alloc_floats(n), *want = alloc_floats(n);
	ops[nops++] = (hop){y, n * 4, true};
	bool ok = hk_run(h, &k, ops, nops, (uint32_t)T, 0);
	if (ok) {
		for (size_t i = 0; i < n; i++)
			want[i] = a[i];
		ref_apply_elem(&main_op, want, b, (int64_t)n);
		for (int j = 0; j < n_epi; j++)
			ref_apply_elem(&epi[j], want, extra[j], (int64_t)n);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)T);
		ok = check_close(what, y, want, n, 1e-5, 1e-2);
	}
	for (int j = 0; j < 2 + KV_MAX_EPILOGUE; j++)
		free(buf[j]);
	free(y), free(want);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 31337;
	bool ok = true;
	const ir_op unary[] = {IR_OP_SILU, IR_OP_SIGMOID, IR_OP_SOFTPLUS, IR_OP_EXP, IR_OP_NEG};
	for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++)
		ok &= ew_case(h, (kv_elem_op){.op = unary[i]}, (ir_dim){129, 0}, 3, 0, NULL, &seed);
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_SCALE, .value = -1.75f}, (ir_dim){7, 0}, 5, 0, NULL,
		      &seed);
	/* DeepSeek V4's clamps, at a value inside the inputs' range |a| <= 3 so
	 * that each side fires */
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_CLAMP_MAX, .value = 1.25f}, (ir_dim){129, 0}, 3, 0, NULL, &seed);
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_CLAMP_ABS, .value = 1.25f}, (ir_dim){129, 0}, 3, 0, NULL, &seed);
	const ir_op binary[] = {IR_OP_ADD, IR_OP_SUB, IR_OP_MUL, IR_OP_SWIGLU};
	for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++)
		ok &= ew_case(h, (kv_elem_op){.op = binary[i], .bcast = KV_BCAST_FULL}, (ir_dim){33, 0},
			      4, 0, NULL, &seed);
	/* b over the trailing dims ([hv] bias on [T, hv]) and b with last dim 1 */
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_ADD, .bcast = KV_BCAST_TRAILING, .bcast_n = 12},
		      (ir_dim){12, 0}, 7, 0, NULL, &seed);
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_MUL, .bcast = KV_BCAST_LASTDIM, .bcast_n = 48},
		      (ir_dim){48, 0}, 3, 0, NULL, &seed);
	/* an element count with no T (a weight: exp(a_log)) and one affine in T */
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_EXP}, (ir_dim){0, 9}, 2, 0, NULL, &seed);
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_NEG}, (ir_dim){5, 3}, 11, 0, NULL, &seed);
	/* GDN gate chain: softplus(a + dt_bias) * exp(a_log), negated */
	kv_elem_op chain[] = {
		{.op = IR_OP_SOFTPLUS},
		{.op = IR_OP_MUL, .bcast = KV_BCAST_TRAILING, .bcast_n = 4},
		{.op = IR_OP_NEG},
	};
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_ADD, .bcast = KV_BCAST_TRAILING, .bcast_n = 4},
		      (ir_dim){4, 0}, 9, 3, chain, &seed);
	/* shared expert: s_out * sigmoid(s_gl) then + routed, 4 fused ops */
	kv_elem_op chain2[] = {
		{.op = IR_OP_ADD, .operand = 1, .bcast = KV_BCAST_FULL},
		{.op = IR_OP_SWIGLU, .operand = 0, .bcast = KV_BCAST_FULL},
		{.op = IR_OP_SUB, .operand = 1, .bcast = KV_BCAST_FULL},
		{.op = IR_OP_SCALE, .value = 0.5f},
	};
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_MUL, .bcast = KV_BCAST_LASTDIM, .bcast_n = 64},
		      (ir_dim){64, 0}, 2, 4, chain2, &seed);
	/* the clamps in chains, as DeepSeek V4's shared expert uses them:
	 * silu(min(g, L)) * u (clamp_max, then swiglu as its epilogue), and
	 * clamp_abs as an epilogue itself, followed by a scale */
	kv_elem_op chain3[] = {
		{.op = IR_OP_SWIGLU, .operand = 0, .bcast = KV_BCAST_FULL},
	};
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_CLAMP_MAX, .value = 0.8f}, (ir_dim){40, 0}, 3, 1, chain3, &seed);
	kv_elem_op chain4[] = {
		{.op = IR_OP_CLAMP_ABS, .value = 0.5f},
		{.op = IR_OP_SCALE, .value = 3.0f},
	};
	ok &= ew_case(h, (kv_elem_op){.op = IR_OP_ADD, .bcast = KV_BCAST_FULL}, (ir_dim){40, 0}, 3, 2, chain4, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
