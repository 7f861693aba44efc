#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets with clang 14 in ./build-fuzz (or
# $VOLSEG_FUZZ_BUILD_DIR) and runs them through ctest -L fuzz
# (docs/reliability.md, "Fuzzing").
#
#   fuzz.sh                 what CI runs: every target replays its whole seed
#                           corpus (tests/fuzz/corpus/TARGET/), then runs a
#                           fixed number of executions from a fixed seed. The
#                           same commit gives the same result on any machine.
#   fuzz.sh --scale K       the same campaign, K times as many executions.
#   fuzz.sh --long MINUTES [--findings DIR]
#                           exploration: MINUTES in all, shared by the targets
#                           ($VOLSEG_JOBS at a time), random seeds, going on
#                           past what they find. Every crash, leak, timeout
#                           and out-of-memory input is saved under DIR
#                           (default fuzz-findings/DATE/), one folder a
#                           target; the run fails if there is any. Copy a
#                           finding into tests/fuzz/corpus/TARGET/ with its fix.
# Every run stops an input that allocates more than 512 MiB at once or holds
# more than 1 GiB (-malloc_limit_mb=512 -rss_limit_mb=1024).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VOLSEG_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${VOLSEG_JOBS:-2}
mode=ci scale=1 minutes=0 findings=""
while [ $# -gt 0 ]; do
  case $1 in
    --long) mode=long minutes=${2:?--long MINUTES}; shift 2 ;;
    --scale) scale=${2:?--scale K}; shift 2 ;;
    --findings) findings=${2:?--findings DIR}; shift 2 ;;
    -h|--help) sed -n '3,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown argument $1 (see fuzz.sh --help)" >&2; exit 2 ;;
  esac
done
targets=$(grep -c '^volseg_add_fuzzer(' "$root/tests/fuzz/CMakeLists.txt")
seconds=60
if [ "$mode" = long ]; then
  [[ $minutes =~ ^[0-9]+$ ]] && [ "$minutes" -gt 0 ] || { echo "fuzz.sh: --long takes whole minutes, not $minutes" >&2; exit 2; }
  # Each target's share of the wall time, $jobs running at once.
  seconds=$(( minutes * 60 * jobs / targets ))
  findings=${findings:-$root/fuzz-findings/$(date +%Y%m%d-%H%M%S)}
  mkdir -p "$findings"
  findings=$(cd "$findings" && pwd)
fi
# -O1 with line tables: stack traces with file and line, built in 390 s here
# against 503 s for -O2 -g with the sanitizers (2 cores); only the libraries
# the targets link are built, not the GUI, the in-situ library or the tests.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DVOLSEG_FUZZ=ON -DVOLSEG_BUILD_TESTS=OFF \
  -DPython3_EXECUTABLE=/usr/bin/python3 -DVOLSEG_FUZZ_MODE="$mode" -DVOLSEG_FUZZ_SECONDS="$seconds" \
  -DVOLSEG_FUZZ_RUNS_SCALE="$scale" ${findings:+-DVOLSEG_FUZZ_FINDINGS="$findings"}
cmake --build "$build" -j "$jobs" --target fuzzers
cd "$build"
if [ "$mode" = long ]; then
  echo "fuzz.sh: $targets targets, $seconds s each, $jobs at a time; findings under $findings"
  status=0
  ctest -L fuzz --output-on-failure -j "$jobs" || status=$?
  echo "fuzz.sh: findings under $findings:"
  find "$findings" -type f ! -name log.txt | sort || true
  exit $status
fi
ctest -L fuzz --output-on-failure -j "$jobs"
