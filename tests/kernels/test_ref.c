/* The reference ops on small cases worked out by hand, f16/bf16 conversion
 * edge cases, and the errors the reference reports. Exact where the math is
 * exact; otherwise within 1e-6 of the hand value. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "runtime/drivers/ref/half.h"
#include "runtime/drivers/ref/ref_ops.h"

static int failures;

static void expect_near(const char *what, double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol)) {
		printf("FAIL %s: got %.9g want %.9g\n", what, got, want);
		failures++;
	}
}

static void expect_true(const char *what, bool cond)
{
	if (!cond) {
		printf("FAIL %s\n", what);
		failures++;
	}
}

/* The array forms (8 elements a step in vectors, then the scalar tail)
 * against the scalar forms: f32 -> f16 on every 251st bit pattern (every
 * exponent, both signs, NaNs, the subnormal and overflow boundaries in
 * passing) in runs of 1021, so the tail runs too; bf16 from little-endian
 * bytes at an odd address. */
static void test_half_arrays(void)
{
	enum { RUN = 1021 };
	float f[RUN];
	uint16_t h[RUN];
	int bad = 0;
	for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)RUN * 251) {
		for (int i = 0; i < RUN; i++)
			f[i] = f32_from_bits((uint32_t)(base + (uint64_t)i * 251));
		half_from_f32_array(f, h, RUN);
		for (int i = 0; i < RUN; i++)
			bad += h[i] != half_from_f32(f[i]);
	}
	const float edges[] = {65504.0f, 65519.99f, 65520.0f, ldexpf(1.0f, -14), ldexpf(1023.5f, -24),
			       ldexpf(1.0f, -25), -ldexpf(3.0f, -26), INFINITY, -INFINITY, NAN, 0.0f, -0.0f};
	enum { NE = sizeof edges / sizeof edges[0] };
	half_from_f32_array(edges, h, NE);
	for (int i = 0; i < NE; i++)
		bad += h[i] != half_from_f32(edges[i]);
	expect_true("half_from_f32_array equals half_from_f32", bad == 0);
	uint8_t bytes[2 * 37 + 1];
	for (int i = 0; i < (int)sizeof bytes; i++)
		bytes[i] = (uint8_t)(i * 97 + 11);
	bad = 0;
	bf16_le_to_f32_array(bytes + 1, f, 37);
	for (int i = 0; i < 37; i++) {
		uint32_t want = (uint32_t)(bytes[1 + 2 * i] | bytes[2 + 2 * i] << 8) << 16;
		bad += f32_bits(f[i]) != want;
	}
	expect_true("bf16_le_to_f32_array at an odd address", bad == 0);
}

static void test_half(void)
{
	expect_true("f16(1) = 0x3c00", half_from_f32(1.0f) == 0x3c00);
	expect_true("f16(65504) = max", half_from_f32(65504.0f) == 0x7bff);
	expect_true("f16(65520) ties up to inf", half_from_f32(65520.0f) == 0x7c00);
	expect_true("f16(2^-24) = min subnormal", half_from_f32(ldexpf(1.0f, -24)) == 0x0001);
	expect_true("f16(2^-25) ties to 0", half_from_f32(ldexpf(1.0f, -25)) == 0x0000);
	expect_true("f16(1.5*2^-25) rounds up", half_from_f32(ldexpf(3.0f, -26)) == 0x0001);
	expect_true("f16(1+2^-11) ties to even", half_from_f32(1.0f + ldexpf(1.0f, -11)) == 0x3c00);
	expect_true("f16(1+3*2^-11) ties to even", half_from_f32(1.0f + ldexpf(3.0f, -11)) == 0x3c02);
	expect_true("f16(-2) = 0xc000", half_from_f32(-2.0f) == 0xc000);
	expect_true("f16(nan) is nan", isnan(half_to_f32(half_from_f32(NAN))));
	int bad = 0;
	for (uint32_t b = 0; b < 0x10000; b++) {
		float f = half_to_f32((uint16_t)b);
		if (!isnan(f) && half_from_f32(f) != b)
			bad++;
	}
	expect_true("every f16 round-trips through f32", bad == 0);
	expect_true("bf16(1) = 0x3f80", bf16_from_f32(1.0f) == 0x3f80);
	expect_true("bf16 ties to even", bf16_from_f32(1.0f + ldexpf(1.0f, -8)) == 0x3f80);
	expect_near("bf16 -> f32", bf16_to_f32(0xc040), -3.0, 0);
	test_half_arrays();
}

