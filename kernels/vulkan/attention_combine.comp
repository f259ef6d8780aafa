// attention_combine: part [T,HQ,NBLK,DV+2] (the key blocks of
// sink_attention_partial) -> y [T,HQ,DV]. One workgroup per (head, token)
// (grid x = HQ, y = T) merges the row's blocks (attention_merge.glsl, which
// declares part and y). Nothing depends on T.

void main()
{
	merge_row(gl_WorkGroupID.y * HQ + gl_WorkGroupID.x, NBLK);
}
