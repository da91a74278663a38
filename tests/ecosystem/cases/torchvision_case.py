"""torchvision: models, transforms.v2 and ops (nms, batched_nms, roi_align, roi_pool, box ops)."""


def run(torch, rec, weights):
    import torchvision
    from torchvision import models, ops
    from torchvision.transforms import v2
    rec("has_ops", torchvision.extension._has_ops())
    net = weights("resnet18", models.resnet18(num_classes=10)).eval()
    x = torch.randn(2, 3, 64, 64)
    rec("resnet18", net(x))
    mob = weights("mobilenet", models.mobilenet_v3_small(num_classes=5)).eval()
    rec("mobilenet_v3_small", mob(x))
    from torchvision.models.feature_extraction import create_feature_extractor, get_graph_node_names
    rec("node_names", get_graph_node_names(net)[1][:12])
    fx = create_feature_extractor(net, return_nodes={"layer1": "l1", "layer3.1.relu_1": "l3"})
    feats = fx(x)
    rec("features", feats)

    img = torch.randint(0, 256, (3, 40, 50), dtype=torch.uint8)
    tf = v2.Compose([v2.Resize((32, 32), antialias=True), v2.CenterCrop(28), v2.ToDtype(torch.float32, scale=True),
                     v2.Normalize(mean=[0.5, 0.4, 0.3], std=[0.2, 0.25, 0.3])])
    rec("transforms", tf(img))
    torch.manual_seed(3)
    rec("random_flip", v2.RandomHorizontalFlip(p=0.5)(img.float()))

    boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [21, 19, 29, 31], [0, 0, 9, 10.5]],
                         dtype=torch.float32)
    scores = torch.tensor([0.9, 0.8, 0.7, 0.95, 0.9])
    rec("nms", ops.nms(boxes, scores, 0.5))
    rec("batched_nms", ops.batched_nms(boxes, scores, torch.tensor([0, 0, 1, 1, 0]), 0.5))
    rec("box_iou", ops.box_iou(boxes, boxes))
    rec("box_convert", ops.box_convert(boxes, "xyxy", "cxcywh"))
    feat = torch.randn(1, 4, 16, 16, requires_grad=True)
    rois = torch.tensor([[0, 1.0, 2.0, 9.5, 12.0], [0, 0.0, 0.0, 15.0, 15.0]])
    ra = ops.roi_align(feat, rois, output_size=(3, 3), spatial_scale=0.5, sampling_ratio=2, aligned=True)
    rec("roi_align", ra)
    ra.sum().backward()
    rec("roi_align.grad", feat.grad)
