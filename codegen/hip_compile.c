/* clang-19 for the HIP dialect's targets (hip_compile.h). */
#include "codegen/hip_compile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* A scratch directory and the files in it; the directory doubles as the
 * empty CUDA installation clang is pointed at. */
typedef struct {
	char dir[64];
	char in[96], out[96], log[96];
} scratch;

static bool scratch_make(scratch *s)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !tmp[0] || strlen(tmp) > 40)
		tmp = "/tmp";
	snprintf(s->dir, sizeof s->dir, "%s/halo-hip-XXXXXX", tmp);
	if (!mkdtemp(s->dir))
		return false;
	snprintf(s->in, sizeof s->in, "%s/in", s->dir);
	snprintf(s->out, sizeof s->out, "%s/out", s->dir);
	snprintf(s->log, sizeof s->log, "%s/log", s->dir);
	return true;
}

static void scratch_remove(const scratch *s)
{
	unlink(s->in);
	unlink(s->out);
	unlink(s->log);
	rmdir(s->dir);
}

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return false;
	size_t n = strlen(text);
	bool ok = fwrite(text, 1, n, f) == n;
	return fclose(f) == 0 && ok;
}

static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = NULL;
	long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = 0; /* PTX is text: keep it a string for the checks below */
		*size = (size_t)n;
	}
	return buf;
}

/* The first lines of clang's messages, as the error. */
static void report_log(const scratch *s, const char *name, int status, char *err, size_t errlen)
{
	size_t n = 0;
	uint8_t *log = read_file(s->log, &n);
	if (n > 1500)
		log[1500] = 0;
	snprintf(err, errlen, "%s: clang-19 failed (status %d)%s%s", name, status, log && log[0] ? ":\n" : "",
		 log ? (const char *)log : "");
	free(log);
}

/* Runs argv with stdin from s->in, stderr into s->log and, with
 * capture, stdout into s->out; the exit status, or -1 when it could not
 * start. */
static int run(char *const *argv, const scratch *s, bool capture)
{
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return -1;
	posix_spawn_file_actions_addopen(&fa, 0, s->in, O_RDONLY, 0);
	if (capture)
		posix_spawn_file_actions_addopen(&fa, 1, s->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, s->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return -1;
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* PTX names every function it calls but does not define with `.extern
 * .func`: a libm call the compatibility header let through (no device
 * library is linked) would fail only when the driver loads the module. */
static bool ptx_self_contained(const uint8_t *ptx, const char *name, char *err, size_t errlen)
{
	const char *ext = strstr((const char *)ptx, ".extern .func");
	if (!ext)
		return true;
	const char *eol = strchr(ext, '\n');
	snprintf(err, errlen, "%s: the PTX calls a function it does not define: %.*s", name,
		 (int)(eol ? eol - ext : 80), ext);
	return false;
}

/* The program run and its `--version` text (clang's version and build):
 * the compiler part of a cached object's key (a $HALO_CLANG wrapper is
 * another compiler). `--version` runs once per process and program (the
 * kernels of a compile use one). Empty when it cannot say, and nothing is
 * cached. */
static void clang_identity(const char *clang, char *out, size_t outlen)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char memo_clang[256], memo_text[512];
	pthread_mutex_lock(&lock);
	if (strcmp(memo_clang, clang) != 0) {
		memo_text[0] = 0;
		scratch s;
		char *argv[] = {(char *)clang, "--version", NULL};
		if (scratch_make(&s)) {
			size_t n;
			uint8_t *text = write_file(s.in, "") && run(argv, &s, true) == 0 ? read_file(s.out, &n) : NULL;
			if (text)
				snprintf(memo_text, sizeof memo_text, "%s", (const char *)text);
			free(text);
			scratch_remove(&s);
		}
		snprintf(memo_clang, sizeof memo_clang, "%s", clang);
	}
	if (memo_text[0])
		snprintf(out, outlen, "%s: %s", clang, memo_text);
	else
		out[0] = 0;
	pthread_mutex_unlock(&lock);
}

/* argv's flags without the scratch paths: the key's options. */
static void flags_text(char *const *argv, const scratch *s, char *out, size_t outlen)
{
	size_t at = 0;
	out[0] = 0;
	for (int i = 1; argv[i] && at < outlen; i++)
		if (!strstr(argv[i], s->dir))
			at += (size_t)snprintf(out + at, outlen - at, "%s ", argv[i]);
}

bool cg_hip_compile(cg_gpu_arch arch, const char *source, const char *name, const cg_kernel_cache *cache,
		    uint8_t **out, size_t *size, char *err, size_t errlen)
{
	*out = NULL;
	scratch s;
	if (!scratch_make(&s)) {
		snprintf(err, errlen, "%s: cannot make a scratch directory: %s", name, strerror(errno));
		return false;
	}
	const char *clang = getenv("HALO_CLANG");
	char cuda_path[96];
	snprintf(cuda_path, sizeof cuda_path, "--cuda-path=%s", s.dir);
	/* -Werror=undef: a template's #if on a macro no part of the kernel has
	 * defined yet is an error, not 0. The twins' parts are emitted in two
	 * places (file scope, then the struct: codegen/emit_hip.c), so a macro
	 * tested before its definition went unnoticed once (matvec.hip's QPW on
	 * WQ_NIB, every q4_k column wrong on cuda). */
	char *amd[] = {(char *)(clang ? clang : "clang-19"), "-x", "hip", "--offload-arch=gfx1151", "-nogpulib",
		       "-nogpuinc", "--cuda-device-only", "--no-gpu-bundle-output", "-fuse-cuid=none", "-O3",
		       "-Werror=undef", "-Xoffload-linker", "--no-undefined", "-o", s.out, "-", NULL};
	/* Without a CUDA installation clang knows no PTX version, so it enables
	 * none of the builtins that need one (the warp shuffle and sync);
	 * PTX 7.8 is sm_90's own minimum, what the PTX declares anyway. */
	char *nv[] = {(char *)(clang ? clang : "clang-19"), "-x", "cuda", "--cuda-gpu-arch=sm_90", cuda_path,
		      "--cuda-feature=+ptx78", "-nocudainc", "-nocudalib", "--cuda-device-only", "-O3", "-Werror=undef",
		      "-S", "-o", s.out, "-", NULL};
	char *const *argv = arch == CG_ARCH_GFX1151 ? amd : nv;
	char identity[512] = "", flags[1024];
	if (cache)
		clang_identity(argv[0], identity, sizeof identity);
	flags_text(argv, &s, flags, sizeof flags);
	const cg_kernel_key key = {identity, flags, source};
	if (identity[0] && cg_kernel_cache_get(cache, &key, out, size)) {
		scratch_remove(&s);
		return true;
	}
	bool ok = write_file(s.in, source);
	int status = ok ? run(argv, &s, false) : -1;
	if (!ok)
		snprintf(err, errlen, "%s: cannot write %s: %s", name, s.in, strerror(errno));
	else if (status < 0)
		snprintf(err, errlen, "%s: cannot run %s (install clang-19, or set HALO_CLANG)", name, amd[0]);
	else if (status != 0)
		report_log(&s, name, status, err, errlen);
	else if (!(*out = read_file(s.out, size)))
		snprintf(err, errlen, "%s: clang-19 wrote no output", name);
	else if (arch == CG_ARCH_SM90 && !ptx_self_contained(*out, name, err, errlen)) {
		free(*out);
		*out = NULL;
	}
	if (*out && identity[0])
		cg_kernel_cache_put(cache, &key, *out, *size);
	scratch_remove(&s);
	return *out != NULL;
}
