#include "runtime/drivers/ref/ref_error.h"

#include <stdarg.h>
#include <stdio.h>

bool ref_fail(ref_error *err, const char *op, const char *fmt, ...)
{
	if (!err)
		return false;
	int n = snprintf(err->msg, sizeof err->msg, "%s: ", op);
	if (n < 0 || (size_t)n >= sizeof err->msg)
		return false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}
