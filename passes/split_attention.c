/* pass_split_attention: every attention-side node whose rows each stream
 * more than one block of keys is taken over (key block, row) workgroups,
 * each writing its block's partial result, and the blocks are merged in
 * block order (docs/ops.md):
 *  - attention -> attention_blocks, one node: the last workgroup of a row
 *    to finish merges the row's blocks, counted in a state of kind "sync"
 *    made here for the node ([t_max, hq] i32, zero at session start and left
 *    zero by every dispatch). One dispatch, not two: a decode step's
 *    boundary between the halves cost about 5 us a layer on an H100
 *    (bench/results-h100-qwen3_8b.txt). Unsplit, a decode step has one
 *    workgroup per query head, each scanning the whole context serially: hq
 *    workgroups on the whole GPU, and a 32k context is 32k keys in one loop;
 *  - masked_attention -> masked_attention_blocks (its mask last), likewise:
 *    QSA's attention (models/qwen4_exp.yaml) scans every cache row, masked
 *    or not, so unsplit it is the same serial loop (24 workgroups of 4096
 *    keys each at 4096 tokens of the Qwen3.8 Flash cut);
 *  - qsa_select -> qsa_select_blocks (a sync state of [t_max, 1]): its
 *    blocks scored by as many workgroups of a token as its lanes need, a
 *    block a lane, the token's last to finish picking the best and writing
 *    the mask. Unsplit, one workgroup a token scores every block, a lane
 *    building several block keys in turn, each from BLOCK * d loads (4
 *    blocks a lane at 4096 tokens of the Flash cut, 346 us a token in the
 *    H100's profile). Every size of cache is folded: the kernel's grid
 *    follows the cache, one workgroup where its lanes cover the blocks;
 *  - sink_attention -> sink_attention_partial + attention_combine (the sink
 *    enters block 0 alone, so the combine's math is the same); unsplit, a
 *    group of heads streams a row's whole key list in one workgroup;
 *  - index_topk -> index_score + index_select: the scores of every visible
 *    key, then the unsplit kernel's selection over them; unsplit, one
 *    workgroup scores a row's n·h·d multiply-adds (67M at a 32k context).
 * Split, S times the workgroups share a row (blocks past a row's last key
 * return at once). A block's keys depend only on positions, never on T, and
 * the merge's order is block order whichever workgroup is last, so
 * verification rows stay bitwise equal to single steps; and since entries
 * of every size share graph functions, every size is split alike. Runs
 * after fusion: the merging node keeps the fused epilogue; the first half
 * takes none. */
#include "passes/passes.h"

#include <string.h>

#include "ir/ops.h"
#include "passes/split_node.h"

/* At most this many blocks, each a multiple of KEY_CHUNK keys and at least
 * MIN_BLOCK: 2k of context is 32 blocks of 64, 32k is 64 of 512. A decode
 * step at a few hundred keys is bound by each workgroup's serial passes, not
 * by bytes: blocks of 64 keys (two passes of 128 lanes) give twice the
 * workgroups of 128-key blocks, each half as long. */
#define MAX_BLOCKS 64
#define MIN_BLOCK 64
#define KEY_CHUNK 32

/* The keys per block for rows of at most C keys. */
static int64_t block_keys(int64_t C)
{
	int64_t per = (C + MAX_BLOCKS - 1) / MAX_BLOCKS;
	per = (per + KEY_CHUNK - 1) / KEY_CHUNK * KEY_CHUNK;
	return per > MIN_BLOCK ? per : MIN_BLOCK;
}

static int64_t dim0(const ir_func *f, const ir_node *n, int i)
{
	return f->values[n->in[i]].shape.dim[0].c;
}

/* The most keys a row of each op streams. attention: the cache. */
static int64_t attention_keys(const ir_func *f, const ir_node *n)
{
	return dim0(f, n, 1);
}

/* sink_attention: the window's rows, then the ids or the entries. */
static int64_t sink_keys(const ir_func *f, const ir_node *n)
{
	int64_t more = n->n_in == 5 ? f->values[n->in[4]].shape.dim[1].c : n->n_in == 4 ? dim0(f, n, 3) : 0;
	return ir_sink_keys_max(ir_node_attr_int(n, "window", 1), dim0(f, n, 1), more);
}

/* index_topk: the entries' keys. */
static int64_t index_keys(const ir_func *f, const ir_node *n)
{
	return dim0(f, n, 2);
}

