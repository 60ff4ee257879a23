/* ocl_blast.c - the CLBlast calls the dense operators make (Conv's
 * im2col product, Gemm, MatMul, Dense, Attention), their statuses in
 * words, and their device time in the profile (slot K_COUNT).
 */
#include "ocl_blast.h"

#include <pthread.h>

static const char *clblast_str(CLBlastStatusCode s)
{
	switch (s) {
	case CLBlastSuccess: return "success";
	case CLBlastOpenCLCompilerNotAvailable: return "OpenCL compiler not available";
	case CLBlastTempBufferAllocFailure: return "temporary buffer allocation failed";
	case CLBlastOpenCLOutOfResources: return "out of resources";
	case CLBlastOpenCLOutOfHostMemory: return "out of host memory";
	case CLBlastOpenCLBuildProgramFailure: return "kernel build failed";
	case CLBlastInvalidValue: return "invalid value";
	case CLBlastInvalidCommandQueue: return "invalid command queue";
	case CLBlastInvalidMemObject: return "invalid memory object";
	case CLBlastInvalidBinary: return "invalid binary";
	case CLBlastInvalidBuildOptions: return "invalid build options";
	case CLBlastInvalidProgram: return "invalid program";
	case CLBlastInvalidProgramExecutable: return "invalid program executable";
	case CLBlastInvalidKernelName: return "invalid kernel name";
	case CLBlastInvalidKernelDefinition: return "invalid kernel definition";
	case CLBlastInvalidKernel: return "invalid kernel";
	case CLBlastInvalidArgIndex: return "invalid argument index";
	case CLBlastInvalidArgValue: return "invalid argument value";
	case CLBlastInvalidArgSize: return "invalid argument size";
	case CLBlastInvalidKernelArgs: return "invalid kernel arguments";
	case CLBlastInvalidLocalNumDimensions: return "invalid local dimensions";
	case CLBlastInvalidLocalThreadsTotal: return "too many local threads";
	case CLBlastInvalidLocalThreadsDim: return "invalid local threads";
	case CLBlastInvalidGlobalOffset: return "invalid global offset";
	case CLBlastInvalidEventWaitList: return "invalid event wait list";
	case CLBlastInvalidEvent: return "invalid event";
	case CLBlastInvalidOperation: return "invalid operation";
	case CLBlastInvalidBufferSize: return "invalid buffer size";
	case CLBlastInvalidGlobalWorkSize: return "invalid global work size";
	case CLBlastNotImplemented: return "not implemented";
	case CLBlastInsufficientMemoryA: return "buffer A too small";
	case CLBlastInsufficientMemoryB: return "buffer B too small";
	case CLBlastInsufficientMemoryC: return "buffer C too small";
	case CLBlastInvalidLeadDimA: return "bad leading dimension of A";
	case CLBlastInvalidLeadDimB: return "bad leading dimension of B";
	case CLBlastInvalidLeadDimC: return "bad leading dimension of C";
	case CLBlastInvalidMatrixA: return "invalid matrix A";
	case CLBlastInvalidMatrixB: return "invalid matrix B";
	case CLBlastInvalidMatrixC: return "invalid matrix C";
	case CLBlastInvalidLocalMemUsage: return "too much local memory";
	case CLBlastNoHalfPrecision: return "no half precision";
	case CLBlastNoDoublePrecision: return "no double precision";
	default: return "CLBlast error";
	}
}

int ocl_blast_fail(ocl_run *r, CLBlastStatusCode s, const char *what)
{
	int code = (s == CLBlastTempBufferAllocFailure || s == CLBlastOpenCLOutOfResources ||
		    s == CLBlastOpenCLOutOfHostMemory) ? ENOMEM : EIO;
	return mfs_node_fail(r->nd, r->err, code, "CLBlast %s failed: %s (%d)",
			     what, clblast_str(s), (int)s);
}

/* CLBlast builds a routine object per call, and that construction
 * (its tuning database, its program cache) is not safe from two threads
 * at once: two models timing OpenCL in parallel loads crashed in
 * clblast::Database's copy.  A call only enqueues work (the first per
 * shape also compiles), so one lock around each call costs little. */
static pthread_mutex_t clblast_lock = PTHREAD_MUTEX_INITIALIZER;

void ocl_blast_lock(void)
{
	pthread_mutex_lock(&clblast_lock);
}

void ocl_blast_unlock(void)
{
	pthread_mutex_unlock(&clblast_lock);
}

int ocl_sgemm(ocl_run *r, bool ta, bool tb, size_t m, size_t n, size_t k,
	      float alpha, cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff,
	      size_t ldb, float beta, cl_mem c, size_t coff, size_t ldc)
{
	CLBlastStatusCode s;
	cl_event ev;
	if (!m || !n)
		return 0;
	pthread_mutex_lock(&clblast_lock);
	s = CLBlastSgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
			 tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha,
			 a, aoff, lda, b, boff, ldb, beta, c, coff, ldc, ocl_queue(r),
			 ocl_prof_event(r, &ev));
	pthread_mutex_unlock(&clblast_lock);
	if (s != CLBlastSuccess)
		return ocl_blast_fail(r, s, "Sgemm");
	ocl_prof_add(r, ev, K_COUNT);
	return 0;
}

int ocl_sgemm_batched(ocl_run *r, size_t m, size_t n, size_t k, float alpha,
		      cl_mem a, size_t lda, size_t sa, cl_mem b, size_t ldb, size_t sb,
		      cl_mem c, size_t ldc, size_t sc, size_t batch)
{
	CLBlastStatusCode s;
	cl_event ev;
	if (!m || !n || !batch)
		return 0;
	pthread_mutex_lock(&clblast_lock);
	s = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo,
				       CLBlastTransposeNo, m, n, k, alpha, a, 0, lda, sa, b, 0,
				       ldb, sb, 0.0f, c, 0, ldc, sc, batch, ocl_queue(r),
				       ocl_prof_event(r, &ev));
	pthread_mutex_unlock(&clblast_lock);
	if (s != CLBlastSuccess)
		return ocl_blast_fail(r, s, "SgemmStridedBatched");
	ocl_prof_add(r, ev, K_COUNT);
	return 0;
}
