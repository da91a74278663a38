"""PyTorch's keyword names, read from torch itself, and hookgrad's signatures checked against them.

For every public callable that hookgrad implements in ``torch``, ``Tensor``, ``nn.functional`` and
``linalg``, PyTorch's parameters come from (first that applies):
  1. ``inspect.signature`` of torch's object when it is a Python function (torch/functional.py,
     nn/functional.py, torch/_tensor.py ...): exactly what a user can pass;
  2. the operator schemas (``torch._C._jit_get_all_schemas()``) of the ATen op that a builtin binds:
     the Python argument parser is generated from the same schemas (``self`` is ``input`` for the
     ``torch.X`` function, the bound tensor for ``Tensor.X``); TorchScript-only overloads (int/float/str
     arithmetic on ``a``, ``b``) and the ``Scalar`` twins of ``Tensor`` overloads are not bound in Python;
  3. ``torch.overrides.get_testing_overrides()``'s lambda, for the few hand-bound builtins without a
     schema (``Tensor.size``, ``Tensor.type``, ...).
Overloads are kept apart: a positional parameter must have PyTorch's name at its position in at least one
overload that has that position, and every keyword name of every overload must be accepted.

Run ``python tests/oracle/_signatures.py`` for the table of mismatches.
"""
import collections
import inspect
import keyword

import torch

import hookgrad

# parameters PyTorch has that hookgrad deliberately does not take by name (a decision, documented):
#   names     named tensors (not implemented)
#   implicit  internal flag of expand() used by TorchScript
SKIP_PARAMS = {"names", "implicit"}
# overloads that exist only for CUDA kernels (PyTorch's CPU build raises NotImplementedError)
CUDA_ONLY = {"out_dtype"}
# out=: checked separately (hookgrad takes out= where PyTorch has it, see test_signatures.py)
OUT = "out"

_TS_ONLY = {"a", "b", "s", "l", "el", "x", "t", "self_", "d", "i", "str"}  # names of TorchScript-only overloads

_SCHEMAS = None


def _schemas():
    global _SCHEMAS
    if _SCHEMAS is None:
        _SCHEMAS = collections.defaultdict(list)
        for s in torch._C._jit_get_all_schemas():
            _SCHEMAS[s.name].append(s)
    return _SCHEMAS


Overload = collections.namedtuple("Overload", "positional keyword_only varargs source")


def _from_signature(sig, method):
    pos, kwo, var = [], [], None
    params = list(sig.parameters.values())
    if method and params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            pos.append(p.name)
        elif p.kind == p.KEYWORD_ONLY:
            kwo.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            var = p.name
    return pos, kwo, var


def _from_schemas(aten, method):
    sch = _schemas().get(aten)
    if not sch:
        return None
    overloads, seen = [], set()
    by_name = {s.overload_name: s for s in sch}
    for s in sch:
        # the out= arguments (written tensors, keyword-only) are one `out=` in Python
        args = [a for a in s.arguments if not (a.kwarg_only and a.alias_info is not None and a.alias_info.is_write)]
        names = [a.name for a in args]
        types = [str(a.type) for a in args]
        if not any("Tensor" in ty or "ScalarType" in ty for ty in types) and "pin_memory" not in names:
            continue                       # a TorchScript-only overload (int/float/list arithmetic)
        if "input" not in names and "self" not in names and any(n in _TS_ONLY for n in names):
            continue                       # TorchScript's list/scalar forms (eq.Tensor_list(a, b), ...)
        if any(a.name == "self" and str(a.type).endswith("[]") for a in args):
            continue                       # TorchScript's list methods (sort.Tensor(Tensor[] self, reverse))
        if any(n in CUDA_ONLY for n in names) or any("Dimname" in ty for ty in types):
            continue
        ov = s.overload_name
        if "Scalar" in ov and any("Tensor" in o or o == "" for o in by_name):
            continue
        pos, kwo = [], []
        for a in args:
            n = a.name
            if n == "self":
                if method:
                    continue
                n = "input"
            (kwo if a.kwarg_only else pos).append(n)
        if method and "self" not in names:
            continue                       # a function-only overload (e.g. torch.X(Scalar, Tensor))
        key = (tuple(pos), tuple(kwo))
        if key not in seen:
            seen.add(key)
            overloads.append(Overload(pos, kwo, None, f"schema {aten}.{ov}"))
    if overloads and any("pin_memory" in o.keyword_only for o in overloads):
        # factory functions: Python's binding adds requires_grad next to TensorOptions
        overloads = [o._replace(keyword_only=o.keyword_only + ["requires_grad"]) for o in overloads]
    return overloads or None


