/* safetensors reader: maps files, validates headers, converts tensors.
 * Format: u64 little-endian header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}
 * then the data region, offsets relative to its start. */
#include "codegen/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/parallel.h"
#include "runtime/drivers/ref/half.h"
#include "runtime/drivers/ref/quant.h"

/* Real headers are a few MB at most; this bounds what a bad length can make us parse. */
#define MAX_HEADER_BYTES (100u << 20)

typedef struct {
	char *path;
	const uint8_t *base;
	size_t size;
} mapped_file;

struct halo_safetensors {
	mapped_file *files;
	size_t n_files;
	halo_st_tensor *t;
	size_t n, cap;
};

static int failf(char *err, size_t errlen, const char *fmt, ...)
{
	if (errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ---------------------------------------------------------------- header */

/* bits: per element; F4 packs two values a byte. */
static const struct {
	const char *st_name;
	halo_st_dtype dtype;
	unsigned bits;
} dtype_names[] = {
	{"F32", HALO_ST_F32, 32},         {"F16", HALO_ST_F16, 16},         {"BF16", HALO_ST_BF16, 16},
	{"F8_E4M3", HALO_ST_F8_E4M3, 8}, {"F8_E8M0", HALO_ST_F8_E8M0, 8}, {"I8", HALO_ST_I8, 8},
	{"U8", HALO_ST_U8, 8},           {"F4", HALO_ST_F4, 4},           {"I32", HALO_ST_I32, 32},
	{"I64", HALO_ST_I64, 64},
};
#define N_DTYPES (sizeof dtype_names / sizeof dtype_names[0])

const char *halo_st_dtype_name(halo_st_dtype t)
{
	for (size_t i = 0; i < N_DTYPES; i++)
		if (dtype_names[i].dtype == t)
			return dtype_names[i].st_name;
	return "?";
}

static unsigned dtype_bits(halo_st_dtype t)
{
	for (size_t i = 0; i < N_DTYPES; i++)
		if (dtype_names[i].dtype == t)
			return dtype_names[i].bits;
	return 0;
}

static int parse_dtype(const char *file, const char *name, json_object *o, halo_st_dtype *out, char *err,
                       size_t errlen)
{
	const char *s = json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
	for (size_t i = 0; s && i < N_DTYPES; i++) {
		if (strcmp(s, dtype_names[i].st_name) == 0) {
			*out = dtype_names[i].dtype;
			return 0;
		}
	}
	return failf(err, errlen,
	             "%s: tensor '%s': dtype %s is not one of F32, F16, BF16, F8_E4M3, F8_E8M0, I8, U8, F4, I32, I64",
	             file, name, s ? s : "(missing or not a string)");
}

static bool get_u64(json_object *o, uint64_t *out)
{
	if (!json_object_is_type(o, json_type_int))
		return false;
	int64_t v = json_object_get_int64(o);
	if (v < 0)
		return false;
	*out = (uint64_t)v;
	return true;
}

static int parse_shape(const char *file, halo_st_tensor *t, json_object *o, char *err, size_t errlen)
{
	size_t rank = json_object_is_type(o, json_type_array) ? json_object_array_length(o) : SIZE_MAX;
	if (rank > HALO_ST_MAX_RANK)
		return failf(err, errlen, "%s: tensor '%s': shape must be an array of at most %d dims", file, t->name,
		             HALO_ST_MAX_RANK);
	t->rank = (int)rank;
	t->numel = 1;
	for (size_t i = 0; i < rank; i++) {
		uint64_t d;
		if (!get_u64(json_object_array_get_idx(o, i), &d) || d > INT64_MAX)
			return failf(err, errlen, "%s: tensor '%s': shape[%zu] is not a non-negative integer", file,
			             t->name, i);
		if (d && t->numel > UINT64_MAX / d)
			return failf(err, errlen, "%s: tensor '%s': element count overflows", file, t->name);
		t->shape[i] = (int64_t)d;
		t->numel *= d;
	}
	return 0;
}

/* data_offsets against the data region and against the shape. */
static int parse_offsets(const mapped_file *f, uint64_t data_start, halo_st_tensor *t, json_object *o,
                         uint64_t *begin, uint64_t *end, char *err, size_t errlen)
{
	if (!json_object_is_type(o, json_type_array) || json_object_array_length(o) != 2 ||
	    !get_u64(json_object_array_get_idx(o, 0), begin) || !get_u64(json_object_array_get_idx(o, 1), end) ||
	    *begin > *end)
		return failf(err, errlen, "%s: tensor '%s': data_offsets must be [begin, end] with begin <= end",
		             f->path, t->name);
	uint64_t region = f->size - data_start;
	if (*end > region)
		return failf(err, errlen, "%s: tensor '%s': data_offsets [%llu, %llu] run past the data (%llu bytes)",
		             f->path, t->name, (unsigned long long)*begin, (unsigned long long)*end,
		             (unsigned long long)region);
	/* F4 packs two values a byte along the last dim (safetensors and torch
	 * agree): that dim must be even, so that each row is whole bytes */
	if (t->dtype == HALO_ST_F4 && (t->rank == 0 || t->shape[t->rank - 1] % 2))
		return failf(err, errlen, "%s: tensor '%s': F4 holds two values a byte, its last dim must be even",
		             f->path, t->name);
	/* I8 and U8 are read as packed FP4, twice as many values (halo_st_values_shape) */
	if ((t->dtype == HALO_ST_I8 || t->dtype == HALO_ST_U8) && t->rank && t->shape[t->rank - 1] > INT64_MAX / 2)
		return failf(err, errlen, "%s: tensor '%s': its last dim is too large", f->path, t->name);
	uint64_t bits = dtype_bits(t->dtype);
	if (t->numel > UINT64_MAX / bits || *end - *begin != t->numel * bits / 8)
		return failf(err, errlen, "%s: tensor '%s': %llu bytes of data, its shape and dtype need %llu", f->path,
		             t->name, (unsigned long long)(*end - *begin), (unsigned long long)(t->numel * bits / 8));
	t->bytes = *end - *begin;
	t->data = f->base + data_start + *begin;
	return 0;
}

static int push_tensor(halo_safetensors *st, const halo_st_tensor *t, char *err, size_t errlen)
{
	if (st->n == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 64;
		halo_st_tensor *p = realloc(st->t, cap * sizeof *p);
		if (!p)
			return failf(err, errlen, "%s: out of memory", t->file);
		st->t = p;
		st->cap = cap;
	}
	st->t[st->n++] = *t;
	return 0;
}

typedef struct {
	uint64_t begin, end;
	const char *name;
} extent;

static int cmp_extent(const void *a, const void *b)
{
	const extent *x = a, *y = b;
	return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : x->end < y->end ? -1 : x->end > y->end;
}

/* Tensors of one file must not share bytes. */
static int check_overlaps(const char *file, extent *e, size_t n, char *err, size_t errlen)
{
	qsort(e, n, sizeof *e, cmp_extent);
	for (size_t i = 1; i < n; i++)
		if (e[i].begin < e[i - 1].end)
			return failf(err, errlen, "%s: tensors '%s' and '%s' overlap", file, e[i - 1].name, e[i].name);
	return 0;
}

static int parse_entry(halo_safetensors *st, const mapped_file *f, uint64_t data_start, const char *key,
                       json_object *val, extent *ext, char *err, size_t errlen)
{
	halo_st_tensor t = {.file = f->path};
	if (!(t.name = strdup(key)))
		return failf(err, errlen, "%s: out of memory", f->path);
	json_object *dt, *shape, *offs;
	int rc;
	if (!json_object_is_type(val, json_type_object) || !json_object_object_get_ex(val, "dtype", &dt) ||
	    !json_object_object_get_ex(val, "shape", &shape) || !json_object_object_get_ex(val, "data_offsets", &offs))
		rc = failf(err, errlen, "%s: tensor '%s': expected an object with dtype, shape and data_offsets",
		           f->path, key);
	else
		rc = parse_dtype(f->path, key, dt, &t.dtype, err, errlen) || parse_shape(f->path, &t, shape, err, errlen) ||
		     parse_offsets(f, data_start, &t, offs, &ext->begin, &ext->end, err, errlen) ||
		     push_tensor(st, &t, err, errlen);
	if (rc) {
		free((char *)t.name);
		return -1;
	}
	ext->name = t.name;
	return 0;
}

static int parse_entries(halo_safetensors *st, const mapped_file *f, uint64_t data_start, json_object *root,
                         char *err, size_t errlen)
{
	extent *ext = calloc((size_t)json_object_object_length(root) + 1, sizeof *ext);
	if (!ext)
		return failf(err, errlen, "%s: out of memory", f->path);
	size_t n = 0;
	int rc = 0;
	json_object_object_foreach(root, key, val)
	{
		if (strcmp(key, "__metadata__") == 0)
			continue;
		if ((rc = parse_entry(st, f, data_start, key, val, &ext[n], err, errlen)) != 0)
			break;
		n++;
	}
	if (!rc)
		rc = check_overlaps(f->path, ext, n, err, errlen);
	free(ext);
	return rc;
}

static bool only_spaces(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			return false;
	return true;
}

/* Parses exactly `len` bytes of JSON (the header is not NUL-terminated);
 * trailing spaces are allowed, as writers pad the header with them. */
static json_object *parse_json(const char *file, const char *text, size_t len, char *err, size_t errlen)
{
	json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	if (!tok) {
		failf(err, errlen, "%s: out of memory", file);
		return NULL;
	}
	json_object *root = len <= INT32_MAX ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
	enum json_tokener_error e = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!root || e != json_tokener_success || !only_spaces(text + end, len - end)) {
		failf(err, errlen, "%s: header is not valid JSON (at byte %zu of %zu: %s)", file, 8 + end, len,
		      e == json_tokener_success ? "trailing data" : json_tokener_error_desc(e));
		json_object_put(root);
		return NULL;
	}
	if (!json_object_is_type(root, json_type_object)) {
		failf(err, errlen, "%s: header is not a JSON object", file);
		json_object_put(root);
		return NULL;
	}
	return root;
}

static int parse_header(halo_safetensors *st, const mapped_file *f, char *err, size_t errlen)
{
	if (f->size < 8)
		return failf(err, errlen, "%s: %zu bytes, too short for the 8-byte header length", f->path, f->size);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | f->base[i];
	if (n > f->size - 8 || n > MAX_HEADER_BYTES)
		return failf(err, errlen, "%s: header length %llu exceeds the file (%zu bytes) or %u", f->path,
		             (unsigned long long)n, f->size, MAX_HEADER_BYTES);
	json_object *root = parse_json(f->path, (const char *)f->base + 8, (size_t)n, err, errlen);
	if (!root)
		return -1;
	int rc = parse_entries(st, f, 8 + n, root, err, errlen);
	json_object_put(root);
	return rc;
}

/* ------------------------------------------------------------- files */

static int map_file(const char *path, mapped_file *f, char *err, size_t errlen)
{
	if (!(f->path = strdup(path)))
		return failf(err, errlen, "%s: out of memory", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return failf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
	struct stat s;
	if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
		close(fd);
		return failf(err, errlen, "%s: not a regular file", path);
	}
	f->size = (size_t)s.st_size;
	if (f->size) {
		void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			int e = errno;
			close(fd);
			f->size = 0;
			return failf(err, errlen, "%s: mmap failed: %s", path, strerror(e));
		}
		f->base = p;
	}
	close(fd);
	return 0;
}

