/* The backend registry (runtime/backend_registry.c): its names in order,
 * the error for an unknown name (every known name listed), and
 * halo_model_open refusing an unknown backend before it reads the bundle. */
#include <stdio.h>
#include <string.h>

#include "runtime/halo.h"
#include "tests/check.h"

static void check_names(void)
{
	static const char *const want[] = {"ref", "vulkan", "cuda", "hip"};
	enum { N = sizeof(want) / sizeof(want[0]) };
	char err[256];
	for (int i = 0; i < N; i++) {
		const char *name = halo_backend_name(i);
		CHECK(name && strcmp(name, want[i]) == 0, "backend %d: got %s, want %s", i, name ? name : "NULL", want[i]);
		CHECK(halo_backend_check(want[i], err, sizeof(err)), "'%s' is not known: %s", want[i], err);
	}
	CHECK(halo_backend_name(N) == NULL && halo_backend_name(-1) == NULL, "names past the registry");
}

static void check_unknown(void)
{
	char err[256] = "";
	const char *want = "unknown backend 'metal' (known: ref, vulkan, cuda, hip)";
	CHECK(!halo_backend_check("metal", err, sizeof(err)), "'metal' is known");
	CHECK(strcmp(err, want) == 0, "error: got '%s', want '%s'", err, want);
	CHECK(!halo_backend_check("CUDA", err, sizeof(err)), "names are case-sensitive, 'CUDA' is known");
	/* A short buffer gets a truncated, terminated message. */
	char small[16];
	CHECK(!halo_backend_check("metal", small, sizeof(small)) && strlen(small) == sizeof(small) - 1,
	      "short buffer: '%s'", small);
}

/* ref runs everywhere; an unknown name is refused; cuda and hip may or may
 * not run here, but a refusal says why. */
static void check_probe(void)
{
	char err[512] = "";
	CHECK(halo_backend_probe("ref", -1, err, sizeof(err)), "ref does not probe: %s", err);
	CHECK(!halo_backend_probe("metal", -1, err, sizeof(err)) && strstr(err, "unknown backend 'metal'"),
	      "probe 'metal': %s", err);
	static const char *const gpu[] = {"cuda", "hip"};
	for (int i = 0; i < 2; i++) {
		err[0] = '\0';
		bool here = halo_backend_probe(gpu[i], -1, err, sizeof(err));
		CHECK(here || strstr(err, "unavailable here"), "probe %s: '%s'", gpu[i], err);
		printf("%s: %s\n", gpu[i], here ? "runs here" : err);
	}
}

/* Device lists: ref's one CPU, an unknown name refused, and a GPU
 * backend's devices where its driver is (their count agrees with a probe
 * of device 0), else why not. */
static void check_devices(void)
{
	halo_device_name dev[4];
	char err[512] = "";
	CHECK(halo_backend_devices("ref", dev, 4, err, sizeof(err)) == 1 && strstr(dev[0].name, "CPU"),
	      "ref's devices: %s", err);
	CHECK(halo_backend_devices("metal", dev, 4, err, sizeof(err)) == -1 && strstr(err, "unknown backend 'metal'"),
	      "devices of 'metal': %s", err);
	static const char *const gpu[] = {"cuda", "hip"};
	for (int i = 0; i < 2; i++) {
		err[0] = '\0';
		int n = halo_backend_devices(gpu[i], dev, 4, err, sizeof(err));
		char why[512] = "";
		bool here = halo_backend_probe(gpu[i], 0, why, sizeof(why));
		CHECK(n >= 0 || strstr(err, "unavailable here"), "devices of %s: '%s'", gpu[i], err);
		CHECK(here == (n > 0), "%s: %d devices listed, but a probe of device 0 %s", gpu[i], n,
		      here ? "finds it" : why);
		for (int d = 0; d < n && d < 4; d++)
			printf("%s device %d: %s\n", gpu[i], d, dev[d].name);
	}
}

/* The backend is looked up first: the error names it, not the missing file. */
static void check_open(void)
{
	char err[256] = "";
	halo_open_options o = {.backend = "metal", .device = -1};
	halo_model *m = halo_model_open("no/such/bundle.halo", &o, err, sizeof(err));
	CHECK(!m && strstr(err, "unknown backend 'metal'"), "open with backend 'metal': %s", m ? "opened" : err);
	halo_model_close(m);
}

int main(void)
{
	check_names();
	check_unknown();
	check_probe();
	check_devices();
	check_open();
	if (check_failures)
		return 1;
	puts("backend registry: ok");
	return 0;
}
