/* Malformed model files: each must fail with a message that names the
 * file, line and column and says what was expected. */
#include <stdio.h>
#include <string.h>

#include "ir/read_model.h"

/* Lines 1-4 */
#define HEAD "model: m\nhf_model_types: [m]\nparams:\n  H: {config: hidden}\n"
/* Lines 5-6 */
#define W "weights:\n  w: {shape: [H, H], hf: w}\n"
/* Lines 7-11; the body's ops start on line 12 */
#define G "graphs:\n  g:\n    inputs:\n      x: {shape: [T, H]}\n    body:\n"
#define OUT_Y "    outputs: [y]\n"
#define ENTRY "entries:\n  e: {graph: g, tokens: [1, 8]}\n"
#define MATMUL "      - {op: matmul, out: y, in: [x, w]}\n"
/* A valid model: every case below breaks one thing of it. */
#define VALID HEAD W G MATMUL OUT_Y ENTRY

/* A block model. Lines 1-6 as above, blocks from line 7. */
#define BLK(name, io)                                                                                            \
	"  " name ":\n    inputs: " io "\n    body:\n      - {op: matmul, out: y, in: [x, w]}\n    outputs: [y]\n"
#define LAYERED_G "graphs:\n  g:\n    inputs:\n      x: {shape: [T, H]}\n    body:\n      - {op: layers, out: z, in: [x]}\n    outputs: [z]\n"

static const char config[] = "{\"hidden\": 8, \"fl\": 2.5, \"types\": [\"a\", \"b\"], \"text_config\": {\"nested\": 3}, "
			     "\"one\": [1], \"far\": [3], \"dup\": [1, 1]}";
/* Two blocks b, c and layers (line 18) with pattern [b] and the given overrides. */
#define OVERRIDES(ov) \
	HEAD W "blocks:\n" BLK("b", "[x]") BLK("c", "[x]") "layers: {count: 2, pattern: [b], overrides: [" ov "]}\n" LAYERED_G ENTRY

/* A draft section with `layers: n`, the given state/export lines, one graph
 * d whose body is `body`, and one entry named `entry`. */
#define DRAFT(n, extra, body, entry)                                                                     \
	"draft:\n  layers: " n "\n" extra "  graphs:\n    d:\n      inputs:\n        x: {shape: [T, H]}\n" \
	"      body:\n" body "      outputs: [y]\n  entries:\n    " entry ": {graph: d, tokens: [1, 1], "     \
	"position: caller}\n"
#define D_MATMUL "        - {op: matmul, out: y, in: [x, w]}\n"

typedef struct {
	const char *name;
	const char *yaml;
	const char *expect;
} err_case;

/* HEAD with an hf_prefixes line 3 (params from line 4). */
#define PREFIXES(list) "model: m\nhf_model_types: [m]\nhf_prefixes: " list "\nparams:\n  H: {config: hidden}\n"

/* A block b that reads `r` (line 10), the layer stack on it (line 14), the
 * graph's op layers on line 20. */
#define READS(r) \
	HEAD W "blocks:\n  b:\n    inputs: [x]\n    reads: [" r "]\n    body:\n      - {op: matmul, out: y, in: [x, w]}\n" \
	       "    outputs: [y]\nlayers: {count: 2, pattern: [b]}\n" LAYERED_G ENTRY

/* Block `name` whose body is the one op `op` (its out y), inputs [x]. */
#define CALLER(name, op) "  " name ":\n    inputs: [x]\n    body:\n      - " op "\n    outputs: [y]\n"
/* Blocks from line 7 (each CALLER 5 lines), the layer stack on block b, the graph. */
#define CALLS(blocks) HEAD W "blocks:\n" blocks "layers: {count: 2, pattern: [b]}\n" LAYERED_G ENTRY
#define CALL(callee) "{op: block, block: " callee ", in: [x], out: [y]}"
/* A chain of n + 1 blocks b, c1 .. cn, each calling the next; cn does the matmul. */
#define CHAIN8 CALLER("b", CALL("c1")) CALLER("c1", CALL("c2")) CALLER("c2", CALL("c3")) CALLER("c3", CALL("c4")) \
	CALLER("c4", CALL("c5")) CALLER("c5", CALL("c6")) CALLER("c6", CALL("c7")) CALLER("c7", CALL("c8"))
#define MM "{op: matmul, out: y, in: [x, w]}"

