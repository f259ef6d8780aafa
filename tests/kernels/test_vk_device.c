/* The device layer: listing, selection errors, the validation messenger
 * (it must count a deliberate misuse, or the kernel tests' "no message"
 * check proves nothing), timestamps around a dispatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/vulkan/vk_cmd.h"
#include "runtime/drivers/vulkan/vk_device.h"

static int failures;

static void expect(const char *what, bool cond)
{
	if (!cond) {
		printf("FAIL %s\n", what);
		failures++;
	}
}

static void test_list(void)
{
	vk_device_info *infos;
	int n;
	vk_error err;
	expect("list devices", vk_list_devices(&infos, &n, &err) && n >= 1);
	for (int i = 0; i < n; i++)
		printf("device %d: %s (%s), driver %s %s, subgroup %u, shared %u B, %.1f GiB device-local\n",
		       i, infos[i].name, vk_device_type_name(infos[i].type), infos[i].driver_name,
		       infos[i].driver_info, infos[i].subgroup_size, infos[i].max_shared_memory,
		       (double)infos[i].device_local_bytes / (1 << 30));
	if (n >= 1)
		expect("subgroup size known", infos[0].subgroup_size >= 1);
	free(infos);
	vk_ctx *ctx;
	vk_ctx_options opt = {.validation = false, .device_index = 99};
	expect("device 99 is refused", !vk_ctx_create(&opt, &ctx, &err) && strstr(err.msg, "no Vulkan device 99"));
	printf("refused as expected: %s\n", err.msg);
	expect("result names", !strcmp(vk_result_name(VK_ERROR_DEVICE_LOST), "VK_ERROR_DEVICE_LOST"));
}

static void test_validation_counts(void)
{
	vk_ctx *ctx;
	vk_error err;
	vk_ctx_options opt = {.validation = true, .device_index = -1};
	if (!vk_ctx_create(&opt, &ctx, &err)) {
		expect(err.msg, false);
		return;
	}
	expect("no message after setup", ctx->validation_messages == 0);
	/* A buffer with no usage bits is invalid (VUID-VkBufferCreateInfo-usage-requiredbitmask). */
	VkBufferCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = 256};
	VkBuffer buf = VK_NULL_HANDLE;
	printf("a deliberate misuse follows:\n");
	if (vkCreateBuffer(ctx->device, &ci, NULL, &buf) == VK_SUCCESS && buf)
		vkDestroyBuffer(ctx->device, buf, NULL);
	expect("the messenger counted the misuse", ctx->validation_messages >= 1);
	vk_ctx_destroy(ctx);
}

static void test_timestamps(void)
{
	vk_ctx *ctx;
	vk_error err;
	vk_ctx_options opt = {.validation = true, .device_index = -1};
	if (!vk_ctx_create(&opt, &ctx, &err)) {
		expect(err.msg, false);
		return;
	}
	vk_timer timer;
	vk_cmd cmd;
	double ns = -1;
	bool ok = vk_timer_create(ctx, 2, &timer, &err) && vk_cmd_create(ctx, &cmd, &err) &&
		  vk_cmd_begin(ctx, &cmd, &err);
	if (ok) {
		vk_cmd_timer_reset(&cmd, &timer);
		vk_cmd_timestamp(&cmd, &timer, 0);
		vk_cmd_barrier(&cmd);
		vk_cmd_timestamp(&cmd, &timer, 1);
		ok = vk_cmd_end(&cmd, &err) && vk_cmd_submit_wait(ctx, &cmd, &err) &&
		     vk_timer_elapsed_ns(ctx, &timer, 0, 1, &ns, &err);
	}
	if (!ok)
		printf("%s\n", err.msg);
	expect("timestamps", ok && ns >= 0);
	expect("timer slot checked", !vk_timer_elapsed_ns(ctx, &timer, 0, 5, &ns, &err));
	vk_cmd_destroy(ctx, &cmd);
	vk_timer_destroy(ctx, &timer);
	expect("no validation message", ctx->validation_messages == 0);
	vk_ctx_destroy(ctx);
}

int main(void)
{
	test_list();
	test_validation_counts();
	test_timestamps();
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
