#include "runtime/drivers/vulkan/vk_weight_chunks.h"

#include <stdio.h>

static bool too_large(const halo_buffer_decl *w, uint64_t limit, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "vulkan backend: weight '%s' is %llu bytes, more than this device's %s of %llu bytes "
		 "(a quantized format, halo compile --quant, stores it in fewer)",
		 w->name, (unsigned long long)w->size, what, (unsigned long long)limit);
	return false;
}

bool vk_plan_weight_chunks(const halo_buffer_decl *weights, int n_weights, const vk_weight_limits *limits,
			   vk_chunk_range *out, int *n, char *err, size_t errlen)
{
	*n = 0;
	for (int i = 0; i < n_weights; i++) {
		const halo_buffer_decl *w = &weights[i];
		if (w->size > limits->binding)
			return too_large(w, limits->binding, "largest storage binding (maxStorageBufferRange)", err,
					 errlen);
		if (w->size > limits->chunk)
			return too_large(w, limits->chunk,
					 "largest buffer (maxMemoryAllocationSize, maxBufferSize)", err, errlen);
		vk_chunk_range *c = *n ? &out[*n - 1] : NULL;
		if (!c || w->offset + w->size - c->start > limits->chunk) {
			c = &out[(*n)++];
			c->start = w->offset;
		}
		c->end = w->offset + w->size;
	}
	return true;
}
