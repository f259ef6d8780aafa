/* Kernel selection (codegen/select_kernels.c) for dispatches that read
 * quantized tensors, without a device: matmul's [N, K] weight, the MoE
 * experts and an embedding table in q8_0 / q4_k / f8e4m3_b128 get
 * candidates whose keys name the dtype, and a quantized operand anywhere
 * else (matmul's x, an embedding's output) is refused with a message naming
 * the dispatch, the op and the dtype. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/select_kernels.h"
#include "ir/ir.h"

static int failures;

static void expect(const char *what, bool cond)
{
	printf("%s %s\n", cond ? "ok  " : "FAIL", what);
	failures += !cond;
}

static halo_tensor_ref ref2(halo_space sp, halo_dtype t, halo_affine a, int64_t b)
{
	halo_tensor_ref r = {.space = sp, .dtype = t, .rank = 2};
	r.dim[0] = a;
	r.dim[1] = (halo_affine){0, b};
	return r;
}

/* One entry of t_max tokens with dispatch d; returns whether selection
 * succeeded, err its message, and (on success) key 0 in key. */
static bool select_one(halo_dispatch d, int64_t t_max, char *err, size_t errlen, char *key, size_t keylen)
{
	halo_entry e = {.name = "step", .t_min = 1, .t_max = t_max, .n_dispatch = 1, .dispatch = &d};
	halo_manifest m = {.model = "q", .has_kernels = true, .has_target = {[HALO_TARGET_VULKAN] = true},
			   .n_entries = 1, .entries = &e};
	cg_kernel_sections code;
	bool ok = cg_select_kernels(&m, m.has_target, false, &code, err, errlen);
	if (ok && m.n_kernels > 0)
		snprintf(key, keylen, "%s", m.kernels[0].key);
	for (int i = 0; i < m.n_kernels; i++) {
		free(m.kernels[i].name), free(m.kernels[i].signature), free(m.kernels[i].key);
		free(m.kernels[i].tile);
	}
	for (int i = 0; i < m.n_choices; i++)
		free(m.choices[i].key);
	free(m.kernels), free(m.choices);
	cg_kernel_sections_free(&code);
	return ok;
}

int main(void)
{
	char err[512], key[256];
	halo_affine T = {1, 0};
	halo_dtype types[] = {HALO_Q8_0, HALO_Q4_K, HALO_F8E4M3_B128, HALO_MXFP4};
	for (size_t q = 0; q < sizeof types / sizeof *types; q++) {
		halo_dtype wt = types[q];
		halo_dispatch mm = {.node = "proj", .op = IR_OP_MATMUL, .n_in = 2, .n_out = 1};
		mm.operand[0] = ref2(HALO_SPACE_ACT, HALO_F32, T, 512);
		mm.operand[1] = ref2(HALO_SPACE_WEIGHT, wt, (halo_affine){0, 64}, 512);
		mm.operand[2] = ref2(HALO_SPACE_ACT, HALO_F32, T, 64);
		bool ok = select_one(mm, 8, err, sizeof err, key, sizeof key);
		char want[128];
		snprintf(want, sizeof want, "matvec K=512 N=64 w=%s tmax=8", halo_dtype_name(wt));
		expect(ok ? key : err, ok && !strcmp(key, want));
		ok = select_one(mm, 64, err, sizeof err, key, sizeof key);
		snprintf(want, sizeof want, "matmul K=512 N=64 w=%s tmax=64", halo_dtype_name(wt));
		expect(ok ? key : err, ok && !strcmp(key, want));

		/* a quantized x: refused */
		halo_dispatch bad = mm;
		bad.operand[0].dtype = wt;
		ok = select_one(bad, 8, err, sizeof err, key, sizeof key);
		expect(ok ? "quantized x selected" : err,
		       !ok && strstr(err, "dispatch 'proj': matmul operand 0 is") && strstr(err, halo_dtype_name(wt)));

		/* an embedding table: the gather reads it as stored */
		halo_dispatch emb = {.node = "embed", .op = IR_OP_EMBED, .n_in = 2, .n_out = 1};
		emb.operand[0] = ref2(HALO_SPACE_WEIGHT, wt, (halo_affine){0, 100}, 256);
		emb.operand[1] = (halo_tensor_ref){.space = HALO_SPACE_ACT, .dtype = HALO_I32, .rank = 1, .dim = {T}};
		emb.operand[2] = ref2(HALO_SPACE_ACT, HALO_F32, T, 256);
		ok = select_one(emb, 8, err, sizeof err, key, sizeof key);
		snprintf(want, sizeof want, "embed V=100 H=256 w=%s tmax=8", halo_dtype_name(wt));
		expect(ok ? key : err, ok && !strcmp(key, want));
		/* a quantized output: refused */
		emb.operand[2].dtype = wt;
		ok = select_one(emb, 8, err, sizeof err, key, sizeof key);
		expect(ok ? "quantized embedding output selected" : err,
		       !ok && strstr(err, "dispatch 'embed': embed operand 2"));
	}
	printf("%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
