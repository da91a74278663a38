"""FloatFunctional: float add / mul / cat / matmul through a module, with PyTorch's method names."""
from ....nn.modules.linear import Identity
from ....nn.modules.module import Module


class FloatFunctional(Module):
    """State collector for the float ops of a quantization-ready model; each method is the plain op, whose
    result passes through ``activation_post_process`` (an Identity until quantization prepares the model)."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use the underlying "
                           "operation")

    def add(self, x, y):
        return self.activation_post_process(x + y)

    def add_scalar(self, x, y):
        return x + y          # not observed: scalar adds keep the input's quantization parameters

    def mul(self, x, y):
        return self.activation_post_process(x * y)

    def mul_scalar(self, x, y):
        return x * y

    def cat(self, x, dim=0):
        from ....primitives.join import cat
        return self.activation_post_process(cat(x, dim=dim))

    def add_relu(self, x, y):
        return self.activation_post_process((x + y).relu())

    def matmul(self, x, y):
        return self.activation_post_process(x.matmul(y))
