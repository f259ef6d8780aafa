/* The backend op suite (ggml's test-backend-ops is the model): every case of
 * tests/ops/op_cases.c is compiled once (random weights, a seed per case,
 * the targets of the backends asked for) and run on the ref backend, whose
 * outputs are the oracle, then on every other backend asked for that is
 * present here, and compared with ref within the case's tolerance.
 *
 * usage: backend_ops [--write DIR | --read DIR] BACKENDS [CASE...]
 *
 * BACKENDS is a comma-separated list of registry names (ref, vulkan, cuda,
 * hip); CASE names run those cases only. Each backend asked for runs the
 * sequence S: a prefill step of t_prefill tokens, then decode steps of
 * T = 1..5, every row's output kept. On each (ref included):
 * - S against ref's S, within the case's tolerance;
 * - S run twice on fresh sessions: bitwise equal;
 * - batch invariance, where the case promises it: S' (the same prefill, then
 *   the 15 decode tokens one step each) bitwise equal to S.
 * On a GPU backend the model is opened for tuning, and after the heuristic's
 * picks every other candidate of every kernel choice that the backend runs
 * is picked in turn (halo_model_set_picks) and checked against ref (and S'),
 * so every variant a bundle carries is covered (on cuda and hip those the
 * bundle has code for: every one in the bundles --write makes); a variant
 * that only prefill runs is checked on the prefill step alone. A case may name the kernels it
 * sweeps (op_case.sweep). HALO_OPS_NO_SWEEP=1 runs the heuristic's picks
 * only (tools/scripts/test-all.sh's sanitized pass: the host code a variant
 * runs is the same for every variant, and the sweep triples the time).
 *
 * A backend asked for whose driver or device is absent (halo_backend_probe)
 * is skipped, saying so; when every backend asked for other than ref is
 * absent the test exits 77 (skipped), unless HALO_REQUIRE_GPU=1, which makes
 * any absent backend a failure (for the GPU machine).
 *
 * The GPU machine has no clang-19 to make PTX: --write DIR compiles each
 * case's bundle into DIR/CASE.halo here, with cuda and hip code for every
 * candidate, and runs nothing (tools/gpu/pack.sh),
 * --read DIR runs those bundles instead of compiling
 * (tools/gpu/backend-ops.sh). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/compile.h"
#include "kernels/gpu_target.h"
#include "runtime/tuning.h"
#include "tests/check.h"
#include "tests/ops/op_cases.h"

enum { MAX_BACKENDS = 4 };


static bool require_gpu(void)
{
	const char *r = getenv("HALO_REQUIRE_GPU");
	return r && strcmp(r, "1") == 0;
}

/* ---- the model file ------------------------------------------------------ */

/* Each line of items, indented. */
static void put_items(FILE *f, const char *indent, const char *items)
{
	for (const char *p = items; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n)
			fprintf(f, "%s%.*s\n", indent, (int)n, p);
		p += n + (nl != NULL);
	}
}

/* Declarations, each with `hf: <its key>` added inside its flow mapping. */
static void put_decls(FILE *f, const char *items)
{
	for (const char *p = items; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *colon = memchr(p, ':', n), *close = n ? p + n - 1 : p;
		if (n && colon && *close == '}')
			fprintf(f, "  %.*s, hf: %.*s}\n", (int)(close - p), p, (int)(colon - p), p);
		else if (n)
			fprintf(f, "  %.*s\n", (int)n, p);
		p += n + (nl != NULL);
	}
}

static bool write_model(const op_case *c, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	fprintf(f, "model: op_%s\nhf_model_types: [op_case]\nparams:\n  n_ctx: {default: %d}\n", c->name,
		c->n_ctx ? c->n_ctx : OPS_N_CTX);
	put_items(f, "  ", c->params);
	fprintf(f, "weights:\n  tok_embd: {shape: [vocab, H], hf: tok_embd}\n");
	if (c->weights)
		put_decls(f, c->weights);
	if (c->state) {
		fprintf(f, "state:\n");
		put_items(f, "  ", c->state);
	}
	fprintf(f, "graphs:\n  forward:\n    inputs:\n      tokens: {shape: [T], dtype: i32}\n    body:\n"
		   "      - {op: embed, out: x, in: [tok_embd, tokens]}\n");
	put_items(f, "      ", c->body);
	fprintf(f, "    outputs: [logits]\nentries:\n  prefill: {graph: forward, tokens: [1, %d], logits: all}\n"
		   "  decode: {graph: forward, tokens: [1, %d], logits: all}\n",
		OPS_T_PREFILL_MAX, OPS_T_DECODE);
	return fclose(f) == 0;
}

