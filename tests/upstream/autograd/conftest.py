# Nothing in this folder is a pytest test: the upstream file runs in subprocesses started by
# tests/upstream/test_autograd_upstream.py (through run_upstream.py), never under pytest's collector.
collect_ignore_glob = ["*.py", "*/*.py", "*/*/*.py"]
