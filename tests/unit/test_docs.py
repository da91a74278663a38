"""Every ```python block of the docs pages runs (blocks of one page share a namespace, in order)."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(ROOT, "docs", "tools"))
               for f in fs if f.endswith(".md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_docs_page_examples_run(page, tmp_path, monkeypatch):
    text = open(page, encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, f"{page} has no runnable example"
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{os.path.basename(page)}[block {i}]", "exec"), ns)