/* FNV-1a of the case's name: its seed, so that adding a case changes no
 * other case's weights or tokens. */
static uint32_t case_seed(const op_case *c)
{
	uint32_t h = 2166136261u;
	for (const char *p = c->name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h;
}

/* The case's model file and config.json in dir, compiled into bundle with
 * random weights for the GPU targets. */
static bool compile_case(const op_case *c, const char *dir, uint32_t targets, const char *bundle)
{
	char model[1024], config[1024], err[4096];
	snprintf(model, sizeof(model), "%s/%s.yaml", dir, c->name);
	snprintf(config, sizeof(config), "%s/config.json", dir);
	FILE *f = fopen(config, "w");
	bool ok = f && fputs("{\"model_type\": \"op_case\"}\n", f) >= 0;
	ok = f && fclose(f) == 0 && ok;
	if (!ok || !write_model(c, model)) {
		fprintf(stderr, "FAIL %s: cannot write %s\n", c->name, dir);
		return false;
	}
	cg_compile_options o = {.model_path = model, .hf_dir = dir, .out_path = bundle, .matrix_dtype = c->matrix,
				.quant = c->quant, .random_weights = true, .seed = case_seed(c),
				.targets = targets, .gpu_all_variants = true, .no_tokenizer = true};
	if (!cg_compile(&o, NULL, err, sizeof(err))) {
		fprintf(stderr, "FAIL %s: compile: %s\n", c->name, err);
		return false;
	}
	return true;
}

/* ---- running a case ------------------------------------------------------ */

typedef struct {
	int t_prefill;
	int64_t rows, vocab;
	int32_t *tokens; /* [rows] */
	/* The entries return ids (an i32 output: halo_session_tokens), one a
	 * row (vocab 1): kept as the output rows' bits. */
	bool ids_out;
} sequence;

static int t_prefill(const op_case *c)
{
	return c->t_prefill ? c->t_prefill : OPS_T_PREFILL;
}

/* One step of n tokens into out's rows; false (reported) on an error. */
static bool step(halo_session *s, const char *entry, const sequence *q, int64_t at, int64_t n, float *out,
		 const char *what)
{
	char err[2048];
	float *rows = out + at * q->vocab;
	if (halo_session_step(s, entry, q->tokens + at, n, q->ids_out ? NULL : rows, err, sizeof(err))) {
		if (q->ids_out)
			memcpy(rows, halo_session_tokens(s, NULL), (size_t)n * sizeof(int32_t));
		return true;
	}
	fprintf(stderr, "FAIL %s: %s step of %lld at %lld: %s\n", what, entry, (long long)n, (long long)at, err);
	check_failures++;
	return false;
}

/* The step sequences: S, the prefill then decode steps of T = 1..5; S'
 * (SEQ_SINGLE), the same tokens, the decode ones a step each; or the
 * prefill step alone. */
typedef enum { SEQ_STEPS, SEQ_SINGLE, SEQ_PREFILL } seq_form;

static bool run_sequence(halo_model *m, const sequence *q, seq_form form, float *out, const char *what)
{
	char err[2048];
	halo_session *s = halo_session_create(m, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "FAIL %s: session: %s\n", what, err);
		check_failures++;
		return false;
	}
	bool ok = step(s, "prefill", q, 0, q->t_prefill, out, what), single = form == SEQ_SINGLE;
	int64_t at = q->t_prefill;
	for (int64_t T = 1; ok && form != SEQ_PREFILL && T <= OPS_T_DECODE; T++)
		for (int64_t i = 0; ok && i < (single ? T : 1); i++) {
			int64_t n = single ? 1 : T;
			ok = step(s, "decode", q, at, n, out, what);
			at += n;
		}
	halo_session_free(s);
	return ok;
}

