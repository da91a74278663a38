"""torch.fx.passes.shape_prop: ``ShapeProp`` runs a GraphModule and stores each Node's result's
``TensorMetadata`` (shape, dtype, requires_grad, stride, memory format) in ``node.meta['tensor_meta']``."""
import traceback
from typing import Any, NamedTuple

from ..._tensor import Tensor
from .._compatibility import compatibility
from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


@compatibility(is_backward_compatible=True)
class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result, include_contiguity=True):
    import hookgrad
    memory_format = None
    if include_contiguity:
        for query_format in (hookgrad.contiguous_format, hookgrad.channels_last, hookgrad.channels_last_3d):
            try:
                ok = result.is_contiguous(memory_format=query_format)
            except (RuntimeError, ValueError, TypeError):
                ok = False
            if ok:
                memory_format = query_format
                break
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(), memory_format, False,
                          {})


@compatibility(is_backward_compatible=True)
class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*inputs)``: every Node that gives a Tensor gets ``meta['tensor_meta']``, and
    every Node ``meta['type']``."""

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_module = None
        self.fake_mode = None
        self.real_module = self.module

    def run_node(self, n):
        try:
            result = super().run_node(n)
        except Exception as e:
            traceback.print_exc()
            raise RuntimeError(f"ShapeProp error for: node={n.format_node()} with meta={n.meta}") from e
        found_tensor = False

        def extract_tensor_meta(obj):
            nonlocal found_tensor
            if isinstance(obj, Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract_tensor_meta)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        return super().run(*args)
