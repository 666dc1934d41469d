# The two commands of the README:
#   make demo   install what is missing, build (Release), run the demo on data/
#   make test   install what is missing, build (Release), run every test (CTest),
#               then build and run every test again under AddressSanitizer +
#               UndefinedBehaviorSanitizer (preset asan, CPU only; it leaves out
#               the PyWavelets check and the kill tests, see README)
# Also: make test-asan (the sanitizer pass alone), make test-tsan (the threads
# test under ThreadSanitizer, scripts/sanitize.sh thread), make bench (the host
# benchmarks), make studies [STUDIES="s002 s003_sizes"] (the seeds' studies on
# this machine: bench/studies/run.sh, CSV + plots under build/studies).
PRESET ?= release
JOBS   ?= $(shell nproc)
# cmake --build runs make again below this one: keep its "Entering directory"
# lines out of the output.
MAKEFLAGS += --no-print-directory

.PHONY: demo test test-asan test-tsan deps configure build bench studies clean

demo: build
	./scripts/demo.sh build/$(PRESET)/pixelkit

test: build
	ctest --preset $(PRESET) -j $(JOBS)
	$(MAKE) --no-print-directory test-asan

test-asan: deps
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

test-tsan: deps
	JOBS=$(JOBS) ./scripts/sanitize.sh thread

deps:
	./scripts/install-deps.sh

configure: deps
	cmake --preset $(PRESET)

build: configure
	cmake --build --preset $(PRESET) -j $(JOBS)

bench: build
	./scripts/bench-cpu.sh build/$(PRESET)

STUDIES ?= all
studies: build
	./scripts/install-deps.sh --studies
	./bench/studies/run.sh --build build/$(PRESET) $(STUDIES)

clean:
	rm -rf build out
