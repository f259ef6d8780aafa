/* The GPU-module backend (gpu_backend.h): a bundle's kernels for one target
 * (sm_90 PTX on cuda, gfx1151 code objects on hip) run through the driver's
 * module API, as the Vulkan backend runs their SPIR-V twins.
 *
 * Load: the bundle is checked first (every choice has a candidate with code
 * for the target), then the library is opened, the device's primary context
 * retained, the weights uploaded into one allocation and a module loaded
 * per picked kernel. A choice runs its first candidate that has code for
 * the target: there is no tuning database on these backends (yet), and no
 * device features to weigh (the HIP templates have one form per target).
 * Loaded with tune, every candidate with code gets a module and
 * gpu_set_picks may switch between them (tests/ops/backend_ops sweeps a
 * bundle compiled with code for all of them); launches read the picks.
 *
 * A session holds the state and activation arenas and the 16-byte step
 * record {pos, T} every kernel sees as its last binding, and per dispatch
 * the halo_args (kernels/hip/README.md) pointing into them, made once. A
 * step copies the step record and the token ids in, launches the entry's
 * dispatches in order on the context's default stream, whose order is the
 * barrier (a dispatch's `barrier` needs nothing more: each launch starts
 * after the one before it ends), and copies the logits out, which waits for
 * the stream. Contexts are per thread in both APIs, so every entry point
 * makes the backend's current first: sessions may run on any thread. */
#include "runtime/drivers/gpu/gpu_backend.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device_features.h"
#include "kernels/gpu_target.h"
#include "runtime/halo.h"

/* The kernel parameter: kernels/hip/halo_hip.h's struct halo_args, as the
 * device compilers lay it out (24 pointers, then T, padded to 8). */
#define GPU_MAX_BINDINGS 24
typedef struct {
	gpu_dptr b[GPU_MAX_BINDINGS];
	uint32_t T;
} gpu_args;
_Static_assert(sizeof(gpu_args) == 200, "gpu_args must match halo_hip.h's struct halo_args");

struct halo_backend {
	const gpu_driver *driver;
	const halo_manifest *manifest;
	void *lib;
	gpu_api api;
	int device;
	void *ctx; /* the device's primary context, retained */
	gpu_dptr weights;
	int *pick;       /* per choice: the candidate position it runs */
	bool tune;       /* loaded with tune: every candidate with code has a module */
	bool *forced;    /* per choice: picked by gpu_set_picks or the load's picks */
	void **modules;  /* per manifest kernel: loaded for the picked ones (all with code when tuning) */
	void **functions;    /* per manifest kernel: its HALO_ENTRY, for the loaded ones */
	void **functions_t1; /* per kernel: its HALO_ENTRY_T1, NULL where it has none */
};

struct halo_backend_session {
	halo_backend *b;
	gpu_dptr state, act, step;
	/* A greedy chain's step records (16 bytes a step), then its tokens (4
	 * a step), HALO_CHAIN_MAX of each (gpu_chain). */
	gpu_dptr chain;
	gpu_args **args; /* [entry][dispatch], T set per step */
	int n_events;
	void **events;   /* profiling: one before the first dispatch, one after each */
	void *out;       /* the last step's output, copied to the host */
	size_t out_cap;  /* its bytes */
};

struct halo_backend_checkpoint {
	halo_backend_session *s;
	gpu_dptr buf;
};

/* Offset of the tokens in a session's chain buffer. */
#define CHAIN_TOKENS (HALO_CHAIN_MAX * 16)

/* Writes "<backend> backend: <what>: <driver's error name>" and fails. */
static bool fail_rc(const halo_backend *b, int rc, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s backend: %s: %s (%d)", b->driver->backend, what, b->driver->describe(&b->api, rc),
		 rc);
	return false;
}

#define CALL(b, call, what)                                         \
	do {                                                        \
		int rc_ = (call);                                   \
		if (rc_ != 0)                                       \
			return fail_rc((b), rc_, (what), err, errlen); \
	} while (0)

static bool oom(const halo_backend *b, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s backend: out of memory", b->driver->backend);
	return false;
}

static bool has_code(const halo_backend *b, int kernel)
{
	return b->manifest->kernels[kernel].code[b->driver->target].size > 0;
}

/* The bundle runs here when it has the target's section and every choice a
 * candidate with code in it (manifest_parse already refuses a bundle that
 * lists the target with a choice lacking it, naming the choice's key); the
 * first such candidate is the choice's pick. A forced position must be one
 * with code. */
