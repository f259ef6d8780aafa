/* halo tokenize: the checkpoint's tokenizer (runtime/tokenizer.h) from a
 * bundle's tokenizer section or a tokenizer.json. Text -> ids on one line,
 * comma-separated; with --decode, ids -> the text's exact bytes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/bundle.h"
#include "runtime/tokenizer.h"
#include "tools/cli_args.h"
#include "tools/commands.h"

static void tokenize_usage(FILE *out)
{
	fputs("usage: halo tokenize (BUNDLE.halo | --tokenizer FILE) [--text S | --file F]\n"
	      "       halo tokenize (BUNDLE.halo | --tokenizer FILE) --decode (--ids LIST | --file F)\n"
	      "                     [--skip-special]\n"
	      "\n"
	      "Encodes UTF-8 text with the checkpoint's tokenizer as Hugging Face tokenizers does\n"
	      "(special tokens such as <|im_start|> written in the text become their ids) and\n"
	      "prints the ids comma-separated on one line. With --decode, prints the text the\n"
	      "ids stand for, byte for byte, with no newline added.\n"
	      "\n"
	      "options:\n"
	      "  --tokenizer FILE     a tokenizer.json instead of a bundle (halo compile --hf\n"
	      "                       embeds the checkpoint's in the bundle)\n"
	      "  --text S             the text to encode\n"
	      "  --file F             read the text (or, with --decode, the ids: integers\n"
	      "                       separated by commas and/or whitespace) from F;\n"
	      "                       without --text, --ids or --file the input is stdin\n"
	      "  --decode             ids to text\n"
	      "  --ids LIST           the ids to decode, comma-separated\n"
	      "  --skip-special       leave special tokens out of the decoded text\n"
	      "  -h, --help           this text\n",
	      out);
}

typedef struct {
	const char *bundle, *tokenizer, *text, *file, *ids;
	bool decode, skip_special, help;
} tokenize_args;

static int parse_args(int argc, char **argv, tokenize_args *a)
{
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			a->help = true;
		else if (strcmp(s, "--decode") == 0)
			a->decode = true;
		else if (strcmp(s, "--skip-special") == 0)
			a->skip_special = true;
		else if (cli_take_value("tokenize", argc, argv, &i, "--tokenizer", &a->tokenizer, &rc) ||
			 cli_take_value("tokenize", argc, argv, &i, "--text", &a->text, &rc) ||
			 cli_take_value("tokenize", argc, argv, &i, "--file", &a->file, &rc) ||
			 cli_take_value("tokenize", argc, argv, &i, "--ids", &a->ids, &rc))
			continue;
		else if (s[0] == '-')
			rc = cli_usage_error("tokenize", "unknown option '%s'", s);
		else if (a->bundle)
			rc = cli_usage_error("tokenize", "more than one bundle given ('%s')", s);
		else
			a->bundle = s;
	}
	return rc;
}

/* The flag combinations that make no sense, as usage errors. */
static int check_args(const tokenize_args *a)
{
	if (!a->bundle == !a->tokenizer)
		return cli_usage_error("tokenize", "%s", "give a bundle or --tokenizer FILE, one of them");
	if (a->text && a->file)
		return cli_usage_error("tokenize", "%s", "--text and --file both give the input");
	if (a->ids && a->file)
		return cli_usage_error("tokenize", "%s", "--ids and --file both give the input");
	if (a->decode && a->text)
		return cli_usage_error("tokenize", "%s", "--decode reads ids (--ids or --file), not --text");
	if (!a->decode && (a->ids || a->skip_special))
		return cli_usage_error("tokenize", "%s", a->ids ? "--ids needs --decode" : "--skip-special needs --decode");
	return 0;
}

