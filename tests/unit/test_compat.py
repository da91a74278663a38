"""The torch alias (hookgrad.compat) and ``python -m hookgrad``.

The alias cannot be installed in this process when PyTorch is imported here (the oracle tests import
it), so each scenario runs in a subprocess; ``python -m hookgrad`` is compared with ``python`` itself.
"""
import json
import os
import subprocess
import sys
import textwrap
import types

import pytest

import hookgrad
from hookgrad import compat

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")]))


def _run(args, cwd=None):
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, env=ENV, cwd=cwd, timeout=120)


# Each check is one line of Python run after install(); the subprocess reports every check's outcome.
CHECKS = {
    "same_modules": "import torch.nn, torch.nn.functional as F, torch.autograd.graph as g, torch.utils.hooks as h;"
                    "ok = F is hookgrad.nn.functional and g is hookgrad.autograd.graph "
                    "and h is hookgrad.utils.hooks and torch.nn is hookgrad.nn",
    "sys_modules_both_names": "import torch.optim; ok = sys.modules['torch.optim'] is sys.modules['hookgrad.optim']",
    "isinstance": "from torch.nn import Linear; ok = isinstance(hookgrad.nn.Linear(2, 2), Linear) and "
                  "isinstance(torch.zeros(1), hookgrad.Tensor) and torch.Tensor is hookgrad.Tensor",
    "every_module_aliased": "import pkgutil, importlib;"
                            "names = [m.name for m in pkgutil.walk_packages(hookgrad.__path__, 'hookgrad.')"
                            " if m.name != 'hookgrad.__main__'];"
                            "ok = len(names) > 30 and all(importlib.import_module('torch' + n[8:]) is "
                            "importlib.import_module(n) for n in names)",
    "own_spec_kept": "import torch.nn.functional as F; ok = F.__spec__.name == 'hookgrad.nn.functional' "
                     "and not hasattr(F, '__path__') and F.__name__ == 'hookgrad.nn.functional'",
    "lazy_submodule": "import importlib; m = importlib.import_module('torch.tools.gradcam');"
                      "ok = m is sys.modules['hookgrad.tools.gradcam'] and sys.modules['torch.tools.gradcam'] is m",
    "no_such_module": "try:\n import torch.no_such_module\n ok = False\n"
                      "except ModuleNotFoundError as e:\n ok = (e.name, str(e)) == "
                      "('torch.no_such_module', \"No module named 'torch.no_such_module'\")",
    "module_torch_has": "try:\n import torch.nn.qat\n ok = False\n"
                        "except ModuleNotFoundError as e:\n ok = e.name == 'torch.nn.qat' and str(e).startswith("
                        "\"No module named 'torch.nn.qat': torch.nn.qat is not implemented in hookgrad\")",
    "top_name_version": "ok = (torch.__name__, torch.__spec__.name, torch.__version__, hookgrad.__version__) == "
                        "('torch', 'torch', hookgrad.version.__version__, '0.1.0') and "
                        "type(torch.__version__).__name__ == 'TorchVersion' and torch.__version__ >= (2, 13) "
                        "and torch.__version__ < '2.14' and torch.__version__.startswith('2.13.0+hookgrad.')",
    "version_module": "import torch.version as v; ok = v is hookgrad.version and (v.cuda, v.hip, v.debug) == "
                      "(None, None, False) and isinstance(v.git_version, str) and v.__version__ == torch.__version__",
    "setattr_reaches_hookgrad": "f = lambda x: x; old = torch.relu; torch.relu = f; ok = hookgrad.relu is f;"
                                "hookgrad.relu = old; ok = ok and torch.relu is old",
    "delattr_reaches_hookgrad": "hookgrad._h_probe = 1; ok = torch._h_probe == 1; del torch._h_probe;"
                                "ok = ok and not hasattr(hookgrad, '_h_probe')",
    "dict_and_dir": "ok = vars(torch) is vars(hookgrad) and {'nn', 'tensor', '__version__'} <= set(dir(torch))",
    "file_and_path": "ok = torch.__file__ == hookgrad.__file__ and list(torch.__path__) == list(hookgrad.__path__)",
    "attribute_error": "ok = not hasattr(torch, 'no_such_name_xyz') and getattr(torch, 'zzz', 7) == 7",
    "from_import": "from torch import nn, tensor; from torch.nn import functional; "
                   "ok = nn is hookgrad.nn and tensor is hookgrad.tensor and functional is hookgrad.nn.functional",
    "idempotent": "ok = compat.install() is torch and sum(type(f).__name__ == '_AliasFinder' "
                  "for f in sys.meta_path) == 1 and compat.is_installed()",
    "pickle_roundtrip": "import pickle; t = torch.arange(3.); ok = torch.equal(pickle.loads(pickle.dumps(t)), t)",
    "never_real_torch": "import torch.nn.functional; "
                        "ok = not any(os.sep + 'site-packages' + os.sep + 'torch' + os.sep in "
                        "(getattr(m, '__file__', None) or '') for m in list(sys.modules.values()))",
    "uninstall_reinstall": "compat.uninstall(); gone = 'torch' not in sys.modules and not any(k.startswith('torch.') "
                           "for k in sys.modules) and not compat.is_installed();"
                           "t2 = compat.install(); import torch.nn; ok = gone and t2 is torch and "
                           "sys.modules['torch.nn'] is hookgrad.nn",
}

