// elementwise: y[i] = epilogue(main_op(i), i) for i < NUMEL (affine in T).
// The twin of kernels/vulkan/elementwise.comp; main_op, epilogue and the
// buffers a, b, y are generated (codegen/emit_hip.c).
// Grid: x = ceil(NUMEL / LS_X).
// @struct

void main()
{
	uint i = gl_GlobalInvocationID.x;
	if (i < AFF(NUMEL))
		y[i] = epilogue(main_op(i), i);
}
