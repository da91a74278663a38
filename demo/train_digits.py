"""The main job (`make demo`): what the seed documents teach, on a real task.

Trains a small CNN on the handwritten digits shipped with scikit-learn (8x8 images, no download)
while hooks
  * monitor every layer's gradient norm at each step (post-accumulate-grad hooks on parameters),
  * clip gradients element-wise (tensor hooks returning a new gradient),
  * capture features (a forward hook on the last convolution block),
then computes Grad-CAM maps for test digits (forward hook for the activations, tensor hook for their
gradient), prints the test accuracy and writes an HTML report with PNG plots.

Only hookgrad's public, PyTorch-compatible API is used: replace the import by ``import torch`` and it
runs under PyTorch.
"""
import argparse
import html
import os
import sys
import time

import numpy as np

import hookgrad as torch
import hookgrad.nn as nn
import hookgrad.nn.functional as F


def progress(it, total, prefix, width=30, stream=None):
    """A dependency-free progress bar (on sys.stdout as it is when the loop starts)."""
    stream = sys.stdout if stream is None else stream
    start = time.perf_counter()
    live = stream.isatty()
    i = 0
    for i, x in enumerate(it, 1):
        yield x
        if live or i == total:
            done = int(width * i / total)
            el = time.perf_counter() - start
            stream.write(f"\r{prefix} [{'#' * done}{'.' * (width - done)}] {i}/{total} {el:5.1f}s")
            stream.flush()
    stream.write("\n")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))          # Grad-CAM target: the last convolution block
        x = self.pool(x).flatten(1)
        return self.fc2(F.relu(self.fc1(x)))


def load_digits_data(seed=0):
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]     # N x 1 x 8 x 8 in [0, 1]
    y = d.target.astype(np.int64)
    idx = np.random.default_rng(seed).permutation(len(x))
    n_test = 360
    return (x[idx[n_test:]], y[idx[n_test:]]), (x[idx[:n_test]], y[idx[:n_test]])


class GradNormMonitor:
    """Per-layer gradient norms at each step, via post-accumulate-grad hooks on the parameters."""

    def __init__(self, model):
        self.history = {}
        self.handles = []
        for name, p in model.named_parameters():
            if name.endswith("weight"):
                layer = name.rsplit(".", 1)[0]
                self.history[layer] = []
                self.handles.append(p.register_post_accumulate_grad_hook(self._hook(layer)))

    def _hook(self, layer):
        def hook(param):
            self.history[layer].append(float(param.grad.norm()))
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()


def clip_hooks(model, clip):
    """Element-wise gradient clipping as tensor hooks: the returned tensor replaces the gradient."""
    return [p.register_hook(lambda g: g.clamp(-clip, clip)) for p in model.parameters()]


def grad_cam(model, layer, x, target=None):
    """Grad-CAM: weights = spatial mean of d(score)/d(activation); cam = relu(sum_k w_k A_k)."""
    store = {}

    def fwd_hook(module, inputs, output):
        store["act"] = output
        output.register_hook(lambda g: store.__setitem__("grad", g))

    handle = layer.register_forward_hook(fwd_hook)
    try:
        model.zero_grad()
        logits = model(x)
        cls = logits.argmax(1) if target is None else target
        score = logits.gather(1, cls.view(-1, 1)).sum()
        score.backward()
    finally:
        handle.remove()
    act, grad = store["act"].detach(), store["grad"]
    weights = grad.mean(dim=(2, 3), keepdim=True)
    cam = F.relu((weights * act).sum(1, keepdim=True))
    cam = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)[:, 0]
    mx = cam.flatten(1).max(1).values.view(-1, 1, 1)
    return (cam / (mx + 1e-8)).cpu().numpy(), cls.cpu().numpy()


