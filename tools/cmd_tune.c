/* halo tune: times the kernel candidates of a bundle on the present GPU and
 * writes the winners to the tuning DB (docs/tuning.md).
 *
 * Every choice with more than one candidate the device runs is tuned on the
 * bundle's own dispatch shapes: the entries that run it, decode-sized ones
 * (t_max <= TUNE_DECODE_T) at T = t_min and T = t_max, larger ones at t_max.
 * Candidates are timed in rounds: in round i every choice runs its i-th
 * candidate (its last once it has no more), each repetition runs every
 * workload once as a profiled step, and each dispatch's GPU time, divided by
 * the step's token count, is added to its choice: the time per token of every
 * shape counts alike, so the T = 1 steps of plain decode are not outweighed
 * by a verification step's eight tokens. Profiled steps of a model opened for
 * tuning put a barrier before every dispatch, so a dispatch is timed alone
 * and one round measures every choice at once. A candidate's time is the
 * median over the repetitions. A choice's winner is its fastest candidate when that beats
 * the heuristic (the first candidate the device runs) by TUNE_MARGIN, else
 * the heuristic, so a tuned bundle is never slower than the heuristic by the
 * measurement. One choice serves every T of its dispatches: decode and
 * speculative verification run one kernel, tuned on both shapes together. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/halo.h"
#include "runtime/tuning.h"
#include "runtime/tuning_db.h"
#include "tools/cli_args.h"
#include "tools/cli_tuning.h"
#include "tools/commands.h"

/* Entries up to this many tokens per step are decode-sized: their steps run
 * at T = 1 and at speculative verification's widest T. */
#define TUNE_DECODE_T 16
/* A candidate replaces the heuristic only when this much faster: the
 * medians of two equal kernels differ by noise. */
#define TUNE_MARGIN 0.03
#define TUNE_MIN_REPS 5
#define TUNE_WARMUP 2
#define TUNE_MAX_ENTRIES 16

static void tune_usage(FILE *out)
{
	fputs("usage: halo tune BUNDLE.halo [--device N] [--db FILE] [--budget SECONDS]\n"
	      "                 [--entry NAME]... [--reps N] [--validate]\n"
	      "       halo tune --merge SHIPPED.json [--db FILE]\n"
	      "\n"
	      "Times every kernel choice of the bundle that has more than one candidate this GPU\n"
	      "runs, on the bundle's own dispatch shapes, and records each choice's winner in\n"
	      "the tuning DB (a candidate wins only when 3% faster than the heuristic's tile;\n"
	      "otherwise the heuristic's tile is recorded). Progress on stderr, a table of\n"
	      "heuristic vs tuned times on stdout. halo run picks the recorded tiles.\n"
	      "\n"
	      "options:\n"
	      "  --device N        Vulkan device index (see halo devices; default: first GPU)\n"
	      "  --db FILE         the tuning DB to update (default:\n"
	      "                    $XDG_CACHE_HOME/halo/tuning.json, else ~/.cache/halo/tuning.json)\n"
	      "  --budget SECONDS  stop starting new rounds of candidates after this long;\n"
	      "                    the first round (the heuristic) always runs (default: none)\n"
	      "  --entry NAME      tune only the choices of this entry point; repeatable\n"
	      "                    (default: every entry)\n"
	      "  --reps N          timed repetitions per candidate, at least 5 (default 7)\n"
	      "  --validate        Vulkan validation layer on; any message fails the run\n"
	      "  --merge FILE      no tuning: put FILE's records (a DB tuned on another machine,\n"
	      "                    say one shipped for a GPU) into the DB; FILE's win where\n"
	      "                    both have a record of one device, driver and kernel key\n"
	      "  -h, --help        this text\n",
	      out);
}

typedef struct {
	const char *bundle, *device, *db, *budget, *reps, *merge;
	const char *entry[TUNE_MAX_ENTRIES];
	int n_entry;
	bool validate, help;
} tune_args;

