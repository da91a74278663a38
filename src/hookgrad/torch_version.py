"""``torch.torch_version``: TorchVersion, the str that compares with versions, strings and tuples.

As PyTorch's: ``TorchVersion("2.13.0+cpu") >= (2, 1)``, ``>= "2.0"`` and ``>= Version("2.0")`` compare
PEP 440 versions; an unparsable operand falls back to plain string comparison. The PEP 440 ordering is
written here (PyTorch vendors the ``packaging`` library; hookgrad depends on NumPy alone).
"""
import re
from collections.abc import Iterable

from .version import __version__ as internal_version

__all__ = ["TorchVersion"]

_PATTERN = re.compile(r"""
    ^\s*v?(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)
    (?P<pre>[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?P<post>(?:-(?P<post_n1>[0-9]+))|(?:[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?))?
    (?P<dev>[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$""", re.VERBOSE | re.IGNORECASE)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version (packaging.version.InvalidVersion)."""


class Version:
    """A PEP 440 version ordered as packaging.version.Version orders it (the parts TorchVersion needs)."""

    __slots__ = ("_text", "_key")

    def __init__(self, version):
        m = _PATTERN.match(version)
        if m is None:
            raise InvalidVersion(f"Invalid version: {version!r}")
        self._text = version.strip()
        release = tuple(int(p) for p in m["release"].split("."))
        while len(release) > 1 and release[-1] == 0:          # 1.0.0 == 1.0 == 1
            release = release[:-1]
        pre = (1, _PRE_RANK[m["pre_l"].lower()], int(m["pre_n"] or 0)) if m["pre_l"] else None
        has_post = m["post_n1"] is not None or m["post_l"] is not None
        post = (1, int(m["post_n1"] or m["post_n2"] or 0)) if has_post else (0,)
        dev = (1, int(m["dev_n"] or 0)) if m["dev_l"] else (2,)
        if pre is None:                      # a dev release sorts before its pre-releases, a final after them
            pre = (0,) if (m["dev_l"] and not has_post) else (2,)
        local = (0,) if m["local"] is None else (1, tuple(
            (1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in re.split(r"[-_.]", m["local"])))
        self._key = (int(m["epoch"] or 0), release, pre, post, dev, local)

    def __repr__(self):
        return f"<Version('{self._text}')>"

    def __str__(self):
        return self._text

    def __hash__(self):
        return hash(self._key)

    def _cmp(self, other, op):
        if not isinstance(other, Version):
            return NotImplemented
        return op(self._key, other._key)

    def __lt__(self, other): return self._cmp(other, tuple.__lt__)
    def __le__(self, other): return self._cmp(other, tuple.__le__)
    def __eq__(self, other): return self._cmp(other, tuple.__eq__)
    def __ne__(self, other): return self._cmp(other, tuple.__ne__)
    def __gt__(self, other): return self._cmp(other, tuple.__gt__)
    def __ge__(self, other): return self._cmp(other, tuple.__ge__)


class TorchVersion(str):
    """A string with magic powers to compare to both Version and iterables (PyTorch's TorchVersion)."""

    __slots__ = ()

    def _convert_to_version(self, inp):
        if isinstance(inp, Version):
            return inp
        if isinstance(inp, str):
            return Version(inp)
        if isinstance(inp, Iterable):
            return Version(".".join(str(item) for item in inp))
        raise InvalidVersion(inp)

    def _cmp_wrapper(self, cmp, method):
        try:
            return getattr(Version(self), method)(self._convert_to_version(cmp))
        except BaseException as e:
            if not isinstance(e, InvalidVersion):
                raise
            return getattr(super(), method)(cmp)      # an invalid version like 'parrot': compare as strings


# set after the class is made, as PyTorch does, so that str's __hash__ stays
for _method in ("__gt__", "__lt__", "__eq__", "__ge__", "__le__"):
    setattr(TorchVersion, _method, lambda x, y, method=_method: x._cmp_wrapper(y, method))
del _method

__version__ = TorchVersion(internal_version)
