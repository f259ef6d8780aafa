// The rotary embedding's arithmetic, shared by rope.comp and attention.comp
// (attention_rope): the template defines at(base, i, inv), channel i of the
// head at base as rotated (normalised with inv where it normalises), after
// this file; THETA[i] is the frequency table (codegen/kernel_variant.c:
// rope_table), ROT the rotated channels of D, HALF = ROT / 2. The angle is
// the f32 product position * THETA[i] (the reference's where its angles are
// f32, and transformers'), reduced before cos and sin (reduce_2pi).
float at(uint base, uint i, float inv);

// The rest of rope's attributes, each defined only when it applies:
// ROPE_INVERSE rotates by -angle, ROPE_OFFSET moves every position by that
// many (a negative position included).
#ifdef ROPE_INVERSE
#define ROPE_SIN(a) (-sin(a))
#else
#define ROPE_SIN(a) sin(a)
#endif
#ifdef ROPE_OFFSET
#define ROPE_POS(t) float(int(step_pos + (t)) + ROPE_OFFSET)
#else
#define ROPE_POS(t) float(step_pos + (t))
#endif

#ifdef ROPE_TAIL
// Channel i of the head at base, rotated for position p: DeepSeek V4's
// interleaved tail, pair k of adjacent channels (D - ROT + 2k, +1) on the
// last ROT; the first D - ROT pass through.
float rotated(uint base, uint i, float p, float inv)
{
	if (i < D - ROT)
		return at(base, i, inv);
	uint k = i - (D - ROT);
	float a = reduce_2pi(p * THETA[k / 2u]);
	if (k % 2u == 0u)
		return at(base, i, inv) * cos(a) - at(base, i + 1u, inv) * ROPE_SIN(a);
	return at(base, i, inv) * cos(a) + at(base, i - 1u, inv) * ROPE_SIN(a);
}
#else
// Channel i of the head at base, rotated for position p.
float rotated(uint base, uint i, float p, float inv)
{
	if (i < HALF) {
		float a = reduce_2pi(p * THETA[i]);
		return at(base, i, inv) * cos(a) - at(base, i + HALF, inv) * ROPE_SIN(a);
	}
	if (i < ROT) {
		float a = reduce_2pi(p * THETA[i - HALF]);
		return at(base, i, inv) * cos(a) + at(base, i - HALF, inv) * ROPE_SIN(a);
	}
	return at(base, i, inv);
}
#endif