static void test_linear_norm(void)
{
	float x[4] = {1, 2, 3, 4}, w[4] = {5, 6, 7, 8}, y[4];
	ref_matmul(x, w, y, 2, 2, 2); /* [[1,2],[3,4]] x [[5,6],[7,8]]^T */
	expect_near("matmul y00", y[0], 17, 0);
	expect_near("matmul y01", y[1], 23, 0);
	expect_near("matmul y10", y[2], 39, 0);
	expect_near("matmul y11", y[3], 53, 0);
	float a[2] = {3, 4}, one[2] = {1, 1}, n[2];
	ref_rms_norm(a, one, n, 1, 2, 0, 0.0f, 0);
	expect_near("rms_norm", n[0], 3 / sqrt(12.5), 1e-6);
	float zero[2] = {0, 0};
	ref_rms_norm(a, zero, n, 1, 2, 0, 0.0f, 1);
	expect_near("rms_norm offset 1", n[1], 4 / sqrt(12.5), 1e-6);
	float g4[4] = {3, 4, 1, 1}, w4[4] = {1, 1, 1, 1}, y4[4];
	ref_rms_norm(g4, w4, y4, 1, 4, 2, 0.0f, 0);
	expect_near("rms_norm group 2", y4[2], 1.0, 1e-6);
	ref_l2_norm(a, n, 1, 2, 0.0f);
	expect_near("l2_norm", n[0], 0.6, 1e-6);
	float z[2] = {0, 0};
	ref_gated_rms_norm(a, z, one, n, 1, 2, 0.0f);
	expect_near("gated_rms_norm with silu(0) = 0", n[0], 0.0, 0);
}

static void test_elementwise(void)
{
	float a[4] = {1, 2, 3, 4}, b2[2] = {10, 20}, y[4];
	ref_elementwise(IR_OP_ADD, a, b2, y, 4, (ref_bcast){REF_BCAST_TRAILING, 2}, 1.0f);
	expect_near("add trailing", y[2], 13, 0);
	ref_elementwise(IR_OP_MUL, a, b2, y, 4, (ref_bcast){REF_BCAST_LASTDIM, 2}, 1.0f);
	expect_near("mul lastdim", y[3], 80, 0);
	ref_elementwise(IR_OP_SCALE, a, NULL, y, 4, (ref_bcast){REF_BCAST_FULL, 0}, 0.5f);
	expect_near("scale by its value", y[1], 1.0, 0);
	ref_elementwise(IR_OP_SWIGLU, a, b2, y, 2, (ref_bcast){REF_BCAST_FULL, 0}, 1.0f);
	expect_near("swiglu", y[1], 20.0 * 2.0 / (1.0 + exp(-2.0)), 1e-5);
	expect_near("not elementwise", ref_elementwise(IR_OP_MATMUL, a, b2, y, 4, (ref_bcast){REF_BCAST_FULL, 0}, 1.0f), 0, 0);
	expect_near("softplus threshold", ref_softplus_f(25.0f), 25.0, 0);
	expect_near("softplus(0)", ref_softplus_f(0.0f), log(2.0), 1e-7);
	expect_near("silu(1)", ref_silu_f(1.0f), 1.0 / (1.0 + exp(-1.0)), 1e-7);
}

static void test_positional(void)
{
	float x[2] = {1, 0}, y[2];
	ref_rope(&(ref_rope_params){.rot_dim = 2, .base = 10000.0f}, x, y, 1, 1, 2, 1);
	expect_near("rope cos", y[0], cos(1.0), 1e-7);
	expect_near("rope sin", y[1], sin(1.0), 1e-7);
	float q[2] = {1, 1}, k[4] = {1, 0, 0, 1}, v[4] = {5, 6, 7, 8}, o[4];
	ref_error err;
	expect_true("attention ok", ref_attention(q, k, v, o, 1, 1, 1, 2, 2, 2, 0, 1.0f, &err));
	expect_near("attention of one key is its value", o[1], 6, 0);
	float q2[4] = {1, 0, 1, 0};
	expect_true("attention T=2", ref_attention(q2, k, v, o, 2, 1, 1, 2, 2, 2, 0, 1.0f, &err));
	double p0 = exp(1.0) / (exp(1.0) + 1.0);
	expect_near("attention causal row 1", o[2], p0 * 5 + (1 - p0) * 7, 1e-6);
	expect_true("attention past the cache fails",
		    !ref_attention(q, k, v, o, 1, 1, 1, 2, 2, 2, 2, 1.0f, &err) &&
			    strstr(err.msg, "exceed the cache"));
	float s[2] = {0, (float)log(3.0)};
	ref_softmax(s, o, 1, 2);
	expect_near("softmax", o[1], 0.75, 1e-7);
}

