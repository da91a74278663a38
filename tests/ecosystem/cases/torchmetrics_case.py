"""torchmetrics: the Metric classes accumulated over batches, a MetricCollection, and the functional API."""


def run(torch, rec, weights):
    import torchmetrics
    from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score, BinaryAUROC
    from torchmetrics.regression import MeanSquaredError, PearsonCorrCoef
    g = torch.Generator().manual_seed(1)
    coll = torchmetrics.MetricCollection({"acc": MulticlassAccuracy(num_classes=5),
                                          "f1": MulticlassF1Score(num_classes=5, average="macro")})
    mse, pear, auroc = MeanSquaredError(), PearsonCorrCoef(), BinaryAUROC()
    for step in range(3):
        logits = torch.randn(16, 5, generator=g)
        target = torch.randint(0, 5, (16,), generator=g)
        rec(f"batch{step}", coll(logits, target))
        p, t = torch.randn(16, generator=g), torch.randn(16, generator=g)
        mse.update(p, t)
        pear.update(p, t)
        auroc.update(torch.sigmoid(p), (t > 0).long())
    rec("collection", coll.compute())
    rec("mse", mse.compute())
    rec("pearson", pear.compute())
    rec("auroc", auroc.compute())
    coll.reset()
    rec("functional_acc", torchmetrics.functional.accuracy(torch.tensor([0, 1, 2, 2]), torch.tensor([0, 1, 1, 2]),
                                                            task="multiclass", num_classes=3))