/* Where row r of S lies: "prefill row r" or "decode step T=m, row i". */
static const char *row_place(const sequence *q, int64_t r, char *buf, size_t len)
{
	if (r < q->t_prefill) {
		snprintf(buf, len, "prefill row %lld", (long long)r);
		return buf;
	}
	int64_t at = r - q->t_prefill, T = 1;
	for (; T < OPS_T_DECODE && at >= T; T++)
		at -= T;
	snprintf(buf, len, "decode step T=%lld, row %lld", (long long)T, (long long)at);
	return buf;
}

/* The error of got[i] against want[i]: 0 when the bits agree, else
 * |got - want| / max(|want|, floor) (tol 0: bitwise, so infinite). */
static double element_error(float got, float want, double tol, double floor)
{
	if (memcmp(&got, &want, sizeof(float)) == 0)
		return 0;
	double e = tol == 0 ? INFINITY : fabs((double)got - want) / fmax(fabs(want), floor);
	return isnan(e) ? INFINITY : e;
}

/* Rows [r0, r1) of S within tol: reports the worst element, its row's
 * place and the worst error of every row on failure; raises *worst_seen. */
static bool close_rows(const char *what, const sequence *q, const float *got, const float *want, int64_t r0,
		       int64_t r1, double tol, double floor, double *worst_seen)
{
	double worst = 0;
	int64_t at = r0 * q->vocab;
	for (int64_t i = r0 * q->vocab; i < r1 * q->vocab; i++) {
		double e = element_error(got[i], want[i], tol, floor);
		if (e > worst)
			worst = e, at = i;
	}
	*worst_seen = fmax(*worst_seen, worst);
	if (worst <= tol)
		return true;
	char place[64];
	fprintf(stderr, "FAIL %s: element %lld (%s) got %.9g want %.9g (error %.3g, tolerance %.3g)\n  worst by row:",
		what, (long long)at, row_place(q, at / q->vocab, place, sizeof(place)), (double)got[at], (double)want[at],
		worst, tol);
	for (int64_t r = r0; r < r1; r++) {
		double w = 0;
		for (int64_t i = r * q->vocab; i < (r + 1) * q->vocab; i++)
			w = fmax(w, element_error(got[i], want[i], tol, floor));
		fprintf(stderr, " %.2g", w);
	}
	fprintf(stderr, "\n");
	check_failures++;
	return false;
}

static bool bitwise(const char *what, const sequence *q, const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
			char place[64];
			fprintf(stderr, "FAIL %s: element %lld (%s) differs: %.9g vs %.9g\n", what, (long long)i,
				row_place(q, i / q->vocab, place, sizeof(place)), (double)a[i], (double)b[i]);
			check_failures++;
			return false;
		}
	return true;
}

/* How much of the checks a run makes: all of them (the heuristic's picks
 * and the backends without choices), those a variant can change (S against
 * ref and S'; a second run of the same kernels adds nothing), or the
 * prefill against ref (a variant only prefill runs). */
typedef enum { CHECK_ALL, CHECK_VARIANT, CHECK_PREFILL } check_depth;

/* S against ref's (want; NULL: ref itself), S again bitwise, and S'
 * bitwise where the case promises batch invariance. worst[0] is raised to
 * the worst error seen (worst[1] to that of the prefill rows, for a case
 * with a prefill tolerance of its own). */
