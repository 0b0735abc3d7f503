#!/usr/bin/env bash
# End-to-end check of the GPU-side tools on a machine with a GPU (one is enough), in under five
# minutes:
#   1. configure and build (CMake + Ninja) the CLI, the probe, the CUPTI tracer, the NCCL profiler
#      plugin and the sample program into BUILD_DIR;
#   2. run attune-gpu-probe and have `attune sim predict` accept the hardware TOML it wrote;
#   3. run the sample (GEMMs, an elementwise kernel, memcpys, a memset, an NCCL all-reduce over one
#      or two GPUs, NVTX ProfilerStep ranges) under the CUPTI tracer and the NCCL plugin at once;
#   4. check the traces they wrote and have `attune trace breakdown --hta --json` read each.
# Prints one PASS/FAIL line per check; exits 1 if any failed.
#
# Usage: cuda/check-on-gpu.sh [BUILD_DIR]   (default: build-gpu-check in the repository)
set -u -o pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-gpu-check}
work=$(mktemp -d "${TMPDIR:-/tmp}/attune-gpu-check.XXXXXX")
build_timeout_s=200
probe_timeout_s=60
sample_timeout_s=60
analyzer_timeout_s=30
failures=0

pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
finish() {
  echo "traces and logs: $work"
  if [ "$failures" -gt 0 ]; then
    echo "FAIL: $failures check(s) failed"
    exit 1
  fi
  echo "PASS: all checks"
  exit 0
}

# A JSON file parses (with python3 where there is one; a non-empty file otherwise).
json_ok() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null
  else
    [ -s "$1" ]
  fi
}

