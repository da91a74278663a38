"""Helpers shared by the autograd/hook oracle scenarios."""
import re


def msg(e):
    """PyTorch's text of an error (hookgrad may append ' (hookgrad: ...)' details)."""
    s = str(e)
    s = re.split(r" ?\(hookgrad: |\nhookgrad: | \(Triggered internally", s)[0]
    return s


def attempt(log, fn, *a, **k):
    """Run fn; log ('err', type, message) if it raises, ('ok',) otherwise."""
    try:
        fn(*a, **k)
    except Exception as e:  # noqa: BLE001
        log("err", type(e).__name__, msg(e))
    else:
        log("ok")


def L(t):
    return None if t is None else t


def identity_function(lib, name="Identity"):
    """A custom ``lib.autograd.Function`` class called ``name`` (its node: ``<name>Backward``) whose forward returns
    its input itself and whose backward passes the gradient through."""
    return type(name, (lib.autograd.Function,), {"forward": staticmethod(lambda ctx, x: x),
                                                 "backward": staticmethod(lambda ctx, g: g)})
