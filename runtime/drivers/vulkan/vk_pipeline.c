#include "runtime/drivers/vulkan/vk_pipeline.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool create_set_layout(vk_ctx *ctx, uint32_t n, VkDescriptorSetLayout *out, vk_error *err)
{
	VkDescriptorSetLayoutBinding *b = calloc(n ? n : 1, sizeof *b);
	if (!b)
		return vk_failf(err, "vkCreateDescriptorSetLayout: out of memory");
	for (uint32_t i = 0; i < n; i++)
		b[i] = (VkDescriptorSetLayoutBinding){
			.binding = i,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	VkDescriptorSetLayoutCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = n,
		.pBindings = b,
	};
	VkResult r = vkCreateDescriptorSetLayout(ctx->device, &ci, NULL, out);
	free(b);
	return r == VK_SUCCESS || vk_fail(err, r, "vkCreateDescriptorSetLayout");
}

static bool create_layout(vk_ctx *ctx, vk_pipeline *p, vk_error *err)
{
	VkPushConstantRange range = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.offset = 0,
		.size = p->push_size,
	};
	VkPipelineLayoutCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pSetLayouts = &p->set_layout,
		.pushConstantRangeCount = p->push_size ? 1 : 0,
		.pPushConstantRanges = &range,
	};
	VkResult r = vkCreatePipelineLayout(ctx->device, &ci, NULL, &p->layout);
	return r == VK_SUCCESS || vk_fail(err, r, "vkCreatePipelineLayout");
}

/* A compute pipeline of p's module and layout; spec_t > 0 sets the kernels'
 * T_SPEC specialization constant (constant_id 0, kernels/vulkan/prelude.glsl)
 * to it. A module without the constant ignores the map entry. */
static bool create_compute(vk_ctx *ctx, const vk_pipeline *p, uint32_t spec_t, VkPipeline *out, vk_error *err)
{
	VkSpecializationMapEntry entry = {.constantID = 0, .offset = 0, .size = sizeof(uint32_t)};
	VkSpecializationInfo spec = {
		.mapEntryCount = 1,
		.pMapEntries = &entry,
		.dataSize = sizeof spec_t,
		.pData = &spec_t,
	};
	VkComputePipelineCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.flags = ctx->pipeline_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
		.stage =
		    {
			.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
			.stage = VK_SHADER_STAGE_COMPUTE_BIT,
			.module = p->module,
			.pName = "main",
			.pSpecializationInfo = spec_t ? &spec : NULL,
		},
		.layout = p->layout,
	};
	VkResult r = vkCreateComputePipelines(ctx->device, VK_NULL_HANDLE, 1, &ci, NULL, out);
	return r == VK_SUCCESS || vk_fail(err, r, "vkCreateComputePipelines");
}

static bool create_pipeline(vk_ctx *ctx, const uint32_t *spirv, size_t n_words, vk_pipeline *p,
			    vk_error *err)
{
	VkShaderModuleCreateInfo mi = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = n_words * sizeof *spirv,
		.pCode = spirv,
	};
	VkResult r = vkCreateShaderModule(ctx->device, &mi, NULL, &p->module);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkCreateShaderModule");
	return create_compute(ctx, p, 0, &p->pipeline, err);
}

bool vk_pipeline_create(vk_ctx *ctx, const uint32_t *spirv, size_t n_words, uint32_t n_bindings,
			uint32_t push_size, vk_pipeline *out, vk_error *err)
{
	memset(out, 0, sizeof *out);
	out->n_bindings = n_bindings;
	out->push_size = push_size;
	if (create_set_layout(ctx, n_bindings, &out->set_layout, err) &&
	    create_layout(ctx, out, err) && create_pipeline(ctx, spirv, n_words, out, err))
		return true;
	vk_pipeline_destroy(ctx, out);
	return false;
}

bool vk_pipeline_for_t(vk_ctx *ctx, vk_pipeline *p, uint32_t T, VkPipeline *out, vk_error *err)
{
	if (T == 0 || T > VK_PIPELINE_SPEC_T_MAX) {
		*out = p->pipeline;
		return true;
	}
	pthread_mutex_lock(&ctx->pipeline_lock);
	bool ok = p->by_t[T - 1] || create_compute(ctx, p, T, &p->by_t[T - 1], err);
	*out = p->by_t[T - 1];
	pthread_mutex_unlock(&ctx->pipeline_lock);
	return ok;
}

