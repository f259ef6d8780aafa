// concat: row r of y is row r of a (WA elements) then row r of b (WB), for
// r < ROWS; ROWS, WA and WB are affine in T (at most one of them uses T).
// Grid: x = ceil((WA + WB) / LS_X), y = ROWS.

layout(set = 0, binding = B_A) readonly buffer A { float a[]; };
layout(set = 0, binding = B_B) readonly buffer B { float b[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

void main()
{
	uint r = gl_WorkGroupID.y;
	uint j = gl_GlobalInvocationID.x;
	uint wa = AFF(WA), wb = AFF(WB);
	if (j >= wa + wb)
		return;
	y[r * (wa + wb) + j] = j < wa ? a[r * wa + j] : b[r * wb + j - wa];
}
