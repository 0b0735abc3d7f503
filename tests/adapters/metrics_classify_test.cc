// Failure classes from the exact error strings of shared/reference/megatron_lm.md §2.3, together
// with the launcher's final state and the hang detector's silence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "adapters/metrics/failure_class.h"
#include "adapters/metrics/megatron_log.h"
#include "adapters/metrics/run_reading.h"

namespace attune {
namespace {

// ---- the exact strings -------------------------------------------------------------------------

constexpr const char* kOomRecent =
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 139.80 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this "
    "process has 138.72 GiB memory in use. Of the allocated memory 131.57 GiB is allocated by "
    "PyTorch, and 5.43 GiB is reserved by PyTorch but unallocated. If reserved but unallocated "
    "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";
constexpr const char* kOomOlder =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 79.15 GiB "
    "total capacty; 76.01 GiB already allocated; 1.02 GiB free; 77.30 GiB reserved in total by "
    "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
    "fragmentation.";
constexpr const char* kNcclTimeout =
    "[rank3]:[E822 15:40:01.123456789 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.";
constexpr const char* kNcclTimeoutFollowUps =
    "[rank3]:[E822 15:40:01.123456790 ProcessGroupNCCL.cpp:2168] Some NCCL operations have failed "
    "or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might "
    "run on corrupted/incomplete data.\n"
    "[rank3]:[E822 15:40:01.123456791 ProcessGroupNCCL.cpp:2174] To avoid data inconsistency, we "
    "are taking the entire process down.\n";
constexpr const char* kNcclSystemError =
    "[rank5]: torch.distributed.DistBackendError: NCCL error in: "
    "/opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, unhandled system "
    "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3\n"
    "[rank5]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed "
    "or device error.\n";
constexpr const char* kNcclRemoteError =
    "[rank2]: ncclRemoteError: A call failed possibly due to a network error or a remote process "
    "exiting prematurely.";
constexpr const char* kNcclInternalError =
    "[rank2]: torch.distributed.DistBackendError: NCCL error in: "
    "/opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, internal error - please report "
    "this issue to the NCCL developers, NCCL version 2.27.3\n[rank2]: ncclInternalError: Internal "
    "check failed.\n";
constexpr const char* kChildFailed =
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ";
constexpr const char* kNanCheckDisabled =
    "[rank0]: RuntimeError: Rank 0, node node-03, device 0, iteration 7: Unexpected result nan "
    "(message='found NaN in local forward loss calculation')";
constexpr const char* kNanCheckValidate =
    "Unexpected result nan on rank 4 at iteration #7 invocation #1 (message='found NaN in local "
    "grad norm for bucket #0 in backward pass before data-parallel communication collective')";
constexpr const char* kConfigAssertion =
    "[rank0]: AssertionError: world size (64) is not divisible by total_model_size "
    "(total_model_size=48)";
constexpr const char* kConfigRuntime = "RuntimeError: world_size (64) is not divisible by 48";
constexpr const char* kIllegalAccess =
    "RuntimeError: CUDA error: an illegal memory access was encountered";

constexpr const char* kTraceback =
    "[rank1]: Traceback (most recent call last):\n"
    "[rank1]:   File \"/workspace/Megatron-LM/pretrain_gpt.py\", line 312, in <module>\n"
    "[rank1]:     pretrain(\n";

MegatronLog log_of(const std::string& text) { return read_megatron_log(text + "\n"); }

std::optional<Failure> classify(const std::string& text, const std::string& state = "FAILED",
                                bool silent = false) {
  return classify_failure(log_of(text), JobOutcome{state, silent});
}

std::optional<FailureClass> class_of(const std::string& text, const std::string& state = "FAILED",
                                     bool silent = false) {
  const std::optional<Failure> failure = classify(text, state, silent);
  if (!failure) return std::nullopt;
  return failure->failure_class;
}

TEST(MetricsClassifyStrings, OutOfMemoryInEveryForm) {
  EXPECT_EQ(class_of(std::string(kTraceback) + kOomRecent), FailureClass::kOom);
  EXPECT_EQ(class_of(kOomOlder), FailureClass::kOom);
  EXPECT_EQ(class_of("[rank2]: torch.distributed.DistBackendError: NCCL error in: "
                     "/opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, "
                     "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version "
                     "2.27.3\n"
                     "[rank2]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
                     "[rank2]: Last error:\n[rank2]: Cuda failure 2 'out of memory'"),
            FailureClass::kOom);
  EXPECT_EQ(class_of("RuntimeError: CUDA error: out of memory"), FailureClass::kOom);
  EXPECT_EQ(class_of("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
                     "`cublasCreate(handle)`"),
            FailureClass::kOom);
}

TEST(MetricsClassifyStrings, TheWatchdogTimeoutIsAHang) {
  EXPECT_EQ(class_of(std::string(kNcclTimeout) + "\n" + kNcclTimeoutFollowUps +
                     "terminate called after throwing an instance of 'c10::DistBackendError'"),
            FailureClass::kHang);
}

TEST(MetricsClassifyStrings, NcclNetworkErrorsAreInfrastructure) {
  EXPECT_EQ(class_of(std::string(kTraceback) + kNcclSystemError + kChildFailed),
            FailureClass::kInfra);
  EXPECT_EQ(class_of(kNcclRemoteError), FailureClass::kInfra);
  EXPECT_EQ(class_of(kNcclInternalError), FailureClass::kInfra);
  EXPECT_EQ(class_of("srun: error: Node failure on node-07"), FailureClass::kInfra);
  EXPECT_EQ(class_of("slurmstepd: error: *** STEP 4242.0 ON node-07 CANCELLED AT "
                     "2026-08-22T15:40:01 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"),
            FailureClass::kInfra);
  EXPECT_EQ(class_of("RuntimeError: CUDA error: uncorrectable ECC error encountered"),
            FailureClass::kInfra);
}

TEST(MetricsClassifyStrings, ProgramErrorsAreCrashes) {
  for (const char* text :
       {kNanCheckDisabled, kNanCheckValidate, kConfigAssertion, kConfigRuntime, kIllegalAccess}) {
    EXPECT_EQ(class_of(std::string(kTraceback) + text), FailureClass::kCrash) << text;
    EXPECT_EQ(class_of(text, "COMPLETED"), FailureClass::kCrash) << text;
  }
  EXPECT_EQ(class_of("[rank0]: AssertionError"), FailureClass::kCrash);
}

TEST(MetricsClassifyStrings, ATracebackAloneIsACrash) {
  EXPECT_EQ(class_of(std::string(kTraceback) + kChildFailed, ""), FailureClass::kCrash);
}

TEST(MetricsClassifyStrings, TheDecidingLineAndItsNumberAreReported) {
  const std::optional<Failure> failure =
      classify("> building GPT2BPETokenizer tokenizer ...\n" + std::string(kTraceback) +
               kOomRecent + "\n" + kNcclRemoteError);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->failure_class, FailureClass::kOom);
  EXPECT_EQ(failure->message, kOomRecent);
  EXPECT_EQ(failure->line_number, 5u);
}

// NVSHMEM failing to start DeepEP's transport (IBGDA across nodes on a network without it) at the
// first dispatch prints its own lines before the child's traceback: the line naming the failure
// decides, not the traceback after it.
TEST(MetricsClassifyStrings, AnNvshmemStartFailureIsTheCrashsCause) {
  const std::string nvshmem =
      "training ...\n"
      "/opt/nvshmem/src/host/transport/transport.cpp:nvshmemi_transport_init:275: init failed "
      "for transport: IBGDA\n"
      "/opt/nvshmem/src/host/init/init.cu:nvshmemi_check_state_and_init:1080: nvshmem "
      "initialization failed, exiting\n";
  const std::optional<Failure> failure = classify(nvshmem + kTraceback + kChildFailed);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->failure_class, FailureClass::kCrash);
  EXPECT_NE(failure->message.find("nvshmem initialization failed"), std::string::npos)
      << failure->message;
  EXPECT_EQ(failure->line_number, 3u);
  EXPECT_EQ(failure->cause, FailureCause::kTransportStart);
}

