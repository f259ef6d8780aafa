/* Formatting shared by the YAML and DOT dumps. */
#include "ir/dump.h"

#include <string.h>

const char *ir_dump_value_type(const ir_value *v, char *buf, size_t len)
{
	if (!v->shape_known) {
		snprintf(buf, len, "?");
		return buf;
	}
	char sh[160];
	snprintf(buf, len, "%s %s", ir_shape_str(&v->shape, sh, sizeof(sh)), halo_dtype_name(v->dtype));
	return buf;
}

const char *ir_dump_value_name(const ir_func *f, int id, char *buf, size_t len)
{
	if (id >= 0 && id < f->n_values && f->values[id].name)
		snprintf(buf, len, "%s", f->values[id].name);
	else
		snprintf(buf, len, "%%%d", id);
	return buf;
}

const char *ir_dump_float(double f, char *buf, size_t len)
{
	snprintf(buf, len, "%.9g", f);
	if (!strpbrk(buf, ".eEni"))
		strncat(buf, ".0", len - strlen(buf) - 1);
	return buf;
}
