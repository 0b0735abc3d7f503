// attune-gpu-probe: measures the GPU it runs on and writes a simulator hardware TOML calibrated to
// it (cuda/hardware_toml.h), so `attune sim predict --gpu probe.toml` estimates for this machine.
//
// Measures: bf16 GEMM throughput at the model's shapes (cuBLASLt, TN layout, fp32 accumulation),
// fp8 (e4m3) GEMMs where the device has fp8 tensor cores (compute capability 8.9 or later), HBM
// bandwidth as a device-to-device copy (bytes read + written per second), and, where more than
// one GPU is visible and NCCL was found at build time, the all-reduce bus bandwidth over all of
// them. Everything it does not measure comes from the preset of the same GPU (--base).
//
// Exit status: 0 with the file written; 1 with one line on stderr (no GPU, a CUDA error, a bad
// argument).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#ifdef ATTUNE_HAVE_NCCL
#include <nccl.h>
#endif

#include "adapters/model/presets.h"
#include "cuda/hardware_toml.h"

namespace attune::gpu {
namespace {

constexpr int kWarmupIterations = 3;
constexpr std::size_t kGemmWorkspaceBytes = 64 << 20;
constexpr std::int64_t kGemmSideMax = 65'536;
constexpr double kFp8ComputeCapabilityMin = 8.9;
constexpr std::size_t kAllReduceBytes = 256 << 20;

// A failed CUDA/cuBLAS/NCCL call: its message, for one line on stderr.
struct ProbeError {
  std::string message;
};

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw ProbeError{std::string(what) + ": " + cudaGetErrorString(status)};
  }
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw ProbeError{std::string(what) + ": cuBLAS status " + std::to_string(status)};
  }
}

// Device memory, freed on scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    check(cudaMalloc(&data_, bytes), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Random, finite inputs: GEMMs on zeros run faster than on data (less switching power).
void fill_random(DeviceBuffer& buffer, bool fp8, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<std::uint8_t> host(buffer.bytes());
  if (fp8) {
    for (std::uint8_t& b : host) {
      b = static_cast<std::uint8_t>(random() & 0xB7);  // |x| < 1, never the NaN encoding
    }
  } else {
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    for (std::size_t i = 0; i + 1 < host.size(); i += 2) {
      const float f = value(random);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &f, sizeof bits);
      host[i] = static_cast<std::uint8_t>(bits >> 16);  // bf16 is the upper half of a float
      host[i + 1] = static_cast<std::uint8_t>(bits >> 24);
    }
  }
  check(cudaMemcpy(buffer.get(), host.data(), host.size(), cudaMemcpyHostToDevice),
        "cudaMemcpy (inputs)");
}

double elapsed_ms(cudaEvent_t start, cudaEvent_t stop) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  return ms;
}