// DeepEP across two B300 nodes whose fabric creates no DCT queue pairs (Megatron-Bridge issue
// 5050, NeMo 26.04.01; the same four lines in a public B300 report on NeMo 26.02 and NVSHMEM
// issue 33): NVSHMEM's start-up ends on "setup connections failed" and the log never says
// "initialization failed". Read before the marks knew it: a crash of unknown cause, decided by
// Slurm's FAILED alone.
TEST(MetricsClassifyStrings, NvshmemsSetupConnectionFailureOnARealFabricIsATransportStart) {
  const std::string b300 =
      "/dvs/p4/build/sw/rel/gpgpu/toolkit/r13.0/main_nvshmem/src/modules/transport/ibgda/"
      "ibgda.cpp:2234: NULL value Unable to create ah.\n"
      "WARN: Failed to initialize all selected devices. Perf may be limited.\n"
      "/dvs/p4/build/sw/rel/gpgpu/toolkit/r13.0/main_nvshmem/src/modules/transport/ibgda/"
      "ibgda.cpp:2966: non-zero status: 7 create DCT share err.\n"
      "/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.9/main_nvshmem/src/host/transport/transport.cpp:420: "
      "non-zero status: 7 connect EPS failed \n"
      "/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.9/main_nvshmem/src/host/init/init.cu:1047: non-zero "
      "status: 7 nvshmem setup connections failed";
  const std::optional<Failure> failure = classify(b300);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->failure_class, FailureClass::kCrash);
  EXPECT_EQ(failure->cause, FailureCause::kTransportStart);
  EXPECT_EQ(failure->line_number, 5u);
}

