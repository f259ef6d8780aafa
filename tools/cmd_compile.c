/* halo compile: model YAML + HF checkpoint -> bundle. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "codegen/weights.h"
#include "kernels/gpu_target.h"
#include "ir/read_model.h"
#include "tools/cli_args.h"
#include "tools/commands.h"
#include "tools/model_select.h"

/* --quant's names: the block formats, f8e4m3 meaning its block form (the
 * plain dtype f8e4m3 is a checkpoint's element type, never stored). */
static bool quant_format(const char *name, halo_dtype *out)
{
	static const struct {
		const char *name;
		halo_dtype t;
	} names[] = {{"q8_0", HALO_Q8_0}, {"q4_k", HALO_Q4_K}, {"f8e4m3", HALO_F8E4M3_B128}, {"mxfp4", HALO_MXFP4}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(name, names[i].name) == 0) {
			*out = names[i].t;
			return true;
		}
	return false;
}

static void compile_usage(FILE *out)
{
	fputs("usage: halo compile --hf CKPT_DIR [--model MODEL.yaml] [--dtype f32|f16]\n"
	      "                    [--quant q8_0|q4_k|f8e4m3|mxfp4 [--act-quant q8|none]]\n"
	      "                    [--random-weights SEED [--random-period N]]\n"
	      "                    [--targets ref,vulkan,hip,cuda]\n"
	      "                    [--mtp | --no-mtp | --mtp-from DRAFTER_DIR] [--ctx N] [--no-tokenizer]\n"
	      "                    [--no-merge] [--no-store-fusion] [--no-rope-fusion]\n"
	      "                    -o OUT.halo | --plan-only\n"
	      "\n"
	      "Compiles a model graph and an HF checkpoint into one bundle: kernels (SPIR-V),\n"
	      "dispatch lists, memory plan, weights. The bundle is written to a temporary file\n"
	      "and renamed at the end; on any error nothing is left at OUT.halo.\n"
	      "\n"
	      "options:\n"
	      "  --hf DIR               checkpoint directory: config.json and *.safetensors\n"
	      "  --model FILE           model graph (default: the file in the models directory\n"
	      "                         whose hf_model_types lists config.json's model_type;\n"
	      "                         HALO_MODELS_DIR overrides the directory)\n"
	      "  --dtype f32|f16        storage type of matrix weights (default f32)\n"
	      "  --quant q8_0|q4_k|f8e4m3|mxfp4\n"
	      "                         store linear-layer weights (matmul and MoE expert\n"
	      "                         weights) block-quantized; norms, routers and small gates\n"
	      "                         keep --dtype; under q4_k the gathered tables (embeddings,\n"
	      "                         n-gram tables) are q4_k too and the output head q8_0,\n"
	      "                         the 8-bit formats keep the tables in --dtype;\n"
	      "                         f8e4m3 stores dtype f8e4m3_b128 (fp8 with a scale per 128\n"
	      "                         weights of a row; a checkpoint's fp8 weights as they are),\n"
	      "                         q8_0 where K is not a multiple of 128; mxfp4 stores the MoE\n"
	      "                         experts alone OCP MX FP4 (E2M1 with a power-of-two scale\n"
	      "                         per 32; a checkpoint's MXFP4 experts as they are)\n"
	      "                         (docs/quantization.md). A weight whose K is not a multiple\n"
	      "                         of 32 cannot be quantized: an error\n"
	      "  --act-quant q8|none    q8, with --quant q8_0 or q4_k: decode and verification\n"
	      "                         steps round each matmul input to int8 per block of 32\n"
	      "                         and multiply integers (as llama.cpp's GPU backends do\n"
	      "                         for quantized weights); prompt steps keep f32 inputs.\n"
	      "                         Default: q8 under --quant q4_k (its quality, 1.4x its\n"
	      "                         decode), none otherwise; none keeps f32 inputs\n"
	      "  --random-weights SEED  ignore the checkpoint's tensors: seeded random weights at\n"
	      "                         config.json's dims (benchmarks, tests)\n"
	      "  --random-period N      with --random-weights: each tensor's values repeat every N\n"
	      "                         (even), so the bundle compresses (a benchmark bundle carried\n"
	      "                         to another machine; kernel times do not depend on values)\n"
	      "  --targets LIST         backends to build for, any of ref,vulkan,hip,cuda with ref\n"
	      "                         (default ref,vulkan): hip builds gfx1151 code objects, cuda\n"
	      "                         sm_90 PTX, both from kernels/hip with clang-19; ref alone (no GPU\n"
	      "                         kernels: ops without one yet still run on --backend ref)\n"
	      "  -o, --output FILE      the bundle to write\n"
	      "  --plan-only            write nothing: print what the bundle would hold and a\n"
	      "                         session would allocate (weights per stored dtype, caches\n"
	      "                         at --ctx, recurrent state, state slots, activations) on\n"
	      "                         stdout. Reads the checkpoint's headers (the formats it\n"
	      "                         stores), not its data, so a missing tensor is found by\n"
	      "                         the compile, not the plan; with --random-weights\n"
	      "                         config.json alone is enough\n"
	      "  --mtp                  compile the MTP draft head when the config declares one\n"
	      "                         (mtp_num_hidden_layers; the default)\n"
	      "  --no-mtp               leave the draft head out\n"
	      "  --no-merge             keep sibling matmuls (q, k, v; gate, up) as separate\n"
	      "                         dispatches instead of one over their rows (docs/ir.md)\n"
	      "  --no-store-fusion      keep KV-cache writes as copy dispatches instead of the rope\n"
	      "                         or matmul storing its rows in the cache (docs/ir.md)\n"
	      "  --no-rope-fusion       keep the q/k norm and rope a dispatch of their own instead of\n"
	      "                         the decode attention's prologue (docs/ir.md)\n"
	      "  --mtp-from DIR         take the draft head from a drafter sidecar (config.json and\n"
	      "                         safetensors with the mtp.* tensors); refused when its config\n"
	      "                         does not fit the target's\n"
	      "  --ctx N                the context length the caches hold, in tokens, at most the\n"
	      "                         config's max_position_embeddings (default: the model file's\n"
	      "                         n_ctx, 2048, or max_position_embeddings where smaller).\n"
	      "                         Cache memory grows linearly with it: the summary line\n"
	      "                         prints the state it takes\n"
	      "  --draft-max K          the most drafts one speculative round verifies, 1..7\n"
	      "                         (default: the model file's draft_max, 4): sizes the verify\n"
	      "                         entry and its per-token recurrent state slots (K + 1 copies\n"
	      "                         of each recurrent state, in the summary line)\n"
	      "  --draft-vocab N        the draft head's vocabulary: its logits cover token ids\n"
	      "                         0..N-1 only (default: all of them), so a drafted token\n"
	      "                         costs N rows of the lm_head instead of the vocabulary's.\n"
	      "                         Byte-level BPE vocabularies number tokens by merge order,\n"
	      "                         roughly by frequency; verification stays exact whatever N,\n"
	      "                         only acceptance changes (docs/generate.md)\n"
	      "  --no-tokenizer         leave the checkpoint's tokenizer out of the bundle (by\n"
	      "                         default tokenizer.json, with tokenizer_config.json's chat\n"
	      "                         template and special tokens and generation_config.json's\n"
	      "                         eos_token_id, is embedded when present; halo tokenize\n"
	      "                         reads it)\n"
	      "  -h, --help             this text\n"
	      "Environment:\n"
	      "  HALO_THREADS=N         at most N threads (default: every core)\n"
	      "  HALO_KERNEL_CACHE=DIR  where compiled kernels are kept for the next compile (default\n"
	      "                         $XDG_CACHE_HOME/halo/kernels, else ~/.cache/halo/kernels;\n"
	      "                         off: none). Keyed by compiler, flags and source: the bundle's\n"
	      "                         bytes are the same with or without it\n"
	      "  HALO_CLANG=PROGRAM     the clang for the hip and cuda targets (default clang-19)\n",
	      out);
}

