/* The HIP dialect's codegen (codegen/emit_hip.c, codegen/hip_compile.c):
 * for a variant of every template with a twin under kernels/hip (several
 * tiles, fused epilogues, a broadcast operand, a scaled op), the emitted
 * source compiles with clang-19 for both targets, and
 *  - gfx1151: an AMDGPU HSA code object, code object v5 (ABI version 3),
 *    e_flags naming gfx1151, wave32 (the disassembly has no wave64 code);
 *  - sm_90: PTX for `.target sm_90` with the entry `halo_main`, no f64
 *    arithmetic (a `1.0` literal in a template would be a double), no call
 *    into a device library the compile does not link;
 *  - the same source gives the same bytes twice (bundles are deterministic).
 * The code runs nowhere here: the CUDA twin's correctness is the H200's to
 * show (tools/gpu, README). Skipped (77) without clang-19. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/hip_compile.h"
#include "codegen/kernel_variant.h"
#include "tests/check.h"

/* ELF64 header fields of an AMDGPU code object. */
enum { EI_OSABI = 7, EI_ABIVERSION = 8, E_MACHINE = 18, E_FLAGS = 48 };
enum { ELFOSABI_AMDGPU_HSA = 64, EM_AMDGPU = 224, EF_AMDGPU_MACH_GFX1151 = 0x4a, COV5_ABI = 3 };

static void check_hsaco(const char *what, const uint8_t *o, size_t n)
{
	CHECK(n > 64 && memcmp(o, "\x7f" "ELF", 4) == 0 && o[4] == 2, "%s: not an ELF64 object", what);
	if (n <= 64)
		return;
	uint16_t machine = (uint16_t)(o[E_MACHINE] | o[E_MACHINE + 1] << 8);
	uint32_t flags = (uint32_t)o[E_FLAGS] | (uint32_t)o[E_FLAGS + 1] << 8;
	CHECK(o[EI_OSABI] == ELFOSABI_AMDGPU_HSA && o[EI_ABIVERSION] == COV5_ABI,
	      "%s: OS/ABI %u version %u, want AMDGPU HSA (64) code object v5 (3)", what, o[EI_OSABI], o[EI_ABIVERSION]);
	CHECK(machine == EM_AMDGPU && (flags & 0xff) == EF_AMDGPU_MACH_GFX1151, "%s: machine %u flags 0x%x", what,
	      machine, flags);
}

static void check_ptx(const char *what, const char *ptx)
{
	CHECK(strstr(ptx, ".target sm_90") != NULL, "%s: PTX is not for sm_90", what);
	CHECK(strstr(ptx, ".entry halo_main(") != NULL, "%s: PTX has no entry halo_main", what);
	CHECK(strstr(ptx, ".f64") == NULL, "%s: PTX computes in f64 (a double literal in the template?)", what);
}

static void compile_twice(const char *what, const char *src, cg_gpu_arch arch)
{
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	char err[2048];
	bool ok = cg_hip_compile(arch, src, what, &a, &na, err, sizeof err);
	CHECK(ok, "%s: %s", what, err);
	ok = ok && cg_hip_compile(arch, src, what, &b, &nb, err, sizeof err);
	CHECK(!a || (b && na == nb && memcmp(a, b, na) == 0), "%s: two compiles differ", what);
	if (a && arch == CG_ARCH_GFX1151)
		check_hsaco(what, a, na);
	else if (a)
		check_ptx(what, (const char *)a);
	free(a);
	free(b);
}

static void check_desc(const char *what, kv_desc d)
{
	kv_tiles t[8];
	int n = kv_variant_space(&d, t, 8);
	for (int i = 0; i < n; i++) {
		d.tiles = t[i];
		kv_kernel k;
		char err[512];
		if (!kernel_variant_build(&d, &k, err, sizeof err)) {
			CHECK(false, "%s: %s", what, err);
			continue;
		}
		CHECK(k.hip != NULL, "%s: no HIP source for %s", what, k.signature);
		if (k.hip) {
			compile_twice(k.signature, k.hip, CG_ARCH_GFX1151);
			compile_twice(k.signature, k.hip, CG_ARCH_SM90);
		}
		kv_kernel_free(&k);
	}
}

int main(void)
{
	if (system("clang-19 --version >/dev/null 2>&1") != 0) {
		printf("SKIP: clang-19 is not installed\n");
		return 77;
	}
	kv_desc rms = {.op = IR_OP_RMS_NORM, .t_max = 8, .n_epi = 1};
	rms.u.rms_norm.rows_per_t = 2;
	rms.u.rms_norm.D = 256;
	rms.u.rms_norm.group = 128;
	rms.u.rms_norm.eps = 1e-6f;
	rms.u.rms_norm.offset = 1;
	rms.epi[0] = (kv_elem_op){.op = IR_OP_MUL, .bcast = KV_BCAST_TRAILING, .bcast_n = 256};
	check_desc("rms_norm", rms);

	kv_desc ew = {.op = IR_OP_SWIGLU, .t_max = 64, .n_epi = 2};
	ew.u.elementwise.numel = (ir_dim){.coef_T = 512, .c = 0};
	ew.u.elementwise.main = (kv_elem_op){.op = IR_OP_SWIGLU};
	ew.epi[0] = (kv_elem_op){.op = IR_OP_SCALE, .value = 0.125f};
	ew.epi[1] = (kv_elem_op){.op = IR_OP_SOFTPLUS};
	check_desc("swiglu", ew);
	if (check_failures)
		return 1;
	printf("hip codegen: ok\n");
	return 0;
}