static bool choose_kernels(halo_backend *b, const halo_backend_load *load, char *err, size_t errlen)
{
	const halo_manifest *m = b->manifest;
	const halo_target_info *t = &halo_targets[b->driver->target];
	if (!m->has_kernels || !m->has_target[b->driver->target] || !load->code[b->driver->target]) {
		snprintf(err, errlen, "%s backend: the bundle has no '%s' section (compiled without --targets ...,%s); "
				      "recompile it with that target or run it with --backend ref or vulkan",
			 b->driver->backend, t->section, t->short_name);
		return false;
	}
	b->pick = calloc((size_t)m->n_choices + 1, sizeof(*b->pick));
	b->forced = calloc((size_t)m->n_choices + 1, sizeof(*b->forced));
	if (!b->pick || !b->forced)
		return oom(b, err, errlen);
	for (int c = 0; c < m->n_choices; c++) {
		const halo_choice *ch = &m->choices[c];
		int forced = load->picks ? load->picks[c] : -1;
		b->pick[c] = -1;
		b->forced[c] = forced >= 0;
		for (int i = 0; i < ch->n && b->pick[c] < 0; i++)
			if ((forced < 0 || forced == i) && has_code(b, ch->kernel[i]))
				b->pick[c] = i;
		if (b->pick[c] < 0) {
			snprintf(err, errlen, "%s backend: kernel %s has no %s code in the bundle%s", b->driver->backend,
				 m->kernels[ch->kernel[forced >= 0 && forced < ch->n ? forced : 0]].signature, t->name,
				 forced >= 0 ? " (the forced candidate position)" : "");
			return false;
		}
	}
	for (int e = 0; e < m->n_entries; e++)
		for (int d = 0; d < m->entries[e].n_dispatch; d++)
			if (m->entries[e].dispatch[d].choice < 0) {
				snprintf(err, errlen, "%s backend: dispatch '%s' of entry '%s' names no kernel choice",
					 b->driver->backend, m->entries[e].dispatch[d].node, m->entries[e].name);
				return false;
			}
	return true;
}

/* Opens the library and takes every symbol; a missing library or symbol is
 * an error naming it, never a crash. */
static bool open_library(halo_backend *b, char *err, size_t errlen)
{
	const gpu_driver *d = b->driver;
	b->lib = dlopen(d->library, RTLD_NOW | RTLD_LOCAL);
	if (!b->lib) {
		snprintf(err, errlen, "%s backend " GPU_UNAVAILABLE ": cannot open %s (%s)", d->backend, d->library,
			 dlerror());
		return false;
	}
	for (int i = 0; i < d->n_symbols; i++) {
		void *fn = dlsym(b->lib, d->symbols[i].symbol);
		if (!fn) {
			snprintf(err, errlen, "%s backend: %s has no %s", d->backend, d->library, d->symbols[i].symbol);
			return false;
		}
		/* POSIX: a dlsym result converts to the function pointer it names. */
		memcpy((char *)&b->api + d->symbols[i].field, &fn, sizeof(fn));
	}
	return true;
}

/* The driver's init and device count failing (no device, a stub library)
 * mean this machine has no such GPU, which the message says as
 * GPU_UNAVAILABLE does. */
static bool unavailable(const halo_backend *b, int rc, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s backend " GPU_UNAVAILABLE ": %s: %s (%d)", b->driver->backend, what,
		 b->driver->describe(&b->api, rc), rc);
	return false;
}

/* Initialises the opened driver and counts its devices. */
static bool count_devices(halo_backend *b, int *count, char *err, size_t errlen)
{
	int rc;
	if ((rc = b->api.init(0)) != 0)
		return unavailable(b, rc, "initialising the driver", err, errlen);
	if ((rc = b->api.device_count(count)) != 0)
		return unavailable(b, rc, "counting devices", err, errlen);
	return true;
}

static bool open_device(halo_backend *b, int ordinal, char *err, size_t errlen)
{
	int count = 0;
	if (!count_devices(b, &count, err, errlen))
		return false;
	if (ordinal < 0)
		ordinal = 0;
	if (ordinal >= count) {
		snprintf(err, errlen, "%s backend " GPU_UNAVAILABLE ": no device %d (%d found)", b->driver->backend,
			 ordinal, count);
		return false;
	}
	CALL(b, b->api.device_get(&b->device, ordinal), "getting the device");
	CALL(b, b->api.primary_ctx_retain(&b->ctx, b->device), "retaining the primary context");
	CALL(b, b->api.ctx_set_current(b->ctx), "making the context current");
	return true;
}

