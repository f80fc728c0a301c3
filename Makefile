# tony's front door. `make` builds build/bin/tony; `make demo` and `make test`
# first install whatever this machine lacks (scripts/install-deps).
BUILD      ?= build
ASAN_BUILD ?= build/asan
JOBS       ?= $(shell nproc)
PY         := $(BUILD)/pyenv/bin/python

.PHONY: all deps deps-build build asan fuzz-build fuzz fuzz-seeds demo dist test test-unit test-asan test-e2e test-e2e-plain test-airflow test-fuzz test-hadoop test-hadoop33 test-secure test-slurm test-images test-azkaban azkaban deps-containers clean

all: build

deps-build:
	@scripts/install-deps build

deps:
	@scripts/install-deps python

deps-containers:
	@scripts/install-deps containers

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

asan:
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTONY_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

# The libFuzzer harnesses of tests/fuzz (clang, ASan+UBSan, in build/fuzz):
# `make fuzz` runs each for FUZZ_SECONDS (default 60), FUZZ_JOBS at a time;
# `make test-fuzz` is CI's short run. tests/fuzz/run says what each did.
FUZZ_BUILD   ?= build/fuzz
FUZZ_SECONDS ?= 60
fuzz-build: deps-build
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DTONY_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzzers fuzz_seeds

fuzz: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run $(FUZZ_BUILD)

# Fifteen harnesses, two at a time on two cores, 15 s each: 8 x 15 s, about two minutes.
test-fuzz: fuzz-build
	@FUZZ_SECONDS=15 tests/fuzz/run $(FUZZ_BUILD)

# Rewrites tests/fuzz/corpus from tony's own writers (tests/fuzz/seeds.c).
fuzz-seeds: fuzz-build
	@rm -rf tests/fuzz/corpus && $(FUZZ_BUILD)/fuzz/fuzz_seeds tests/fuzz/corpus

# A real distributed TensorFlow training on this machine: 2 workers,
# MultiWorkerMirroredStrategy, scikit-learn's digits.
demo: deps build
	@scripts/demo

# What users install (scripts/make-dist): from an optimized build, in build/dist/,
# the self-contained tarball, the wheel (pip install) and the .deb.
dist: deps-build
	@cmake -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD)/release -j$(JOBS) --target tony
	@rm -rf $(BUILD)/dist && scripts/make-dist $(BUILD)/release/bin/tony $(BUILD)/dist

test-unit: build
	@scripts/check-layers --self-test && scripts/check-layers
	@scripts/check-jobjson --self-test && scripts/check-jobjson
	@scripts/check-clock --self-test && scripts/check-clock
	@cd $(BUILD) && ctest --output-on-failure

# The end-to-end suite without the ML trainings and the scale test
# (test-e2e-plain's), with the ASan+UBSan build; test_packages.py installs what
# `make dist` made (the Release flavour, by this platform's own compiler),
# so a Release-only warning fails it too.
test-asan: asan dist
	@cd $(ASAN_BUILD) && ctest --output-on-failure
	@TONY_BIN=$(CURDIR)/$(ASAN_BUILD)/bin/tony TONY_DIST_DIR=$(CURDIR)/$(BUILD)/dist \
	  $(PY) -m pytest -q -m "not ml and not scale and not hadoop and not slurm and not images and not airflow" tests/e2e

# The end-to-end tests that want the plain build: those that train for real
# (marked ml: TensorFlow, PyTorch, Horovod, Jupyter, the README's and docs/' examples;
# ASan adds nothing to Python) and the 2,000-task scale test (marked scale:
# under ASan it would measure ASan). `make test` runs the local end-to-end
# suite once: these here, the rest in test-asan.
test-e2e-plain: build
	@TONY_BIN=$(CURDIR)/$(BUILD)/bin/tony \
	  $(PY) -m pytest -q -m "(ml or scale) and not hadoop and not slurm and not images and not airflow" tests/e2e

# The whole local end-to-end suite with the plain build (for a developer;
# `make test` splits it into test-e2e-plain and test-asan instead).
test-e2e: build dist
	@TONY_BIN=$(CURDIR)/$(BUILD)/bin/tony TONY_DIST_DIR=$(CURDIR)/$(BUILD)/dist \
	  $(PY) -m pytest -q -m "not hadoop and not slurm and not images and not airflow" tests/e2e

# The Airflow provider (integrations/airflow) in a real Airflow 3, once, with
# the plain build. Its venv (scripts/airflow-venv) is built on first use from
# PyPI and cached in /var/cache/tony/venvs; later runs are offline.
test-airflow: build
	@scripts/airflow-venv >/dev/null
	@TONY_BIN=$(CURDIR)/$(BUILD)/bin/tony $(PY) -m pytest -q -m airflow tests/e2e/test_airflow.py

# TonY's Azkaban job type (integrations/azkaban; docs/workflows.md): `make
# azkaban` builds its plugin dir against Azkaban 3.58.0's jars from Maven
# Central (fetched once into /var/cache/tony/maven); `make test-azkaban` runs
# its JUnit tests once, real `tony submit`s of this build included.
azkaban:
	@scripts/azkaban-jobtype build

