"""QuantStub, DeQuantStub and QuantWrapper: identities in a float model (PyTorch swaps them in ``convert``)."""
from ...nn.modules.module import Module


class _Stub(Module):
    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantStub(_Stub):
    """Marks where a quantized model would quantize its input; the identity in a float model."""


class DeQuantStub(_Stub):
    """Marks where a quantized model would dequantize; the identity in a float model."""


class QuantWrapper(Module):
    """``module`` between a QuantStub and a DeQuantStub."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))
