/* Speculative decoding cost on one bundle with a draft head (issues 5 and
 * 10): plain greedy decode, then for each K three runs of MTP drafting
 * whose drafts are replaced by tokens chosen from the target's own greedy
 * continuation (recorded by the plain run). The head still runs in full (its
 * cost is real); only its tokens are overridden.
 *   accept-all:  every draft right, fixed K: the ceiling of speculation;
 *   reject-last: the last draft of each round wrong, fixed K: what a
 *                rejection costs (the slot copy of halo_session_keep);
 *   never-right: every draft wrong, adaptive K up to K: what a useless
 *                drafter costs once adaptation turns drafting down;
 *   head:        the head's own drafts, fixed K: what speculation gives with
 *                this model on this prompt (meaningful with a trained head
 *                and a real prompt: --prompt).
 *
 * usage: spec_bench BUNDLE BACKEND N_PREDICT K[,K...] [TUNING_DB]
 *                   [--prompt IDS.i32]
 * --prompt: the prompt's token ids (little-endian int32, the first 64 are
 * used; tools/train/heldout.py writes such files); default, fixed ids.
 * Plain decode runs twice and the second, warm run is the baseline. Then
 * verify(K+1) steps on their own against decode(1) (any bundle with a
 * verify entry: the dense models too). With a draft head, per K and run:
 * tokens/s against plain decode, rounds, the verify
 * step's time against one plain decode step, draft time per drafted token,
 * accept (keep) time per round, and for reject-last the extra time of a
 * rejecting round over an accepting one. First, a profiled 64-token
 * prefill: its kernels (the chunked delta rule among them) against the
 * per-token kernels of decode (halo run --profile). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/mtp_draft.h"
#include "runtime/spec.h"
#include "runtime/tuning_db.h"

typedef struct {
	halo_drafter mtp;
	const int32_t *ref;   /* plain greedy continuation */
	int64_t n_ref, n_prompt;
	int mode;             /* a run_mode */
} oracle_drafter;

enum run_mode { ACCEPT_ALL, REJECT_LAST, NEVER_RIGHT, HEAD, N_MODES };
static const char *const mode_names[N_MODES] = {"accept-all", "reject-last", "never-right", "head"};

static int oracle_propose(void *self, const int32_t *ctx, int64_t n, int k, halo_draft *out, char *err,
			  size_t errlen)
{
	oracle_drafter *o = self;
	int m = o->mtp.propose(o->mtp.self, ctx, n, k, out, err, errlen);
	if (o->mode == HEAD)
		return m;
	int64_t e = n - o->n_prompt;
	for (int i = 0; i < m; i++) {
		int32_t want = o->ref[e + i < o->n_ref ? e + i : o->n_ref - 1];
		bool wrong = o->mode == NEVER_RIGHT || (o->mode == REJECT_LAST && i == m - 1);
		out[i] = (halo_draft){wrong ? want ^ 1 : want, NULL};
	}
	return m;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "spec_bench: %s: %s\n", what, err);
	exit(1);
}

/* verify(K+1) against decode(1) on their own: steps of K + 1 of the plain
 * continuation's tokens, each kept to its first token (halo_session_keep),
 * so the position moves one token per step as in plain decoding. Each K
 * runs twice and the second is timed: the first step of a new T records its
 * command buffer and specialises its pipelines (on the H200 tens of ms,
 * which in a 64-token run read as a verify step of 17-28 decode steps). */
static void verify_ratio(halo_session *s, const int32_t *ref, int64_t n, const char *ks, double plain_step)
{
	char err[2048];
	for (const char *k = ks; *k; k += strcspn(k, ",") + (k[strcspn(k, ",")] == ',')) {
		int K = atoi(k);
		int32_t prompt[16];
		for (int i = 0; i < 16; i++)
			prompt[i] = ref[i];
		int64_t steps = n - K - 1;
		double t0 = 0;
		for (int run = 0; run < 2; run++) {
			if (!halo_session_reset(s, err, sizeof(err)) ||
			    !halo_session_prefill(s, prompt, 16, NULL, NULL, err, sizeof(err)))
				die("verify ratio", err);
			t0 = now_s();
			for (int64_t i = 0; i < steps; i++)
				if (!halo_session_step(s, "verify", ref + i, K + 1, NULL, err, sizeof(err)) ||
				    !halo_session_keep(s, 1, err, sizeof(err)))
					die("verify ratio", err);
		}
		double step = (now_s() - t0) / (double)steps;
		printf("K=%d verify(%d) alone: %.2f ms = %.2fx decode(1)\n", K, K + 1, step * 1e3, step / plain_step);
	}
}

/* Up to 64 ids from a little-endian int32 file into prompt; returns the
 * count (at least 16: the spec runs' prompt) or dies naming the file. */
