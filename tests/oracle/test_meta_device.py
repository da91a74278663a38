"""The meta device (tensors with a shape and dtype but no data) behaves as PyTorch's: what transformers and
accelerate build models on before they load or allocate the weights."""
import pytest
import torch

import hookgrad


def _both(fn):
    """fn(lib) under torch and hookgrad: (result or (exception type, message)) for each."""
    out = []
    for lib in (torch, hookgrad):
        try:
            out.append(fn(lib))
        except Exception as e:      # noqa: BLE001 - the exception is what is compared
            out.append((type(e).__name__, str(e)))
    return out


CASES = {
    "repr": lambda t: repr(t.empty(2, 3, device="meta")),
    "repr_int": lambda t: repr(t.ones(2, dtype=t.int64, device="meta")),
    "repr_param": lambda t: repr(t.nn.Parameter(t.empty(2, device="meta"))),
    "device": lambda t: (str(t.zeros(2, device="meta").device), t.zeros(2, device="meta").is_meta,
                         t.zeros(2).is_meta),
    "item": lambda t: t.empty(1, device="meta").item(),
    "tolist": lambda t: t.empty(2, device="meta").tolist(),
    "numpy": lambda t: t.empty(2, device="meta").numpy(),
    "cpu": lambda t: t.empty(2, device="meta").cpu(),
    "to_cpu": lambda t: t.empty(2, device="meta").to("cpu"),
    "float": lambda t: float(t.empty((), device="meta")),
    "ops": lambda t: [(tuple(r.shape), str(r.dtype), str(r.device)) for r in (
        t.empty(2, 3, device="meta") @ t.empty(3, 4, device="meta"),
        t.empty(2, 3, device="meta").sum(1), t.empty(2, 3, device="meta").exp() * 2,
        t.cat([t.empty(2, device="meta"), t.empty(3, device="meta")]),
        t.empty(4, device="meta", dtype=t.int64).float(), t.arange(5, device="meta").view(1, 5).expand(3, 5),
        t.nn.functional.softmax(t.empty(2, 5, device="meta"), -1), t.empty(2, 3, device="meta")[:, 1:])],
    "to_meta": lambda t: [str(p.device) for p in t.nn.Linear(3, 2).to("meta").parameters()],
    "empty_like_cpu": lambda t: (str(t.empty_like(t.empty(2, 3, device="meta"), device="cpu").device),
                                 tuple(t.empty_like(t.empty(2, 3, device="meta"), device="cpu").shape)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_meta_device_as_pytorch(case):
    want, got = _both(CASES[case])
    assert got == want


def _built_on_meta(lib):
    lib.manual_seed(0)
    with lib.device("meta"):
        model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.LayerNorm(8), lib.nn.Linear(8, 2))
        made = lib.arange(3)
    devices = sorted({str(p.device) for p in model.parameters()}) + [str(made.device)]
    default_after = str(lib.get_default_device())
    return model, devices, default_after


def test_a_model_built_on_meta_then_loaded_and_materialised():
    ours, theirs = _built_on_meta(hookgrad), _built_on_meta(torch)
    assert ours[1:] == theirs[1:] == (["meta", "meta"], "cpu")
    torch.manual_seed(1)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2))
    sd = ref.state_dict()
    theirs[0].load_state_dict(sd, assign=True)
    ours[0].load_state_dict({k: hookgrad.tensor(v.numpy()) for k, v in sd.items()}, assign=True)
    x = torch.randn(3, 4)
    assert torch.allclose(torch.from_numpy(ours[0](hookgrad.tensor(x.numpy())).detach().numpy()),
                          theirs[0](x).detach(), atol=1e-6)
    # to_empty: the meta model gets (uninitialised) CPU storage of the right shapes
    for lib, (model, _, _) in ((torch, _built_on_meta(torch)), (hookgrad, _built_on_meta(hookgrad))):
        model.to_empty(device="cpu")
        assert [(str(p.device), tuple(p.shape)) for p in model.parameters()] == [
            ("cpu", (8, 4)), ("cpu", (8,)), ("cpu", (8,)), ("cpu", (8,)), ("cpu", (2, 8)), ("cpu", (2,))]
