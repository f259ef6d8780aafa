/* Data movement and selection kernels against the reference, exactly (they
 * copy or compare floats, so the result must be bitwise the reference's):
 * embed (f32 and f16 table, out-of-range ids clamp to row 0, zero_pos0; a
 * block-quantized table against the reference's dequantization of it, bitwise
 * but q4_k's, whose kernel may contract (d*sc) * q - dmin*m into an fma: within
 * 1e-6 of max(|x|, 1), a rounding of a product of magnitude <= 2), copy_rows as
 * state_write at pos (and with every), rows_at_pos (offsets 0 and -1, rows outside the
 * state read as zeros), slice and repeat_heads, concat, argmax (ties). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

/* zero_pos0 (the DeepSeek V4 MTP embedding) runs at pos: with pos 0 the
 * first row must be zeros, at any other pos every row the table's. */
static bool embed_case(harness *h, int64_t V, int64_t H, int64_t T, halo_dtype wt, bool zero_pos0, uint32_t pos,
		       uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_EMBED, .t_max = T, .wtype = wt};
	d.u.embed.V = V;
	d.u.embed.H = H;
	d.u.embed.zero_pos0 = zero_pos0;
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	float *table = alloc_floats((size_t)(V * H)), *y = alloc_floats((size_t)(T * H));
	float *want = alloc_floats((size_t)(T * H));
	int32_t *ids = calloc((size_t)T, sizeof *ids), *ids_ref = calloc((size_t)T, sizeof *ids);
	fill_random(table, (size_t)(V * H), 1.0f, seed);
	size_t tb;
	void *stored = stored_table(wt, table, (size_t)V, (size_t)H, &tb);
	for (int64_t t = 0; t < T; t++) {
		*seed = *seed * 1664525u + 1013904223u;
		ids[t] = (int32_t)((*seed >> 8) % (uint32_t)V);
	}
	ids[T - 1] = (int32_t)V;      /* out of range: the kernel reads row 0 */
	if (T > 1)
		ids[0] = -3;
	for (int64_t t = 0; t < T; t++)
		ids_ref[t] = ids[t] < 0 || ids[t] >= V ? 0 : ids[t];
	hop ops[3] = {
		{stored, tb, false},
		{ids, (size_t)T * 4, false},
		{y, (size_t)(T * H) * 4, true},
	};
	bool ok = hk_run(h, &k, ops, 3, (uint32_t)T, pos);
	ref_error err;
	ok = ok && ref_embed(table, ids_ref, want, T, V, H, &err);
	if (zero_pos0 && pos == 0)
		memset(want, 0, sizeof(float) * (size_t)H);
	ok = ok && (wt == HALO_Q4_K ? check_close(k.k.signature, y, want, (size_t)(T * H), 1e-6, 1.0)
				    : check_bitwise(k.k.signature, y, want, (size_t)(T * H)));
	if (stored != table)
		free(stored);
	free(table), free(y), free(want), free(ids), free(ids_ref);
	hk_free(h, &k);
	return ok;
}

static bool copy_run(harness *h, const kv_desc *d, float *src, size_t ns, float *dst, size_t nd,
		     uint32_t T, uint32_t pos)
{
	hkernel k;
	if (!hk_build(h, d, &k))
		return false;
	hop ops[2] = {{src, ns * 4, false}, {dst, nd * 4, true}};
	bool ok = hk_run(h, &k, ops, 2, T, pos);
	hk_free(h, &k);
	return ok;
}

/* state_write at pos: v [T, 2, 8] into the cache [C, 2, 8]; other rows
 * untouched. With every m (DeepSeek V4's compressed entries) only the rows
 * that close a window land, each in its window's row of a [C, 2, 8] state. */
/* every > 0: one row per closed window; ring: rows (pos + t) mod C. */
static bool state_write_case(harness *h, int64_t T, int64_t C, uint32_t pos, int64_t every, bool ring,
			     uint32_t *seed)
{
	const int64_t row = 16;
	kv_desc d = {.op = IR_OP_STATE_WRITE, .t_max = 16};
	d.u.copy.rows = (ir_dim){1, 0};
	d.u.copy.width = row;
	d.u.copy.src_stride = row;
	d.u.copy.dst_stride = row;
	d.u.copy.at_pos = true;
	d.u.copy.every = every;
	d.u.copy.ring = ring ? C : 0;
	float *v = alloc_floats((size_t)(T * row)), *cache = alloc_floats((size_t)(C * row));
	float *want = alloc_floats((size_t)(C * row));
	fill_random(v, (size_t)(T * row), 1.0f, seed);
	fill_random(cache, (size_t)(C * row), 1.0f, seed);
	memcpy(want, cache, (size_t)(C * row) * 4);
	ref_error err;
	bool ok = every ? ref_state_write_every(v, want, T, C, row, pos, every, &err)
		  : ring ? ref_state_write_ring(v, want, T, C, row, pos, &err)
			 : ref_state_write_at(v, want, T, C, row, pos, &err);
	ok = ok && copy_run(h, &d, v, (size_t)(T * row), cache, (size_t)(C * row), (uint32_t)T, pos);
	char what[128];
	snprintf(what, sizeof what, "copy_rows as state_write at pos %u, T %lld, every %lld%s", pos, (long long)T,
		 (long long)every, ring ? ", ring" : "");
	ok = ok && check_bitwise(what, cache, want, (size_t)(C * row));
	free(v), free(cache), free(want);
	return ok;
}