static void check_runs(halo_model *m, const op_case *c, const sequence *q, const float *want, check_depth depth,
		       const char *label, float *got, float *again, double worst[2])
{
	int64_t n = (depth == CHECK_PREFILL ? q->t_prefill : q->rows) * q->vocab;
	char what[512];
	snprintf(what, sizeof(what), "%s %s vs ref", c->name, label);
	if (!run_sequence(m, q, depth == CHECK_PREFILL ? SEQ_PREFILL : SEQ_STEPS, got, what))
		return;
	int64_t rows = n / q->vocab;
	if (want && c->prefill_tol) {
		if (!close_rows(what, q, got, want, 0, q->t_prefill, c->prefill_tol, c->floor, &worst[1]))
			fprintf(stderr, "  the prefill tolerance's reason: %s\n", c->prefill_why);
		if (!close_rows(what, q, got, want, q->t_prefill, rows, c->tol, c->floor, &worst[0]))
			fprintf(stderr, "  the tolerance's reason: %s\n", c->why);
	} else if (want && !close_rows(what, q, got, want, 0, rows, c->tol, c->floor, &worst[0]))
		fprintf(stderr, "  the tolerance's reason: %s\n", c->why);
	snprintf(what, sizeof(what), "%s %s run twice", c->name, label);
	if (depth == CHECK_ALL && run_sequence(m, q, SEQ_STEPS, again, what))
		bitwise(what, q, got, again, n);
	if (c->batch_variant || depth == CHECK_PREFILL)
		return;
	snprintf(what, sizeof(what), "%s %s decode T=m vs m single steps", c->name, label);
	if (run_sequence(m, q, SEQ_SINGLE, again, what))
		bitwise(what, q, got, again, n);
}

/* Whether Vulkan sweeps every variant (HALO_OPS_NO_SWEEP=1: no). */
static bool sweep_variants(void)
{
	const char *v = getenv("HALO_OPS_NO_SWEEP");
	return !(v && strcmp(v, "1") == 0);
}

/* Vulkan opens with the validation layer on and, to sweep, for tuning
 * (every candidate loaded, picks changeable); the others as they run
 * models. */
static halo_model *open_model(const char *bundle, const char *backend)
{
	char err[2048];
	bool vk = strcmp(backend, "vulkan") == 0, gpu = strcmp(backend, "ref") != 0;
	halo_open_options o = {.backend = backend, .device = -1, .validation = vk, .tune = gpu && sweep_variants()};
	halo_model *m = halo_model_open(bundle, &o, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "FAIL open %s on %s: %s\n", bundle, backend, err);
		check_failures++;
	}
	return m;
}

static double seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Whether the case sweeps the variants of kernel key `key`: its first word
 * is in the case's sweep list, or the case has none. */
static bool swept(const op_case *c, const char *key)
{
	if (!c->sweep)
		return true;
	size_t n = strcspn(key, " ");
	for (const char *w = c->sweep; *w; w += strspn(w, " ")) {
		size_t len = strcspn(w, " ");
		if (len == n && strncmp(w, key, n) == 0)
			return true;
		w += len;
	}
	return false;
}

static int entry_index(const halo_model *m, const char *name)
{
	for (int i = 0; i < halo_model_entry_count(m); i++)
		if (strcmp(halo_model_entry_name(m, i), name) == 0)
			return i;
	return -1;
}

/* Every candidate of every choice other than the heuristic's pick, one
 * choice at a time (the others at the heuristic's): returns how many ran. */
static int check_variants(halo_model *m, const char *backend, const op_case *c, const sequence *q, const float *want,
			  float *got, float *again, double worst[2])
{
	int n = halo_model_choice_count(m), ran = 0, decode = entry_index(m, "decode");
	int *base = malloc((size_t)(n ? n : 1) * sizeof(int)), *picks = malloc((size_t)(n ? n : 1) * sizeof(int));
	for (int i = 0; i < n; i++) {
		halo_choice_info ci;
		halo_model_choice(m, i, &ci);
		base[i] = ci.picked;
	}
	for (int i = 0; i < n; i++) {
		halo_choice_info ci;
		halo_model_choice(m, i, &ci);
		for (int p = 0; p < ci.n_candidates && swept(c, ci.key); p++) {
			halo_candidate_info cand;
			if (p == base[i] || !halo_model_candidate(m, i, p, &cand) || !cand.runs)
				continue;
			memcpy(picks, base, (size_t)n * sizeof(int));
			picks[i] = p;
			char err[2048], label[512];
			if (!halo_model_set_picks(m, picks, err, sizeof(err))) {
				CHECK(false, "%s: pick %d of %s: %s", c->name, p, ci.key, err);
				continue;
			}
			snprintf(label, sizeof(label), "%s %s [%s]", backend, ci.key, cand.tile);
			check_depth depth = halo_model_entry_uses(m, decode, i) ? CHECK_VARIANT : CHECK_PREFILL;
			check_runs(m, c, q, want, depth, label, got, again, worst);
			ran++;
		}
	}
	if (n)
		CHECK(halo_model_set_picks(m, base, (char[256]){0}, 256), "%s: back to the heuristic's picks", c->name);
	free(base);
	free(picks);
	return ran;
}