static bool current(const halo_backend *b, char *err, size_t errlen)
{
	CALL(b, b->api.ctx_set_current(b->ctx), "making the context current");
	return true;
}

static bool upload_weights(halo_backend *b, const halo_backend_load *load, char *err, size_t errlen)
{
	uint64_t size = load->weights_size ? load->weights_size : 4;
	CALL(b, b->api.mem_alloc(&b->weights, size), "allocating the weights");
	CALL(b, b->api.memcpy_htod(b->weights, load->weights, load->weights_size), "uploading the weights");
	return true;
}

/* Kernel k's module. The driver reads PTX as a NUL-terminated string,
 * which a kernel's bytes in the section are not: each is copied with a NUL
 * after it (a code object ignores the extra byte). */
static bool load_module(halo_backend *b, const uint8_t *code, int k, char *err, size_t errlen)
{
	const halo_kernel *kn = &b->manifest->kernels[k];
	uint64_t size = kn->code[b->driver->target].size;
	char *image = malloc(size + 1);
	if (!image)
		return oom(b, err, errlen);
	memcpy(image, code + kn->code[b->driver->target].offset, size);
	image[size] = '\0';
	int rc = b->api.module_load_data(&b->modules[k], image);
	free(image);
	char what[512];
	snprintf(what, sizeof(what), "loading kernel %s", kn->signature);
	if (rc != 0)
		return fail_rc(b, rc, what, err, errlen);
	snprintf(what, sizeof(what), "kernel %s has no entry " HALO_ENTRY, kn->signature);
	CALL(b, b->api.module_get_function(&b->functions[k], b->modules[k], HALO_ENTRY), what);
	/* A matvec's entry for one-token steps (kernels/gpu_target.h); other
	 * kernels have none, and the driver's "not found" leaves it NULL. */
	if (b->api.module_get_function(&b->functions_t1[k], b->modules[k], HALO_ENTRY_T1) != 0)
		b->functions_t1[k] = NULL;
	return true;
}

/* A module per picked kernel or, when tuning, per kernel with code. */
static bool load_modules(halo_backend *b, const uint8_t *code, char *err, size_t errlen)
{
	const halo_manifest *m = b->manifest;
	b->modules = calloc((size_t)m->n_kernels + 1, sizeof(*b->modules));
	b->functions = calloc((size_t)m->n_kernels + 1, sizeof(*b->functions));
	b->functions_t1 = calloc((size_t)m->n_kernels + 1, sizeof(*b->functions_t1));
	if (!b->modules || !b->functions || !b->functions_t1)
		return oom(b, err, errlen);
	for (int c = 0; c < m->n_choices; c++)
		for (int i = 0; i < m->choices[c].n; i++) {
			int k = m->choices[c].kernel[i];
			bool wanted = b->tune ? has_code(b, k) : i == b->pick[c];
			if (wanted && !b->modules[k] && !load_module(b, code, k, err, errlen))
				return false;
		}
	return true;
}

void gpu_backend_destroy(halo_backend *b)
{
	if (!b)
		return;
	if (b->ctx && b->api.ctx_set_current(b->ctx) == 0) {
		for (int i = 0; b->modules && i < b->manifest->n_kernels; i++)
			if (b->modules[i])
				b->api.module_unload(b->modules[i]);
		if (b->weights)
			b->api.mem_free(b->weights);
		b->api.primary_ctx_release(b->device);
	}
	free(b->modules);
	free(b->functions);
	free(b->functions_t1);
	free(b->pick);
	free(b->forced);
	if (b->lib)
		dlclose(b->lib);
	free(b);
}

halo_backend *gpu_backend_create(const gpu_driver *driver, const halo_backend_load *load, char *err, size_t errlen)
{
	halo_backend *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "%s backend: out of memory", driver->backend);
		return NULL;
	}
	b->driver = driver;
	b->manifest = load->manifest;
	b->tune = load->tune;
	if (!choose_kernels(b, load, err, errlen) || !open_library(b, err, errlen) ||
	    !open_device(b, load->device, err, errlen) || !upload_weights(b, load, err, errlen) ||
	    !load_modules(b, load->code[driver->target], err, errlen))
		goto fail;
	return b;
