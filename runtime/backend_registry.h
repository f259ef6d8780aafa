/* The backends by name (runtime-internal): one table that halo_model_open
 * looks a name up in, in the manner of IREE's driver registry. The public
 * side (the names, a check of one) is in runtime/halo.h. */
#ifndef HALO_RUNTIME_BACKEND_REGISTRY_H
#define HALO_RUNTIME_BACKEND_REGISTRY_H

#include <stddef.h>

#include "runtime/backend.h"

/* The backend registered as name, or NULL with "unknown backend 'x'
 * (known: ref, vulkan, cuda, hip)" in err. The table is static: nothing to
 * free. */
const halo_backend_ops *halo_backend_lookup(const char *name, char *err, size_t errlen);

#endif
