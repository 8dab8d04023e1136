/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The few CUDA Driver API types, constants and signatures the preload
 * library needs, written from NVIDIA's documented ABI so that the library
 * (and its tests' fake libcuda) build without the CUDA toolkit. Values are
 * those of cuda.h (CUDA 12/13); every handle is an opaque pointer.
 *
 * Internal to hal/nvidia (not installed).
 */
#ifndef GPUEXT_NV_CUDA_H
#define GPUEXT_NV_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUlinkState_st *CUlinkState;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef int CUjit_option;
typedef int CUlibraryOption;
typedef int CUjitInputType;
typedef int CUfunction_attribute;
typedef int CUfunc_cache;
typedef int CUsharedconfig;
/* CUfunction_attribute values read by the flat-twin check (nv_launch.c), as in cuda.h */
#define CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1
#define CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES 3
#define CU_FUNC_ATTRIBUTE_NUM_REGS 4

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES 701
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_SUPPORTED 801

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

#define CU_JIT_INFO_LOG_BUFFER 3
#define CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define CU_JIT_TARGET 9
#define CU_JIT_INPUT_CUBIN 0
#define CU_JIT_INPUT_PTX 1

#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_STREAM_NON_BLOCKING 0x1

/* cuGetProcAddress flags (CUdriverProcAddress_flags). */
#define CU_GET_PROC_ADDRESS_DEFAULT 0
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM 1
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

/* CUlaunchConfig (cuLaunchKernelEx); attributes are passed through untouched. */
typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned numAttrs;
} CUlaunchConfig;
/* One entry of CUlaunchConfig.attrs: id, 4 bytes of padding, a 64-byte value. */
#define CU_LAUNCH_ATTRIBUTE_BYTES 72
#define CU_LAUNCH_ATTRIBUTE_COOPERATIVE 2

/* CUDA_KERNEL_NODE_PARAMS v1 is a prefix of v2 (which adds kern, ctx). */
typedef struct {
	CUfunction func;
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	void **kernelParams;
	void **extra;
	CUkernel kern;		/* v2 only: used when func is NULL */
	CUcontext ctx;		/* v2 only */
} CUDA_KERNEL_NODE_PARAMS_v2;

/*
 * A node of any type (cuGraphAddNode, cuGraphNodeSetParams,
 * cuGraphExecNodeSetParams: CUDA 12.2). Its kernel member is a
 * CUDA_KERNEL_NODE_PARAMS_v3: the fields of _v2, in the same places.
 */
typedef struct {
	int type;		/* CU_GRAPH_NODE_TYPE_* */
	int reserved0[3];
	union {
		long long reserved1[29];
		CUDA_KERNEL_NODE_PARAMS_v2 kernel;
		CUgraph child_graph;	/* type GRAPH: CUDA_CHILD_GRAPH_NODE_PARAMS.graph */
	};
	long long reserved2;
} CUgraphNodeParams;
_Static_assert(sizeof(CUgraphNodeParams) == 256, "CUgraphNodeParams is 256 bytes in cuda.h");

/* Signatures of every interposed entry point and every one called. */
typedef CUresult (*PFN_cuModuleLoadData)(CUmodule *, const void *);
typedef CUresult (*PFN_cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *,
					   void **);
