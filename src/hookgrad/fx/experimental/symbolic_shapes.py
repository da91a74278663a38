"""torch.fx.experimental.symbolic_shapes: hookgrad has no symbolic sizes (every size is an int), so the guards
that PyTorch evaluates on symbols answer the plain value here."""

__all__ = ["guard_or_false", "guard_or_true", "statically_known_true", "definitely_true", "definitely_false",
           "guard_size_oblivious", "free_symbols", "free_unbacked_symbols", "is_concrete_int", "is_concrete_bool",
           "has_free_symbols", "sym_eq", "GuardOnDataDependentSymNode", "ShapeEnv"]


class GuardOnDataDependentSymNode(RuntimeError):
    """Raised by PyTorch when a guard needs a data-dependent symbol (never, without symbols)."""


class ShapeEnv:
    """The environment of symbolic sizes (empty: hookgrad has none)."""


def guard_or_false(a):
    return bool(a)


def guard_or_true(a):
    return bool(a)


def statically_known_true(x):
    return bool(x)


def definitely_true(a):
    return bool(a)


def definitely_false(a):
    return not bool(a)


def guard_size_oblivious(expr):
    return bool(expr)


def free_symbols(val):
    return set()


def free_unbacked_symbols(x):
    return set()


def has_free_symbols(val):
    return False


def is_concrete_int(a):
    return isinstance(a, int)


def is_concrete_bool(a):
    return isinstance(a, bool)


def sym_eq(x, y):
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        return len(x) == len(y) and all(sym_eq(a, b) for a, b in zip(x, y))
    return x == y
