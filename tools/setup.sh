#!/usr/bin/env bash
# Sets up attune on a fresh Debian machine and runs it. As root (or with sudo available).
#
#   tools/setup.sh main   install dependencies, build, run the main job (a campaign on the
#                         embedded default: simulated cluster, local RocksDB ledger)
#   tools/setup.sh test   install dependencies, build with warnings as errors, run the whole
#                         test suite, then the unit tests again under AddressSanitizer and
#                         UndefinedBehaviorSanitizer (build-asan/)
#   tools/setup.sh deps   only install dependencies (the test suite's included)
#   tools/setup.sh build  only build (build/, every binary in build/bin/)
#
# Environment: BUILD_DIR (default build), BUILD_TYPE (default RelWithDebInfo), JOBS.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
JOBS=${JOBS:-$(nproc)}

# Every dependency is a Debian package; nothing is downloaded from anywhere else.
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config clang-format
  librocksdb-dev capnproto libcapnp-dev libboost-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libsimdjson-dev
  libssl-dev zlib1g-dev libdeflate-dev python3 python3-optuna
  clang libclang-rt-14-dev
  slurmctld slurmd slurm-client munge bubblewrap
)
# The test suite also runs Megatron-LM's own argument code (the oracle in
# ../shared/tools/megatron-oracle) on configurations it has no cached answer for, and renders
# the campaign report in headless Chromium.
TEST_PACKAGES=(python3-torch python3-numpy python3-packaging python3-yaml chromium
  fonts-dejavu-core)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# $@: the packages to have installed.
install_deps() {
  local missing=()
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all $# Debian packages are installed"
    return
  fi
  echo "setup: installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# $1: ON for warnings as errors (CI and developers), OFF for a user's build.
build() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DATTUNE_WERROR="${1:-OFF}"
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# The unit tests of the pure layers (events, projections, gate, core) under ASan and UBSan.
SANITIZED_TESTS=(attune-events-test attune-projections-test attune-gate-test attune-core-test)
run_sanitized_tests() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DATTUNE_SANITIZE=ON \
    -DATTUNE_WERROR=ON
  cmake --build build-asan -j "$JOBS" --target "${SANITIZED_TESTS[@]}"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS" --timeout 900 \
    -L '^(events|projections|gate|core)$'
}

run_tests() {
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 900
  run_sanitized_tests
}

main_job() {
  local ledger="$BUILD_DIR/ledgers/$(date -u +%Y%m%dT%H%M%SZ)"
  mkdir -p "$(dirname "$ledger")"
  "$BUILD_DIR/bin/attune" campaign run examples/qwen3-30b-a3b-h100x16.toml --db "$ledger"
}

case "${1:-}" in
  main) install_deps "${PACKAGES[@]}"; build OFF; main_job ;;
  test) install_deps "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"; build ON; run_tests ;;
  deps) install_deps "${PACKAGES[@]}" "${TEST_PACKAGES[@]}" ;;
  build) build OFF ;;
  *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
