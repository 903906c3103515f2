# ruff: noqa: E501 - one function per line: the table reads best unwrapped
"""The driver functions the probe calls: name, exported symbol, ``cuGetProcAddress`` version, C parameters.

One line per function: ``name symbol version | parameters``. The version is the one the symbol
stands for (the ``PFN_<name>_v<version>`` typedef of ``cudaTypedefs.h``), so that a library that
does not export the symbol is asked for the same ABI through ``cuGetProcAddress``. Struct layouts
follow ``cuda.h`` (CUDA 13); ``tests/probe/test_signatures.py`` checks every line against the
packaged header facts (name, version, parameter count).
"""

from __future__ import annotations

TYPES = """
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef unsigned int cuuint32_t;
typedef unsigned long long CUtexObject;
typedef unsigned long long CUsurfObject;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { char bytes[16]; } CUuuid;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct { char reserved[64]; } CUipcEventHandle;
typedef void *CUcontext; typedef void *CUmodule; typedef void *CUfunction; typedef void *CUstream;
typedef void *CUevent; typedef void *CUgraph; typedef void *CUgraphExec; typedef void *CUmemoryPool;
typedef void *CUarray; typedef void *CUgraphNode; typedef void *CUlibrary; typedef void *CUkernel;
typedef void *CUlinkState;
typedef void (*CUhostFn)(void *);
typedef void (*CUstreamCallback)(CUstream, CUresult, void *);
typedef struct {
    size_t srcXInBytes; size_t srcY; int srcMemoryType; const void *srcHost; CUdeviceptr srcDevice;
    CUarray srcArray; size_t srcPitch;
    size_t dstXInBytes; size_t dstY; int dstMemoryType; void *dstHost; CUdeviceptr dstDevice;
    CUarray dstArray; size_t dstPitch;
    size_t WidthInBytes; size_t Height;
} CUDA_MEMCPY2D;
typedef struct {
    size_t srcXInBytes; size_t srcY; size_t srcZ; size_t srcLOD; int srcMemoryType; const void *srcHost;
    CUdeviceptr srcDevice; CUarray srcArray; void *reserved0; size_t srcPitch; size_t srcHeight;
    size_t dstXInBytes; size_t dstY; size_t dstZ; size_t dstLOD; int dstMemoryType; void *dstHost;
    CUdeviceptr dstDevice; CUarray dstArray; void *reserved1; size_t dstPitch; size_t dstHeight;
    size_t WidthInBytes; size_t Height; size_t Depth;
} CUDA_MEMCPY3D;
typedef struct { size_t Width; size_t Height; int Format; unsigned int NumChannels; } CUDA_ARRAY_DESCRIPTOR;
typedef struct {
    size_t Width; size_t Height; size_t Depth; int Format; unsigned int NumChannels; unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;
typedef struct {
    int resType;
    union {
        struct { CUarray hArray; } array;
        struct { CUdeviceptr devPtr; int format; unsigned int numChannels; size_t sizeInBytes; } linear;
        struct {
            CUdeviceptr devPtr; int format; unsigned int numChannels; size_t width; size_t height;
            size_t pitchInBytes;
        } pitch2D;
        struct { int reserved[32]; } reserved;
    } res;
    unsigned int flags;
} CUDA_RESOURCE_DESC;
typedef struct {
    int addressMode[3]; int filterMode; unsigned int flags; unsigned int maxAnisotropy;
    int mipmapFilterMode; float mipmapLevelBias; float minMipmapLevelClamp; float maxMipmapLevelClamp;
    float borderColor[4]; int reserved[12];
} CUDA_TEXTURE_DESC;
typedef struct {
    CUfunction func; unsigned int gridDimX; unsigned int gridDimY; unsigned int gridDimZ;
    unsigned int blockDimX; unsigned int blockDimY; unsigned int blockDimZ; unsigned int sharedMemBytes;
    void **kernelParams; void **extra; CUkernel kern; CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;
typedef struct {
    CUdeviceptr dst; size_t pitch; unsigned int value; unsigned int elementSize; size_t width; size_t height;
} CUDA_MEMSET_NODE_PARAMS;
typedef struct { CUhostFn fn; void *userData; } CUDA_HOST_NODE_PARAMS;
typedef struct { int result; CUgraphNode errorNode; CUgraphNode errorFromNode; } CUgraphExecUpdateResultInfo;
typedef struct { int type; int id; } CUmemLocation;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;
typedef struct {
    int type; int requestedHandleTypes; CUmemLocation location; void *win32HandleMetaData;
    struct {
        unsigned char compressionType; unsigned char gpuDirectRDMACapable; unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;
typedef struct {
    int allocType; int handleTypes; CUmemLocation location; void *win32SecurityAttributes; size_t maxSize;
    unsigned short usage; unsigned char reserved[54];
} CUmemPoolProps;
typedef struct { int id; char pad[4]; union { char pad[64]; int cooperative; } value; } CUlaunchAttribute;
typedef struct {
    unsigned int gridDimX; unsigned int gridDimY; unsigned int gridDimZ; unsigned int blockDimX;
    unsigned int blockDimY; unsigned int blockDimZ; unsigned int sharedMemBytes; CUstream hStream;
    CUlaunchAttribute *attrs; unsigned int numAttrs;
} CUlaunchConfig;
typedef union { char pad[64]; int priority; } CUstreamAttrValue;
"""

