/* elementwise.h - the machinery every elementwise operator shares.
 *
 * An elementwise operator is a table of kernels, one per input dtype
 * (ew_table), plus its attributes read into an ew_params.  The driver
 * (ew_apply) broadcasts the inputs numpy-style against the output shape,
 * collapses the shapes into the fewest dims, and calls the kernel on runs of
 * the innermost dim along which every input advances by 0 or 1 element.
 * The same-shape, scalar and per-channel (NCHW + [C,1,1]) cases each become
 * long runs with a fixed step pattern, for which the kernel macros below
 * emit separate loops that the compiler vectorises (and builds for AVX2
 * and AVX-512 too, see EW_TARGETS).  Row broadcasts ([M,N] + [N]) become
 * one run per row, or one run over a tile of repeated rows when rows are
 * short.  Work above EW_PAR_MIN elements is split over OpenMP threads.
 *
 * float16 and bfloat16 are computed in float: when a table has no kernel
 * for them, ew_run converts blocks of each run to float on the stack
 * (F16C where the CPU has it), calls the float kernel and converts the
 * result back (no allocation).
 *
 * Layout: the elementwise ops carry MFS_OP_NHWC_OK.  With NHWC data every
 * input must be NHWC of the output's shape, or plain with its bytes in the
 * same order when viewed as NHWC: one element, a per-channel [C,1,1], a
 * per-pixel [1,1,H,W] (ew_check_layout; anything else is ENOTSUP, which
 * tells the engine's layout planner to keep those values plain).  The
 * driver then works on the shapes in storage order.
 *
 * Integer division and modulo by zero give 0 (as numpy does), never SIGFPE;
 * INT_MIN / -1 wraps to INT_MIN.
 */
#ifndef MFS_OPS_ELEMENTWISE_H
#define MFS_OPS_ELEMENTWISE_H

#include <stdint.h>

#include "op.h"
#include "vmath.h"      /* also relaxes trapping-math/errno for the kernels */

#define EW_NDT 17              /* dtype numbers 0..16 index the tables */
#define EW_MAX_IN 3            /* Where has three inputs */
#define EW_PAR_MIN 32768       /* elements below which one thread runs */

typedef struct ew_params {
	double a, b, c;          /* float attributes (alpha, beta, ...) */
	int64_t i;               /* an int attribute, or a dtype (Cast) */
	const void *lo, *hi;     /* Clip bounds in the kernel's type; NULL: none */
	mfs_dtype dt_a, dt_b;    /* Pow: operand types */
	const void *aux;         /* the driver's own (float16 adapter) */
} ew_params;

/* A kernel: out[j] = f(in[0][j * step[0]], in[1][j * step[1]], ...) for
 * j < n, where each step is 0 (broadcast) or 1. */
typedef void (*ew_fn)(char *out, const char *const *in, const int64_t *step,
		      int64_t n, const ew_params *p);

typedef struct ew_table {
	int arity;               /* inputs the op takes; 0: one or more */
	ew_fn fn[EW_NDT];        /* by the dispatch input's dtype; NULL: refused */
} ew_table;

static inline bool ew_is_half(mfs_dtype dt)
{
	return dt == MFS_DT_FLOAT16 || dt == MFS_DT_BFLOAT16;
}

static inline bool ew_is_float(mfs_dtype dt)
{
	return dt == MFS_DT_FLOAT || dt == MFS_DT_DOUBLE || ew_is_half(dt);
}

/* True when tab can run dt (directly or, for half types, through float). */
bool ew_table_has(const ew_table *tab, mfs_dtype dt);

/* n float16 (dt FLOAT16) or bfloat16 values to float and back, rounding
 * to nearest even; F16C instructions where the CPU has them. */
void ew_half_load(float *d, const uint16_t *s, int64_t n, mfs_dtype dt);
void ew_half_store(uint16_t *d, const float *s, int64_t n, mfs_dtype dt);

/* Run fn over out = f(in...), each in[k] broadcast to out->shape.  Inputs
 * must have the dtypes fn expects; out is allocated. */
void ew_apply(ew_fn fn, const mfs_tensor *const *in, int n_in, mfs_tensor *out,
	      const ew_params *p);

/* ew_apply with the kernel chosen from tab by in[0]'s dtype; float16 and
 * bfloat16 inputs (and output) go through tab's float kernel when tab has
 * none of their own.  -ENOTSUP with ctx->err. */
int ew_run(mfs_op_ctx *ctx, const ew_table *tab, const mfs_tensor *const *in,
	   int n_in, mfs_tensor *out, const ew_params *p);

/* The output's layout for inputs in[0..n_in-1] broadcast to shape: NHWC
 * when some input is NHWC and the mix is one the ops can handle, else
 * PLAIN; -ENOTSUP for any other mix (see the header comment). */
int ew_check_layout(mfs_op_ctx *ctx, const mfs_tensor *const *in, int n_in,
		    const mfs_shape *shape, mfs_layout *layout);

/* Input b as the binary op sees it: for opset < 7 with broadcast=1, B's
 * dims are placed at A's `axis` (legacy broadcasting) and padded with 1s;
 * otherwise *b unchanged.  The result shares b's data. */
