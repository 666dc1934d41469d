# The two commands of the README:
#   make demo   install what is missing, build (Release), run the demo on data/
#   make test   install what is missing, build (Release), run every test (CTest),
#               then build and run every test again under AddressSanitizer +
#               UndefinedBehaviorSanitizer (preset asan, CPU only)
# Also: make test-asan (the sanitizer pass alone), make test-tsan (the threads
# test under ThreadSanitizer, scripts/sanitize.sh thread).
PRESET ?= release
JOBS   ?= $(shell nproc)

.PHONY: demo test test-asan test-tsan deps configure build bench clean

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

clean:
	rm -rf build out
