/* MT19937 (Matsumoto and Nishimura, 1998) with numpy's 53-bit doubles:
 * see mt19937.h for why this generator. */
#include "mt19937.h"

#define MT_N 624
#define MT_M 397

void mfs_mt19937_seed(mfs_mt19937 *g, uint32_t seed)
{
	g->mt[0] = seed;
	for (int i = 1; i < MT_N; i++)
		g->mt[i] = 1812433253u * (g->mt[i - 1] ^ (g->mt[i - 1] >> 30)) + (uint32_t)i;
	g->index = MT_N;
}

/* Refill the 624 words of state (the "twist"). */
static void twist(mfs_mt19937 *g)
{
	for (int i = 0; i < MT_N; i++) {
		uint32_t y = (g->mt[i] & 0x80000000u) | (g->mt[(i + 1) % MT_N] & 0x7fffffffu);
		g->mt[i] = g->mt[(i + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
	}
	g->index = 0;
}

uint32_t mfs_mt19937_next(mfs_mt19937 *g)
{
	uint32_t y;

	if (g->index >= MT_N)
		twist(g);
	y = g->mt[g->index++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

double mfs_mt19937_double(mfs_mt19937 *g)
{
	uint32_t a = mfs_mt19937_next(g) >> 5, b = mfs_mt19937_next(g) >> 6;
	return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}
