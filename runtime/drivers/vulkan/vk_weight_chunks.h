/* How the Vulkan backend places a bundle's weights in device buffers.
 *
 * A driver caps three sizes: one memory allocation
 * (maxMemoryAllocationSize), one buffer (maxBufferSize) and one storage
 * binding (maxStorageBufferRange). The weights section is cut, in section
 * order, into chunks no larger than the first two allow, each a buffer of
 * its own; a weight never straddles two chunks, since each kernel binds a
 * weight whole as one storage range, which must fit the third. */
#ifndef HALO_VK_WEIGHT_CHUNKS_H
#define HALO_VK_WEIGHT_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/manifest.h"

typedef struct {
	uint64_t chunk;   /* the most bytes one chunk may hold: min(allocation, buffer) */
	uint64_t binding; /* the most bytes one weight may span: the storage range */
} vk_weight_limits;

typedef struct {
	uint64_t start, end; /* byte range of the weights section */
} vk_chunk_range;

/* Fills out[0 .. *n) (out has room for n_weights ranges; *n is at most
 * n_weights, 0 for none) with the chunks of weights[0 .. n_weights), which
 * lie in section order. False, with err naming the weight, its size and
 * the limit, when a weight exceeds limits->binding or limits->chunk. */
bool vk_plan_weight_chunks(const halo_buffer_decl *weights, int n_weights, const vk_weight_limits *limits,
			   vk_chunk_range *out, int *n, char *err, size_t errlen);

#endif