typedef struct {
	const char *hf, *model, *dtype, *quant, *act_quant, *seed, *period, *out, *targets, *mtp_from, *ctx, *draft_max,
		*draft_vocab;
	bool help, mtp, no_mtp, no_tokenizer, no_merge, no_store_fusion, no_rope_fusion, plan_only;
} compile_args;

static int parse_args(int argc, char **argv, compile_args *a)
{
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			a->help = true;
		else if (strcmp(s, "--mtp") == 0)
			a->mtp = true;
		else if (strcmp(s, "--no-mtp") == 0)
			a->no_mtp = true;
		else if (strcmp(s, "--no-tokenizer") == 0)
			a->no_tokenizer = true;
		else if (strcmp(s, "--no-merge") == 0)
			a->no_merge = true;
		else if (strcmp(s, "--no-store-fusion") == 0)
			a->no_store_fusion = true;
		else if (strcmp(s, "--no-rope-fusion") == 0)
			a->no_rope_fusion = true;
		else if (strcmp(s, "--plan-only") == 0)
			a->plan_only = true;
		else if (cli_take_value("compile", argc, argv, &i, "--hf", &a->hf, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--model", &a->model, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--dtype", &a->dtype, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--quant", &a->quant, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--act-quant", &a->act_quant, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--random-weights", &a->seed, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--random-period", &a->period, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--targets", &a->targets, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--mtp-from", &a->mtp_from, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--ctx", &a->ctx, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--draft-max", &a->draft_max, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--draft-vocab", &a->draft_vocab, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "--output", &a->out, &rc) ||
			 cli_take_value("compile", argc, argv, &i, "-o", &a->out, &rc))
			continue;
		else
			rc = cli_usage_error("compile", "unexpected argument '%s'", s);
	}
	return rc;
}