fail:
	gpu_backend_destroy(b);
	return NULL;
}

bool gpu_backend_probe(const gpu_driver *driver, int device, char *err, size_t errlen)
{
	halo_backend *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "%s backend: out of memory", driver->backend);
		return false;
	}
	b->driver = driver;
	bool ok = open_library(b, err, errlen) && open_device(b, device, err, errlen);
	gpu_backend_destroy(b);
	return ok;
}

int gpu_backend_devices(const gpu_driver *driver, halo_device_name *out, int max, char *err, size_t errlen)
{
	halo_backend *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "%s backend: out of memory", driver->backend);
		return -1;
	}
	b->driver = driver;
	int count = -1, rc;
	if (!open_library(b, err, errlen) || !count_devices(b, &count, err, errlen)) {
		count = -1;
		goto done;
	}
	for (int i = 0; i < count && i < max; i++) {
		int dev;
		if ((rc = b->api.device_get(&dev, i)) != 0 ||
		    (rc = b->api.device_name(out[i].name, (int)sizeof out[i].name, dev)) != 0) {
			snprintf(err, errlen, "%s backend: naming device %d: %s", driver->backend, i,
				 driver->describe(&b->api, rc));
			count = -1;
			break;
		}
	}
done:
	gpu_backend_destroy(b);
	return count;
}

int gpu_picked(const halo_backend *b, int choice, halo_pick_source *source)
{
	if (source)
		*source = b->forced[choice] ? HALO_PICK_FORCED : HALO_PICK_HEURISTIC;
	return b->pick[choice];
}

/* Positions -1 keep their pick; the others must have a module (code in
 * the bundle, loaded for tuning). Checked before anything changes. */
bool gpu_set_picks(halo_backend *b, const int *picks, char *err, size_t errlen)
{
	const halo_manifest *m = b->manifest;
	if (!b->tune) {
		snprintf(err, errlen, "%s backend: picks change only on a model opened for tuning", b->driver->backend);
		return false;
	}
	for (int c = 0; c < m->n_choices; c++)
		if (picks[c] >= m->choices[c].n || (picks[c] >= 0 && !b->modules[m->choices[c].kernel[picks[c]]])) {
			snprintf(err, errlen, "%s backend: candidate %d of kernel choice %s has no %s code in the bundle",
				 b->driver->backend, picks[c], m->choices[c].key, halo_targets[b->driver->target].name);
			return false;
		}
	for (int c = 0; c < m->n_choices; c++)
		if (picks[c] >= 0) {
			b->pick[c] = picks[c];
			b->forced[c] = true;
		}
	return true;
}

bool gpu_runs_kernel(const halo_backend *b, int kernel)
{
	return has_code(b, kernel);
}

void gpu_device(const halo_backend *b, halo_device_id *out)
{
	memset(out, 0, sizeof(*out));
	out->vendor = b->driver->pci_vendor;
	/* The needs are Vulkan device features; a HIP twin meets them all on
	 * both targets (its subgroup ops are the hardware's, sm_90's coopmat
	 * twin is fma), so none rules a candidate out here: code does. */
	out->features = halo_need_known();
	if (b->api.device_name((char *)out->name, (int)sizeof(out->name), b->device) != 0)
		snprintf(out->name, sizeof(out->name), "%s device %d", b->driver->backend, b->device);
}

int gpu_validation_messages(const halo_backend *b)
{
	(void)b;
	return 0;
}

/* The device address of an operand: its space's base plus its offset (a
 * pos_rows operand's kernel adds the pos rows itself). */
static gpu_dptr operand_ptr(const halo_backend_session *s, const halo_tensor_ref *t)
{
	switch (t->space) {
	case HALO_SPACE_WEIGHT:
		return s->b->weights + t->offset;
	case HALO_SPACE_STATE:
		return s->state + t->offset;
	case HALO_SPACE_ACT:
	case HALO_SPACE_COUNT:
		break;
	}
	return s->act + t->offset;
}