test-azkaban: build
	@TONY_BIN=$(CURDIR)/$(BUILD)/bin/tony scripts/azkaban-jobtype test

# Tasks in container images (podman + runc, the test image scripts/test-image
# builds from Debian's packages once and caches in /var/cache/tony), once,
# with the plain build.
test-images: build deps-containers
	@scripts/test-image >/dev/null
	@TONY_BIN=$(CURDIR)/$(BUILD)/bin/tony $(PY) -m pytest -q -m images tests/e2e/test_images.py

# The real Hadoop test cluster (YARN + HDFS from Maven Central's jars): start
# it, check it, run every test marked `hadoop` against it, stop it. Tests
# marked `secure` need the kerberized one: make test-secure.
HTC := $(CURDIR)/build/hadoop-test
test-hadoop: build asan
	@scripts/hadoop-test-cluster start $(HTC)
	@scripts/hadoop-test-cluster selftest $(HTC) && \
	 TONY_HTC_DIR=$(HTC) TONY_BIN=$(CURDIR)/$(ASAN_BUILD)/bin/tony TONY_BUILD_DIR=$(CURDIR)/$(ASAN_BUILD) \
	   $(PY) -m pytest -q -m "hadoop and not secure" tests/e2e; rc=$$?; \
	 scripts/hadoop-test-cluster stop $(HTC); exit $$rc

# The older Hadoop line users run (3.3): a cluster of its jars (fetched from
# Maven Central once, as 3.4's are), its selftest and the tests marked
# `hadoop33` (a representative part of the `hadoop` ones, with the plain
# build: ASan has its run on 3.4), then the cluster is stopped whatever failed.
HADOOP33 := 3.3.6
HTC33 := $(CURDIR)/build/hadoop-test-33
test-hadoop33: build
	@TONY_HADOOP_VERSION=$(HADOOP33) scripts/hadoop-test-cluster start $(HTC33)
	@export TONY_HADOOP_VERSION=$(HADOOP33); scripts/hadoop-test-cluster selftest $(HTC33) && \
	 TONY_HTC_DIR=$(HTC33) TONY_BIN=$(CURDIR)/$(BUILD)/bin/tony $(PY) -m pytest -q -m "hadoop33 and not secure" tests/e2e; \
	 rc=$$?; scripts/hadoop-test-cluster stop $(HTC33); exit $$rc

# The same cluster kerberized (start --secure: a KDC, SPNEGO, HTTPS WebHDFS),
# its delegation tokens to be renewed every 20 s and dead after 90 s (so that
# a job outlives both), Hadoop IPC encrypted (hadoop.rpc.protection=privacy:
# the coordinator's calls to the RM and NodeManagers go through SASL's
# security layer), and every test marked `secure` against it, once, with the ASan+UBSan
# build (the behaviour is the plain build's; this also checks the memory).
HTC_SECURE := $(CURDIR)/build/hadoop-test-secure
test-secure: build asan
	@TONY_HTC_TOKEN_RENEW_INTERVAL_MS=20000 TONY_HTC_TOKEN_MAX_LIFETIME_MS=90000 TONY_HTC_RPC_PROTECTION=privacy \
	  scripts/hadoop-test-cluster start --secure $(HTC_SECURE)
	@scripts/hadoop-test-cluster selftest $(HTC_SECURE) && \
	 TONY_HTC_SECURE_DIR=$(HTC_SECURE) TONY_BIN=$(CURDIR)/$(ASAN_BUILD)/bin/tony TONY_BUILD_DIR=$(CURDIR)/$(ASAN_BUILD) \
	   $(PY) -m pytest -q -m secure tests/e2e; \
	 rc=$$?; scripts/hadoop-test-cluster stop $(HTC_SECURE); exit $$rc

# The real Slurm test cluster (Debian's slurmctld, 3 slurmd, a private munged:
# scripts/slurm-test-cluster.md): install it if missing, start it, check it,
# run every test marked `slurm` against it (tasks in images: the test image is
# built or reused first), stop it (~35 s), last in `make test`.
STC := $(CURDIR)/build/slurm-test
test-slurm: build deps-containers
	@scripts/install-deps slurm
	@scripts/test-image >/dev/null
	@scripts/slurm-test-cluster start $(STC)
	@scripts/slurm-test-cluster selftest $(STC) && \
	 TONY_STC_DIR=$(STC) TONY_BIN=$(CURDIR)/$(BUILD)/bin/tony $(PY) -m pytest -q -m slurm tests/e2e; \
	 rc=$$?; scripts/slurm-test-cluster stop $(STC); exit $$rc

# Every suite in turn, timed (scripts/test-suites: a failed one does not stop
# the others; the table of each part's time and result comes last).
test:
	@scripts/test-suites deps test-unit test-e2e-plain test-airflow test-azkaban test-images test-asan test-fuzz \
	  test-hadoop test-hadoop33 test-secure test-slurm

clean:
	rm -rf $(BUILD)/CMakeFiles $(BUILD)/bin $(BUILD)/tests $(ASAN_BUILD) $(FUZZ_BUILD) $(BUILD)/release $(BUILD)/dist build/lead build/dev build/dev2 build/asan2
