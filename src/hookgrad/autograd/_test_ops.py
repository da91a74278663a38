"""PyTorch's test-only aten ops that its autograd tests call, defined as PyTorch defines them (native_functions.yaml,
derivatives.yaml, aten/src/ATen/native/TestOps.cpp):

- ``torch._C._nn._test_warn_in_autograd(self)``: a clone whose backward warns "Warn from backward" and passes the
  gradient on (a warning raised inside backward reaches the caller as a Python warning);
- ``torch._test_autograd_multiple_dispatch(self)`` (overload ``fullcoverage``): a clone with one gradient formula
  per autograd dispatch key: ``grad.expand(self.sizes()) + 1`` (Default), ``grad.expand(self.sizes()) * 2``
  (AutogradCUDA); forward AD (``auto_linear``) for the Default key only;
- ``torch._test_autograd_multiple_dispatch(self, b)`` (overload ``ntonly``): CompositeImplicitAutograd on dense
  tensors, i.e. ``self.clone()`` and clone's gradient;
- ``torch._test_autograd_multiple_dispatch_view(self)``: ``self.view(-1)``, a view saving ``self``, gradient
  ``grad.reshape_as(self)`` (Default) or ``grad.reshape_as(self) + 1`` (AutogradCUDA), no forward AD;
  ``_test_autograd_multiple_dispatch_view_copy(self)``: the same as a copy (its ``view_copy``, whose formula is
  generated from the view's, per dispatch key).

The nested-tensor formulas of derivatives.yaml (AutogradNestedTensor) have no counterpart: hookgrad has no nested
tensors.
"""
import warnings

from .node import Node
from .views import make_view
from .op_hooks import aten_name, op_name, _ATEN_NAMES
from .forward_ad import linear_jvp
from ..primitives.shape import View


def _no_forward_ad(self, primals, tangents, out):
    raise NotImplementedError(f"Trying to use forward AD with {aten_name(self)} that does not support it because "
                              "it has not been implemented yet.\nPlease file an issue to PyTorch at https://github.com/"
                              "pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize its "
                              "implementation or submit a PR adding the implementation to derivatives.yaml")


def _on_cuda(x):
    from .. import _array
    return _array.device_type(x) == "cuda"


class TestWarnInAutograd(Node, name="TestWarnInAutogradBackward0"):
    jvp = _no_forward_ad

    def forward(self, x):
        return x.copy()

    def backward(self, g):
        warnings.warn("Warn from backward", UserWarning, stacklevel=2)
        return g


class TestAutogradMultipleDispatch(Node, name="TestAutogradMultipleDispatchBackward0"):
    saved_attrs = ("self_sym_sizes=in_shape",)

    def forward(self, x):
        self.in_shape = x.shape
        self.cuda = _on_cuda(x)
        return x.copy()

    def jvp(self, primals, tangents, out):
        if self.cuda:           # derivatives.yaml gives AutogradCUDA no forward formula
            _no_forward_ad(self, primals, tangents, out)
        return linear_jvp(self, primals, tangents, out)

    def backward(self, g):
        g = g.expand(self.in_shape)
        return g * 2 if self.cuda else g + 1


class TestAutogradMultipleDispatchView(View, name="TestAutogradMultipleDispatchViewBackward0"):
    """``self.view(-1)`` (View's forward: its error for a tensor that cannot be viewed), saving ``self``."""
    save = (0,)
    saved_names = ("self",)
    saved_attrs = ()
    jvp = _no_forward_ad

    def forward(self, x):
        self.cuda = _on_cuda(x)
        return View.forward(self, x)

    def backward(self, g):
        (x,) = self.saved_values
        g = g.reshape_as(x)
        return g + 1 if self.cuda else g


class TestAutogradMultipleDispatchViewCopy(TestAutogradMultipleDispatchView,
                                           name="TestAutogradMultipleDispatchViewBackward0_copy"):
    jvp = _no_forward_ad

    def forward(self, x):
        return TestAutogradMultipleDispatchView.forward(self, x).copy()


# (the names the grad_fn names do not spell: a view_copy op's node is its view's, suffixed ``_copy``)
_ATEN_NAMES[op_name(TestAutogradMultipleDispatchViewCopy)] = "_test_autograd_multiple_dispatch_view_copy"


def _test_warn_in_autograd(self):
    return TestWarnInAutograd.apply(self)


def _test_autograd_multiple_dispatch(self, b=None):
    if b is None:
        return TestAutogradMultipleDispatch.apply(self)
    return self.clone()         # the ntonly overload: CompositeImplicitAutograd (a clone) on dense tensors


def _test_autograd_multiple_dispatch_view(self):
    return make_view(TestAutogradMultipleDispatchView.apply(self, shape=(-1,)), self,
                     _test_autograd_multiple_dispatch_view)


def _test_autograd_multiple_dispatch_view_copy(self):
    return TestAutogradMultipleDispatchViewCopy.apply(self, shape=(-1,))

