#include "codegen/checkpoint.h"

#include <stdio.h>
#include <string.h>

static bool ckpt_exists(void *ctx, const char *name)
{
	return halo_st_find(ctx, name) != NULL;
}

static int64_t ckpt_rows(void *ctx, const char *name)
{
	const halo_st_tensor *t = halo_st_find(ctx, name);
	return t && t->rank >= 1 ? t->shape[0] : -1;
}

static void shape_str(const int64_t *shape, int rank, char *buf, size_t len)
{
	int n = snprintf(buf, len, "[");
	for (int i = 0; i < rank && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "]");
}

/* Tensor `name`, when it exists and its values have the shape the model
 * file expects (a packed FP4 tensor of [out, in/2] bytes holds [out, in]
 * values: halo_st_values_shape); *numel gets their count. */
static const halo_st_tensor *find_shaped(void *ctx, const char *name, const int64_t *shape, int rank,
					 uint64_t *numel, char *err, size_t errlen)
{
	const halo_st_tensor *t = halo_st_find(ctx, name);
	if (!t) {
		snprintf(err, errlen, "checkpoint has no tensor '%s'", name);
		return NULL;
	}
	int64_t values[HALO_ST_MAX_RANK];
	int have_rank = halo_st_values_shape(t, values, numel);
	bool same = have_rank == rank;
	for (int i = 0; same && i < rank; i++)
		same = values[i] == shape[i];
	if (!same) {
		char want[96], have[96], packed[160] = "";
		shape_str(shape, rank, want, sizeof(want));
		shape_str(t->shape, t->rank, have, sizeof(have));
		if (memcmp(values, t->shape, sizeof values) != 0) {
			char v[96];
			shape_str(values, have_rank, v, sizeof v);
			snprintf(packed, sizeof packed, " (%s bytes of packed FP4: %s values)", halo_st_dtype_name(t->dtype),
				 v);
		}
		snprintf(err, errlen, "%s: tensor '%s' has shape %s%s, the model file expects %s", t->file, name, have,
			 packed, want);
		return NULL;
	}
	return t;
}

static bool ckpt_read(void *ctx, const char *name, const int64_t *shape, int rank, float *dst, char *err,
		      size_t errlen)
{
	uint64_t n;
	return find_shaped(ctx, name, shape, rank, &n, err, errlen) &&
	       halo_st_read_f32(ctx, name, dst, n, err, errlen) == 0;
}

static halo_dtype ckpt_stored_as(void *ctx, const char *name)
{
	return halo_st_is_f8_blocks(ctx, name) ? HALO_F8E4M3_B128 : halo_st_is_mxfp4(ctx, name) ? HALO_MXFP4 : HALO_F32;
}

/* mxfp4's scales are the checkpoint's E8M0 bytes; f8e4m3_b128's are f32,
 * and its scales region starts at a multiple of 128 bytes, f32-aligned. */
static bool ckpt_read_stored(void *ctx, const char *name, halo_dtype t, const int64_t *shape, int rank,
			     uint8_t *values, uint8_t *scales, char *err, size_t errlen)
{
	uint64_t n;
	if (!find_shaped(ctx, name, shape, rank, &n, err, errlen))
		return false;
	if (t == HALO_MXFP4)
		return halo_st_read_mxfp4(ctx, name, values, scales, err, errlen) == 0;
	return halo_st_read_f8_blocks(ctx, name, values, (float *)scales, err, errlen) == 0;
}

void cg_checkpoint_source(halo_safetensors *st, cg_weight_source *src)
{
	src->read = ckpt_read;
	src->exists = ckpt_exists;
	src->rows = ckpt_rows;
	src->stored_as = ckpt_stored_as;
	src->read_stored = ckpt_read_stored;
	src->ctx = st;
}
