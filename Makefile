# memledger front doors. `make demo` and `make check` install what is missing (Debian packages),
# configure, build and run; everything else is CMake + CTest underneath.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
WEB_BUILD  ?= build-web
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=
# -Werror in every build made here and in CI (ML_WERROR; a plain `cmake` build leaves it off).
WERROR     ?= ON
FUZZERS    := $(basename $(notdir $(wildcard fuzz/fuzz_*.c)))
PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: all deps build demo check check-asan fuzz bench install pot update-po web web-test web-shot svg-docs clean

all: build

deps:
	@sh scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DML_WERROR=$(WERROR) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The built-in example: the seed case (examples/seed-case): Qwen2.5-14B, LoRA r=64, DeepSpeed
# ZeRO-3 on 4 cards sold as 16 GB, from the user's own LLaMA-Factory YAML and DeepSpeed JSON, run
# where the user ran it (--run-dir: where its deepspeed: resolves; tests/check_demo.sh).
demo: build
	./$(BUILD)/memledger train --config examples/seed-case/train.yaml --run-dir examples/seed-case --gpu dcu-16g --num-gpus 4

check: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
check-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DML_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DML_WERROR=$(WERROR) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)

# libFuzzer (clang): each target runs FUZZ_SECONDS from the committed corpus; new inputs go to a
# scratch corpus in the build directory, never into the repository.
fuzz:
	@sh scripts/install-deps.sh --fuzz
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DML_FUZZ=ON -DML_SANITIZE=ON -DML_BUILD_TESTS=OFF -DML_WERROR=$(WERROR) >/dev/null
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

# The binary, man pages, completions, catalogs and Python hook under PREFIX, staged in DESTDIR when
# given (cmake/MLInstall.cmake lists them).
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# build/po/memledger.pot from the sources; update-po merges it into po/*.po (po/zh_CN.po ...).
pot update-po: build
	@cmake --build $(BUILD) --target $@

# The page (docs/web.md): web/dist/ from the core, the config layer and the commands as
# WebAssembly (Debian's emscripten; cJSON and libyaml from Debian's source packages, fetched
# into $(WEB_BUILD), never into git). The native build first: it generates the catalogs and
# the help texts the module compiles too.
EMCC_ENV := NODE_PATH=/usr/share/nodejs
web: build
	@sh scripts/web-deps.sh
	@sh scripts/web-sources.sh $(WEB_BUILD)
	@$(EMCC_ENV) emcmake cmake -S . -B $(WEB_BUILD)/cmake -DML_WEB=ON -DML_WEB_DEPS=$(CURDIR)/$(WEB_BUILD) \
	    -DML_HOST_BUILD=$(CURDIR)/$(BUILD) -DCMAKE_BUILD_TYPE=MinSizeRel -DML_WERROR=$(WERROR) >/dev/null
	@$(EMCC_ENV) cmake --build $(WEB_BUILD)/cmake -j$(JOBS)
	@echo "web: web/dist/ $$(du -cb web/dist/* | tail -n 1 | cut -f1) bytes (open web/dist/index.html)"

# The page in headless Chromium against the CLI on the seed case (tests/web/web_test.js); when
# the seed case is on the page after navigation (median of 7 loads) is reported against
# WEB_BUDGET_MS, and fails the test only with WEB_STRICT_TIMING=1 (timing is measured, not tested).
WEB_BUDGET_MS ?= 200
WEB_STRICT_TIMING ?= 0
web-test: web
	node tests/web/web_test.js --dist web/dist --cli $(BUILD)/memledger --seed examples/seed-case \
	    --out $(WEB_BUILD)/test --budget-ms $(WEB_BUDGET_MS) --strict-timing $(WEB_STRICT_TIMING)

# docs/web.png: the README's screenshot of the page on the seed example.
web-shot: web
	node tests/web/shot.js web/dist docs/web.png

# docs/seed.svg: the seed case's ledger as the README shows it (a test checks it is current).
svg-docs: build
	./$(BUILD)/memledger train --config examples/seed-case/train.yaml --gpu dcu-16g --num-gpus 4 \
	    --svg docs/seed.svg --force >/dev/null

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(WEB_BUILD) web/dist
