/* mt19937.h - the Mersenne Twister MT19937 stream as numpy's legacy
 * generator draws it (np.random.seed(s); np.random.random_sample()).
 *
 * Why numpy's: the ONNX reference outputs of seeded random operators
 * (Dropout in training mode) come from that generator, so a seeded node
 * reproduces them exactly, and a user can reproduce a mask in Python.
 * Seeding is MT19937's init_genrand with the seed taken modulo 2^32
 * (numpy accepts 0 <= seed < 2^32 for an integer seed). */
#ifndef MFS_MT19937_H
#define MFS_MT19937_H

#include <stdint.h>

typedef struct mfs_mt19937 {
	uint32_t mt[624];
	int index;
} mfs_mt19937;

void mfs_mt19937_seed(mfs_mt19937 *g, uint32_t seed);
/* The next 32-bit output (genrand_int32). */
uint32_t mfs_mt19937_next(mfs_mt19937 *g);
/* A double in [0, 1) with 53 random bits, as numpy's random_sample:
 * (a >> 5) * 2^26 + (b >> 6), over 2^53. */
double mfs_mt19937_double(mfs_mt19937 *g);

#endif