static int read_prompt(const char *path, int64_t vocab, int32_t *prompt)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path, "cannot open");
	int n = (int)fread(prompt, sizeof(int32_t), 64, f);
	fclose(f);
	if (n < 16)
		die(path, "holds fewer than 16 token ids");
	for (int i = 0; i < n; i++)
		if (prompt[i] < 0 || prompt[i] >= vocab)
			die(path, "holds an id outside the vocabulary");
	return n;
}

/* Where a speculative round's time goes: accept-all at K, every dispatch
 * timed (the draft entries' kernels apart from verify's: their keys carry
 * their entry's tmax), the costliest kernels printed. */
static void profile_accept_all(halo_model *m, halo_session *s, const int32_t *ref, int64_t n, int K,
			       const int32_t *prompt, float *row)
{
	char err[2048];
	const halo_sampling greedy = {.temperature = 0, .top_k = 0, .top_p = 1};
	halo_mtp_drafter *md = halo_mtp_drafter_create(m, s, &greedy, 0, err, sizeof(err));
	if (!md || !halo_session_reset(s, err, sizeof(err)) ||
	    !halo_session_prefill(s, prompt, 16, NULL, row, err, sizeof(err)) ||
	    !halo_session_set_profiling(s, true, err, sizeof(err)))
		die("profiled spec setup", err);
	oracle_drafter od = {halo_mtp_drafter_iface(md), ref, n, 16, ACCEPT_ALL};
	halo_drafter d = {&od, oracle_propose, NULL};
	halo_spec_options so = {.k = K, .sampling = greedy};
	halo_spec_stats st;
	int32_t *out = malloc((size_t)n * sizeof(int32_t));
	if (!out)
		die("profiled speculate", "out of memory");
	if (!halo_spec_generate(m, s, &d, &so, prompt, 16, row, n, out, &st, err, sizeof(err)))
		die("profiled speculate", err);
	printf("K=%d accept-all, profiled: %lld rounds\n", K, (long long)st.rounds);
	halo_session_profile_report(s, stdout, 12);
	if (!halo_session_set_profiling(s, false, err, sizeof(err)))
		die("profiling off", err);
	free(out);
	halo_mtp_drafter_free(md);
}

