#include "tools/serve/serve_error.h"

#include <stdarg.h>
#include <stdio.h>

bool serve_fail(serve_error *e, int status, const char *code, const char *param, const char *fmt, ...)
{
	e->status = status;
	e->type = status >= 500 ? "server_error" : "invalid_request_error";
	e->code = code;
	snprintf(e->param, sizeof e->param, "%s", param ? param : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
	return false;
}