// Spectrum MPI's banner opens an LSF job's stderr and the launch goes on (a real Summit job,
// tests/data/real-world/logs-heldout/summit-smore67b-bad-batch-3363457.e): a bare "Error:" is a
// tool's word, not a Python exception, unless it ends a traceback.
TEST(MetricsClassifyStrings, ABareErrorBannerIsNoExceptionOutsideATraceback) {
  // As in that stderr file: no rank labels and no Megatron start-up line, so nothing marks the
  // banner as a preamble.
  const std::string assertion =
      "AssertionError: global batch size (1024) is not divisible by micro batch size (1) times "
      "data parallel size (48)";
  const std::optional<Failure> failure = classify(
      "Error: SMPI environment generator script not found at:\n"
      "Continuing to launch. Beware, the Spectrum MPI environment may not be completely setup.\n"
      "Traceback (most recent call last):\n"
      "  File \"/gpfs/Megatron-DeepSpeed/megatron/microbatches.py\", line 64, in __init__\n"
      "    assert global_batch_size % micro_batch_times_data_parallel == 0, \\\n" +
      assertion);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->message, assertion);
  const std::optional<Failure> ending = classify(
      "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
      "Error: bad value");
  ASSERT_TRUE(ending.has_value());
  EXPECT_EQ(ending->message, "Error: bad value");  // __main__'s own Error ends its traceback
}

