/* Error reporting: the first error wins, so a cascade of follow-on failures
 * never hides the cause. */
#include "ir/ir.h"

#include <stdio.h>

void ir_error_setv(ir_error *err, ir_loc loc, const char *fmt, va_list ap)
{
	if (!err || err->set)
		return;
	int n = 0;
	if (loc.file && loc.line > 0)
		n = snprintf(err->msg, sizeof(err->msg), "%s:%d:%d: ", loc.file, loc.line, loc.col);
	else if (loc.file)
		n = snprintf(err->msg, sizeof(err->msg), "%s: ", loc.file);
	if (n < 0 || (size_t)n >= sizeof(err->msg))
		n = 0;
	vsnprintf(err->msg + n, sizeof(err->msg) - (size_t)n, fmt, ap);
	err->set = true;
}

void ir_error_set(ir_error *err, ir_loc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ir_error_setv(err, loc, fmt, ap);
	va_end(ap);
}
