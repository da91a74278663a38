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
    placeholders = _coverage_names.PLACEHOLDERS.get(namespace, {})
    for name in missing:
        if name in placeholders:
            continue            # test_later_layers_are_placeholders
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
    with pytest.raises(NotImplementedName, match=r"^torch\.lstm is not implemented in hookgrad yet; it comes "
                                                 r"later: recurrent layers \(issue 12\)"):
        hookgrad.lstm
    with pytest.raises(NotImplementedName, match=r"^torch\.quantize_per_tensor is not implemented in hookgrad: "
                                                 r"a non-goal \(quantized tensors\)"):
        hookgrad.quantize_per_tensor
    e = pytest.raises(AttributeError, lambda: hookgrad.lstm).value
    assert e.category == "later: recurrent layers (issue 12)"
    with pytest.raises(NotImplementedName, match=r"^torch\.nn\.qat is not implemented in hookgrad: a non-goal"):
        hookgrad.nn.qat                                   # non-goals in torch.nn get no placeholder


# ------------------------------------------------------------------ later layers of torch.nn / nn.functional
NN = {"torch.nn": hookgrad.nn, "torch.nn.functional": hookgrad.nn.functional}


def _placeholder_names():
    return [(ns, name) for ns in NN for name in _coverage_names.PLACEHOLDERS[ns] if name not in dir(NN[ns])]


def test_placeholders_are_exactly_the_later_classes_and_functions():
    for ns, mod in NN.items():
        for name, cat in _coverage_names.CATEGORY[ns].items():
            if name in dir(mod):
                continue
            has = hasattr(mod, name)
            assert has == (name in _coverage_names.PLACEHOLDERS[ns]), (ns, name)
            assert not has or cat.startswith("later: "), (ns, name, cat)
    assert "LSTM" in _coverage_names.PLACEHOLDERS["torch.nn"] and "attention" not in _coverage_names.PLACEHOLDERS[
        "torch.nn"]                                       # a submodule gets none


@pytest.mark.parametrize("ns,name", _placeholder_names())
def test_later_layers_are_placeholders(ns, name):
    mod = NN[ns]
    obj = getattr(mod, name)
    assert getattr(mod, name) is obj and obj.__name__ == name     # one object: dict keys, isinstance
    assert name not in dir(mod) and name not in vars(mod)           # coverage still counts it missing
    want = _missing.message(ns, name)
    assert want.startswith(f"{ns}.{name} is not implemented in hookgrad yet; it comes later: ")
    assert "issue 12" in want and "docs/coverage.md" in want
    with pytest.raises(NotImplementedError) as info:
        obj(3, 4)
    assert str(info.value) == want and type(info.value) is NotImplementedError
    if _coverage_names.PLACEHOLDERS[ns][name] == "class":
        assert issubclass(obj, hookgrad.nn.Module) and not isinstance(hookgrad.nn.Linear(1, 1), obj)
        assert {obj: 1}.get(getattr(mod, name)) == 1
    else:
        assert callable(obj) and not isinstance(obj, type)


def test_lstm_placeholder_in_user_code():
    nn = hookgrad.nn
    assert nn.LSTM is nn.LSTM and hasattr(nn, "LSTM") and hasattr(nn, "SyncBatchNorm")
    assert not isinstance(nn.Linear(1, 1), nn.LSTM)
    assert not any(isinstance(m, (nn.LSTM, nn.GRU, nn.Conv3d)) for m in nn.Sequential(nn.Linear(2, 2)).modules())
    with pytest.raises(NotImplementedError, match=r"^torch\.nn\.LSTM is not implemented in hookgrad yet; it "
                                                  r"comes later: recurrent layers \(issue 12\)\. See docs/coverage\.md$"):
        nn.LSTM(3, 4)

    class Mine(nn.LSTM):
        pass
    with pytest.raises(NotImplementedError, match="torch.nn.LSTM"):
        Mine(3, 4)
    from hookgrad.nn import LSTM                          # noqa: F401  from-imports work like attribute reads
    assert LSTM is nn.LSTM and pickle.loads(pickle.dumps(nn.LSTM)) is nn.LSTM
    cats = _coverage_names.CATEGORY["torch.nn"]
    for name in _coverage_names.NAMES["torch.nn"].split():   # missing, not "later": no placeholder
        if name not in dir(nn) and not cats.get(name, "").startswith("later: "):
            assert not hasattr(nn, name), name
    assert _coverage_names.CATEGORY["torch.nn"]["SyncBatchNorm"].startswith("later: issue 12")
    assert _coverage_names.CATEGORY["torch.nn"]["EmbeddingBag"] == "later: issue 12"


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