static int parse_args(int argc, char **argv, tune_args *a)
{
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *s = argv[i], *entry = NULL;
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			a->help = true;
		else if (strcmp(s, "--validate") == 0)
			a->validate = true;
		else if (cli_take_value("tune", argc, argv, &i, "--entry", &entry, &rc)) {
			if (entry && a->n_entry == TUNE_MAX_ENTRIES)
				rc = cli_usage_error("tune", "more than 16 --entry options (at '%s')", entry);
			else if (entry)
				a->entry[a->n_entry++] = entry;
		} else if (cli_take_value("tune", argc, argv, &i, "--device", &a->device, &rc) ||
			   cli_take_value("tune", argc, argv, &i, "--db", &a->db, &rc) ||
			   cli_take_value("tune", argc, argv, &i, "--budget", &a->budget, &rc) ||
			   cli_take_value("tune", argc, argv, &i, "--reps", &a->reps, &rc) ||
			   cli_take_value("tune", argc, argv, &i, "--merge", &a->merge, &rc))
			continue;
		else if (s[0] == '-')
			rc = cli_usage_error("tune", "unknown option '%s'", s);
		else if (a->bundle)
			rc = cli_usage_error("tune", "more than one bundle given ('%s')", s);
		else
			a->bundle = s;
	}
	return rc;
}

typedef struct {
	int device, reps;
	double budget_s; /* 0: none */
} tune_config;

static int check_args(const tune_args *a, tune_config *c)
{
	int64_t v;
	float f;
	c->device = -1;
	c->reps = 7;
	c->budget_s = 0;
	if (a->merge && (a->bundle || a->device || a->budget || a->reps || a->n_entry || a->validate))
		return cli_usage_error("tune", "%s", "--merge takes only --db (it times nothing)");
	if (a->merge)
		return 0;
	if (!a->bundle)
		return cli_usage_error("tune", "%s", "no bundle given");
	if (a->device && !cli_parse_i64(a->device, 0, 255, &v))
		return cli_usage_error("tune", "--device wants an index, got '%s'", a->device);
	if (a->device)
		c->device = (int)v;
	if (a->reps && !cli_parse_i64(a->reps, TUNE_MIN_REPS, 1000, &v))
		return cli_usage_error("tune", "--reps wants 5..1000 repetitions, got '%s'", a->reps);
	if (a->reps)
		c->reps = (int)v;
	if (a->budget && (!cli_parse_f32(a->budget, &f) || f <= 0))
		return cli_usage_error("tune", "--budget wants seconds > 0, got '%s'", a->budget);
	if (a->budget)
		c->budget_s = f;
	return 0;
}

/* One step shape the tuner runs. */
typedef struct {
	int entry;
	const char *name;
	int64_t T;
	bool caller; /* runs at a caller-given position (step_at at 0) */
} workload;

/* A choice being tuned: the candidates the device runs, heuristic first. */
typedef struct {
	int choice;
	const char *key;
	int n;
	int pos[HALO_CHOICE_MAX_CANDIDATES];   /* candidate positions in the bundle's choice */
	double ns[HALO_CHOICE_MAX_CANDIDATES]; /* median per candidate; < 0 until measured */
} tuned_choice;

typedef struct {
	const tune_config *cfg;
	halo_model *model;
	halo_session *session;
	halo_device_id dev;
	int n_choices; /* the bundle's */
	int n_tc;
	tuned_choice *tc;
	int n_wl;
	workload *wl;
	int32_t *tokens;
	int *picks;      /* [n_choices] */
	double *choice_ns; /* [n_choices] */
	double *samples; /* [reps][n_tc] */
} tuner;

static bool entry_selected(const tune_args *a, const char *name)
{
	for (int i = 0; i < a->n_entry; i++)
		if (strcmp(a->entry[i], name) == 0)
			return true;
	return a->n_entry == 0;
}

