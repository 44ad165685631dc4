# Two entry points: `make demo` (migrate the bundled examples and run one) and `make test` (the
# whole suite).
# Both create .venv and install the pinned dependencies themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HALF_ROUND_DIR := src/tf2npu/runtime/native
HALF_ROUND_SO := $(HALF_ROUND_DIR)/half_round.so

.PHONY: demo test test-fast lint venv vendor clean browser half-round

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==24.3.1
	$(PY) -m pip install --quiet -e '.[dev,tf]'
	@# What pip does for a regular install: byte-compile the sources once, so that a command
	@# does not compile tf2npu again on every start (PYTHONDONTWRITEBYTECODE=1 stops Python
	@# from caching it; an edited module is still recompiled in memory).
	$(PY) -m compileall -q src > /dev/null
	touch $(STAMP)

# The one-pass statistics op of dump_data=stats (a TensorFlow custom op, C++), built with g++
# against the venv's TensorFlow. Without a compiler the install goes on: one note says so, and
# stats dumps measure with TensorFlow's reductions (src/tf2npu/runtime/dump/stats_op/).
STATS_OP := src/tf2npu/runtime/dump/stats_op
STATS_LIB := $(STATS_OP)/_tensor_stats.so
$(STATS_LIB): $(STAMP) $(STATS_OP)/tensor_stats.cc $(STATS_OP)/stats_kernel.h $(STATS_OP)/blocks.inc
	@$(PY) -m tf2npu.runtime.dump.stats_op.build || true

# The float16 rounding op (src/tf2npu/runtime/native/half_round.cc), compiled against the venv's
# TensorFlow. Without g++ or on a failed build the venv still installs: the runtime then emits
# Cast pairs (the same bits, slower) and says so (half_round.log holds g++'s last lines).
$(HALF_ROUND_SO): $(HALF_ROUND_DIR)/half_round.cc $(STAMP)
	@{ flags=$$(TF_CPP_MIN_LOG_LEVEL=3 $(PY) -c "import tensorflow as tf; print(' '.join(tf.sysconfig.get_compile_flags()))") && \
	  libs=$$(TF_CPP_MIN_LOG_LEVEL=3 $(PY) -c "import tensorflow as tf; print(' '.join(tf.sysconfig.get_link_flags()))") && \
	  $${CXX:-g++} -shared -fPIC -O3 $$flags $< -o $@.tmp $$libs && mv $@.tmp $@; } \
	  > $(HALF_ROUND_DIR)/half_round.log 2>&1 \
	  || { rm -f $@.tmp $@; tail -n 5 $(HALF_ROUND_DIR)/half_round.log; \
	       echo "note: $@ not built (see $(HALF_ROUND_DIR)/half_round.log); float16 roundings will run as Cast pairs"; }

half-round: $(HALF_ROUND_SO)

# The native ops, each optional: a failed build leaves its fallback and one note.
NATIVE := $(STATS_LIB) $(HALF_ROUND_SO)

venv: $(STAMP) $(NATIVE)

# The vendor tools (msaccucmp, msprof-analyze) in their own venv, the oracle of tests/interop/.
# When PyPI cannot be reached the build goes on: those tests skip and say why
# (.venv-vendor/.failed holds pip's last lines).
VENDOR := .venv-vendor
VENDOR_STAMP := $(VENDOR)/.installed
$(VENDOR_STAMP): requirements/vendor.txt
	@rm -f $(VENDOR)/.failed
	@{ $(PYTHON) -m venv $(VENDOR) && \
	  $(VENDOR)/bin/python -m pip install --quiet --upgrade pip==24.3.1 && \
	  $(VENDOR)/bin/python -m pip install --quiet -r requirements/vendor.txt; } > $(VENDOR).log 2>&1 \
	  && touch $(VENDOR_STAMP) \
	  || { mkdir -p $(VENDOR); tail -n 5 $(VENDOR).log > $(VENDOR)/.failed; \
	       echo "note: $(VENDOR) not built (see $(VENDOR).log); tests/interop will skip"; }

vendor: $(VENDOR_STAMP)

# Migrates the bundled TF 1.15 examples into a fresh temporary folder and prints the summary,
# then trains one migrated script (the BERT-style block: npu_unary_ops.gelu, npu_ops.dropout)
# with `tf2npu run` under mixed precision and prints its run summary, and ends with
# `tf2npu verify` of one migrated example against its original (four runs, about a minute).
DEMO_RUN := transformer_block_gelu.py
DEMO_VERIFY := estimator_mnist_like.py
demo: $(STAMP) $(NATIVE)
	@out=$$(mktemp -d -t tf2npu-demo-XXXXXX); \
	$(VENV)/bin/tf2npu migrate examples/tf1 -o $$out/tf1_npu --report $$out/report; code=$$?; \
	echo; echo "migrated scripts: $$out/tf1_npu"; echo "reports:          $$out/report"; \
	test $$code -le 1 || exit $$code; \
	echo; echo "tf2npu run $$out/tf1_npu/$(DEMO_RUN) (allow_mix_precision, 20 steps):"; \
	TF_CPP_MIN_LOG_LEVEL=2 $(VENV)/bin/tf2npu run --report-dir $$out/run \
		--option precision_mode=allow_mix_precision \
		$$out/tf1_npu/$(DEMO_RUN) --steps 20 --model-dir $$out/model 2> $$out/run.log; code=$$?; \
	test $$code -eq 0 || { tail -n 40 $$out/run.log; exit $$code; }; \
	sed -n '/^tf2npu run .*: exit status/,$$p' $$out/run.log; \
	echo "TensorFlow's log:  $$out/run.log"; \
	echo; echo "tf2npu verify examples/tf1/$(DEMO_VERIFY) $$out/tf1_npu/$(DEMO_VERIFY):"; \
	$(VENV)/bin/tf2npu verify examples/tf1/$(DEMO_VERIFY) $$out/tf1_npu/$(DEMO_VERIFY) \
		--out $$out/verify -- --steps 5 --model-dir '{run_dir}/model'

# The HTML report's layout test runs in headless Chromium (Debian's chromium-headless-shell).
# It is installed here when missing and we are root with apt-get; otherwise that test skips and
# says why.
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 || \
	{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq chromium-headless-shell; } >/dev/null 2>&1; } || \
	echo "note: chromium-headless-shell is not installed; the HTML layout test will skip"

test: $(STAMP) $(NATIVE) browser vendor
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -n 2 --dist loadgroup

# The unit tests only (everything not marked slow: no end-to-end runs, no subprocesses of
# tf2npu run); under 2 minutes on 2 cores. `make test` runs these and the slow ones.
test-fast: $(STAMP) $(NATIVE)
	$(PY) -m pytest -n 2 --dist loadgroup -q -m "not slow"

lint: $(STAMP)
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) $(VENDOR) $(VENDOR).log build *.egg-info src/*.egg-info
	rm -f $(STATS_OP)/_tensor_stats.*
	rm -f $(HALF_ROUND_SO) $(HALF_ROUND_DIR)/half_round.log