_OV = None


def _testing_overrides():
    global _OV
    if _OV is None:
        _OV = torch.overrides.get_testing_overrides()
    return _OV


def _aten_name(ns, name):
    if name.startswith(("linalg_", "fft_", "special_")):
        return "aten::" + name
    if ns == "linalg":
        return "aten::linalg_" + name
    if ns == "fft":
        return "aten::fft_" + name
    return "aten::" + name


class _Probe:
    pass


def _parse_overload(text, method):
    pos, kwo, var, star = [], [], None, False
    for item in (i.strip() for i in text.split(", ") if i.strip()):
        if item == "*":
            star = True
            continue
        n = item.split(" = ")[0].split()[-1]
        if n.startswith("*"):
            var = n[1:]
            pos.append(var)
            continue
        if n == "self" and not method:
            n = "input"
        (kwo if star else pos).append(n)
    return Overload(pos, kwo, None, "Python parser")


def _from_parser(ns, name):
    """The overloads Python's argument parser lists when no overload matches (builtins bound with
    several signatures print all of them): exactly PyTorch's Python names and keyword-only markers."""
    target = getattr(torch.zeros(2, 2), name) if ns == "Tensor" else getattr(NAMESPACES[ns][0](torch), name)
    try:
        target(_Probe(), __hookgrad_probe__=1)
    except TypeError as e:
        msg = str(e)
    except Exception:
        return None
    else:
        return None
    if "expected one of:" not in msg:
        return None
    ovs = []
    for line in msg.splitlines():
        line = line.strip()
        if line.startswith("* (") and line.endswith(")"):
            ovs.append(_parse_overload(line[3:-1], ns == "Tensor"))
    return [o for o in ovs if not any(n in CUDA_ONLY for n in o.positional + o.keyword_only)] or None


# where every source above is wrong, the names checked against real torch calls (see test_signatures.py)
VERIFIED = {
    # the testing-override lambda says (input, other, dim, out); torch.linalg.vecdot(x=, y=) works, input= fails
    ("linalg", "vecdot"): [Overload(["x", "y"], ["dim", "out"], None, "verified by a call")],
    # the schemas list copy_(self, src) and copy_.Tensor(self, other); Python binds other: x.copy_(src=y) fails
    ("Tensor", "copy_"): [Overload(["other", "non_blocking"], [], None, "verified by a call")],

}


def torch_overloads(ns, name, obj):
    """PyTorch's parameter lists for ``obj`` (torch's object named ``name`` in namespace ``ns``)."""
    if (ns, name) in VERIFIED:
        return VERIFIED[ns, name]
    method = ns == "Tensor"
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        try:
            pos, kwo, var = _from_signature(inspect.signature(obj), method)
            return [Overload(pos, kwo, var, "signature")]
        except (ValueError, TypeError):
            pass
    got = _from_parser(ns, name)
    if got:
        return got
    aten = getattr(obj, "__name__", name)
    got = _from_schemas(_aten_name(ns, aten), method) or _from_schemas(_aten_name(ns, name), method)
    if got:
        return got
    lam = _testing_overrides().get(obj)
    if lam is not None:
        pos, kwo, var = _from_signature(inspect.signature(lam), method)
        return [Overload(pos, kwo, var, "testing override")]
    return None


_PYI_OUT = None


def _pyi_out():
    """{name: takes out} for torch's builtins, from the stub generated with the Python bindings
    (torch/_C/_VariableFunctions.pyi: every overload that Python binds, with its ``out``)."""
    global _PYI_OUT
    if _PYI_OUT is None:
        import ast
        import os
        _PYI_OUT = {}
        path = os.path.join(os.path.dirname(torch.__file__), "_C", "_VariableFunctions.pyi")
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                a = node.args
                names = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
                _PYI_OUT[node.name] = _PYI_OUT.get(node.name, False) or OUT in names
    return _PYI_OUT


def torch_has_out(ns, name, obj):
    """Whether PyTorch's ``name`` takes ``out=``: its Python signature; for a builtin of ``torch``, the stub of
    its Python bindings; for linalg's builtins, an out= overload of the ATen op (the schemas' written keyword-only
    arguments, which Python binds as one ``out``)."""
    if (ns, name) in VERIFIED:
        return any(OUT in o.positional + o.keyword_only for o in VERIFIED[ns, name])
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        try:
            return OUT in inspect.signature(obj).parameters
        except (ValueError, TypeError):
            pass
    if ns == "torch":
        return _pyi_out().get(getattr(obj, "__name__", name), _pyi_out().get(name, False))
    for aten in {_aten_name(ns, getattr(obj, "__name__", name)), _aten_name(ns, name)}:

        for s in _schemas().get(aten, ()):
            if any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write for a in s.arguments):
                return True
    return False


