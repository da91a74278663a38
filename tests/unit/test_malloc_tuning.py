"""hookgrad raises glibc's malloc thresholds at import (docs/differences.md); the opt-out works."""
import os
import platform
import subprocess
import sys

import pytest

glibc = platform.libc_ver()[0] == "glibc"
PROBE = "import hookgrad._malloc as m, hookgrad; print(m.tuned)"


def _run(env_value):
    env = dict(os.environ)
    env.pop("HOOKGRAD_MALLOC_TUNING", None)
    if env_value is not None:
        env["HOOKGRAD_MALLOC_TUNING"] = env_value
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif(not glibc, reason="glibc only")
def test_tuned_at_import_and_opt_out():
    assert _run(None) == "True"
    assert _run("0") == "False"


def test_not_glibc_is_a_no_op(monkeypatch):
    import hookgrad._malloc as m
    monkeypatch.setattr(m, "tuned", False)
    monkeypatch.setattr(m.platform, "libc_ver", lambda: ("", ""))
    assert m.tune() is False