/* VALID with weight w (line 6) taking rows `spec` of its tensor. */
#define ROWS(spec) HEAD "weights:\n  w: {shape: [H, H], hf: w, " spec "}\n" G MATMUL OUT_Y ENTRY

static const err_case cases[] = {
	{"rows: no groups", ROWS("rows: {take: [[0, 4]]}"), "t.yaml:6:35: the rows of weight 'w': missing required key 'groups'"},
	{"rows: zero groups", ROWS("rows: {groups: 0, take: [[0, 4]]}"),
	 "t.yaml:6:44: weight 'w': rows: groups must be 1 to 8 (its shape's dim 0), not 0"},
	{"rows: more groups than rows", ROWS("rows: {groups: 4611686018427387904, take: [[0, 1]]}"),
	 "weight 'w': rows: groups must be 1 to 8 (its shape's dim 0), not 4611686018427387904"},
	{"rows: no range", ROWS("rows: {groups: 2, take: []}"), "weight 'w': rows: take lists no row range"},
	{"rows: a range of one value", ROWS("rows: {groups: 2, take: [[0]]}"),
	 "weight 'w': a row range is [start, len], two values"},
	{"rows: an empty range", ROWS("rows: {groups: 2, take: [[1, 0]]}"),
	 "weight 'w': row range [1, 0]: the start must be 0 to 4294967296, the length 1 to 8"},
	{"rows: a range past any tensor", ROWS("rows: {groups: 2, take: [[9223372036854775807, 4]]}"),
	 "weight 'w': row range [9223372036854775807, 4]: the start must be 0 to 4294967296, the length 1 to 8"},
	{"rows: not the shape's rows", ROWS("rows: {groups: 2, take: [[0, 1], [2, 2]]}"),
	 "weight 'w': rows: 2 groups of 3 rows are not its shape's dim 0, 8"},
	{"rows with a transpose", ROWS("transform: transpose, rows: {groups: 2, take: [[0, 4]]}"),
	 "weight 'w': rows takes no transform 'transpose' (only none or offset1)"},
	{"rows: unknown key", ROWS("rows: {groups: 2, take: [[0, 4]], stride: 1}"),
	 "unknown key 'stride' in the rows of weight 'w'"},
	{"block calls itself", CALLS(CALLER("b", CALL("b"))),
	 "t.yaml:11:9: block 'b' calls itself: b -> b"},
	{"blocks call each other", CALLS(CALLER("b", CALL("c")) CALLER("c", CALL("d")) CALLER("d", CALL("c"))),
	 "t.yaml:21:9: block 'c' calls itself: c -> d -> c"},
	{"call of an unknown block", CALLS(CALLER("b", CALL("nope"))), "t.yaml:11:28: op block: unknown block 'nope'"},
	{"calls nest deeper than 8 blocks", CALLS(CHAIN8 CALLER("c8", CALL("c9")) CALLER("c9", MM)),
	 "t.yaml:46:9: blocks calling blocks nest deeper than 8: b -> c1 -> c2 -> c3 -> c4 -> c5 -> c6 -> c7 -> c8"},
	{"a layer in a block's call", CALLS(CALLER("b", "{op: block, block: c, layer: 2, in: [x], out: [y]}") CALLER("c", MM)),
	 "t.yaml:11:38: op block: 'layer' is for a graph's call; a call inside block 'b' is part of the caller's layer "
	 "instance"},
	{"as on an instance call",
	 HEAD W "blocks:\n" BLK("b", "[x]") "layers: {count: 2, pattern: [b]}\n" LAYERED_G ENTRY DRAFT("1", "", "        - {op: block, block: b, layer: 2, as: p_, in: [x], out: [y]}\n", "dr"),
	 "t.yaml:30:47: op block: 'as' is for an inline call (without 'layer')"},
	{"a graph's inline call of a block with weights",
	 HEAD W "blocks:\n  b:\n    weights: {v: {shape: [H, H], hf: v}}\n    inputs: [x]\n    body:\n      - {op: matmul, out: y, in: [x, v]}\n    outputs: [y]\n"
	 G "      - {op: block, block: b, in: [x], out: [z]}\n      - {op: matmul, out: y, in: [z, w]}\n" OUT_Y ENTRY,
	 "t.yaml:19:9: op block: block 'b' declares weights or state (itself or a block it calls), so a graph's call of "
	 "it needs 'layer'"},
	{"include in a model read from memory", "model: m\nhf_model_types: [m]\ninclude: [x.yaml]\n",
	 "t.yaml:3:10: include: this model was read from memory, with no directory to find the included files in"},
	{"block reads a name the graph lacks", READS("nope"),
	 "t.yaml:20:9: block 'b' reads 'nope', which graph 'g' does not define before this op"},
	{"block reads one of its own inputs", READS("x"), "t.yaml:10:13: 'x' is defined twice (it is an input of 'b')"},
	{"hf_prefixes not a list", PREFIXES("{from: a., to: b.}") W G MATMUL OUT_Y ENTRY,
	 "t.yaml:3:14: expected a list for hf_prefixes, got a mapping"},
	{"hf_prefixes entry without to", PREFIXES("[{from: a.}]") W G MATMUL OUT_Y ENTRY,
	 "t.yaml:3:15: an hf_prefixes entry: missing required key 'to'"},
	{"hf_prefixes with an unknown key", PREFIXES("[{from: a., to: b., as: c.}]") W G MATMUL OUT_Y ENTRY,
	 "t.yaml:3:34: unknown key 'as' in an hf_prefixes entry (expected one of: from, to)"},
	{"hf_prefixes from an empty prefix", PREFIXES("[{from: '', to: b.}]") W G MATMUL OUT_Y ENTRY,
	 "t.yaml:3:22: hf_prefixes: an empty 'from' prefix would rewrite every name"},
	{"override of an unknown block", OVERRIDES("{from: one, block: zz}"),
	 "t.yaml:18:65: layers.overrides.block: unknown block 'zz'"},
	{"override id out of range", OVERRIDES("{from: far, one_indexed: true, block: c}"),
	 "t.yaml:18:53: layers.overrides: c.json key 'far' item 0 is 3, expected 1 to 2 (one-indexed layer ids)"},
	{"override id listed twice", OVERRIDES("{from: dup, block: c}"),
	 "t.yaml:18:53: layers.overrides: layer 1 is listed twice (c.json key 'dup' item 1)"},
	{"override from a missing key", OVERRIDES("{from: nope, block: c}"),
	 "t.yaml:18:53: layers.overrides.from: config key 'nope' is missing from c.json"},
	{"override from strings", OVERRIDES("{from: types, block: c}"), "c.json: key 'types': item 0 is not an integer"},
	{"override with a bad one_indexed", OVERRIDES("{from: one, one_indexed: 1, block: c}"),
	 "t.yaml:18:71: layers.overrides.one_indexed: expected one of false, true, got '1'"},
	{"override of the wrong block", OVERRIDES("{from: one, block: c, replaces: c}"),
	 "t.yaml:18:78: layers.overrides: layer 1 runs block 'b', but this override replaces 'c' only"},
	{"override index_attr no op has", OVERRIDES("{from: one, block: c, index_attr: k}"),
	 "t.yaml:18:80: layers.overrides.index_attr: no op of block 'c' has an int attribute 'k'"},
	{"override with an unknown key", OVERRIDES("{from: one, block: c, index: k}"),
	 "t.yaml:18:68: unknown key 'index' in layers.overrides"},
	{"unknown top-level key", HEAD "bogus: 1\n" W G MATMUL OUT_Y ENTRY, "t.yaml:5:1: unknown key 'bogus' in the model"},
	{"unknown op key", HEAD W G "      - {op: matmul, out: y, in: [x, w], eps: 1}\n" OUT_Y ENTRY,
	 "t.yaml:12:42: unknown key 'eps' for op matmul (expected op, out, in, state, name, after, split, pair, groups, w_rows)"},
	{"unknown param key", "model: m\nhf_model_types: [m]\nparams:\n  H: {config: hidden, dflt: 3}\n" W G MATMUL OUT_Y ENTRY,
	 "t.yaml:4:23: unknown key 'dflt' in a param spec"},
	{"param named like a function", "model: m\nhf_model_types: [m]\nparams:\n  H: {config: hidden}\n  floor: {default: 2}\n"
	 W G MATMUL OUT_Y ENTRY, "t.yaml:5:3: param name 'floor' is reserved in expressions"},
	{"unknown op", HEAD W G "      - {op: matmull, out: y, in: [x, w]}\n" OUT_Y ENTRY, "t.yaml:12:14: unknown op 'matmull'"},
	{"wrong operand count", HEAD W G "      - {op: matmul, out: y, in: [x]}\n" OUT_Y ENTRY,
	 "t.yaml:12:34: op matmul takes 2 operand(s), got 1"},
	{"missing required attribute", HEAD W "  v: {shape: [H], hf: v}\n" G MATMUL "      - {op: rms_norm, out: r, in: [y, v]}\n"
	 "    outputs: [r]\n" ENTRY, "t.yaml:14:9: rms_norm 'r': missing required attribute 'eps'"},
	{"attribute of wrong type (float for int)",
	 HEAD W G MATMUL "      - {op: slice, out: s, in: [y], axis: 1.5, start: 0, len: 1}\n    outputs: [s]\n" ENTRY,
	 "t.yaml:13:44: attribute 'axis' of slice: expected an int, got the float 1.5"},
	{"attribute of wrong type (list for float)",
	 HEAD W "  v: {shape: [H], hf: v}\n" G MATMUL "      - {op: rms_norm, out: r, in: [y, v], eps: [1]}\n    outputs: [r]\n" ENTRY,
	 "t.yaml:14:49: expected a scalar for attribute 'eps' of rms_norm, got a list"},
	{"attribute out of range", HEAD W "  v: {shape: [H], hf: v}\n" G MATMUL
	 "      - {op: rms_norm, out: r, in: [y, v], eps: 1e-5, offset: 2}\n    outputs: [r]\n" ENTRY,
	 "t.yaml:14:63: rms_norm attribute 'offset' must be in [0, 1], got 2"},
	{"attribute bad choice", HEAD W "state:\n  s: {shape: [4, H], kind: kv}\n" G MATMUL
	 "      - {op: state_write, name: st, state: s, in: [y], at: row}\n" OUT_Y ENTRY,
	 "t.yaml:15:60: state_write attribute 'at' must be one of pos, start, got 'row'"},
	{"undefined value", HEAD W G "      - {op: matmul, out: y, in: [x, nope]}\n" OUT_Y ENTRY,
	 "t.yaml:12:38: undefined value 'nope' (not an input, an earlier output or a weight)"},
	{"name defined twice", HEAD W G MATMUL "      - {op: matmul, out: y, in: [x, w]}\n" OUT_Y ENTRY,
	 "t.yaml:13:27: 'y' is defined twice (first by the op at line 12)"},
	{"output names a weight", HEAD W G "      - {op: matmul, out: w, in: [x, w]}\n    outputs: [w]\n" ENTRY,
	 "t.yaml:12:27: 'w' is defined twice (it names a weight)"},
	{"state_write to undeclared state", HEAD W G MATMUL "      - {op: state_write, name: st, state: kv, in: [y]}\n" OUT_Y ENTRY,
	 "t.yaml:13:44: state_write to undeclared state 'kv'"},
	{"state_read of undeclared state", HEAD W G MATMUL "      - {op: state_read, out: r, state: kv}\n" OUT_Y ENTRY,
	 "t.yaml:13:41: state_read to undeclared state 'kv'"},
	{"weight never declared (block)", HEAD W "blocks:\n  b:\n    inputs: [x]\n    body:\n      - {op: matmul, out: y, in: [x, wq]}\n"
	 "    outputs: [y]\n" G MATMUL OUT_Y ENTRY, "t.yaml:11:38: undefined value 'wq'"},
	{"module weight never used", HEAD W "  unused: {shape: [H], hf: u}\n" G MATMUL OUT_Y ENTRY,
	 "t.yaml:7:3: weight 'unused' is declared but never used"},
	{"block weight never used", HEAD W "blocks:\n  b:\n    weights:\n      bw: {shape: [H], hf: b}\n    inputs: [x]\n    body:\n"
	 "      - {op: matmul, out: y, in: [x, w]}\n    outputs: [y]\n" G MATMUL OUT_Y ENTRY,
	 "t.yaml:10:7: weight 'bw' of block 'b' is declared but never used"},
	{"missing config key without default", HEAD "  K: {config: no_such_key}\n" W G MATMUL OUT_Y ENTRY,
	 "t.yaml:5:3: param 'K': config key 'no_such_key' is missing from c.json and there is no default"},
	{"bad expression", HEAD "  K: {default: 3 +* 2}\n" W G MATMUL OUT_Y ENTRY,
	 "t.yaml:5:19: unexpected '*': expected a number, a name or '('"},
	{"division with remainder", HEAD "  K: {default: H / 3}\n" W G MATMUL OUT_Y ENTRY,
	 "t.yaml:5:18: division with remainder: 8 / 3 (dims must divide exactly)"},
	{"division by zero", HEAD "  K: {default: H % (H - 8)}\n" W G MATMUL OUT_Y ENTRY, "t.yaml:5:18: division by zero"},
	{"unknown name in expression", HEAD "  K: {default: 2 * (H + Q)}\n" W G MATMUL OUT_Y ENTRY,
	 "t.yaml:5:25: unknown name 'Q' (not an earlier param)"},
	{"string param in an expression", HEAD "  S: {default: sigmoid, type: str}\n  K: {default: S + 1}\n" W G MATMUL
	 OUT_Y ENTRY, "t.yaml:6:16: param 'S' is a string (it names a value for string attributes only)"},
	{"string param from a number", HEAD "  S: {config: hidden, type: str}\n" W G MATMUL OUT_Y ENTRY,
	 "c.json: key 'hidden': expected a string"},
	{"string param's value not a choice", HEAD "  S: {default: cubic, type: str}\n" W G
	 "      - {op: matmul, out: l, in: [x, w]}\n      - {op: moe_route, out: [y, i], in: [l], k: 2, scoring: S}\n"
	 OUT_Y ENTRY, "t.yaml:14:62: moe_route attribute 'scoring' must be one of softmax, sigmoid, sqrtsoftplus, got 'cubic'"},
	{"T outside shapes", HEAD "  K: {default: T}\n" W G MATMUL OUT_Y ENTRY,
	 "t.yaml:5:16: unknown name 'T' (T is allowed in shapes only)"},
	{"float where an int is required", HEAD "  K: {default: H * 0.5}\n" W G MATMUL OUT_Y ENTRY,
	 "t.yaml:5:16: the default of param 'K': expected an int, got the float 4"},
	{"non-integral config value for an int param", HEAD "  K: {config: fl}\n" W G MATMUL OUT_Y ENTRY,
	 "t.yaml:5:15: param 'K': config key 'fl' in c.json is 2.5, expected an int"},
	{"cycle through after edges", HEAD W G "      - {op: matmul, out: y, in: [x, w], after: [z]}\n"
	 "      - {op: matmul, out: z, in: [y, w]}\n    outputs: [z]\n" ENTRY,
	 "t.yaml:13:9: cycle through after: edges: 'y' after 'z' after 'y'"},
	{"after names an unknown op", HEAD W G "      - {op: matmul, out: y, in: [x, w], after: [nope]}\n" OUT_Y ENTRY,
	 "t.yaml:12:50: after: no op named 'nope' in 'g'"},
	{"layers referencing an unknown block", HEAD W "blocks:\n" BLK("b", "[x]") "layers: {count: 2, pattern: [b, c]}\n" LAYERED_G ENTRY,
	 "t.yaml:13:33: layers.pattern: unknown block 'c'"},
	{"layer blocks with mismatched input/output counts",
	 HEAD W "blocks:\n" BLK("b", "[x]") BLK("c", "[x, u]") "layers: {count: 2, pattern: [b, c]}\n" LAYERED_G ENTRY,
	 "t.yaml:18:9: layers: block 'c' takes 2 input(s) and returns 1 output(s), but layers chain"},
	{"op layers without a layers mapping", HEAD W "blocks:\n" BLK("b", "[x]") LAYERED_G ENTRY,
	 "t.yaml:18:9: op layers needs a top-level 'layers' mapping"},
	{"types_from with a wrong length", HEAD W "blocks:\n" BLK("b", "[x]") "layers: {count: 3, types_from: types, map: {a: b, b: b}}\n"
	 LAYERED_G ENTRY, "t.yaml:13:32: layers.types_from: config key 'types' in c.json has 2 entries, expected 3"},
	{"types_from with an unmapped type", HEAD W "blocks:\n" BLK("b", "[x]") "layers: {count: 2, types_from: types, map: {a: b}}\n"
	 LAYERED_G ENTRY, "t.yaml:13:44: layers.map: no block for layer type 'b' (layer 1, from c.json key 'types')"},
	{"then block also a pattern block", HEAD W "blocks:\n" BLK("b", "[x]") "layers: {count: 1, pattern: [b], then: b}\n" LAYERED_G ENTRY,
	 "t.yaml:13:9: layers.then: block 'b' is also the block of layer 0"},
	{"entry naming an unknown graph", HEAD W G MATMUL OUT_Y "entries:\n  e: {graph: h, tokens: [1, 8]}\n",
	 "t.yaml:15:14: entry 'e': unknown graph 'h'"},
	{"t_min > t_max", HEAD W G MATMUL OUT_Y "entries:\n  e: {graph: g, tokens: [9, 8]}\n",
	 "t.yaml:15:25: entry 'e': t_min > t_max (9 > 8)"},
	{"bad logits mode", HEAD W G MATMUL OUT_Y "entries:\n  e: {graph: g, tokens: [1, 8], logits: first}\n",
	 "t.yaml:15:41: logits: expected one of all, last, got 'first'"},
	{"YAML syntax error", HEAD W G "      - {op: matmul, out: y, in: [x, w]\n" OUT_Y ENTRY, "t.yaml:13:5: YAML syntax error"},
	{"non-mapping where a mapping is expected", "model: m\nhf_model_types: [m]\nparams: [H]\n" W G MATMUL OUT_Y ENTRY,
	 "t.yaml:3:9: expected a mapping for params, got a list"},
	{"duplicate key", HEAD "  H: {default: 3}\n" W G MATMUL OUT_Y ENTRY, "t.yaml:5:3: duplicate key 'H' (first at line 4)"},
	{"duplicate key in an op", HEAD W G "      - {op: matmul, out: y, in: [x, w], in: [x, w]}\n" OUT_Y ENTRY,
	 "t.yaml:12:42: duplicate key 'in' (first at line 12)"},
	{"alias", HEAD W G "      - &a {op: matmul, out: y, in: [x, w]}\n      - *a\n" OUT_Y ENTRY,
	 "t.yaml:12:9: anchors and aliases are not supported"},
	{"missing required top-level key", HEAD W G MATMUL OUT_Y, "t.yaml:1:1: the model: missing required key 'entries'"},
	{"wrong number of out names", HEAD W "  cw: {shape: [H, 4], hf: cw}\nstate:\n  s: {shape: [3, H], kind: conv}\n" G
	 MATMUL "      - {op: state_read, out: so, state: s}\n      - {op: conv1d_causal, out: c, in: [y, so, cw]}\n" OUT_Y ENTRY,
	 "t.yaml:17:34: op conv1d_causal has 2 result(s) (one more: its state after each token), got 1 name(s) in out"},
	{"state_write without a name", HEAD W "state:\n  s: {shape: [4, H], kind: kv}\n" G MATMUL
	 "      - {op: state_write, state: s, in: [y]}\n" OUT_Y ENTRY, "t.yaml:15:9: state_write: missing required key 'name'"},
	{"T in a weight shape", HEAD "weights:\n  w: {shape: [T, H], hf: w}\n" G MATMUL OUT_Y ENTRY,
	 "t.yaml:6:15: unknown name 'T' (T is allowed in shapes only)"},
	{"unknown dtype", HEAD W "graphs:\n  g:\n    inputs:\n      x: {shape: [T, H], dtype: f12}\n    body:\n" MATMUL OUT_Y ENTRY,
	 "t.yaml:10:33: unknown dtype 'f12'"},
	{"second YAML document", VALID "---\nmodel: n\n", "t.yaml:17:1: a second YAML document: expected one model per file"},
	{"empty file", "", "t.yaml:1:1: empty file: expected a model mapping"},
	{"layers count zero", HEAD W "blocks:\n" BLK("b", "[x]") "layers: {count: 0, pattern: [b]}\n" LAYERED_G ENTRY,
	 "t.yaml:13:17: layers.count: expected 1 to 4096, got 0"},
	{"ops named weight are the reader's", HEAD W G "      - {op: weight, out: y}\n" OUT_Y ENTRY,
	 "t.yaml:12:14: op 'weight' is created by the reader"},
	{"two MTP layers", VALID DRAFT("2", "", D_MATMUL, "dr"), "draft: 2 MTP layers; halo serves 0 or 1"},
	{"draft entry named like a target entry", VALID DRAFT("1", "", D_MATMUL, "e"), "entry 'e' is defined twice"},
	{"export of an unknown value",
	 VALID DRAFT("1", "  state:\n    s: {shape: [8, H], kind: hidden}\n  export:\n    - {graph: g, value: nope, state: s}\n",
		     D_MATMUL, "dr"),
	 "export: graph 'g' has no value 'nope'"},
	{"export to an undeclared state", VALID DRAFT("1", "  export:\n    - {graph: g, value: y, state: s}\n", D_MATMUL, "dr"),
	 "export: unknown state 's'"},
	{"draft block aliasing the layer stack",
	 HEAD W "blocks:\n" BLK("b", "[x]") "layers: {count: 2, pattern: [b]}\n" LAYERED_G ENTRY
		 DRAFT("1", "", "        - {op: block, block: b, layer: 1, in: [x], out: [y]}\n", "dr"),
	 "op block: layer 1 would alias the layer stack (layers 0..1); use 2 or more"},
	{"draft with an unknown key", VALID "draft:\n  layers: 1\n  head: 2\n", "unknown key 'head' in draft"},
	{"undefined graph output", HEAD W G MATMUL "    outputs: [q]\n" ENTRY, "t.yaml:13:15: undefined value 'q' in outputs of 'g'"},
};