static bool make_args(halo_backend_session *s, const halo_dispatch *d, gpu_args *a, char *err, size_t errlen)
{
	const halo_backend *b = s->b;
	const halo_kernel *k = &b->manifest->kernels[b->manifest->choices[d->choice].kernel[b->pick[d->choice]]];
	int n_ops = d->n_in + d->n_extra + d->n_out;
	if (k->n_bindings != (uint32_t)n_ops + 1 || k->n_bindings > GPU_MAX_BINDINGS) {
		snprintf(err, errlen, "%s backend: dispatch '%s': kernel %s has %u bindings, the dispatch %d operands + "
				      "step (at most %d)",
			 b->driver->backend, d->node, k->signature, k->n_bindings, n_ops, GPU_MAX_BINDINGS);
		return false;
	}
	for (int i = 0; i < n_ops; i++)
		a->b[i] = operand_ptr(s, &d->operand[i]);
	a->b[n_ops] = s->step;
	return true;
}

static bool make_session_args(halo_backend_session *s, char *err, size_t errlen)
{
	const halo_manifest *m = s->b->manifest;
	s->args = calloc((size_t)m->n_entries + 1, sizeof(*s->args));
	if (!s->args)
		return oom(s->b, err, errlen);
	for (int e = 0; e < m->n_entries; e++) {
		const halo_entry *en = &m->entries[e];
		s->args[e] = calloc((size_t)en->n_dispatch + 1, sizeof(**s->args));
		if (!s->args[e])
			return oom(s->b, err, errlen);
		for (int d = 0; d < en->n_dispatch; d++)
			if (!make_args(s, &en->dispatch[d], &s->args[e][d], err, errlen))
				return false;
	}
	return true;
}

static void destroy_events(halo_backend_session *s)
{
	for (int i = 0; i < s->n_events; i++)
		if (s->events[i])
			s->b->api.event_destroy(s->events[i]);
	free(s->events);
	s->events = NULL;
	s->n_events = 0;
}

void gpu_session_destroy(halo_backend_session *s)
{
	if (!s)
		return;
	const halo_backend *b = s->b;
	if (b->api.ctx_set_current(b->ctx) == 0) {
		destroy_events(s);
		gpu_dptr bufs[] = {s->state, s->act, s->step, s->chain};
		for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
			if (bufs[i])
				b->api.mem_free(bufs[i]);
	}
	for (int e = 0; s->args && e < b->manifest->n_entries; e++)
		free(s->args[e]);
	free(s->args);
	free(s->out);
	free(s);
}

halo_backend_session *gpu_session_create(halo_backend *b, char *err, size_t errlen)
{
	halo_backend_session *s = calloc(1, sizeof(*s));
	if (!s) {
		oom(b, err, errlen);
		return NULL;
	}
	s->b = b;
	uint64_t act = 0;
	for (int i = 0; i < b->manifest->n_entries; i++)
		act = b->manifest->entries[i].act_bytes > act ? b->manifest->entries[i].act_bytes : act;
	uint64_t state = b->manifest->state_bytes;
	int rc;
	if (!current(b, err, errlen))
		goto fail;
	if ((rc = b->api.mem_alloc(&s->state, state ? state : 4)) != 0 ||
	    (rc = b->api.mem_alloc(&s->act, act ? act : 4)) != 0 || (rc = b->api.mem_alloc(&s->step, 16)) != 0 ||
	    (rc = b->api.mem_alloc(&s->chain, CHAIN_TOKENS + HALO_CHAIN_MAX * sizeof(int32_t))) != 0) {
		fail_rc(b, rc, "allocating a session's arenas", err, errlen);
		goto fail;
	}
	if (make_session_args(s, err, errlen))
		return s;
fail:
	gpu_session_destroy(s);
	return NULL;
}

/* Waits for everything launched on the default stream. */
static bool finish(const halo_backend *b, const char *what, char *err, size_t errlen)
{
	CALL(b, b->api.stream_synchronize(NULL), what);
	return true;
}

bool gpu_state_clear(halo_backend_session *s, char *err, size_t errlen)
{
	const halo_backend *b = s->b;
	uint64_t n = b->manifest->state_bytes;
	if (!current(b, err, errlen))
		return false;
	CALL(b, b->api.memset_d8_async(s->state, 0, n ? n : 4, NULL), "clearing the state");
	return finish(b, "clearing the state", err, errlen);
}

/* Profiling's events: one before the entry's first dispatch and one after
 * each, made at the first profiled step of an entry longer than any before. */
