"""nn.Module's hook kinds come from one table (nn/modules/_module_hooks.HOOK_KINDS): the dicts a module
holds, the hook listing and state copying (deepcopy, pickle) all follow it. Copies are compared with
torch's: a module with one hook of each kind keeps exactly the same hooks and flags."""
import copy
import pickle
from collections import OrderedDict

import pytest

import hookgrad
from hookgrad.nn.modules import _module_hooks, module as module_py
from hookgrad.utils.hooks import add_hook

torch = pytest.importorskip("torch")


# module-level hooks: pickle stores them by name
def f_pre(*a):
    return None


def f_fwd(*a):
    return None


def f_bw_pre(*a):
    return None


def f_bw(*a):
    return None


def f_sd_pre(*a):
    return None


def f_sd_post(*a):
    return None


def f_load_pre(*a):
    return None


def f_load_post(*a):
    return None


def hook_dict_names(m):
    """The names of the hook dicts a module instance holds (as PyTorch names them: ``*_hooks*``)."""
    return sorted(k for k, v in vars(m).items() if isinstance(v, OrderedDict) and "_hooks" in k)


def hooked(lib, legacy=False):
    m = lib.nn.Linear(2, 2)
    m.register_forward_pre_hook(f_pre, with_kwargs=True)
    m.register_forward_hook(f_fwd, with_kwargs=True, always_call=True)
    m.register_full_backward_pre_hook(f_bw_pre)
    if legacy:
        m.register_backward_hook(f_bw)
    else:
        m.register_full_backward_hook(f_bw)
    m.register_state_dict_pre_hook(f_sd_pre)
    m.register_state_dict_post_hook(f_sd_post)
    m.register_load_state_dict_pre_hook(f_load_pre)
    m.register_load_state_dict_post_hook(f_load_post)
    return m


def describe(m):
    """Each hook dict as a list of entries: the hook's name (a wrapped hook: its hook and whether it is
    bound to ``m`` itself), a flag as the position of its hook in the kind's dict."""
    names = hook_dict_names(m)
    out = {"_is_full_backward_hook": m._is_full_backward_hook}
    for name in names:
        d = vars(m)[name]
        owner = max((n for n in names if name != n and name.startswith(n)), key=len, default=None)
        if owner is not None:                        # a flag dict: which hooks of the owner carry it
            ids = list(vars(m)[owner])
            out[name] = [(ids.index(k), v) for k, v in d.items()]
            continue
        entries = []
        for v in d.values():
            if hasattr(v, "with_module"):            # _WrappedHook
                entries.append(("wrapped", v.hook.__name__, v.with_module and v.module() is m))
            else:
                entries.append(v.__name__)
        out[name] = entries
    return out


def test_every_hook_dict_of_a_module_is_in_the_table():
    table = sorted(_module_hooks.module_hook_dicts())
    assert hook_dict_names(hookgrad.nn.Linear(2, 2)) == table
    assert hook_dict_names(torch.nn.Linear(2, 2)) == table
    assert len({k.kind for k in _module_hooks.HOOK_KINDS}) == len(_module_hooks.HOOK_KINDS)


def test_global_names_of_the_table_live_in_the_hooks_module_and_read_through_module_py():
    for name in _module_hooks.GLOBAL_NAMES:
        assert getattr(module_py, name) is getattr(_module_hooks, name)
        assert hasattr(torch.nn.modules.module, name)


@pytest.mark.parametrize("legacy", [False, True])
def test_listing_and_removal_follow_the_table(legacy):
    m = hooked(hookgrad, legacy)
    kinds = [k.kind for k in _module_hooks.HOOK_KINDS]
    if not legacy:
        kinds[kinds.index("backward")] = "full_backward"
    assert [i.kind for i in m.hooks()] == kinds
    assert m.remove_hooks() == len(kinds)
    assert all(not getattr(m, name) for name in _module_hooks.module_hook_dicts())


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copies_keep_exactly_the_hooks_torch_keeps(how, legacy):
    def roundtrip(m):
        return copy.deepcopy(m) if how == "deepcopy" else pickle.loads(pickle.dumps(m))

    got = {}
    for lib in (torch, hookgrad):
        m = hooked(lib, legacy)
        before = describe(m)
        c = roundtrip(m)
        got[lib.__name__] = (before, describe(c))
    assert got["hookgrad"] == got["torch"]
    before, after = got["hookgrad"]
    assert before == after


def test_an_old_pickle_without_hook_dicts_gets_every_kind():
    m = hookgrad.nn.Linear(2, 2)
    state = {k: v for k, v in vars(m).items() if k not in _module_hooks.module_hook_dicts()}
    fresh = hookgrad.nn.Linear.__new__(hookgrad.nn.Linear)
    fresh.__setstate__(state)
    assert hook_dict_names(fresh) == sorted(_module_hooks.module_hook_dicts())
    assert fresh(hookgrad.ones(1, 2)).shape == (1, 2)


def test_a_new_kind_is_one_line_in_the_table(monkeypatch):
    kind = _module_hooks.HookKind("custom", "_custom_hooks", {"special": "_custom_hooks_special"}, None, {})
    monkeypatch.setattr(_module_hooks, "HOOK_KINDS", _module_hooks.HOOK_KINDS + (kind,))
    m = hookgrad.nn.Linear(2, 2)
    h = add_hook(m._custom_hooks, f_fwd, extra_dict=m._custom_hooks_special)
    m._custom_hooks_special[h.id] = True
    assert [(i.kind, i.flags) for i in m.hooks()] == [("custom", ("special",))]
    for c in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert [(i.kind, i.hook.__name__, i.flags) for i in c.hooks()] == [("custom", "f_fwd", ("special",))]
    assert m.remove_hooks("custom") == 1 and not m._custom_hooks_special