/* The whole of path (NULL: stdin), malloc'd and NUL-terminated. */
static char *read_all(const char *path, size_t *len)
{
	FILE *f = path ? fopen(path, "rb") : stdin;
	if (!f) {
		fprintf(stderr, "halo tokenize: %s: cannot open: %s\n", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t cap = 0, got = 1;
	*len = 0;
	while (got) {
		if (*len + 1 >= cap) {
			cap = cap ? cap * 2 : 1 << 16;
			char *b = realloc(buf, cap);
			if (!b)
				break;
			buf = b;
		}
		got = fread(buf + *len, 1, cap - *len - 1, f);
		*len += got;
	}
	bool ok = !got && !ferror(f);
	if (path)
		fclose(f);
	if (!ok) {
		fprintf(stderr, "halo tokenize: %s: cannot read: %s\n", path ? path : "stdin",
			got ? "out of memory" : strerror(errno));
		free(buf);
		return NULL;
	}
	buf[*len] = '\0';
	return buf;
}

static halo_tokenizer *open_tokenizer(const tokenize_args *a)
{
	char err[512];
	if (a->tokenizer) {
		halo_tokenizer *t = halo_tokenizer_load(a->tokenizer, err, sizeof err);
		if (!t)
			fprintf(stderr, "halo tokenize: %s\n", err);
		return t;
	}
	/* only the tokenizer section is read: the weights' checksum can wait */
	halo_bundle *b = halo_bundle_open_flags(a->bundle, HALO_BUNDLE_SKIP_WEIGHTS_CHECKSUM, err, sizeof err);
	if (!b) {
		fprintf(stderr, "halo tokenize: %s\n", err);
		return NULL;
	}
	size_t size;
	const void *json = halo_bundle_section(b, "tokenizer", &size);
	halo_tokenizer *t = NULL;
	char label[600];
	snprintf(label, sizeof label, "bundle %s: section 'tokenizer'", a->bundle);
	if (!json)
		fprintf(stderr,
			"halo tokenize: bundle %s has no tokenizer section (its checkpoint had no tokenizer.json); "
			"use --tokenizer FILE\n",
			a->bundle);
	else if (!(t = halo_tokenizer_load_mem(json, size, label, err, sizeof err)))
		fprintf(stderr, "halo tokenize: %s\n", err);
	halo_bundle_close(b);
	return t;
}

static int encode(halo_tokenizer *t, const tokenize_args *a)
{
	size_t len = a->text ? strlen(a->text) : 0;
	char *owned = a->text ? NULL : read_all(a->file, &len);
	if (!a->text && !owned)
		return 1;
	int32_t *ids;
	size_t n;
	char err[512];
	bool ok = halo_tokenizer_encode(t, a->text ? a->text : owned, len, &ids, &n, err, sizeof err);
	free(owned);
	if (!ok) {
		fprintf(stderr, "halo tokenize: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", ids[i]);
	putchar('\n');
	free(ids);
	return 0;
}

/* "1, 2\n3" -> ids; every id must name a token. On failure returns NULL
 * with *bad_syntax telling a malformed list from an id no token has. */
static int32_t *parse_ids(const halo_tokenizer *t, const char *s, const char *what, size_t *n, bool *bad_syntax)
{
	static const char sep[] = ", \t\r\n";
	size_t cap = 1;
	for (const char *p = s; *p; p++)
		cap += strchr(sep, *p) != NULL;
	int32_t *ids = malloc(cap * sizeof(*ids));
	*n = 0;
	for (const char *p = s; ids;) {
		p += strspn(p, sep);
		if (!*p)
			return ids;
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		int w = (int)strcspn(p, sep);
		*bad_syntax = end != p + w || errno;
		if (*bad_syntax || !halo_tokenizer_token(t, v < 0 || v > INT32_MAX ? -1 : (int32_t)v)) {
			fprintf(stderr, "halo tokenize: %s: '%.*s' is not a token id (0..%d)\n", what, w, p,
				halo_tokenizer_id_end(t) - 1);
			break;
		}
		ids[(*n)++] = (int32_t)v;
		p = end;
	}
	free(ids);
	return NULL;
}

static int decode(const halo_tokenizer *t, const tokenize_args *a)
{
	size_t len;
	char *owned = a->ids ? NULL : read_all(a->file, &len);
	if (!a->ids && !owned)
		return 1;
	size_t n;
	bool bad_syntax = false;
	int32_t *ids =
		parse_ids(t, a->ids ? a->ids : owned, a->ids ? "--ids" : a->file ? a->file : "stdin", &n, &bad_syntax);
	free(owned);
	if (!ids) /* a malformed --ids is a command-line error, an unknown id bad input */
		return a->ids && bad_syntax ? 2 : 1;
	char *text, err[512];
	bool ok = halo_tokenizer_decode(t, ids, n, a->skip_special, &text, &len, err, sizeof err);
	free(ids);
	if (!ok) {
		fprintf(stderr, "halo tokenize: %s\n", err);
		return 1;
	}
	fwrite(text, 1, len, stdout);
	free(text);
	return 0;
}

int cmd_tokenize(int argc, char **argv)
{
	tokenize_args a = {0};
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	if (a.help) {
		tokenize_usage(stdout);
		return 0;
	}
	if ((rc = check_args(&a)))
		return rc;
	halo_tokenizer *t = open_tokenizer(&a);
	if (!t)
		return 1;
	rc = a.decode ? decode(t, &a) : encode(t, &a);
	halo_tokenizer_free(t);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "halo tokenize: cannot write: %s\n", strerror(errno));
		return 1;
	}
	return rc;
}