# Rows of a category in a trace file: lines like `"ph": "X", "cat": "kernel", ...`.
count_category() { grep -c "\"cat\": \"$2\"" "$1" || true; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >"$work/gpus.txt" 2>&1; then
  fail "no GPU: nvidia-smi -L failed"
  finish
fi
pass "GPU: $(head -n 1 "$work/gpus.txt")"
gpu_count=$(grep -c '^GPU ' "$work/gpus.txt" || true)

# ---- 1. Build.
architectures=native
if ! timeout "$build_timeout_s" cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES="$architectures" \
  >"$work/configure.log" 2>&1; then
  fail "configure (see $work/configure.log)"
  finish
fi
targets=(attune attune-gpu-probe attune-cupti-tracer attune-nccl-profiler attune-tiny-train)
if ! timeout "$build_timeout_s" ninja -C "$build" "${targets[@]}" >"$work/build.log" 2>&1; then
  fail "build of ${targets[*]} (see $work/build.log)"
  tail -n 20 "$work/build.log"
  finish
fi
pass "build"
bin=$build/bin
lib=$build/lib

# ---- 2. Probe.
if timeout "$probe_timeout_s" "$bin/attune-gpu-probe" -o "$work/probe.toml" --iterations 10 \
  >"$work/probe.log" 2>&1; then
  pass "probe wrote $work/probe.toml"
  sed 's/^/  /' "$work/probe.log"
  if "$bin/attune" sim predict --model llama3.1-8b --gpu "$work/probe.toml" --gpus 8 \
    --seq 4096 --gbs 64 >"$work/predict.log" 2>&1; then
    pass "attune sim predict accepts the probe's hardware TOML"
  else
    fail "attune sim predict --gpu probe.toml (see $work/predict.log)"
  fi
else
  fail "probe (see $work/probe.log)"
  tail -n 5 "$work/probe.log"
fi

# ---- 3. The sample under the CUPTI tracer and the NCCL profiler plugin.
cupti_library=$(sed -n 's/^CUDA_cupti_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
sample_uses_nccl=no
if ldd "$bin/attune-tiny-train" | grep -q libnccl; then sample_uses_nccl=yes; fi
if env CUDA_INJECTION64_PATH="$lib/libattune-cupti-tracer.so" \
  NVTX_INJECTION64_PATH="$cupti_library" \
  ATTUNE_CUPTI_TRACE_DIR="$work/cupti" \
  NCCL_PROFILER_PLUGIN="$lib/libattune-nccl-profiler.so" \
  ATTUNE_NCCL_TRACE_DIR="$work/nccl" \
  RANK=0 WORLD_SIZE=1 \
  timeout "$sample_timeout_s" "$bin/attune-tiny-train" 5 >"$work/sample.log" 2>&1; then
  pass "sample ran under the tracer and the plugin"
else
  fail "sample (see $work/sample.log)"
  tail -n 5 "$work/sample.log"
fi

# ---- 4. The traces, and the analyzer on them.
check_trace() {  # label file category...
  local label=$1 file=$2
  shift 2
  if [ ! -s "$file" ]; then
    fail "$label: no $file"
    return 1
  fi
  if ! json_ok "$file"; then
    fail "$label: $file is not valid JSON"
    return 1
  fi
  if ! grep -Eq '"rank": [0-9]+' "$file"; then
    fail "$label: no \"rank\": N line in $file"
    return 1
  fi
  local category n missing=0
  for category in "$@"; do
    n=$(count_category "$file" "$category")
    if [ "$n" -eq 0 ]; then
      fail "$label: no $category rows"
      missing=1
    fi
  done
  [ "$missing" -eq 0 ] && pass "$label: $file has $* rows"
  return 0
}

analyze() {  # label directory
  local label=$1 dir=$2
  if timeout "$analyzer_timeout_s" "$bin/attune" trace breakdown --hta --json "$dir" \
    >"$work/$label-breakdown.json" 2>"$work/$label-breakdown.err"; then
    if json_ok "$work/$label-breakdown.json" &&
      grep -q '"temporal_breakdown"' "$work/$label-breakdown.json"; then
      pass "$label: attune trace breakdown --hta --json reads it"
    else
      fail "$label: the analyzer's output has no temporal_breakdown ($work/$label-breakdown.json)"
    fi
  else
    fail "$label: attune trace breakdown --hta --json $dir (see $work/$label-breakdown.err)"
    head -n 3 "$work/$label-breakdown.err"
  fi
}

if check_trace "CUPTI trace" "$work/cupti/rank-0.json" kernel gpu_memcpy gpu_memset cuda_runtime; then
  if grep -q '"name": "ProfilerStep#' "$work/cupti/rank-0.json"; then
    pass "CUPTI trace: ProfilerStep annotations from NVTX"
  else
    fail "CUPTI trace: no ProfilerStep annotations (NVTX_INJECTION64_PATH=$cupti_library)"
  fi
  if [ "$sample_uses_nccl" = yes ] && [ "$gpu_count" -ge 2 ] &&
    ! grep -q '"name": "ncclDevKernel_' "$work/cupti/rank-0.json"; then
    fail "CUPTI trace: no NCCL kernel"
  fi
  analyze cupti "$work/cupti"
fi

if [ "$sample_uses_nccl" = yes ] && [ "$gpu_count" -lt 2 ] && [ ! -e "$work/nccl/rank-0.json" ]; then
  # NCCL runs a one-rank all-reduce as a copy, without a kernel and without profiler events.
  echo "SKIP: one GPU: NCCL gave the plugin no operations to record (it needs two GPUs)"
elif [ "$sample_uses_nccl" = yes ]; then
  if check_trace "NCCL plugin trace" "$work/nccl/rank-0.json" kernel cpu_op; then
    if grep -q '"name": "ncclDevKernel_AllReduce_Sum_f32_' "$work/nccl/rank-0.json"; then
      pass "NCCL plugin trace: all-reduce kernels with GPU times"
    else
      fail "NCCL plugin trace: no ncclDevKernel_AllReduce_Sum_f32 row"
    fi
    analyze nccl "$work/nccl"
  fi
else
  echo "SKIP: the sample was built without NCCL; no NCCL plugin trace to check"
fi

finish