/* "ref,vulkan,hip,cuda", any subset with ref (every bundle runs on the
 * reference backend), each once. */
static bool parse_targets(const char *list, cg_compile_options *o)
{
	bool ref = false;
	o->targets = 0;
	for (const char *s = list; *s;) {
		size_t n = strcspn(s, ",");
		char name[16];
		if (n == 0 || n >= sizeof name)
			return false;
		memcpy(name, s, n);
		name[n] = 0;
		int t = halo_target_find(name);
		if (strcmp(name, "ref") == 0 ? ref : t < 0 || (o->targets >> t & 1u))
			return false;
		if (t < 0)
			ref = true;
		else
			o->targets |= 1u << t;
		s += n + (s[n] == ',');
	}
	o->ref_only = o->targets == 0;
	return ref;
}

static int check_args(const compile_args *a, cg_compile_options *o)
{
	if (!a->hf)
		return cli_usage_error("compile", "%s", "--hf CKPT_DIR is required");
	if (!a->out && !a->plan_only)
		return cli_usage_error("compile", "%s", "-o OUT.halo is required");
	if (a->out && a->plan_only)
		return cli_usage_error("compile", "%s", "--plan-only writes no bundle: drop -o");
	if (a->mtp + a->no_mtp + (a->mtp_from != NULL) > 1)
		return cli_usage_error("compile", "%s", "--mtp, --no-mtp and --mtp-from exclude each other");
	o->hf_dir = a->hf;
	o->out_path = a->out;
	o->no_mtp = a->no_mtp;
	o->no_tokenizer = a->no_tokenizer;
	o->no_merge = a->no_merge;
	o->no_store_fusion = a->no_store_fusion;
	o->no_rope_fusion = a->no_rope_fusion;
	o->plan_only = a->plan_only;
	o->mtp_dir = a->mtp_from;
	o->matrix_dtype = HALO_F32;
	if (a->targets && !parse_targets(a->targets, o))
		return cli_usage_error("compile", "--targets is a list of ref, vulkan, hip and cuda that has ref, not '%s'",
				       a->targets);
	if (a->dtype && strcmp(a->dtype, "f16") == 0)
		o->matrix_dtype = HALO_F16;
	else if (a->dtype && strcmp(a->dtype, "f32") != 0)
		return cli_usage_error("compile", "--dtype must be f32 or f16, not '%s'", a->dtype);
	if (a->quant && !quant_format(a->quant, &o->quant))
		return cli_usage_error("compile", "--quant must be q8_0, q4_k, f8e4m3 or mxfp4, not '%s'", a->quant);
	bool xq_off = a->act_quant && strcmp(a->act_quant, "none") == 0;
	if (a->act_quant && !xq_off && strcmp(a->act_quant, "q8") != 0)
		return cli_usage_error("compile", "--act-quant must be q8 (int8 activations) or none, not '%s'",
				       a->act_quant);
	if (a->act_quant && !xq_off && o->quant != HALO_Q8_0 && o->quant != HALO_Q4_K)
		return cli_usage_error("compile", "%s", "--act-quant q8 needs --quant q8_0 or q4_k (the weights whose "
				       "kernels multiply int8 activations)");
	/* q4_k's default: int8 activations, the same quality at 1.4x its
	 * decode (docs/quantization.md); q8_0's stays f32 */
	o->int8_activations = a->act_quant ? !xq_off : o->quant == HALO_Q4_K;
	if (a->ctx && !cli_parse_i64(a->ctx, 1, (int64_t)1 << 24, &o->n_ctx))
		return cli_usage_error("compile", "--ctx wants a context length of 1..16777216 tokens, not '%s'", a->ctx);
	if (a->draft_max && !cli_parse_i64(a->draft_max, 1, IR_DRAFT_MAX_LIMIT, &o->draft_max))
		return cli_usage_error("compile", "--draft-max wants 1..7 drafts per round (verification steps of at "
				       "most 8 tokens), not '%s'", a->draft_max);
	if (a->draft_vocab && !cli_parse_i64(a->draft_vocab, 1, INT32_MAX, &o->draft_vocab))
		return cli_usage_error("compile", "--draft-vocab wants a positive token count, not '%s'", a->draft_vocab);
	if (a->seed) {
		int64_t seed;
		if (!cli_parse_i64(a->seed, 0, INT64_MAX, &seed))
			return cli_usage_error("compile", "--random-weights needs a non-negative integer seed, not '%s'",
					       a->seed);
		o->random_weights = true;
		o->seed = (uint64_t)seed;
	}
	if (a->period) {
		int64_t period;
		if (!a->seed)
			return cli_usage_error("compile", "%s applies to --random-weights only", "--random-period");
		if (!cli_parse_i64(a->period, 2, INT64_MAX, &period) || period % 2)
			return cli_usage_error("compile", "--random-period wants an even count of values >= 2, not '%s'",
					       a->period);
		o->random_period = (uint64_t)period;
	}
	return 0;
}

