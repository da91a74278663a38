"""torch.fx._compatibility: the ``@compatibility(is_backward_compatible=...)`` marker (it only tags the object)."""

_BACK_COMPAT_OBJECTS = {}
_MARKED_WITH_COMPATIBILITY = {}


def compatibility(is_backward_compatible):
    def mark(fn):
        (_BACK_COMPAT_OBJECTS if is_backward_compatible else _MARKED_WITH_COMPATIBILITY).setdefault(fn)
        if not is_backward_compatible and fn.__doc__ is not None and "experimental" not in fn.__doc__:
            fn.__doc__ += "\n\n    .. warning::\n        This API is experimental and is *NOT* backward-compatible.\n"
        return fn
    return mark