void vk_pipeline_destroy(vk_ctx *ctx, vk_pipeline *p)
{
	for (int i = 0; i < VK_PIPELINE_SPEC_T_MAX; i++)
		if (p->by_t[i])
			vkDestroyPipeline(ctx->device, p->by_t[i], NULL);
	if (p->pipeline)
		vkDestroyPipeline(ctx->device, p->pipeline, NULL);
	if (p->layout)
		vkDestroyPipelineLayout(ctx->device, p->layout, NULL);
	if (p->set_layout)
		vkDestroyDescriptorSetLayout(ctx->device, p->set_layout, NULL);
	if (p->module)
		vkDestroyShaderModule(ctx->device, p->module, NULL);
	memset(p, 0, sizeof *p);
}

bool vk_descriptors_create(vk_ctx *ctx, uint32_t max_sets, uint32_t max_buffers,
			   vk_descriptors *out, vk_error *err)
{
	memset(out, 0, sizeof *out);
	VkDescriptorPoolSize size = {
		.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
		.descriptorCount = max_buffers,
	};
	VkDescriptorPoolCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
		.maxSets = max_sets,
		.poolSizeCount = 1,
		.pPoolSizes = &size,
	};
	VkResult r = vkCreateDescriptorPool(ctx->device, &ci, NULL, &out->pool);
	return r == VK_SUCCESS || vk_fail(err, r, "vkCreateDescriptorPool");
}

void vk_descriptors_destroy(vk_ctx *ctx, vk_descriptors *d)
{
	if (d->pool)
		vkDestroyDescriptorPool(ctx->device, d->pool, NULL);
	memset(d, 0, sizeof *d);
}

bool vk_descriptors_bind(vk_ctx *ctx, vk_descriptors *d, const vk_pipeline *p,
			 const vk_binding *b, VkDescriptorSet *out, vk_error *err)
{
	VkDescriptorSetAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
		.descriptorPool = d->pool,
		.descriptorSetCount = 1,
		.pSetLayouts = &p->set_layout,
	};
	VkResult r = vkAllocateDescriptorSets(ctx->device, &ai, out);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkAllocateDescriptorSets");
	VkDescriptorBufferInfo *bi = calloc(p->n_bindings ? p->n_bindings : 1, sizeof *bi);
	VkWriteDescriptorSet *w = calloc(p->n_bindings ? p->n_bindings : 1, sizeof *w);
	if (!bi || !w) {
		free(bi);
		free(w);
		return vk_failf(err, "vkUpdateDescriptorSets: out of memory");
	}
	for (uint32_t i = 0; i < p->n_bindings; i++) {
		bi[i] = (VkDescriptorBufferInfo){b[i].buffer, b[i].offset, b[i].range};
		w[i] = (VkWriteDescriptorSet){
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstSet = *out,
			.dstBinding = i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &bi[i],
		};
	}
	vkUpdateDescriptorSets(ctx->device, p->n_bindings, w, 0, NULL);
	free(bi);
	free(w);
	return true;
}

/* Appends one statistic as "name value" (after ", " unless first) at *at. */
static void put_statistic(const VkPipelineExecutableStatisticKHR *st, char *out, size_t outlen, size_t *at)
{
	char v[32];
	switch (st->format) {
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
		snprintf(v, sizeof v, "%s", st->value.b32 ? "yes" : "no");
		break;
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
		snprintf(v, sizeof v, "%lld", (long long)st->value.i64);
		break;
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
		snprintf(v, sizeof v, "%llu", (unsigned long long)st->value.u64);
		break;
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
		snprintf(v, sizeof v, "%.3f", st->value.f64);
		break;
	default:
		return;
	}
	int n = snprintf(out + *at, outlen - *at, "%s%s %s", *at ? ", " : "", st->name, v);
	if (n > 0)
		*at = *at + (size_t)n < outlen ? *at + (size_t)n : outlen - 1;
}

bool vk_pipeline_statistics(vk_ctx *ctx, VkPipeline pipeline, char *out, size_t outlen)
{
	if (outlen == 0)
		return false;
	out[0] = '\0';
	if (!ctx->pipeline_stats)
		return false;
	PFN_vkGetPipelineExecutableStatisticsKHR get =
	    (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(ctx->device, "vkGetPipelineExecutableStatisticsKHR");
	if (!get)
		return false;
	/* a compute pipeline has one executable, its compute shader */
	VkPipelineExecutableInfoKHR info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
					    .pipeline = pipeline,
					    .executableIndex = 0};
	uint32_t n = 0;
	if (get(ctx->device, &info, &n, NULL) != VK_SUCCESS || n == 0)
		return false;
	VkPipelineExecutableStatisticKHR *st = calloc(n, sizeof *st);
	if (!st)
		return false;
	for (uint32_t i = 0; i < n; i++)
		st[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
	VkResult r = get(ctx->device, &info, &n, st);
	size_t at = 0;
	if (r == VK_SUCCESS || r == VK_INCOMPLETE)
		for (uint32_t i = 0; i < n; i++)
			put_statistic(&st[i], out, outlen, &at);
	free(st);
	return at > 0;
}
