// attention_combine: part [T,HQ,NBLK,DV+2] (the key blocks of
// sink_attention_partial) -> y [T,HQ,DV]. The twin of
// kernels/vulkan/attention_combine.comp: one workgroup per (head, token)
// merges the row's blocks (attention_merge.hip, which declares part and y).
// Grid: x = HQ, y = T.

void main()
{
	merge_row(gl_WorkGroupID.y * HQ + gl_WorkGroupID.x, NBLK);
}
