# The two commands of the README: `make run` and `make test`. Both install missing Debian packages
# first (deploy/install-deps.sh), then build with CMake into build/.
# On a machine with a GPU, `make gpu-check` first (below): the CUDA side end to end on cuda:0.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
# The normal build's tests run two per core: most integration tests spend most of their time waiting
# (a ktuned, its database, a lease, a poll; test_models_store: 21 s of CPU in 116 s), so a core per
# test leaves half the machine idle. Tests that time something are RUN_SERIAL and still run alone.
TEST_JOBS  ?= $(shell echo $$(( $$(nproc) * 2 )))
# OpenBLAS sizes its pool by the cores and its threads spin while they wait for work: with tests side
# by side, each test's pool would take cores from the others. One thread per test process (tests only:
# make run and make bench keep OpenBLAS's own choice).
TEST_ENV   = OPENBLAS_NUM_THREADS=1
ARGS       ?=

.PHONY: all deps build run test test-fast test-asan bench gpu-check format format-check banned-check clean

all: build

deps:
	@bash deploy/install-deps.sh
	@bash deploy/install-web.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Starts ktuned with its embedded database in ./var; prints the dashboard URL. Stop with Ctrl-C.
run: build
	./$(BUILD)/ktuned $(ARGS)

# Every test: the source checks (format and banned calls beside the build, which leaves a core idle
# while it configures; then the room rules), the normal build's tests, then the sanitizer pass (ASan
# + UBSan at -O1: the unit tests and the integration tests that reach >= 95% of what all of them
# reach; the browser tests, label "browser", only in the normal build). Tests run side by side (the
# normal build's -j$(TEST_JOBS), the sanitizer pass's -j$(JOBS)) except those marked RUN_SERIAL in
# CMakeLists.txt (label "serial"), which run after the others and alone but for nice 19 work: each
# build's tests are two ctest runs (test-*-run-side, test-*-run-serial). A nice 19 job compiles the
# sanitizer build while the normal build's tests run and, once the normal side-by-side tests are
# done, runs the sanitizer pass's side-by-side tests (they assert no time): beside the normal serial
# tests, then beside the sanitizer pass's serial ones, it takes the core a serial test leaves idle
# and yields to it otherwise (as the compile always did). Its output is printed at the end. ctest
# starts from the run times in tests/ctest-costs/ on a new build folder (longest first), then keeps
# its own. It ends with the skip list, the timing table (tools/test_summary.py, which reads both
# ctest runs of a build) and the total time. make test-full runs every test under the sanitizers.
test:
	@start=$$(date +%s); rc=0; \
	$(MAKE) --no-print-directory deps || rc=$$?; \
	if [ $$rc = 0 ]; then \
	  mkdir -p $(BUILD); \
	  ( $(MAKE) --no-print-directory format-check banned-check > $(BUILD)/make-test-checks.log 2>&1; \
	    echo $$? > $(BUILD)/make-test-checks.rc ) & \
	  $(MAKE) --no-print-directory rooms-check build || rc=$$?; \
	  wait; cat $(BUILD)/make-test-checks.log; [ "$$(cat $(BUILD)/make-test-checks.rc)" = 0 ] || rc=1; \
	fi; \
	if [ $$rc = 0 ]; then \
	  mkdir -p $(ASAN_BUILD); rm -f $(ASAN_BUILD)/make-test-*.rc $(ASAN_BUILD)/make-test-*.log $(BUILD)/make-test-side.done; \
	  ( nice -n 19 $(MAKE) --no-print-directory asan-compile > $(ASAN_BUILD)/make-test-build.log 2>&1; \
	    brc=$$?; echo $$brc > $(ASAN_BUILD)/make-test-build.rc; \
	    while [ ! -f $(BUILD)/make-test-side.done ] && kill -0 $$$$ 2>/dev/null; do sleep 1; done; \
	    if [ $$brc = 0 ] && [ -f $(BUILD)/make-test-side.done ]; then \
	      nice -n 19 $(MAKE) --no-print-directory test-asan-run-side > $(ASAN_BUILD)/make-test-side.log 2>&1; \
	      echo $$? > $(ASAN_BUILD)/make-test-side.rc; \
	    fi ) & \
	  bg=$$!; \
	  $(MAKE) --no-print-directory test-fast-run-side || rc=$$?; \
	  touch $(BUILD)/make-test-side.done; \
	  $(MAKE) --no-print-directory test-fast-run-serial || rc=$$?; \
	  while [ ! -f $(ASAN_BUILD)/make-test-build.rc ] && kill -0 $$bg 2>/dev/null; do sleep 1; done; \
	  if [ "$$(cat $(ASAN_BUILD)/make-test-build.rc 2>/dev/null)" != 0 ]; then \
	    wait; tail -50 $(ASAN_BUILD)/make-test-build.log; echo "make test: the sanitizer build failed"; rc=1; \
	  else \
	    echo "== the sanitizer pass: its serial tests (its side-by-side tests run at nice 19 meanwhile)"; \
	    $(MAKE) --no-print-directory test-asan-run-serial || rc=$$?; \
	    wait; \
	    echo "== the sanitizer pass: its side-by-side tests (run at nice 19 beside the serial tests)"; \
	    cat $(ASAN_BUILD)/make-test-side.log; \
	    [ "$$(cat $(ASAN_BUILD)/make-test-side.rc)" = 0 ] || rc=1; \
	  fi; \
	fi; \
	python3 tools/test_summary.py $(BUILD) $(ASAN_BUILD) || true; \
	echo "make test: $$(( $$(date +%s) - start )) s in all, exit $$rc"; exit $$rc

