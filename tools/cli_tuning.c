#include "tools/cli_tuning.h"

#include <stdio.h>
#include <string.h>

/* A missing file: an empty database when the command writes one, else none. */
static bool none_or_empty(bool create, cli_tuning *out, char *err, size_t errlen)
{
	if (create && !(out->db = halo_tuning_db_new())) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	return true;
}

bool cli_tuning_open(const char *cmd, const char *path, bool create, cli_tuning *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->explicit_path = path != NULL;
	if (path) {
		snprintf(out->path, sizeof(out->path), "%s", path);
	} else if (!halo_tuning_db_default_path(out->path, sizeof(out->path), create, err, errlen)) {
		/* No usable default: an explicit path is how to name one. */
		if (create)
			return false;
		out->path[0] = '\0';
		return true;
	}
	bool missing;
	char why[1024];
	out->db = halo_tuning_db_read(out->path, &missing, why, sizeof(why));
	if (out->db)
		return true;
	if (missing && (create || !path))
		return none_or_empty(create, out, err, errlen);
	if (path) {
		snprintf(err, errlen, "%s", why);
		return false;
	}
	fprintf(stderr, "halo %s: warning: ignoring the default tuning DB: %s\n", cmd, why);
	return none_or_empty(create, out, err, errlen);
}
