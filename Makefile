# keel: the front door. Everything real is in CMakeLists.txt.
#
#   make          build (bootstrap first)
#   make demo     a scripted session through keel wrap around a small notes server
#   make test     every test, plain and under ASan+UBSan, plus valgrind
#   make bench    throughput, latency, CPU and memory of keel wrap vs a plain relay (and --url vs mcp-remote)
#   make eval     detector precision and recall on tests/corpus (updates the table in docs/quality.md)
#   make fuzz     each libFuzzer harness for FUZZ_SECONDS (default 60), clang
#   make soak     keel wrap relays SOAK_MESSAGES (default 1,000,000) mixed messages; memory stays flat
#   make mutate   mutation testing: MUTANTS (default 300) mutants drawn by SEED and shared out among
#                 FILES, each against the tests that run its line; MUTANTS=full one per deciding line
#                 and function (scripts/mutate --help)
#   make clean

BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZERS = transcript hook jscan config args frame state sse router detect install toml
SOAK_MESSAGES ?= 1000000
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
NODE_DEPS = tests/node_modules/.package-lock.json

.PHONY: all build bootstrap demo test test-plain test-asan fuzz fuzz-build fuzz-smoke soak bench eval mutate clean
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

test: test-plain test-asan fuzz-smoke

test-plain: build $(NODE_DEPS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: bootstrap $(ASAN_BUILD)/Makefile $(NODE_DEPS)
	cmake --build $(ASAN_BUILD) -j $(JOBS) -- --no-print-directory
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

$(FUZZ_BUILD)/Makefile: CMakeLists.txt | bootstrap
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEEL_FUZZ=ON

fuzz-build: bootstrap $(FUZZ_BUILD)/Makefile
	cmake --build $(FUZZ_BUILD) -j $(JOBS) -- --no-print-directory

# Each harness explores from its committed corpus; what it finds stays in
# $(FUZZ_BUILD)/corpus (commit the inputs worth keeping to tests/fuzz/corpus).
fuzz: fuzz-build
	@for f in $(FUZZERS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$f; \
	  echo "fuzz_$$f: $(FUZZ_SECONDS) s"; \
	  (cd $(FUZZ_BUILD) && tests/fuzz/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    corpus/$$f ../tests/fuzz/corpus/$$f 2>&1 | grep -E "^stat::(number_of_executed_units|average_exec_per_sec)|DONE.*cov:|ERROR|SUMMARY") || exit 1; \
	done

# In make test: every committed input (seeds and crash reproducers) once, then
# a few seconds of exploring each harness in a scratch corpus.
fuzz-smoke: fuzz-build
	@for f in $(FUZZERS); do \
	  $(FUZZ_BUILD)/tests/fuzz/fuzz_$$f -runs=0 tests/fuzz/corpus/$$f >/dev/null 2>&1 || { echo "fuzz_$$f: a committed input fails"; exit 1; }; \
	  d=$$(mktemp -d); \
	  $(FUZZ_BUILD)/tests/fuzz/fuzz_$$f -max_total_time=5 -artifact_prefix=$$d/ $$d tests/fuzz/corpus/$$f >$$d/log 2>&1 \
	    || { tail -20 $$d/log; mkdir -p $(FUZZ_BUILD)/artifacts; cp $$d/crash-* $$d/leak-* $$d/timeout-* $(FUZZ_BUILD)/artifacts/ 2>/dev/null; \
	         echo "reproducers in $(FUZZ_BUILD)/artifacts"; rm -rf $$d; exit 1; }; \
	  echo "ok - fuzz_$$f: committed inputs and 5 s of exploring"; rm -rf $$d; \
	done

soak: build
	$(BUILD)/tests/bench/keel-soak $(BUILD)/keel $(SOAK_MESSAGES)

# Works on a copy of the tree in a temporary directory; only the results
# file is written here.
mutate: bootstrap $(NODE_DEPS)
	MUTANTS="$(MUTANTS)" SEED="$(SEED)" FILES="$(FILES)" COVER="$(COVER)" SANITIZE="$(SANITIZE)" \
	  RESULTS="$(BUILD)/mutate/results.tsv" \
	  scripts/mutate

eval: build
	scripts/eval-readme $(BUILD)/keel

bench: build $(NODE_DEPS)
	$(BUILD)/tests/bench/keel-bench $(BUILD)/tests/bench/keel-bench-server $(BUILD)/tests/bench/keel-relay $(BUILD)/keel
	$(BUILD)/tests/bench/keel-detbench
	$(BUILD)/tests/bench/keel-hookbench $(BUILD)/keel
	$(BUILD)/tests/bench/keel-servebench $(BUILD)/keel $(BUILD)/tests/bench/keel-bench-server
	$(BUILD)/tests/bench/keel-pinbench $(BUILD)/keel $(BUILD)/tests/bench/keel-bench-server
	$(BUILD)/tests/bench/keel-httpbench $(BUILD)/keel "$$(command -v node)" tests/node_modules/mcp-remote/dist/proxy.js

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
