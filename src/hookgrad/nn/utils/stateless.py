"""torch.nn.utils.stateless: call a module with some of its parameters and buffers replaced for the call."""
import contextlib
import warnings

__all__ = ["functional_call"]


def _untie_named_tensors_map(module, parameters_and_buffers):
    """The given values, extended to every other name of a tied tensor (``foo`` and ``tied_foo`` both get the
    value given for either); ValueError if two names of one tensor get different values."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    by_tensor = {}
    for name, t in named.items():
        by_tensor.setdefault(id(t), set()).add(name)
    tied = {n: names for names in by_tensor.values() if len(names) > 1 for n in names}
    given = [n for n in parameters_and_buffers if n in tied]
    for name in given:
        names = tied[name]
        if (len(names.intersection(given)) > 1
                and len({id(parameters_and_buffers[n]) for n in names if n in parameters_and_buffers}) != 1):
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given:
        for other in tied[name]:
            untied[other] = parameters_and_buffers[name]
    return untied


def _swap(module, name, value):
    """Put ``value`` at the dotted ``name`` (a parameter, a buffer or an attribute) and return what was there;
    a name that does not exist is created (and removed again when swapped back with the marker _ABSENT)."""
    *path, attr = name.split(".")
    for p in path:
        module = getattr(module, p)
    for store in (module._parameters, module._buffers):
        if attr in store:
            old = store[attr]
            if value is _ABSENT:
                del store[attr]
            else:
                store[attr] = value
            return old
    old = getattr(module, attr, _ABSENT)
    if value is _ABSENT:
        delattr(module, attr)
    else:
        setattr(module, attr, value)
    return old


_ABSENT = object()


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    values = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        keys = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        keys |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        unexpected = sorted(set(values) - keys)
        missing = sorted(keys - set(values))
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                "\n\t".join(msgs)))
    originals = []
    try:
        for name, value in values.items():
            originals.append((name, _swap(module, name, value)))
        yield
    finally:
        for name, old in reversed(originals):
            _swap(module, name, old)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the parameters and buffers named in ``parameters_and_buffers`` replaced for the duration of the call (deprecated in PyTorch in
    favour of ``torch.func.functional_call``)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **(kwargs or {}))