static void fill_tokens(sequence *q, uint32_t seed)
{
	for (int64_t i = 0; i < q->rows; i++) {
		seed = seed * 1664525u + 1013904223u;
		q->tokens[i] = (int32_t)((seed >> 8) % (uint32_t)q->vocab);
	}
}

/* Runs the bundle on ref, then on each backend present, and prints the
 * case's line (its time counted from started, the compile's included). */
static void run_case(const op_case *c, const char *bundle, const char **backends, int nb, double started)
{
	int before = check_failures;
	halo_model *ref = open_model(bundle, "ref");
	if (!ref)
		return;
	halo_entry_info entry;
	sequence q = {.t_prefill = t_prefill(c), .vocab = halo_model_vocab(ref),
		      .ids_out = halo_model_entry(ref, "prefill", &entry) && entry.tokens_out};
	CHECK(!q.ids_out || q.vocab == 1, "%s: an entry returning ids needs vocab 1, not %lld", c->name,
	      (long long)q.vocab);
	q.rows = q.t_prefill + OPS_DECODE_TOKENS;
	q.tokens = malloc((size_t)q.rows * sizeof(int32_t));
	fill_tokens(&q, case_seed(c));
	size_t bytes = (size_t)(q.rows * q.vocab) * sizeof(float);
	float *want = malloc(bytes), *got = malloc(bytes), *again = malloc(bytes);
	bool oracle = run_sequence(ref, &q, SEQ_STEPS, want, c->name);
	char summary[512] = "";
	for (int b = 0; oracle && b < nb; b++) {
		bool is_ref = strcmp(backends[b], "ref") == 0, vk = strcmp(backends[b], "vulkan") == 0;
		halo_model *m = is_ref ? ref : open_model(bundle, backends[b]);
		if (!m)
			continue;
		double worst[2] = {0, 0};
		check_runs(m, c, &q, is_ref ? NULL : want, CHECK_ALL, backends[b], got, again, worst);
		int variants = !is_ref && sweep_variants() ? check_variants(m, backends[b], c, &q, want, got, again, worst)
							   : 0;
		size_t len = strlen(summary);
		if (is_ref)
			snprintf(summary + len, sizeof(summary) - len, " ref");
		else if (c->prefill_tol)
			snprintf(summary + len, sizeof(summary) - len,
				 " %s (%d variant%s, worst %.2g of %.2g, prefill rows %.2g of %.2g)", backends[b],
				 1 + variants, variants ? "s" : "", worst[0], c->tol, worst[1], c->prefill_tol);
		else
			snprintf(summary + len, sizeof(summary) - len, " %s (%d variant%s, worst %.2g of %.2g)",
				 backends[b], 1 + variants, variants ? "s" : "", worst[0], c->tol);
		if (vk)
			CHECK(halo_model_validation_messages(m) == 0, "%s: validation messages on vulkan", c->name);
		if (!is_ref)
			halo_model_close(m);
	}
	printf("%s %s:%s, %.1f s\n", check_failures == before ? "ok  " : "FAIL", c->name, summary, seconds() - started);
	free(want);
	free(got);
	free(again);
	free(q.tokens);
	halo_model_close(ref);
}

/* ---- main ---------------------------------------------------------------- */

/* The backends named in list (comma-separated) that run here, in *out;
 * absent ones are reported. Exits 2 on an unknown name, 77 (1 under
 * HALO_REQUIRE_GPU=1) when none but ref is present. */
