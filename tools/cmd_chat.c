/* halo chat: a conversation with a bundle's model. Each line on stdin is a
 * user turn; the reply streams to stdout; a statistics line per turn goes
 * to stderr.
 *
 * The session carries the conversation across turns, so a turn should
 * prefill only its own tokens. The chat template renders the whole
 * conversation each turn, and may render earlier turns differently from
 * how they were generated (Qwen3's drops the <think> block of an earlier
 * reply; text the model generated may also encode to other tokens than it
 * generated). So each turn: render and encode the conversation, take the
 * token-level common prefix with the tokens the session holds, and
 *   - when the session holds exactly that prefix: prefill the rest;
 *   - else, when the prefix reaches the checkpoint saved at the last turn's
 *     generation prompt (its last token excepted): restore it, prefill from
 *     there (recurrent states cannot step back by position, a checkpoint
 *     copies them whole);
 *   - else reset the session and prefill everything.
 * The checkpoint sits where templates that rewrite a reply start to differ:
 * right after the "assistant" header the reply was generated from. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/generate.h"
#include "tools/cli_args.h"
#include "tools/cli_chat.h"
#include "tools/cli_gen.h"
#include "tools/commands.h"

static void chat_usage(FILE *out)
{
	fputs("usage: halo chat BUNDLE.halo [--system S] [--n-predict N] [--backend NAME]\n"
	      "                 [--device N] [--temp T] [--top-k K] [--top-p P] [--seed S]\n"
	      "                 [--spec none|mtp] [--draft-n K] [--draft-fixed] [--validate]\n"
	      "                 [--tuning FILE | --no-tuning]\n"
	      "\n"
	      "Talks with the bundle's model through its chat template: each line read from\n"
	      "stdin is a user turn, the reply streams to stdout. The session keeps the\n"
	      "conversation, so a turn prefills only its own tokens. Ctrl-C during a reply\n"
	      "stops it; Ctrl-C or end of input at the prompt ends the chat.\n"
	      "\n"
	      "commands (a line of its own):\n"
	      "  /reset               forget the conversation (the --system message stays)\n"
	      "  /quit                end the chat\n"
	      "\n"
	      "options:\n"
	      "  --system S           a system message opening the conversation\n"
	      "  --n-predict N        the most tokens per reply (default 1024)\n"
	      "  the others           as for halo run (see halo run --help)\n"
	      "  -h, --help           this text\n",
	      out);
}

typedef struct {
	const char *bundle, *system;
	bool help;
	cli_gen_args gen;
} chat_args;

static int parse_args(int argc, char **argv, chat_args *a)
{
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			a->help = true;
		else if (cli_take_value("chat", argc, argv, &i, "--system", &a->system, &rc) ||
			 cli_gen_take("chat", argc, argv, &i, &a->gen, &rc))
			continue;
		else if (s[0] == '-')
			rc = cli_usage_error("chat", "unknown option '%s'", s);
		else if (a->bundle)
			rc = cli_usage_error("chat", "more than one bundle given ('%s')", s);
		else
			a->bundle = s;
	}
	if (!rc && !a->help && !a->bundle)
		rc = cli_usage_error("chat", "%s", "no bundle given");
	return rc;
}

/* The conversation and the session that follows it. */
typedef struct {
	const cli_gen_config *c;
	halo_model *m;
	halo_session *s;
	halo_checkpoint *ck;
	int64_t ck_pos;      /* where ck was saved; -1: never */
	int32_t *held;       /* the tokens the session consumed, [0, its position) */
	size_t n_held, cap_held;
	halo_chat_message *msgs; /* contents malloc'd; roles static */
	size_t n_msgs, cap_msgs;
	int32_t *reply_ids;  /* [n_predict] */
	char *reply;         /* the reply's text as streamed */
	size_t reply_len, reply_cap;
	cli_text text;
	halo_chat_template *tpl;
	cli_tuning tuning;
} chat;

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void chat_free(chat *ch)
{
	for (size_t i = 0; i < ch->n_msgs; i++)
		free((char *)ch->msgs[i].content);
	free(ch->msgs);
	free(ch->held);
	free(ch->reply_ids);
	free(ch->reply);
	halo_checkpoint_free(ch->ck);
	halo_session_free(ch->s);
	halo_model_close(ch->m);
	halo_tuning_db_free(ch->tuning.db);
	halo_chat_template_free(ch->tpl);
	cli_text_close(&ch->text);
}

static bool add_message(chat *ch, const char *role, const char *content, size_t len)
{
	if (ch->n_msgs == ch->cap_msgs) {
		size_t cap = ch->cap_msgs ? 2 * ch->cap_msgs : 8;
		halo_chat_message *m = realloc(ch->msgs, cap * sizeof(*m));
		if (!m)
			return false;
		ch->msgs = m;
		ch->cap_msgs = cap;
	}
	char *copy = strndup(content, len);
	if (copy)
		ch->msgs[ch->n_msgs++] = (halo_chat_message){role, copy};
	return copy != NULL;
}