mfs_tensor ew_legacy_operand(const mfs_op_ctx *ctx, const mfs_tensor *a,
			     const mfs_tensor *b);

/* Infer/run for an operator whose inputs (all of one dtype) broadcast
 * together: unary, binary and variadic (Sum, Max...).  out_dt is the
 * output's dtype, or UNDEFINED for "the input's".  Infer checks that every
 * input has the same dtype and that tab supports it. */
int ew_infer(mfs_op_ctx *ctx, const ew_table *tab, mfs_dtype out_dt);
/* One kernel over all inputs at once (unary and binary ops). */
int ew_run_all(mfs_op_ctx *ctx, const ew_table *tab, const ew_params *p);
/* Variadic fold: out = in0; out = f(out, in_k) for k >= 1; then, when post
 * is non-NULL, out = post(out) (Mean's division). */
int ew_run_fold(mfs_op_ctx *ctx, const ew_table *tab, const ew_table *post,
		const ew_params *p);

/* Infer for an operator whose output dtype is independent of the tables
 * (Pow, Where): broadcast in[first..n_in-1] and set out[0]'s shape, layout
 * and the given dtype. */
int ew_infer_shape(mfs_op_ctx *ctx, int first, mfs_dtype out_dt);

/* Wrappers so an operator file states only its table and its attributes:
 * EW_OP_FUNCS(relu, &relu_tab, MFS_DT_UNDEFINED, NULL) defines relu_infer
 * and relu_run; params_fn (or NULL) fills an ew_params from attributes. */
#define EW_OP_FUNCS(name, tab, out_dt, params_fn)                           \
	static int name##_infer(mfs_op_ctx *ctx)                            \
	{                                                                   \
		return ew_infer(ctx, tab, out_dt);                          \
	}                                                                   \
	static int name##_run(mfs_op_ctx *ctx)                              \
	{                                                                   \
		ew_params p = { 0 };                                        \
		int (*pf)(mfs_op_ctx *, ew_params *) = params_fn;           \
		int rc = pf ? pf(ctx, &p) : 0;                              \
		return rc < 0 ? rc : ew_run_all(ctx, tab, &p);              \
	}

/* The same for an operator whose table depends on an attribute (Mod's
 * fmod, BitShift's direction): choose(ctx) returns the table, or NULL
 * after failing with EINVAL. */
#define EW_OP_FUNCS_SELECT(name, choose, out_dt)                            \
	static int name##_infer(mfs_op_ctx *ctx)                            \
	{                                                                   \
		const ew_table *tab = choose(ctx);                          \
		return tab ? ew_infer(ctx, tab, out_dt) : -EINVAL;          \
	}                                                                   \
	static int name##_run(mfs_op_ctx *ctx)                              \
	{                                                                   \
		const ew_table *tab = choose(ctx);                          \
		ew_params p = { 0 };                                        \
		return tab ? ew_run_all(ctx, tab, &p) : -EINVAL;            \
	}

/* ---- kernel generators ------------------------------------------------
 *
 * Type lists: X(suffix, C type, dtype, args...) for each member. */
#define EW_T_FLOAT(X, ...)                                                  \
	X(f32, float, MFS_DT_FLOAT, __VA_ARGS__)                            \
	X(f64, double, MFS_DT_DOUBLE, __VA_ARGS__)
#define EW_T_SINT(X, ...)                                                   \
	X(i8, int8_t, MFS_DT_INT8, __VA_ARGS__)                             \
	X(i16, int16_t, MFS_DT_INT16, __VA_ARGS__)                          \
	X(i32, int32_t, MFS_DT_INT32, __VA_ARGS__)                          \
	X(i64, int64_t, MFS_DT_INT64, __VA_ARGS__)
#define EW_T_UINT(X, ...)                                                   \
	X(u8, uint8_t, MFS_DT_UINT8, __VA_ARGS__)                           \
	X(u16, uint16_t, MFS_DT_UINT16, __VA_ARGS__)                        \
	X(u32, uint32_t, MFS_DT_UINT32, __VA_ARGS__)                        \
	X(u64, uint64_t, MFS_DT_UINT64, __VA_ARGS__)
#define EW_T_INT(X, ...) EW_T_SINT(X, __VA_ARGS__) EW_T_UINT(X, __VA_ARGS__)
#define EW_T_NUM(X, ...) EW_T_FLOAT(X, __VA_ARGS__) EW_T_INT(X, __VA_ARGS__)
#define EW_T_BOOL(X, ...) X(b, uint8_t, MFS_DT_BOOL, __VA_ARGS__)

/* Table entries for kernels named name_<suffix>. */
#define EW_ENTRY(sfx, T, DT, name, ...) [DT] = name##_##sfx,

/* -O2 leaves loops of unknown length scalar (GCC's very-cheap cost
 * model); `omp simd` asks for vectors regardless. */
#define EW_SIMD _Pragma("omp simd")