class Timer {
 public:
  Timer() {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start(cudaStream_t stream) { check(cudaEventRecord(start_, stream), "cudaEventRecord"); }
  double stop_ms(cudaStream_t stream) {
    check(cudaEventRecord(stop_, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    return elapsed_ms(start_, stop_);
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

struct Shape {
  std::int64_t m = 0, n = 0, k = 0;
};

// C[m×n] (bf16) = op(A)·B with A stored k×m and B k×n, column-major: the TN layout cuBLASLt's
// fp8 kernels require, used for bf16 too so both run the same problem.
GemmMeasurement time_gemm(cublasLtHandle_t lt, const Shape& s, bool fp8, int iterations) {
  const cudaDataType_t input = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const std::size_t input_bytes = fp8 ? 1 : 2;
  DeviceBuffer a(static_cast<std::size_t>(s.k * s.m) * input_bytes);
  DeviceBuffer b(static_cast<std::size_t>(s.k * s.n) * input_bytes);
  DeviceBuffer c(static_cast<std::size_t>(s.m * s.n) * 2);
  DeviceBuffer workspace(kGemmWorkspaceBytes);
  fill_random(a, fp8, 1);
  fill_random(b, fp8, 2);

  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a_layout = nullptr, b_layout = nullptr, c_layout = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul descriptor");
  const cublasOperation_t transpose = CUBLAS_OP_T;
  check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                       sizeof transpose),
        "matmul transpose");
  check(cublasLtMatrixLayoutCreate(&a_layout, input, static_cast<std::uint64_t>(s.k),
                                   static_cast<std::uint64_t>(s.m), s.k),
        "A layout");
  check(cublasLtMatrixLayoutCreate(&b_layout, input, static_cast<std::uint64_t>(s.k),
                                   static_cast<std::uint64_t>(s.n), s.k),
        "B layout");
  check(cublasLtMatrixLayoutCreate(&c_layout, CUDA_R_16BF, static_cast<std::uint64_t>(s.m),
                                   static_cast<std::uint64_t>(s.n), s.m),
        "C layout");
  check(cublasLtMatmulPreferenceCreate(&preference), "matmul preference");
  const std::uint64_t workspace_bytes = kGemmWorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_bytes, sizeof workspace_bytes),
        "matmul workspace");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  check(cublasLtMatmulAlgoGetHeuristic(lt, desc, a_layout, b_layout, c_layout, c_layout, preference,
                                       1, &heuristic, &found),
        "matmul heuristic");
  if (found == 0) {
    throw ProbeError{"cuBLASLt has no algorithm for " + std::string(fp8 ? "fp8" : "bf16") +
                     " GEMM " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                     std::to_string(s.k)};
  }
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const auto run = [&] {
    check(cublasLtMatmul(lt, desc, &alpha, a.get(), a_layout, b.get(), b_layout, &beta, c.get(),
                         c_layout, c.get(), c_layout, &heuristic.algo, workspace.get(),
                         kGemmWorkspaceBytes, nullptr),
          "cublasLtMatmul");
  };
  for (int i = 0; i < kWarmupIterations; ++i) run();
  Timer timer;
  timer.start(nullptr);
  for (int i = 0; i < iterations; ++i) run();
  const double ms = timer.stop_ms(nullptr);
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(c_layout);
  cublasLtMatrixLayoutDestroy(b_layout);
  cublasLtMatrixLayoutDestroy(a_layout);
  cublasLtMatmulDescDestroy(desc);
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
                       static_cast<double>(s.k) * iterations;
  return GemmMeasurement{s.m, s.n, s.k, flops / (ms * 1e-3) / 1e12};
}

double time_copy_gb_per_s(std::size_t bytes, int iterations) {
  DeviceBuffer from(bytes);
  DeviceBuffer to(bytes);
  check(cudaMemset(from.get(), 1, bytes), "cudaMemset");
  for (int i = 0; i < kWarmupIterations; ++i) {
    check(cudaMemcpyAsync(to.get(), from.get(), bytes, cudaMemcpyDeviceToDevice, nullptr),
          "cudaMemcpyAsync");
  }
  Timer timer;
  timer.start(nullptr);
  for (int i = 0; i < iterations; ++i) {
    check(cudaMemcpyAsync(to.get(), from.get(), bytes, cudaMemcpyDeviceToDevice, nullptr),
          "cudaMemcpyAsync");
  }
  const double ms = timer.stop_ms(nullptr);
  return 2.0 * static_cast<double>(bytes) * iterations / (ms * 1e-3) / 1e9;
}

#ifdef ATTUNE_HAVE_NCCL
void check(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    throw ProbeError{std::string(what) + ": " + ncclGetErrorString(status)};
  }
}

