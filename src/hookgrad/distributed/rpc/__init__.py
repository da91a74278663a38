"""torch.distributed.rpc: hookgrad has no RPC framework (its processes talk through MPI collectives only), so, as
PyTorch built without RPC, the module holds ``is_available()`` (False) and nothing else."""


def is_available():
    return False
