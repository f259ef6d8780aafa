/* pass_split_attention: every attention node whose cache spans more than
 * one block of keys becomes attention_partial, which attends each block of
 * `block` keys in a workgroup of its own, then attention_combine, which
 * merges the blocks in order (docs/ops.md). Unsplit, a decode step has one
 * workgroup per query head, each scanning the whole context serially: hq
 * workgroups on the whole GPU, and a 32k context is 32k keys in one loop.
 * Split, hq * S workgroups share it (blocks past a row's last key return at
 * once). A block's keys depend only on positions, never on T, so
 * verification rows stay bitwise equal to single steps; and since entries
 * of every size share graph functions, every size is split alike. Runs
 * after fusion: the node becomes the combine half and keeps its fused
 * epilogue; the partial half takes none. */
#include "passes/passes.h"

#include "passes/split_node.h"

/* At most this many blocks, each a multiple of KEY_CHUNK keys and at least
 * MIN_BLOCK: 2k of context is 32 blocks of 64, 32k is 64 of 512. A decode
 * step at a few hundred keys is bound by each workgroup's serial passes, not
 * by bytes: blocks of 64 keys (two passes of 128 lanes) give twice the
 * workgroups of 128-key blocks, each half as long. */
#define MAX_BLOCKS 64
#define MIN_BLOCK 64
#define KEY_CHUNK 32

/* The keys per block for a cache of C rows. */
static int64_t block_keys(int64_t C)
{
	int64_t per = (C + MAX_BLOCKS - 1) / MAX_BLOCKS;
	per = (per + KEY_CHUNK - 1) / KEY_CHUNK * KEY_CHUNK;
	return per > MIN_BLOCK ? per : MIN_BLOCK;
}

static int split_attention(ir_module *m, ir_func *f, int nid, void *ctx, ir_error *err)
{
	(void)ctx;
	ir_node *n = &f->nodes[nid];
	if (n->op != IR_OP_ATTENTION)
		return SPLIT_KEEP;
	int64_t C = f->values[n->in[1]].shape.dim[0].c, block = block_keys(C);
	if (C <= block)
		return SPLIT_KEEP;
	const char *name = n->name;
	ir_loc loc = n->loc;
	int q = n->in[0], k = n->in[1], v = n->in[2], layer = n->layer;
	double scale = ir_node_attr_float(n, "scale", 1.0);
	int pid = ir_func_add_node(m, f, IR_OP_ATTENTION_PARTIAL, ir_arena_printf(&m->arena, "%s.partial", name), loc);
	ir_node *p = &f->nodes[pid];
	p->layer = layer;
	p->n_in = 3;
	p->in = ir_arena_alloc(&m->arena, 3 * sizeof(int));
	p->in[0] = q, p->in[1] = k, p->in[2] = v;
	ir_node_add_attr(m, f, pid, &(ir_attr){.name = "scale", .kind = IR_ATTR_FLOAT, .f = scale});
	ir_node_add_attr(m, f, pid, &(ir_attr){.name = "block", .kind = IR_ATTR_INT, .i = block});
	int part = split_add_output(m, f, pid, ir_arena_printf(&m->arena, "%s.part", name), err);
	if (part < 0)
		return -1;
	n = &f->nodes[nid]; /* the appends may have moved the node array */
	n->op = IR_OP_ATTENTION_COMBINE;
	n->in = ir_arena_alloc(&m->arena, sizeof(int));
	n->n_in = 1;
	n->in[0] = part;
	n->n_attr = 0;
	n->attr = NULL;
	return pid;
}

bool pass_split_attention(ir_module *m, ir_error *err)
{
	return split_nodes(m, split_attention, NULL, err);
}