// Bus bandwidth (NCCL's busbw: algbw · 2(n−1)/n) of a bf16 all-reduce over every visible GPU,
// driven from this one process.
double time_all_reduce_bus_gb_per_s(int gpus, int iterations) {
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(gpus));
  std::vector<int> devices(static_cast<std::size_t>(gpus));
  for (int d = 0; d < gpus; ++d) devices[static_cast<std::size_t>(d)] = d;
  check(ncclCommInitAll(comms.data(), gpus, devices.data()), "ncclCommInitAll");
  std::vector<void*> buffers(static_cast<std::size_t>(gpus), nullptr);
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(gpus), nullptr);
  for (int d = 0; d < gpus; ++d) {
    check(cudaSetDevice(d), "cudaSetDevice");
    check(cudaMalloc(&buffers[static_cast<std::size_t>(d)], kAllReduceBytes), "cudaMalloc");
    check(cudaMemset(buffers[static_cast<std::size_t>(d)], 0, kAllReduceBytes), "cudaMemset");
    check(cudaStreamCreate(&streams[static_cast<std::size_t>(d)]), "cudaStreamCreate");
  }
  const auto all_reduce = [&] {
    check(ncclGroupStart(), "ncclGroupStart");
    for (int d = 0; d < gpus; ++d) {
      const auto i = static_cast<std::size_t>(d);
      check(ncclAllReduce(buffers[i], buffers[i], kAllReduceBytes / 2, ncclBfloat16, ncclSum,
                          comms[i], streams[i]),
            "ncclAllReduce");
    }
    check(ncclGroupEnd(), "ncclGroupEnd");
  };
  for (int i = 0; i < kWarmupIterations; ++i) all_reduce();
  for (int d = 0; d < gpus; ++d) {
    check(cudaSetDevice(d), "cudaSetDevice");
    check(cudaStreamSynchronize(streams[static_cast<std::size_t>(d)]), "cudaStreamSynchronize");
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  double ms = 0;
  {
    Timer timer;
    timer.start(streams[0]);
    for (int i = 0; i < iterations; ++i) all_reduce();
    ms = timer.stop_ms(streams[0]);
  }
  for (int d = 0; d < gpus; ++d) {
    const auto i = static_cast<std::size_t>(d);
    check(cudaSetDevice(d), "cudaSetDevice");
    check(cudaStreamSynchronize(streams[i]), "cudaStreamSynchronize");
    cudaStreamDestroy(streams[i]);
    cudaFree(buffers[i]);
    ncclCommDestroy(comms[i]);
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  const double algorithm_gb_per_s =
      static_cast<double>(kAllReduceBytes) * iterations / (ms * 1e-3) / 1e9;
  return algorithm_gb_per_s * 2.0 * (gpus - 1) / gpus;
}
#endif

std::optional<Shape> parse_shape(const std::string& text) {
  Shape s;
  char x1 = 0, x2 = 0;
  long long m = 0, n = 0, k = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%lld%c%lld%c%lld%c", &m, &x1, &n, &x2, &k, &rest) != 5 ||
      x1 != 'x' || x2 != 'x') {
    return std::nullopt;
  }
  s = Shape{m, n, k};
  const auto valid = [](std::int64_t side) { return side >= 16 && side <= kGemmSideMax; };
  if (!valid(s.m) || !valid(s.n) || !valid(s.k)) return std::nullopt;
  return s;
}

// The preset of the same GPU: the probe measures efficiencies against its spec-sheet peaks.
std::optional<std::string> default_base(const cudaDeviceProp& p) {
  const double gib = static_cast<double>(p.totalGlobalMem) / (1 << 30);
  const std::string name = p.name;
  if (p.major == 8 && p.minor == 0) return "a100-80g";
  if (p.major == 9) return gib > 100 ? "h200" : "h100";
  if (p.major == 10) return name.find("GB200") != std::string::npos ? "gb200" : "b200";
  return std::nullopt;
}

struct Options {
  std::string output = "gpu-probe.toml";
  std::string base;
  std::string name;
  std::vector<std::string> gemms;
  std::int64_t hidden = 0;
  std::int64_t ffn_hidden = 0;
  std::int64_t tokens = 0;
  int iterations = 20;
  double copy_gib = 1.0;
  bool skip_fp8 = false;
  int device = 0;
};

// The GEMMs of a transformer layer with `hidden`, `ffn` and `tokens` (micro-batch × sequence):
// QKV, attention output, MLP up (gated: 2·ffn) and MLP down.
std::vector<Shape> model_shapes(std::int64_t hidden, std::int64_t ffn, std::int64_t tokens) {
  return {{tokens, 3 * hidden, hidden},
          {tokens, hidden, hidden},
          {tokens, 2 * ffn, hidden},
          {tokens, hidden, ffn}};
}