// The cause is the deciding line's mark, or the launcher's fact; a line that names no cause in
// the list (an assertion, a vanished peer) leaves it unknown.
TEST(MetricsClassifyStrings, TheDecidingEvidenceNamesItsCause) {
  const std::pair<std::string, FailureCause> lines[] = {
      {std::string(kTraceback) + kOomRecent, FailureCause::kOutOfMemory},
      {std::string(kNcclTimeout) + "\n" + kNcclTimeoutFollowUps, FailureCause::kCollectiveTimeout},
      {std::string(kTraceback) + kNcclSystemError + kChildFailed, FailureCause::kSystem},
      {"NCCL WARN Call to ibv_reg_mr_iova2 failed with error Invalid argument",
       FailureCause::kNetwork},
      {kNcclRemoteError, FailureCause::kUnknown},
      {"srun: error: Node failure on node-07", FailureCause::kNodeFailure},
      {"RuntimeError: CUDA error: uncorrectable ECC error encountered", FailureCause::kGpuFault},
      {"OSError: [Errno 116] Stale file handle", FailureCause::kStorage},
      {kNanCheckDisabled, FailureCause::kNonFiniteValue},
      {kNanCheckValidate, FailureCause::kNonFiniteValue},
      {kConfigAssertion, FailureCause::kUnknown},
      {kIllegalAccess, FailureCause::kIllegalMemoryAccess},
  };
  for (const auto& [text, cause] : lines) {
    const std::optional<Failure> failure = classify(text);
    ASSERT_TRUE(failure.has_value()) << text;
    EXPECT_EQ(failure->cause, cause) << text << " -> " << to_string(failure->cause);
  }
  const std::pair<std::string, FailureCause> states[] = {
      {"OUT_OF_MEMORY", FailureCause::kOutOfMemory},
      {"NODE_FAIL", FailureCause::kNodeFailure},
      {"TIMEOUT", FailureCause::kTimeLimit},
      {"PREEMPTED", FailureCause::kPreemption},
      {"FAILED", FailureCause::kUnknown},
  };
  for (const auto& [state, cause] : states) {
    const std::optional<Failure> failure = classify("training ...", state);
    ASSERT_TRUE(failure.has_value()) << state;
    EXPECT_EQ(failure->cause, cause) << state << " -> " << to_string(failure->cause);
  }
  EXPECT_EQ(classify("training ...", "CANCELLED", true)->cause, FailureCause::kNoProgress);
}

TEST(MetricsClassifyStrings, ACleanLogShowsNoSign) {
  const MegatronLog log = log_of(
      "[rank1]:node-00:121:121 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via P2P/CUMEM/read\n"
      "[rank3]:/usr/lib/python3/dist-packages/te/attention.py:80: UserWarning: flash-attn v3 not "
      "found\n"
      "[rank0]:[W822 15:31:07.000000000 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group "
      "has NOT been destroyed before we destruct ProcessGroupNCCL.\n"
      "INFO:megatron.core.optimizer:Setting up optimizer with config OptimizerConfig(lr=0.0003)\n"
      "  seq_length ...................................... 4096\n"
      "exiting program at iteration 14");
  for (const auto& sign : log.first_signs) EXPECT_FALSE(sign.has_value()) << sign->text;
  EXPECT_EQ(classify_failure(log, JobOutcome{"COMPLETED", false}), std::nullopt);
}

// ---- root causes outrank their echoes ----------------------------------------------------------

TEST(MetricsClassifyCascades, AnOomOnOneRankOutranksTheOthersNcclErrorsAndTimeouts) {
  EXPECT_EQ(class_of(std::string(kNcclTimeout) + "\n" + kNcclRemoteError + "\n" + kTraceback +
                     kOomRecent + "\n" + kChildFailed),
            FailureClass::kOom);
}

TEST(MetricsClassifyCascades, AProgramErrorOutranksThePeersItLeftBehind) {
  // Rank 0 fails its NaN check; its peers see a vanished peer, then time out.
  EXPECT_EQ(class_of(std::string(kNcclRemoteError) + "\n" + kNcclTimeout + "\n" + kTraceback +
                     kNanCheckDisabled),
            FailureClass::kCrash);
}

TEST(MetricsClassifyCascades, ANetworkErrorOutranksTheTimeoutsItCauses) {
  EXPECT_EQ(class_of(std::string(kNcclTimeout) + "\n" + kNcclSystemError, "FAILED", true),
            FailureClass::kInfra);
}

