/* GLSL for a kernel plan (emit_glsl.h). */
#include "codegen/emit_glsl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit_kernel.h"

char *kv_emit_glsl(const kv_desc *d, const kv_plan *p, const char *signature, const char **file, char *err,
		   size_t errlen)
{
	const kernel_source *tmpl = kv_source_of(p->template, ".comp"), *prelude = kv_source_file("prelude.glsl");
	const kernel_source *cols = p->cols ? kv_source_file("matvec_cols.glsl") : NULL;
	const kernel_source *helper[KV_MAX_HELPERS] = {NULL};
	const struct {
		bool wanted;
		const kernel_source *found;
		const char *name;
	} files[] = {{true, tmpl, p->template},
		     {true, prelude, "prelude.glsl"},
		     {p->cols != 0, cols, "matvec_cols.glsl"}};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		if (files[i].wanted && !files[i].found) {
			snprintf(err, errlen, "GLSL template file for '%s' is not embedded", files[i].name);
			return NULL;
		}
	for (int i = 0; i < KV_MAX_HELPERS && p->helpers[i]; i++)
		if (!(helper[i] = kv_source_of(p->helpers[i], ".glsl"))) {
			snprintf(err, errlen, "GLSL helper file '%s' is not embedded", p->helpers[i]);
			return NULL;
		}
	strbuf defs = {0}, gen = {0}, tail = {0}, src = {0};
	kv_emit_consts(&defs, &kv_dialect_glsl, p);
	if (cols)
		kv_emit_matvec_paths(&defs, &tail, p, cols->text);
	kv_emit_fused(&gen, &kv_dialect_glsl, d, p);
	for (int i = 0; i < KV_MAX_HELPERS && helper[i]; i++)
		sb_printf(&gen, "%s", helper[i]->text);
	sb_printf(&src, "#version 450\n// halo kernel: %s\n%s", signature, defs.s ? defs.s : "");
	sb_printf(&src, "%s\n%s\n%s\n%s", prelude->text, gen.s ? gen.s : "", tmpl->text, tail.s ? tail.s : "");
	free(defs.s);
	free(gen.s);
	free(tail.s);
	*file = tmpl->name;
	return sb_take(&src);
}
