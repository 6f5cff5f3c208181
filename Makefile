# keel: the front door. Everything real is in CMakeLists.txt.
#
#   make          build (bootstrap first)
#   make demo     a scripted session through keel wrap around a small notes server
#   make test     every test, plain and under ASan+UBSan, plus valgrind
#   make bench    throughput, latency, CPU and memory of keel wrap vs a plain relay
#   make eval     detector precision and recall on tests/corpus (updates the README table)
#   make clean

BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
NODE_DEPS = tests/node_modules/.package-lock.json

.PHONY: all build bootstrap demo test test-plain test-asan bench eval clean
all: build

bootstrap:
	@scripts/bootstrap

$(BUILD)/Makefile: CMakeLists.txt | bootstrap
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: bootstrap $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

$(ASAN_BUILD)/Makefile: CMakeLists.txt | bootstrap
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKEEL_SANITIZE=ON

$(NODE_DEPS): tests/package.json tests/package-lock.json | bootstrap
	cd tests && npm ci --no-audit --no-fund --loglevel=error

demo: build
	@examples/demo.sh $(BUILD)/keel

test: test-plain test-asan

test-plain: build $(NODE_DEPS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: bootstrap $(ASAN_BUILD)/Makefile $(NODE_DEPS)
	cmake --build $(ASAN_BUILD) -j $(JOBS) -- --no-print-directory
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

eval: build
	scripts/eval-readme $(BUILD)/keel

bench: build
	$(BUILD)/tests/bench/keel-bench $(BUILD)/tests/bench/keel-bench-server $(BUILD)/tests/bench/keel-relay $(BUILD)/keel
	$(BUILD)/tests/bench/keel-detbench
	$(BUILD)/tests/bench/keel-hookbench $(BUILD)/keel

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
