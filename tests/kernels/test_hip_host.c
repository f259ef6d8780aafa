/* The HIP-dialect twins run on the CPU: every variant of the matvec (decode
 * and verify, T <= 8), the prefill matmul (tiled, and matmul_coopmat's host
 * form: sm_90 and gfx1151 multiply on their matrix units), the MoE expert
 * kernels (moe_gate_up, moe_down) over f32, f16
 * and the block-quantized weights (mxfp4 for the experts; q4_k rows ending
 * in a partial super-block), the embedding gather on quantized tables, and prompt
 * attention's partials (attention_rows), emitted by
 * codegen/emit_hip.c as for the cuda and hip targets, compiled with
 * clang++-19 for the host (kernels/hip/halo_hip.h's HALO_HOST form: lanes as
 * threads, real barriers) and run:
 *  - every T of the variant against f64 sums over the reference's
 *    dequantized weights (runtime/drivers/ref/quant.h, half.h), within the
 *    op suite's tolerances (tests/ops/op_cases.c: f32 sums, and for the
 *    quantized formats each block's sum scaled once; the coopmat form rounds
 *    x and w to f16; int8 activations: x as the reference rounds it);
 *  - batch invariance: the rows of a step of T tokens equal single-token
 *    steps bitwise (matvec, attention_rows), and a prefill row the same
 *    whatever T (matmul).
 * The twins run nowhere else here (no GPU); this is where an error in a
 * twin's source shows before the H200 does: the q4_k matvec's QPW tested a
 * macro quant_weights.hip had not defined yet, so every column was wrong on
 * cuda (bench/results-h200-cuda.txt). Code generation, not the target's
 * compiler, is what this checks. Skipped (77) without clang++-19. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/kernel_variant.h"
#include "runtime/drivers/ref/half.h"
#include "runtime/drivers/ref/ref_ops.h"
#include "runtime/drivers/ref/quant.h"
#include "tests/check.h"

typedef struct {
	void *b[24];
	uint32_t T;
} host_args; /* halo_hip.h's struct halo_args */

typedef void (*launch_fn)(host_args a, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx, uint32_t ly);

static char tmp_dir[] = "/tmp/halo_hip_host_XXXXXX";

/* k's source as a host shared object, loaded; NULL (reported) on failure. */
static void *compile_host(const kv_kernel *k, launch_fn *launch)
{
	char src[256], so[256], cmd[1024];
	snprintf(src, sizeof src, "%s/k.cpp", tmp_dir);
	snprintf(so, sizeof so, "%s/k%d.so", tmp_dir, rand());
	FILE *f = fopen(src, "w");
	bool ok = f && fputs(k->hip, f) >= 0;
	ok = f && fclose(f) == 0 && ok;
	snprintf(cmd, sizeof cmd, "clang++-19 -std=c++20 -O1 -Werror=undef -DHALO_HOST -fPIC -shared -o %s %s", so, src);
	CHECK(ok && system(cmd) == 0, "%s: the host compile failed (%s)", k->signature, cmd);
	void *h = ok ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
	CHECK(!ok || h, "%s: dlopen: %s", k->signature, dlerror());
	remove(so);
	*launch = h ? (launch_fn)dlsym(h, "halo_host_launch") : NULL;
	CHECK(!h || *launch, "%s: no halo_host_launch", k->signature);
	return *launch ? h : NULL;
}

/* d's variant t built into *k (false, reported, when it is not; else the
 * caller frees k) and, when it has a twin of n_bindings bindings, compiled
 * and loaded: *h and *launch (NULL, reported, when not). */
static bool load_variant(kv_desc d, kv_tiles t, uint32_t n_bindings, kv_kernel *k, void **h, launch_fn *launch)
{
	char err[512];
	d.tiles = t;
	*h = NULL;
	if (!kernel_variant_build(&d, k, err, sizeof err)) {
		CHECK(false, "%s: %s", halo_dtype_name(d.wtype), err);
		return false;
	}
	CHECK(k->hip && k->n_bindings == n_bindings, "%s: no twin, or %u bindings (%u expected)", k->signature,
	      k->n_bindings, n_bindings);
	if (k->hip && k->n_bindings == n_bindings)
		*h = compile_host(k, launch);
	return true;
}

/* A K x N matmul's weights in format w and the values it stands for. */
typedef struct {
	void *bytes;
	float *value; /* [N, K], as the reference dequantizes them */
} weights;

