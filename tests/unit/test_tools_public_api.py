"""hookgrad.tools is a plain client of hookgrad's public API (STYLE.md principle 7).

The rule, checked on the source of every ``src/hookgrad/tools/*.py`` with ``ast``:

1. Imports. Every import of hookgrad -- ``import hookgrad...``, ``from hookgrad... import``, or a
   relative ``from .x import`` / ``from .. import`` -- names a public module and public names: no part
   of the module path and no imported name starts with ``_`` (so ``hookgrad._tensor``,
   ``tools._common`` and ``from .capture import _match`` are all out). Aliases (``as _m``) are free.
2. Attributes. ``x._name`` (an underscore name that is not a dunder ``__name__``) is read or written
   only on the tool itself: ``x`` is ``self``, ``cls`` or ``super()``, or a module from outside hookgrad
   bound by an import in that file (``sys._getframe``). So no ``t._data``, ``node._seq``,
   ``other_tool._stop()``, ``graph._op_hooks``.
3. Reflection. ``getattr`` / ``hasattr`` / ``setattr`` / ``delattr`` and ``object.__setattr__``-style
   calls never take a literal ``"_name"`` (a dunder is fine), except ``"_fields"``, the documented API
   of ``collections.namedtuple`` (capture walks namedtuple outputs).

A shared helper is a public name of the tools module whose job it is (``tools.paths.match``,
``tools.ophooks.OpTool``); a need for a private attribute means the hook API lacks something.
"""
import ast
import pathlib

import pytest

TOOLS = pathlib.Path(__file__).resolve().parents[2] / "src" / "hookgrad" / "tools"
FILES = sorted(TOOLS.glob("*.py"))
NAMEDTUPLE_API = {"_fields"}


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _foreign_modules(tree):
    """Names bound in the file to modules from outside hookgrad (``import sys``, ``import numpy as np``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] != "hookgrad":
                    out.add(a.asname or a.name.split(".")[0])
    return out


def _violations(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    foreign = _foreign_modules(tree)
    bad = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom):
            ours = node.level > 0 or (node.module or "").split(".")[0] == "hookgrad"
            if ours:
                parts = [p for p in (node.module or "").split(".") if p]
                bad += [f"{where}: import from private module {node.module!r}" for p in parts if _private(p)][:1]
                bad += [f"{where}: import of private name {a.name!r}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "hookgrad" and any(_private(p) for p in parts):
                    bad.append(f"{where}: import of private module {a.name!r}")
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            own = (isinstance(base, ast.Name) and base.id in ("self", "cls")) or (
                isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super")
            stdlib = isinstance(base, ast.Name) and base.id in foreign
            if not (own or stdlib):
                bad.append(f"{where}: private attribute {ast.unparse(node)}")
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
            if name in ("getattr", "hasattr", "setattr", "delattr", "__setattr__", "__getattribute__",
                        "__delattr__"):
                for arg in node.args[:2]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _private(arg.value) \
                            and arg.value not in NAMEDTUPLE_API:
                        bad.append(f"{where}: {name}(..., {arg.value!r})")
    return bad


def test_tools_folder_is_found():
    assert len(FILES) >= 10, FILES


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_tool_uses_only_public_api(path):
    assert not path.name.startswith("_") or path.name == "__init__.py", \
        f"tools/{path.name}: a private tools module (shared helpers belong in a public module with that job)"
    assert _violations(path) == []


def test_the_rule_catches_what_it_forbids(tmp_path):
    """The checker itself: each forbidden form is reported, each allowed form is not."""
    src = tmp_path / "probe.py"
    src.write_text(
        "import sys\nimport hookgrad._tensor\nfrom .._tensor import Tensor\nfrom .capture import _match\n"
        "from .. import _creation\nfrom ..nn.modules import module as _m\n"
        "def f(t, tool):\n"
        "    t._data; tool._stop(); getattr(t, '_data', None); sys._getframe(0); t.__class__\n"
        "    hasattr(t, '_fields')\n"
        "class C:\n    def g(self):\n        self._x = 1; super()._start(); object.__setattr__(self, '_y', 2)\n")
    found = _violations(src)
    for needle in ("'hookgrad._tensor'", "'_tensor'", "'_match'", "'_creation'", "t._data", "tool._stop",
                   "getattr(..., '_data')", "__setattr__(..., '_y')"):
        assert any(needle in v for v in found), (needle, found)
    assert len(found) == 8, found
