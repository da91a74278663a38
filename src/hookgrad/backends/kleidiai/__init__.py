"""torch.backends.kleidiai: no KleidiAI kernels in hookgrad."""


def is_available():
    return False
