/* ops_gemv.cl - products with few rows (M <= GEMV_MR): a decoder's
 * token-by-token step, where every weight is read once per step and the
 * product is bound by memory, not arithmetic.  Follows ops.cl (the
 * files are joined in name order): uses its unary_op.
 *
 * gemv_small_m: Y[b][m][n] = unary_op(sum_k A[b][m][k] B[b](k, n) + bias[n])
 * (+ Z[b][m][n] when hasz), m < rows <= 8, with B(k, n) at
 * k * sbk + n * sbn (W [K, N]: sbk = N, sbn = 1; transposed: sbk = 1,
 * sbn = K).  A group of 256 items takes 8 columns of one batch item:
 * 32 slices of K, each item a partial sum over every 32nd k for its
 * column and all rows, added up through local memory; narrow tiles give
 * even a 768 x 768 product 96 groups to spread over the device.
 * Consecutive items walk the stored rows of B (along n when sbn == 1: 32
 * bytes of a row, one memory sector; along k otherwise) so that each
 * group's reads coalesce.  A's rows go to local memory first when they
 * fit.  Group g: columns 8 (g % ntiles), batch item g / ntiles; A, B and
 * Y of item b start at b * sa, b * sb, b * sy. */
#define GEMV_MR 8
#define GEMV_TN 8
#define GEMV_TK 32
#define GEMV_LOCAL_A 6144

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void gemv_small_m(__global const float *a, __global const float *b,
		  __global const float *bias, __global const float *z,
		  __global float *y, int rows, int n, int k, int sbk, int sbn,
		  int sa, int sb, int sy, int hasb, int hasz, int op)
{
	__local float part[GEMV_TK][GEMV_MR][GEMV_TN + 1];
	__local float al[GEMV_LOCAL_A];
	int t = get_local_id(0);
	int ntiles = (n + GEMV_TN - 1) / GEMV_TN;
	int g = get_group_id(0), item = g / ntiles;
	/* along n when B's rows run along n, else along k */
	int col = sbn == 1 ? t % GEMV_TN : t / GEMV_TK;
	int slice = sbn == 1 ? t / GEMV_TN : t % GEMV_TK;
	int c = (g % ntiles) * GEMV_TN + col;
	float acc[GEMV_MR];
	for (int m = 0; m < GEMV_MR; m++)
		acc[m] = 0.0f;
	a += (long)item * sa;
	b += (long)item * sb;
	/* A's rows in local memory when they fit: every item reads them */
	bool local_a = rows * k <= GEMV_LOCAL_A;
	if (local_a) {
		for (int i = t; i < rows * k; i += 256)
			al[i] = a[i];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	if (c < n) {
		__global const float *bc = b + (long)c * sbn;
		if (local_a && rows == 1) {
#pragma unroll 4
			for (int kk = slice; kk < k; kk += GEMV_TK)
				acc[0] += al[kk] * bc[(long)kk * sbk];
		} else if (local_a) {
			for (int kk = slice; kk < k; kk += GEMV_TK) {
				float w = bc[(long)kk * sbk];
				for (int m = 0; m < GEMV_MR; m++)
					if (m < rows)
						acc[m] += al[m * k + kk] * w;
			}
		} else {
			for (int kk = slice; kk < k; kk += GEMV_TK) {
				float w = bc[(long)kk * sbk];
				for (int m = 0; m < GEMV_MR; m++)
					if (m < rows)
						acc[m] += a[m * k + kk] * w;
			}
		}
	}
	for (int m = 0; m < GEMV_MR; m++)
		part[slice][m][col] = acc[m];
	barrier(CLK_LOCAL_MEM_FENCE);
	/* items t < rows x GEMV_TN: one (row, column) each */
	int m = t / GEMV_TN, cc = t % GEMV_TN;
	if (t >= GEMV_MR * GEMV_TN || m >= rows)
		return;
	c = (g % ntiles) * GEMV_TN + cc;
	if (c >= n)
		return;
	float v = 0.0f;
	for (int s = 0; s < GEMV_TK; s++)
		v += part[s][m][cc];
	if (hasb)
		v += bias[c];
	v = unary_op(v, op, 0.0f, 0.0f);
	long o = (long)item * sy + (long)m * n + c;
	y[o] = hasz ? v + z[o] : v;
}
