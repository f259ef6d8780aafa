// moe_experts: x [T,H], ids [T,KSEL] i32, w [T,KSEL], gate/up [E,F,H],
// down [E,H,F] -> y [T,H]: y[t] = sum_j w[t,j] down[e] (silu(gate[e] x[t]) *
// up[e] x[t]), e = ids[t,j] (an id outside [0,E) reads expert 0).
// One workgroup per token runs its KSEL experts in j order: lane l computes
// the activations f = l, l + LS_X, ... (dots over h in order) into shared
// memory, then accumulates outputs h = l, l + LS_X, ... (dots over f in
// order). Each output is summed over j in order inside one lane, so a token's
// result never depends on T and there are no atomics.
// Expert weights are f32 or f16 (WTYPE_F16, read as 32-bit words).
// Grid: x = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_IDS) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = B_WR) readonly buffer WR { float wr[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

#if WTYPE_F16
layout(set = 0, binding = B_GATE) readonly buffer Gate { uint gate_w[]; };
layout(set = 0, binding = B_UP) readonly buffer Up { uint up_w[]; };
layout(set = 0, binding = B_DOWN) readonly buffer Down { uint down_w[]; };
#define HALF_AT(buf, i) (((i) & 1u) == 0u ? unpackHalf2x16(buf[(i) >> 1]).x : unpackHalf2x16(buf[(i) >> 1]).y)
float load_gate(uint i) { return HALF_AT(gate_w, i); }
float load_up(uint i) { return HALF_AT(up_w, i); }
float load_down(uint i) { return HALF_AT(down_w, i); }
#else
layout(set = 0, binding = B_GATE) readonly buffer Gate { float gate_w[]; };
layout(set = 0, binding = B_UP) readonly buffer Up { float up_w[]; };
layout(set = 0, binding = B_DOWN) readonly buffer Down { float down_w[]; };
float load_gate(uint i) { return gate_w[i]; }
float load_up(uint i) { return up_w[i]; }
float load_down(uint i) { return down_w[i]; }
#endif

#define HPL ((H + LS_X - 1u) / LS_X)
shared float xs[H];
shared float act[F];

void expert_act(uint l, uint e)
{
	for (uint f = l; f < F; f += LS_X) {
		uint wb = (e * F + f) * H;
		float g = 0.0, u = 0.0;
		for (uint h = 0u; h < H; h++) {
			g += load_gate(wb + h) * xs[h];
			u += load_up(wb + h) * xs[h];
		}
		act[f] = silu_f(g) * u;
	}
}

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.x;
	for (uint h = l; h < H; h += LS_X)
		xs[h] = x[t * H + h];
	float acc[HPL];
	for (uint hi = 0u; hi < HPL; hi++)
		acc[hi] = 0.0;
	for (uint j = 0u; j < KSEL; j++) {
		int id = ids[t * KSEL + j];
		uint e = id < 0 || id >= int(E) ? 0u : uint(id);
		float wj = wr[t * KSEL + j];
		barrier(); // xs is loaded; the previous expert is done with act
		expert_act(l, e);
		barrier();
		for (uint hi = 0u; hi < HPL; hi++) {
			uint h = l + hi * LS_X;
			if (h >= H)
				break;
			uint db = (e * H + h) * F;
			float d = 0.0;
			for (uint f = 0u; f < F; f++)
				d += load_down(db + f) * act[f];
			acc[hi] += wj * d;
		}
	}
	for (uint hi = 0u; hi < HPL; hi++) {
		uint h = l + hi * LS_X;
		if (h < H)
			y[t * H + h] = acc[hi];
	}
}
