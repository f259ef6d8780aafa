/* libFuzzer target for the manifest reader: any bytes must be refused with a
 * message or accepted with every range inside the sizes it was given (the
 * sizes of the weights and spirv sections are fixed here; a dispatch's
 * activation and state ranges are checked against the manifest's own). */
#include "runtime/manifest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { WEIGHTS = 1 << 20 };
/* Every target's kernel section, 64 KiB. */
static const uint64_t code_size[HALO_TARGET_COUNT] = {1 << 16, 1 << 16, 1 << 16};

static void check_entry(const halo_entry *e, uint64_t state_bytes)
{
	for (int i = 0; i < e->n_dispatch; i++) {
		const halo_dispatch *d = &e->dispatch[i];
		for (int j = 0; j < d->n_in + d->n_extra + d->n_out; j++) {
			const halo_tensor_ref *t = &d->operand[j];
			uint64_t n = halo_tensor_bytes(t, e->t_max);
			uint64_t limit = t->space == HALO_SPACE_WEIGHT ? WEIGHTS
					 : t->space == HALO_SPACE_STATE ? state_bytes
									: e->act_bytes;
			if (n > limit || t->offset > limit - n)
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	halo_manifest *m = manifest_parse((const char *)data, size, WEIGHTS, code_size, err, sizeof err);
	if (!m) {
		if (!memchr(err, '\0', sizeof err) || err[0] == '\0')
			abort(); /* a refusal must say why */
		return 0;
	}
	for (int i = 0; i < m->n_entries; i++)
		check_entry(&m->entries[i], m->state_bytes);
	manifest_free(m);
	return 0;
}