int main(int argc, char **argv)
{
	/* pos[1..npos]: the positional arguments, read below as argv */
	char *pos[6] = {argv[0]};
	const char *prompt_file = NULL;
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--prompt") == 0 && i + 1 < argc)
			prompt_file = argv[++i];
		else if (npos < 5)
			pos[1 + npos++] = argv[i];
		else
			npos = 6;
	}
	if (npos != 4 && npos != 5) {
		fprintf(stderr, "usage: spec_bench BUNDLE BACKEND N_PREDICT K[,K...] [TUNING_DB] [--prompt IDS.i32]\n");
		return 2;
	}
	argv = pos;
	char err[2048];
	halo_tuning_db *db = NULL;
	bool missing;
	if (npos == 5 && !(db = halo_tuning_db_read(argv[5], &missing, err, sizeof(err))))
		die(argv[5], err);
	halo_open_options oo = {.backend = argv[2], .tuning = db};
	halo_model *m = halo_model_open(argv[1], &oo, err, sizeof(err));
	halo_tuning_db_free(db);
	halo_session *s = m ? halo_session_create(m, err, sizeof(err)) : NULL;
	if (!s)
		die(argv[1], err);
	int64_t n = atoll(argv[3]), vocab = halo_model_vocab(m);
	int32_t prompt[64];
	for (int i = 0; i < 64; i++)
		prompt[i] = (int32_t)((100 + 37 * i) % vocab);
	if (prompt_file)
		read_prompt(prompt_file, vocab, prompt);
	double tp = now_s();
	if (!halo_session_set_profiling(s, true, err, sizeof(err)) ||
	    !halo_session_prefill(s, prompt, 64, NULL, NULL, err, sizeof(err)))
		die("profiled prefill", err);
	printf("prefill of 64 tokens (profiled): %.2f ms\n", (now_s() - tp) * 1e3);
	halo_session_profile_report(s, stdout, 8);
	if (!halo_session_set_profiling(s, false, err, sizeof(err)) || !halo_session_reset(s, err, sizeof(err)))
		die("reset", err);
	float *row = malloc((size_t)vocab * sizeof(float));
	int32_t *ref = malloc((size_t)n * sizeof(int32_t)), *out = malloc((size_t)n * sizeof(int32_t));
	/* plain greedy, timed after the first step (recording), until two runs
	 * in a row agree within 3% (at most 8): the GPU's clocks climb over the
	 * first runs, and a baseline taken before they settle makes every ratio
	 * against it look better than it is; the last run is the baseline */
	double plain_step = 0, last = 0;
	for (int run = 0; run < 8 && !(run >= 2 && fabs(plain_step - last) <= 0.03 * last); run++) {
		last = plain_step;
		if (!halo_session_reset(s, err, sizeof(err)) ||
		    !halo_session_prefill(s, prompt, 16, NULL, row, err, sizeof(err)))
			die("prefill", err);
		double t0 = 0;
		const float *cur = row; /* then each step's logits in place, as generate.c reads them */
		for (int64_t i = 0; i < n; i++) {
			ref[i] = halo_argmax(cur, vocab);
			if (i == 1)
				t0 = now_s();
			if (i + 1 < n && !halo_session_step(s, "decode", &ref[i], 1, NULL, err, sizeof(err)))
				die("decode", err);
			cur = halo_session_logits(s, NULL);
		}
		plain_step = (now_s() - t0) / (double)(n - 2);
		printf("plain decode (run %d): %.2f ms/token, %.1f tokens/s\n", run + 1, plain_step * 1e3,
		       1.0 / plain_step);
	}
	printf("plain decode (baseline): %.2f ms/token, %.1f tokens/s\n", plain_step * 1e3, 1.0 / plain_step);
	verify_ratio(s, ref, n, argv[4], plain_step);
	halo_entry_info draft;
	bool has_draft = halo_model_entry(m, HALO_MTP_STEP_ENTRY, &draft);
	if (!has_draft)
		puts("no draft head: verify steps only");
	const halo_sampling greedy = {.temperature = 0, .top_k = 0, .top_p = 1};
	int last_k = 0;
	for (const char *k = has_draft ? argv[4] : ""; *k; k += strcspn(k, ",") + (k[strcspn(k, ",")] == ',')) {
		int K = atoi(k);
		double round_s[N_MODES] = {0};
		/* each mode twice, the second timed (first steps of a new T record
		 * and specialise, as in verify_ratio) */
		for (int run = 0; run < 2 * N_MODES; run++) {
			int mode = run / 2;
			halo_mtp_drafter *md = halo_mtp_drafter_create(m, s, &greedy, 0, err, sizeof(err));
			if (!md || !halo_session_reset(s, err, sizeof(err)) ||
			    !halo_session_prefill(s, prompt, 16, NULL, row, err, sizeof(err)))
				die("spec setup", err);
			oracle_drafter od = {halo_mtp_drafter_iface(md), ref, n, 16, mode};
			halo_drafter d = {&od, oracle_propose, NULL};
			halo_spec_options so = {.k = K, .adaptive = mode == NEVER_RIGHT, .sampling = greedy};
			halo_spec_stats st;
			double t1 = now_s();
			if (!halo_spec_generate(m, s, &d, &so, prompt, 16, row, n, out, &st, err, sizeof(err)))
				die("speculate", err);
			double dt = now_s() - t1;
			if (run % 2 == 0) {
				halo_mtp_drafter_free(md);
				continue;
			}
			if (memcmp(out, ref, (size_t)n * sizeof(int32_t)) != 0)
				die("speculate", "tokens differ from plain greedy decoding");
			double rounds = (double)(st.rounds ? st.rounds : 1);
			round_s[mode] = dt / rounds;
			printf("K=%d %s: %.1f tokens/s (%.2fx plain), %lld rounds (%lld plain), %lld of %lld drafts "
			       "accepted, %.2f tokens/round; "
			       "verify %.2f ms = %.2fx decode(1); draft %.2f ms/drafted token; accept %.3f ms/round\n",
			       K, mode_names[mode], (double)n / dt, plain_step * (double)n / dt, (long long)st.rounds,
			       (long long)st.plain_rounds, (long long)st.accepted, (long long)st.drafted,
			       (double)st.emitted / rounds, st.verify_s / rounds * 1e3,
			       st.verify_s / rounds / plain_step, st.draft_s / (double)(st.drafted ? st.drafted : 1) * 1e3,
			       st.accept_s / rounds * 1e3);
			halo_mtp_drafter_free(md);
		}
		printf("K=%d rollback: a rejecting round takes %.2f ms, an accepting one %.2f ms (%+.1f%%)\n", K,
		       round_s[REJECT_LAST] * 1e3, round_s[ACCEPT_ALL] * 1e3,
		       100.0 * (round_s[REJECT_LAST] - round_s[ACCEPT_ALL]) / round_s[ACCEPT_ALL]);
		last_k = K;
	}
	if (last_k)
		profile_accept_all(m, s, ref, n, last_k, prompt, row);
	halo_session_free(s);
	halo_model_close(m);
	free(row), free(ref), free(out);
	return 0;
}