static weights make_weights(halo_dtype w, int64_t K, int64_t N, unsigned seed)
{
	float *src = malloc((size_t)(N * K) * sizeof(float));
	srand(seed);
	for (int64_t i = 0; i < N * K; i++)
		src[i] = ((float)rand() / (float)RAND_MAX * 2.0f - 1.0f) * 0.05f;
	weights out = {.value = malloc((size_t)(N * K) * sizeof(float))};
	if (halo_dtype_is_quant(w)) {
		out.bytes = calloc(1, halo_dtype_bytes(w, (size_t)N, (size_t)K));
		halo_quantize_rows(w, src, (uint64_t)N, (uint64_t)K, 0, (uint64_t)N, out.bytes);
		halo_dequantize_rows(w, out.bytes, (uint64_t)N, (uint64_t)K, 0, (uint64_t)N, out.value);
		free(src);
	} else if (w == HALO_F16) {
		uint16_t *h = malloc((size_t)(N * K) * sizeof(uint16_t));
		for (int64_t i = 0; i < N * K; i++)
			out.value[i] = half_to_f32(h[i] = half_from_f32(src[i]));
		out.bytes = h;
		free(src);
	} else {
		memcpy(out.value, src, (size_t)(N * K) * sizeof(float));
		out.bytes = src;
	}
	return out;
}

/* One step of T tokens at position pos: the bindings b (the step record
 * last), n_out of the output y (poisoned first). */
static void launch_step_at(const kv_kernel *k, launch_fn launch, void *const *b, int n_b, float *y, int64_t n_out,
			   int64_t T, uint32_t pos)
{
	uint32_t step[4] = {pos, (uint32_t)T, 0, 0};
	host_args a = {.T = (uint32_t)T};
	for (int i = 0; i < n_b; i++)
		a.b[i] = b[i];
	a.b[n_b] = step;
	for (int64_t i = 0; i < n_out; i++)
		y[i] = NAN;
	launch(a, kv_groups_eval(k, 0, T), kv_groups_eval(k, 1, T), kv_groups_eval(k, 2, T), k->local_size[0],
	       k->local_size[1]);
}

static void launch_step(const kv_kernel *k, launch_fn launch, void *const *b, int n_b, float *y, int64_t n_out,
			int64_t T)
{
	launch_step_at(k, launch, b, n_b, y, n_out, T, 0);
}

/* One matmul step of T rows of x into y [T, N]. */
static void run_step(const kv_kernel *k, launch_fn launch, const float *x, const void *w, float *y, int64_t N,
		     int64_t T)
{
	launch_step(k, launch, (void *[]){(void *)x, (void *)w, y}, 3, y, T * N, T);
}

/* Rows [0, T) of y against the f64 sums: |got - want| / max(|want|, 1e-2)
 * <= tol, plus with f16 inputs (the matrix units' form) 8 u s / max(|want|,
 * 1e-2), s = sum |x w|: the rounding of x and w to f16 (u = 2^-11 each,
 * tests/kernels/test_matmul_coopmat.c's bound). *worst is raised to the
 * worst error as a fraction of its bound. */
static void check_rows(const char *what, const float *x, const weights *w, const float *y, int64_t K, int64_t N,
		       int64_t T, double tol, bool f16_inputs, double *worst)
{
	for (int64_t t = 0; t < T; t++)
		for (int64_t n = 0; n < N; n++) {
			double want = 0, s = 0;
			for (int64_t i = 0; i < K; i++) {
				want += (double)x[t * K + i] * w->value[n * K + i];
				s += fabs((double)x[t * K + i] * w->value[n * K + i]);
			}
			double scale = fmax(fabs(want), 1e-2);
			double bound = tol + (f16_inputs ? 8.0 * ldexp(1.0, -11) * s / scale : 0);
			double e = fabs((double)y[t * N + n] - want) / scale / bound;
			if (!(e <= 1)) {
				CHECK(false, "%s T=%lld: row %lld column %lld got %.9g want %.9g (%.3g of its bound)", what,
				      (long long)T, (long long)t, (long long)n, (double)y[t * N + n], want, e);
				return;
			}
			*worst = fmax(*worst, e);
		}
}

/* Every variant of a plain K x N matmul with weights w for steps up to
 * t_max tokens; ts: the step sizes run (0-terminated), the first of them
 * the reference for the bitwise check of the rest. xq 8: int8 activations,
 * checked against the sums over x as the reference rounds it
 * (halo_round_x_q8), whose codes the kernel's are bit for bit; those cases
 * take alternate variants (half: 0 the even ones, 1 the odd; -1 all), each
 * a host compile of its own. */
