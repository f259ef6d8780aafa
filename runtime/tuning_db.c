#include "runtime/tuning_db.h"

#include "runtime/cache_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct halo_tuning_db {
	int n, cap;
	halo_tuning_record *rec; /* sorted by record_cmp */
};

/* Longest key, tile and device name accepted: far above anything the
 * compiler writes, low enough that a hostile file cannot make huge ones. */
#define MAX_TEXT 4096

static bool failf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool failf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return false;
}

static int cmp_u32(uint32_t a, uint32_t b)
{
	return (a > b) - (a < b);
}

/* The database's order and identity: (vendor, device, driver, key). */
static int record_cmp(const halo_tuning_record *a, const halo_tuning_record *b)
{
	int c = cmp_u32(a->vendor, b->vendor);
	if (!c)
		c = cmp_u32(a->device, b->device);
	if (!c)
		c = cmp_u32(a->driver, b->driver);
	return c ? c : strcmp(a->key, b->key);
}

/* Index of the record with r's identity, or where it would go (*found clear). */
static int locate(const halo_tuning_db *db, const halo_tuning_record *r, bool *found)
{
	int lo = 0, hi = db->n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		int c = record_cmp(&db->rec[mid], r);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static void record_free(halo_tuning_record *r)
{
	free(r->device_name);
	free(r->key);
	free(r->tile);
}

halo_tuning_db *halo_tuning_db_new(void)
{
	return calloc(1, sizeof(halo_tuning_db));
}

void halo_tuning_db_free(halo_tuning_db *db)
{
	if (!db)
		return;
	for (int i = 0; i < db->n; i++)
		record_free(&db->rec[i]);
	free(db->rec);
	free(db);
}

static bool text_ok(const char *s)
{
	return s && strlen(s) <= MAX_TEXT;
}

/* Why r cannot be stored, or NULL. */
static const char *record_invalid(const halo_tuning_record *r)
{
	if (!text_ok(r->key) || !r->key[0])
		return "the key must be a non-empty string of at most 4096 bytes";
	if (!text_ok(r->tile) || !text_ok(r->device_name))
		return "tile and device_name must be strings of at most 4096 bytes";
	if (!isfinite(r->ns) || r->ns < 0 || !isfinite(r->heuristic_ns) || r->heuristic_ns < 0)
		return "ns and heuristic_ns must be finite and not negative";
	return NULL;
}

bool halo_tuning_db_put(halo_tuning_db *db, const halo_tuning_record *r, char *err, size_t errlen)
{
	const char *why = record_invalid(r);
	if (why)
		return failf(err, errlen, "tuning record for '%.200s': %s", r->key ? r->key : "(no key)", why);
	halo_tuning_record copy = *r;
	copy.device_name = strdup(r->device_name);
	copy.key = strdup(r->key);
	copy.tile = strdup(r->tile);
	bool found;
	int at = locate(db, r, &found);
	if (!copy.device_name || !copy.key || !copy.tile)
		goto oom;
	if (found) {
		record_free(&db->rec[at]);
		db->rec[at] = copy;
		return true;
	}
	if (db->n == db->cap) {
		int cap = db->cap ? db->cap * 2 : 16;
		halo_tuning_record *grown = realloc(db->rec, (size_t)cap * sizeof(*grown));
		if (!grown)
			goto oom;
		db->rec = grown;
		db->cap = cap;
	}
	memmove(&db->rec[at + 1], &db->rec[at], (size_t)(db->n - at) * sizeof(*db->rec));
	db->rec[at] = copy;
	db->n++;
	return true;
oom:
	record_free(&copy);
	return failf(err, errlen, "tuning DB: out of memory");
}

bool halo_tuning_db_merge(halo_tuning_db *dst, const halo_tuning_db *src, char *err, size_t errlen)
{
	for (int i = 0; i < src->n; i++)
		if (!halo_tuning_db_put(dst, &src->rec[i], err, errlen))
			return false;
	return true;
}

const halo_tuning_record *halo_tuning_db_find(const halo_tuning_db *db, uint32_t vendor, uint32_t device,
					      uint32_t driver, const char *key)
{
	halo_tuning_record want = {.vendor = vendor, .device = device, .driver = driver, .key = (char *)key};
	bool found;
	int at = db ? locate(db, &want, &found) : 0;
	return db && found ? &db->rec[at] : NULL;
}

int halo_tuning_db_count(const halo_tuning_db *db)
{
	return db ? db->n : 0;
}

const halo_tuning_record *halo_tuning_db_record(const halo_tuning_db *db, int i)
{
	return db && i >= 0 && i < db->n ? &db->rec[i] : NULL;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Parsing context: the first error wins and names the file and field. */
typedef struct {
	const char *name;
	char *err;
	size_t errlen;
} pctx;

static bool bad(pctx *c, const char *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool bad(pctx *c, const char *where, const char *fmt, ...)
{
	int n = snprintf(c->err, c->errlen, "tuning DB %s: %s: ", c->name, where);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < c->errlen)
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

static json_object *field(pctx *c, json_object *o, const char *where, const char *key, json_type type)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v)) {
		bad(c, where, "missing key '%s'", key);
		return NULL;
	}
	bool number = type == json_type_double && json_object_is_type(v, json_type_int);
	if (!json_object_is_type(v, type) && !number) {
		bad(c, where, "'%s' must be %s", key, type == json_type_string ? "a string" : "a number");
		return NULL;
	}
	return v;
}

