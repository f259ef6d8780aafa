/* The memory view of a plan (see plan_dump.h). */
#include "passes/plan_dump.h"

#include <string.h>

void plan_dump_memory(const ir_module *m, const halo_plan *p, const plan_entry *e, FILE *out)
{
	fprintf(out, "# entry %s: T <= %lld\n", e->name, (long long)e->t_max);
	fprintf(out, "activation_bytes: %lld\n", (long long)e->act_bytes);
	fprintf(out, "activation_live_peak_bytes: %lld\n", (long long)e->live_peak_bytes);
	fprintf(out, "state_bytes: %lld\n", (long long)p->state_bytes);
	/* of which per-token slots of the recurrent states (recurrent: slots entries) */
	int64_t slot_bytes = 0;
	for (int b = 0; b < e->n_buffers; b++)
		if (e->buffers[b].region == PLAN_STATE && !strcmp(m->states[e->buffers[b].ref].kind, "slots"))
			slot_bytes += e->buffers[b].size;
	fprintf(out, "state_slot_bytes: %lld\n", (long long)slot_bytes);
	fprintf(out, "weight_bytes: %lld\n", (long long)p->weight_bytes);
	fprintf(out, "# region offset size live name\n");
	for (int b = 0; b < e->n_buffers; b++) {
		const plan_buffer *buf = &e->buffers[b];
		fprintf(out, "%-6s %12lld %12lld ", plan_region_name(buf->region), (long long)buf->offset,
			(long long)buf->size);
		if (buf->region == PLAN_ACT)
			fprintf(out, "%5d..%-5d ", buf->first, buf->last);
		else
			fputs("     -      ", out);
		fprintf(out, "%s\n", buf->name ? buf->name : "?");
	}
}
