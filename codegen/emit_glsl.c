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
	const kernel_source *lib = p->library ? kv_source_of(p->library, ".glsl") : NULL;
	const kernel_source *quant = p->quant ? kv_source_of(p->quant, ".glsl") : NULL;
	const struct {
		bool wanted;
		const kernel_source *found;
		const char *name;
	} files[] = {{true, tmpl, p->template},
		     {true, prelude, "prelude.glsl"},
		     {p->cols != 0, cols, "matvec_cols.glsl"},
		     {p->library != NULL, lib, p->library},
		     {p->quant != NULL, quant, p->quant}};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		if (files[i].wanted && !files[i].found) {
			snprintf(err, errlen, "GLSL template file for '%s' is not embedded", files[i].name);
			return NULL;
		}
	strbuf defs = {0}, gen = {0}, tail = {0}, src = {0};
	kv_emit_consts(&defs, &kv_dialect_glsl, p);
	if (cols)
		kv_emit_matvec_paths(&defs, &tail, p, cols->text);
	kv_emit_fused(&gen, &kv_dialect_glsl, d, p);
	if (quant)
		sb_printf(&gen, "%s", quant->text);
	if (lib)
		sb_printf(&gen, "%s", lib->text);
	sb_printf(&src, "#version 450\n// halo kernel: %s\n%s", signature, defs.s ? defs.s : "");
	sb_printf(&src, "%s\n%s\n%s\n%s", prelude->text, gen.s ? gen.s : "", tmpl->text, tail.s ? tail.s : "");
	free(defs.s);
	free(gen.s);
	free(tail.s);
	*file = tmpl->name;
	return sb_take(&src);
}
