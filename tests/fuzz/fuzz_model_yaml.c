/* libFuzzer target: arbitrary bytes as a model file, read against a fixed
 * valid config. The reader must return a module or an error, never crash,
 * leak or read out of bounds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ir/dump.h"
#include "ir/read_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char config[] =
	"{\"model_type\": \"hybrid_tiny\", \"hidden_size\": 64, \"num_hidden_layers\": 2, \"vocab_size\": 128,"
	" \"rms_norm_eps\": 1e-6, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16,"
	" \"rope_theta\": 10000.0, \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4,"
	" \"linear_key_head_dim\": 16, \"linear_value_head_dim\": 16, \"linear_conv_kernel_dim\": 4,"
	" \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32,"
	" \"shared_expert_intermediate_size\": 48, \"layer_types\": [\"linear_attention\", \"full_attention\"]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ir_error err = {0};
	ir_module *m = ir_read_model_mem("fuzz.yaml", (const char *)data, size, "fuzz.json", config, strlen(config), NULL, &err);
	if (m) {
		/* a module that reads must also dump */
		FILE *devnull = fopen("/dev/null", "w");
		if (devnull) {
			ir_dump_yaml(m, devnull);
			ir_dump_dot(m, devnull);
			fclose(devnull);
		}
		ir_module_free(m);
	}
	return 0;
}