/* The weights' conversion on stderr: rewritten in place about once a second
 * on a terminal, a line every 10 s otherwise (logs). */
typedef struct {
	double start, last;
	bool tty, shown;
} progress_line;

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
	progress_line *p = ctx;
	double now = cli_now_s();
	bool end = done >= total;
	if (!end && now - p->last < (p->tty ? 1.0 : 10.0))
		return;
	if (end && !p->shown)
		return; /* a compile that took under a second needs no progress line */
	double gb = 1e9, rate = now > p->start ? (double)done / (now - p->start) : 0;
	char eta[32] = "";
	if (!end && rate > 0)
		snprintf(eta, sizeof eta, ", ETA %.0f s", (double)(total - done) / rate);
	fprintf(stderr, "%shalo compile: weights %.2f / %.2f GB written (%.0f%%), %.0f MB/s%s%s", p->tty ? "\r" : "",
		(double)done / gb, (double)total / gb, total ? 100.0 * (double)done / (double)total : 100.0, rate / 1e6,
		eta, p->tty && !end ? "    " : "\n");
	p->last = now;
	p->shown = true;
}

/* One line of --plan-only's report: bytes, GiB and, for weights, elements
 * and bits per element (elements 0: not weights). */
static void plan_line(const char *what, const char *detail, uint64_t bytes, uint64_t elements)
{
	printf("  %-16s %-12s %16llu %10.3f", what, detail, (unsigned long long)bytes,
	       (double)bytes / (1024.0 * 1024.0 * 1024.0));
	if (elements)
		printf(" %12.3f %6.2f", (double)elements / 1e9, 8.0 * (double)bytes / (double)elements);
	printf("\n");
}

/* --plan-only's report: what the bundle holds and one session allocates. */
static int print_plan(const cg_compile_options *o, const cg_compile_stats *st)
{
	printf("# halo compile --plan-only: model %s, checkpoint %s%s, context %lld tokens\n", o->model_path,
	       o->hf_dir, o->random_weights ? " (config.json only)" : "", (long long)st->n_ctx);
	printf("# %-16s %-12s %16s %10s %12s %6s\n", "what", "", "bytes", "GiB", "G elements", "bits");
	for (int t = 0; t < HALO_DTYPE_COUNT; t++)
		if (st->dtype_bytes[t])
			plan_line("weights", halo_dtype_name((halo_dtype)t), st->dtype_bytes[t], st->dtype_params[t]);
	plan_line("weights", "section", st->weight_bytes, st->weight_params);
	plan_line("state", "caches", st->cache_bytes, 0);
	plan_line("state", "recurrent", st->state_bytes - st->cache_bytes - st->slot_bytes, 0);
	plan_line("state", "slots", st->slot_bytes, 0);
	plan_line("activations", "arena", st->act_bytes, 0);
	plan_line("total", "", st->weight_bytes + st->state_bytes + st->act_bytes, 0);
	printf("# the section aligns every tensor to %d bytes; caches grow linearly with --ctx; slots: the verify\n"
	       "# entry's per-token copies of the recurrent state (--draft-max); arena: the largest entry's activations\n",
	       CG_WEIGHT_ALIGN);
	if (st->quant_fallbacks)
		printf("# %d weight%s stored q8_0, not %s (K not a multiple of %zu): %s\n", st->quant_fallbacks,
		       st->quant_fallbacks == 1 ? "" : "s", halo_dtype_name(o->quant), halo_dtype_block(o->quant),
		       st->fallback);
	if (fflush(stdout) != 0) {
		perror("halo compile: writing stdout");
		return 1;
	}
	return 0;
}

