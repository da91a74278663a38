"""torch.fx.passes.infra.pass_base: ``PassBase`` (a callable GraphModule pass) and its ``PassResult``."""
import abc
from collections import namedtuple

from ..._compatibility import compatibility

__all__ = ["PassResult", "PassBase"]


@compatibility(is_backward_compatible=False)
class PassResult(namedtuple("PassResult", ["graph_module", "modified"])):
    """The result of a pass: the graph module and whether the pass changed it."""
    __slots__ = ()

    def __new__(cls, graph_module, modified):
        return super().__new__(cls, graph_module, modified)


@compatibility(is_backward_compatible=False)
class PassBase(abc.ABC):
    """A pass over a GraphModule: ``requires``, ``call`` and ``ensures``, run in that order by ``__call__``."""

    def __call__(self, graph_module):
        self.requires(graph_module)
        res = self.call(graph_module)
        self.ensures(graph_module)
        return res

    @abc.abstractmethod
    def call(self, graph_module):
        """The pass: returns a PassResult."""

    def requires(self, graph_module):
        pass

    def ensures(self, graph_module):
        pass
