"""A small stand-in for torch.testing._internal, the same under torch and under hookgrad: only the names
PyTorch's test/test_autograd.py imports. run_upstream.py registers these modules as
``torch.testing._internal.*`` before it loads the upstream file."""