TEST(MetricsClassifyCascades, AnEchoWithoutANetworkCauseIsNotInfrastructure) {
  EXPECT_EQ(class_of("[rank2]: torch.distributed.DistBackendError: NCCL communicator was "
                     "aborted on rank 2."),
            FailureClass::kCrash);
}

// ---- the launcher's state ----------------------------------------------------------------------

struct StateCase {
  const char* log;
  const char* state;
  bool silent;
  std::optional<FailureClass> expected;
  const char* message;  // nullptr: not checked
};

TEST(MetricsClassifyStates, FinalStateCombinations) {
  const std::string clean = "exiting program at iteration 14";
  const StateCase cases[] = {
      {"", "COMPLETED", false, std::nullopt, nullptr},
      {"", "", false, std::nullopt, nullptr},
      {"", "RUNNING", false, std::nullopt, nullptr},
      {"", "OUT_OF_MEMORY", false, FailureClass::kOom, "final state OUT_OF_MEMORY"},
      {"", "NODE_FAIL", false, FailureClass::kInfra, "final state NODE_FAIL"},
      {"", "BOOT_FAIL", false, FailureClass::kInfra, "final state BOOT_FAIL"},
      {"", "PREEMPTED", false, FailureClass::kInfra, "final state PREEMPTED"},
      {"", "TIMEOUT", false, FailureClass::kHang, "final state TIMEOUT"},
      {"", "RUNNING", true, FailureClass::kHang, "log silent past the hang timeout"},
      {"", "", true, FailureClass::kHang, nullptr},
      {"", "FAILED", false, FailureClass::kCrash, "final state FAILED"},
      // Cancelled by someone else is not the recipe's fault; cancelled for silence is a hang.
      {"", "CANCELLED", false, FailureClass::kInfra, "final state CANCELLED"},
      {"", "CANCELLED by 0", false, FailureClass::kInfra, "final state CANCELLED"},
      {"", "cancelled+", false, FailureClass::kInfra, "final state CANCELLED"},
      {"", "CANCELLED", true, FailureClass::kHang, nullptr},
      // Strings and states together.
      {kNcclRemoteError, "FAILED", false, FailureClass::kInfra, kNcclRemoteError},
      {kOomRecent, "NODE_FAIL", false, FailureClass::kOom, kOomRecent},
      {kConfigAssertion, "NODE_FAIL", false, FailureClass::kInfra, "final state NODE_FAIL"},
      {kConfigAssertion, "TIMEOUT", true, FailureClass::kCrash, kConfigAssertion},
      {kNcclSystemError, "TIMEOUT", false, FailureClass::kInfra, nullptr},
      {kNcclTimeout, "FAILED", false, FailureClass::kHang, kNcclTimeout},
      {kNcclTimeout, "COMPLETED", false, FailureClass::kHang, nullptr},
      {kChildFailed, "TIMEOUT", false, FailureClass::kHang, "final state TIMEOUT"},
      {kChildFailed, "COMPLETED", false, FailureClass::kCrash, kChildFailed},
      {kOomOlder, "OUT_OF_MEMORY", false, FailureClass::kOom, kOomOlder},
  };
  for (const StateCase& c : cases) {
    const std::string text = *c.log ? std::string(c.log) : clean;
    const std::optional<Failure> failure = classify(text, c.state, c.silent);
    const std::string label = std::string(c.state) + (c.silent ? " silent, " : ", ") + text;
    ASSERT_EQ(failure.has_value(), c.expected.has_value()) << label;
    if (!failure) continue;
    EXPECT_EQ(failure->failure_class, *c.expected) << label;
    if (c.message != nullptr) {
      EXPECT_EQ(failure->message, c.message) << label;
    }
  }
}

// ---- what the run amounts to -------------------------------------------------------------------