// The GEMMs to time: those given with --gemm, a model's layer, or a spread of sizes. Nullopt
// (with the error printed) when a --gemm does not parse.
std::optional<std::vector<Shape>> probe_shapes(const Options& o) {
  std::vector<Shape> shapes;
  for (const std::string& text : o.gemms) {
    const std::optional<Shape> s = parse_shape(text);
    if (!s) {
      std::fprintf(stderr, "attune-gpu-probe: --gemm %s: expected MxNxK, each side 16..%lld\n",
                   text.c_str(), static_cast<long long>(kGemmSideMax));
      return std::nullopt;
    }
    shapes.push_back(*s);
  }
  if (o.hidden > 0 && o.ffn_hidden > 0 && o.tokens > 0) {
    for (const Shape& s : model_shapes(o.hidden, o.ffn_hidden, o.tokens)) shapes.push_back(s);
  }
  if (shapes.empty()) {
    // A spread of sizes, so the fit sees both the plateau and the small-matrix fall-off.
    shapes = {{8192, 8192, 8192}, {4096, 4096, 4096}, {2048, 8192, 4096},
              {1024, 4096, 4096}, {512, 2048, 2048},  {256, 1024, 1024}};
  }
  return shapes;
}

// BF16 GEMMs of `shapes` (and FP8 ones where the GPU has FP8 cores and they are not skipped),
// printed as they are timed.
void measure_gemms(const Options& o, const std::vector<Shape>& shapes, double capability,
                   ProbeMeasurements& measured) {
  cublasLtHandle_t lt = nullptr;
  check(cublasLtCreate(&lt), "cublasLtCreate");
  const bool fp8 = !o.skip_fp8 && capability >= kFp8ComputeCapabilityMin;
  for (const Shape& s : shapes) {
    for (const bool in_fp8 : {false, true}) {
      if (in_fp8 && !fp8) continue;
      std::vector<GemmMeasurement>& into = in_fp8 ? measured.fp8 : measured.bf16;
      into.push_back(time_gemm(lt, s, in_fp8, o.iterations));
      std::printf("%s GEMM %lldx%lldx%lld: %.1f TFLOP/s\n", in_fp8 ? "fp8" : "bf16",
                  static_cast<long long>(s.m), static_cast<long long>(s.n),
                  static_cast<long long>(s.k), into.back().tflops);
    }
  }
  if (!fp8) std::printf("fp8 GEMM: skipped (%s)\n", o.skip_fp8 ? "--skip-fp8" : "no fp8 cores");
  cublasLtDestroy(lt);
}

// The base preset with what was measured, checked by the hardware parser and written to
// --output. Returns the exit code.
int write_calibrated(const Options& o, const cudaDeviceProp& p, int devices,
                     const sim::HardwareSpec& base, const ProbeMeasurements& measured) {
  const double capability = p.major + p.minor / 10.0;
  const std::string name = o.name.empty() ? "measured-" + base.name : o.name;
  const sim::HardwareSpec calibrated = calibrate_hardware(base, measured, name);
  const GemmFit fit = fit_gemm_curve(measured.bf16, base.bf16_dense_tflops);
  char comment[512];
  std::snprintf(comment, sizeof comment,
                "Written by attune-gpu-probe on %s (compute capability %.1f, %d GPU(s)).\n"
                "Measured: memory capacity, GEMM efficiencies (bf16 fit rms error %.1f%%), HBM "
                "efficiency%s.\nEverything else is the %s preset's.",
                p.name, capability, devices, 100 * fit.rms_relative_error,
                measured.all_reduce_bus_gb_per_s ? ", NVLink collective efficiency" : "",
                base.name.c_str());
  const std::string text = hardware_toml(calibrated, comment);
  const Result<sim::HardwareSpec> check_parse = sim::parse_hardware_toml(text, o.output);
  if (!check_parse.ok()) {
    std::fprintf(stderr, "attune-gpu-probe: the calibrated description is invalid: %s\n",
                 check_parse.error().c_str());
    return 1;
  }
  std::ofstream file(o.output, std::ios::trunc);
  file << text;
  file.close();
  if (!file) {
    std::fprintf(stderr, "attune-gpu-probe: %s: cannot write\n", o.output.c_str());
    return 1;
  }
  std::printf("wrote %s (gemm_bf16_efficiency %.3f, gemm_half_efficiency_dim %.0f)\n",
              o.output.c_str(), calibrated.gemm_bf16_efficiency,
              calibrated.gemm_half_efficiency_dim);
  return 0;
}

