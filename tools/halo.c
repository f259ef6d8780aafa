/* halo: the command-line front end. Dispatches `halo <command> ...` to the
 * command table below; every command lives in its own tools/cmd_<name>.c. */
#include <stdio.h>
#include <string.h>

#include "tools/commands.h"

static const halo_command commands[] = {
	{"compile", "compile a model graph and an HF checkpoint into a bundle", cmd_compile},
	{"run", "load a bundle and generate tokens or text", cmd_run},
	{"bench", "time prompt processing and generation (llama-bench's pp and tg)", cmd_bench},
	{"chat", "talk with a bundle's model through its chat template", cmd_chat},
	{"inspect", "run the pass pipeline and print the IR, schedule or memory plan", cmd_inspect},
	{"tokenize", "text to token ids and back with the checkpoint's tokenizer", cmd_tokenize},
	{"tune", "time a bundle's kernel candidates on this GPU, record the winners", cmd_tune},
	{"serve", "an OpenAI-compatible HTTP server over a bundle", cmd_serve},
	{"devices", "list the Vulkan devices", cmd_devices},
};

enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *out)
{
	fputs("usage: halo <command> [options]\n"
	      "       halo --help | halo <command> --help\n"
	      "\n"
	      "halo compiles LLM graphs (Gated DeltaNet, attention, MoE hybrids) ahead of time.\n"
	      "\n"
	      "commands:\n",
	      out);
	for (int i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\nexit status: 0 success, 1 bad input or failed work, 2 bad command line\n", out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (int i = 0; i < N_COMMANDS; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "halo: unknown command '%s' (see halo --help)\n", argv[1]);
	return 2;
}
