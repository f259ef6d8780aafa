// elementwise: y[i] = epilogue(main_op(i), i) for i < NUMEL (affine in T).
// main_op and epilogue are generated from the node's op and fused chain
// (codegen/kernel_variant.c): unary silu/sigmoid/softplus/exp/neg/scale,
// binary add/sub/mul/swiglu with docs/ops.md broadcasting.
// Grid: x = ceil(NUMEL / LS_X).

void main()
{
	uint i = gl_GlobalInvocationID.x;
	if (i < AFF(NUMEL))
		y[i] = epilogue(main_op(i), i);
}
