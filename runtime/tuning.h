/* The kernel choices of an open model (docs/tuning.md): what `halo tune`
 * measures and `halo run --profile` reports. A choice is one kernel key with
 * its candidate kernels (tiles), the heuristic's first; the Vulkan backend
 * runs one candidate per choice. Backends that run no bundle kernels (ref)
 * have no choices.
 *
 * Ownership: strings returned here belong to the model and live until
 * halo_model_close(). */
#ifndef HALO_RUNTIME_TUNING_H
#define HALO_RUNTIME_TUNING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/halo.h"
#include "runtime/tuning_db.h"

/* The most candidates a choice has (the manifest's limit). */
#define HALO_CHOICE_MAX_CANDIDATES 16

/* Where a choice's running candidate came from. */
typedef enum {
	HALO_PICK_HEURISTIC, /* the first candidate the device runs */
	HALO_PICK_TUNED,     /* the tuning database's record for this device and key */
	HALO_PICK_FORCED,    /* halo_model_set_picks (the backend's load-time picks too) */
} halo_pick_source;

/* "heuristic", "tuned", "forced" (static storage). */
const char *halo_pick_source_name(halo_pick_source s);

typedef struct {
	const char *key;
	int n_candidates;
	int picked;              /* the running candidate's position */
	halo_pick_source source;
} halo_choice_info;

typedef struct {
	const char *signature;
	const char *tile;
	uint32_t needs; /* HALO_NEED_* bits */
	bool runs;      /* the model's device has them all, and its backend the code */
} halo_candidate_info;

/* The number of kernel choices: 0 on the ref backend. */
int halo_model_choice_count(const halo_model *m);
/* False for a choice outside [0, count). */
bool halo_model_choice(const halo_model *m, int choice, halo_choice_info *out);
/* Candidate pos of a choice; false outside the choice's candidates. */
bool halo_model_candidate(const halo_model *m, int choice, int pos, halo_candidate_info *out);
/* New candidate positions, one per choice (-1 keeps a choice's pick), on a
 * model opened with halo_open_options.tune; the next step of every session
 * runs them. Fails, changing nothing, for a position the device cannot run. */
bool halo_model_set_picks(halo_model *m, const int *picks, char *err, size_t errlen);
/* The GPU the model runs on; false on the ref backend. */
bool halo_model_device(const halo_model *m, halo_device_id *out);

/* The entry points by index, and whether one runs a choice's kernels. */
int halo_model_entry_count(const halo_model *m);
const char *halo_model_entry_name(const halo_model *m, int i);
bool halo_model_entry_uses(const halo_model *m, int entry, int choice);

/* While profiling (halo_session_set_profiling): ns[c] = the time of choice
 * c's dispatches summed over the steps profiled since it was turned on or
 * last cleared; ns has halo_model_choice_count elements. */
void halo_session_choice_ns(const halo_session *s, double *ns);

#endif
