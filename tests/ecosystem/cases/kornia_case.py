"""kornia: filters, colour conversions and geometry on a small image batch, with gradients."""


def run(torch, rec, weights):
    import kornia
    img = torch.rand(2, 3, 32, 32, requires_grad=True)
    blur = kornia.filters.gaussian_blur2d(img, (5, 5), (1.5, 1.5))
    rec("blur", blur)
    rec("sobel", kornia.filters.sobel(img))
    rec("gray", kornia.color.rgb_to_grayscale(img))
    rec("hsv", kornia.color.rgb_to_hsv(img))
    rec("lab", kornia.color.rgb_to_lab(img))
    angle = torch.tensor([30.0, -45.0])
    rot = kornia.geometry.transform.rotate(img, angle)
    rec("rotate", rot)
    M = kornia.geometry.transform.get_rotation_matrix2d(torch.tensor([[16.0, 16.0], [10.0, 12.0]]), angle,
                                                        torch.ones(2, 2))
    rec("M", M)
    rec("warp", kornia.geometry.transform.warp_affine(img, M, (32, 32)))
    rec("resize", kornia.geometry.transform.resize(img, (16, 20)))
    (blur.sum() + rot.pow(2).sum()).backward()
    rec("grad", img.grad)
