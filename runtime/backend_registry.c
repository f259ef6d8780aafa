/* The backend registry: every backend halo runs bundles on, by the name
 * halo_open_options.backend and the CLI's --backend take. Adding a backend
 * is one row here. */
#include "runtime/backend_registry.h"

#include <stdio.h>
#include <string.h>

#include "runtime/halo.h"

static const halo_backend_ops *const registry[] = {
	&halo_ref_backend,
	&halo_vulkan_backend,
	&halo_cuda_backend,
	&halo_hip_backend,
};

enum { N_BACKENDS = sizeof(registry) / sizeof(registry[0]) };

const char *halo_backend_name(int i)
{
	return i >= 0 && i < N_BACKENDS ? registry[i]->name : NULL;
}

const halo_backend_ops *halo_backend_lookup(const char *name, char *err, size_t errlen)
{
	for (int i = 0; i < N_BACKENDS; i++)
		if (strcmp(registry[i]->name, name) == 0)
			return registry[i];
	int n = snprintf(err, errlen, "unknown backend '%s' (known:", name);
	for (int i = 0; i < N_BACKENDS && n >= 0 && (size_t)n < errlen; i++)
		n += snprintf(err + n, errlen - (size_t)n, "%s %s", i ? "," : "", registry[i]->name);
	if (n >= 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - (size_t)n, ")");
	return NULL;
}

bool halo_backend_check(const char *name, char *err, size_t errlen)
{
	return halo_backend_lookup(name, err, errlen) != NULL;
}

bool halo_backend_probe(const char *name, int device, char *err, size_t errlen)
{
	const halo_backend_ops *ops = halo_backend_lookup(name, err, errlen);
	return ops && (!ops->probe || ops->probe(device, err, errlen));
}

int halo_backend_devices(const char *name, halo_device_name *out, int max, char *err, size_t errlen)
{
	const halo_backend_ops *ops = halo_backend_lookup(name, err, errlen);
	if (!ops)
		return -1;
	if (ops->devices)
		return ops->devices(out, max, err, errlen);
	if (max > 0)
		snprintf(out[0].name, sizeof out[0].name, "the CPU (%s backend)", ops->name);
	return 1;
}
