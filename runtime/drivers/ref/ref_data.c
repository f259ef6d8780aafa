/* Data movement: embed, slice, concat, repeat_heads, state_write at pos (every m). */
#include "runtime/drivers/ref/ref_error.h"

#include <inttypes.h>
#include <string.h>

bool ref_embed(const float *table, const int32_t *ids, float *y, int64_t T, int64_t V, int64_t H,
	       ref_error *err)
{
	for (int64_t t = 0; t < T; t++) {
		if (ids[t] < 0 || ids[t] >= V)
			return ref_fail(err, "embed", "token %" PRId64 " has id %" PRId32
					", expected 0 <= id < %" PRId64, t, ids[t], V);
		memcpy(y + t * H, table + (int64_t)ids[t] * H, (size_t)H * sizeof *y);
	}
	return true;
}

bool ref_slice(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner, int64_t start,
	       int64_t len, ref_error *err)
{
	if (start < 0 || len < 0 || start + len > dim)
		return ref_fail(err, "slice", "range [%" PRId64 ", %" PRId64
				") is outside the axis of size %" PRId64, start, start + len, dim);
	for (int64_t o = 0; o < outer; o++)
		memcpy(y + o * len * inner, x + (o * dim + start) * inner,
		       (size_t)(len * inner) * sizeof *y);
	return true;
}

void ref_concat(const float *a, const float *b, float *y, int64_t outer, int64_t da, int64_t db,
		int64_t inner)
{
	for (int64_t o = 0; o < outer; o++) {
		float *dst = y + o * (da + db) * inner;
		memcpy(dst, a + o * da * inner, (size_t)(da * inner) * sizeof *y);
		memcpy(dst + da * inner, b + o * db * inner, (size_t)(db * inner) * sizeof *y);
	}
}

void ref_repeat_heads(const float *x, float *y, int64_t T, int64_t h, int64_t d, int64_t r)
{
	for (int64_t t = 0; t < T; t++)
		for (int64_t j = 0; j < h * r; j++)
			memcpy(y + (t * h * r + j) * d, x + (t * h + j / r) * d,
			       (size_t)d * sizeof *y);
}

void ref_rows_at_pos(const float *x, float *y, int64_t T, int64_t C, int64_t row, int64_t pos, int64_t offset)
{
	for (int64_t r = 0; r < T; r++) {
		int64_t src = pos + offset + r;
		if (src >= 0 && src < C)
			memcpy(y + r * row, x + src * row, (size_t)row * sizeof *y);
		else
			memset(y + r * row, 0, (size_t)row * sizeof *y);
	}
}

bool ref_state_write_at(const float *v, float *state, int64_t T, int64_t C, int64_t row,
			int64_t pos, ref_error *err)
{
	if (pos < 0 || pos + T > C)
		return ref_fail(err, "state_write", "rows [%" PRId64 ", %" PRId64
				") do not fit the state's %" PRId64 " rows", pos, pos + T, C);
	memcpy(state + pos * row, v, (size_t)(T * row) * sizeof *v);
	return true;
}

bool ref_state_write_ring(const float *v, float *state, int64_t T, int64_t C, int64_t row, int64_t pos,
			  ref_error *err)
{
	if (pos < 0 || T > C)
		return ref_fail(err, "state_write", "%" PRId64 " rows at position %" PRId64 " do not fit a ring of %" PRId64
				" rows", T, pos, C);
	for (int64_t t = 0; t < T; t++)
		memcpy(state + ((pos + t) % C) * row, v + t * row, (size_t)row * sizeof *v);
	return true;
}

bool ref_state_write_every(const float *v, float *state, int64_t T, int64_t C, int64_t row, int64_t pos,
			   int64_t m, ref_error *err)
{
	if (pos < 0 || m < 1 || (pos + T) / m > C)
		return ref_fail(err, "state_write", "positions [%" PRId64 ", %" PRId64 ") close windows of %" PRId64
				" tokens up to row %" PRId64 ", past the state's %" PRId64 " rows", pos, pos + T, m,
				m > 0 ? (pos + T) / m - 1 : 0, C);
	for (int64_t t = 0; t < T; t++)
		if ((pos + t + 1) % m == 0)
			memcpy(state + ((pos + t + 1) / m - 1) * row, v + t * row, (size_t)row * sizeof *v);
	return true;
}
