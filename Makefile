# memledger front doors. `make demo` and `make check` install what is missing (Debian packages),
# configure, build and run; everything else is CMake + CTest underneath.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=
FUZZERS    := $(basename $(notdir $(wildcard fuzz/fuzz_*.c)))

.PHONY: all deps build demo check check-asan fuzz bench clean

all: build

deps:
	@sh scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The built-in example: the seed case (examples/seed-case): Qwen2.5-14B, LoRA r=64, DeepSpeed
# ZeRO-3 on 4 cards sold as 16 GB, from the user's own LLaMA-Factory YAML and DeepSpeed JSON.
demo: build
	./$(BUILD)/memledger train --config examples/seed-case/train.yaml --gpu dcu-16g --num-gpus 4

check: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
check-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DML_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)

# libFuzzer (clang): each target runs FUZZ_SECONDS from the committed corpus; new inputs go to a
# scratch corpus in the build directory, never into the repository.
fuzz:
	@sh scripts/install-deps.sh --fuzz
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DML_FUZZ=ON -DML_SANITIZE=ON -DML_BUILD_TESTS=OFF >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target $(FUZZERS)
	@for f in $(FUZZERS); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$f && \
	    echo "fuzz: $$f for $(FUZZ_SECONDS)s" && \
	    ./$(FUZZ_BUILD)/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_BUILD)/ $(FUZZ_BUILD)/corpus/$$f fuzz/corpus/$$f data/models \
	        >$(FUZZ_BUILD)/$$f.log 2>&1; rc=$$?; tail -n 8 $(FUZZ_BUILD)/$$f.log; \
	    if [ $$rc -ne 0 ]; then grep -A12 -E 'ERROR|runtime error' $(FUZZ_BUILD)/$$f.log | head -40; \
	        echo "fuzz: $$f FAILED (inputs saved as $(FUZZ_BUILD)/crash-*)"; exit 1; fi; \
	done

# Speed of one ledger estimate (bench/README.md records the figures).
bench: build
	./$(BUILD)/bench/bench_ledger 200000
	sh bench/bench_scan.sh $(BUILD) 1024

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
