# The two commands of the README:
#   make demo   install what is missing, build (Release), run the demo on data/
#   make test   install what is missing, build (Release), run every test (CTest)
PRESET ?= release
JOBS   ?= $(shell nproc)

.PHONY: demo test deps configure build bench clean

demo: build
	./scripts/demo.sh build/$(PRESET)/pixelkit

test: build
	ctest --preset $(PRESET) -j $(JOBS)

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