int cmd_compile(int argc, char **argv)
{
	compile_args a = {0};
	cg_compile_options o = {0};
	int rc = parse_args(argc, argv, &a);
	if (rc || a.help) {
		if (a.help)
			compile_usage(stdout);
		return rc;
	}
	if ((rc = check_args(&a, &o)))
		return rc;
	char err[2048], model[4096], config[4096], type[128];
	o.model_path = a.model;
	if (!a.model) {
		snprintf(config, sizeof(config), "%s/config.json", a.hf);
		if (!halo_config_model_type(config, type, sizeof(type), err, sizeof(err)) ||
		    !halo_select_model(halo_models_dir(), type, model, sizeof(model), err, sizeof(err))) {
			fprintf(stderr, "halo compile: %s\n", err);
			return 1;
		}
		o.model_path = model;
	}
	cg_compile_stats st;
	double t0 = cli_now_s();
	progress_line progress = {.start = t0, .last = t0, .tty = isatty(STDERR_FILENO)};
	o.progress = show_progress;
	o.progress_ctx = &progress;
	if (!cg_compile(&o, &st, err, sizeof(err))) {
		fprintf(stderr, "halo compile: %s\n", err);
		return 1;
	}
	if (o.plan_only)
		return print_plan(&o, &st);
	const double mib = 1024.0 * 1024.0;
	fprintf(stderr,
		"halo compile: wrote %s (model %s) in %.1f s: weights %.1f MiB; context %lld tokens, state %.1f MiB "
		"per session (caches %.1f MiB, per-token state slots %.1f MiB)\n",
		o.out_path, o.model_path, cli_now_s() - t0, (double)st.weight_bytes / mib, (long long)st.n_ctx,
		(double)st.state_bytes / mib, (double)st.cache_bytes / mib, (double)st.slot_bytes / mib);
	char formats[256] = "";
	for (int t = 0, n = 0; t < HALO_DTYPE_COUNT; t++)
		if (st.dtype_bytes[t] && n < (int)sizeof formats)
			n += snprintf(formats + n, sizeof formats - (size_t)n, "%s%s %.1f MiB", n ? ", " : "",
				      halo_dtype_name((halo_dtype)t), (double)st.dtype_bytes[t] / mib);
	double params_s = st.weights_s > 0 ? (double)st.weight_params / st.weights_s : 0;
	fprintf(stderr, "halo compile: weights by dtype: %s; %.2f G params in %.1f s (%.0f M params/s", formats,
		(double)st.weight_params / 1e9, st.weights_s, params_s / 1e6);
	if (st.source_bytes && st.weights_s > 0)
		fprintf(stderr, ", %.0f MB/s of checkpoint read", (double)st.source_bytes / st.weights_s / 1e6);
	fprintf(stderr, ")\n");
	if (st.quant_fallbacks)
		fprintf(stderr, "halo compile: note: %d weight%s stored q8_0, not %s: %s not a multiple of %zu: %s\n",
			st.quant_fallbacks, st.quant_fallbacks == 1 ? "" : "s", halo_dtype_name(o.quant),
			st.quant_fallbacks == 1 ? "its K is" : "their K is", halo_dtype_block(o.quant), st.fallback);
	if (o.int8_activations)
		fprintf(stderr, "halo compile: int8 activations in %d decode and verification matvec%s\n",
			st.int8_dispatches, st.int8_dispatches == 1 ? "" : "s");
	if (st.unused_tensors)
		fprintf(stderr, "halo compile: note: %d checkpoint tensor%s not used by the graph: %s\n", st.unused_tensors,
			st.unused_tensors == 1 ? "" : "s", st.unused);
	return 0;
}
