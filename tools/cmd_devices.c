/* halo devices: the Vulkan devices `halo run --device N` can pick. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vulkan/vk_device.h"
#include "tools/commands.h"

int cmd_devices(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		puts("usage: halo devices\n\nLists the Vulkan devices: index, name, type, driver, subgroup size,\n"
		     "shared memory per workgroup and device-local memory.");
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
	for (int i = 0; i < n; i++)
		printf("%d: %s (%s) driver %s %s, subgroup %u, shared %u KiB, %.1f GiB device-local\n", i,
		       info[i].name, vk_device_type_name(info[i].type), info[i].driver_name, info[i].driver_info,
		       info[i].subgroup_size, info[i].max_shared_memory / 1024,
		       (double)info[i].device_local_bytes / (1 << 30));
	if (n == 0)
		puts("no Vulkan devices");
	free(info);
	return 0;
}
