"""Every tool's docs page has a twin on PyTorch: its ```python torch blocks run the page's example on a
torch model holding the same weights and assert that the results equal those on hookgrad (captured
tensors, gradients, Grad-CAM maps, op and node counts, the registry's rows, why's findings).

The page's hookgrad blocks (```python, also run by tests/unit/test_docs.py) run first, then its torch
blocks, in one namespace, so a torch block can compare against what the hookgrad blocks computed.
"""
import os
import re
import warnings

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs", "tools")
PAGES = sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))
TWINS = [f for f in PAGES if "```python torch\n" in open(os.path.join(DOCS, f), encoding="utf-8").read()]
# capture.md belongs to the capture tool's own work (its torch twin lives with it)
EXPECTED = {"gradcam.md", "gradmon.md", "intervene.md", "modifiers.md", "nan.md", "ophooks.md", "registry.md",
            "trace.md", "why.md"}


def test_every_tool_page_has_a_torch_twin():
    assert EXPECTED <= set(TWINS), sorted(EXPECTED - set(TWINS))


@pytest.mark.parametrize("page", TWINS)
def test_torch_twin_runs_and_agrees(page, tmp_path, monkeypatch):
    text = open(os.path.join(DOCS, page), encoding="utf-8").read()
    blocks = re.findall(r"```python( torch)?\n(.*?)```", text, re.S)
    hookgrad_blocks = [code for tag, code in blocks if not tag]
    torch_blocks = [code for tag, code in blocks if tag]
    assert torch_blocks
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__docs__"}
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, code in enumerate(hookgrad_blocks):
            exec(compile(code, f"{page}[block {i}]", "exec"), ns)
    for i, code in enumerate(torch_blocks):
        exec(compile(code, f"{page}[torch block {i}]", "exec"), ns)