static bool ensure_events(halo_backend_session *s, int n, char *err, size_t errlen)
{
	const halo_backend *b = s->b;
	if (n <= s->n_events)
		return true;
	destroy_events(s);
	s->events = calloc((size_t)n, sizeof(*s->events));
	if (!s->events)
		return oom(b, err, errlen);
	s->n_events = n;
	for (int i = 0; i < n; i++)
		CALL(b, b->api.event_create(&s->events[i], 0), "creating a profiling event");
	return true;
}

static bool launch(halo_backend_session *s, const halo_entry *e, int d, int64_t T, char *err, size_t errlen)
{
	const halo_backend *b = s->b;
	const halo_dispatch *dp = &e->dispatch[d];
	int k = b->manifest->choices[dp->choice].kernel[b->pick[dp->choice]];
	const halo_kernel *kn = &b->manifest->kernels[k];
	gpu_args *a = &s->args[e - b->manifest->entries][d];
	a->T = (uint32_t)T;
	void *params[] = {a};
	uint32_t g[3];
	for (int i = 0; i < 3; i++)
		g[i] = halo_grid_eval(kn->groups[i], T);
	if (g[0] == 0 || g[1] == 0 || g[2] == 0) /* an empty grid: nothing to run (drivers refuse it) */
		return true;
	void *f = T == 1 && b->functions_t1[k] ? b->functions_t1[k] : b->functions[k];
	int rc = b->api.launch_kernel(f, g[0], g[1], g[2], kn->local[0], kn->local[1], kn->local[2], 0, NULL, params,
				      NULL);
	if (rc == 0)
		return true;
	char what[512];
	snprintf(what, sizeof(what), "launching dispatch '%s' (kernel %s)", dp->node, kn->signature);
	return fail_rc(b, rc, what, err, errlen);
}

static bool add_dispatch_times(halo_backend_session *s, const halo_entry *e, double *dispatch_ns, char *err,
			       size_t errlen)
{
	const halo_backend *b = s->b;
	CALL(b, b->api.event_synchronize(s->events[e->n_dispatch]), "waiting for the profiling events");
	for (int i = 0; i < e->n_dispatch; i++) {
		float ms = 0;
		CALL(b, b->api.event_elapsed_ms(&ms, s->events[i], s->events[i + 1]), "reading a profiling event");
		dispatch_ns[i] += (double)ms * 1e6;
	}
	return true;
}

bool gpu_run(halo_backend_session *s, const halo_entry *e, int64_t T, int64_t pos, const int32_t *tokens,
	     const void **out, double *dispatch_ns, char *err, size_t errlen)
{
	const halo_backend *b = s->b;
	size_t bytes = halo_tensor_bytes(&e->output.t, T);
	if (bytes > s->out_cap) {
		void *grown = realloc(s->out, bytes);
		if (!grown)
			return oom(b, err, errlen);
		s->out = grown;
		s->out_cap = bytes;
	}
	if (!current(b, err, errlen) || (dispatch_ns && !ensure_events(s, e->n_dispatch + 1, err, errlen)))
		return false;
	uint32_t step[4] = {(uint32_t)pos, (uint32_t)T, 0, 0};
	/* Synchronous copies on the default stream: they start after the
	 * previous step's work and end before the first launch. */
	CALL(b, b->api.memcpy_htod(s->step, step, sizeof(step)), "writing the step record");
	CALL(b, b->api.memcpy_htod(s->act + e->input.t.offset, tokens, (size_t)T * sizeof(int32_t)),
	     "writing the token ids");
	if (dispatch_ns)
		CALL(b, b->api.event_record(s->events[0], NULL), "recording a profiling event");
	for (int d = 0; d < e->n_dispatch; d++) {
		if (!launch(s, e, d, T, err, errlen))
			return false;
		if (dispatch_ns)
			CALL(b, b->api.event_record(s->events[d + 1], NULL), "recording a profiling event");
	}
	/* Waits for the launches: a kernel's fault is reported here. */
	CALL(b, b->api.memcpy_dtoh(s->out, s->act + e->output.t.offset, bytes), "running the step (reading the logits)");
	*out = s->out;
	return !dispatch_ns || add_dispatch_times(s, e, dispatch_ns, err, errlen);
}

