"""torch._tensor_str: PyTorch's printing module, as packages that print their own tensor types call it
(torch_geometric's EdgeIndex): the print options and the pieces of a repr, over hookgrad's one printer
(``_printing``)."""
from . import _printing
from ._printing import PRINT_OPTS, get_printoptions, printoptions, set_printoptions  # noqa: F401

__all__ = ["PRINT_OPTS", "set_printoptions", "get_printoptions", "printoptions"]


def _tensor_str(self, indent):
    """The bracketed values of the tensor ``self``, continuation lines indented by ``indent``."""
    return _printing._tensor_str(self._data, indent)


def _add_suffixes(tensor_str, suffixes, indent, force_newline):
    """``tensor_str`` followed by ``, suffix`` items and the closing parenthesis (the first suffix on a new line
    when ``force_newline``)."""
    if force_newline and suffixes:
        tensor_str += ",\n" + " " * indent + suffixes[0]
        suffixes = suffixes[1:]
    return _printing._add_suffixes(tensor_str, list(suffixes), indent)


def _str_intern(inp, *, tensor_contents=None):
    return _printing.tensor_repr(inp, tensor_contents)


def _str(self, *, tensor_contents=None):
    return _printing.tensor_repr(self, tensor_contents)
