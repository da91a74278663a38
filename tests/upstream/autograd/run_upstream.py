"""Run PyTorch's own test/test_autograd.py, unmodified, under torch or under hookgrad.

    python run_upstream.py --lib torch|hookgrad [--only names.txt] [--out results.json] [--timeout 30]

The upstream file (upstream_test_autograd.py here; see README.md) imports torch.testing._internal: both runs get
the stand-in of _internal/ under that name, and empty stubs for the test/autograd/ package (_stubs/). Under
hookgrad, ``import torch`` means hookgrad through ``hookgrad.compat.install(lazy=True)``: torch names hookgrad
lacks fail where a test uses them, not at import. Each test runs once, in file order, with a per-test time limit
(SIGALRM); the result of each (``pass``, ``fail``, ``error``, ``skip``, ``timeout``) goes to --out as JSON, with a
one-line reason for the others and the seconds it took. Exit status 0 unless the file itself could not be loaded.
"""
import argparse
import importlib.util
import json
import os
import signal
import sys
import time
import traceback
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
UPSTREAM = os.path.join(HERE, "upstream_test_autograd.py")
EXPECT = os.path.join(HERE, "expect.json")
_SUBMODULES = ("common_utils", "common_device_type", "common_cuda", "common_dtype", "common_methods_invocations")


class TestTimeout(BaseException):
    """Raised by SIGALRM in a test that runs past the limit (BaseException: tests' ``except Exception`` pass it)."""


def _install_standin():
    """Load _internal/ as ``torch.testing._internal`` (and the stubs' ``autograd`` package on sys.path)."""
    sys.path.insert(0, os.path.join(HERE, "_stubs"))
    pkg_spec = importlib.util.spec_from_file_location(
        "torch.testing._internal", os.path.join(HERE, "_internal", "__init__.py"),
        submodule_search_locations=[os.path.join(HERE, "_internal")])
    pkg = importlib.util.module_from_spec(pkg_spec)
    sys.modules["torch.testing._internal"] = pkg
    pkg_spec.loader.exec_module(pkg)
    for name in _SUBMODULES:
        full = f"torch.testing._internal.{name}"
        spec = importlib.util.spec_from_file_location(full, os.path.join(HERE, "_internal", f"{name}.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[full] = mod
        spec.loader.exec_module(mod)
        setattr(pkg, name, mod)
    return sys.modules["torch.testing._internal.common_utils"]


def _load_upstream():
    spec = importlib.util.spec_from_file_location("test_autograd", UPSTREAM)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["test_autograd"] = mod
    spec.loader.exec_module(mod)
    return mod


def _tests(module):
    suite = unittest.TestLoader().loadTestsFromModule(module)
    out = []

    def walk(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                walk(t)
            else:
                out.append(t)
    walk(suite)
    return out


def _name(test):
    return f"{type(test).__name__}.{test._testMethodName}"


class _Result(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.status, self.reason = "pass", ""

    def _set(self, status, err):
        if self.status == "pass":
            self.status = status
            exc = err[1]
            self.reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]

    def addError(self, test, err):
        self._set("timeout" if issubclass(err[0], TestTimeout) else "error", err)

    def addFailure(self, test, err):
        self._set("fail", err)

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._set("fail" if issubclass(err[0], test.failureException) else "error", err)

    def addSkip(self, test, reason):
        self.status, self.reason = "skip", str(reason)[:300]

    def addExpectedFailure(self, test, err):
        pass                                           # the test passes as upstream expects it to

    def addUnexpectedSuccess(self, test):
        self.status, self.reason = "fail", "unexpected success"


def _reset(torch):
    """Global state a failing test may leave behind."""
    for fix in (lambda: torch.set_grad_enabled(True), lambda: torch.autograd.set_detect_anomaly(False),
                lambda: torch.set_warn_always(False)):
        try:
            fix()
        except Exception:
            pass
    try:
        fwad = sys.modules.get("torch.autograd.forward_ad")
        while fwad is not None and fwad._current_level >= 0:
            fwad.exit_dual_level()
    except Exception:
        pass


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--lib", choices=("torch", "hookgrad"), required=True)
    p.add_argument("--only", help="file with one test name (Class.test) a line: run only those")
    p.add_argument("--out", help="JSON file for {test: [status, reason]}")
    p.add_argument("--pass-list", help="write the names of the passing tests to this file, one a line")
    p.add_argument("--timeout", type=int, default=30, help="seconds per test")
    p.add_argument("--record-expected", action="store_true", help="write assertExpected values to expect.json")
    args = p.parse_args(argv)

    os.environ["HG_UPSTREAM_LIB"] = args.lib
    if args.lib == "hookgrad":
        import hookgrad.compat
        hookgrad.compat.install(lazy=True)
    import torch
    if args.lib == "torch":
        torch.set_num_threads(1)
    cu = _install_standin()
    if args.record_expected:
        cu.TestCase._record_expected = {}
    elif os.path.exists(EXPECT):
        with open(EXPECT) as f:
            cu.TestCase._expected = json.load(f)

    module = _load_upstream()
    tests = _tests(module)
    if args.only:
        with open(args.only) as f:
            wanted = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        tests = [t for t in tests if _name(t) in wanted]

    def on_alarm(signum, frame):
        raise TestTimeout(f"over {args.timeout} s")
    signal.signal(signal.SIGALRM, on_alarm)

    results = {}
    start = time.time()
    for test in tests:
        t0 = time.time()
        result = _Result()
        with warnings.catch_warnings():
            signal.alarm(args.timeout)
            try:
                test.run(result)
            except TestTimeout as e:                 # raised outside the test method (setUp/tearDown)
                result.status, result.reason = "timeout", str(e)
            finally:
                signal.alarm(0)
        _reset(torch)
        results[_name(test)] = [result.status, result.reason, round(time.time() - t0, 2)]
    counts = {}
    for status, *_ in results.values():
        counts[status] = counts.get(status, 0) + 1
    print(f"{args.lib}: {len(results)} tests in {time.time() - start:.1f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=0, sort_keys=True)
    if args.pass_list:
        with open(args.pass_list, "w") as f:
            f.write(f"# tests of upstream_test_autograd.py that pass under {args.lib} (run_upstream.py --pass-list)\n")
            f.writelines(f"{name}\n" for name, (status, *_) in results.items() if status == "pass")
    if args.record_expected:
        with open(EXPECT, "w") as f:
            json.dump(cu.TestCase._record_expected, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception:
        traceback.print_exc()
        code = 2
    sys.stdout.flush()
    os._exit(code)             # worker threads some tests leave behind must not hold the process
