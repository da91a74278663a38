"""pytorch-grad-cam: GradCAM, GradCAM++ and EigenCAM maps on torchvision's ResNet-18, and the overlay image."""


def run(torch, rec, weights):
    import numpy as np
    from pytorch_grad_cam import EigenCAM, GradCAM, GradCAMPlusPlus
    from pytorch_grad_cam.utils.image import show_cam_on_image
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
    from torchvision.models import resnet18
    model = weights("resnet18", resnet18(num_classes=5)).eval()
    x = torch.rand(2, 3, 64, 64)
    targets = [ClassifierOutputTarget(1), ClassifierOutputTarget(3)]
    for name, cls in (("gradcam", GradCAM), ("gradcam++", GradCAMPlusPlus), ("eigencam", EigenCAM)):
        with cls(model=model, target_layers=[model.layer4[-1]]) as cam:
            maps = cam(input_tensor=x, targets=targets)
        rec(name, torch.from_numpy(np.ascontiguousarray(maps, dtype=np.float32)))
    img = x[0].permute(1, 2, 0).numpy()
    overlay = show_cam_on_image(img.astype(np.float32), maps[0], use_rgb=True)
    rec("overlay_shape", list(overlay.shape))