static bool field_u32(pctx *c, json_object *o, const char *where, const char *key, uint32_t *out)
{
	json_object *v = field(c, o, where, key, json_type_int);
	if (!v)
		return false;
	int64_t x = json_object_get_int64(v);
	if (x < 0 || x > (int64_t)UINT32_MAX)
		return bad(c, where, "'%s' = %lld is not a 32-bit unsigned id", key, (long long)x);
	*out = (uint32_t)x;
	return true;
}

static bool field_str(pctx *c, json_object *o, const char *where, const char *key, const char **out)
{
	json_object *v = field(c, o, where, key, json_type_string);
	*out = v ? json_object_get_string(v) : NULL;
	return v != NULL;
}

static bool field_ns(pctx *c, json_object *o, const char *where, const char *key, double *out)
{
	json_object *v = field(c, o, where, key, json_type_double);
	*out = v ? json_object_get_double(v) : 0;
	return v != NULL;
}

/* One record, borrowing its strings from the JSON tree. */
static bool parse_record(pctx *c, json_object *o, size_t i, halo_tuning_record *r)
{
	char where[40];
	snprintf(where, sizeof(where), "records[%zu]", i);
	if (!json_object_is_type(o, json_type_object))
		return bad(c, where, "a record must be an object");
	const char *name, *key, *tile;
	if (!field_u32(c, o, where, "vendor", &r->vendor) || !field_u32(c, o, where, "device", &r->device) ||
	    !field_u32(c, o, where, "driver", &r->driver) || !field_str(c, o, where, "device_name", &name) ||
	    !field_str(c, o, where, "key", &key) || !field_str(c, o, where, "tile", &tile) ||
	    !field_ns(c, o, where, "ns", &r->ns) || !field_ns(c, o, where, "heuristic_ns", &r->heuristic_ns))
		return false;
	r->device_name = (char *)name;
	r->key = (char *)key;
	r->tile = (char *)tile;
	const char *why = record_invalid(r);
	return !why || bad(c, where, "%s", why);
}

static bool check_format(pctx *c, json_object *root)
{
	json_object *v = NULL;
	if (!json_object_is_type(root, json_type_object))
		return bad(c, "root", "not a JSON object");
	if (!json_object_object_get_ex(root, "format", &v) || !json_object_is_type(v, json_type_int))
		return bad(c, "root", "missing integer 'format'");
	int64_t f = json_object_get_int64(v);
	if (f != HALO_TUNING_FORMAT)
		return bad(c, "format", "format %lld, this reader reads format %d", (long long)f, HALO_TUNING_FORMAT);
	return true;
}

static bool parse_records(pctx *c, json_object *root, halo_tuning_db *db)
{
	json_object *arr = NULL;
	if (!json_object_object_get_ex(root, "records", &arr) || !json_object_is_type(arr, json_type_array))
		return bad(c, "root", "missing array 'records'");
	size_t n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		halo_tuning_record r;
		char why[256];
		if (!parse_record(c, json_object_array_get_idx(arr, i), i, &r))
			return false;
		if (!halo_tuning_db_put(db, &r, why, sizeof(why)))
			return bad(c, "records", "%s", why);
	}
	return true;
}

/* The JSON tree of len bytes, refusing anything but whitespace after it. */
static json_object *parse_json(pctx *c, const char *json, size_t len)
{
	if (len > INT32_MAX) {
		bad(c, "file", "%zu bytes is too large", len);
		return NULL;
	}
	json_tokener *tok = json_tokener_new();
	if (!tok) {
		bad(c, "file", "out of memory");
		return NULL;
	}
	json_object *root = json_tokener_parse_ex(tok, json, (int)len);
	enum json_tokener_error e = json_tokener_get_error(tok);
	size_t used = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!root || e != json_tokener_success) {
		json_object_put(root);
		if (e == json_tokener_continue)
			bad(c, "file", "truncated: the JSON ends after %zu bytes", len);
		else
			bad(c, "file", "not valid JSON (%s at offset %zu)", json_tokener_error_desc(e), used);
		return NULL;
	}
	while (used < len && json[used] && strchr(" \t\r\n", json[used]))
		used++;
	if (used < len) {
		json_object_put(root);
		bad(c, "file", "bytes after the JSON object at offset %zu", used);
		return NULL;
	}
	return root;
}

