"""The flag machinery of torch.backends' modules (PyTorch's ContextProp and PropModule, and the ``flags()``
context managers' body), shared by every submodule."""
import sys
import types
from contextlib import contextmanager

_allow_mutation = [True]


def disable_global_flags():
    _allow_mutation[0] = False


def flags_frozen():
    return not _allow_mutation[0]


@contextmanager
def _allow_nonbracketed_mutation():
    old = _allow_mutation[0]
    _allow_mutation[0] = True
    try:
        yield
    finally:
        _allow_mutation[0] = old


class ContextProp:
    """A module attribute read through ``getter`` and set through ``setter`` (refused once flags are frozen)."""

    def __init__(self, getter, setter):
        self.getter = getter
        self.setter = setter

    def __get__(self, obj, objtype):
        return self.getter()

    def __set__(self, obj, val):
        if flags_frozen():
            raise RuntimeError(f"not allowed to set {_torch_name(obj.__name__)} flags after disable_global_flags; "
                               "please use flags() context manager instead")
        self.setter(val)


class PropModule(types.ModuleType):
    """The class of a backends module whose flags are ContextProps (the module object itself is kept)."""


def _torch_name(name):
    return "torch" + name[len("hookgrad"):] if name.startswith("hookgrad") else name


def flag_module(module_name, values, cls_name):
    """Turn the keys of ``values`` (a dict holding each flag's value) into ContextProp attributes of the module
    ``module_name``, as PyTorch's ``<Name>Module(PropModule)`` does, keeping the module object."""
    module = sys.modules[module_name]
    props = {k: ContextProp(lambda k=k: values[k], lambda v, k=k: values.__setitem__(k, v)) for k in values}
    for k in values:
        module.__dict__.pop(k, None)
    module.__class__ = type(cls_name, (PropModule,), props)
    return module


def swap_flags(values, new):
    """Set the flags in ``new`` (None: unchanged) and return the old values of every flag, in ``values``' order."""
    old = tuple(values.values())
    for k, v in new.items():
        if v is not None:
            values[k] = v
    return old


@contextmanager
def scoped_flags(values, set_flags, kwargs):
    """The body of every ``flags()`` context manager: ``set_flags(**kwargs)`` for the block, then the old flags."""
    with _allow_nonbracketed_mutation():
        orig = set_flags(**kwargs)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            values.update(zip(values, orig))