static int present_backends(char *list, const char **out, bool probe)
{
	int n = 0, gpu_asked = 0;
	for (char *save = NULL, *b = strtok_r(list, ",", &save); b; b = strtok_r(NULL, ",", &save)) {
		char why[2048];
		if (!halo_backend_check(b, why, sizeof(why)) || n == MAX_BACKENDS) {
			fprintf(stderr, "%s\n", n == MAX_BACKENDS ? "too many backends" : why);
			exit(2);
		}
		gpu_asked += strcmp(b, "ref") != 0;
		if (probe && !halo_backend_probe(b, -1, why, sizeof(why))) {
			printf("%s: %s\n", require_gpu() ? "FAIL" : "SKIP", why);
			if (require_gpu())
				exit(1);
			continue;
		}
		out[n++] = b;
	}
	int gpu_here = 0;
	for (int i = 0; i < n; i++)
		gpu_here += strcmp(out[i], "ref") != 0;
	if (gpu_asked && !gpu_here) {
		printf("SKIP: no backend asked for is here (HALO_REQUIRE_GPU=1 makes this a failure)\n");
		exit(77);
	}
	return n;
}

/* The GPU targets the backends need (Vulkan's always: cuda and hip bundles
 * carry it as halo compile --targets does). */
static uint32_t targets_for(const char **backends, int nb)
{
	uint32_t t = 1u << HALO_TARGET_VULKAN;
	for (int i = 0; i < nb; i++) {
		int g = halo_target_find(backends[i]);
		if (g > HALO_TARGET_VULKAN)
			t |= 1u << g;
	}
	return t;
}

static bool selected(const op_case *c, char **names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], c->name) == 0)
			return true;
	return n == 0;
}

/* Whether every name asked for is a case's (an unknown one is reported). */
static bool names_known(char **names, int n)
{
	bool ok = true;
	for (int i = 0; i < n; i++) {
		int c = 0;
		while (c < op_case_count && strcmp(op_cases[c].name, names[i]) != 0)
			c++;
		if (c == op_case_count) {
			fprintf(stderr, "backend_ops: no case named '%s' (tests/ops/op_cases.c)\n", names[i]);
			ok = false;
		}
	}
	return ok;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* in order with stderr's check_failures */
	const char *write_dir = NULL, *read_dir = NULL;
	int a = 1;
	if (argc > 2 && strcmp(argv[1], "--write") == 0)
		write_dir = argv[2], a = 3;
	else if (argc > 2 && strcmp(argv[1], "--read") == 0)
		read_dir = argv[2], a = 3;
	if (a >= argc) {
		fprintf(stderr, "usage: backend_ops [--write DIR | --read DIR] BACKENDS [CASE...]\n");
		return 2;
	}
	if (!names_known(argv + a + 1, argc - a - 1))
		return 2;
	const char *backends[MAX_BACKENDS];
	int nb = present_backends(argv[a], backends, !write_dir);
	uint32_t targets = targets_for(backends, nb); /* --write: every name asked for, unprobed */
	if (!write_dir && !read_dir && (targets & ~(1u << HALO_TARGET_VULKAN)) && !getenv("HALO_CLANG") &&
	    system("command -v clang-19 >/dev/null 2>&1") != 0) {
		printf("%s: clang-19 is not installed (nor $HALO_CLANG set): no PTX or code objects to run\n",
		       require_gpu() ? "FAIL" : "SKIP");
		return require_gpu() ? 1 : 77;
	}
	char tmp[] = "/tmp/halo_ops_XXXXXX";
	if (!read_dir && !mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	int ran = 0;
	for (int i = 0; i < op_case_count; i++) {
		const op_case *c = &op_cases[i];
		if (!selected(c, argv + a + 1, argc - a - 1))
			continue;
		char bundle[1024];
		snprintf(bundle, sizeof(bundle), "%s/%s.halo", write_dir ? write_dir : read_dir ? read_dir : tmp,
			 c->name);
		ran++;
		double started = seconds();
		if (!read_dir && !compile_case(c, tmp, targets, bundle)) {
			check_failures++;
			continue;
		}
		if (!write_dir)
			run_case(c, bundle, backends, nb, started);
		if (!write_dir && !read_dir)
			remove(bundle);
	}
	if (!read_dir) {
		char cmd[64];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
		CHECK(system(cmd) == 0, "remove %s", tmp);
	}
	CHECK(ran > 0, "no case named");
	printf("%d case%s, %d failure%s\n", ran, ran == 1 ? "" : "s", check_failures, check_failures == 1 ? "" : "s");
	return check_failures ? 1 : 0;
}
