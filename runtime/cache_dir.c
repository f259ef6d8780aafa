/* halo's cache directory (cache_dir.h). */
#include "runtime/cache_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int halo_cache_dir(char *out, size_t outlen)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (xdg && xdg[0] == '/')
		return snprintf(out, outlen, "%s/halo", xdg);
	if (home && home[0])
		return snprintf(out, outlen, "%s/.cache/halo", home);
	return -1;
}

bool halo_make_dirs(const char *dir)
{
	char path[4096];
	if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
		errno = ENAMETOOLONG;
		return false;
	}
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		bool ok = mkdir(path, 0755) == 0 || errno == EEXIST;
		*p = c;
		if (!ok)
			return false;
		if (c == '\0')
			return true;
	}
}
