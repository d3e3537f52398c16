# Makefile — a thin wrapper over CMake so a fresh Debian 12 machine needs one command.
#   make test    install missing packages (as root), build with ASan+UBSan and run the whole
#                suite, then build with TSan and run the concurrency tests again
#   make demo    the main job: a batch of real agent CLIs against the local mock model
#   make         release build in build/
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
CTEST_FLAGS ?= --output-on-failure --timeout 900

.PHONY: all build deps test test-asan test-tsan test-fuzz checksrc bench demo format install fuzz clean

all: build

deps:
	@if [ "$$(id -u)" -eq 0 ]; then scripts/install-deps.sh; else scripts/install-deps.sh || true; fi

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build build -j $(JOBS)

test: deps checksrc test-asan test-tsan test-fuzz
	@echo "make test: all suites passed"

test-asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DEVOLVE_SANITIZE=address -DEVOLVE_WERROR=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest -j $(JOBS) $(CTEST_FLAGS)

test-tsan:
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DEVOLVE_SANITIZE=thread -DEVOLVE_WERROR=ON \
	  -DEVOLVE_BUILD_BENCH=OFF -DEVOLVE_ONLY_CONCURRENCY_TESTS=ON >/dev/null
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest -j $(JOBS) -L concurrency $(CTEST_FLAGS) --no-tests=error

checksrc:
	scripts/checksrc.sh

bench: build
	scripts/run-bench.sh build

demo: build
	scripts/demo.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

install: build
	cmake --install build

fuzz: deps
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DEVOLVE_FUZZ=ON \
	  -DEVOLVE_BUILD_TESTS=OFF -DEVOLVE_BUILD_BENCH=OFF >/dev/null
	cmake --build build-fuzz -j $(JOBS)
	scripts/run-fuzz.sh build-fuzz $${FUZZ_SECONDS:-30}

# The bounded fuzz pass of `make test`: every target for FUZZ_SECONDS (default 10) seconds.
test-fuzz:
	$(MAKE) fuzz FUZZ_SECONDS=$${FUZZ_SECONDS:-10}

clean:
	rm -rf build build-asan build-tsan build-fuzz
