"""Runs one package's typical script (cases/<package>.py) and writes what it computed.

    python runner.py PACKAGE torch DIR      # under PyTorch: builds the models, saves their weights to DIR
    python -m hookgrad runner.py PACKAGE hookgrad DIR   # under hookgrad: loads those weights

A case module has ``run(torch, rec, weights)``: it builds its models, calls ``weights(name, model)`` (which
saves the state_dict under PyTorch and loads it under hookgrad, so both run on the same numbers whatever the
initialisation), computes, and records results with ``rec(name, value)``: tensors, numbers, strings, shapes,
nested lists. The results go to DIR/PACKAGE.MODE.pkl as plain Python and NumPy values.
"""
import importlib
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def plain(value):
    """A recorded value as plain Python / NumPy (no torch or hookgrad objects)."""
    if hasattr(value, "detach") and hasattr(value, "dtype"):
        t = value.detach()
        if "bfloat16" in str(t.dtype) or "float16" in str(t.dtype):
            t = t.float()
        return ("tensor", str(t.dtype).replace("torch.", ""), t.cpu().numpy().copy())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if type(value).__name__ == "Size":
        return tuple(value)
    if isinstance(value, (int, float, str, bool, type(None))):
        return value
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    return repr(value)


def main(package, mode, folder):
    sys.path.insert(0, os.path.join(HERE, "cases"))
    import torch
    torch.manual_seed(0)
    results = {}

    def rec(name, value):
        results[name] = plain(value)

    def weights(name, model):
        path = os.path.join(folder, f"{package}.{name}.pt")
        if mode == "torch":
            torch.save(model.state_dict(), path)
        else:
            model.load_state_dict(torch.load(path))
        return model

    case = importlib.import_module(package.replace("-", "_") + "_case")
    case.run(torch, rec, weights)
    with open(os.path.join(folder, f"{package}.{mode}.pkl"), "wb") as f:
        pickle.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
