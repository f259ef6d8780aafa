#include "kernels/device_features.h"

#include <string.h>

/* The names are part of the manifest format (docs/manifest.md): append only. */
static const struct {
	uint32_t bit;
	const char *name;
} need_names[] = {
	{HALO_NEED_SUBGROUP_SHUFFLE, "subgroup_shuffle"},
	{HALO_NEED_COOPMAT_NV, "coopmat_nv"},
	{HALO_NEED_INT_DOT, "int_dot"},
};

enum { N_NAMES = sizeof need_names / sizeof need_names[0] };

const char *halo_need_name(uint32_t bit)
{
	for (int i = 0; i < N_NAMES; i++)
		if (need_names[i].bit == bit)
			return need_names[i].name;
	return NULL;
}

bool halo_need_from_name(const char *name, uint32_t *bit)
{
	for (int i = 0; i < N_NAMES; i++)
		if (strcmp(need_names[i].name, name) == 0) {
			*bit = need_names[i].bit;
			return true;
		}
	return false;
}

uint32_t halo_need_known(void)
{
	uint32_t all = 0;
	for (int i = 0; i < N_NAMES; i++)
		all |= need_names[i].bit;
	return all;
}