# ctest orders tests by the run times it recorded; a new build folder starts from the checked-in ones.
define seed_costs
	@mkdir -p $(1)/Testing/Temporary
	@[ -f $(1)/Testing/Temporary/CTestCostData.txt ] || cp $(2) $(1)/Testing/Temporary/CTestCostData.txt
endef

test-fast: build test-fast-run

test-fast-run:
	$(call seed_costs,$(BUILD),tests/ctest-costs/normal.txt)
	$(call clear_side,$(BUILD))
	$(TEST_ENV) ctest --test-dir $(BUILD) --output-on-failure --output-junit Testing/Temporary/junit.xml -j$(TEST_JOBS)

# make test's two ctest runs of a build: the side-by-side tests (-LE serial) from $(1)/side, a
# folder whose CTestTestfile.cmake names the build's (subdirs): the same tests, in the build folder,
# with ctest records of their own (side/Testing/Temporary/: the runs of both builds may overlap, and
# tools/test_summary.py reads both); and the serial tests (-L serial) from the build folder.
# $(1) build folder, $(2) its checked-in ctest costs
define side_view
	@mkdir -p $(1)/side/Testing/Temporary
	@echo 'subdirs("$(abspath $(1))")' > $(1)/side/CTestTestfile.cmake
	$(call seed_costs,$(1)/side,$(2))
	$(call clear_side,$(1))
endef
define clear_side
	@rm -f $(1)/side/Testing/Temporary/LastTest.log $(1)/side/Testing/Temporary/LastTestsFailed.log \
	  $(1)/side/Testing/Temporary/junit.xml
endef

test-fast-run-side:
	$(call side_view,$(BUILD),tests/ctest-costs/normal.txt)
	$(TEST_ENV) ctest --test-dir $(BUILD)/side --output-on-failure --output-junit Testing/Temporary/junit.xml -LE serial -j$(TEST_JOBS)

test-fast-run-serial:
	$(TEST_ENV) ctest --test-dir $(BUILD) --output-on-failure --output-junit Testing/Temporary/junit.xml -L serial -j$(TEST_JOBS)

ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1

asan-build: deps asan-compile

asan-compile:
	@cmake -S . -B $(ASAN_BUILD) -DKT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug > /dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

test-asan: asan-build test-asan-run

test-asan-run:
	$(call seed_costs,$(ASAN_BUILD),tests/ctest-costs/asan.txt)
	$(call clear_side,$(ASAN_BUILD))
	$(ASAN_ENV) $(TEST_ENV) ctest --test-dir $(ASAN_BUILD) --output-on-failure --output-junit Testing/Temporary/junit.xml -LE 'browser|full' -j$(JOBS)

test-asan-run-side:
	$(call side_view,$(ASAN_BUILD),tests/ctest-costs/asan.txt)
	$(ASAN_ENV) $(TEST_ENV) ctest --test-dir $(ASAN_BUILD)/side --output-on-failure --output-junit Testing/Temporary/junit.xml -LE 'browser|full|serial' -j$(JOBS)