PROGRAM = """
import json, os, sys, traceback
import hookgrad, hookgrad.version
from hookgrad import compat
torch = compat.install()
import torch
out = {}
for name, code in json.loads(sys.argv[1]).items():
    scope = dict(globals())
    try:
        exec(code, scope)
        out[name] = bool(scope['ok'])
    except BaseException:
        out[name] = traceback.format_exc()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def alias_results():
    proc = _run(["-c", PROGRAM, json.dumps(CHECKS)])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("check", list(CHECKS))
def test_alias(alias_results, check):
    assert alias_results[check] is True, alias_results[check]


def test_install_refuses_when_real_torch_is_imported(monkeypatch):
    fake = types.ModuleType("torch")
    fake.__file__ = "/somewhere/site-packages/torch/__init__.py"
    monkeypatch.setitem(sys.modules, "torch", fake)
    meta = list(sys.meta_path)
    with pytest.raises(ImportError, match=r"real PyTorch is already imported.*site-packages/torch") as info:
        compat.install()
    assert isinstance(info.value, RuntimeError)
    assert sys.modules["torch"] is fake and sys.meta_path == meta and not compat.is_installed()


def test_versions_agree():
    import re
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        project = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert hookgrad.__version__ == hookgrad.version.hookgrad == project
    assert hookgrad.version.__version__ == f"{hookgrad.version.mirrors}+hookgrad.{hookgrad.__version__}"


# ------------------------------------------------------------------ python -m hookgrad, compared with python
SCRIPT = """
import os, sys
print(repr(__name__), repr(sys.argv), sys.path[0] == os.path.dirname(os.path.abspath(__file__)),
      os.path.abspath(__file__) == __file__, __spec__, __package__, __doc__)
import pickle
class Point: pass
print(type(pickle.loads(pickle.dumps(Point()))).__name__)      # classes of __main__ pickle by name
if "--fail" in sys.argv:
    def inner():
        raise ValueError("boom")
    inner()
sys.exit(int(sys.argv[1]) if sys.argv[1].isdigit() else 0)
"""


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    d = tmp_path_factory.mktemp("prog")
    (d / "sub").mkdir()
    (d / "sub" / "prog.py").write_text(SCRIPT)
    (d / "pkg").mkdir()
    (d / "pkg" / "__init__.py").write_text("")
    (d / "pkg" / "__main__.py").write_text("from . import mod\n")
    (d / "pkg" / "mod.py").write_text(
        "import sys\nprint(__name__, __package__, __file__, sys.argv, sys.path[0])\nsys.exit(sys.argv[-1])\n")
    return d


@pytest.mark.parametrize("args", [["3", "a b"], ["x", "--fail"]])
def test_script_runs_as_python_runs_it(scripts, args):
    plain = _run([os.path.join("sub", "prog.py")] + args, cwd=scripts)
    ours = _run(["-m", "hookgrad", os.path.join("sub", "prog.py")] + args, cwd=scripts)
    assert (ours.returncode, ours.stdout, ours.stderr) == (plain.returncode, plain.stdout, plain.stderr)


@pytest.mark.parametrize("target", ["pkg", "pkg.nothing"])
def test_module_runs_as_python_m_runs_it(scripts, target):
    plain = _run(["-m", target, "a", "7"], cwd=scripts)
    ours = _run(["-m", "hookgrad", "-m", target, "a", "7"], cwd=scripts)
    assert ours.returncode == plain.returncode and ours.stdout == plain.stdout
    assert ours.stderr.replace(sys.executable, "PY") == plain.stderr.replace(sys.executable, "PY")


def test_command_and_usage():
    code = "import sys, torch; print(sys.argv, torch.__name__, torch.nn.Linear.__module__); 1/0"
    plain = _run(["-c", code.replace("torch, ", "").replace(", torch.__name__, torch.nn.Linear.__module__", ""),
                  "x"])
    ours = _run(["-m", "hookgrad", "-c", code, "x"])
    assert ours.stdout == "['-c', 'x'] torch hookgrad.nn.modules.linear\n"
    assert ours.returncode == plain.returncode == 1
    assert ours.stderr.splitlines()[-1] == plain.stderr.splitlines()[-1] == "ZeroDivisionError: division by zero"
    assert "hookgrad/__main__.py" not in ours.stderr
    usage = _run(["-m", "hookgrad"])
    assert usage.returncode == 2 and "python -m hookgrad script.py" in usage.stderr
    missing = _run(["-m", "hookgrad", "no_such_file.py"])
    assert missing.returncode == 2 and "can't open file" in missing.stderr


def test_spawned_children_get_the_alias(tmp_path):
    (tmp_path / "spawner.py").write_text(textwrap.dedent("""
        import multiprocessing as mp
        import torch

        def child(_):
            import sys, torch
            return torch.__version__, type(torch.ones(1)).__module__, "torch._C._VariableFunctions" in sys.modules

        if __name__ == "__main__":
            with mp.get_context("spawn").Pool(1) as pool:
                print(pool.map(child, [0]))
    """))
    ours = _run(["-m", "hookgrad", str(tmp_path / "spawner.py")])
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.strip() == f"[({hookgrad.version.__version__!r}, 'hookgrad._tensor', False)]"
