#!/bin/sh
# Builds the libFuzzer targets with clang (tests/fuzz/CMakeLists.txt) into BUILD_DIR and runs each
# for SECONDS on a scratch copy of its seed corpus (tests/fuzz/corpus/<target>/, left untouched).
# A crash, a leak, a sanitizer report or a timeout fails the run; the input that did it is left in
# BUILD_DIR/artifacts/. Usage: run.sh BUILD_DIR SECONDS [target ...]  (tests/fuzz/README.md);
# SECONDS 0 builds and runs nothing (the main build does so: CMake target fuzz_targets).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$1
seconds=$2
shift 2
targets=${*:-"tune_request expr import http network model_request"}
cc=${KT_FUZZ_CC:-clang}
command -v "$cc" >/dev/null || { echo "fuzz: $cc not found (deploy/install-deps.sh installs clang)" >&2; exit 1; }
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Debug >/dev/null
fi
for t in $targets; do
  # A build of its own: not a child of the main build's make (no jobserver to share).
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL cmake --build "$build" -j2 --target "fuzz_$t" >/dev/null || { cmake --build "$build" --target "fuzz_$t"; exit 1; }
done
# 0 seconds: build only (the main build's fuzz_targets target).
[ "$seconds" = 0 ] && exit 0
mkdir -p "$build/artifacts"
status=0
for t in $targets; do
  scratch=$(mktemp -d "$build/corpus-$t.XXXXXX")
  echo "fuzz: fuzz_$t for ${seconds}s (seeds: tests/fuzz/corpus/$t)"
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "$build/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
       "$scratch" "$here/corpus/$t" > "$build/fuzz_$t.log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$build/fuzz_$t.log" | tr '\n' ' '
    echo
  else
    echo "fuzz: fuzz_$t FAILED; its log:" >&2
    tail -60 "$build/fuzz_$t.log" >&2
    status=1
  fi
  rm -rf "$scratch"
done
exit $status