int run(const Options& o) {
  int devices = 0;
  const cudaError_t count_status = cudaGetDeviceCount(&devices);
  if (count_status != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "attune-gpu-probe: no CUDA GPU is visible (%s)\n",
                 count_status != cudaSuccess ? cudaGetErrorString(count_status) : "0 devices");
    return 1;
  }
  if (o.device < 0 || o.device >= devices) {
    std::fprintf(stderr, "attune-gpu-probe: --device %d: %d GPU(s) visible\n", o.device, devices);
    return 1;
  }
  const std::optional<std::vector<Shape>> shapes = probe_shapes(o);
  if (!shapes) return 1;

  check(cudaSetDevice(o.device), "cudaSetDevice");
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, o.device), "cudaGetDeviceProperties");
  const double capability = p.major + p.minor / 10.0;
  std::string base_name = o.base;
  if (base_name.empty()) {
    const std::optional<std::string> base = default_base(p);
    if (!base) {
      std::fprintf(stderr,
                   "attune-gpu-probe: no preset for %s (compute capability %.1f); pass --base\n",
                   p.name, capability);
      return 1;
    }
    base_name = *base;
  }
  const Result<sim::HardwareSpec> base = sim::load_hardware(base_name);
  if (!base.ok()) {
    std::fprintf(stderr, "attune-gpu-probe: %s\n", base.error().c_str());
    return 1;
  }

  ProbeMeasurements measured;
  measured.device_name = p.name;
  measured.compute_capability = capability;
  measured.gpus = devices;
  measured.memory_total_gib = static_cast<double>(p.totalGlobalMem) / (1 << 30);
  measured.sm_count = p.multiProcessorCount;
  std::printf("device %d: %s, compute capability %.1f, %d SMs, %.1f GiB; %d GPU(s) visible\n",
              o.device, p.name, capability, p.multiProcessorCount, measured.memory_total_gib,
              devices);

  measure_gemms(o, *shapes, capability, measured);

  const auto copy_bytes = static_cast<std::size_t>(o.copy_gib * (1 << 30));
  measured.hbm_copy_gb_per_s = time_copy_gb_per_s(copy_bytes, o.iterations);
  std::printf("HBM copy: %.0f GB/s (read + write)\n", measured.hbm_copy_gb_per_s);

  if (devices > 1) {
#ifdef ATTUNE_HAVE_NCCL
    measured.all_reduce_bus_gb_per_s = time_all_reduce_bus_gb_per_s(devices, o.iterations);
    std::printf("NCCL all-reduce over %d GPUs: %.0f GB/s bus bandwidth\n", devices,
                *measured.all_reduce_bus_gb_per_s);
#else
    std::printf("collective bandwidth: skipped (built without NCCL)\n");
#endif
  } else {
    std::printf("collective bandwidth: skipped (one GPU)\n");
  }

  return write_calibrated(o, p, devices, *base, measured);
}

}  // namespace
}  // namespace attune::gpu

int main(int argc, char** argv) {
  attune::gpu::Options o;
  CLI::App app{"Measure this machine's GPUs and write a simulator hardware TOML"};
  app.add_option("-o,--output", o.output, "hardware TOML to write")->capture_default_str();
  app.add_option("--base", o.base,
                 "preset or TOML for what is not measured (default: the preset of this GPU)");
  app.add_option("--name", o.name, "name in the TOML (default: measured-<base>)");
  app.add_option("--gemm", o.gemms, "GEMM shape MxNxK to time (repeatable)");
  app.add_option("--hidden", o.hidden, "model hidden size (with --ffn-hidden and --tokens)");
  app.add_option("--ffn-hidden", o.ffn_hidden, "model FFN hidden size");
  app.add_option("--tokens", o.tokens, "tokens per micro-batch (micro-batch size x sequence)");
  app.add_option("--iterations", o.iterations, "timed iterations per measurement")
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  app.add_option("--copy-gib", o.copy_gib, "bytes per HBM copy, GiB")
      ->check(CLI::Range(0.01, 64.0))
      ->capture_default_str();
  app.add_flag("--skip-fp8", o.skip_fp8, "do not time fp8 GEMMs");
  app.add_option("--device", o.device, "GPU to measure")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return attune::gpu::run(o);
  } catch (const attune::gpu::ProbeError& e) {
    std::fprintf(stderr, "attune-gpu-probe: %s\n", e.message.c_str());
    return 1;
  }
}
