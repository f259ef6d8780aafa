// concat: row r of y is row r of a (WA elements) then row r of b (WB), for
// r < ROWS; ROWS, WA and WB are affine in T. The twin of
// kernels/vulkan/concat.comp.
// Grid: x = ceil((WA + WB) / LS_X), y = ROWS.
// @struct

const float *__restrict__ a = (const float *)args.b[B_A];
const float *__restrict__ b = (const float *)args.b[B_B];
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint r = gl_WorkGroupID.y;
	uint j = gl_GlobalInvocationID.x;
	uint wa = AFF(WA), wb = AFF(WB);
	if (j >= wa + wb)
		return;
	y[r * (wa + wb) + j] = j < wa ? a[r * wa + j] : b[r * wb + j - wa];
}
