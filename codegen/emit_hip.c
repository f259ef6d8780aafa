/* HIP-dialect source for a kernel plan (emit_hip.h). */
#include "codegen/emit_hip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit_kernel.h"
#include "kernels/gpu_target.h"

/* A kernels/hip file's text above its `// @struct` line goes to file
 * scope (shared memory), the rest into the kernel's struct; a file without
 * the line is all members. */
#define STRUCT_MARK "// @struct\n"

static void split(const char *text, strbuf *file_scope, strbuf *members)
{
	const char *at = strstr(text, STRUCT_MARK);
	if (!at) {
		sb_printf(members, "%s", text);
		return;
	}
	sb_printf(file_scope, "%.*s", (int)(at - text), text);
	sb_printf(members, "%s", at + strlen(STRUCT_MARK));
}

char *kv_emit_hip(const kv_desc *d, const kv_plan *p, const char *signature, char *err, size_t errlen)
{
	const kernel_source *compat = kv_source_file("halo_hip.h"), *prelude = kv_source_file("prelude.hip");
	const kernel_source *tmpl = kv_source_of(p->template, ".hip");
	const kernel_source *cols = p->cols ? kv_source_file("matvec_cols.hip") : NULL;
	const kernel_source *helper[KV_MAX_HELPERS] = {NULL};
	const struct {
		bool wanted;
		const kernel_source *found;
		const char *name, *suffix;
	} files[] = {{true, compat, "halo_hip.h", ""},
		     {true, prelude, "prelude.hip", ""},
		     {true, tmpl, p->template, ".hip"},
		     {p->cols != 0, cols, "matvec_cols.hip", ""}};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		if (files[i].wanted && !files[i].found) {
			snprintf(err, errlen, "kernel template '%s' has no HIP twin (kernels/hip/%s%s)", p->template,
				 files[i].name, files[i].suffix);
			return NULL;
		}
	for (int i = 0; i < KV_MAX_HELPERS && p->helpers[i]; i++)
		if (!(helper[i] = kv_source_of(p->helpers[i], ".hip"))) {
			snprintf(err, errlen, "kernel template '%s' has no HIP twin (kernels/hip/%s.hip)", p->template,
				 p->helpers[i]);
			return NULL;
		}
	strbuf defs = {0}, scope = {0}, members = {0}, tail = {0}, src = {0};
	kv_emit_consts(&defs, &kv_dialect_hip, p);
	if (cols)
		kv_emit_matvec_paths(&defs, &tail, p, cols->text);
	split(prelude->text, &scope, &members);
	kv_emit_fused(&members, &kv_dialect_hip, d, p);
	for (int i = 0; i < KV_MAX_HELPERS && helper[i]; i++) /* the GLSL emitter's order */
		split(helper[i]->text, &scope, &members);
	split(tmpl->text, &scope, &members);
	sb_printf(&src, "// halo kernel: %s\n#pragma clang force_cuda_host_device begin\n%s\n%s%s\n", signature,
		  compat->text, defs.s ? defs.s : "", scope.s ? scope.s : "");
	/* Every member function is inlined whatever its size: one called out
	 * of line (matvec's per-column paths, the sm_90 matmul_coopmat's main)
	 * takes the struct by address, which then lives in private memory.
	 * The struct takes the step's T as a template argument, TS (0: the
	 * launch's T, prelude.hip's STEP_T). A matvec also gets the entry
	 * halo_main_t1, TS = 1: HIP has no specialisation constants, and with T
	 * known the compiler keeps only the T = 1 path's registers (the generic
	 * entry holds every columns-per-group path's: 255 a thread on sm_90,
	 * 12% occupancy). The backends launch it for steps of one token. */
	sb_printf(&src, "#pragma clang attribute push(__attribute__((always_inline)), apply_to = function)\n"
			"template <uint TS> struct halo_kernel {\nhalo_args args;\n%s\n%s};\n"
			"#pragma clang attribute pop\n",
		  members.s ? members.s : "", tail.s ? tail.s : "");
	sb_printf(&src, "#pragma clang force_cuda_host_device end\n\n"
			"HALO_GLOBAL void HALO_LAUNCH_BOUNDS(LS_X * LS_Y) " HALO_ENTRY "(halo_args a)\n"
			"{\n\thalo_kernel<0u> k{a};\n\tk.main();\n}\n");
	if (cols)
		sb_printf(&src, "HALO_GLOBAL void HALO_LAUNCH_BOUNDS(LS_X * LS_Y) " HALO_ENTRY_T1 "(halo_args a)\n"
				"{\n\thalo_kernel<1u> k{a};\n\tk.main();\n}\n");
	free(defs.s);
	free(scope.s);
	free(members.s);
	free(tail.s);
	return sb_take(&src);
}