/* How one op splits: the halves' ops, the first half's node and value name
 * suffixes, and the attributes each half keeps of the node's (NULL-ended;
 * the first half then takes `block`). */
typedef struct {
	ir_op op, first, second;
	int64_t (*keys)(const ir_func *f, const ir_node *n);
	const char *node_suffix, *value_suffix;
	const char *first_attrs[4], *second_attrs[4];
} split_rule;

static const split_rule rules[] = {
	{IR_OP_SINK_ATTENTION, IR_OP_SINK_ATTENTION_PARTIAL, IR_OP_ATTENTION_COMBINE, sink_keys, "partial", "part",
	 {"scale", "window", "ratio"}, {NULL}},
	{IR_OP_INDEX_TOPK, IR_OP_INDEX_SCORE, IR_OP_INDEX_SELECT, index_keys, "score", "scores", {"ratio", "scale"},
	 {"k", "ratio"}},
};

static bool listed(const char *const *names, const char *name)
{
	for (; *names; names++)
		if (strcmp(*names, name) == 0)
			return true;
	return false;
}

/* Copies the attributes named in names, in attr's order, onto node to. */
static void copy_attrs(ir_module *m, ir_func *f, const ir_attr *attr, int n_attr, int to, const char *const *names)
{
	for (int i = 0; i < n_attr; i++)
		if (listed(names, attr[i].name))
			ir_node_add_attr(m, f, to, &attr[i]);
}

static int split_by_rule(ir_module *m, ir_func *f, int nid, const split_rule *r, ir_error *err)
{
	ir_node *n = &f->nodes[nid];
	int64_t C = r->keys(f, n), block = block_keys(C);
	if (C <= block)
		return SPLIT_KEEP;
	const char *name = n->name;
	const ir_attr *attr = n->attr;
	int n_attr = n->n_attr, n_in = n->n_in, *in = n->in, layer = n->layer;
	int pid = ir_func_add_node(m, f, r->first, ir_arena_printf(&m->arena, "%s.%s", name, r->node_suffix), n->loc);
	ir_node *p = &f->nodes[pid];
	p->layer = layer;
	p->n_in = n_in;
	p->in = ir_arena_alloc(&m->arena, (size_t)n_in * sizeof(int));
	memcpy(p->in, in, (size_t)n_in * sizeof(int));
	copy_attrs(m, f, attr, n_attr, pid, r->first_attrs);
	ir_node_add_attr(m, f, pid, &(ir_attr){.name = "block", .kind = IR_ATTR_INT, .i = block});
	int part = split_add_output(m, f, pid, ir_arena_printf(&m->arena, "%s.%s", name, r->value_suffix), err);
	if (part < 0)
		return -1;
	n = &f->nodes[nid]; /* the appends may have moved the node array */
	n->op = r->second;
	n->in = ir_arena_alloc(&m->arena, sizeof(int));
	n->n_in = 1;
	n->in[0] = part;
	n->n_attr = 0;
	n->attr = NULL;
	copy_attrs(m, f, attr, n_attr, nid, r->second_attrs);
	return pid;
}

/* The sync counters of a *_blocks node `name`: a module state of kind
 * "sync", `width` i32 per token (attention's: a query head each) of the
 * longest step of any entry. */
static int sync_state(ir_module *m, const char *name, int64_t width, int layer, ir_loc loc)
{
	int64_t t_max = 1;
	for (int e = 0; e < m->n_entries; e++)
		t_max = m->entries[e].t_max > t_max ? m->entries[e].t_max : t_max;
	ir_state s = {.name = ir_arena_printf(&m->arena, "%s.sync", name),
		      .shape = {.rank = 2, .dim = {ir_dim_const(t_max), ir_dim_const(width)}},
		      .dtype = HALO_I32,
		      .kind = "sync",
		      .slots_of = -1,
		      .layer = layer,
		      .loc = loc};
	int id = ir_module_state(m, s.name);
	return id >= 0 ? id : ir_module_add_state(m, &s);
}

/* Node nid's sync state (a counter per row of `width`, made by sync_state)
 * read through a new state_read node, whose id is returned in *rid (to be
 * placed before the node); its value. */
