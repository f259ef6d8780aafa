/* The tuning database as the halo commands open it (docs/tuning.md): a
 * database named on the command line must be readable and valid, the
 * default one ($XDG_CACHE_HOME/halo/tuning.json) may be missing (no DB) or
 * broken (a warning on stderr, then no DB). */
#ifndef HALO_TOOLS_CLI_TUNING_H
#define HALO_TOOLS_CLI_TUNING_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/tuning_db.h"

typedef struct {
	halo_tuning_db *db; /* NULL: no database to pick from; the caller frees it */
	char path[4096];    /* the file it came from or would be written to ("" if none) */
	bool explicit_path; /* named on the command line */
} cli_tuning;

/* Opens the database for command `cmd`: `path` when given (missing or
 * broken: false with a message naming the file in err), else the default
 * (missing: no DB; broken: a warning naming it on stderr, no DB; no HOME:
 * no DB). With `create`, a missing file gives an empty database and the
 * default path's directory is made, for a command that writes it. */
bool cli_tuning_open(const char *cmd, const char *path, bool create, cli_tuning *out, char *err, size_t errlen);

#endif
