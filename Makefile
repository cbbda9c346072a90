# streamrt top-level Makefile. `make demo` on a fresh machine installs what is missing,
# builds, and runs the main job; `make test` builds and runs the whole suite.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

DEBIAN_PACKAGES := cmake g++ make pkg-config libonnx-dev libonnx-testdata libprotobuf-dev \
  protobuf-compiler libflatbuffers-dev flatbuffers-compiler libopenblas-dev libgtest-dev \
  libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libfmt-dev libssl-dev \
  libxxhash-dev pybind11-dev python3-numpy ccache clang libclang-rt-dev

.PHONY: all build deps demo test test-python test-executorch test-asan fuzz-smoke mutate-check docs clean

all: build

# Installs the Debian packages that are missing (needs root or sudo).
deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# CUDA device code for this machine's GPU when one answers, else for sm_90 (the H100 / H200 the GPU checks
# run on): one architecture compiles in about a quarter of the time of the full list that a plain CMake
# configure, `pip install .` and the installed package build (sm_80 / 86 / 89 / 90 + PTX; README "GPUs").
CUDA_ARCHS ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo native || echo 90)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$(CUDA_ARCHS)" $(CMAKE_ARGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The demo needs the library and the CLI only; the test suites build under `make test`.
demo: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target streamrt_cli
	./scripts/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE gpu-only

# The Python package: `pip install .` into a fresh virtual environment (it sees the system's numpy;
# torch, where installed system-wide, too), then its pytest suite. CPU-only build (CI has no GPU);
# the folder build-py/ keeps the build for fast reruns. PYTHON_CMAKE_ARGS adds -C options. The
# executorch wheel goes in too, so the package carries StreamRTBackend and streamrt.executorch's
# tests (tests/python/test_executorch*.py) run against ExecuTorch's own runtime.
VENV ?= .venv
PYTHON_CMAKE_ARGS ?= -C cmake.define.STREAMRT_CUDA=OFF
test-python:
	rm -rf $(VENV)
	python3 -m venv --system-site-packages $(VENV)
	$(VENV)/bin/pip install -q -r python/requirements-test.txt -r scripts/executorch-requirements.txt
	$(VENV)/bin/pip install -q --no-build-isolation . -C build-dir=build-py $(PYTHON_CMAKE_ARGS)
	cd tests/python && ../../$(VENV)/bin/python -m pytest -q -rs

# StreamRTBackend inside ExecuTorch's own runtime (executorch_backend/, docs/delegate.md): the
# adapter built against the PyPI wheel executorch==1.5.1 (its CMake package needs the PyPI cmake >= 3.28,
# both installed into their own virtual environment), then its tests on the committed .pte fixtures.
ET_VENV ?= .venv-et
test-executorch: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target streamrt
	[ -x $(ET_VENV)/bin/python ] || python3 -m venv --system-site-packages $(ET_VENV)
	$(ET_VENV)/bin/pip install -q -r scripts/executorch-requirements.txt
	PATH=$(abspath $(ET_VENV))/bin:$$PATH cmake -S executorch_backend -B $(BUILD)-et \
	  -DSTREAMRT_BUILD_DIR=$(abspath $(BUILD)) -DCMAKE_BUILD_TYPE=Release
	PATH=$(abspath $(ET_VENV))/bin:$$PATH cmake --build $(BUILD)-et -j $(JOBS)
	cd $(BUILD)-et && PATH=$(abspath $(ET_VENV))/bin:$$PATH ctest --output-on-failure

# docs/ops.md is generated from the op registrations (ctest docs_ops_md_current checks it).
docs: build
	$(BUILD)/bin/streamrt ops --markdown --expected-skips tests/onnx_node_skips.txt > docs/ops.md.tmp
	mv docs/ops.md.tmp docs/ops.md

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSTREAMRT_SANITIZE=ON $(CMAKE_ARGS)

test-asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -LE "gpu-only|slow"

# libFuzzer targets (clang, ASan + UBSan), each run a few seconds over a copy of its seeds
# (fuzz/CMakeLists.txt; docs/fuzzing.md). Without the test suite: only the fuzzers are built.
$(FUZZ_BUILD)/CMakeCache.txt:
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Release -DSTREAMRT_FUZZ=ON \
	  -DSTREAMRT_CUDA=OFF -DSTREAMRT_BUILD_TESTS=OFF $(CMAKE_ARGS)

fuzz-smoke: $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	cmake --build $(FUZZ_BUILD) -j 1 --target fuzz_smoke

# Flips and cuts every header and FlatBuffer byte of a small plan and program (padding and data
# sampled) and runs the CLI on each (scripts/mutate_check.py): no crash, no hang, and every
# accepted mutant explained.
# ~11 min on 2 idle cores; MUTATE_ARGS="--stride 16 --bulk-stride 64" takes ~2.5 (docs/fuzzing.md).
MUTATE_ARGS ?=
mutate-check: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target streamrt_cli
	python3 scripts/mutate_check.py --cli $(BUILD)/bin/streamrt --jobs $(JOBS) $(MUTATE_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(BUILD)-et build-py $(VENV) $(ET_VENV)