static void check_matmul(halo_dtype w, int64_t K, int64_t N, int64_t t_max, const int64_t *ts, int xq, int half,
			 double tol)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = t_max, .wtype = w};
	d.u.matmul.K = K;
	d.u.matmul.N = N;
	d.u.matmul.xq = xq;
	kv_tiles tiles[8];
	int n_var = kv_variant_space(&d, tiles, 8);
	weights wt = make_weights(w, K, N, (unsigned)(K * 31 + N + w));
	float *x = malloc((size_t)(t_max * K) * sizeof(float)), *xr = malloc((size_t)(t_max * K) * sizeof(float));
	float *y = malloc((size_t)(t_max * N) * sizeof(float)), *y1 = malloc((size_t)(t_max * N) * sizeof(float));
	for (int64_t i = 0; i < t_max * K; i++)
		x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
	memcpy(xr, x, (size_t)(t_max * K) * sizeof(float));
	for (int64_t t = 0; xq && t < t_max; t++)
		halo_round_x_q8(x + t * K, xr + t * K, (uint64_t)K);
	for (int v = half < 0 ? 0 : half; v < n_var; v += half < 0 ? 1 : 2) {
		int before = check_failures;
		kv_kernel k;
		void *h;
		launch_fn launch;
		if (!load_variant(d, tiles[v], 4, &k, &h, &launch)) /* x, w, y, step */
			continue;
		double worst = 0;
		bool matvec = t_max <= 8;
		/* matvec: single-token steps, one per row, are the reference rows */
		for (int64_t t = 0; h && matvec && t < t_max; t++)
			run_step(&k, launch, x + t * K, wt.bytes, y1 + t * N, N, 1);
		for (int i = 0; h && ts[i]; i++) {
			int64_t T = ts[i];
			run_step(&k, launch, x, wt.bytes, y, N, T);
			check_rows(k.signature, xr, &wt, y, K, N, T, tol, strncmp(k.tile, "cm,", 3) == 0, &worst);
			if (!matvec && i == 0)
				memcpy(y1, y, (size_t)(T * N) * sizeof(float));
			int64_t rows = matvec ? T : ts[0] < T ? ts[0] : T;
			CHECK(memcmp(y, y1, (size_t)(rows * N) * sizeof(float)) == 0,
			      "%s: the rows of a %lld-token step differ from %s", k.signature, (long long)T,
			      matvec ? "single-token steps" : "the first step's");
		}
		printf("%s %s: worst %.2g of its bound\n", check_failures == before ? "ok  " : "FAIL", k.signature, worst);
		if (h)
			dlclose(h);
		kv_kernel_free(&k);
	}
	free(x);
	free(xr);
	free(y);
	free(y1);
	free(wt.bytes);
	free(wt.value);
}

/* embed's twin over a table of V rows of H in format w: each output row the
 * reference's dequantized row (bitwise; q4_k within 1e-6 of max(|x|, 1), the
 * compiler may contract (d*sc) * q - dmin*m into an fma), an id out of range
 * reading row 0. */
static void check_embed(halo_dtype w, int64_t V, int64_t H, int64_t T)
{
	kv_desc d = {.op = IR_OP_EMBED, .t_max = T, .wtype = w};
	d.u.embed.V = V;
	d.u.embed.H = H;
	kv_kernel k;
	void *h;
	launch_fn launch;
	int before = check_failures;
	if (!load_variant(d, d.tiles, 4, &k, &h, &launch)) /* table, ids, y, step */
		return;
	weights wt = make_weights(w, H, V, (unsigned)(V * 7 + H + w));
	int32_t *ids = malloc((size_t)T * sizeof(int32_t));
	float *y = malloc((size_t)(T * H) * sizeof(float));
	for (int64_t t = 0; t < T; t++)
		ids[t] = t == T - 1 ? (int32_t)V : (int32_t)((t * 37 + 5) % V);
	if (h)
		launch_step(&k, launch, (void *[]){wt.bytes, ids, y}, 3, y, T * H, T);
	double worst = 0;
	for (int64_t i = 0; h && i < T * H; i++) {
		int64_t row = ids[i / H] < V ? ids[i / H] : 0;
		float want = wt.value[row * H + i % H];
		worst = fmax(worst, fabs((double)y[i] - want) / fmax(fabs((double)want), 1.0));
	}
	CHECK(!h || (w == HALO_Q4_K ? worst <= 1e-6 : worst == 0), "%s: rows off by %.3g", k.signature, worst);
	printf("%s %s: worst %.2g\n", check_failures == before ? "ok  " : "FAIL", k.signature, worst);
	if (h)
		dlclose(h);
	kv_kernel_free(&k);
	free(ids);
	free(y);
	free(wt.bytes);
	free(wt.value);
}

static float silu(double v)
{
	return (float)(v / (1.0 + exp(-v)));
}

/* Every variant of moe_gate_up and moe_down with experts of format w (E
 * experts of F x H, KSEL chosen a token) against f64 sums, T = 1..5; an id
 * outside [0, E) reads expert 0 (docs/ops.md). */
