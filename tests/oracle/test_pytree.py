"""torch.utils._pytree under torch and hookgrad: the same leaves in the same order, specs that print, compare,
serialise and rebuild alike, and custom nodes registered the same way."""
import collections
import dataclasses

import numpy as np
import pytest
import torch
import torch.utils._pytree as tp

import hookgrad
import hookgrad.utils._pytree as hp

Point = collections.namedtuple("Point", "x y")


def _trees(lib):
    t = lib.arange(3.0)
    return [
        1, None, [], (), {}, "leaf", t,
        [1, [2, [3, [4, None]]]],
        {"b": 1, "a": [2, (3, None)], "c": {"d": t}},
        (collections.OrderedDict(z=1, y=2), Point(1, [2, 3]), collections.deque([1, 2], maxlen=4),
         collections.defaultdict(list, {"k": [3]})),
        ((), [()], {"e": []}),
        lib.max(lib.ones(2, 2), 0),
    ]


def _plain(leaves, lib):
    return [x.tolist() if isinstance(x, lib.Tensor) else x for x in leaves]


@pytest.mark.parametrize("i", range(len(_trees(torch))))
def test_flatten_unflatten_like_torch(i):
    t_tree, h_tree = _trees(torch)[i], _trees(hookgrad)[i]
    t_leaves, t_spec = tp.tree_flatten(t_tree)
    h_leaves, h_spec = hp.tree_flatten(h_tree)
    assert _plain(h_leaves, hookgrad) == _plain(t_leaves, torch)
    assert str(h_spec) == str(t_spec)
    assert (h_spec.num_leaves, h_spec.num_nodes, h_spec.num_children, h_spec.is_leaf()) == \
        (t_spec.num_leaves, t_spec.num_nodes, t_spec.num_children, t_spec.is_leaf())
    back = hp.tree_unflatten(h_leaves, h_spec)
    assert type(back) is type(h_tree) and str(back) == str(h_tree)
    assert hp.tree_structure(back) == h_spec
    assert _plain(hp.tree_leaves(h_tree), hookgrad) == _plain(tp.tree_leaves(t_tree), torch)
    t_paths = [(tp.keystr(k), v) for k, v in tp.tree_flatten_with_path(t_tree)[0]]
    h_paths = [(hp.keystr(k), v) for k, v in hp.tree_flatten_with_path(h_tree)[0]]
    assert [k for k, _ in h_paths] == [k for k, _ in t_paths]
    try:
        t_dump = tp.treespec_dumps(t_spec)
    except Exception as e:  # noqa: BLE001 -- the same error in hookgrad
        with pytest.raises(type(e)):
            hp.treespec_dumps(h_spec)
    else:
        assert hp.treespec_dumps(h_spec) == t_dump
        assert hp.treespec_loads(t_dump) == h_spec


def test_map_and_predicates():
    for lib, p in ((torch, tp), (hookgrad, hp)):
        tree = {"a": [1, 2.0, "s"], "b": (lib.ones(2), None)}
        doubled = p.tree_map_only(int, lambda x: x * 2, tree)
        assert doubled["a"] == [2, 2.0, "s"]
        summed = p.tree_map(lambda x, y: x + y, {"a": [1, 2]}, {"a": [10, 20]})
        assert summed == {"a": [11, 22]}
        assert p.tree_map_only(lib.Tensor, lambda t: t * 3, tree)["b"][0].tolist() == [3.0, 3.0]
        assert p.tree_all(lambda x: x is not None, [1, 2]) and p.tree_any(lambda x: x is None, tree)
        assert p.tree_any_only(str, lambda s: s == "s", tree) and p.tree_all_only(int, lambda i: i > 0, tree)
        assert p.tree_structure([1, 2]) == p.tree_structure([3, 4]) != p.tree_structure((3, 4))
        with pytest.raises(ValueError):
            p.tree_map(lambda x, y: x, [1, 2], [1])
        with pytest.raises(ValueError):
            p.tree_unflatten([1], p.tree_structure([1, 2]))
    assert str(hp.tree_structure(1)) == str(tp.tree_structure(1)) == "*"
    assert isinstance(hp.tree_structure(1), hp.LeafSpec) and type(hp.treespec_leaf()) is hp.LeafSpec


@dataclasses.dataclass
class Box:
    value: object
    label: str


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


def _register(p):
    p.register_pytree_node(Pair, lambda x: ([x.a, x.b], "pair"), lambda v, c: Pair(*v),
                           serialized_type_name="test_pytree.Pair")
    p.register_dataclass(Box)


def test_custom_nodes_like_torch():
    outs = []
    for p in (tp, hp):
        _register(p)
        try:
            tree = {"p": Pair(1, [2, 3]), "box": Box(4, "x")}
            leaves, spec = p.tree_flatten(tree)
            back = p.tree_unflatten([v * 10 if isinstance(v, int) else v for v in leaves], spec)
            outs.append((leaves, str(spec).replace("torch.utils._pytree", "pytree"), back["p"].a, back["p"].b,
                         back["box"], p.treespec_dumps(p.tree_structure(Pair(1, 2)))))
            assert Pair in p.SUPPORTED_NODES
            with pytest.raises(ValueError, match="already registered"):
                _register(p)
        finally:
            p._deregister_pytree_node(Pair)
            p._deregister_pytree_node(Box)
    assert outs[0] == outs[1]
    # the deprecated spelling, used by older packages
    hp._register_pytree_node(Pair, lambda x: ([x.a, x.b], None), lambda v, c: Pair(*v))
    try:
        assert hp.tree_leaves(Pair(1, (2,))) == [1, 2]
    finally:
        hp._deregister_pytree_node(Pair)


def test_importable_where_torch_has_it():
    import hookgrad.fx._pytree as fxp
    assert hookgrad.utils._pytree is hp
    spec = hp.tree_structure({"a": 1, "b": [2, 3]})
    assert fxp.tree_flatten_spec({"b": [5, 6], "a": 4}, spec) == [4, 5, 6]
    t = torch.utils._pytree.tree_structure({"a": 1, "b": [2, 3]})
    assert torch.fx._pytree.tree_flatten_spec({"b": [5, 6], "a": 4}, t) == [4, 5, 6]
    assert np.array_equal(hp.tree_leaves([hookgrad.ones(2)])[0].numpy(), np.ones(2))