def out_mismatches(namespaces=("torch", "linalg")):
    """(name, what) where hookgrad's acceptance of out= differs from PyTorch's."""
    rows = []
    for ns in namespaces:
        fmt = NAMESPACES[ns][1]
        for name, h, t in _implemented(ns):
            params = _hook_params(h, False)
            if params is None:
                continue
            h_out = any(p.name == OUT for p in params)
            if h_out != torch_has_out(ns, name, t):
                rows.append((fmt.format(name), "out", "hookgrad takes out=, PyTorch does not" if h_out else
                             "PyTorch takes out=, hookgrad does not", "schemas/signature"))
    return rows


NAMESPACES = {

    "torch": (lambda lib: lib, "torch.{}"),
    "Tensor": (lambda lib: lib.Tensor, "Tensor.{}"),
    "F": (lambda lib: lib.nn.functional, "F.{}"),
    "linalg": (lambda lib: lib.linalg, "linalg.{}"),
}


def _implemented(ns):
    get = NAMESPACES[ns][0]
    h_ns, t_ns = get(hookgrad), get(torch)
    for name in sorted(dir(h_ns)):
        if name.startswith("_"):
            continue
        try:
            h = getattr(h_ns, name)
            t = getattr(t_ns, name)
        except Exception:
            continue
        if not callable(h) or not callable(t) or isinstance(h, type) or isinstance(t, type) or inspect.ismodule(h):
            continue
        yield name, h, t


def _hook_params(h, method):
    try:
        sig = inspect.signature(h)
    except (ValueError, TypeError):
        return None
    params = list(sig.parameters.values())
    if method and params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]
    return params


def check_one(ns, name, h, t):
    """The mismatches of one hookgrad callable: a list of (what, detail, source)."""
    method = ns == "Tensor"
    ovs = torch_overloads(ns, name, t)
    if not ovs:
        return []
    params = _hook_params(h, method)
    if params is None:
        return []
    by_name = {p.name: p for p in params}
    h_pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    h_var = next((p for p in params if p.kind == p.VAR_POSITIONAL), None)
    h_varkw = any(p.kind == p.VAR_KEYWORD for p in params)
    out = []
    # keyword names: every name PyTorch accepts by keyword must be a parameter of hookgrad's
    needed = collections.OrderedDict()
    for ov in ovs:
        for n in ov.positional + ov.keyword_only:
            needed.setdefault(n, ov.source)
    for n, src in needed.items():
        if n in SKIP_PARAMS or n == OUT:
            continue
        p = by_name.get(n)
        if keyword.iskeyword(n) and h_varkw:
            continue                       # `from=`: not a Python identifier, taken through **kwargs
        if p is None or p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD):
            out.append(("keyword", f"{n}= not accepted by name" + (" (only via **kwargs)" if h_varkw else ""), src))
    # positional order: position i has PyTorch's name in some overload that has position i
    by_pos = collections.defaultdict(set)
    for ov in ovs:
        if ov.varargs is not None:
            continue
        for i, n in enumerate(ov.positional):
            by_pos[i].add(n)
    for i in sorted(by_pos):
        names = by_pos[i]
        if h_var is not None and i >= len(h_pos):
            continue
        if i >= len(h_pos):
            out.append(("position", f"position {i}: PyTorch has {'/'.join(sorted(names))}, hookgrad has none",
                        ovs[0].source))
        elif h_pos[i].name not in names and h_pos[i].name.rstrip("_") not in names:
            out.append(("position", f"position {i}: PyTorch has {'/'.join(sorted(names))}, hookgrad has "
                        f"{h_pos[i].name}", ovs[0].source))
    return out


def mismatches(namespaces=("torch", "Tensor", "F", "linalg")):
    rows = []
    for ns in namespaces:
        fmt = NAMESPACES[ns][1]
        for name, h, t in _implemented(ns):
            for what, detail, src in check_one(ns, name, h, t):
                rows.append((fmt.format(name), what, detail, src))
    return rows


def table(rows):
    if not rows:
        return "(none)"
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  [{r[3]}]" for r in rows)


if __name__ == "__main__":
    import sys
    rows = mismatches(sys.argv[1:] or ("torch", "Tensor", "F", "linalg"))
    print(table(rows))
    print(len(rows), "mismatches")
