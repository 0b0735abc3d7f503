// tiny_train: a few "training steps" of GPU work for check-on-gpu.sh to trace: per step, bf16
// GEMMs through cuBLAS, an elementwise kernel of our own, a host-to-device and a device-to-host
// copy, a memset and, where NCCL was found at build time, an all-reduce over the first one or two
// GPUs (NCCL runs a one-rank all-reduce without a kernel, so only two GPUs show NCCL kernels). Each
// step is an NVTX range named ProfilerStep#N, as the PyTorch profiler marks steps, so the CUPTI
// tracer (with NVTX_INJECTION64_PATH pointing at libcupti) writes step annotations.
//
// Usage: tiny_train [steps]. Exit status 0 on success; 1 with one line on stderr.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#ifdef ATTUNE_HAVE_NCCL
#include <nccl.h>
#endif

namespace {

constexpr int kSide = 2048;
constexpr int kGemmsPerStep = 4;
constexpr int kStepsMax = 1000;
constexpr int kNcclGpusMax = 2;

bool ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "tiny_train: %s: %s\n", what, cudaGetErrorString(status));
  return false;
}

bool ok(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "tiny_train: %s: cuBLAS status %d\n", what, static_cast<int>(status));
  return false;
}

__global__ void scaled_tanh(__nv_bfloat16* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2bfloat16(tanhf(0.5f * __bfloat162float(x[i])));
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  if (steps < 1 || steps > kStepsMax) {
    std::fprintf(stderr, "tiny_train: steps must be 1..%d\n", kStepsMax);
    return 1;
  }
  constexpr int kElements = kSide * kSide;
  std::vector<__nv_bfloat16> host(kElements, __float2bfloat16(0.01f));
  __nv_bfloat16* a = nullptr;
  __nv_bfloat16* b = nullptr;
  __nv_bfloat16* c = nullptr;
  float* gradients = nullptr;
  if (!ok(cudaMalloc(&a, kElements * sizeof(__nv_bfloat16)), "cudaMalloc") ||
      !ok(cudaMalloc(&b, kElements * sizeof(__nv_bfloat16)), "cudaMalloc") ||
      !ok(cudaMalloc(&c, kElements * sizeof(__nv_bfloat16)), "cudaMalloc") ||
      !ok(cudaMalloc(&gradients, kElements * sizeof(float)), "cudaMalloc")) {
    return 1;
  }
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  if (!ok(cudaStreamCreate(&stream), "cudaStreamCreate") || !ok(cublasCreate(&blas), "cublas") ||
      !ok(cublasSetStream(blas, stream), "cublasSetStream")) {
    return 1;
  }
#ifdef ATTUNE_HAVE_NCCL
  // Device 0 reduces `gradients` on `stream`; a second GPU, if any, joins with its own buffer.
  int visible = 0;
  if (!ok(cudaGetDeviceCount(&visible), "cudaGetDeviceCount")) return 1;
  const int nccl_gpus = visible < kNcclGpusMax ? visible : kNcclGpusMax;
  ncclComm_t comms[kNcclGpusMax] = {};
  const int devices[kNcclGpusMax] = {0, 1};
  float* peer_gradients = nullptr;
  cudaStream_t peer_stream = nullptr;
  if (ncclCommInitAll(comms, nccl_gpus, devices) != ncclSuccess) {
    std::fprintf(stderr, "tiny_train: ncclCommInitAll failed\n");
    return 1;
  }
  if (nccl_gpus > 1) {
    if (!ok(cudaSetDevice(1), "cudaSetDevice") ||
        !ok(cudaMalloc(&peer_gradients, kElements * sizeof(float)), "cudaMalloc") ||
        !ok(cudaMemset(peer_gradients, 0, kElements * sizeof(float)), "cudaMemset") ||
        !ok(cudaStreamCreate(&peer_stream), "cudaStreamCreate") ||
        !ok(cudaSetDevice(0), "cudaSetDevice")) {
      return 1;
    }
  }
#endif
  const float alpha = 1.0f;
  const float beta = 0.0f;
  for (int step = 0; step < steps; ++step) {
    const std::string range = "ProfilerStep#" + std::to_string(step);
    nvtxRangePushA(range.c_str());
    if (!ok(cudaMemcpyAsync(a, host.data(), kElements * sizeof(__nv_bfloat16),
                            cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync") ||
        !ok(cudaMemcpyAsync(b, a, kElements * sizeof(__nv_bfloat16), cudaMemcpyDeviceToDevice,
                            stream),
            "cudaMemcpyAsync") ||
        !ok(cudaMemsetAsync(gradients, 0, kElements * sizeof(float), stream), "cudaMemsetAsync")) {
      return 1;
    }
    for (int g = 0; g < kGemmsPerStep; ++g) {
      if (!ok(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, kSide, kSide, kSide, &alpha, a,
                           CUDA_R_16BF, kSide, b, CUDA_R_16BF, kSide, &beta, c, CUDA_R_16BF, kSide,
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx")) {
        return 1;
      }
      scaled_tanh<<<(kElements + 255) / 256, 256, 0, stream>>>(c, kElements);
      if (!ok(cudaGetLastError(), "scaled_tanh")) return 1;
    }
#ifdef ATTUNE_HAVE_NCCL
    bool reduced = ncclGroupStart() == ncclSuccess &&
                   ncclAllReduce(gradients, gradients, kElements, ncclFloat32, ncclSum, comms[0],
                                 stream) == ncclSuccess;
    if (reduced && nccl_gpus > 1) {
      reduced = ncclAllReduce(peer_gradients, peer_gradients, kElements, ncclFloat32, ncclSum,
                              comms[1], peer_stream) == ncclSuccess;
    }
    if (!reduced || ncclGroupEnd() != ncclSuccess) {
      std::fprintf(stderr, "tiny_train: ncclAllReduce failed\n");
      return 1;
    }
    if (nccl_gpus > 1 && !ok(cudaStreamSynchronize(peer_stream), "cudaStreamSynchronize")) {
      return 1;
    }
#endif
    if (!ok(cudaMemcpyAsync(host.data(), c, kElements * sizeof(__nv_bfloat16),
                            cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync") ||
        !ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) {
      return 1;
    }
    nvtxRangePop();
  }
#ifdef ATTUNE_HAVE_NCCL
  for (int g = 0; g < nccl_gpus; ++g) ncclCommDestroy(comms[g]);
  if (nccl_gpus > 1) {
    cudaSetDevice(1);
    cudaStreamDestroy(peer_stream);
    cudaFree(peer_gradients);
    cudaSetDevice(0);
  }
#endif
  cublasDestroy(blas);
  cudaStreamDestroy(stream);
  cudaFree(gradients);
  cudaFree(c);
  cudaFree(b);
  cudaFree(a);
  std::printf("tiny_train: %d steps done\n", steps);
  return 0;
}