halo_tuning_db *halo_tuning_db_parse(const char *json, size_t len, const char *name, char *err, size_t errlen)
{
	pctx c = {.name = name, .err = err, .errlen = errlen};
	json_object *root = parse_json(&c, json, len);
	halo_tuning_db *db = root ? halo_tuning_db_new() : NULL;
	if (root && !db)
		bad(&c, "file", "out of memory");
	if (db && (!check_format(&c, root) || !parse_records(&c, root, db))) {
		halo_tuning_db_free(db);
		db = NULL;
	}
	json_object_put(root);
	return db;
}

/* The whole file, malloc'd; NULL with errno set on failure. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			char *grown = cap > ((size_t)1 << 30) ? NULL : realloc(buf, cap);
			if (!grown) {
				free(buf);
				fclose(f);
				errno = EFBIG;
				return NULL;
			}
			buf = grown;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	int failed = ferror(f);
	fclose(f);
	if (failed) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	*len = n;
	return buf;
}

halo_tuning_db *halo_tuning_db_read(const char *path, bool *missing, char *err, size_t errlen)
{
	size_t len = 0;
	char *text = slurp(path, &len);
	*missing = !text && errno == ENOENT;
	if (!text) {
		failf(err, errlen, "tuning DB %s: cannot read: %s", path, strerror(errno));
		return NULL;
	}
	halo_tuning_db *db = halo_tuning_db_parse(text, len, path, err, errlen);
	free(text);
	return db;
}

/* ---- writing ------------------------------------------------------------------------------ */

static json_object *record_json(const halo_tuning_record *r)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "vendor", json_object_new_int64(r->vendor));
	json_object_object_add(o, "device", json_object_new_int64(r->device));
	json_object_object_add(o, "driver", json_object_new_int64(r->driver));
	json_object_object_add(o, "device_name", json_object_new_string(r->device_name));
	json_object_object_add(o, "key", json_object_new_string(r->key));
	json_object_object_add(o, "tile", json_object_new_string(r->tile));
	json_object_object_add(o, "ns", json_object_new_double(r->ns));
	json_object_object_add(o, "heuristic_ns", json_object_new_double(r->heuristic_ns));
	return o;
}

char *halo_tuning_db_serialize(const halo_tuning_db *db)
{
	json_object *root = json_object_new_object();
	json_object *arr = json_object_new_array();
	json_object_object_add(root, "format", json_object_new_int(HALO_TUNING_FORMAT));
	for (int i = 0; i < db->n; i++)
		json_object_array_add(arr, record_json(&db->rec[i]));
	json_object_object_add(root, "records", arr);
	const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = s ? strlen(s) : 0;
	char *out = s ? malloc(n + 2) : NULL;
	if (out) {
		memcpy(out, s, n);
		out[n] = '\n';
		out[n + 1] = '\0';
	}
	json_object_put(root);
	return out;
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

bool halo_tuning_db_write(const halo_tuning_db *db, const char *path, char *err, size_t errlen)
{
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp))
		return failf(err, errlen, "tuning DB %s: path too long", path);
	char *text = halo_tuning_db_serialize(db);
	if (!text)
		return failf(err, errlen, "tuning DB %s: out of memory", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool ok = fd >= 0 && write_all(fd, text, strlen(text)) && fsync(fd) == 0;
	int saved = errno;
	if (fd >= 0 && close(fd) != 0 && ok) {
		ok = false;
		saved = errno;
	}
	if (ok && rename(tmp, path) != 0) {
		ok = false;
		saved = errno;
	}
	free(text);
	if (!ok) {
		if (fd >= 0)
			unlink(tmp);
		return failf(err, errlen, "tuning DB %s: cannot write: %s", path, strerror(saved));
	}
	return true;
}

bool halo_tuning_db_default_path(char *out, size_t outlen, bool create_dir, char *err, size_t errlen)
{
	char dir[4096];
	int n = halo_cache_dir(dir, sizeof(dir));
	if (n < 0)
		return failf(err, errlen, "no default tuning DB: neither XDG_CACHE_HOME (absolute) nor HOME is set");
	if ((size_t)n >= sizeof(dir) || (size_t)n + sizeof("/tuning.json") > outlen)
		return failf(err, errlen, "the default tuning DB path is too long");
	if (create_dir && !halo_make_dirs(dir))
		return failf(err, errlen, "cannot create the tuning DB directory %s: %s", dir, strerror(errno));
	snprintf(out, outlen, "%s/tuning.json", dir);
	return true;
}