static void test_recurrent(void)
{
	float state[1] = {2}, x[2] = {3, 5}, w[2] = {10, 100}, y[2], ns[1];
	ref_conv1d_causal(x, state, w, y, ns, NULL, 2, 1, 2, false);
	expect_near("conv y0", y[0], 10 * 2 + 100 * 3, 0);
	expect_near("conv y1", y[1], 10 * 3 + 100 * 5, 0);
	expect_near("conv new state", ns[0], 5, 0);
	ref_conv1d_causal(x, state, w, y, state, NULL, 2, 1, 2, true);
	expect_near("conv silu, state in place", y[0], ref_silu_f(320), 0);
	expect_near("conv state in place", state[0], 5, 0);
	/* dk = dv = 1: S = 0.5, g = 0, k = 1, v = 2, beta = 0.5 -> delta 0.75, S 1.25 */
	float q[1] = {2}, k[1] = {1}, v[1] = {2}, g[1] = {0}, beta[1] = {0.5f}, S[1] = {0.5f}, o[1], S2[1];
	ref_gated_delta_rule(q, k, v, g, beta, S, o, S2, NULL, 1, 1, 1, 1, 1, 0.5f);
	expect_near("gdr state", S2[0], 1.25, 0);
	expect_near("gdr output", o[0], 1.25, 0);
	float g2[1] = {(float)log(0.5)};
	ref_gated_delta_rule(q, k, v, g2, beta, S, o, S2, NULL, 1, 1, 1, 1, 1, 0.5f);
	expect_near("gdr decay first", S2[0], 0.25 + (2 - 0.25) * 0.5, 1e-7);
}

static void test_routing(void)
{
	float x[4] = {1, 3, 3, 2}, vals[2];
	int32_t ids[2];
	ref_topk(x, ids, vals, 1, 4, 2);
	expect_true("topk ties to the lower index", ids[0] == 1 && ids[1] == 2 && vals[1] == 3);
	ref_argmax(x, ids, 1, 4);
	expect_true("argmax first max", ids[0] == 1);
	float logits[2] = {0, (float)log(3.0)}, wts[1];
	ref_route_params rp = {.k = 1, .norm_topk = false, .scoring = REF_SCORE_SOFTMAX, .scaling = 1.0f};
	ref_moe_route(&rp, logits, NULL, ids, wts, 1, 2);
	expect_true("moe_route id", ids[0] == 1);
	expect_near("moe_route weight", wts[0], 0.75, 1e-7);
	rp.norm_topk = true;
	ref_moe_route(&rp, logits, NULL, ids, wts, 1, 2);
	expect_near("moe_route renormalised", wts[0], 1.0, 0);
	float xe[1] = {2}, gate[2] = {1, -1}, up[2] = {1, 1}, down[2] = {1, 3}, ye[1];
	int32_t sel[2] = {1, 0};
	float sw[2] = {0.5f, 0.25f};
	ref_error err;
	expect_true("moe_experts ok", ref_moe_experts(xe, sel, sw, gate, up, down, ye, 1, 1, 1, 2, 2, 0.0f, &err));
	expect_near("moe_experts", ye[0], 0.5 * 3 * ref_silu_f(-2) * 2 + 0.25 * ref_silu_f(2) * 2, 1e-6);
	sel[1] = 2;
	expect_true("moe_experts bad id", !ref_moe_experts(xe, sel, sw, gate, up, down, ye, 1, 1, 1, 2, 2, 0.0f, &err) &&
						   strstr(err.msg, "selects expert 2"));
}

static void test_data(void)
{
	float table[4] = {1, 2, 3, 4}, y[4];
	int32_t ids[2] = {1, 0};
	ref_error err;
	expect_true("embed", ref_embed(table, ids, y, 2, 2, 2, &err) && y[0] == 3 && y[3] == 2);
	ids[1] = 2;
	expect_true("embed bad id", !ref_embed(table, ids, y, 2, 2, 2, &err) &&
					    strstr(err.msg, "expected 0 <= id < 2"));
	float x6[6] = {1, 2, 3, 4, 5, 6}, s[2];
	expect_true("slice", ref_slice(x6, s, 2, 3, 1, 1, 1, &err) && s[0] == 2 && s[1] == 5);
	expect_true("slice out of range", !ref_slice(x6, s, 2, 3, 1, 2, 2, &err));
	float c[8];
	ref_concat(x6, table, c, 2, 1, 2, 1); /* rows [1 | 1 2], [2 | 3 4] */
	expect_true("concat", c[0] == 1 && c[1] == 1 && c[3] == 2 && c[5] == 4);
	float r[8];
	ref_repeat_heads(table, r, 1, 2, 2, 2);
	expect_true("repeat_heads", r[2] == 1 && r[4] == 3 && r[7] == 4);
	float cache[6] = {0};
	expect_true("state_write at pos", ref_state_write_at(table, cache, 2, 3, 2, 1, &err) &&
						  cache[2] == 1 && cache[5] == 4 && cache[1] == 0);
	expect_true("state_write past the end", !ref_state_write_at(table, cache, 2, 3, 2, 2, &err));
}

int main(void)
{
	test_half();
	test_linear_norm();
	test_elementwise();
	test_positional();
	test_recurrent();
	test_routing();
	test_data();
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