/* rows_at_pos: T rows of a [C=20, 3, 5] state from pos + offset; the
 * destination starts as noise so that zero-filled rows are checked too. */
static bool rows_at_pos_case(harness *h, int64_t T, uint32_t pos, int64_t offset, uint32_t *seed)
{
	const int64_t C = 20, row = 15;
	kv_desc d = {.op = IR_OP_ROWS_AT_POS, .t_max = 8};
	d.u.copy.rows = (ir_dim){1, 0};
	d.u.copy.width = row;
	d.u.copy.src_stride = row;
	d.u.copy.dst_stride = row;
	d.u.copy.from_pos = true;
	d.u.copy.src_rows = C;
	d.u.copy.pos_offset = offset;
	float *state = alloc_floats((size_t)(C * row)), *y = alloc_floats((size_t)(T * row));
	float *want = alloc_floats((size_t)(T * row));
	fill_random(state, (size_t)(C * row), 1.0f, seed);
	fill_random(y, (size_t)(T * row), 1.0f, seed);
	ref_rows_at_pos(state, want, T, C, row, pos, offset);
	bool ok = copy_run(h, &d, state, (size_t)(C * row), y, (size_t)(T * row), (uint32_t)T, pos);
	char what[96];
	snprintf(what, sizeof(what), "rows_at_pos T=%lld pos=%u offset=%lld", (long long)T, pos, (long long)offset);
	ok = ok && check_bitwise(what, y, want, (size_t)(T * row));
	free(state), free(y), free(want);
	return ok;
}

/* slice along axis 1 of [T, 40]: columns 13..13+17 */
static bool slice_case(harness *h, uint32_t *seed)
{
	const int64_t T = 5, D = 40, start = 13, len = 17;
	kv_desc d = {.op = IR_OP_SLICE, .t_max = 8};
	d.u.copy.rows = (ir_dim){1, 0};
	d.u.copy.width = len;
	d.u.copy.src_stride = D;
	d.u.copy.src_offset = start;
	d.u.copy.dst_stride = len;
	float *x = alloc_floats((size_t)(T * D)), *y = alloc_floats((size_t)(T * len));
	float *want = alloc_floats((size_t)(T * len));
	fill_random(x, (size_t)(T * D), 1.0f, seed);
	ref_error err;
	bool ok = ref_slice(x, want, T, D, 1, start, len, &err);
	ok = ok && copy_run(h, &d, x, (size_t)(T * D), y, (size_t)(T * len), (uint32_t)T, 0);
	ok = ok && check_bitwise("copy_rows as slice", y, want, (size_t)(T * len));
	free(x), free(y), free(want);
	return ok;
}

/* repeat_heads: [T, 2, 9] -> [T, 6, 9] */
static bool repeat_case(harness *h, uint32_t *seed)
{
	const int64_t T = 4, hh = 2, dd = 9, r = 3;
	kv_desc d = {.op = IR_OP_REPEAT_HEADS, .t_max = 8};
	d.u.copy.rows = (ir_dim){hh * r, 0};
	d.u.copy.width = dd;
	d.u.copy.src_stride = dd;
	d.u.copy.dst_stride = dd;
	d.u.copy.rep = r;
	size_t nx = (size_t)(T * hh * dd), ny = nx * (size_t)r;
	float *x = alloc_floats(nx), *y = alloc_floats(ny), *want = alloc_floats(ny);
	fill_random(x, nx, 1.0f, seed);
	ref_repeat_heads(x, want, T, hh, dd, r);
	bool ok = copy_run(h, &d, x, nx, y, ny, (uint32_t)T, 0);
	ok = ok && check_bitwise("copy_rows as repeat_heads", y, want, ny);
	free(x), free(y), free(want);
	return ok;
}