/* Kernels are built for AVX-512 and AVX2+FMA as well as the baseline
 * x86-64 the Makefile targets, and the loader picks the best the CPU has
 * (GCC function multiversioning).  no-trapping-math: GCC will not turn a
 * select whose arm computes (x < 0 ? a * x : x) into a vector blend while
 * FP exceptions are observable; nothing here reads the exception flags.
 * (A file-level pragma does not reach the clones.)  Not under clang. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EW_TARGETS                                                          \
	__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), \
		       optimize("no-trapping-math")))
#else
#define EW_TARGETS
#endif

/* Unary kernel name(out, in...) computing EXPR of x (type T) into TO. */
#define EW_UNARY_KERNEL(name, T, TO, ...)                                   \
	EW_TARGETS static void name(char *out_, const char *const *in,                 \
			 const int64_t *step, int64_t n, const ew_params *p)  \
	{                                                                   \
		const T *a = (const T *)in[0];                              \
		TO *o = (TO *)out_;                                         \
		typedef T ew_t __attribute__((unused));                     \
		const double pa = p->a, pb = p->b, pc = p->c;               \
		(void)pa, (void)pb, (void)pc;                               \
		if (step[0]) {                                              \
			EW_SIMD                                             \
			for (int64_t j = 0; j < n; j++) {                   \
				T x = a[j];                                 \
				o[j] = (TO)(__VA_ARGS__);                   \
			}                                                   \
		} else {                                                    \
			T x = a[0];                                         \
			TO r = (TO)(__VA_ARGS__);                           \
			for (int64_t j = 0; j < n; j++)                     \
				o[j] = r;                                   \
		}                                                           \
	}

/* Binary kernel computing EXPR of x, y (type T) into TO, one loop per step
 * pattern so each vectorises. */
#define EW_BINARY_KERNEL(name, T, TO, ...)                                  \
	EW_TARGETS static void name(char *out_, const char *const *in,                 \
			 const int64_t *step, int64_t n, const ew_params *p)  \
	{                                                                   \
		const T *a = (const T *)in[0], *b = (const T *)in[1];       \
		TO *o = (TO *)out_;                                         \
		typedef T ew_t __attribute__((unused));                     \
		const double pa = p->a, pb = p->b, pc = p->c;               \
		(void)pa, (void)pb, (void)pc;                               \
		if (step[0] && step[1]) {                                   \
			EW_SIMD                                             \
			for (int64_t j = 0; j < n; j++) {                   \
				T x = a[j], y = b[j];                       \
				o[j] = (TO)(__VA_ARGS__);                   \
			}                                                   \
		} else if (step[0]) {                                       \
			T y = b[0];                                         \
			EW_SIMD                                             \
			for (int64_t j = 0; j < n; j++) {                   \
				T x = a[j];                                 \
				o[j] = (TO)(__VA_ARGS__);                   \
			}                                                   \
		} else if (step[1]) {                                       \
			T x = a[0];                                         \
			EW_SIMD                                             \
			for (int64_t j = 0; j < n; j++) {                   \
				T y = b[j];                                 \
				o[j] = (TO)(__VA_ARGS__);                   \
			}                                                   \
		} else {                                                    \
			T x = a[0], y = b[0];                               \
			TO r = (TO)(__VA_ARGS__);                           \
			for (int64_t j = 0; j < n; j++)                     \
				o[j] = r;                                   \
		}                                                           \
	}

/* Adapters for the type lists: define name_<suffix> for each type. */
#define EW_DEF_UNARY(sfx, T, DT, name, ...)                                 \
	EW_UNARY_KERNEL(name##_##sfx, T, T, __VA_ARGS__)
#define EW_DEF_UNARY_BOOL(sfx, T, DT, name, ...)                            \
	EW_UNARY_KERNEL(name##_##sfx, T, uint8_t, __VA_ARGS__)
#define EW_DEF_BINARY(sfx, T, DT, name, ...)                                \
	EW_BINARY_KERNEL(name##_##sfx, T, T, __VA_ARGS__)
#define EW_DEF_BINARY_BOOL(sfx, T, DT, name, ...)                           \
	EW_BINARY_KERNEL(name##_##sfx, T, uint8_t, __VA_ARGS__)

/* In a kernel expression, ew_t names the input element type and pa, pb,
 * pc are p->a, p->b, p->c read once before the loop (a load inside a
 * select arm would keep the loop scalar). */

/* Integer division and remainder that cannot trap: x/0 = 0, x%0 = 0,
 * MIN/-1 = MIN (wrapped), MIN%-1 = 0.  Python-style remainder for Mod with
 * fmod=0 takes the divisor's sign. */
#define EW_SDIV(T, x, y)                                                    \
	((y) == 0 ? (T)0 : (y) == -1 ? (T)(0 - (uint64_t)(x)) : (T)((x) / (y)))
#define EW_UDIV(T, x, y) ((y) == 0 ? (T)0 : (T)((x) / (y)))
#define EW_SREM(T, x, y) ((y) == 0 || (y) == -1 ? (T)0 : (T)((x) % (y)))
#define EW_UREM(T, x, y) ((y) == 0 ? (T)0 : (T)((x) % (y)))

#endif
