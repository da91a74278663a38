"""A folder that compat.install() puts first on the sys.path that spawned child processes get
(multiprocessing's spawn and forkserver start methods), so that ``import torch`` in the child installs the
alias there too instead of importing the real PyTorch."""