std::string complete_log() {
  std::ifstream in(std::string(ATTUNE_SOURCE_DIR) + "/tests/adapters/data/metrics/complete_14.log");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(MetricsClassifyReading, AFailureOutranksAMeasurement) {
  // The window was complete, but the job then failed (at its checkpoint save, say).
  const MegatronLog log = read_megatron_log(complete_log());
  const RunReading failed = read_run(log, JobOutcome{"FAILED", false}, MeasureRequest{});
  EXPECT_EQ(failed.kind, ReadingKind::kFailed);
  ASSERT_TRUE(failed.failure.has_value());
  EXPECT_EQ(failed.failure->failure_class, FailureClass::kCrash);
  EXPECT_EQ(failed.failure->message, "final state FAILED");
  EXPECT_EQ(failed.failure->line_number, 0U);
  EXPECT_FALSE(failed.measurement.has_value());
  const RunReading measured = read_run(log, JobOutcome{"COMPLETED", false}, MeasureRequest{});
  EXPECT_EQ(measured.kind, ReadingKind::kMeasured);
}

TEST(MetricsClassifyReading, AFailureComesBeforeMissingSettingsAndTheWindow) {
  // Iterations 1-2 without the arguments block, then an OOM: no seq, no GPU count, no window.
  std::string head;
  std::istringstream lines(complete_log());
  for (std::string line; std::getline(lines, line);) {
    if (line.find("iteration        1/") != std::string::npos ||
        line.find("iteration        2/") != std::string::npos) {
      head += line + "\n";
    }
  }
  const MegatronLog log = read_megatron_log(head + std::string(kTraceback) + kOomRecent + "\n");
  const RunReading reading = read_run(log, JobOutcome{"FAILED", false}, MeasureRequest{});
  ASSERT_EQ(reading.kind, ReadingKind::kFailed);
  EXPECT_EQ(reading.failure->failure_class, FailureClass::kOom);
  EXPECT_EQ(reading.failure->message, kOomRecent);
  // Without the OOM the same log lacks settings, and given them, a complete window.
  const MegatronLog cut = read_megatron_log(head);
  EXPECT_EQ(read_run(cut, JobOutcome{}, MeasureRequest{}).kind, ReadingKind::kBadRequest);
  MeasureRequest request;
  request.seq_length = 4096;
  request.gpus = 8;
  const RunReading incomplete = read_run(cut, JobOutcome{}, request);
  EXPECT_EQ(incomplete.kind, ReadingKind::kIncomplete);
  EXPECT_EQ(incomplete.reason, "the log stops at iteration 2, before the window's last step 13");
}

// ---- evidence as real clusters write it --------------------------------------------------------

TEST(MetricsEvidence, WarningLevelTracebacksAreNoSigns) {
  const MegatronLog log = log_of(
      "[rank24]:W0527 00:19:08.340000 50695 torch/_inductor/codecache.py:1052] [1/1] Traceback "
      "(most recent call last):\n"
      "[rank24]:W0527 00:19:08.340000 50695 torch/_inductor/codecache.py:1052] [1/1]   File "
      "\"/x.py\", line 1048, in f\n"
      "[rank24]:W0527 00:19:08.340000 50695 torch/_inductor/codecache.py:1052] [1/1] "
      "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/x'\n"
      "[rank0]:[W527 00:18:20.731438951 ProcessGroupNCCL.cpp:930] Warning: CUDA out of memory "
      "was retried");
  EXPECT_TRUE(log.signs.empty()) << log.signs.front().text;
}

TEST(MetricsEvidence, AnExceptionIsTheTracebacksLastLineWhateverItsName) {
  // StopIteration names no Error, and the header may be lost in a pasted excerpt.
  const std::optional<Failure> failure = classify(
      "[rank24]: File \"/swift/utils.py\", line 60, in get_batch\n"
      "[rank24]: data = next(data_iterator)\n"
      "[rank24]: StopIteration\n"
      "INFO: not an exception after the traceback ended\n",
      "");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->failure_class, FailureClass::kCrash);
  EXPECT_EQ(failure->message, "[rank24]: StopIteration");
}

