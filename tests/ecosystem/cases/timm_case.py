"""timm: create_model for resnet, vit and convnext, and features_only."""


def run(torch, rec, weights):
    import timm
    x = torch.randn(2, 3, 64, 64)
    for name, kw in [("resnet18", {}), ("vit_tiny_patch16_224", {"img_size": 64}), ("convnext_atto", {})]:
        model = weights(name, timm.create_model(name, pretrained=False, num_classes=7, **kw)).eval()
        rec(name, model(x))
    feats = weights("features", timm.create_model("resnet18", pretrained=False, features_only=True,
                                                  out_indices=(1, 3))).eval()
    rec("features", feats(x))
    rec("feature_info", feats.feature_info.channels())
    fx = weights("features_fx", timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64,
                                                  features_only=True, out_indices=(2,))).eval()
    rec("features_vit", fx(x))