/* Every --entry names an entry point of the bundle. */
static bool check_entries(const tune_args *a, const halo_model *m, char *err, size_t errlen)
{
	for (int i = 0; i < a->n_entry; i++) {
		halo_entry_info info;
		if (!halo_model_entry(m, a->entry[i], &info)) {
			snprintf(err, errlen, "%s: no entry point '%s'", a->bundle, a->entry[i]);
			return false;
		}
	}
	return true;
}

/* Whether a selected entry runs choice c. */
static bool choice_selected(const tune_args *a, const halo_model *m, int c)
{
	for (int e = 0; e < halo_model_entry_count(m); e++)
		if (entry_selected(a, halo_model_entry_name(m, e)) && halo_model_entry_uses(m, e, c))
			return true;
	return false;
}

/* The choices worth timing: more than one candidate the device runs, and
 * run by a selected entry. */
static bool plan_choices(tuner *t, const tune_args *a)
{
	t->tc = calloc((size_t)t->n_choices + 1, sizeof(*t->tc));
	if (!t->tc)
		return false;
	for (int c = 0; c < t->n_choices; c++) {
		halo_choice_info info;
		halo_model_choice(t->model, c, &info);
		tuned_choice *tc = &t->tc[t->n_tc];
		*tc = (tuned_choice){.choice = c, .key = info.key};
		for (int p = 0; p < info.n_candidates; p++) {
			halo_candidate_info cand;
			halo_model_candidate(t->model, c, p, &cand);
			if (cand.runs) {
				tc->ns[tc->n] = -1;
				tc->pos[tc->n++] = p;
			}
		}
		if (tc->n > 1 && choice_selected(a, t->model, c))
			t->n_tc++;
	}
	return true;
}

static bool entry_has_tuned_choice(const tuner *t, int e)
{
	for (int i = 0; i < t->n_tc; i++)
		if (halo_model_entry_uses(t->model, e, t->tc[i].choice))
			return true;
	return false;
}

static bool add_workload(tuner *t, int e, const halo_entry_info *info, int64_t T)
{
	workload *grown = realloc(t->wl, (size_t)(t->n_wl + 1) * sizeof(*grown));
	if (!grown)
		return false;
	t->wl = grown;
	t->wl[t->n_wl++] = (workload){e, halo_model_entry_name(t->model, e), T, info->caller_position};
	return true;
}

/* The step shapes: every selected entry that runs a tuned choice. */
static bool plan_workloads(tuner *t, const tune_args *a)
{
	int64_t t_max = 1;
	for (int e = 0; e < halo_model_entry_count(t->model); e++) {
		const char *name = halo_model_entry_name(t->model, e);
		halo_entry_info info;
		if (!entry_selected(a, name) || !entry_has_tuned_choice(t, e) || !halo_model_entry(t->model, name, &info))
			continue;
		bool decode = info.t_max <= TUNE_DECODE_T;
		if (decode && info.t_min < info.t_max && !add_workload(t, e, &info, info.t_min))
			return false;
		if (!add_workload(t, e, &info, info.t_max))
			return false;
		t_max = info.t_max > t_max ? info.t_max : t_max;
	}
	int64_t vocab = halo_model_vocab(t->model);
	t->tokens = malloc((size_t)t_max * sizeof(*t->tokens));
	if (!t->tokens)
		return false;
	for (int64_t i = 0; i < t_max; i++) /* any ids of the vocabulary: the kernels' time does not depend on them */
		t->tokens[i] = (int32_t)((i * 7 + 1) % vocab);
	return true;
}

/* Runs one timed step; its logits stay where the backend put them (no copy
 * to add host time to the kernels' totals). */
static bool run_workload(tuner *t, const workload *w, char *err, size_t errlen)
{
	if (w->caller)
		return halo_session_step_at(t->session, w->name, 0, t->tokens, w->T, NULL, err, errlen);
	/* The session's position only grows: start over before the context is full. */
	if (halo_session_pos(t->session) + w->T > halo_model_n_ctx(t->model) &&
	    !halo_session_reset(t->session, err, errlen))
		return false;
	return halo_session_step(t->session, w->name, t->tokens, w->T, NULL, err, errlen);
}

