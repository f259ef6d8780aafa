/* libFuzzer target for the bundle reader: any bytes must be either refused
 * with a message or accepted with every section inside the input. */
#include "runtime/bundle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	halo_bundle *b = halo_bundle_open_mem(data, size, "fuzz", 0, err, sizeof err);
	if (!b) {
		if (!memchr(err, '\0', sizeof err) || err[0] == '\0')
			abort(); /* a refusal must say why */
		return 0;
	}
	for (size_t i = 0; i < halo_bundle_section_count(b); i++) {
		size_t n;
		const uint8_t *p = halo_bundle_section(b, halo_bundle_section_name(b, i), &n);
		if (!p || p < data || n > size || (size_t)(p - data) > size - n)
			abort();
	}
	halo_bundle_close(b);
	return 0;
}
