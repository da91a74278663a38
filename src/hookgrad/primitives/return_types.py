"""torch.return_types: named tuples returned by max(dim), sort, topk, ... (``values``, ``indices``)."""

__all__ = ["max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "frexp", "cummax", "cummin", "aminmax", "histogram"]


class _StructSeq(tuple):
    """A tuple with named fields that prints like PyTorch's structseq."""
    _fields = ("values", "indices")

    def __new__(cls, *items):
        if len(items) == 1 and isinstance(items[0], (tuple, list)):
            items = tuple(items[0])
        return tuple.__new__(cls, items)

    def __getattr__(self, name):
        try:
            return self[type(self)._fields.index(name)]
        except ValueError:
            raise AttributeError(f"'torch.return_types.{type(self).__name__}' object has no attribute '{name}'") \
                from None

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{type(self).__name__}(\n{body})"

    def __reduce__(self):
        return (type(self), (tuple(self),))


def _make(name, fields=("values", "indices")):
    return type(name, (_StructSeq,), {"_fields": fields, "__module__": __name__, "__qualname__": name})


max = _make("max")
min = _make("min")
sort = _make("sort")
topk = _make("topk")
kthvalue = _make("kthvalue")
median = _make("median")
nanmedian = _make("nanmedian")
frexp = _make("frexp", ("mantissa", "exponent"))
mode = _make("mode")
cummax = _make("cummax")
cummin = _make("cummin")
aminmax = _make("aminmax", ("min", "max"))
histogram = _make("histogram", ("hist", "bin_edges"))

# torch.linalg's and the legacy linear-algebra functions' named tuples
linalg_inv_ex = _make("linalg_inv_ex", ("inverse", "info"))
linalg_slogdet = _make("linalg_slogdet", ("sign", "logabsdet"))
linalg_solve_ex = _make("linalg_solve_ex", ("result", "info"))
linalg_cholesky_ex = _make("linalg_cholesky_ex", ("L", "info"))
linalg_lu_factor = _make("linalg_lu_factor", ("LU", "pivots"))
linalg_lu_factor_ex = _make("linalg_lu_factor_ex", ("LU", "pivots", "info"))
linalg_lu = _make("linalg_lu", ("P", "L", "U"))
linalg_lstsq = _make("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
linalg_svd = _make("linalg_svd", ("U", "S", "Vh"))
linalg_eigh = _make("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_eig = _make("linalg_eig", ("eigenvalues", "eigenvectors"))
linalg_qr = _make("linalg_qr", ("Q", "R"))
linalg_ldl_factor = _make("linalg_ldl_factor", ("LD", "pivots"))
linalg_ldl_factor_ex = _make("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
svd = _make("svd", ("U", "S", "V"))
qr = _make("qr", ("Q", "R"))
slogdet = _make("slogdet", ("sign", "logabsdet"))
triangular_solve = _make("triangular_solve", ("solution", "cloned_coefficient"))
geqrf = _make("geqrf", ("a", "tau"))
lu_unpack = _make("lu_unpack", ("P", "L", "U"))
_lu_with_info = _make("_lu_with_info", ("LU", "pivots", "info"))
__all__ += ["linalg_inv_ex", "linalg_slogdet", "linalg_solve_ex", "linalg_cholesky_ex", "linalg_lu_factor",
            "linalg_lu_factor_ex", "linalg_lu", "linalg_lstsq", "linalg_svd", "linalg_eigh", "linalg_eig",
            "linalg_qr", "linalg_ldl_factor", "linalg_ldl_factor_ex", "svd", "qr", "slogdet", "triangular_solve",
            "geqrf", "lu_unpack"]