static bool run_all(tuner *t, char *err, size_t errlen)
{
	for (int i = 0; i < t->n_wl; i++)
		if (!run_workload(t, &t->wl[i], err, errlen))
			return false;
	return true;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of column i of the [reps][n_tc] samples. */
static double median(const tuner *t, int i)
{
	int n = t->cfg->reps;
	double v[1000];
	for (int k = 0; k < n; k++)
		v[k] = t->samples[(size_t)k * (size_t)t->n_tc + (size_t)i];
	qsort(v, (size_t)n, sizeof(v[0]), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Round r: every tuned choice runs its r-th candidate (its last past the
 * end); warm-up steps, then reps profiled repetitions of every workload. */
static bool measure_round(tuner *t, int r, char *err, size_t errlen)
{
	for (int c = 0; c < t->n_choices; c++)
		t->picks[c] = -1;
	for (int i = 0; i < t->n_tc; i++)
		t->picks[t->tc[i].choice] = t->tc[i].pos[r < t->tc[i].n ? r : t->tc[i].n - 1];
	if (!halo_model_set_picks(t->model, t->picks, err, errlen))
		return false;
	for (int k = 0; k < TUNE_WARMUP; k++)
		if (!run_all(t, err, errlen))
			return false;
	for (int k = 0; k < t->cfg->reps; k++) {
		double *row = &t->samples[(size_t)k * (size_t)t->n_tc];
		for (int i = 0; i < t->n_tc; i++)
			row[i] = 0;
		/* per token of each step shape: a T = 8 verification step weighs
		 * as much per token as a T = 1 decode step, not eight times more */
		for (int w = 0; w < t->n_wl; w++) {
			halo_session_profile_clear(t->session);
			if (!run_workload(t, &t->wl[w], err, errlen))
				return false;
			halo_session_choice_ns(t->session, t->choice_ns);
			for (int i = 0; i < t->n_tc; i++)
				row[i] += t->choice_ns[t->tc[i].choice] / (double)t->wl[w].T;
		}
	}
	for (int i = 0; i < t->n_tc; i++)
		if (r < t->tc[i].n)
			t->tc[i].ns[r] = median(t, i);
	return true;
}

static const char *tile_of(const tuner *t, const tuned_choice *tc, int i)
{
	halo_candidate_info cand;
	halo_model_candidate(t->model, tc->choice, tc->pos[i], &cand);
	return cand.tile[0] ? cand.tile : "(none)";
}

/* The fastest measured candidate. */
static int best_of(const tuned_choice *tc)
{
	int best = 0;
	for (int i = 1; i < tc->n; i++)
		if (tc->ns[i] >= 0 && tc->ns[i] < tc->ns[best])
			best = i;
	return best;
}

/* The winner: the fastest when it beats the heuristic by the margin. */
static int winner_of(const tuned_choice *tc)
{
	int best = best_of(tc);
	return tc->ns[best] < tc->ns[0] * (1.0 - TUNE_MARGIN) ? best : 0;
}

static void progress(const tuner *t, int r, int rounds)
{
	for (int i = 0; i < t->n_tc; i++) {
		const tuned_choice *tc = &t->tc[i];
		if (r >= tc->n)
			continue;
		int best = best_of(tc);
		fprintf(stderr, "halo tune: round %d/%d, choice %d/%d %s: %s %.1f us (best so far %s %.1f us)\n", r + 1,
			rounds, i + 1, t->n_tc, tc->key, tile_of(t, tc, r), tc->ns[r] / 1e3, tile_of(t, tc, best),
			tc->ns[best] / 1e3);
	}
}

static int rounds_of(const tuner *t)
{
	int rounds = 0;
	for (int i = 0; i < t->n_tc; i++)
		rounds = t->tc[i].n > rounds ? t->tc[i].n : rounds;
	return rounds;
}

/* All rounds, or as many as the budget allows: a round starts only when the
 * last one's duration still fits; the first (the heuristic) always runs. */
static bool measure(tuner *t, char *err, size_t errlen)
{
	int rounds = rounds_of(t);
	double start = cli_now_s(), last = 0;
	for (int r = 0; r < rounds; r++) {
		double elapsed = cli_now_s() - start;
		if (r > 0 && t->cfg->budget_s > 0 && elapsed + last > t->cfg->budget_s) {
			fprintf(stderr, "halo tune: budget of %.1f s reached after %d of %d rounds (%.1f s)\n",
				t->cfg->budget_s, r, rounds, elapsed);
			break;
		}
		double t0 = cli_now_s();
		if (!measure_round(t, r, err, errlen))
			return false;
		last = cli_now_s() - t0;
		progress(t, r, rounds);
	}
	return true;
}

/* Rounded to 0.1 ns: digits past the timer's resolution are noise in the DB. */
static double tidy_ns(double ns)
{
	return round(ns * 10) / 10;
}

static bool record_winners(const tuner *t, halo_tuning_db *db, char *err, size_t errlen)
{
	for (int i = 0; i < t->n_tc; i++) {
		const tuned_choice *tc = &t->tc[i];
		halo_candidate_info cand;
		int w = winner_of(tc);
		halo_model_candidate(t->model, tc->choice, tc->pos[w], &cand);
		halo_tuning_record r = {
			.vendor = t->dev.vendor, .device = t->dev.device, .driver = t->dev.driver,
			.device_name = (char *)t->dev.name, .key = (char *)tc->key, .tile = (char *)cand.tile,
			.ns = tidy_ns(tc->ns[w]), .heuristic_ns = tidy_ns(tc->ns[0]),
		};
		if (!halo_tuning_db_put(db, &r, err, errlen))
			return false;
	}
	return true;
}

/* key | heuristic tile, time | tuned tile, time | speed-up, on stdout. */
static void print_summary(const tuner *t)
{
	int kw = 3, tw = 9;
	for (int i = 0; i < t->n_tc; i++) {
		int k = (int)strlen(t->tc[i].key);
		kw = k > kw ? k : kw;
		for (int j = 0; j < t->tc[i].n; j++) {
			int n = (int)strlen(tile_of(t, &t->tc[i], j));
			tw = n > tw ? n : tw;
		}
	}
	printf("%-*s  %-*s %12s  %-*s %12s  %8s\n", kw, "key", tw, "heuristic", "us", tw, "tuned", "us", "speed-up");
	for (int i = 0; i < t->n_tc; i++) {
		const tuned_choice *tc = &t->tc[i];
		int w = winner_of(tc);
		printf("%-*s  %-*s %12.1f  %-*s %12.1f  %7.2fx\n", kw, tc->key, tw, tile_of(t, tc, 0), tc->ns[0] / 1e3, tw,
		       tile_of(t, tc, w), tc->ns[w] / 1e3, tc->ns[w] > 0 ? tc->ns[0] / tc->ns[w] : 1.0);
	}
}

static bool tuner_alloc(tuner *t)
{
	t->picks = calloc((size_t)t->n_choices + 1, sizeof(*t->picks));
	t->choice_ns = calloc((size_t)t->n_choices + 1, sizeof(*t->choice_ns));
	t->samples = calloc((size_t)t->cfg->reps * (size_t)(t->n_tc + 1), sizeof(*t->samples));
	return t->picks && t->choice_ns && t->samples;
}

static void tuner_free(tuner *t)
{
	halo_session_free(t->session);
	halo_model_close(t->model);
	free(t->tc);
	free(t->wl);
	free(t->tokens);
	free(t->picks);
	free(t->choice_ns);
	free(t->samples);
}

static bool open_model(tuner *t, const tune_args *a, char *err, size_t errlen)
{
	halo_open_options o = {.backend = "vulkan", .device = t->cfg->device, .validation = a->validate,
			       .tune = true};
	t->model = halo_model_open(a->bundle, &o, err, errlen);
	if (!t->model || !check_entries(a, t->model, err, errlen))
		return false;
	halo_model_device(t->model, &t->dev);
	t->n_choices = halo_model_choice_count(t->model);
	return true;
}

/* Plans, measures and records; false with a message on failure. n_tuned
 * says how many choices were timed (0: nothing to tune). */
static bool tune(tuner *t, const tune_args *a, halo_tuning_db *db, int *n_tuned, char *err, size_t errlen)
{
	if (!open_model(t, a, err, errlen))
		return false;
	if (!plan_choices(t, a) || !plan_workloads(t, a) || !tuner_alloc(t)) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	*n_tuned = t->n_tc;
	if (t->n_tc == 0)
		return true;
	fprintf(stderr, "halo tune: %s on %s: %d of %d choices, %d step shapes, %d repetitions\n", a->bundle,
		t->dev.name, t->n_tc, t->n_choices, t->n_wl, t->cfg->reps);
	t->session = halo_session_create(t->model, err, errlen);
	if (!t->session || !halo_session_set_profiling(t->session, true, err, errlen) || !measure(t, err, errlen))
		return false;
	if (a->validate && halo_model_validation_messages(t->model)) {
		snprintf(err, errlen, "%d Vulkan validation message(s)", halo_model_validation_messages(t->model));
		return false;
	}
	return record_winners(t, db, err, errlen);
}

/* --merge: the shipped file must be a valid DB; the result is written as
 * tune writes it (temporary file + rename). */
static bool merge_into(cli_tuning *db, const char *path, char *err, size_t errlen)
{
	bool missing;
	halo_tuning_db *src = halo_tuning_db_read(path, &missing, err, errlen);
	bool ok = src && halo_tuning_db_merge(db->db, src, err, errlen) &&
		  halo_tuning_db_write(db->db, db->path, err, errlen);
	if (ok)
		fprintf(stderr, "halo tune: merged %d records of %s into %s (%d in all)\n", halo_tuning_db_count(src),
			path, db->path, halo_tuning_db_count(db->db));
	halo_tuning_db_free(src);
	return ok;
}

int cmd_tune(int argc, char **argv)
{
	tune_args a = {0};
	tune_config c;
	int rc = parse_args(argc, argv, &a);
	if (rc || a.help) {
		if (a.help)
			tune_usage(stdout);
		return rc;
	}
	if ((rc = check_args(&a, &c)))
		return rc;
	char err[2048];
	cli_tuning db;
	if (!cli_tuning_open("tune", a.db, true, &db, err, sizeof(err))) {
		fprintf(stderr, "halo tune: %s\n", err);
		return 1;
	}
	if (a.merge) {
		bool ok = merge_into(&db, a.merge, err, sizeof(err));
		if (!ok)
			fprintf(stderr, "halo tune: %s\n", err);
		halo_tuning_db_free(db.db);
		return ok ? 0 : 1;
	}
	tuner t = {.cfg = &c};
	int n_tuned = 0;
	bool ok = tune(&t, &a, db.db, &n_tuned, err, sizeof(err));
	if (ok && n_tuned == 0)
		fprintf(stderr, "halo tune: nothing to tune: no kernel choice of %s has two candidates this device runs\n",
			a.bundle);
	if (ok && n_tuned > 0) {
		print_summary(&t);
		ok = halo_tuning_db_write(db.db, db.path, err, sizeof(err));
		if (ok)
			fprintf(stderr, "halo tune: wrote %d records for %s to %s (%d in all)\n", n_tuned, t.dev.name,
				db.path, halo_tuning_db_count(db.db));
	}
	if (!ok)
		fprintf(stderr, "halo tune: %s\n", err);
	tuner_free(&t);
	halo_tuning_db_free(db.db);
	return ok ? 0 : 1;
}