def write_report(out_dir, losses, accs, monitor, cams, images, labels, preds, test_acc, features, flabels):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)

    fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))
    ax[0].plot(losses, lw=1)
    ax[0].set(title="training loss per step", xlabel="step", ylabel="cross-entropy")
    ax[1].plot(np.arange(1, len(accs) + 1), accs, marker="o")
    ax[1].set(title="test accuracy per epoch", xlabel="epoch", ylabel="accuracy", ylim=(0, 1.01))
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "loss.png"), dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(10, 3.8))
    for layer, norms in monitor.history.items():
        ax.plot(norms, lw=1, label=layer)
    ax.set(title="gradient norm per layer (post-accumulate-grad hooks)", xlabel="step", ylabel="||grad||",
           yscale="log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "grad_norms.png"), dpi=110)
    plt.close(fig)

    n = len(images)
    fig, ax = plt.subplots(2, n, figsize=(1.5 * n, 3.9))
    for i in range(n):
        ax[0, i].imshow(images[i, 0], cmap="gray_r")
        ax[0, i].set_title(f"label {labels[i]}", fontsize=8)
        ax[1, i].imshow(images[i, 0], cmap="gray_r")
        ax[1, i].imshow(cams[i], cmap="jet", alpha=0.5, interpolation="bilinear")
        ax[1, i].set_title(f"pred {preds[i]}", fontsize=8)
        for a in ax[:, i]:
            a.axis("off")
    fig.suptitle("Grad-CAM on the last convolution block (top: input, bottom: overlay)")
    fig.tight_layout(h_pad=1.5)
    fig.savefig(os.path.join(out_dir, "gradcam.png"), dpi=110)
    plt.close(fig)

    # captured features (forward hook), projected on their two principal components
    f = features - features.mean(0)
    _, _, vt = np.linalg.svd(f, full_matrices=False)
    p = f @ vt[:2].T
    fig, ax = plt.subplots(figsize=(5, 4.2))
    sc = ax.scatter(p[:, 0], p[:, 1], c=flabels, cmap="tab10", s=8)
    ax.legend(*sc.legend_elements(), fontsize=7, title="digit", loc="best")
    ax.set(title="features captured by a forward hook (PCA)")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "features.png"), dpi=110)
    plt.close(fig)

    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>hookgrad demo report</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}} img{{max-width:100%}}
code{{background:#f3f3f3;padding:1px 4px}}</style></head><body>
<h1>hookgrad: training a CNN on handwritten digits, watched by hooks</h1>
<p>Test accuracy: <b>{test_acc * 100:.2f}%</b> on {len(flabels)} held-out digits.</p>
<h2>Loss and accuracy</h2><img src="loss.png" alt="loss curve">
<h2>Gradient norm per layer</h2>
<p>Recorded at every step by <code>Tensor.register_post_accumulate_grad_hook</code> on each weight;
gradients were clipped element-wise by <code>Tensor.register_hook</code> hooks.</p>
<img src="grad_norms.png" alt="gradient norms">
<h2>Grad-CAM</h2><p>A forward hook keeps the last convolution block's output and a tensor hook its
gradient; the map is ReLU of the gradient-weighted sum of the feature maps.</p>
<img src="gradcam.png" alt="Grad-CAM overlays">
<h2>Captured features</h2><img src="features.png" alt="features">
<p>Python {html.escape(sys.version.split()[0])}, hookgrad {torch.__version__}</p></body></html>"""
    path = os.path.join(out_dir, "index.html")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--out", default="report")
    ap.add_argument("--clip", type=float, default=0.5)
    ap.add_argument("--device", default="cpu", help='where to train: "cpu" or "cuda" (CuPy: pip install hookgrad[cuda])')
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    torch.manual_seed(0)
    (xtr, ytr), (xte, yte) = load_digits_data()
    train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(xtr), torch.tensor(ytr)),
                                        batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))
    model = Net().to(device)        # without CUDA, "cuda" raises PyTorch's error here
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    monitor = GradNormMonitor(model)
    clips = clip_hooks(model, args.clip)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"A small CNN ({n_params:,} parameters) learns scikit-learn's 8x8 handwritten digits "
          f"({len(xtr)} training, {len(xte)} test images) on {device}.")
    print(f"Hooks at work while it trains: {len(monitor.handles)} post-accumulate-grad hooks record each layer's "
          f"weight-gradient norm, {len(clips)} tensor hooks clip gradients to +-{args.clip}.")
    xt, yt = torch.tensor(xte).to(device), torch.tensor(yte).to(device)
    losses, accs = [], []
    t0 = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        for xb, yb in progress(train, len(train), f"epoch {epoch:2d}/{args.epochs}"):
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            acc = (model(xt).argmax(1) == yt).float().mean().item()
        accs.append(acc)
        print(f"           loss {np.mean(losses[-len(train):]):.4f}  test accuracy {acc * 100:.2f}%")
    for h in clips:
        h.remove()
    monitor.remove()
    print("Training done; hooks removed. Now a forward hook captures the fc1 features of the test set, and "
          "Grad-CAM\n(a forward hook plus a tensor hook on conv2) explains one test digit per class.")

    feats = []
    cap = model.fc1.register_forward_hook(lambda m, i, o: feats.append(o.detach().cpu().numpy()))
    with torch.no_grad():
        logits = model(xt)
    cap.remove()
    test_acc = (logits.argmax(1) == yt).float().mean().item()

    sel = np.array([int(np.flatnonzero(yte == d)[0]) for d in range(10)])   # one test digit per class
    cams, preds = grad_cam(model, model.conv2, xt[sel])
    path = write_report(args.out, losses, accs, monitor, cams, xte[sel], yte[sel], preds, test_acc,
                        np.concatenate(feats), yte)
    print(f"test accuracy: {test_acc * 100:.2f}%   (training took {time.perf_counter() - t0:.1f}s)")
    print(f"report: {os.path.abspath(path)}")
    return test_acc


if __name__ == "__main__":
    main()