_LAUNCH = (
    "CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
    "unsigned int, CUstream, void **"
)

SIGNATURES = f"""
cuInit cuInit 2000 | unsigned int
cuDriverGetVersion cuDriverGetVersion 2020 | int *
cuGetProcAddress cuGetProcAddress_v2 12000 | const char *, void **, int, cuuint64_t, int *
cuGetExportTable cuGetExportTable 3000 | const void **, const CUuuid *
cuGetErrorName cuGetErrorName 6000 | CUresult, const char **
cuGetErrorString cuGetErrorString 6000 | CUresult, const char **
cuDeviceGetCount cuDeviceGetCount 2000 | int *
cuDeviceGet cuDeviceGet 2000 | CUdevice *, int
cuDeviceGetName cuDeviceGetName 2000 | char *, int, CUdevice
cuDeviceGetAttribute cuDeviceGetAttribute 2000 | int *, int, CUdevice
cuDeviceGetUuid cuDeviceGetUuid_v2 11040 | CUuuid *, CUdevice
cuDeviceTotalMem cuDeviceTotalMem_v2 3020 | size_t *, CUdevice
cuDeviceComputeCapability cuDeviceComputeCapability 2000 | int *, int *, CUdevice
cuDeviceGetPCIBusId cuDeviceGetPCIBusId 4010 | char *, int, CUdevice
cuDeviceGetByPCIBusId cuDeviceGetByPCIBusId 4010 | CUdevice *, const char *
cuDeviceCanAccessPeer cuDeviceCanAccessPeer 4000 | int *, CUdevice, CUdevice
cuDeviceGetP2PAttribute cuDeviceGetP2PAttribute 8000 | int *, int, CUdevice, CUdevice
cuDeviceGetDefaultMemPool cuDeviceGetDefaultMemPool 11020 | CUmemoryPool *, CUdevice
cuDeviceGetMemPool cuDeviceGetMemPool 11020 | CUmemoryPool *, CUdevice
cuDeviceSetMemPool cuDeviceSetMemPool 11020 | CUdevice, CUmemoryPool
cuDeviceGetTexture1DLinearMaxWidth cuDeviceGetTexture1DLinearMaxWidth 11010 | size_t *, int, unsigned, CUdevice
cuDeviceGetExecAffinitySupport cuDeviceGetExecAffinitySupport 11040 | int *, int, CUdevice
cuFlushGPUDirectRDMAWrites cuFlushGPUDirectRDMAWrites 11030 | int, int
cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain 7000 | CUcontext *, CUdevice
cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease_v2 11000 | CUdevice
cuDevicePrimaryCtxGetState cuDevicePrimaryCtxGetState 7000 | CUdevice, unsigned int *, int *
cuDevicePrimaryCtxSetFlags cuDevicePrimaryCtxSetFlags_v2 11000 | CUdevice, unsigned int
cuDevicePrimaryCtxReset cuDevicePrimaryCtxReset_v2 11000 | CUdevice
cuCtxSetCurrent cuCtxSetCurrent 4000 | CUcontext
cuCtxGetCurrent cuCtxGetCurrent 4000 | CUcontext *
cuCtxCreate cuCtxCreate_v2 3020 | CUcontext *, unsigned int, CUdevice
cuCtxDestroy cuCtxDestroy_v2 4000 | CUcontext
cuCtxPushCurrent cuCtxPushCurrent_v2 4000 | CUcontext
cuCtxPopCurrent cuCtxPopCurrent_v2 4000 | CUcontext *
cuCtxSynchronize cuCtxSynchronize 2000 |
cuCtxGetDevice cuCtxGetDevice 2000 | CUdevice *
cuCtxGetStreamPriorityRange cuCtxGetStreamPriorityRange 5050 | int *, int *
cuCtxGetFlags cuCtxGetFlags 7000 | unsigned int *
cuCtxSetFlags cuCtxSetFlags 12010 | unsigned int
cuCtxGetApiVersion cuCtxGetApiVersion 3020 | CUcontext, unsigned int *
cuCtxGetLimit cuCtxGetLimit 3010 | size_t *, int
cuCtxSetLimit cuCtxSetLimit 3010 | int, size_t
cuCtxGetCacheConfig cuCtxGetCacheConfig 3020 | int *
cuCtxSetCacheConfig cuCtxSetCacheConfig 3020 | int
cuCtxGetSharedMemConfig cuCtxGetSharedMemConfig 4020 | int *
cuCtxSetSharedMemConfig cuCtxSetSharedMemConfig 4020 | int
cuCtxGetId cuCtxGetId 12000 | CUcontext, unsigned long long *
cuCtxResetPersistingL2Cache cuCtxResetPersistingL2Cache 11000 |
cuCtxEnablePeerAccess cuCtxEnablePeerAccess 4000 | CUcontext, unsigned int
cuCtxDisablePeerAccess cuCtxDisablePeerAccess 4000 | CUcontext
cuMemGetInfo cuMemGetInfo_v2 3020 | size_t *, size_t *
cuMemAlloc cuMemAlloc_v2 3020 | CUdeviceptr *, size_t
cuMemFree cuMemFree_v2 3020 | CUdeviceptr
cuMemAllocPitch cuMemAllocPitch_v2 3020 | CUdeviceptr *, size_t *, size_t, size_t, unsigned int
cuMemGetAddressRange cuMemGetAddressRange_v2 3020 | CUdeviceptr *, size_t *, CUdeviceptr
cuMemAllocManaged cuMemAllocManaged 6000 | CUdeviceptr *, size_t, unsigned int
cuMemcpy cuMemcpy 4000 | CUdeviceptr, CUdeviceptr, size_t
cuMemcpyAsync cuMemcpyAsync 4000 | CUdeviceptr, CUdeviceptr, size_t, CUstream
cuMemcpyHtoD cuMemcpyHtoD_v2 3020 | CUdeviceptr, const void *, size_t
cuMemcpyDtoH cuMemcpyDtoH_v2 3020 | void *, CUdeviceptr, size_t
cuMemcpyDtoD cuMemcpyDtoD_v2 3020 | CUdeviceptr, CUdeviceptr, size_t
cuMemcpyHtoDAsync cuMemcpyHtoDAsync_v2 3020 | CUdeviceptr, const void *, size_t, CUstream
cuMemcpyDtoHAsync cuMemcpyDtoHAsync_v2 3020 | void *, CUdeviceptr, size_t, CUstream
cuMemcpyDtoDAsync cuMemcpyDtoDAsync_v2 3020 | CUdeviceptr, CUdeviceptr, size_t, CUstream
cuMemcpy2D cuMemcpy2D_v2 3020 | const CUDA_MEMCPY2D *
cuMemcpy2DUnaligned cuMemcpy2DUnaligned_v2 3020 | const CUDA_MEMCPY2D *
cuMemcpy2DAsync cuMemcpy2DAsync_v2 3020 | const CUDA_MEMCPY2D *, CUstream
cuMemcpy3D cuMemcpy3D_v2 3020 | const CUDA_MEMCPY3D *
cuMemcpy3DAsync cuMemcpy3DAsync_v2 3020 | const CUDA_MEMCPY3D *, CUstream
cuMemcpyPeer cuMemcpyPeer 4000 | CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t
cuMemcpyPeerAsync cuMemcpyPeerAsync 4000 | CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream
cuMemcpyHtoA cuMemcpyHtoA_v2 3020 | CUarray, size_t, const void *, size_t
cuMemcpyAtoH cuMemcpyAtoH_v2 3020 | void *, CUarray, size_t, size_t
cuMemsetD8 cuMemsetD8_v2 3020 | CUdeviceptr, unsigned char, size_t
cuMemsetD16 cuMemsetD16_v2 3020 | CUdeviceptr, unsigned short, size_t
cuMemsetD32 cuMemsetD32_v2 3020 | CUdeviceptr, unsigned int, size_t
cuMemsetD2D8 cuMemsetD2D8_v2 3020 | CUdeviceptr, size_t, unsigned char, size_t, size_t
cuMemsetD2D16 cuMemsetD2D16_v2 3020 | CUdeviceptr, size_t, unsigned short, size_t, size_t
cuMemsetD2D32 cuMemsetD2D32_v2 3020 | CUdeviceptr, size_t, unsigned int, size_t, size_t
cuMemsetD8Async cuMemsetD8Async 3020 | CUdeviceptr, unsigned char, size_t, CUstream
cuMemsetD16Async cuMemsetD16Async 3020 | CUdeviceptr, unsigned short, size_t, CUstream
cuMemsetD32Async cuMemsetD32Async 3020 | CUdeviceptr, unsigned int, size_t, CUstream
cuMemsetD2D8Async cuMemsetD2D8Async 3020 | CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream
cuMemsetD2D16Async cuMemsetD2D16Async 3020 | CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream
cuMemsetD2D32Async cuMemsetD2D32Async 3020 | CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream
cuMemAllocHost cuMemAllocHost_v2 3020 | void **, size_t
cuMemFreeHost cuMemFreeHost 2000 | void *
cuMemHostAlloc cuMemHostAlloc 2020 | void **, size_t, unsigned int
cuMemHostGetDevicePointer cuMemHostGetDevicePointer_v2 3020 | CUdeviceptr *, void *, unsigned int
cuMemHostGetFlags cuMemHostGetFlags 2030 | unsigned int *, void *
cuMemHostRegister cuMemHostRegister_v2 6050 | void *, size_t, unsigned int
cuMemHostUnregister cuMemHostUnregister 4000 | void *
cuPointerGetAttribute cuPointerGetAttribute 4000 | void *, int, CUdeviceptr
cuPointerGetAttributes cuPointerGetAttributes 7000 | unsigned int, int *, void **, CUdeviceptr
cuPointerSetAttribute cuPointerSetAttribute 6000 | const void *, int, CUdeviceptr
cuMemPrefetchAsync cuMemPrefetchAsync 8000 | CUdeviceptr, size_t, CUdevice, CUstream
cuMemAdvise cuMemAdvise 8000 | CUdeviceptr, size_t, int, CUdevice
cuMemRangeGetAttribute cuMemRangeGetAttribute 8000 | void *, size_t, int, CUdeviceptr, size_t
cuMemGetAllocationGranularity cuMemGetAllocationGranularity 10020 | size_t *, const CUmemAllocationProp *, int
cuMemCreate cuMemCreate 10020 | CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long
cuMemAddressReserve cuMemAddressReserve 10020 | CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long
cuMemMap cuMemMap 10020 | CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long
cuMemSetAccess cuMemSetAccess 10020 | CUdeviceptr, size_t, const CUmemAccessDesc *, size_t
cuMemGetAccess cuMemGetAccess 10020 | unsigned long long *, const CUmemLocation *, CUdeviceptr
cuMemUnmap cuMemUnmap 10020 | CUdeviceptr, size_t
cuMemAddressFree cuMemAddressFree 10020 | CUdeviceptr, size_t
cuMemRelease cuMemRelease 10020 | CUmemGenericAllocationHandle
cuMemGetAllocationPropertiesFromHandle cuMemGetAllocationPropertiesFromHandle 10020 | CUmemAllocationProp *, CUmemGenericAllocationHandle
cuArrayCreate cuArrayCreate_v2 3020 | CUarray *, const CUDA_ARRAY_DESCRIPTOR *
cuArrayGetDescriptor cuArrayGetDescriptor_v2 3020 | CUDA_ARRAY_DESCRIPTOR *, CUarray
cuArray3DCreate cuArray3DCreate_v2 3020 | CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *
cuArray3DGetDescriptor cuArray3DGetDescriptor_v2 3020 | CUDA_ARRAY3D_DESCRIPTOR *, CUarray
cuArrayDestroy cuArrayDestroy 2000 | CUarray
cuIpcGetMemHandle cuIpcGetMemHandle 4010 | CUipcMemHandle *, CUdeviceptr
cuIpcGetEventHandle cuIpcGetEventHandle 4010 | CUipcEventHandle *, CUevent
cuMemPoolCreate cuMemPoolCreate 11020 | CUmemoryPool *, const CUmemPoolProps *
cuMemPoolDestroy cuMemPoolDestroy 11020 | CUmemoryPool
cuMemPoolSetAttribute cuMemPoolSetAttribute 11020 | CUmemoryPool, int, void *
cuMemPoolGetAttribute cuMemPoolGetAttribute 11020 | CUmemoryPool, int, void *
cuMemPoolTrimTo cuMemPoolTrimTo 11020 | CUmemoryPool, size_t
cuMemPoolSetAccess cuMemPoolSetAccess 11020 | CUmemoryPool, const CUmemAccessDesc *, size_t
cuMemPoolGetAccess cuMemPoolGetAccess 11020 | int *, CUmemoryPool, CUmemLocation *
cuMemAllocAsync cuMemAllocAsync 11020 | CUdeviceptr *, size_t, CUstream
cuMemAllocFromPoolAsync cuMemAllocFromPoolAsync 11020 | CUdeviceptr *, size_t, CUmemoryPool, CUstream
cuMemFreeAsync cuMemFreeAsync 11020 | CUdeviceptr, CUstream
cuStreamCreate cuStreamCreate 2000 | CUstream *, unsigned int
cuStreamCreateWithPriority cuStreamCreateWithPriority 5050 | CUstream *, unsigned int, int
cuStreamDestroy cuStreamDestroy_v2 4000 | CUstream
cuStreamSynchronize cuStreamSynchronize 2000 | CUstream
cuStreamQuery cuStreamQuery 2000 | CUstream
cuStreamGetPriority cuStreamGetPriority 5050 | CUstream, int *
cuStreamGetFlags cuStreamGetFlags 5050 | CUstream, unsigned int *
cuStreamGetCtx cuStreamGetCtx 9020 | CUstream, CUcontext *
cuStreamGetId cuStreamGetId 12000 | CUstream, unsigned long long *
cuStreamWaitEvent cuStreamWaitEvent 3020 | CUstream, CUevent, unsigned int
cuStreamAddCallback cuStreamAddCallback 5000 | CUstream, CUstreamCallback, void *, unsigned int
cuLaunchHostFunc cuLaunchHostFunc 10000 | CUstream, CUhostFn, void *
cuStreamAttachMemAsync cuStreamAttachMemAsync 6000 | CUstream, CUdeviceptr, size_t, unsigned int
cuStreamGetAttribute cuStreamGetAttribute 11000 | CUstream, int, CUstreamAttrValue *
cuStreamSetAttribute cuStreamSetAttribute 11000 | CUstream, int, const CUstreamAttrValue *
cuStreamCopyAttributes cuStreamCopyAttributes 11000 | CUstream, CUstream
cuStreamWaitValue32 cuStreamWaitValue32_v2 11070 | CUstream, CUdeviceptr, cuuint32_t, unsigned int
cuStreamWriteValue32 cuStreamWriteValue32_v2 11070 | CUstream, CUdeviceptr, cuuint32_t, unsigned int
cuStreamBeginCapture cuStreamBeginCapture_v2 10010 | CUstream, int
cuStreamEndCapture cuStreamEndCapture 10000 | CUstream, CUgraph *
cuStreamIsCapturing cuStreamIsCapturing 10000 | CUstream, int *
cuStreamGetCaptureInfo cuStreamGetCaptureInfo_v2 11030 | CUstream, int *, cuuint64_t *, CUgraph *, const CUgraphNode **, size_t *
cuThreadExchangeStreamCaptureMode cuThreadExchangeStreamCaptureMode 10010 | int *
cuEventCreate cuEventCreate 2000 | CUevent *, unsigned int
cuEventRecord cuEventRecord 2000 | CUevent, CUstream
cuEventRecordWithFlags cuEventRecordWithFlags 11010 | CUevent, CUstream, unsigned int
cuEventSynchronize cuEventSynchronize 2000 | CUevent
cuEventQuery cuEventQuery 2000 | CUevent
cuEventDestroy cuEventDestroy_v2 4000 | CUevent
cuEventElapsedTime cuEventElapsedTime_v2 12080 | float *, CUevent, CUevent
cuModuleLoad cuModuleLoad 2000 | CUmodule *, const char *
cuModuleLoadData cuModuleLoadData 2000 | CUmodule *, const void *
cuModuleLoadDataEx cuModuleLoadDataEx 2010 | CUmodule *, const void *, unsigned int, int *, void **
cuModuleLoadFatBinary cuModuleLoadFatBinary 2000 | CUmodule *, const void *
cuModuleUnload cuModuleUnload 2000 | CUmodule
cuModuleGetFunction cuModuleGetFunction 2000 | CUfunction *, CUmodule, const char *
cuModuleGetGlobal cuModuleGetGlobal_v2 3020 | CUdeviceptr *, size_t *, CUmodule, const char *
cuModuleGetFunctionCount cuModuleGetFunctionCount 12040 | unsigned int *, CUmodule
cuModuleEnumerateFunctions cuModuleEnumerateFunctions 12040 | CUfunction *, unsigned int, CUmodule
cuModuleGetLoadingMode cuModuleGetLoadingMode 11070 | int *
cuLinkCreate cuLinkCreate_v2 6050 | unsigned int, int *, void **, CUlinkState *
cuLinkAddData cuLinkAddData_v2 6050 | CUlinkState, int, void *, size_t, const char *, unsigned int, int *, void **
cuLinkComplete cuLinkComplete 5050 | CUlinkState, void **, size_t *
cuLinkDestroy cuLinkDestroy 5050 | CUlinkState
cuLibraryLoadData cuLibraryLoadData 12000 | CUlibrary *, const void *, int *, void **, unsigned int, int *, void **, unsigned int
cuLibraryGetKernel cuLibraryGetKernel 12000 | CUkernel *, CUlibrary, const char *
cuLibraryGetModule cuLibraryGetModule 12000 | CUmodule *, CUlibrary
cuLibraryUnload cuLibraryUnload 12000 | CUlibrary
cuKernelGetFunction cuKernelGetFunction 12000 | CUfunction *, CUkernel
cuKernelGetAttribute cuKernelGetAttribute 12000 | int *, int, CUkernel, CUdevice
cuFuncGetAttribute cuFuncGetAttribute 2020 | int *, int, CUfunction
cuFuncSetAttribute cuFuncSetAttribute 9000 | CUfunction, int, int
cuFuncSetCacheConfig cuFuncSetCacheConfig 3000 | CUfunction, int
cuFuncSetSharedMemConfig cuFuncSetSharedMemConfig 4020 | CUfunction, int
cuFuncGetName cuFuncGetName 12030 | const char **, CUfunction
cuFuncGetModule cuFuncGetModule 11000 | CUmodule *, CUfunction
cuFuncGetParamInfo cuFuncGetParamInfo 12040 | CUfunction, size_t, size_t *, size_t *
cuLaunchKernel cuLaunchKernel 4000 | {_LAUNCH}, void **
cuLaunchCooperativeKernel cuLaunchCooperativeKernel 9000 | {_LAUNCH}
cuLaunchKernelEx cuLaunchKernelEx 11060 | const CUlaunchConfig *, CUfunction, void **, void **
cuOccupancyMaxActiveBlocksPerMultiprocessor cuOccupancyMaxActiveBlocksPerMultiprocessor 6050 | int *, CUfunction, int, size_t
cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags 7000 | int *, CUfunction, int, size_t, unsigned int
cuOccupancyMaxPotentialBlockSize cuOccupancyMaxPotentialBlockSize 6050 | int *, int *, CUfunction, void *, size_t, int
cuOccupancyMaxPotentialBlockSizeWithFlags cuOccupancyMaxPotentialBlockSizeWithFlags 7000 | int *, int *, CUfunction, void *, size_t, int, unsigned int
cuOccupancyAvailableDynamicSMemPerBlock cuOccupancyAvailableDynamicSMemPerBlock 10020 | size_t *, CUfunction, int, int
cuGraphCreate cuGraphCreate 10000 | CUgraph *, unsigned int
cuGraphAddKernelNode cuGraphAddKernelNode_v2 12000 | CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS *
cuGraphAddMemsetNode cuGraphAddMemsetNode 10000 | CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_MEMSET_NODE_PARAMS *, CUcontext
cuGraphAddMemcpyNode cuGraphAddMemcpyNode 10000 | CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_MEMCPY3D *, CUcontext
cuGraphAddEmptyNode cuGraphAddEmptyNode 10000 | CUgraphNode *, CUgraph, const CUgraphNode *, size_t
cuGraphAddHostNode cuGraphAddHostNode 10000 | CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_HOST_NODE_PARAMS *
cuGraphAddDependencies cuGraphAddDependencies 10000 | CUgraph, const CUgraphNode *, const CUgraphNode *, size_t
cuGraphGetNodes cuGraphGetNodes 10000 | CUgraph, CUgraphNode *, size_t *
cuGraphGetRootNodes cuGraphGetRootNodes 10000 | CUgraph, CUgraphNode *, size_t *
cuGraphNodeGetType cuGraphNodeGetType 10000 | CUgraphNode, int *
cuGraphKernelNodeGetParams cuGraphKernelNodeGetParams_v2 12000 | CUgraphNode, CUDA_KERNEL_NODE_PARAMS *
cuGraphMemsetNodeGetParams cuGraphMemsetNodeGetParams 10000 | CUgraphNode, CUDA_MEMSET_NODE_PARAMS *
cuGraphDestroyNode cuGraphDestroyNode 10000 | CUgraphNode
cuGraphClone cuGraphClone 10000 | CUgraph *, CUgraph
cuGraphInstantiateWithFlags cuGraphInstantiateWithFlags 11040 | CUgraphExec *, CUgraph, unsigned long long
cuGraphUpload cuGraphUpload 11010 | CUgraphExec, CUstream
cuGraphLaunch cuGraphLaunch 10000 | CUgraphExec, CUstream
cuGraphExecUpdate cuGraphExecUpdate_v2 12000 | CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *
cuGraphExecKernelNodeSetParams cuGraphExecKernelNodeSetParams_v2 12000 | CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *
cuGraphExecDestroy cuGraphExecDestroy 10000 | CUgraphExec
cuGraphDestroy cuGraphDestroy 10000 | CUgraph
cuGraphDebugDotPrint cuGraphDebugDotPrint 11030 | CUgraph, const char *, unsigned int
cuTexObjectCreate cuTexObjectCreate 5000 | CUtexObject *, const CUDA_RESOURCE_DESC *, const CUDA_TEXTURE_DESC *, const void *
cuTexObjectGetResourceDesc cuTexObjectGetResourceDesc 5000 | CUDA_RESOURCE_DESC *, CUtexObject
cuTexObjectDestroy cuTexObjectDestroy 5000 | CUtexObject
cuSurfObjectCreate cuSurfObjectCreate 5000 | CUsurfObject *, const CUDA_RESOURCE_DESC *
cuSurfObjectDestroy cuSurfObjectDestroy 5000 | CUsurfObject
"""


def parse_signatures(text: str = SIGNATURES) -> list[tuple[str, str, int, str]]:
    """``(name, symbol, version, parameters)`` per non-empty line."""
    out = []
    for line in text.strip().splitlines():
        head, _, params = line.partition("|")
        name, symbol, version = head.split()
        out.append((name, symbol, int(version), params.strip()))
    return out


FUNCTIONS = parse_signatures()
