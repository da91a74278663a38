"""The torch names that the ecosystem packages use when they load, and how many of them hookgrad has.

"At load time" means what runs on ``import package``: every module's top-level statements, class bodies,
decorators and default values, but not function bodies and not ``if TYPE_CHECKING:`` blocks. The names are
read from the installed packages' source (``ast``, nothing is imported from them): ``import torch.x``,
``from torch.x import y``, and attribute chains ``torch.a.b`` on any alias of a torch module. A name counts
when it exists in PyTorch 2.13 (some packages guard names of other releases); hookgrad has it when the same
path resolves under hookgrad.

    .venv/bin/python scripts/package_names.py          # print the table
scripts/coverage.py renders the same table into docs/coverage.md.
"""
import ast
import importlib
import importlib.metadata
import os
import sys

# the packages of issue 22, as pip names them
PACKAGES = ["transformers", "torchvision", "timm", "torchmetrics", "kornia", "pytorch-lightning", "accelerate",
            "peft", "torch-geometric", "einops"]


class _LoadTime(ast.NodeVisitor):
    """Collects full torch names used by one module's load-time code."""

    def __init__(self):
        self.alias = {}            # local name -> "torch.x.y"
        self.names = set()

    def visit_FunctionDef(self, node):
        for d in node.decorator_list:
            self.visit(d)
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)
    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        pass

    def visit_If(self, node):
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for stmt in node.orelse:
                self.visit(stmt)
            return
        self.generic_visit(node)

    def visit_Import(self, node):
        for a in node.names:
            if a.name == "torch" or a.name.startswith("torch."):
                self.names.add(a.name)
                if a.asname:
                    self.alias[a.asname] = a.name
                else:
                    self.alias["torch"] = "torch"

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level == 0 and (mod == "torch" or mod.startswith("torch.")):
            for a in node.names:
                if a.name == "*":
                    continue
                full = f"{mod}.{a.name}"
                self.names.add(full)
                self.alias[a.asname or a.name] = full

    def visit_Attribute(self, node):
        parts = []
        cur = node
        while isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name) and cur.id in self.alias:
            self.names.add(".".join([self.alias[cur.id]] + parts[::-1]))
            return
        self.generic_visit(node)


def _files(dist):
    for f in dist.files or ():
        p = str(f)
        if p.endswith(".py") and "/tests/" not in p and not p.startswith("tests/"):
            yield dist.locate_file(f)


def package_names(pip_name):
    """The torch names the package's modules use at load time (a sorted list), or None if not installed."""
    try:
        dist = importlib.metadata.distribution(pip_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    names = set()
    for path in _files(dist):
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        v = _LoadTime()
        v.visit(tree)
        names |= v.names
    return sorted(names)


def resolve(root, name):
    """True if ``name`` ("torch.a.b") resolves under ``root`` ("torch" or "hookgrad"): attributes, else modules."""
    parts = name.split(".")[1:]
    try:
        obj = importlib.import_module(root)
    except ImportError:
        return False
    path = root
    for p in parts:
        path = f"{path}.{p}"
        try:
            obj = getattr(obj, p)
            continue
        except Exception:
            pass
        try:
            obj = importlib.import_module(path)
        except Exception:
            return False
    return True


def measure():
    """[(package, version, torch names used at load, [missing in hookgrad])], packages not installed left out."""
    rows = []
    for pkg in PACKAGES:
        names = package_names(pkg)
        if names is None:
            continue
        # the longest chains only where a shorter one already fails in torch (attributes of results, typos)
        real = [n for n in names if resolve("torch", n)]
        missing = [n for n in real if not resolve("hookgrad", n)]
        rows.append((pkg, importlib.metadata.version(pkg), real, missing))
    return rows


def render(rows):
    lines = ["| package | version | torch names used at load time | hookgrad has | missing |",
             "|---|---|---|---|---|"]
    for pkg, version, real, missing in rows:
        shown = ", ".join(f"`{m}`" for m in missing[:12]) + (f" and {len(missing) - 12} more" if len(missing) > 12
                                                              else "")
        lines.append(f"| {pkg} | {version} | {len(real)} | {len(real) - len(missing)} | {shown or '—'} |")
    allnames = sorted({n for r in rows for n in r[2]})
    allmissing = sorted({n for r in rows for n in r[3]})
    lines.append(f"| all of them | | {len(allnames)} distinct | {len(allnames) - len(allmissing)} | "
                 f"{len(allmissing)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    print(render(measure()))