TEST(MetricsEvidence, AChainedExceptionEchoesItsRootCause) {
  const std::optional<Failure> failure = classify(
      "[rank0]: Traceback (most recent call last):\n"
      "[rank0]:   File \"/torch/serialization.py\", line 967, in save\n"
      "[rank0]: RuntimeError: [enforce fail at inline_container.cc:858] . PytorchStreamWriter "
      "failed writing file data/5: file write failed\n"
      "[rank0]: \n"
      "[rank0]: During handling of the above exception, another exception occurred:\n"
      "[rank0]: \n"
      "[rank0]: Traceback (most recent call last):\n"
      "[rank0]:   File \"/torch/serialization.py\", line 798, in __exit__\n"
      "[rank0]: RuntimeError: [enforce fail at inline_container.cc:664] . unexpected pos 8 vs 5",
      "");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->failure_class, FailureClass::kInfra);
  EXPECT_EQ(failure->line_number, 3U);
  ASSERT_FALSE(failure->alternatives.empty());
  EXPECT_EQ(failure->alternatives.front().failure_class, FailureClass::kCrash);
  EXPECT_EQ(failure->alternatives.front().why, "traceback or error echo");
}

TEST(MetricsEvidence, ABatchScriptsErrorBeforeTrainingIsNotTheJobsEnd) {
  std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/home/u/.local/bin/wandb\", line 5, in <module>\n"
      "ModuleNotFoundError: No module named 'dataclasses'\n";
  // The training program starts (srun labels its lines), trains, and meets the time limit.
  for (int i = 1; i <= 3; ++i) {
    text += " 0: [2026-06-24 18:00:0" + std::to_string(i) + "] iteration        " +
            std::to_string(i) +
            "/     100 | consumed samples:          336 | elapsed time per iteration (ms): "
            "5000.0 | learning rate: 1.000000E-04 | global batch size:   336 | lm loss: "
            "5.000000E+00 | loss scale: 1.0 | grad norm: 1.000 | number of skipped iterations:   "
            "0 | number of nan iterations:   0 |\n";
  }
  text +=
      "[2026-06-24T19:02:35.012] error: *** JOB 2611435 ON nid007478 CANCELLED AT "
      "2026-06-24T19:02:35 DUE TO TIME LIMIT ***";
  const std::optional<Failure> failure = classify(text, "TIMEOUT");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->failure_class, FailureClass::kHang);
  EXPECT_EQ(failure->line_number, 7U);
  // Without the training, the same preamble error is all there is, and it decides.
  EXPECT_EQ(class_of(text.substr(0, text.find(" 0: ")), ""), FailureClass::kCrash);
}

TEST(MetricsEvidence, TheFailedTasksOfOneNodeOfSeveralAreABadNode) {
  const std::string tasks =
      "32: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 32.\n"
      "srun: error: nid006742: tasks 32-33: Exited with exit code 1\n"
      "srun: error: nid006742: tasks 34-35: Exited with exit code 1\n"
      "srun: error: nid006717: tasks 12,15: Killed\n"
      "srun: error: nid006709: tasks 8-9,11: Killed";
  const std::optional<Failure> failure = classify(tasks, "FAILED");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->failure_class, FailureClass::kInfra);
  EXPECT_EQ(failure->message, "tasks 32-35 failed on nid006742 alone, of 3 nodes");
  EXPECT_EQ(failure->failing_nodes, std::vector<std::string>{"nid006742"});
  EXPECT_EQ(failure->failing_tasks, (std::vector<std::uint32_t>{32, 33, 34, 35}));
  // Tasks failing on two nodes are no bad node: the echo decides, a crash.
  EXPECT_EQ(class_of(tasks + "\nsrun: error: nid006709: task 10: Exited with exit code 1"),
            FailureClass::kCrash);
}