static void drop_last_message(chat *ch)
{
	free((char *)ch->msgs[--ch->n_msgs].content);
}

static bool hold(chat *ch, const int32_t *ids, size_t n)
{
	if (ch->n_held + n > ch->cap_held) {
		size_t cap = ch->cap_held ? ch->cap_held : 256;
		while (cap < ch->n_held + n)
			cap *= 2;
		int32_t *h = realloc(ch->held, cap * sizeof(*h));
		if (!h)
			return false;
		ch->held = h;
		ch->cap_held = cap;
	}
	memcpy(ch->held + ch->n_held, ids, n * sizeof(*ids));
	ch->n_held += n;
	return true;
}

/* halo_gen_text_fn: stdout, and the reply's text for the conversation. */
static bool show(void *user, const char *text, size_t len)
{
	chat *ch = user;
	if (ch->reply_len + len + 1 > ch->reply_cap) {
		size_t cap = 2 * (ch->reply_len + len + 1);
		char *r = realloc(ch->reply, cap);
		if (!r)
			return false;
		ch->reply = r;
		ch->reply_cap = cap;
	}
	memcpy(ch->reply + ch->reply_len, text, len);
	ch->reply_len += len;
	fwrite(text, 1, len, stdout);
	fflush(stdout);
	return !interrupted;
}

/* Brings the session to a prefix of ids[0..n) (the scheme at the top);
 * returns how many of them it holds, or -1 on failure. *how names the way. */
static int64_t align_session(chat *ch, const int32_t *ids, size_t n, const char **how, char *err, size_t errlen)
{
	size_t common = 0;
	while (common < ch->n_held && common < n && ch->held[common] == ids[common])
		common++;
	/* the last token goes through halo_generate: never hold all of ids */
	if (common == ch->n_held && common < n) {
		*how = "kept";
		return (int64_t)common;
	}
	if (ch->ck_pos >= 0 && (size_t)ch->ck_pos <= common && (size_t)ch->ck_pos < n) {
		*how = "rewound";
		ch->n_held = (size_t)ch->ck_pos;
		return halo_session_restore(ch->s, ch->ck, err, errlen) ? ch->ck_pos : -1;
	}
	*how = "reset";
	ch->n_held = 0;
	ch->ck_pos = -1;
	return halo_session_reset(ch->s, err, errlen) ? 0 : -1;
}

static void print_stats(const chat *ch, const halo_gen_result *res, int64_t from, size_t n, const char *how)
{
	fprintf(stderr, "\nhalo chat: prefill %lld of %zu tokens (%s at %lld), generated %lld in %.3f s (%.2f t/s), "
		"finish: %s\n", (long long)((int64_t)n - from), n, how, (long long)from,
		(long long)res->completion_tokens, res->decode_s, (double)res->completion_tokens / res->decode_s,
		halo_finish_reason_name(res->finish));
	if (ch->c->spec_mtp)
		halo_spec_stats_print(&res->spec, ch->c->draft_n, stderr);
}

/* Prefills ids[from, n - 1), saves the checkpoint there, generates from
 * ids[n - 1]; the session then holds every token but the reply's last. */
static bool reply(chat *ch, const int32_t *ids, size_t n, int64_t from, halo_gen_result *res, char *err,
		  size_t errlen)
{
	int64_t pre = (int64_t)n - 1 - from;
	if (pre > 0 && !halo_session_prefill(ch->s, ids + from, pre, NULL, NULL, err, errlen))
		return false;
	if (!hold(ch, ids + from, (size_t)pre) || !halo_session_save(ch->s, ch->ck, err, errlen))
		return false;
	ch->ck_pos = (int64_t)n - 1;
	const cli_gen_config *c = ch->c;
	halo_gen_options o = {.sampling = c->sampling, .seed = c->seed, .max_tokens = c->n_predict,
			      .eos_ids = ch->text.meta.eos_ids, .n_eos = ch->text.meta.n_eos_ids, .skip_special = true,
			      .spec_mtp = c->spec_mtp, .draft_n = c->draft_n, .draft_fixed = c->draft_fixed,
			      .context = ch->held, .n_context = (int64_t)ch->n_held, .ids_out = ch->reply_ids};
	ch->reply_len = 0;
	interrupted = 0;
	bool ok = halo_generate(ch->m, ch->s, ch->text.tok, ids + n - 1, 1, &o, show, ch, res, err, errlen);
	/* consumed: the prompt's last token and every reply token but the last */
	if (ok)
		ok = hold(ch, ids + n - 1, 1) && hold(ch, ch->reply_ids, (size_t)res->completion_tokens - 1);
	return ok;
}