static bool concat_case(harness *h, ir_dim rows, ir_dim wa, ir_dim wb, int64_t T, uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_CONCAT, .t_max = 16};
	d.u.concat.rows = rows;
	d.u.concat.wa = wa;
	d.u.concat.wb = wb;
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	int64_t R = rows.coef_T * T + rows.c, A = wa.coef_T * T + wa.c, B = wb.coef_T * T + wb.c;
	float *a = alloc_floats((size_t)(R * A)), *b = alloc_floats((size_t)(R * B));
	float *y = alloc_floats((size_t)(R * (A + B))), *want = alloc_floats((size_t)(R * (A + B)));
	fill_random(a, (size_t)(R * A), 1.0f, seed);
	fill_random(b, (size_t)(R * B), 1.0f, seed);
	ref_concat(a, b, want, R, A, B, 1);
	hop ops[3] = {{a, (size_t)(R * A) * 4, false}, {b, (size_t)(R * B) * 4, false},
		      {y, (size_t)(R * (A + B)) * 4, true}};
	bool ok = hk_run(h, &k, ops, 3, (uint32_t)T, 0);
	ok = ok && check_bitwise(k.k.signature, y, want, (size_t)(R * (A + B)));
	free(a), free(b), free(y), free(want);
	hk_free(h, &k);
	return ok;
}

static bool argmax_case(harness *h, int64_t T, int64_t N, uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_ARGMAX, .t_max = T};
	d.u.argmax.N = N;
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	float *x = alloc_floats((size_t)(T * N));
	int32_t *ids = calloc((size_t)T, 4), *want = calloc((size_t)T, 4);
	fill_random(x, (size_t)(T * N), 1.0f, seed);
	for (int64_t t = 0; t < T; t++) { /* ties: the maximum twice, the first must win */
		int64_t i = (t * 7) % N, j = (t * 13 + 5) % N;
		x[t * N + i] = 2.0f;
		x[t * N + j] = 2.0f;
	}
	hop ops[2] = {{x, (size_t)(T * N) * 4, false}, {ids, (size_t)T * 4, true}};
	bool ok = hk_run(h, &k, ops, 2, (uint32_t)T, 0);
	ref_argmax(x, want, T, N);
	for (int64_t t = 0; ok && t < T; t++)
		if (ids[t] != want[t]) {
			printf("FAIL %s: row %lld: %d, want %d\n", k.k.signature, (long long)t, ids[t],
			       want[t]);
			ok = false;
		}
	if (ok)
		printf("ok   %s: %lld rows\n", k.k.signature, (long long)T);
	free(x), free(ids), free(want);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 2024;
	bool ok = true;
	ok &= embed_case(h, 37, 65, 9, HALO_F32, false, 0, &seed);
	ok &= embed_case(h, 128, 7, 4, HALO_F16, false, 0, &seed);
	ok &= embed_case(h, 1, 1, 1, HALO_F32, false, 0, &seed);
	ok &= embed_case(h, 37, 65, 9, HALO_F32, true, 0, &seed);
	ok &= embed_case(h, 128, 7, 4, HALO_F16, true, 3, &seed);
	/* quantized tables: rows of whole blocks, q4_k's of 2 super-blocks and
	 * of 5 sub-blocks (a partial super-block) */
	ok &= embed_case(h, 37, 96, 9, HALO_Q8_0, false, 0, &seed);
	ok &= embed_case(h, 21, 512, 5, HALO_Q4_K, false, 0, &seed);
	ok &= embed_case(h, 50, 160, 6, HALO_Q4_K, true, 0, &seed);
	ok &= embed_case(h, 19, 256, 3, HALO_F8E4M3_B128, false, 0, &seed);
	ok &= embed_case(h, 33, 64, 4, HALO_MXFP4, true, 2, &seed);
	ok &= state_write_case(h, 3, 20, 11, 0, false, &seed);
	ok &= state_write_case(h, 13, 5, 2, 4, false, &seed); /* positions 2..14 close windows 0, 1 and 2 */
	ok &= state_write_case(h, 1, 5, 7, 4, false, &seed);  /* a decode step closing window 1 */
	ok &= state_write_case(h, 1, 5, 8, 4, false, &seed);  /* one closing none: nothing changes */
	ok &= state_write_case(h, 7, 9, 5, 0, true, &seed);   /* a ring: positions 9..11 wrap to rows 0..2 */
	ok &= state_write_case(h, 1, 9, 40, 0, true, &seed);  /* a decode step far past the ring's rows */
	ok &= rows_at_pos_case(h, 5, 7, 0, &seed);
	ok &= rows_at_pos_case(h, 3, 9, -1, &seed);
	ok &= rows_at_pos_case(h, 2, 0, -1, &seed); /* row -1 reads as zeros */
	ok &= rows_at_pos_case(h, 4, 18, 0, &seed); /* rows 20, 21 read as zeros */
	ok &= slice_case(h, &seed);
	ok &= repeat_case(h, &seed);
	ok &= concat_case(h, (ir_dim){1, 0}, (ir_dim){0, 7}, (ir_dim){0, 129}, 3, &seed);
	ok &= concat_case(h, (ir_dim){0, 1}, (ir_dim){16, 0}, (ir_dim){0, 5}, 4, &seed); /* axis 0 */
	ok &= argmax_case(h, 5, 129, &seed);
	ok &= argmax_case(h, 3, 1, &seed);
	ok &= argmax_case(h, 2, 1000, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
