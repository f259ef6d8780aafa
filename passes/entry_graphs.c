#include "passes/entry_graphs.h"

int entry_graph_for(ir_module *m, int src, entry_pred marked, const char *suffix, int *first)
{
	*first = -1;
	bool shared = false;
	for (int i = 0; i < m->n_entries; i++) {
		if (m->entries[i].func != src)
			continue;
		if (!marked(m, &m->entries[i]))
			shared = true;
		else if (*first < 0)
			*first = i;
	}
	if (*first < 0)
		return -1;
	int fi = shared ? ir_func_clone(m, src, ir_arena_printf(&m->arena, "%s.%s", m->funcs[src].name, suffix)) : src;
	for (int i = *first; i < m->n_entries; i++)
		if (m->entries[i].func == src && marked(m, &m->entries[i]))
			m->entries[i].func = fi;
	return fi;
}