typedef CUresult (*PFN_cuModuleLoadFatBinary)(CUmodule *, const void *);
typedef CUresult (*PFN_cuModuleLoad)(CUmodule *, const char *);
typedef CUresult (*PFN_cuModuleUnload)(CUmodule);
typedef CUresult (*PFN_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
typedef CUresult (*PFN_cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
typedef CUresult (*PFN_cuLibraryLoadData)(CUlibrary *, const void *, CUjit_option *, void **,
					  unsigned, CUlibraryOption *, void **, unsigned);
typedef CUresult (*PFN_cuLibraryLoadFromFile)(CUlibrary *, const char *, CUjit_option *,
					      void **, unsigned, CUlibraryOption *, void **,
					      unsigned);
typedef CUresult (*PFN_cuLibraryUnload)(CUlibrary);
typedef CUresult (*PFN_cuLibraryGetKernel)(CUkernel *, CUlibrary, const char *);
typedef CUresult (*PFN_cuLibraryGetModule)(CUmodule *, CUlibrary);
typedef CUresult (*PFN_cuLibraryGetGlobal)(CUdeviceptr *, size_t *, CUlibrary, const char *);
typedef CUresult (*PFN_cuKernelGetFunction)(CUfunction *, CUkernel);
typedef CUresult (*PFN_cuFuncGetName)(const char **, CUfunction);
typedef CUresult (*PFN_cuFuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
typedef CUresult (*PFN_cuKernelGetName)(const char **, CUkernel);
typedef CUresult (*PFN_cuModuleGetFunctionCount)(unsigned *, CUmodule);
typedef CUresult (*PFN_cuModuleEnumerateFunctions)(CUfunction *, unsigned, CUmodule);
typedef CUresult (*PFN_cuLibraryGetKernelCount)(unsigned *, CUlibrary);
typedef CUresult (*PFN_cuLibraryEnumerateKernels)(CUkernel *, unsigned, CUlibrary);
typedef CUresult (*PFN_cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
typedef CUresult (*PFN_cuFuncSetCacheConfig)(CUfunction, CUfunc_cache);
typedef CUresult (*PFN_cuFuncSetSharedMemConfig)(CUfunction, CUsharedconfig);
typedef CUresult (*PFN_cuKernelGetAttribute)(int *, CUfunction_attribute, CUkernel, CUdevice);
typedef CUresult (*PFN_cuKernelSetAttribute)(CUfunction_attribute, int, CUkernel, CUdevice);
typedef CUresult (*PFN_cuKernelSetCacheConfig)(CUkernel, CUfunc_cache, CUdevice);
typedef CUresult (*PFN_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
				       unsigned, unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*PFN_cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*PFN_cuLaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned,
						  unsigned, unsigned, unsigned, unsigned,
						  CUstream, void **);
typedef CUresult (*PFN_cuCtxCreate_v2)(CUcontext *, unsigned, CUdevice);
typedef CUresult (*PFN_cuCtxCreate_v3)(CUcontext *, void *, int, unsigned, CUdevice);
typedef CUresult (*PFN_cuCtxCreate_v4)(CUcontext *, void *, unsigned, CUdevice);
typedef CUresult (*PFN_cuCtxDestroy)(CUcontext);
typedef CUresult (*PFN_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
typedef CUresult (*PFN_cuDevicePrimaryCtxRelease)(CUdevice);
typedef CUresult (*PFN_cuDevicePrimaryCtxReset)(CUdevice);
typedef CUresult (*PFN_cuDevicePrimaryCtxGetState)(CUdevice, unsigned *, int *);
typedef CUresult (*PFN_cuGetProcAddress)(const char *, void **, int, cuuint64_t);
typedef CUresult (*PFN_cuGetProcAddress_v2)(const char *, void **, int, cuuint64_t, int *);
typedef CUresult (*PFN_cuGraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *,
					     size_t, const CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*PFN_cuGraphKernelNodeSetParams)(CUgraphNode,
						   const CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*PFN_cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
						       const CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*PFN_cuGraphNodeSetEnabled)(CUgraphExec, CUgraphNode, unsigned);
typedef CUresult (*PFN_cuGraphAddNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
				       CUgraphNodeParams *);
typedef CUresult (*PFN_cuGraphAddNode_v2)(CUgraphNode *, CUgraph, const CUgraphNode *, const void *,
					  size_t, CUgraphNodeParams *);
typedef CUresult (*PFN_cuGraphNodeSetParams)(CUgraphNode, CUgraphNodeParams *);
typedef CUresult (*PFN_cuGraphExecNodeSetParams)(CUgraphExec, CUgraphNode, CUgraphNodeParams *);

typedef CUresult (*PFN_cuInit)(unsigned);
typedef CUresult (*PFN_cuDriverGetVersion)(int *);
typedef CUresult (*PFN_cuDeviceGetCount)(int *);
typedef CUresult (*PFN_cuDeviceGet)(CUdevice *, int);
typedef CUresult (*PFN_cuDeviceGetAttribute)(int *, int, CUdevice);
typedef CUresult (*PFN_cuDeviceGetPCIBusId)(char *, int, CUdevice);
typedef CUresult (*PFN_cuCtxGetCurrent)(CUcontext *);
typedef CUresult (*PFN_cuCtxGetDevice)(CUdevice *);
typedef CUresult (*PFN_cuCtxPushCurrent)(CUcontext);
typedef CUresult (*PFN_cuCtxPopCurrent)(CUcontext *);
typedef CUresult (*PFN_cuMemAlloc)(CUdeviceptr *, size_t);
typedef CUresult (*PFN_cuMemFree)(CUdeviceptr);
typedef CUresult (*PFN_cuMemHostAlloc)(void **, size_t, unsigned);
typedef CUresult (*PFN_cuMemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
typedef CUresult (*PFN_cuMemFreeHost)(void *);
typedef CUresult (*PFN_cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*PFN_cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*PFN_cuStreamCreate)(CUstream *, unsigned);
typedef CUresult (*PFN_cuStreamSynchronize)(CUstream);
typedef CUresult (*PFN_cuCtxSynchronize)(void);
typedef CUresult (*PFN_cuEventSynchronize)(CUevent);
typedef CUresult (*PFN_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
typedef CUresult (*PFN_cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*PFN_cuStreamDestroy)(CUstream);
typedef CUresult (*PFN_cuGetErrorName)(CUresult, const char **);
typedef CUresult (*PFN_cuThreadExchangeStreamCaptureMode)(int *);
#define CU_STREAM_CAPTURE_MODE_RELAXED 2
/* Stream capture (CUDA graphs): cuStreamBeginCapture took no mode before 10.1 (_v2). */
typedef CUresult (*PFN_cuStreamBeginCapture)(CUstream);
typedef CUresult (*PFN_cuStreamBeginCapture_v2)(CUstream, int);
typedef CUresult (*PFN_cuStreamBeginCaptureToGraph)(CUstream, CUgraph, const CUgraphNode *,
						    const void *, size_t, int);
typedef CUresult (*PFN_cuStreamIsCapturing)(CUstream, int *);
/* Graphs: instantiation, launch, update, destruction, and reading a graph's kernel nodes. */
typedef CUresult (*PFN_cuGraphInstantiate)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
typedef CUresult (*PFN_cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*PFN_cuGraphInstantiateWithParams)(CUgraphExec *, CUgraph, void *);
typedef CUresult (*PFN_cuGraphLaunch)(CUgraphExec, CUstream);
typedef CUresult (*PFN_cuGraphExecDestroy)(CUgraphExec);
typedef CUresult (*PFN_cuGraphExecUpdate)(CUgraphExec, CUgraph, CUgraphNode *, int *);
typedef CUresult (*PFN_cuGraphExecUpdate_v2)(CUgraphExec, CUgraph, void *);
typedef CUresult (*PFN_cuGraphExecChildGraphNodeSetParams)(CUgraphExec, CUgraphNode, CUgraph);
typedef CUresult (*PFN_cuGraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
typedef CUresult (*PFN_cuGraphNodeGetType)(CUgraphNode, int *);
typedef CUresult (*PFN_cuGraphKernelNodeGetParams)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*PFN_cuGraphChildGraphNodeGetGraph)(CUgraphNode, CUgraph *);
#define CU_GRAPH_NODE_TYPE_KERNEL 0
#define CU_GRAPH_NODE_TYPE_GRAPH 4
#define CU_STREAM_CAPTURE_STATUS_NONE 0
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

#endif