test-asan-run-serial:
	$(ASAN_ENV) $(TEST_ENV) ctest --test-dir $(ASAN_BUILD) --output-on-failure --output-junit Testing/Temporary/junit.xml -L serial -LE 'browser|full' -j$(JOBS)

# Everything, the sanitizer pass with every integration test (label "full" too).
.PHONY: test-full asan-build asan-compile test-fast-run test-asan-run test-asan-run-side test-asan-run-serial \
  test-fast-run-side test-fast-run-serial
test-full: format-check banned-check rooms-check test-fast asan-build
	$(call clear_side,$(ASAN_BUILD))
	$(ASAN_ENV) $(TEST_ENV) ctest --test-dir $(ASAN_BUILD) --output-on-failure --output-junit Testing/Temporary/junit.xml -LE browser -j$(JOBS)
	@python3 tools/test_summary.py $(BUILD) $(ASAN_BUILD) || true

# Fails when a file includes a header of a room it may not use (rules: kt_room(... USES ...) in
# CMakeLists.txt) or writes a service include other than "room/file.h" (fix: tools/fix_includes.py).
.PHONY: rooms-check
rooms-check: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
	@python3 tools/check_rooms.py --rules $(BUILD)/room_rules.txt --root .

# Benchmarks: speed figures as ratios against references measured in the same run.
# The script benches (tests/bench/bench_*.py: several million trials, tune bursts) run after the
# C ones, each against a real ktuned. bench_vs_kernel_tuner.py (issue 32) compares a job with Kernel
# Tuner's on the same kernel, space, budget and strategy when given Kernel Tuner's source (`make bench
# KERNEL_TUNER_SRC=DIR [KERNEL_TUNER_PYTHONPATH=DIR] [KERNEL_TUNER_PYTHON=PY]`: make passes them on in
# the environment); without it, it prints "skipped: <reason>".
bench: build
	@for b in $(BUILD)/bench_*; do [ -x "$$b" ] && echo "== $$b" && "$$b"; done
	@for s in tests/bench/bench_*.py; do echo "== $$s" && python3 "$$s" --ktuned $(BUILD)/ktuned --source-dir . || exit 1; done
	@echo "== the dashboard with a 100,000-trial job (make test opens 20,000)"
	KTUNE_KTUNED=$(BUILD)/ktuned KTUNE_SOURCE_DIR=. KTUNE_ARTIFACTS=$(BUILD)/browser-artifacts \
	  KTUNE_BROWSER_TRIALS=100000 KTUNE_BROWSER_TIMED=1 node --test --test-reporter=spec tests/browser/dashboard.test.mjs

# On a machine with a GPU, the first thing to run (tests/gpu/README.md): probes for a CUDA device
# first (no build needed); with none, prints "gpu-check: no CUDA device (<reason>)" within a second
# and the script exits 3 (make then shows "Error 3" and exits 2). With one: builds, runs the CUDA
# unit tests with KTUNE_REQUIRE_CUDA=1 KTUNE_REQUIRE_NVRTC=1 (a skip is a failure), a cuda:0 job per
# catalog kernel with a CUDA variant through a real ktuned (every trial verified), the tuned CUDA gemm
# against cuBLAS at 1024^3, 2048^3, 4096^3 as ratios; the figures go to $(BUILD)/gpu-check.txt.
# Under 10 minutes on one GPU (the build aside). GPU_CHECK_ARGS passes options to the script.
GPU_CHECK_ARGS ?=
gpu-check:
	@python3 tests/gpu/gpu_check.py --source-dir . --build $(BUILD) --jobs $(JOBS) $(GPU_CHECK_ARGS)

# The long fuzz run (tests/fuzz/README.md): every libFuzzer target for FUZZ_SECONDS (an hour each).
FUZZ_SECONDS ?= 3600
.PHONY: fuzz
fuzz: deps
	tests/fuzz/run.sh $(BUILD)/fuzz $(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

# Fails when a C file is not formatted as .clang-format says (run `make format` to fix).
format-check: deps
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h') && echo "format-check: clean"

# Fails listing file:line when C code under service/, kernels/, tests/ or clients/ calls a banned function
# (atoi, sprintf, strcpy, strtok, ...: see tools/check_banned.py for the list and replacements).
banned-check:
	@python3 tools/check_banned.py

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
