# Two entry points: `make demo` (migrate the bundled examples) and `make test` (the whole suite).
# Both create .venv and install the pinned dependencies themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==24.3.1
	$(PY) -m pip install --quiet -e '.[dev,tf]'
	touch $(STAMP)

venv: $(STAMP)

# Migrates the bundled TF 1.15 examples into a fresh temporary folder and prints the summary.
demo: $(STAMP)
	@out=$$(mktemp -d -t tf2npu-demo-XXXXXX); \
	$(VENV)/bin/tf2npu migrate examples/tf1 -o $$out/tf1_npu --report $$out/report; code=$$?; \
	echo; echo "migrated scripts: $$out/tf1_npu"; echo "reports:          $$out/report"; \
	test $$code -le 1

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -n 2

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