static int add_file(halo_safetensors *st, const char *path, char *err, size_t errlen)
{
	mapped_file *p = realloc(st->files, (st->n_files + 1) * sizeof *p);
	if (!p)
		return failf(err, errlen, "%s: out of memory", path);
	st->files = p;
	mapped_file *f = &st->files[st->n_files++];
	*f = (mapped_file){0};
	if (map_file(path, f, err, errlen))
		return -1;
	return parse_header(st, f, err, errlen);
}

static int cmp_tensor(const void *a, const void *b)
{
	return strcmp(((const halo_st_tensor *)a)->name, ((const halo_st_tensor *)b)->name);
}

/* Sorts by name for lookup; a name in two shards is an error. */
static int finish(halo_safetensors *st, char *err, size_t errlen)
{
	if (st->n)
		qsort(st->t, st->n, sizeof *st->t, cmp_tensor);
	for (size_t i = 1; i < st->n; i++)
		if (strcmp(st->t[i - 1].name, st->t[i].name) == 0)
			return failf(err, errlen, "tensor '%s' appears in both %s and %s", st->t[i].name, st->t[i - 1].file,
			             st->t[i].file);
	return 0;
}

void halo_st_close(halo_safetensors *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		free((char *)st->t[i].name);
	for (size_t i = 0; i < st->n_files; i++) {
		if (st->files[i].base)
			munmap((void *)st->files[i].base, st->files[i].size);
		free(st->files[i].path);
	}
	free(st->t);
	free(st->files);
	free(st);
}

