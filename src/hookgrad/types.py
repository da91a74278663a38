"""torch.types: the type aliases PyTorch's annotations use (``torch.types.Number``, ``Device``, ``_size``...)."""
import builtins
import os
from typing import IO, Any, Sequence, TypeAlias, Union  # noqa: F401  (PyTorch's module exports these)

from ._tensor import Tensor, Size, device as _device
from ._dtype import dtype as _dtype
from ._layout import layout as _layout
from ._tensor import UntypedStorage as Storage

_bool = builtins.bool
_int = builtins.int
_float = builtins.float
_complex = builtins.complex
_str = builtins.str
_bytes = builtins.bytes
_size = Union[Size, list[_int], tuple[_int, ...]]
_symsize = _size
_dispatchkey = Union[_str]
_qscheme = Any

SymInt = _int
SymFloat = _float
SymBool = _bool
IntLikeType = _int
FloatLikeType = _float
BoolLikeType = _bool
py_sym_types = (SymInt, SymFloat, SymBool)
PySymType = Union[SymInt, SymFloat, SymBool]

_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, None, Sequence[Union[Tensor, None]]]
_TensorOrTensorsOrGradEdge = Union[Tensor, Sequence[Tensor], Any]

_Number = (_bool, _int, _float, _complex)
Number = _int | _float | _bool
Device = _device | _str | _int | None
FileLike = Union[_str, os.PathLike, IO[_bytes]]
