/* Canonical dumps of a module: fixed key order, %.9g numbers, nodes in
 * function order, shapes printed with T, dead nodes skipped. The same module
 * always prints the same bytes, so dumps serve as golden files and diffs. */
#ifndef HALO_IR_DUMP_H
#define HALO_IR_DUMP_H

#include <stdio.h>

#include "ir/ir.h"

/* YAML (valid YAML 1.1, readable by libyaml). Writes to out; owns nothing. */
void ir_dump_yaml(const ir_module *m, FILE *out);
/* Graphviz DOT: one cluster per function, data edges labelled by value,
 * after: edges dashed. */
void ir_dump_dot(const ir_module *m, FILE *out);

/* Shared by both dumps: "[T, 64] f32" or "?" for a value whose shape is not
 * known yet; the name of value id (or "%<id>" when it has none). Both write
 * into buf and return it. */
const char *ir_dump_value_type(const ir_value *v, char *buf, size_t len);
const char *ir_dump_value_name(const ir_func *f, int id, char *buf, size_t len);
/* "%.9g", with ".0" appended when that reads as an int, so floats stay floats. */
const char *ir_dump_float(double f, char *buf, size_t len);

#endif