/* One user turn: render, align the session, generate, keep the reply. */
static bool turn(chat *ch, const char *line, size_t len, char *err, size_t errlen)
{
	int32_t *ids = NULL;
	size_t n = 0;
	const char *how = "";
	halo_gen_result res;
	if (!add_message(ch, "user", line, len) ||
	    !cli_chat_render(&ch->text, ch->tpl, ch->msgs, ch->n_msgs, &ids, &n, err, errlen))
		return false;
	if ((int64_t)n >= halo_model_n_ctx(ch->m)) {
		fprintf(stderr, "halo chat: context full: the conversation is %zu tokens, the context %lld; /reset "
			"starts a new one\n", n, (long long)halo_model_n_ctx(ch->m));
		drop_last_message(ch);
		free(ids);
		return true;
	}
	int64_t from = align_session(ch, ids, n, &how, err, errlen);
	bool ok = from >= 0 && reply(ch, ids, n, from, &res, err, errlen);
	free(ids);
	if (!ok)
		return false;
	fputc('\n', stdout);
	print_stats(ch, &res, from, n, how);
	if (res.finish == HALO_FINISH_LENGTH && halo_session_pos(ch->s) + 1 >= halo_model_n_ctx(ch->m))
		fprintf(stderr, "halo chat: the context is full; /reset starts a new conversation\n");
	return add_message(ch, "assistant", ch->reply ? ch->reply : "", ch->reply_len);
}

/* /reset: the conversation back to the system message; the session
 * follows at the next turn (nothing it holds matches a shorter render
 * past the checkpoint, which is dropped). */
static void reset_conversation(chat *ch, bool has_system)
{
	while (ch->n_msgs > (has_system ? 1u : 0u))
		drop_last_message(ch);
	ch->ck_pos = -1;
}

/* The REPL. Returns 0, or 1 after a failure. */
static int repl(chat *ch, const chat_args *a)
{
	char err[2048], *line = NULL;
	size_t cap = 0;
	bool tty = isatty(STDIN_FILENO);
	int rc = 0;
	for (;;) {
		if (tty) {
			fputs("> ", stdout);
			fflush(stdout);
		}
		interrupted = 0;
		ssize_t got = getline(&line, &cap, stdin);
		if (got < 0 || interrupted)
			break;
		while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
			line[--got] = '\0';
		if (got == 0)
			continue;
		if (strcmp(line, "/quit") == 0)
			break;
		if (strcmp(line, "/reset") == 0) {
			reset_conversation(ch, a->system != NULL);
			fprintf(stderr, "halo chat: conversation cleared\n");
			continue;
		}
		if (!turn(ch, line, (size_t)got, err, sizeof err)) {
			fprintf(stderr, "halo chat: %s\n", err);
			rc = 1;
			break;
		}
	}
	free(line);
	return rc;
}

static bool chat_open(chat *ch, const chat_args *a, cli_gen_config *c, char *err, size_t errlen)
{
	ch->c = c;
	ch->ck_pos = -1;
	ch->m = cli_gen_open("chat", a->bundle, &a->gen, c, &ch->tuning, err, errlen);
	if (!ch->m || !cli_text_open(&ch->text, ch->m, a->bundle, err, errlen) ||
	    !(ch->tpl = cli_chat_template(&ch->text, a->bundle, err, errlen)) ||
	    !(ch->s = halo_session_create(ch->m, err, errlen)) || !(ch->ck = halo_checkpoint_create(ch->s, err, errlen)))
		return false;
	if (!(ch->reply_ids = malloc((size_t)c->n_predict * sizeof(*ch->reply_ids))) ||
	    (a->system && !add_message(ch, "system", a->system, strlen(a->system)))) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	return true;
}

int cmd_chat(int argc, char **argv)
{
	chat_args a = {0};
	cli_gen_config c;
	int rc = parse_args(argc, argv, &a);
	if (rc || a.help) {
		if (a.help)
			chat_usage(stdout);
		return rc;
	}
	c.n_predict = 1024;
	if ((rc = cli_gen_check("chat", &a.gen, &c)))
		return rc;
	if (c.n_predict == 0)
		return cli_usage_error("chat", "%s", "--n-predict wants at least 1 token per reply");
	/* no SA_RESTART: Ctrl-C at the prompt interrupts the read and ends the chat */
	struct sigaction sa = {.sa_handler = on_sigint};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	chat ch = {0};
	char err[2048];
	if (chat_open(&ch, &a, &c, err, sizeof err)) {
		rc = repl(&ch, &a);
	} else {
		fprintf(stderr, "halo chat: %s\n", err);
		rc = 1;
	}
	chat_free(&ch);
	return rc;
}