halo_safetensors *halo_st_open_file(const char *path, char *err, size_t errlen)
{
	halo_safetensors *st = calloc(1, sizeof *st);
	if (!st) {
		failf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	if (add_file(st, path, err, errlen) || finish(st, err, errlen)) {
		halo_st_close(st);
		return NULL;
	}
	return st;
}

/* --------------------------------------------------------------- index */

static json_object *read_json_file(const char *path, char *err, size_t errlen)
{
	mapped_file f = {0};
	json_object *root = NULL;
	if (map_file(path, &f, err, errlen) == 0)
		root = parse_json(path, (const char *)f.base, f.size, err, errlen);
	if (f.base)
		munmap((void *)f.base, f.size);
	free(f.path);
	return root;
}

/* The shard a weight_map entry names, as a path in dir; a bare file name only. */
static int shard_path(const char *index, const char *dir, const char *name, json_object *v, char *out,
                      size_t outlen, char *err, size_t errlen)
{
	const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
	if (!s || !*s || strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return failf(err, errlen, "%s: weight_map['%s'] must be a shard file name in the same directory", index,
		             name);
	if (snprintf(out, outlen, "%s/%s", dir, s) >= (int)outlen)
		return failf(err, errlen, "%s: shard path too long", index);
	return 0;
}

static bool has_file(const halo_safetensors *st, const char *path)
{
	for (size_t i = 0; i < st->n_files; i++)
		if (strcmp(st->files[i].path, path) == 0)
			return true;
	return false;
}

/* Opens every shard the weight map names (each once), then checks each
 * mapped tensor lives in the shard the index says. */
static int open_index(halo_safetensors *st, const char *dir, const char *index, char *err, size_t errlen)
{
	json_object *root = read_json_file(index, err, errlen), *map = NULL;
	if (!root)
		return -1;
	char path[4096];
	if (!json_object_object_get_ex(root, "weight_map", &map) || !json_object_is_type(map, json_type_object)) {
		json_object_put(root);
		return failf(err, errlen, "%s: expected an object \"weight_map\"", index);
	}
	int rc = 0;
	json_object_object_foreach(map, name, shard)
	{
		if (rc || (rc = shard_path(index, dir, name, shard, path, sizeof path, err, errlen)) != 0)
			break;
		if (!has_file(st, path))
			rc = add_file(st, path, err, errlen);
	}
	if (!rc)
		rc = finish(st, err, errlen);
	json_object_object_foreach(map, name2, shard2)
	{
		if (rc || (rc = shard_path(index, dir, name2, shard2, path, sizeof path, err, errlen)) != 0)
			break;
		const halo_st_tensor *t = halo_st_find(st, name2);
		if (!t || strcmp(t->file, path) != 0)
			rc = failf(err, errlen, "%s: tensor '%s' is not in %s, where weight_map puts it", index, name2, path);
	}
	json_object_put(root);
	return rc;
}

halo_safetensors *halo_st_open_dir(const char *dir, char *err, size_t errlen)
{
	char index[4096], single[4096];
	if (snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir) >= (int)sizeof index ||
	    snprintf(single, sizeof single, "%s/model.safetensors", dir) >= (int)sizeof single) {
		failf(err, errlen, "%s: path too long", dir);
		return NULL;
	}
	if (access(index, F_OK) != 0) {
		if (access(single, F_OK) != 0) {
			failf(err, errlen, "%s: no model.safetensors or model.safetensors.index.json", dir);
			return NULL;
		}
		return halo_st_open_file(single, err, errlen);
	}
	halo_safetensors *st = calloc(1, sizeof *st);
	if (!st) {
		failf(err, errlen, "%s: out of memory", dir);
		return NULL;
	}
	if (open_index(st, dir, index, err, errlen)) {
		halo_st_close(st);
		return NULL;
	}
	return st;
}

size_t halo_st_count(const halo_safetensors *st)
{
	return st->n;
}

const halo_st_tensor *halo_st_at(const halo_safetensors *st, size_t i)
{
	return i < st->n ? &st->t[i] : NULL;
}

const halo_st_tensor *halo_st_find(const halo_safetensors *st, const char *name)
{
	halo_st_tensor key = {.name = name};
	return st->n ? bsearch(&key, st->t, st->n, sizeof *st->t, cmp_tensor) : NULL;
}

/* ----------------------------------------------------------- conversion */

static float bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* E8M0 scales and E2M1 values decode as runtime/drivers/ref/quant.h's mxfp4 does
 * (halo_e8m0_to_f32, halo_e2m1_to_f32): one definition, so that bytes kept
 * as stored give the values read here. */

static bool is_packed_fp4(const halo_st_tensor *t)
{
	return t->dtype == HALO_ST_I8 || t->dtype == HALO_ST_U8 || t->dtype == HALO_ST_F4;
}

/* Value k of t, as f32. Packed FP4 (I8, U8, F4): byte k / 2, the even value
 * in the low nibble (transformers' FineGrainedDequantize._unpack_fp4; see
 * docs/quantization.md). A row is whole bytes, so k's parity is its
 * column's. */
static float value_at(const halo_st_tensor *t, uint64_t k)
{
	const uint8_t *p = t->data;
	switch (t->dtype) {
	case HALO_ST_F32: {
		float v;
		memcpy(&v, p + 4 * k, 4);
		return v;
	}
	case HALO_ST_F16:
		return half_to_f32((uint16_t)(p[2 * k] | p[2 * k + 1] << 8));
	case HALO_ST_BF16:
		return bits_f32((uint32_t)(p[2 * k] | p[2 * k + 1] << 8) << 16);
	case HALO_ST_F8_E4M3:
		return halo_f8e4m3_to_f32(p[k]); /* the format's own decoder: kept bytes match */
	case HALO_ST_F8_E8M0:
		return halo_e8m0_to_f32(p[k]);
	case HALO_ST_I8:
	case HALO_ST_U8:
	case HALO_ST_F4:
		return halo_e2m1_to_f32(k & 1 ? p[k / 2] >> 4 : p[k / 2] & 15u);
	case HALO_ST_I32: {
		int32_t v;
		memcpy(&v, p + 4 * k, 4);
		return (float)v;
	}
	case HALO_ST_I64: {
		int64_t v;
		memcpy(&v, p + 8 * k, 8);
		return (float)v;
	}
	}
	return NAN; /* unreachable: parse_dtype admits only the cases above */
}

/* Element k of a scale tensor: a U8 scale is E8M0 bytes (transformers reads
 * a uint8 scale as the biased exponent, vLLM loads E8M0 scales as uint8). */
static float scale_at(const halo_st_tensor *s, uint64_t k)
{
	return s->dtype == HALO_ST_U8 ? halo_e8m0_to_f32(s->data[k]) : value_at(s, k);
}

int halo_st_values_shape(const halo_st_tensor *t, int64_t shape[HALO_ST_MAX_RANK], uint64_t *numel)
{
	memcpy(shape, t->shape, sizeof t->shape);
	bool bytes = t->dtype == HALO_ST_I8 || t->dtype == HALO_ST_U8;
	if (bytes && t->rank) /* parse_offsets bounds the last dim */
		shape[t->rank - 1] *= 2;
	if (numel)
		*numel = bytes && t->rank ? 2 * t->numel : t->numel;
	return t->rank;
}

/* "[2, 3]" */
static void shape_text(const int64_t *shape, int rank, char *buf, size_t len)
{
	int n = snprintf(buf, len, "[");
	for (int i = 0; i < rank && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "]");
}

typedef struct {
	char inv[1024]; /* name + "_scale_inv" */
	char up[1024];  /* "B.scale" for name "B.weight", else "" */
} scale_names;

static void names_of_scale(const char *name, scale_names *n)
{
	size_t len = strlen(name), w = strlen(".weight");
	snprintf(n->inv, sizeof n->inv, "%s%s", name, HALO_ST_SCALE_SUFFIX);
	n->up[0] = 0;
	if (len > w && strcmp(name + len - w, ".weight") == 0)
		snprintf(n->up, sizeof n->up, "%.*s%s", (int)(len - w), name, HALO_ST_UPSTREAM_SCALE_SUFFIX);
}

/* t's block-scale companion into *s, NULL when it has none. Both names
 * present is an error: they could disagree, and neither is the one. */
static int find_scale(const halo_safetensors *st, const halo_st_tensor *t, const halo_st_tensor **s, char *err,
                      size_t errlen)
{
	scale_names n;
	names_of_scale(t->name, &n);
	const halo_st_tensor *a = halo_st_find(st, n.inv), *b = n.up[0] ? halo_st_find(st, n.up) : NULL;
	*s = a ? a : b;
	if (a && b)
		return failf(err, errlen, "%s: tensor '%s' has two scale tensors, '%s' and '%s'; expected one", t->file,
		             t->name, n.inv, n.up);
	return 0;
}

/* A tensor without a scale: read as stored, except the two forms that
 * mean nothing without one. */
static int check_unscaled(const halo_st_tensor *t, char *err, size_t errlen)
{
	scale_names n;
	names_of_scale(t->name, &n);
	char either[2200];
	snprintf(either, sizeof either, n.up[0] ? "'%s' or '%s'" : "'%s'%s", n.inv, n.up);
	if (t->dtype == HALO_ST_F8_E4M3)
		return failf(err, errlen, "%s: tensor '%s' is F8_E4M3 but has no %s scale tensor", t->file, t->name,
		             either);
	if (is_packed_fp4(t))
		return failf(err, errlen, "%s: tensor '%s' is %s, read as packed FP4 (two E2M1 values a byte), but has "
		             "no %s scale tensor (one per %d values of a row)", t->file, t->name,
		             halo_st_dtype_name(t->dtype), either, HALO_ST_FP4_BLOCK);
	return 0;
}

typedef struct {
	const halo_st_tensor *t;
	float *scale; /* the scale grid as f32, or NULL: the values as stored */
	uint64_t cols, scale_cols; /* values per row, scales per row of the grid */
	uint64_t block_rows;       /* rows one scale covers */
	unsigned block_shift;      /* log2 of the columns one scale covers */
} source;

/* The scale's shape against the values' (block_rows x 2^block_shift blocks,
 * ceil at the edges), and its dtype. */
static int check_scale(const source *src, const halo_st_tensor *s, int rank, const int64_t *shape, char *err,
                       size_t errlen)
{
	const halo_st_tensor *t = src->t;
	uint64_t bc = 1ull << src->block_shift, want[2] = {0, 0};
	char have[96], values[96];
	shape_text(s->shape, s->rank, have, sizeof have);
	shape_text(shape, rank, values, sizeof values);
	if (rank == 2) {
		want[0] = ((uint64_t)shape[0] + src->block_rows - 1) / src->block_rows;
		want[1] = ((uint64_t)shape[1] + bc - 1) / bc;
	}
	if (rank != 2)
		return failf(err, errlen, "%s: tensor '%s' (%s, values %s) has a scale '%s' but is not 2-D", t->file,
		             t->name, halo_st_dtype_name(t->dtype), values, s->name);
	if (s->rank != 2 || (uint64_t)s->shape[0] != want[0] || (uint64_t)s->shape[1] != want[1])
		return failf(err, errlen, "%s: scale '%s' of tensor '%s' (%s, values %s) has shape %s; expected [%llu, %llu], "
		             "one per %llux%llu block (partial at the edges)", s->file, s->name, t->name,
		             halo_st_dtype_name(t->dtype), values, have, (unsigned long long)want[0],
		             (unsigned long long)want[1], (unsigned long long)src->block_rows, (unsigned long long)bc);
	if (s->dtype != HALO_ST_F32 && s->dtype != HALO_ST_BF16 && s->dtype != HALO_ST_F16 &&
	    s->dtype != HALO_ST_F8_E8M0 && s->dtype != HALO_ST_U8)
		return failf(err, errlen, "%s: scale tensor '%s' (of '%s') is %s; expected F32, BF16, F16, F8_E8M0 or U8 "
		             "(E8M0 bytes)", s->file, s->name, t->name, halo_st_dtype_name(s->dtype));
	return 0;
}

/* The scale grid as f32 into src->scale; each must be finite. */
static int load_scales(source *src, const halo_st_tensor *s, char *err, size_t errlen)
{
	if (!(src->scale = malloc((s->numel ? s->numel : 1) * sizeof(float))))
		return failf(err, errlen, "%s: out of memory for '%s'", s->file, s->name);
	for (uint64_t i = 0; i < s->numel; i++) {
		float v = src->scale[i] = scale_at(s, i);
		bool e8m0 = s->dtype == HALO_ST_F8_E8M0 || s->dtype == HALO_ST_U8;
		if (!isfinite(v) && e8m0)
			return failf(err, errlen, "%s: scale tensor '%s': element %llu is the E8M0 NaN code 0xff; a scale "
			             "must be finite", s->file, s->name, (unsigned long long)i);
		if (!isfinite(v))
			return failf(err, errlen, "%s: scale tensor '%s': element %llu is %g; a scale must be finite",
			             s->file, s->name, (unsigned long long)i, (double)v);
	}
	return 0;
}

/* Finds tensor `name` and its scale companion and checks they fit and n is
 * its value count. src->scale is malloc'd (the caller frees it, also on
 * failure) or NULL. */
static int open_source(const halo_safetensors *st, const char *name, size_t n, source *src, char *err,
                       size_t errlen)
{
	*src = (source){.t = halo_st_find(st, name)};
	if (!src->t)
		return failf(err, errlen, "tensor '%s' is not in the checkpoint", name);
	const halo_st_tensor *t = src->t, *s;
	int64_t shape[HALO_ST_MAX_RANK];
	uint64_t values;
	int rank = halo_st_values_shape(t, shape, &values);
	if (n != values)
		return failf(err, errlen, "%s: tensor '%s' has %llu values, the buffer %zu", t->file, name,
		             (unsigned long long)values, n);
	if (find_scale(st, t, &s, err, errlen))
		return -1;
	if (!s)
		return check_unscaled(t, err, errlen);
	bool fp4 = is_packed_fp4(t);
	src->block_rows = fp4 ? 1 : HALO_ST_SCALE_BLOCK;
	src->block_shift = fp4 ? 5 : 7; /* 32 (MXFP4) or 128 values of a row */
	if (check_scale(src, s, rank, shape, err, errlen))
		return -1;
	src->cols = (uint64_t)shape[1];
	src->scale_cols = (uint64_t)s->shape[1];
	return load_scales(src, s, err, errlen);
}

/* Values [start, start + n) of t, as f32: one loop per common dtype (the
 * bulk of a checkpoint; a switch per element halves BF16's rate), value_at
 * for the rest. */
static void convert_run(const halo_st_tensor *t, uint64_t start, size_t n, float *dst)
{
	const uint8_t *p = t->data;
	switch (t->dtype) {
	case HALO_ST_F32:
		memcpy(dst, p + 4 * start, 4 * n);
		return;
	case HALO_ST_BF16:
		bf16_le_to_f32_array(p + 2 * start, dst, n);
		return;
	case HALO_ST_F16:
		for (size_t i = 0, k = 2 * start; i < n; i++, k += 2)
			dst[i] = half_to_f32((uint16_t)(p[k] | p[k + 1] << 8));
		return;
	case HALO_ST_F8_E4M3:
		for (size_t i = 0; i < n; i++)
			dst[i] = halo_f8e4m3_to_f32(p[start + i]);
		return;
	case HALO_ST_I8:
	case HALO_ST_U8:
	case HALO_ST_F4:
		for (size_t i = 0; i < n; i++) {
			uint64_t k = start + i;
			dst[i] = halo_e2m1_to_f32(k & 1 ? p[k / 2] >> 4 : p[k / 2] & 15u);
		}
		return;
	default:
		for (size_t i = 0; i < n; i++)
			dst[i] = value_at(t, start + i);
	}
}

/* Values [start, start + n) as f32, dequantised when a scale is present:
 * each row's run multiplied by its scale row's entries. */
static void produce(const source *src, uint64_t start, size_t n, float *dst)
{
	convert_run(src->t, start, n, dst);
	for (size_t i = 0; src->scale && i < n;) {
		uint64_t k = start + i, r = k / src->cols, c = k % src->cols;
		size_t run = n - i < src->cols - c ? n - i : (size_t)(src->cols - c);
		const float *row = src->scale + r / src->block_rows * src->scale_cols;
		for (size_t j = 0; j < run; j++)
			dst[i + j] *= row[(c + j) >> src->block_shift];
		i += run;
	}
}

/* Conversion in parallel over ranges of the tensor (codegen/parallel.h). */
enum { ST_GRAIN = 1 << 16 };

typedef struct {
	const source *src;
	float *f32;
	uint16_t *f16;
	atomic_uint_fast64_t bad; /* the first dequantised value not finite, or UINT64_MAX */
} produce_job;

/* A dequantised value must be finite: a NaN code, or a product past f32's
 * range (E8M0 scales reach 2^127), would poison every sum it enters. The
 * lowest such index wins, whichever range finds it first. */
static void note_bad(produce_job *j, const source *src, uint64_t start, const float *v, size_t n)
{
	for (size_t i = 0; src->scale && i < n; i++) {
		if (isfinite(v[i]))
			continue;
		uint_fast64_t k = start + i, cur = atomic_load(&j->bad);
		while (k < cur && !atomic_compare_exchange_weak(&j->bad, &cur, k))
			;
		return;
	}
}

static void produce_f32(void *ctx, size_t lo, size_t hi)
{
	produce_job *j = ctx;
	produce(j->src, lo, hi - lo, j->f32 + lo);
	note_bad(j, j->src, lo, j->f32 + lo, hi - lo);
}

static void produce_f16(void *ctx, size_t lo, size_t hi)
{
	produce_job *j = ctx;
	float chunk[4096];
	for (size_t done = lo; done < hi;) {
		size_t len = hi - done < 4096 ? hi - done : 4096;
		produce(j->src, done, len, chunk);
		note_bad(j, j->src, done, chunk, len);
		for (size_t i = 0; i < len; i++)
			j->f16[done + i] = half_from_f32(chunk[i]);
		done += len;
	}
}

/* The job's verdict: 0, or the first value not finite, named. */
static int check_values(const source *src, uint64_t bad, char *err, size_t errlen)
{
	if (bad == UINT64_MAX)
		return 0;
	const halo_st_tensor *t = src->t;
	uint64_t r = bad / src->cols, c = bad % src->cols;
	float v = value_at(t, bad), s = src->scale[r / src->block_rows * src->scale_cols + (c >> src->block_shift)];
	if (!isfinite(v) && t->dtype == HALO_ST_F8_E4M3)
		return failf(err, errlen, "%s: tensor '%s': element %llu (row %llu, column %llu) is the fp8 NaN code "
		             "0x%02x", t->file, t->name, (unsigned long long)bad, (unsigned long long)r,
		             (unsigned long long)c, t->data[bad]);
	return failf(err, errlen, "%s: tensor '%s': element %llu (row %llu, column %llu) is %g times its scale %g, "
	             "which is not finite in f32", t->file, t->name, (unsigned long long)bad, (unsigned long long)r,
	             (unsigned long long)c, (double)v, (double)s);
}

int halo_st_read_f32(const halo_safetensors *st, const char *name, float *out, size_t n, char *err,
                     size_t errlen)
{
	source src;
	int rc = open_source(st, name, n, &src, err, errlen);
	produce_job j = {.src = &src, .f32 = out};
	atomic_init(&j.bad, UINT64_MAX);
	if (rc == 0) {
		cg_parallel_for(n, ST_GRAIN, produce_f32, &j);
		rc = check_values(&src, atomic_load(&j.bad), err, errlen);
	}
	free(src.scale);
	return rc;
}

int halo_st_read_f16(const halo_safetensors *st, const char *name, uint16_t *out, size_t n, char *err,
                     size_t errlen)
{
	source src;
	int rc = open_source(st, name, n, &src, err, errlen);
	produce_job j = {.src = &src, .f16 = out};
	atomic_init(&j.bad, UINT64_MAX);
	if (rc == 0) {
		cg_parallel_for(n, ST_GRAIN, produce_f16, &j);
		rc = check_values(&src, atomic_load(&j.bad), err, errlen);
	}
	free(src.scale);
	return rc;
}

bool halo_st_is_f8_blocks(const halo_safetensors *st, const char *name)
{
	const halo_st_tensor *t = halo_st_find(st, name), *s = NULL;
	return t && t->dtype == HALO_ST_F8_E4M3 && find_scale(st, t, &s, NULL, 0) == 0 && s;
}

/* The codes of t, checked: NaN (S.1111.111) has no place in a weight. */
static int copy_codes(const halo_st_tensor *t, uint8_t *values, char *err, size_t errlen)
{
	for (uint64_t i = 0; i < t->numel; i++)
		if ((t->data[i] & 0x7f) == 0x7f)
			return failf(err, errlen, "%s: tensor '%s': element %llu is the fp8 NaN code 0x%02x; a weight kept "
			             "as fp8 must be finite", t->file, t->name, (unsigned long long)i, t->data[i]);
	memcpy(values, t->data, t->numel);
	return 0;
}

int halo_st_read_f8_blocks(const halo_safetensors *st, const char *name, uint8_t *values, float *scales, char *err,
                           size_t errlen)
{
	const halo_st_tensor *t = halo_st_find(st, name);
	if (!t || !halo_st_is_f8_blocks(st, name))
		return failf(err, errlen, "tensor '%s' is not an F8_E4M3 tensor with a '%s' or '%s' block scale", name,
		             HALO_ST_SCALE_SUFFIX, HALO_ST_UPSTREAM_SCALE_SUFFIX);
	source src;
	int rc = open_source(st, name, t->numel, &src, err, errlen); /* the scales checked finite there */
	uint64_t blocks = src.cols / HALO_ST_SCALE_BLOCK, rows = src.cols ? t->numel / src.cols : 0;
	if (rc == 0 && src.cols % HALO_ST_SCALE_BLOCK)
		rc = failf(err, errlen, "%s: tensor '%s': its %llu columns are not whole %d-column blocks", t->file, name,
		           (unsigned long long)src.cols, HALO_ST_SCALE_BLOCK);
	if (rc == 0)
		rc = copy_codes(t, values, err, errlen);
	/* block (r / 128, b)'s scale for each row r: the product with a code is
	 * the one produce() forms */
	for (uint64_t r = 0; rc == 0 && r < rows; r++)
		memcpy(scales + r * blocks, src.scale + r / HALO_ST_SCALE_BLOCK * src.scale_cols, blocks * sizeof(float));
	free(src.scale);
	return rc;
}

/* Whether t's scale companion is E8M0 bytes: then it is mxfp4's own. */
static bool is_e8m0(const halo_st_tensor *s)
{
	return s->dtype == HALO_ST_F8_E8M0 || s->dtype == HALO_ST_U8;
}

bool halo_st_is_mxfp4(const halo_safetensors *st, const char *name)
{
	const halo_st_tensor *t = halo_st_find(st, name), *s = NULL;
	return t && is_packed_fp4(t) && find_scale(st, t, &s, NULL, 0) == 0 && s && is_e8m0(s);
}

/* Every value of t times its scale must be finite, as produce() checks it:
 * E2M1's magnitudes stay below 2^3 and E8M0's scales at or below 2^127
 * (0xff, NaN, was refused with the scales), so the only products past f32's
 * 2^128 are a magnitude of 2 or more (codes 4-7) under the scale 2^127
 * (byte 254): only such blocks are looked into. scales is the grid, one
 * byte per 32 values of a row. */
static int check_fp4_range(const source *src, const uint8_t *scales, char *err, size_t errlen)
{
	const halo_st_tensor *t = src->t;
	uint64_t blocks = src->scale_cols * (src->cols ? t->bytes * 2 / src->cols : 0);
	for (uint64_t b = 0; b < blocks; b++) {
		if (scales[b] != 254)
			continue;
		uint64_t r = b / src->scale_cols, c0 = b % src->scale_cols * HALO_ST_FP4_BLOCK;
		for (uint64_t c = c0; c < c0 + HALO_ST_FP4_BLOCK; c++) {
			uint64_t k = r * src->cols + c;
			unsigned q = k & 1 ? t->data[k / 2] >> 4 : t->data[k / 2] & 15u;
			if ((q & 7u) >= 4u)
				return failf(err, errlen, "%s: tensor '%s': element %llu (row %llu, column %llu) is %g times its "
				             "scale 2^127, which is not finite in f32", t->file, t->name, (unsigned long long)k,
				             (unsigned long long)r, (unsigned long long)c, (double)halo_e2m1_to_f32(q));
		}
	}
	return 0;
}

int halo_st_read_mxfp4(const halo_safetensors *st, const char *name, uint8_t *values, uint8_t *scales, char *err,
                       size_t errlen)
{
	const halo_st_tensor *t = halo_st_find(st, name), *s = NULL;
	if (!t || !halo_st_is_mxfp4(st, name))
		return failf(err, errlen, "tensor '%s' is not packed FP4 (I8, U8 or F4) with an E8M0 '%s' or '%s' scale",
		             name, HALO_ST_SCALE_SUFFIX, HALO_ST_UPSTREAM_SCALE_SUFFIX);
	find_scale(st, t, &s, NULL, 0);
	uint64_t n;
	int64_t shape[HALO_ST_MAX_RANK];
	halo_st_values_shape(t, shape, &n);
	source src;
	int rc = open_source(st, name, n, &src, err, errlen); /* the shapes, and no 0xff scale */
	if (rc == 0 && src.cols % HALO_ST_FP4_BLOCK)
		rc = failf(err, errlen, "%s: tensor '%s': its %llu columns are not whole %d-column blocks", t->file, name,
		           (unsigned long long)src.cols, HALO_ST_FP4_BLOCK);
	/* whole blocks: the scale grid is [rows, cols / 32], a row's scales
	 * one after another, as mxfp4 lays them out */
	if (rc == 0)
		rc = check_fp4_range(&src, s->data, err, errlen);
	if (rc == 0) {
		memcpy(values, t->data, t->bytes);
		memcpy(scales, s->data, s->bytes);
	}
	free(src.scale);
	return rc;
}