TEST(MetricsEvidence, AnNcclErrorWithoutACauseIsOnlySuspectedInfra) {
  const std::optional<Failure> failure = classify(
      "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:77, unhandled "
      "cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->failure_class, FailureClass::kInfra);
  EXPECT_TRUE(failure->suspected);
  EXPECT_EQ(failure_class_text(*failure), "infra (suspected)");
  // A program error names the cause: the NCCL error is then its echo.
  EXPECT_EQ(class_of(std::string(kConfigAssertion) + "\nncclUnhandledCudaError: Call to CUDA "
                                                     "function failed."),
            FailureClass::kCrash);
}

TEST(MetricsEvidence, AHardwareFaultOutranksTheIllegalAccessItCauses) {
  EXPECT_EQ(
      class_of("GPU 00000000:04:00.0: Detected Critical Xid Error\n" + std::string(kIllegalAccess)),
      FailureClass::kInfra);
}

TEST(MetricsEvidence, ADivergedRunWithoutANanCheckIsACrash) {
  const std::optional<Failure> failure = classify(
      " iteration     5426/  250000 | consumed samples:        43408 | elapsed time per "
      "iteration (ms): 4247.9 | learning rate: 2.999E-04 | global batch size:     8 | loss "
      "scale: 1.0 | grad norm: nan | number of skipped iterations:   0 | number of nan "
      "iterations:   0 |",
      "COMPLETED");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->failure_class, FailureClass::kCrash);
  EXPECT_EQ(failure->message, "iteration 5426 reports a grad norm that is not finite");
  EXPECT_EQ(failure->line_number, 1U);
}

TEST(MetricsEvidence, SrunSplitLinesAreRejoined) {
  const MegatronLog log = log_of(
      "0: [default0]:  add_qkv_bias ............\n"
      "0: ........................ False\n"
      "0: [def\n"
      "0: ault0]:[Rank 0] (after 2 iterations) memory (MB) | allocated: 14234.91 | max "
      "allocated: 39890.01 | res\n"
      "0: erved: 42498.00 | max reserved: 42498.00\n"
      "0: [default0]:done");
  EXPECT_EQ(log.lines_rejoined, 3U);
  ASSERT_EQ(log.memory.size(), 1U);
  EXPECT_EQ(log.memory[0].max_reserved_mb, 42498.00);
  // A task whose lines carry no inner prefix has nothing to rejoin.
  EXPECT_EQ(log_of("0: first\n0: second").lines_rejoined, 0U);
}

TEST(MetricsEvidence, ALiveLogEndsTheRunOnlyForTheTrainingProgramsOwnErrors) {
  const std::string preamble =
      "Traceback (most recent call last):\n"
      "  File \"/home/u/.local/bin/wandb\", line 5, in <module>\n"
      "ModuleNotFoundError: No module named 'dataclasses'\n";
  const std::string started = " 0: [default0]:using world size: 8\n";
  const std::string oom = std::string(" 0: [default0]:") + kOomRecent + "\n";
  // The batch script's error before the training started ends nothing, in one piece or two.
  EXPECT_EQ(live_abort_sign(read_megatron_log(preamble + started), false), std::nullopt);
  EXPECT_EQ(live_abort_sign(read_megatron_log(preamble), false), std::nullopt);
  // The program's own out-of-memory error does, after its first line, or in a later piece.
  EXPECT_EQ(live_abort_sign(read_megatron_log(preamble + started + oom), false),
            FailureSign::kOutOfMemory);
  EXPECT_EQ(live_abort_sign(read_megatron_log(oom), true), FailureSign::kOutOfMemory);
  // A fatal sign outranks a timeout in the same piece.
  EXPECT_EQ(live_abort_sign(read_megatron_log(std::string(kNcclTimeout) + "\n" + oom), true),
            FailureSign::kOutOfMemory);
  EXPECT_EQ(live_abort_sign(read_megatron_log(std::string(kNcclTimeout) + "\n"), true),
            FailureSign::kCollectiveTimeout);
}

}  // namespace
}  // namespace attune