static void check_moe(halo_dtype w, int64_t H, int64_t F, int64_t E, int64_t KSEL, double tol)
{
	enum { T_MAX = 5 };
	weights gate = make_weights(w, H, E * F, 11), up = make_weights(w, H, E * F, 12);
	weights down = make_weights(w, F, E * H, 13);
	float *x = malloc((size_t)(T_MAX * H) * sizeof(float)), *act = malloc((size_t)(T_MAX * KSEL * F) * sizeof(float));
	float *wr = malloc((size_t)(T_MAX * KSEL) * sizeof(float));
	float *y = malloc((size_t)(T_MAX * (KSEL * F > H ? KSEL * F : H)) * sizeof(float));
	int32_t *ids = malloc((size_t)(T_MAX * KSEL) * sizeof(int32_t));
	for (int64_t i = 0; i < T_MAX * H; i++)
		x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
	for (int64_t i = 0; i < T_MAX * KSEL * F; i++)
		act[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
	for (int64_t i = 0; i < T_MAX * KSEL; i++) {
		ids[i] = i == 3 ? -1 : (int32_t)(rand() % E);
		wr[i] = (float)rand() / (float)RAND_MAX;
	}
	for (int half = 0; half < 2; half++) {
		kv_desc d = {.op = half ? IR_OP_MOE_DOWN : IR_OP_MOE_GATE_UP, .t_max = T_MAX, .wtype = w};
		d.u.moe.H = H, d.u.moe.F = F, d.u.moe.E = E, d.u.moe.k = KSEL;
		/* the variants differ in lanes alone (the tree's width): the
		 * heuristic's and two more */
		kv_tiles tiles[3];
		int n_var = kv_variant_space(&d, tiles, 3);
		for (int v = 0; v < n_var; v++) {
			int before = check_failures;
			kv_kernel k;
			void *h;
			launch_fn launch;
			if (!load_variant(d, tiles[v], 6, &k, &h, &launch)) /* x or act, ids, the weights, y, step */
				continue;
			double worst = 0;
			for (int64_t T = 1; h && T <= T_MAX; T++) {
				int64_t n_out = half ? T * H : T * KSEL * F;
				void *b[5] = {half ? (void *)act : (void *)x, ids, half ? (void *)wr : gate.bytes,
					      half ? down.bytes : up.bytes, y};
				launch_step(&k, launch, b, 5, y, n_out, T);
				for (int64_t o = 0; o < n_out && check_failures == before; o++) {
					double want = 0;
					if (!half) { /* o = (t, j, f) */
						int64_t t = o / (KSEL * F), j = o / F % KSEL, f = o % F, e = ids[t * KSEL + j];
						e = e < 0 || e >= E ? 0 : e;
						double g = 0, u = 0;
						for (int64_t i = 0; i < H; i++) {
							g += (double)gate.value[(e * F + f) * H + i] * x[t * H + i];
							u += (double)up.value[(e * F + f) * H + i] * x[t * H + i];
						}
						want = silu(g) * u;
					} else { /* o = (t, h) */
						int64_t t = o / H, hh = o % H;
						for (int64_t j = 0; j < KSEL; j++) {
							int64_t e = ids[t * KSEL + j];
							e = e < 0 || e >= E ? 0 : e;
							double dot = 0;
							for (int64_t f = 0; f < F; f++)
								dot += (double)down.value[(e * H + hh) * F + f] *
								       act[(t * KSEL + j) * F + f];
							want += wr[t * KSEL + j] * dot;
						}
					}
					double e = fabs((double)y[o] - want) / fmax(fabs(want), 1e-2);
					CHECK(e <= tol, "%s T=%lld: output %lld got %.9g want %.9g (error %.3g, tolerance %.3g)",
					      k.signature, (long long)T, (long long)o, (double)y[o], want, e, tol);
					worst = fmax(worst, e / tol);
				}
			}
			printf("%s %s: worst %.2g of its bound\n", check_failures == before ? "ok  " : "FAIL", k.signature,
			       worst);
			if (h)
				dlclose(h);
			kv_kernel_free(&k);
		}
	}
	free(x);
	free(act);
	free(wr);
	free(y);
	free(ids);
	weights *all[] = {&gate, &up, &down};
	for (int i = 0; i < 3; i++) {
		free(all[i]->bytes);
		free(all[i]->value);
	}
}

/* Random queries (nq floats) and key and value caches (nc each) in [-1, 1]. */
static void attention_inputs(int64_t nq, int64_t nc, float **q, float **kc, float **vc)
{
	*q = malloc((size_t)nq * sizeof(float));
	*kc = malloc((size_t)nc * sizeof(float));
	*vc = malloc((size_t)nc * sizeof(float));
	for (int64_t i = 0; i < nq; i++)
		(*q)[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
	for (int64_t i = 0; i < nc; i++) {
		(*kc)[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
		(*vc)[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
	}
}

/* Batch invariance of an attention kernel: each row t of a T-row step at
 * pos, run alone at pos + t (operand 0 its query row of q_row floats, operand
 * yi its result of `row` floats, the other operands as b gives them), equals
 * row t of y bitwise; checked while no earlier check (since `before`)
 * failed. */
static void rows_alone(const kv_kernel *k, launch_fn launch, void **b, int n_b, int yi, int64_t q_row,
		       const float *y, int64_t row, int64_t T, uint32_t pos, int before)
{
	const float *q = b[0];
	float *y1 = b[yi];
	for (int64_t t = 0; t < T && check_failures == before; t++) {
		b[0] = (void *)(q + t * q_row);
		launch_step_at(k, launch, b, n_b, y1, row, 1, pos + (uint32_t)t);
		CHECK(memcmp(y1, y + t * row, (size_t)row * sizeof(float)) == 0,
		      "%s: row %lld of a %lld-row step differs from the row alone", k->signature, (long long)t,
		      (long long)T);
	}
	b[0] = (void *)q;
}

/* attention_partial of a prompt step (attention_rows.hip): every query's
 * partial over each block of `block` keys (the sums weighted by e^(s - m),
 * the max score m, the denominator; NEG_BIG and zeros for a block past its
 * position) against f64, within the op suite's attention tolerance of the
 * row's denominator and output scale; and a step of T rows at pos bitwise
 * equal to each row run alone at its position. */
static void check_attention_rows(int64_t hq, int64_t hk, int64_t D, int64_t C, int64_t block, int64_t T,
				 uint32_t pos)
{
	kv_desc d = {.op = IR_OP_ATTENTION_PARTIAL, .t_max = 64};
	d.u.attention.hq = hq, d.u.attention.hk = hk, d.u.attention.D = D, d.u.attention.dv = D;
	d.u.attention.C = C, d.u.attention.scale = 0.25f, d.u.attention.block = block;
	int64_t nb = (C + block - 1) / block, row = hq * nb * (D + 2);
	CHECK(block <= 256, "block of %lld keys: the reference holds 256 scores", (long long)block);
	kv_kernel k;
	void *h;
	launch_fn launch;
	if (!load_variant(d, (kv_tiles){0}, 5, &k, &h, &launch)) /* q, k, v, part, step */
		return;
	CHECK(strstr(k.signature, ",kp") != NULL, "%s: not attention_rows' tiling", k.signature);
	float *q, *kc, *vc, *y = malloc((size_t)(T * row) * sizeof(float)), *y1 = malloc((size_t)row * sizeof(float));
	attention_inputs(T * hq * D, C * hk * D, &q, &kc, &vc);
	int before = check_failures;
	double worst = 0;
	if (h)
		launch_step_at(&k, launch, (void *[]){q, kc, vc, y}, 4, y, T * row, T, pos);
	for (int64_t t = 0; h && t < T && check_failures == before; t++)
		for (int64_t j = 0; j < hq && check_failures == before; j++)
			for (int64_t b = 0; b < nb && check_failures == before; b++) {
				const float *got = y + ((t * hq + j) * nb + b) * (D + 2);
				int64_t lo = b * block, hi = pos + t + 1 < (b + 1) * block ? pos + t + 1 : (b + 1) * block;
				int64_t kvh = j / (hq / hk);
				double sc[256], m = -3.0e38, l = 0;
				for (int64_t c = lo; c < hi; c++) {
					double dot = 0;
					for (int64_t i = 0; i < D; i++)
						dot += (double)q[(t * hq + j) * D + i] * kc[(c * hk + kvh) * D + i];
					sc[c - lo] = 0.25 * dot;
					m = fmax(m, sc[c - lo]);
				}
				for (int64_t c = lo; c < hi; c++)
					l += exp(sc[c - lo] - m);
				/* the max score, then the denominator and the sums on the denominator's scale */
				double e = hi > lo ? fabs(got[D] - m) / fmax(fabs(m), 1e-2) : got[D] == -3.0e38f ? 0 : 1;
				e = fmax(e, fabs(got[D + 1] - l) / fmax(l, 1e-2));
				for (int64_t i = 0; i < D; i++) {
					double want = 0;
					for (int64_t c = lo; c < hi; c++)
						want += exp(sc[c - lo] - m) * vc[(c * hk + kvh) * D + i];
					e = fmax(e, fabs(got[i] - want) / fmax(l, 1e-2));
				}
				CHECK(e <= 2e-5, "%s T=%lld pos %u: row %lld head %lld block %lld off by %.3g", k.signature,
				      (long long)T, pos, (long long)t, (long long)j, (long long)b, e);
				worst = fmax(worst, e / 2e-5);
			}
	if (h)
		rows_alone(&k, launch, (void *[]){q, kc, vc, y1}, 4, 3, hq * D, y, row, T, pos, before);
	printf("%s %s T=%lld pos %u: worst %.2g of its bound, rows bitwise as alone\n",
	       check_failures == before ? "ok  " : "FAIL", k.signature, (long long)T, pos, worst);
	if (h)
		dlclose(h);
	kv_kernel_free(&k);
	free(q), free(kc), free(vc), free(y), free(y1);
}

/* attention_blocks (attention.hip at t_max 8, attention_rows.hip at 64, with
 * BLOCKS: each row's last block to finish merges the blocks) against f64
 * attention over the row's keys, within the op suite's attention tolerance;
 * its counters zero after each step; and a step of T rows at pos bitwise
 * equal to each row run alone at its position. masked: masked_attention_blocks
 * (attention.hip at any t_max) over a mask that every row shares (so a row
 * alone reads its row), keeping runs of keys and the step's own, with whole
 * blocks where it keeps nothing. */
static bool mask_keeps(int64_t c, uint32_t pos, int64_t T)
{
	return (c >= pos && c < pos + T) || (c / 96) % 3 == 1;
}

static void check_attention_blocks(bool masked, int64_t t_max, int64_t hq, int64_t hk, int64_t D, int64_t C,
				   int64_t block, int64_t T, uint32_t pos)
{
	kv_desc d = {.op = masked ? IR_OP_MASKED_ATTENTION_BLOCKS : IR_OP_ATTENTION_BLOCKS, .t_max = t_max};
	d.u.attention.hq = hq, d.u.attention.hk = hk, d.u.attention.D = D, d.u.attention.dv = D;
	d.u.attention.C = C, d.u.attention.scale = 0.25f, d.u.attention.block = block;
	d.u.attention.sync_rows = t_max;
	int64_t nb = (C + block - 1) / block, row = hq * D;
	kv_kernel k;
	void *h;
	launch_fn launch;
	/* q, k, v, sync[, mask], y, part, step */
	if (!load_variant(d, (kv_tiles){0}, masked ? 8 : 7, &k, &h, &launch))
		return;
	float *q, *kc, *vc, *y = malloc((size_t)(T * row) * sizeof(float)), *y1 = malloc((size_t)row * sizeof(float));
	float *part = malloc((size_t)(T * hq * nb * (D + 2)) * sizeof(float));
	uint32_t *sync = calloc((size_t)(t_max * hq), sizeof(uint32_t));
	double *sc = malloc((size_t)C * sizeof(double));
	float *mask = malloc((size_t)(T * C) * sizeof(float));
	for (int64_t i = 0; i < T * C; i++)
		mask[i] = mask_keeps(i % C, pos, T) ? 1.0f : 0.0f;
	attention_inputs(T * hq * D, C * hk * D, &q, &kc, &vc);
	void *bufs[7] = {q, kc, vc, sync, mask, y, part}, *bufs1[7] = {q, kc, vc, sync, mask, y1, part};
	if (!masked) /* no mask operand */
		for (int i = 4; i < 6; i++)
			bufs[i] = bufs[i + 1], bufs1[i] = bufs1[i + 1];
	int nbuf = masked ? 7 : 6;
	int before = check_failures;
	double worst = 0;
	if (h)
		launch_step_at(&k, launch, bufs, nbuf, y, T * row, T, pos);
	for (int64_t t = 0; h && t < T && check_failures == before; t++)
		for (int64_t j = 0; j < hq && check_failures == before; j++) {
			int64_t n = pos + t + 1, kvh = j / (hq / hk);
			double m = -3.0e38, l = 0, e = 0;
			for (int64_t c = 0; c < n; c++) {
				double dot = 0;
				for (int64_t i = 0; i < D; i++)
					dot += (double)q[(t * hq + j) * D + i] * kc[(c * hk + kvh) * D + i];
				sc[c] = 0.25 * dot;
				if (!masked || mask_keeps(c, pos, T))
					m = fmax(m, sc[c]);
			}
			for (int64_t c = 0; c < n; c++)
				l += !masked || mask_keeps(c, pos, T) ? exp(sc[c] - m) : 0.0;
			for (int64_t i = 0; i < D; i++) {
				double want = 0;
				for (int64_t c = 0; c < n; c++)
					if (!masked || mask_keeps(c, pos, T))
						want += exp(sc[c] - m) * vc[(c * hk + kvh) * D + i];
				want /= l;
				e = fmax(e, fabs(y[(t * hq + j) * D + i] - want) / fmax(fabs(want), 1e-2));
			}
			CHECK(e <= 2e-5, "%s T=%lld pos %u: row %lld head %lld off by %.3g", k.signature, (long long)T, pos,
			      (long long)t, (long long)j, e);
			worst = fmax(worst, e / 2e-5);
		}
	for (int64_t i = 0; h && i < t_max * hq; i++)
		CHECK(sync[i] == 0, "%s: counter %lld left at %u", k.signature, (long long)i, sync[i]);
	if (h)
		rows_alone(&k, launch, bufs1, nbuf, masked ? 5 : 4, hq * D, y, row, T, pos, before);
	printf("%s %s T=%lld pos %u: worst %.2g of its bound, rows bitwise as alone\n",
	       check_failures == before ? "ok  " : "FAIL", k.signature, (long long)T, pos, worst);
	if (h)
		dlclose(h);
	kv_kernel_free(&k);
	free(q), free(kc), free(vc), free(y), free(y1), free(part), free(sync), free(sc), free(mask);
}

/* attention_rope (attention.hip with ROPE_IN: the queries and the step's
 * keys normalised and rotated in the kernel) against ref_rms_norm, ref_rope
 * and ref_attention over the cache's rows below pos and the rotated keys,
 * with the cache's rows from pos garbage the kernel must not read; the keys
 * it stores against the reference's; its counters zero after the step.
 * tests/kernels/test_attention.c's tolerances (the f32 angle). */
static void check_attention_rope(int64_t hq, int64_t hk, int64_t D, int64_t C, int64_t block, int64_t T, uint32_t pos)
{
	kv_desc d = {.op = IR_OP_ATTENTION_ROPE, .t_max = 8, .out_at_pos = 4};
	d.u.attention.hq = hq, d.u.attention.hk = hk, d.u.attention.D = D, d.u.attention.dv = D;
	d.u.attention.C = C, d.u.attention.scale = 0.25f, d.u.attention.block = block, d.u.attention.sync_rows = 8;
	d.u.attention.rope = (ref_rope_params){.rot_dim = D / 4 * 2, .base = 1000000.0f}; /* half the head */
	d.u.attention.norm_eps = 1e-6f, d.u.attention.norm_offset = 1;
	int64_t nb = (C + block - 1) / block, row = hq * D, rk = hk * D;
	kv_kernel k;
	void *h;
	launch_fn launch;
	/* q, k, v, sync, k_new, q_norm, k_norm, y, part, k_out, step */
	if (!load_variant(d, (kv_tiles){0}, 11, &k, &h, &launch))
		return;
	float *q, *kc, *vc, *kn = malloc((size_t)(T * rk) * sizeof(float)), *y = malloc((size_t)(T * row) * sizeof(float)), *want = malloc((size_t)(T * row) * sizeof(float));
	float *part = malloc((size_t)(T * hq * nb * (D + 2)) * sizeof(float)), *w = malloc((size_t)(2 * D) * sizeof(float));
	float *k_out = malloc((size_t)(C * rk) * sizeof(float)), *cache = malloc((size_t)(C * rk) * sizeof(float));
	float *qr = malloc((size_t)(T * row) * sizeof(float)), *tmp = malloc((size_t)(T * row) * sizeof(float));
	uint32_t *sync = calloc((size_t)(8 * hq), sizeof(uint32_t));
	attention_inputs(T * hq * D, C * rk, &q, &kc, &vc);
	for (int64_t i = 0; i < T * rk; i++)
		kn[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
	for (int64_t i = 0; i < 2 * D; i++) /* the q and k norm weights */
		w[i] = (float)rand() / (float)RAND_MAX - 0.5f;
	for (int64_t i = pos * rk; i < C * rk; i++)
		kc[i] = 1e6f;
	memcpy(k_out, kc, (size_t)(C * rk) * sizeof(float));
	memcpy(cache, kc, (size_t)(C * rk) * sizeof(float));
	ref_rope_params p = d.u.attention.rope;
	ref_rms_norm(q, w, tmp, T * hq, D, 0, 1e-6f, 1);
	ref_rope(&p, tmp, qr, T, hq, D, pos);
	ref_rms_norm(kn, w + D, tmp, T * hk, D, 0, 1e-6f, 1);
	ref_rope(&p, tmp, cache + pos * rk, T, hk, D, pos);
	ref_error err;
	CHECK(ref_attention(qr, cache, vc, want, T, hq, hk, D, D, C, pos, 0.25f, &err), "reference: %s", err.msg);
	int before = check_failures;
	double worst = 0, tol = 2e-4 + 1e-7 * pos, ktol = 1e-4 + 1e-7 * pos;
	if (h)
		launch_step_at(&k, launch, (void *[]){q, kc, vc, sync, kn, w, w + D, y, part, k_out}, 10, y, T * row, T, pos);
	for (int64_t i = 0; h && i < T * row; i++) {
		double e = fabs(y[i] - want[i]) / fmax(fabs(want[i]), 1e-2);
		worst = fmax(worst, e / tol);
		CHECK(e <= tol, "%s T=%lld pos %u: output %lld off by %.3g", k.signature, (long long)T, pos, (long long)i, e);
	}
	for (int64_t i = pos * rk; h && i < (pos + T) * rk; i++) {
		double e = fabs(k_out[i] - cache[i]) / fmax(fabs(cache[i]), 1.0);
		CHECK(e <= ktol, "%s: stored key element %lld off by %.3g", k.signature, (long long)i, e);
	}
	CHECK(memcmp(k_out, kc, (size_t)(pos * rk) * sizeof(float)) == 0, "%s: the cache below pos changed", k.signature);
	for (int64_t i = 0; h && i < 8 * hq; i++)
		CHECK(sync[i] == 0, "%s: counter %lld left at %u", k.signature, (long long)i, sync[i]);
	printf("%s %s T=%lld pos %u: worst %.2g of its bound\n", check_failures == before ? "ok  " : "FAIL",
	       k.signature, (long long)T, pos, worst);
	if (h)
		dlclose(h);
	kv_kernel_free(&k);
	free(q), free(kc), free(vc), free(kn), free(y), free(want), free(part), free(w), free(k_out), free(cache);
	free(qr), free(tmp), free(sync);
}

int main(void)
{
	if (system("command -v clang++-19 >/dev/null 2>&1") != 0) {
		printf("SKIP: clang++-19 is not installed\n");
		return 77;
	}
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 1;
	}
	static const int64_t decode[] = {1, 2, 3, 4, 5, 0}, prefill[] = {19, 9, 0};
	/* f32 sums of K products (f64 here); the quantized formats scale each
	 * block's sum once (the reference: each weight), as tests/ops/op_cases.c
	 * states each; the matrix units' form adds its f16 bound (check_rows) */
	check_matmul(HALO_F32, 256, 40, 5, decode, 0, -1, 2e-5);
	check_matmul(HALO_F16, 256, 40, 5, decode, 0, -1, 2e-5);
	check_matmul(HALO_Q8_0, 256, 40, 5, decode, 0, -1, 1e-4);
	check_matmul(HALO_Q4_K, 256, 40, 5, decode, 0, -1, 1e-4);
	check_matmul(HALO_F8E4M3_B128, 256, 40, 5, decode, 0, -1, 1e-4);
	check_matmul(HALO_F32, 96, 40, 19, prefill, 0, -1, 2e-5);
	check_matmul(HALO_F16, 256, 40, 19, prefill, 0, -1, 2e-5);
	check_matmul(HALO_Q4_K, 256, 40, 19, prefill, 0, -1, 1e-4);
	/* q4_k rows of 2.5 and 0.625 super-blocks (the partial one's scales) */
	check_matmul(HALO_Q4_K, 640, 40, 5, decode, 0, 0, 1e-4);
	check_matmul(HALO_Q4_K, 160, 40, 19, prefill, 0, -1, 1e-4);
	/* int8 activations: exact integer sums, scaled once per block (and
	 * column), so the quantized formats' bound; K = 2304 at T_MAX = 8 is
	 * two tiles of x's codes (2048 columns, then 256) */
	static const int64_t verify[] = {1, 5, 8, 0};
	check_matmul(HALO_Q8_0, 2304, 24, 8, verify, 8, 0, 1e-4);
	check_matmul(HALO_Q4_K, 2304, 24, 8, verify, 8, 1, 1e-4);
	/* k weighted f32 dots of F over H-term dots through silu (f64 here),
	 * the op suite's MoE tolerance; the formats' block sums as above */
	check_moe(HALO_F16, 64, 32, 4, 2, 2e-5);
	check_moe(HALO_Q4_K, 256, 256, 4, 2, 1e-4);
	check_moe(HALO_MXFP4, 64, 32, 4, 2, 1e-4);
	check_moe(HALO_Q4_K, 256, 640, 4, 2, 1e-4); /* down's rows of 640: Qwen3.8 Flash's experts */
	/* gathers from quantized tables: every format, q4_k's partial super-block */
	check_embed(HALO_Q8_0, 50, 96, 6);
	check_embed(HALO_Q4_K, 50, 160, 6);
	check_embed(HALO_F8E4M3_B128, 20, 256, 3);
	check_embed(HALO_MXFP4, 30, 64, 4);
	/* prompt attention: GQA groups of 4 and 2, a ragged tile mid-cache,
	 * blocks past the rows' positions; the op suite's attention tolerance */
	check_attention_rows(8, 2, 128, 256, 64, 19, 0);
	check_attention_rows(4, 2, 32, 256, 64, 21, 100);
	/* one dispatch: a decode step across blocks, a verify step, a prompt chunk */
	check_attention_blocks(false, 8, 8, 2, 128, 512, 128, 1, 450);
	check_attention_blocks(false, 8, 4, 2, 32, 512, 128, 5, 300);
	check_attention_blocks(false, 64, 4, 2, 32, 256, 64, 21, 100);
	/* masked (QSA's attention): decode, verify, a prompt chunk */
	check_attention_blocks(true, 8, 8, 2, 128, 512, 128, 1, 450);
	check_attention_blocks(true, 8, 4, 2, 32, 512, 128, 5, 300);
	check_attention_blocks(true, 64, 4, 2, 32, 256, 64, 21, 100);
	/* the norm and rope folded in: decode across blocks, a verify step
	 * whose keys straddle two blocks (partial rotation, vec4 and scalar) */
	check_attention_rope(8, 2, 128, 512, 128, 1, 450);
	check_attention_rope(4, 2, 32, 512, 64, 5, 126);
	check_attention_rope(3, 3, 6, 256, 64, 5, 60);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
	CHECK(system(cmd) == 0, "removing %s", tmp_dir);
	if (check_failures)
		return 1;
	printf("hip host: ok\n");
	return 0;
}
