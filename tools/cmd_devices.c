/* halo devices: the devices `halo run --backend NAME --device N` can pick:
 * the Vulkan ones in detail, then every other backend's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device_features.h"
#include "runtime/halo.h"
#include "runtime/drivers/vulkan/vk_device.h"
#include "tools/commands.h"

/* The tuning DB's identity of the device and its HALO_NEED_* features. */
static void print_ids(const vk_device_info *d)
{
	printf("   vendor %u (0x%04x), device %u (0x%04x), driver version %u; features:", d->vendor_id, d->vendor_id,
	       d->device_id, d->device_id, d->driver_version);
	int shown = 0;
	for (uint32_t bit = 1; bit && bit <= d->features; bit <<= 1)
		if ((d->features & bit) && halo_need_name(bit))
			printf("%s %s", shown++ ? "," : "", halo_need_name(bit));
	printf("%s\n", shown ? "" : " none");
}

/* A backend's devices on one line each, or why it has none here. */
static void print_backend(const char *name)
{
	enum { MAX = 16 };
	halo_device_name dev[MAX];
	char why[512];
	int n = halo_backend_devices(name, dev, MAX, why, sizeof why);
	if (n < 0) {
		printf("%s: none (%s)\n", name, why);
		return;
	}
	printf("%s:%s\n", name, n ? "" : " none");
	for (int i = 0; i < n && i < MAX; i++)
		printf("%d: %s\n", i, dev[i].name);
	if (n > MAX)
		printf("... and %d more\n", n - MAX);
}

int cmd_devices(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		puts("usage: halo devices\n\nLists the Vulkan devices: index, name, type, driver, subgroup size,\n"
		     "shared memory per workgroup and device-local memory; then the ids a tuning DB\n"
		     "keys its records by (vendor, device, driver version) and the features kernel\n"
		     "variants may need (subgroup_shuffle, coopmat_nv). Then, per other backend\n"
		     "(ref, cuda, hip), its devices by --device number, or why it has none here.");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "halo devices: unexpected argument '%s' (see halo devices --help)\n", argv[1]);
		return 2;
	}
	vk_device_info *info = NULL;
	int n = 0;
	vk_error err;
	if (!vk_list_devices(&info, &n, &err)) {
		fprintf(stderr, "halo devices: %s\n", err.msg);
		return 1;
	}
	puts("vulkan:");
	for (int i = 0; i < n; i++) {
		printf("%d: %s (%s) driver %s %s, subgroup %u, shared %u KiB, %.1f GiB device-local\n", i,
		       info[i].name, vk_device_type_name(info[i].type), info[i].driver_name, info[i].driver_info,
		       info[i].subgroup_size, info[i].max_shared_memory / 1024,
		       (double)info[i].device_local_bytes / (1 << 30));
		print_ids(&info[i]);
	}
	if (n == 0)
		puts("no Vulkan devices");
	free(info);
	for (int b = 0; halo_backend_name(b); b++)
		if (strcmp(halo_backend_name(b), "vulkan") != 0)
			print_backend(halo_backend_name(b));
	return 0;
}