bool gpu_chain(halo_backend_session *s, const halo_entry *e, int64_t pos, int32_t first, int64_t k, int32_t *out,
	       char *err, size_t errlen)
{
	const halo_backend *b = s->b;
	if (!current(b, err, errlen))
		return false;
	uint32_t rec[HALO_CHAIN_MAX][4];
	for (int64_t i = 0; i < k; i++)
		memcpy(rec[i], (uint32_t[4]){(uint32_t)(pos + i), 1, 0, 0}, sizeof(rec[i]));
	gpu_dptr in = s->act + e->input.t.offset;
	gpu_dptr tok = s->act + e->output.t.offset + halo_entry_last_row(e, 1);
	/* The records and the first token go up once; then everything is
	 * ordered on the default stream: each step's record and token are
	 * device copies, and the tokens come back once at the end. */
	CALL(b, b->api.memcpy_htod(s->chain, rec, (size_t)k * sizeof(rec[0])), "writing the chain's step records");
	CALL(b, b->api.memcpy_htod(in, &first, sizeof(first)), "writing the chain's first token");
	for (int64_t i = 0; i < k; i++) {
		CALL(b, b->api.memcpy_dtod_async(s->step, s->chain + (gpu_dptr)i * sizeof(rec[0]), sizeof(rec[0]), NULL),
		     "copying a step record");
		/* the memory plan may give the token the input's bytes */
		if (i > 0 && tok != in)
			CALL(b, b->api.memcpy_dtod_async(in, tok, sizeof(int32_t), NULL), "passing a token on");
		for (int d = 0; d < e->n_dispatch; d++)
			if (!launch(s, e, d, 1, err, errlen))
				return false;
		CALL(b, b->api.memcpy_dtod_async(s->chain + CHAIN_TOKENS + (gpu_dptr)i * sizeof(int32_t), tok,
						 sizeof(int32_t), NULL),
		     "keeping a token");
	}
	CALL(b, b->api.memcpy_dtoh(out, s->chain + CHAIN_TOKENS, (size_t)k * sizeof(int32_t)),
	     "running the chain (reading its tokens)");
	return true;
}

void gpu_checkpoint_destroy(halo_backend_checkpoint *c)
{
	if (!c)
		return;
	const halo_backend *b = c->s->b;
	if (c->buf && b->api.ctx_set_current(b->ctx) == 0)
		b->api.mem_free(c->buf);
	free(c);
}

halo_backend_checkpoint *gpu_checkpoint_create(halo_backend_session *s, char *err, size_t errlen)
{
	halo_backend_checkpoint *c = calloc(1, sizeof(*c));
	if (!c) {
		oom(s->b, err, errlen);
		return NULL;
	}
	c->s = s;
	uint64_t size = s->b->manifest->recurrent_bytes;
	int rc = 0;
	if (!current(s->b, err, errlen) || (rc = s->b->api.mem_alloc(&c->buf, size ? size : 4)) != 0) {
		if (rc)
			fail_rc(s->b, rc, "allocating a checkpoint", err, errlen);
		gpu_checkpoint_destroy(c);
		return NULL;
	}
	return c;
}

/* One device-to-device copy per recurrent range (manifest->recurrent),
 * packed in the checkpoint, ordered after the steps before it. */
bool gpu_checkpoint_copy(halo_backend_checkpoint *c, bool save, char *err, size_t errlen)
{
	const halo_backend *b = c->s->b;
	const halo_manifest *m = b->manifest;
	if (!current(b, err, errlen))
		return false;
	for (int i = 0; i < m->n_recurrent; i++) {
		const halo_state_range *r = &m->recurrent[i];
		gpu_dptr state = c->s->state + r->offset, packed = c->buf + r->packed;
		CALL(b, b->api.memcpy_dtod_async(save ? packed : state, save ? state : packed, r->size, NULL),
		     save ? "saving a checkpoint" : "restoring a checkpoint");
	}
	return finish(b, save ? "saving a checkpoint" : "restoring a checkpoint", err, errlen);
}

bool gpu_keep_slot(halo_backend_session *s, int64_t slot, char *err, size_t errlen)
{
	const halo_backend *b = s->b;
	const halo_manifest *m = b->manifest;
	if (!current(b, err, errlen))
		return false;
	for (int i = 0; i < m->n_slots; i++) {
		const halo_state_slots *k = &m->slots[i];
		CALL(b, b->api.memcpy_dtod_async(s->state + k->state, s->state + k->slots + (uint64_t)slot * k->size, k->size,
						 NULL),
		     "keeping a state slot");
	}
	return finish(b, "keeping a state slot", err, errlen);
}