static int run_case(const err_case *c)
{
	ir_error err = {0};
	ir_module *m = ir_read_model_mem("t.yaml", c->yaml, strlen(c->yaml), "c.json", config, strlen(config), NULL, &err);
	if (m) {
		ir_module_free(m);
		fprintf(stderr, "FAIL %s: read succeeded, expected \"%s\"\n", c->name, c->expect);
		return 1;
	}
	if (!err.set || !strstr(err.msg, c->expect)) {
		fprintf(stderr, "FAIL %s:\n  got    \"%s\"\n  wanted \"%s\"\n", c->name, err.msg, c->expect);
		return 1;
	}
	return 0;
}

/* A draft section whose layer count is 0 is not read: the module is the
 * target alone. With 1 it adds its graph and its caller-positioned entry. */
static int check_draft_switch(void)
{
	static const char off[] = VALID DRAFT("0", "", D_MATMUL, "dr");
	static const char on[] = VALID DRAFT("1", "", D_MATMUL, "dr");
	ir_error err = {0};
	ir_module *a = ir_read_model_mem("t.yaml", off, strlen(off), "c.json", config, strlen(config), NULL, &err);
	ir_module *b = ir_read_model_mem("t.yaml", on, strlen(on), "c.json", config, strlen(config), NULL, &err);
	ir_read_options no = {.no_draft = true};
	ir_module *c = ir_read_model_mem("t.yaml", on, strlen(on), "c.json", config, strlen(config), &no, &err);
	int fails = 0;
	if (!a || a->n_entries != 1 || a->n_funcs != 1) {
		fprintf(stderr, "FAIL draft layers 0: %s\n", a ? "the section was read" : err.msg);
		fails++;
	}
	if (!b || b->n_entries != 2 || strcmp(b->entries[1].position, "caller") != 0) {
		fprintf(stderr, "FAIL draft layers 1: %s\n", b ? "no caller-positioned draft entry" : err.msg);
		fails++;
	}
	if (!c || c->n_entries != 1) {
		fprintf(stderr, "FAIL no_draft: %s\n", c ? "the section was read" : err.msg);
		fails++;
	}
	ir_module_free(a);
	ir_module_free(b);
	ir_module_free(c);
	return fails;
}

/* The base model reads, so each case fails for its own reason only. */
static int check_valid(void)
{
	ir_error err = {0};
	ir_module *m = ir_read_model_mem("t.yaml", VALID, strlen(VALID), "c.json", config, strlen(config), NULL, &err);
	if (!m) {
		fprintf(stderr, "FAIL base model: %s\n", err.msg);
		return 1;
	}
	ir_module_free(m);
	return 0;
}

static int check_bad_config(void)
{
	static const char bad[] = "{\"hidden\": 8,";
	ir_error err = {0};
	ir_module *m = ir_read_model_mem("t.yaml", VALID, strlen(VALID), "c.json", bad, strlen(bad), NULL, &err);
	ir_module_free(m);
	if (m || !strstr(err.msg, "c.json: invalid JSON")) {
		fprintf(stderr, "FAIL bad config: got \"%s\"\n", err.msg);
		return 1;
	}
	return 0;
}

int main(void)
{
	int fails = check_valid() + check_bad_config() + check_draft_switch();
	int n = (int)(sizeof(cases) / sizeof(cases[0]));
	for (int i = 0; i < n; i++)
		fails += run_case(&cases[i]);
	printf("%d malformed-input cases, %d failed\n", n + 1, fails);
	return fails ? 1 : 0;
}
