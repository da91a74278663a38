"""Under the PyTorch oracle only (imported by sitecustomize.py just before torchvision): PyPI's torchvision 0.28
is a CUDA build whose ``_C.so`` cannot load beside the CPU torch 2.13, and its import then fails registering
fakes for operators that do not exist ("operator torchvision::nms does not exist"). Declaring the operators'
schemas first, as its _C would, lets torchvision's Python import. nms and roi_align get reference kernels
(a plain loop from torchvision's CPU kernel; torchvision's own pure-torch roi_align), and loading the _C library
becomes a no-op, so that torchvision reports its ops present and calls them."""
import torch

_lib = torch.library.Library("torchvision", "DEF")
for _schema in [
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "SymInt batch_size, SymInt channels, SymInt height, SymInt width, int sampling_ratio, bool aligned) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, int sampling_ratio, SymInt batch_size, SymInt channels, "
    "SymInt height, SymInt width) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) "
    "-> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) "
    "-> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, "
    "SymInt width) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, "
    "SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, "
    "SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
    "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, "
    "SymInt groups, SymInt offset_groups, bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "_cuda_version() -> int",
]:
    _lib.define(_schema)


def _nms(dets, scores, iou_threshold):
    """torchvision's CPU nms: keep boxes in descending score order (stable), drop those overlapping a kept one."""
    order = torch.sort(scores, descending=True, stable=True).indices
    x1, y1, x2, y2 = dets.unbind(1)
    areas = (x2 - x1) * (y2 - y1)
    suppressed = [False] * len(order)
    keep = []
    order_l = order.tolist()
    for i_pos, i in enumerate(order_l):
        if suppressed[i_pos]:
            continue
        keep.append(i)
        for j_pos in range(i_pos + 1, len(order_l)):
            j = order_l[j_pos]
            if suppressed[j_pos]:
                continue
            w = (torch.minimum(x2[i], x2[j]) - torch.maximum(x1[i], x1[j])).clamp(min=0)
            h = (torch.minimum(y2[i], y2[j]) - torch.maximum(y1[i], y1[j])).clamp(min=0)
            inter = w * h
            if inter / (areas[i] + areas[j] - inter) > iou_threshold:
                suppressed[j_pos] = True
    return torch.tensor(keep, dtype=torch.int64)


_lib.impl("nms", _nms, "CPU")
_lib.impl("_cuda_version", lambda: -1, "CompositeExplicitAutograd")


def _roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    """torchvision's own pure-torch roi_align (the one it runs where its C++ ops are missing)."""
    from torchvision.ops.roi_align import _roi_align as reference
    reference = getattr(reference, "__wrapped__", reference)      # eager: not through torch.compile
    return reference(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)


# at the autograd key: its torch ops record the graph themselves (a composite kernel would forbid torchvision's meta one)
_lib.impl("roi_align", _roi_align, "AutogradCPU")

_load_library = torch.ops.load_library


def load_library(path):
    """torchvision's _C is what the operators above stand in for; any other library loads as usual."""
    if "torchvision" in str(path) and str(path).endswith(("_C.so", "_C.pyd")):
        return None
    return _load_library(path)


torch.ops.load_library = load_library
