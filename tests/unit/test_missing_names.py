"""A PyTorch name hookgrad lacks raises NotImplementedName, an AttributeError naming the PyTorch name."""
import copy
import importlib
import inspect
import pickle

import pytest

import hookgrad
from hookgrad import _coverage_names, _missing
from hookgrad._missing import NotImplementedName

MIRRORS = {"torch": "hookgrad", "torch.nn": "hookgrad.nn", "torch.nn.functional": "hookgrad.nn.functional",
           "torch.nn.init": "hookgrad.nn.init", "torch.linalg": "hookgrad.linalg", "torch.optim": "hookgrad.optim",
           "torch.optim.lr_scheduler": "hookgrad.optim.lr_scheduler", "torch.utils.data": "hookgrad.utils.data",
           "torch.autograd": "hookgrad.autograd", "torch.distributions": "hookgrad.distributions"}


@pytest.mark.parametrize("namespace", sorted(MIRRORS))
def test_every_missing_torch_name_raises_the_subclass(namespace):
    mod = importlib.import_module(MIRRORS[namespace])
    missing = [n for n in _coverage_names.NAMES[namespace].split() if n not in dir(mod)]
    for name in missing:
        try:
            getattr(mod, name)
        except NotImplementedName as e:
            assert isinstance(e, AttributeError)
            assert str(e).startswith(f"{namespace}.{name} is not implemented in hookgrad"), str(e)
            assert "docs/coverage.md" in str(e)
            assert e.name == name and e.obj is mod and e.torch_name == f"{namespace}.{name}"
            assert not hasattr(mod, name)
            assert getattr(mod, name, "default") == "default"
        else:       # provided lazily (a submodule imported on first access)
            assert name in dir(mod)


def test_category_in_message():
    with pytest.raises(NotImplementedName, match=r"^torch\.distributions\.Kumaraswamy is not implemented in hookgrad "
                                                 r"yet; it comes later: the distributions issue 12 did not list"):
        hookgrad.distributions.Kumaraswamy
    with pytest.raises(NotImplementedName, match=r"^torch\.quantize_per_tensor is not implemented in hookgrad: "
                                                 r"a non-goal \(quantized tensors\)"):
        hookgrad.quantize_per_tensor
    e = pytest.raises(AttributeError, lambda: hookgrad.distributions.Kumaraswamy).value
    assert e.category.startswith("later: the distributions issue 12 did not list")
    with pytest.raises(NotImplementedName, match=r"^torch\.nn\.qat is not implemented in hookgrad: a non-goal"):
        hookgrad.nn.qat


def test_nn_and_functional_have_no_later_names():
    """Every class and function of torch.nn and torch.nn.functional is implemented or a named non-goal:
    none is left for later (the layers of issue 12 are all here)."""
    for ns in ("torch.nn", "torch.nn.functional"):
        later = {n: c for n, c in _coverage_names.CATEGORY[ns].items() if c.startswith("later")}
        assert not later, (ns, later)
    nn = hookgrad.nn
    assert not isinstance(nn.Linear(1, 1), nn.LSTM)
    from hookgrad.nn import LSTM                          # noqa: F401  from-imports work like attribute reads
    assert LSTM is nn.LSTM and pickle.loads(pickle.dumps(nn.LSTM)) is nn.LSTM


@pytest.mark.parametrize("mod", [hookgrad, hookgrad.nn, hookgrad.nn.functional, hookgrad.linalg, hookgrad.optim,
                                 hookgrad.optim.lr_scheduler, hookgrad.utils.data, hookgrad.autograd])
def test_names_torch_lacks_and_dunders_get_pythons_error(mod):
    for name in ("surely_not_a_torch_name", "__wrapped__", "__path__x", "_private_thing"):
        with pytest.raises(AttributeError) as info:
            getattr(mod, name)
        assert type(info.value) is AttributeError
        shown = "hookgrad.linalg" if mod is hookgrad.linalg else mod.__name__
        assert str(info.value) == f"module {shown!r} has no attribute {name!r}"


def test_probes_by_copy_pickle_inspect_and_imports():
    from hookgrad import nn, optim, linalg, autograd     # noqa: F401  from-imports still work
    from hookgrad.nn import functional                    # noqa: F401
    m = hookgrad.nn.Linear(2, 2)
    assert isinstance(copy.deepcopy(m), hookgrad.nn.Linear)
    assert isinstance(pickle.loads(pickle.dumps(hookgrad.ones(2))), hookgrad.Tensor)
    assert inspect.getmembers(hookgrad.nn)                # walks dir(): nothing listed raises
    assert not hasattr(hookgrad, "__wrapped__")           # doctest / inspect.unwrap probe
    with pytest.raises(ImportError):
        from hookgrad.nn import qat                       # noqa: F401


def test_data_file_shape():
    assert _coverage_names.TORCH_VERSION == "2.13.0"
    assert set(_coverage_names.NAMES) >= set(MIRRORS) | {"torch.Tensor"}
    for namespace, cats in _coverage_names.CATEGORY.items():
        names = _missing.torch_names(namespace)
        for name, cat in cats.items():
            assert name in names and cat.split(": ")[0] in ("later", "non-goal"), (namespace, name, cat)
    assert "mm" in _coverage_names.ATEN_OVERLOADS and "default" in _coverage_names.ATEN_OVERLOADS["mm"].split()
