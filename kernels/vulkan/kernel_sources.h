/* The kernel templates of kernels/vulkan/ (GLSL) and kernels/hip/ (the HIP
 * dialect), embedded at build time by
 * tools/embed_files.c (static storage, never freed). */
#ifndef HALO_KERNEL_SOURCES_H
#define HALO_KERNEL_SOURCES_H

typedef struct {
	const char *name; /* file name, e.g. "matvec.comp" */
	const char *text; /* the file's contents */
} kernel_source;

extern const kernel_source kernel_sources[];
extern const int kernel_sources_count;

#endif
