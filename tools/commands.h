/* The subcommands of the `halo` tool, one file each (tools/cmd_<name>.c).
 * A command gets argv with argv[0] set to its own name and returns the
 * process exit status: 0 success, 1 the input was bad or the work failed,
 * 2 the command line was wrong. To add one, declare it here and add a row to
 * the table in tools/halo.c. */
#ifndef HALO_TOOLS_COMMANDS_H
#define HALO_TOOLS_COMMANDS_H

typedef struct {
	const char *name;
	const char *summary; /* one line for `halo --help` */
	int (*run)(int argc, char **argv);
} halo_command;

int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