static int read_sync(ir_module *m, ir_func *f, int nid, int64_t width, int *rid)
{
	const ir_node *n = &f->nodes[nid];
	int layer = n->layer;
	ir_loc loc = n->loc;
	int state = sync_state(m, n->name, width, layer, loc);
	*rid = ir_func_add_node(m, f, IR_OP_STATE_READ, m->states[state].name, loc);
	int sv = ir_func_add_value(m, f, m->states[state].name, *rid, 0);
	f->values[sv].shape = m->states[state].shape;
	f->values[sv].dtype = HALO_I32;
	f->values[sv].shape_known = true;
	ir_node *r = &f->nodes[*rid];
	r->ref = state;
	r->layer = layer;
	r->n_out = 1;
	r->out = ir_arena_alloc(&m->arena, sizeof(int));
	r->out[0] = sv;
	return sv;
}

/* attention (q, k, v) -> attention_blocks (q, k, v, sync) -> (y, part),
 * masked_attention (q, k, v, mask) -> masked_attention_blocks (q, k, v,
 * sync, mask) -> (y, part): the node keeps its name, result and epilogue
 * and gains the block size, its sync state (read through a new state_read
 * node, returned to be placed before it) and the blocks' sums as a second
 * result. */
static int fold_attention(ir_module *m, ir_func *f, int nid, ir_error *err)
{
	ir_node *n = &f->nodes[nid];
	bool masked = n->op == IR_OP_MASKED_ATTENTION;
	int64_t C = attention_keys(f, n), block = block_keys(C);
	if (C <= block)
		return SPLIT_KEEP;
	const char *name = n->name;
	int rid, sv = read_sync(m, f, nid, f->values[n->in[0]].shape.dim[1].c, &rid);
	n = &f->nodes[nid]; /* the appends may have moved the node array */
	int n_in = masked ? 5 : 4;
	int *in = ir_arena_alloc(&m->arena, (size_t)n_in * sizeof(int)), *out = ir_arena_alloc(&m->arena, 2 * sizeof(int));
	memcpy(in, n->in, 3 * sizeof(int));
	in[3] = sv;
	if (masked)
		in[4] = n->in[3];
	out[0] = n->out[0];
	out[1] = -1; /* the part value, once its shape is known */
	n->op = masked ? IR_OP_MASKED_ATTENTION_BLOCKS : IR_OP_ATTENTION_BLOCKS;
	n->in = in;
	n->n_in = n_in;
	n->out = out;
	n->n_out = 2;
	ir_node_add_attr(m, f, nid, &(ir_attr){.name = "block", .kind = IR_ATTR_INT, .i = block});
	ir_shape shapes[2];
	halo_dtype dtypes[2];
	if (!ir_op_infer(m, f, &f->nodes[nid], shapes, dtypes, err))
		return -1;
	out[1] = ir_func_add_value(m, f, ir_arena_printf(&m->arena, "%s.part", name), nid, 1);
	f->values[out[1]].shape = shapes[1];
	f->values[out[1]].dtype = dtypes[1];
	f->values[out[1]].shape_known = true;
	return rid;
}

/* qsa_select (q, keys, k_norm) -> qsa_select_blocks (q, keys, k_norm,
 * sync): the node keeps its name and result and gains a counter a token,
 * read through a new state_read node returned to be placed before it. */
static int fold_qsa(ir_module *m, ir_func *f, int nid)
{
	int rid, sv = read_sync(m, f, nid, 1, &rid);
	ir_node *n = &f->nodes[nid];
	int *in = ir_arena_alloc(&m->arena, 4 * sizeof(int));
	memcpy(in, n->in, 3 * sizeof(int));
	in[3] = sv;
	n->op = IR_OP_QSA_SELECT_BLOCKS;
	n->in = in;
	n->n_in = 4;
	return rid;
}

static int split_attention(ir_module *m, ir_func *f, int nid, void *ctx, ir_error *err)
{
	(void)ctx;
	if (f->nodes[nid].op == IR_OP_ATTENTION || f->nodes[nid].op == IR_OP_MASKED_ATTENTION)
		return fold_attention(m, f, nid, err);
	if (f->nodes[nid].op == IR_OP_QSA_SELECT)
		return fold_qsa(m, f, nid);
	for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
		if (f->nodes[nid].op == rules[i].op)
			return split_by_rule(m, f, nid, &rules[i], err);
	return SPLIT_KEEP;
}

bool pass_split_attention(ir_module *m, ir_error *err)
{
	return split_nodes(m, split_attention, NULL, err);
}
