#include "codegen/glsl_compile.h"

#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct glsl_compiler {
	shaderc_compiler_t shaderc;
	spv_context spv;
	const cg_kernel_cache *cache;
	char identity[512]; /* the key's compiler part */
};

void glsl_compiler_use_cache(glsl_compiler *c, const cg_kernel_cache *cache)
{
	c->cache = HALO_GLSL_TOOLCHAIN[0] ? cache : NULL;
}

glsl_compiler *glsl_compiler_new(void)
{
	glsl_compiler *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->shaderc = shaderc_compiler_initialize();
	c->spv = spvContextCreate(SPV_ENV_VULKAN_1_1);
	/* The options run_shaderc and validate fix, with the toolchain. */
	snprintf(c->identity, sizeof c->identity, "shaderc %s; %s; vulkan1.1 spirv1.3 compute main; validated",
		 HALO_GLSL_TOOLCHAIN, spvSoftwareVersionDetailsString());
	if (!c->shaderc || !c->spv) {
		glsl_compiler_free(c);
		return NULL;
	}
	return c;
}

void glsl_compiler_free(glsl_compiler *c)
{
	if (!c)
		return;
	if (c->shaderc)
		shaderc_compiler_release(c->shaderc);
	if (c->spv)
		spvContextDestroy(c->spv);
	free(c);
}

void glsl_spirv_free(glsl_spirv *s)
{
	free(s->words);
	s->words = NULL;
	s->n_words = 0;
}

static bool validate(glsl_compiler *c, const glsl_spirv *s, const char *name, const char *stage,
		     char *err, size_t errlen)
{
	spv_diagnostic diag = NULL;
	spv_const_binary_t bin = {s->words, s->n_words};
	spv_result_t r = spvValidate(c->spv, &bin, &diag);
	if (r != SPV_SUCCESS)
		snprintf(err, errlen, "%s: SPIR-V validation failed%s%s: %s", name, stage[0] ? " " : "", stage,
			 diag && diag->error ? diag->error : "(no message)");
	spvDiagnosticDestroy(diag);
	return r == SPV_SUCCESS;
}

static bool run_shaderc(glsl_compiler *c, const char *source, const char *name,
			shaderc_optimization_level level, glsl_spirv *out, char *err, size_t errlen)
{
	shaderc_compile_options_t opt = shaderc_compile_options_initialize();
	if (!opt) {
		snprintf(err, errlen, "%s: shaderc: out of memory", name);
		return false;
	}
	shaderc_compile_options_set_target_env(opt, shaderc_target_env_vulkan,
					       shaderc_env_version_vulkan_1_1);
	shaderc_compile_options_set_target_spirv(opt, shaderc_spirv_version_1_3);
	shaderc_compile_options_set_optimization_level(opt, level);
	shaderc_compilation_result_t res = shaderc_compile_into_spv(
		c->shaderc, source, strlen(source), shaderc_compute_shader, name, "main", opt);
	shaderc_compile_options_release(opt);
	bool ok = res && shaderc_result_get_compilation_status(res) == shaderc_compilation_status_success;
	if (!ok) {
		snprintf(err, errlen, "%s: GLSL compilation failed: %s", name,
			 res ? shaderc_result_get_error_message(res) : "out of memory");
	} else {
		size_t bytes = shaderc_result_get_length(res);
		out->words = malloc(bytes);
		ok = out->words != NULL;
		if (ok) {
			memcpy(out->words, shaderc_result_get_bytes(res), bytes);
			out->n_words = bytes / sizeof(uint32_t);
		} else {
			snprintf(err, errlen, "%s: out of memory", name);
		}
	}
	shaderc_result_release(res);
	return ok;
}

/* Only the module that is returned needs to pass the validator, so the
 * optimised one is built and validated alone (half the glslang work of
 * validating both). When it fails, the unoptimised module is built too: a
 * template bug is then reported as itself, not as whatever the optimiser made
 * of it, and a module that is valid before optimisation names the optimiser. */
bool glsl_compile(glsl_compiler *c, const char *source, const char *name, bool optimize,
		  glsl_spirv *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	cg_kernel_key key = {c->identity, optimize ? "-O" : "-O0", source};
	uint8_t *hit;
	size_t hit_size;
	if (cg_kernel_cache_get(c->cache, &key, &hit, &hit_size)) {
		if (hit_size % sizeof(uint32_t) == 0) {
			out->words = (uint32_t *)hit;
			out->n_words = hit_size / sizeof(uint32_t);
			return true;
		}
		free(hit);
	}
	shaderc_optimization_level level =
		optimize ? shaderc_optimization_level_performance : shaderc_optimization_level_zero;
	if (!run_shaderc(c, source, name, level, out, err, errlen))
		return false;
	if (validate(c, out, name, optimize ? "after optimisation" : "", err, errlen)) {
		cg_kernel_cache_put(c->cache, &key, (const uint8_t *)out->words, out->n_words * sizeof(uint32_t));
		return true;
	}
	glsl_spirv_free(out);
	if (!optimize)
		return false;
	glsl_spirv plain;
	char why[1024];
	if (run_shaderc(c, source, name, shaderc_optimization_level_zero, &plain, why, sizeof(why)) &&
	    !validate(c, &plain, name, "before optimisation", why, sizeof(why)))
		snprintf(err, errlen, "%s", why);
	glsl_spirv_free(&plain);
	return false;
}
