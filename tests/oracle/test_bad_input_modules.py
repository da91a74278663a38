"""The hostile-input battery, round 2: module construction and calls, losses, optimizers, schedulers, data
loading, module API misuse, Tensor dunders, indexing, reductions, joins, shape ops, creation and functional
calls, each run under torch and hookgrad. The exception type must be PyTorch's; where hookgrad gives PyTorch's
text (TEXT) the text must start with torch's first line; a call torch accepts must give the same shape.
The stateful tests check that after a rejected call a module, an optimizer or a tensor is unchanged and
still usable (parameters, buffers, optimizer state and param_groups, tensor data and version)."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad

def _opt(L, cls, **kw):
    p = L.nn.Parameter(L.ones(2))
    return getattr(L.optim, cls)([p], **kw)
def _sched(L, cls, *a, **kw):
    p = L.nn.Parameter(L.ones(2))
    o = L.optim.SGD([p], lr=0.1)
    return getattr(L.optim.lr_scheduler, cls)(o, *a, **kw)
def _dl(L, **kw):
    return L.utils.data.DataLoader(L.utils.data.TensorDataset(L.ones(4, 2)), **kw)
F = lambda L: L.nn.functional
CASES = {
 # --- module construction
 "Linear_neg": lambda L: L.nn.Linear(-1, 2),
 "Linear_neg_out": lambda L: L.nn.Linear(2, -3),
 "Linear_float": lambda L: L.nn.Linear(2.5, 3),
 "Linear_str": lambda L: L.nn.Linear("a", 3),
 "Linear_zero": lambda L: L.nn.Linear(0, 3),
 "Linear_none": lambda L: L.nn.Linear(None, 3),
 "Bilinear_neg": lambda L: L.nn.Bilinear(-1, 2, 3),
 "Conv2d_k0": lambda L: L.nn.Conv2d(3, 4, 0),
 "Conv2d_kneg": lambda L: L.nn.Conv2d(3, 4, -1),
 "Conv2d_groups": lambda L: L.nn.Conv2d(3, 4, 3, groups=2),
 "Conv2d_groups0": lambda L: L.nn.Conv2d(3, 4, 3, groups=0),
 "Conv2d_groups_out": lambda L: L.nn.Conv2d(4, 6, 3, groups=4),
 "Conv2d_stride0": lambda L: L.nn.Conv2d(3, 4, 3, stride=0),
 "Conv2d_padmode": lambda L: L.nn.Conv2d(3, 4, 3, padding_mode="bogus"),
 "Conv2d_padstr": lambda L: L.nn.Conv2d(3, 4, 3, padding="bogus"),
 "Conv2d_same_stride": lambda L: L.nn.Conv2d(3, 4, 3, padding="same", stride=2),
 "Conv2d_in0": lambda L: L.nn.Conv2d(0, 4, 3),
 "Conv2d_neg_in": lambda L: L.nn.Conv2d(-3, 4, 3),
 "Conv2d_negpad": lambda L: L.nn.Conv2d(3, 4, 3, padding=-1),
 "Conv1d_k0": lambda L: L.nn.Conv1d(3, 4, 0),
 "ConvT2d_groups": lambda L: L.nn.ConvTranspose2d(3, 4, 3, groups=2),
 "ConvT2d_padstr": lambda L: L.nn.ConvTranspose2d(3, 4, 3, padding="same"),
 "BatchNorm2d_0": lambda L: L.nn.BatchNorm2d(0),
 "BatchNorm2d_neg": lambda L: L.nn.BatchNorm2d(-1),
 "BatchNorm1d_float": lambda L: L.nn.BatchNorm1d(2.5),
 "LayerNorm_neg": lambda L: L.nn.LayerNorm(-1),
 "LayerNorm_0": lambda L: L.nn.LayerNorm(0),
 "GroupNorm_div": lambda L: L.nn.GroupNorm(3, 4),
 "GroupNorm_0": lambda L: L.nn.GroupNorm(0, 4),
 "Embedding_neg": lambda L: L.nn.Embedding(-1, 3),
 "Embedding_negdim": lambda L: L.nn.Embedding(3, -1),
 "Embedding_pad_oob": lambda L: L.nn.Embedding(3, 2, padding_idx=5),
 "Embedding_pad_neg_oob": lambda L: L.nn.Embedding(3, 2, padding_idx=-5),
 "Embedding_weight_shape": lambda L: L.nn.Embedding(3, 2, _weight=L.ones(4, 2)),
 "Embedding_from_pre_1d": lambda L: L.nn.Embedding.from_pretrained(L.ones(3)),
 "Dropout_p": lambda L: L.nn.Dropout(p=1.5),
 "Dropout_pneg": lambda L: L.nn.Dropout(p=-0.1),
 "Dropout_pstr": lambda L: L.nn.Dropout(p="a"),
 "Dropout2d_p": lambda L: L.nn.Dropout2d(p=2),
 "MaxPool2d_k0_call": lambda L: L.nn.MaxPool2d(0)(L.ones(1, 1, 4, 4)),
 "AvgPool2d_k0_call": lambda L: L.nn.AvgPool2d(0)(L.ones(1, 1, 4, 4)),
 "Softmax_dim_call": lambda L: L.nn.Softmax(dim=3)(L.ones(2, 3)),
 "Flatten_bad": lambda L: L.nn.Flatten(3)(L.ones(2, 3)),
 "Unflatten_bad": lambda L: L.nn.Unflatten(1, (2, 2))(L.ones(2, 3)),
 "Unflatten_bad2": lambda L: L.nn.Unflatten(1, 3)(L.ones(2, 3)),
 "Sequential_str": lambda L: L.nn.Sequential("a"),
 "Sequential_idx": lambda L: L.nn.Sequential(L.nn.ReLU())[3],
 "ModuleList_str": lambda L: L.nn.ModuleList(["a"]),
 "ModuleList_idx": lambda L: L.nn.ModuleList([L.nn.ReLU()])[2],
 "ModuleDict_bad": lambda L: L.nn.ModuleDict({"a": 1}),
 "ModuleDict_key": lambda L: L.nn.ModuleDict({})["x"],
 "ParameterList_bad": lambda L: L.nn.ParameterList([1]),
 "Identity_args": lambda L: L.nn.Identity(3, x=1)(L.ones(2)),
 "ReLU_inplace_str": lambda L: L.nn.ReLU(inplace="x")(L.ones(2)),
 "LeakyReLU_str": lambda L: L.nn.LeakyReLU("a")(L.ones(2)),
 "ELU_str": lambda L: L.nn.ELU("a")(L.ones(2)),
 "Hardtanh_minmax": lambda L: L.nn.Hardtanh(2.0, 1.0),
 "Softplus_beta_call": lambda L: L.nn.Softplus(beta=0)(L.ones(2)),
 "PReLU_chan": lambda L: L.nn.PReLU(3)(L.ones(2, 4)),
 "MHA_heads": lambda L: L.nn.MultiheadAttention(5, 2),
 "TransformerEnc_heads": lambda L: L.nn.TransformerEncoderLayer(5, 2),
 # --- module calls
 "Linear_rank0": lambda L: L.nn.Linear(3, 2)(L.tensor(1.)),
 "Linear_wrong_feat": lambda L: L.nn.Linear(3, 2)(L.ones(4, 5)),
 "Linear_int": lambda L: L.nn.Linear(3, 2)(L.ones(4, 3, dtype=L.int64)),
 "Linear_f64": lambda L: L.nn.Linear(3, 2)(L.ones(4, 3, dtype=L.float64)),
 "Linear_empty": lambda L: L.nn.Linear(3, 2)(L.ones(0, 3)),
 "Linear_nan": lambda L: L.nn.Linear(3, 2)(L.full((1, 3), float("nan"))),
 "Linear_none": lambda L: L.nn.Linear(3, 2)(None),
 "Linear_str_in": lambda L: L.nn.Linear(3, 2)("a"),
 "Linear_list": lambda L: L.nn.Linear(3, 2)([1., 2., 3.]),
 "Linear_numpy": lambda L: L.nn.Linear(3, 2)(__import__("numpy").ones((1, 3), "float32")),
 "Linear_two_args": lambda L: L.nn.Linear(3, 2)(L.ones(1, 3), L.ones(1, 3)),
 "Linear_no_args": lambda L: L.nn.Linear(3, 2)(),
 "Linear_kw": lambda L: L.nn.Linear(3, 2)(x=L.ones(1, 3)),
 "Conv2d_rank": lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(3, 5)),
 "Conv2d_rank5": lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(1, 1, 3, 5, 5)),
 "Conv2d_chan": lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(1, 2, 5, 5)),
 "Conv2d_int": lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(1, 3, 5, 5, dtype=L.int64)),
 "Conv2d_small": lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(1, 3, 2, 2)),
 "Conv2d_empty": lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(0, 3, 5, 5)),
 "Conv2d_3d_ok": lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(3, 5, 5)),
 "Conv2d_none": lambda L: L.nn.Conv2d(3, 4, 3)(None),
 "Conv2d_list": lambda L: L.nn.Conv2d(3, 4, 3)([[1.]]),
 "Conv1d_rank": lambda L: L.nn.Conv1d(3, 4, 3)(L.ones(1, 3, 5, 5)),
 "Conv1d_chan": lambda L: L.nn.Conv1d(3, 4, 3)(L.ones(1, 2, 5)),
 "ConvT2d_chan": lambda L: L.nn.ConvTranspose2d(3, 4, 3)(L.ones(1, 2, 5, 5)),
 "ConvT2d_outpad": lambda L: L.nn.ConvTranspose2d(3, 4, 3, stride=2)(L.ones(1, 3, 5, 5), output_size=(20, 20)),
 "BatchNorm2d_rank": lambda L: L.nn.BatchNorm2d(3)(L.ones(3, 5)),
 "BatchNorm2d_chan": lambda L: L.nn.BatchNorm2d(3)(L.ones(2, 4, 5, 5)),
 "BatchNorm1d_one": lambda L: L.nn.BatchNorm1d(3)(L.ones(1, 3)),
 "BatchNorm1d_rank": lambda L: L.nn.BatchNorm1d(3)(L.ones(2, 3, 4, 5)),
 "BatchNorm2d_int": lambda L: L.nn.BatchNorm2d(3)(L.ones(2, 3, 2, 2, dtype=L.int64)),
 "BatchNorm2d_empty": lambda L: L.nn.BatchNorm2d(3)(L.ones(0, 3, 2, 2)),
 "LayerNorm_shape": lambda L: L.nn.LayerNorm(4)(L.ones(2, 3)),
 "LayerNorm_int": lambda L: L.nn.LayerNorm(3)(L.ones(2, 3, dtype=L.int64)),
 "GroupNorm_chan": lambda L: L.nn.GroupNorm(2, 4)(L.ones(2, 6, 3)),
 "GroupNorm_rank": lambda L: L.nn.GroupNorm(2, 4)(L.ones(4)),
 "Embedding_float_idx": lambda L: L.nn.Embedding(3, 2)(L.ones(2)),
 "Embedding_oob": lambda L: L.nn.Embedding(3, 2)(L.tensor([3])),
 "Embedding_neg_idx": lambda L: L.nn.Embedding(3, 2)(L.tensor([-1])),
 "Embedding_list": lambda L: L.nn.Embedding(3, 2)([0, 1]),
 "Embedding_bool": lambda L: L.nn.Embedding(3, 2)(L.tensor([True])),
 "Dropout_int": lambda L: L.nn.Dropout()(L.ones(3, dtype=L.int64)),
 "ReLU_str": lambda L: L.nn.ReLU()("a"),
 "ReLU_list": lambda L: L.nn.ReLU()([1.]),
 "ReLU_int": lambda L: L.nn.ReLU()(L.tensor([-1, 2])),
 "ReLU_bool": lambda L: L.nn.ReLU()(L.tensor([True])),
 "Sigmoid_int": lambda L: L.nn.Sigmoid()(L.tensor([1, 2])),
 "Tanh_int": lambda L: L.nn.Tanh()(L.tensor([1, 2])),
 "GELU_int": lambda L: L.nn.GELU()(L.tensor([1, 2])),
 "GELU_approx": lambda L: L.nn.GELU(approximate="bogus")(L.ones(2)),
 "Softmax_int": lambda L: L.nn.Softmax(0)(L.tensor([1, 2])),
 "Softmax_nodim": lambda L: L.nn.Softmax()(L.ones(2, 3)),
 "MaxPool2d_rank": lambda L: L.nn.MaxPool2d(2)(L.ones(4)),
 "MaxPool2d_int": lambda L: L.nn.MaxPool2d(2)(L.ones(1, 1, 4, 4, dtype=L.int64)),
 "MaxPool2d_small": lambda L: L.nn.MaxPool2d(5)(L.ones(1, 1, 4, 4)),
 "AvgPool2d_rank": lambda L: L.nn.AvgPool2d(2)(L.ones(4)),
 "AdaptiveAvg_rank": lambda L: L.nn.AdaptiveAvgPool2d(2)(L.ones(4)),
 "AdaptiveAvg_neg": lambda L: L.nn.AdaptiveAvgPool2d(-1)(L.ones(1, 1, 4, 4)),
 "Sequential_call_bad": lambda L: L.nn.Sequential(L.nn.Linear(3, 2), L.nn.Linear(3, 2))(L.ones(1, 3)),
 "Bilinear_shape": lambda L: L.nn.Bilinear(2, 3, 4)(L.ones(1, 2), L.ones(1, 2)),
 "MHA_shape": lambda L: L.nn.MultiheadAttention(4, 2)(L.ones(3, 4), L.ones(3, 5), L.ones(3, 5)),
 # --- losses
 "mse_shape": lambda L: F(L).mse_loss(L.ones(3), L.ones(4)),
 "mse_reduction": lambda L: F(L).mse_loss(L.ones(3), L.ones(3), reduction="bogus"),
 "mse_none_target": lambda L: F(L).mse_loss(L.ones(3), None),
 "mse_list": lambda L: F(L).mse_loss([1.], [1.]),
 "mse_mixed_dtype": lambda L: F(L).mse_loss(L.ones(3), L.ones(3, dtype=L.float64)),
 "l1_reduction": lambda L: F(L).l1_loss(L.ones(3), L.ones(3), reduction="bogus"),
 "l1_shape": lambda L: F(L).l1_loss(L.ones(3), L.ones(4)),
 "l1_int": lambda L: F(L).l1_loss(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64)),
 "smooth_l1_beta": lambda L: F(L).smooth_l1_loss(L.ones(3), L.ones(3), beta=-1.),
 "huber_delta": lambda L: F(L).huber_loss(L.ones(3), L.ones(3), delta=0.),
 "ce_reduction": lambda L: F(L).cross_entropy(L.ones(2, 3), L.tensor([0, 1]), reduction="bogus"),
 "ce_float_target_shape": lambda L: F(L).cross_entropy(L.ones(2, 3), L.ones(2, 4)),
 "ce_int_input": lambda L: F(L).cross_entropy(L.ones(2, 3, dtype=L.int64), L.tensor([0, 1])),
 "ce_target_float1d": lambda L: F(L).cross_entropy(L.ones(2, 3), L.tensor([0., 1.])),
 "ce_target_oob": lambda L: F(L).cross_entropy(L.ones(2, 3), L.tensor([0, 3])),
 "ce_weight_shape": lambda L: F(L).cross_entropy(L.ones(2, 3), L.tensor([0, 1]), weight=L.ones(4)),
 "ce_smooth": lambda L: F(L).cross_entropy(L.ones(2, 3), L.tensor([0, 1]), label_smoothing=1.5),
 "ce_0d": lambda L: F(L).cross_entropy(L.tensor(1.), L.tensor(0)),
 "nll_reduction": lambda L: F(L).nll_loss(L.ones(2, 3), L.tensor([0, 1]), reduction="bogus"),
 "nll_int": lambda L: F(L).nll_loss(L.ones(2, 3), L.tensor([0., 1.])),
 "bce_oob": lambda L: F(L).binary_cross_entropy(L.ones(3) * 2, L.ones(3)),
 "bce_reduction": lambda L: F(L).binary_cross_entropy(L.ones(3) * .5, L.ones(3), reduction="bogus"),
 "bce_int_target": lambda L: F(L).binary_cross_entropy(L.ones(3) * .5, L.ones(3, dtype=L.int64)),
 "bcelogits_shape": lambda L: F(L).binary_cross_entropy_with_logits(L.ones(3), L.ones(4)),
 "bcelogits_reduction": lambda L: F(L).binary_cross_entropy_with_logits(L.ones(3), L.ones(3), reduction="x"),
 "kl_reduction": lambda L: F(L).kl_div(L.ones(3), L.ones(3), reduction="bogus"),
 "MSELoss_red": lambda L: L.nn.MSELoss(reduction="bogus")(L.ones(3), L.ones(3)),
 "CELoss_red": lambda L: L.nn.CrossEntropyLoss(reduction="bogus")(L.ones(2, 3), L.tensor([0, 1])),
 "CELoss_ignore": lambda L: L.nn.CrossEntropyLoss(ignore_index="a"),
 "NLLLoss_red": lambda L: L.nn.NLLLoss(reduction="bogus")(L.ones(2, 3), L.tensor([0, 1])),
 "BCELoss_red": lambda L: L.nn.BCELoss(reduction="bogus")(L.ones(3) * .5, L.ones(3)),
 # --- optimizers
 "SGD_lr_neg": lambda L: _opt(L, "SGD", lr=-1),
 "SGD_mom_neg": lambda L: _opt(L, "SGD", lr=0.1, momentum=-1),
 "SGD_wd_neg": lambda L: _opt(L, "SGD", lr=0.1, weight_decay=-1),
 "SGD_nesterov": lambda L: _opt(L, "SGD", lr=0.1, nesterov=True),
 "SGD_lr_str": lambda L: _opt(L, "SGD", lr="a"),
 "SGD_lr_tensor": lambda L: _opt(L, "SGD", lr=L.tensor(0.1)),
 "SGD_empty": lambda L: L.optim.SGD([], lr=0.1),
 "SGD_tensor_params": lambda L: L.optim.SGD(L.nn.Parameter(L.ones(2)), lr=0.1),
 "SGD_nonleaf": lambda L: L.optim.SGD([L.ones(2, requires_grad=True) * 2], lr=0.1),
 "SGD_int_param": lambda L: L.optim.SGD([1, 2], lr=0.1),
 "SGD_dup": lambda L: (lambda p: L.optim.SGD([p, p], lr=0.1))(L.nn.Parameter(L.ones(2))),
 "SGD_dup_groups": lambda L: (lambda p: L.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1))(L.nn.Parameter(L.ones(2))),
 "SGD_group_noparams": lambda L: L.optim.SGD([{"lr": 0.1}], lr=0.1),
 "SGD_set": lambda L: L.optim.SGD({L.nn.Parameter(L.ones(2))}, lr=0.1),
 "SGD_none": lambda L: L.optim.SGD(None, lr=0.1),
 "SGD_unknown_kw": lambda L: _opt(L, "SGD", lr=0.1, bogus=1),
 "SGD_nograd_leaf": lambda L: L.optim.SGD([L.ones(2)], lr=0.1),
 "Adam_lr_neg": lambda L: _opt(L, "Adam", lr=-1),
 "Adam_eps_neg": lambda L: _opt(L, "Adam", eps=-1),
 "Adam_beta0": lambda L: _opt(L, "Adam", betas=(1.0, 0.9)),
 "Adam_beta1": lambda L: _opt(L, "Adam", betas=(0.9, -0.1)),
 "Adam_beta_len": lambda L: _opt(L, "Adam", betas=(0.9,)),
 "Adam_wd_neg": lambda L: _opt(L, "Adam", weight_decay=-1),
 "AdamW_wd_neg": lambda L: _opt(L, "AdamW", weight_decay=-1),
 "AdamW_beta": lambda L: _opt(L, "AdamW", betas=(1.5, 0.9)),
 "Adagrad_lr": lambda L: _opt(L, "Adagrad", lr=-1),
 "Adagrad_lr_decay": lambda L: _opt(L, "Adagrad", lr_decay=-1),
 "Adagrad_iav": lambda L: _opt(L, "Adagrad", initial_accumulator_value=-1),
 "RMSprop_alpha": lambda L: _opt(L, "RMSprop", alpha=-1),
 "RMSprop_mom": lambda L: _opt(L, "RMSprop", momentum=-1),
 "RMSprop_eps": lambda L: _opt(L, "RMSprop", eps=-1),
 "add_param_group_dup": lambda L: (lambda p: L.optim.SGD([p], lr=0.1).add_param_group({"params": [p]}))(L.nn.Parameter(L.ones(2))),
 "add_param_group_notdict": lambda L: _opt(L, "SGD", lr=.1).add_param_group([L.nn.Parameter(L.ones(2))]),
 "opt_load_bad": lambda L: _opt(L, "SGD", lr=.1).load_state_dict({"state": {}, "param_groups": []}),
 "opt_load_badlen": lambda L: _opt(L, "SGD", lr=.1).load_state_dict({"state": {}, "param_groups": [{"params": [0, 1]}]}),
 "opt_load_nokeys": lambda L: _opt(L, "SGD", lr=.1).load_state_dict({}),
 "opt_zero_grad_kw": lambda L: _opt(L, "SGD", lr=.1).zero_grad(set_to_none=None),
 # --- schedulers
 "StepLR_notopt": lambda L: L.optim.lr_scheduler.StepLR("a", 1),
 "StepLR_none": lambda L: L.optim.lr_scheduler.StepLR(None, 1),
 "StepLR_step0": lambda L: _sched(L, "StepLR", 0),
 "StepLR_str": lambda L: _sched(L, "StepLR", "a"),
 "MultiStepLR_unsorted": lambda L: _sched(L, "MultiStepLR", [3, 1]),
 "ExponentialLR_str": lambda L: _sched(L, "ExponentialLR", "a"),
 "CosineAnnealing_T0": lambda L: _sched(L, "CosineAnnealingLR", 0),
 "CosineWR_T0": lambda L: _sched(L, "CosineAnnealingWarmRestarts", 0),
 "CosineWR_Tmult": lambda L: _sched(L, "CosineAnnealingWarmRestarts", 2, T_mult=0),
 "CosineWR_float": lambda L: _sched(L, "CosineAnnealingWarmRestarts", 2.5),
 "LambdaLR_len": lambda L: _sched(L, "LambdaLR", [lambda e: 1., lambda e: 1.]),
 "LambdaLR_notcall": lambda L: _sched(L, "LambdaLR", 3),
 "OneCycle_total": lambda L: _sched(L, "OneCycleLR", 1.0),
 "OneCycle_total0": lambda L: _sched(L, "OneCycleLR", 1.0, total_steps=0),
 "OneCycle_anneal": lambda L: _sched(L, "OneCycleLR", 1.0, total_steps=10, anneal_strategy="x"),
 "OneCycle_pct": lambda L: _sched(L, "OneCycleLR", 1.0, total_steps=10, pct_start=2.),
 "Plateau_mode": lambda L: _sched(L, "ReduceLROnPlateau", mode="x"),
 "Plateau_factor": lambda L: _sched(L, "ReduceLROnPlateau", factor=1.0),
 "Plateau_thr": lambda L: _sched(L, "ReduceLROnPlateau", threshold_mode="x"),
 "LinearLR_factor": lambda L: _sched(L, "LinearLR", start_factor=0),
 "LinearLR_end": lambda L: _sched(L, "LinearLR", end_factor=2.),
 "ConstantLR_factor": lambda L: _sched(L, "ConstantLR", factor=2.),
 "CyclicLR_mode": lambda L: _sched(L, "CyclicLR", 0.1, 1.0, mode="x"),
 "PolyLR_str": lambda L: _sched(L, "PolynomialLR", total_iters="a"),
 "Sched_last_epoch": lambda L: _sched(L, "StepLR", 1, last_epoch=3),
 "SequentialLR_empty": lambda L: (lambda o: L.optim.lr_scheduler.SequentialLR(o, [], []))(L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=.1)),
 # --- data
 "DL_bs0": lambda L: _dl(L, batch_size=0),
 "DL_bsneg": lambda L: _dl(L, batch_size=-1),
 "DL_bsfloat": lambda L: _dl(L, batch_size=1.5),
 "DL_bsstr": lambda L: _dl(L, batch_size="a"),
 "DL_sampler_shuffle": lambda L: _dl(L, sampler=[0, 1], shuffle=True),
 "DL_batch_sampler_bs": lambda L: _dl(L, batch_sampler=[[0]], batch_size=2),
 "DL_batch_sampler_shuffle": lambda L: _dl(L, batch_sampler=[[0]], shuffle=True),
 "DL_batch_sampler_drop": lambda L: _dl(L, batch_sampler=[[0]], drop_last=True),
 "DL_workers_neg": lambda L: _dl(L, num_workers=-1),
 "DL_prefetch": lambda L: _dl(L, prefetch_factor=2),
 "DL_timeout": lambda L: _dl(L, timeout=-1),
 "DL_persistent": lambda L: _dl(L, persistent_workers=True),
 "DL_shuffle_str": lambda L: _dl(L, shuffle="a"),
 "DL_len_iterable_none": lambda L: len(_dl(L, batch_size=None)),
 "DL_next_oob": lambda L: list(L.utils.data.DataLoader([1, 2], sampler=[5])),
 "RandomSampler_n0": lambda L: L.utils.data.RandomSampler([1, 2], num_samples=0),
 "RandomSampler_repl": lambda L: L.utils.data.RandomSampler([1, 2], replacement="x"),
 "BatchSampler_bs0": lambda L: L.utils.data.BatchSampler([0, 1], 0, False),
 "BatchSampler_drop": lambda L: L.utils.data.BatchSampler([0, 1], 1, "x"),
 "TensorDataset_size": lambda L: L.utils.data.TensorDataset(L.ones(3), L.ones(4)),
 "random_split_sum": lambda L: L.utils.data.random_split([1, 2, 3], [1, 1]),
 "random_split_frac": lambda L: L.utils.data.random_split([1, 2, 3], [0.5, 0.6]),
 "Subset_idx": lambda L: L.utils.data.Subset([1, 2], [5])[0],
 "WRS_neg": lambda L: L.utils.data.WeightedRandomSampler([1., -1.], 2),
 "WRS_n0": lambda L: L.utils.data.WeightedRandomSampler([1., 1.], 0),
 "WRS_2d": lambda L: L.utils.data.WeightedRandomSampler([[1., 1.]], 2),
 # --- module API misuse
 "to_cuda": lambda L: L.nn.Linear(2, 2).to("cuda"),
 "to_bogus": lambda L: L.nn.Linear(2, 2).to("bogus"),
 "to_int": lambda L: L.nn.Linear(2, 2).to(L.int64),
 "to_str_dtype": lambda L: L.nn.Linear(2, 2).to("float64"),
 "cuda_call": lambda L: L.nn.Linear(2, 2).cuda(),
 "tensor_to_cuda": lambda L: L.ones(2).to("cuda"),
 "tensor_to_bogus": lambda L: L.ones(2).to("bogus"),
 "tensor_cuda": lambda L: L.ones(2).cuda(),
 "ones_device": lambda L: L.ones(2, device="cuda"),
 "ones_device_bogus": lambda L: L.ones(2, device="xyz"),
 "reg_buf_dot": lambda L: L.nn.Module().register_buffer("a.b", L.ones(1)),
 "reg_buf_empty": lambda L: L.nn.Module().register_buffer("", L.ones(1)),
 "reg_buf_int": lambda L: L.nn.Module().register_buffer(1, L.ones(1)),
 "reg_buf_nottensor": lambda L: L.nn.Module().register_buffer("a", 1),
 "reg_buf_existing": lambda L: L.nn.Linear(1, 1).register_buffer("weight", L.ones(1)),
 "reg_buf_attr": lambda L: L.nn.Linear(1, 1).register_buffer("forward", L.ones(1)),
 "reg_param_dot": lambda L: L.nn.Module().register_parameter("a.b", L.nn.Parameter(L.ones(1))),
 "reg_param_empty": lambda L: L.nn.Module().register_parameter("", L.nn.Parameter(L.ones(1))),
 "reg_param_int": lambda L: L.nn.Module().register_parameter(1, L.nn.Parameter(L.ones(1))),
 "reg_param_tensor": lambda L: L.nn.Module().register_parameter("a", L.ones(1)),
 "reg_param_nonleaf": lambda L: L.nn.Module().register_parameter("a", L.nn.Parameter(L.ones(1)) * 2),
 "reg_param_existing": lambda L: (lambda m: (m.register_buffer("b", L.ones(1)), m.register_parameter("b", L.nn.Parameter(L.ones(1)))))(L.nn.Module()),
 "add_module_dot": lambda L: L.nn.Module().add_module("a.b", L.nn.ReLU()),
 "add_module_empty": lambda L: L.nn.Module().add_module("", L.nn.ReLU()),
 "add_module_int": lambda L: L.nn.Module().add_module(1, L.nn.ReLU()),
 "add_module_notmod": lambda L: L.nn.Module().add_module("a", 1),
 "add_module_attr": lambda L: L.nn.Linear(1, 1).add_module("weight", L.nn.ReLU()),
 "setattr_param_over_tensor": lambda L: setattr(L.nn.Linear(1, 1), "weight", L.ones(1)),
 "setattr_module_none": lambda L: setattr(L.nn.Linear(1, 1), "weight", None),
 "get_submodule_bad": lambda L: L.nn.Linear(1, 1).get_submodule("x"),
 "get_parameter_bad": lambda L: L.nn.Linear(1, 1).get_parameter("x"),
 "get_buffer_bad": lambda L: L.nn.Linear(1, 1).get_buffer("weight"),
 "getattr_missing": lambda L: L.nn.Linear(1, 1).bogus,
 "delattr_missing": lambda L: delattr(L.nn.Linear(1, 1), "bogus"),
 "load_sd_shape": lambda L: L.nn.Linear(2, 2).load_state_dict({"weight": L.ones(3, 3), "bias": L.ones(2)}),
 "load_sd_missing": lambda L: L.nn.Linear(2, 2).load_state_dict({"weight": L.ones(2, 2)}),
 "load_sd_unexpected": lambda L: L.nn.Linear(2, 2).load_state_dict({"weight": L.ones(2, 2), "bias": L.ones(2), "x": L.ones(1)}),
 "load_sd_nonstrict": lambda L: L.nn.Linear(2, 2).load_state_dict({"weight": L.ones(2, 2), "x": L.ones(1)}, strict=False),
 "load_sd_notdict": lambda L: L.nn.Linear(2, 2).load_state_dict([1]),
 "load_sd_nottensor": lambda L: L.nn.Linear(2, 2).load_state_dict({"weight": 1, "bias": L.ones(2)}),
 "load_sd_list_value": lambda L: L.nn.Linear(2, 2).load_state_dict({"weight": [[1., 1.], [1., 1.]], "bias": L.ones(2)}),
 "load_sd_dtype": lambda L: L.nn.Linear(2, 2).load_state_dict({"weight": L.ones(2, 2, dtype=L.int64), "bias": L.ones(2)}),
 "apply_notcall": lambda L: L.nn.Linear(1, 1).apply(3),
 "train_str": lambda L: L.nn.Linear(1, 1).train("x"),
 "requires_grad_str": lambda L: L.nn.Linear(1, 1).requires_grad_("x"),
 "reg_fwd_hook_notcall": lambda L: L.nn.Linear(1, 1).register_forward_hook(3),
 "state_dict_args": lambda L: L.nn.Linear(1, 1).state_dict(1, 2, 3, 4),
 # --- Tensor dunder/ops
 "add_str": lambda L: L.ones(2) + "a",
 "radd_str": lambda L: "a" + L.ones(2),
 "sub_none": lambda L: L.ones(2) - None,
 "mul_list": lambda L: L.ones(2) * [1, 2],
 "mul_list_bad": lambda L: L.ones(2) * [1, 2, 3],
 "mul_tuple": lambda L: L.ones(2) * (1, 2),
 "div_str": lambda L: L.ones(2) / "a",
 "matmul_int": lambda L: L.ones(2) @ 3,
 "rmatmul_int": lambda L: 3 @ L.ones(2),
 "matmul_list": lambda L: L.ones(2) @ [1., 2.],
 "lt_none": lambda L: L.ones(2) < None,
 "eq_none": lambda L: L.ones(2) == None,
 "ne_str": lambda L: L.ones(2) != "a",
 "eq_str": lambda L: L.ones(2) == "a",
 "ge_str": lambda L: L.ones(2) >= "a",
 "pow_str": lambda L: L.ones(2) ** "a",
 "rpow_str": lambda L: "a" ** L.ones(2),
 "and_float": lambda L: L.ones(2) & L.ones(2),
 "or_float": lambda L: L.ones(2) | 1,
 "xor_float": lambda L: L.ones(2) ^ L.ones(2),
 "invert_float": lambda L: ~L.ones(2),
 "lshift_float": lambda L: L.ones(2) << 1,
 "neg_bool": lambda L: -L.tensor([True]),
 "sub_bool": lambda L: L.tensor([True]) - L.tensor([False]),
 "abs_str": lambda L: abs(L.ones(2)) + "x",
 "iadd_str": lambda L: L.ones(2).__iadd__("a"),
 "iadd_bcast": lambda L: L.ones(2).__iadd__(L.ones(3)),
 "iadd_float_to_int": lambda L: L.ones(2, dtype=L.int64).__iadd__(L.ones(2)),
 "imul_none": lambda L: L.ones(2).__imul__(None),
 "mod_str": lambda L: L.ones(2) % "a",
 "floordiv_none": lambda L: L.ones(2) // None,
 "len_0d": lambda L: len(L.tensor(1.)),
 "iter_0d": lambda L: iter(L.tensor(1.)),
 "int_multi": lambda L: int(L.ones(2)),
 "float_multi": lambda L: float(L.ones(2)),
 "index_multi": lambda L: [1, 2][L.ones(1)],
 "index_int_tensor_multi": lambda L: [1, 2][L.tensor([0, 1])],
 "hash_ok": lambda L: hash(L.ones(1)) and 1,
 "contains_str": lambda L: "a" in L.ones(2),
 "contains_tensor": lambda L: L.ones(1) in L.ones(2),
 "round_ndigits": lambda L: round(L.ones(2), 1),
 "format_multi": lambda L: format(L.ones(2), ".2f"),
 "format_0d": lambda L: format(L.tensor(1.5), ".2f"),
 "bool_empty": lambda L: bool(L.ones(0)),
 "setitem_str": lambda L: L.ones(2).__setitem__(0, "a"),
 "setitem_none": lambda L: L.ones(2).__setitem__(0, None),
 "setitem_list_bad": lambda L: L.ones(2).__setitem__(slice(None), [1, 2, 3]),
 "neg_list": lambda L: -L.tensor([[1], [2]]).tolist(),
 # --- indexing
 "index_float": lambda L: L.ones(3)[1.0],
 "index_float_slice": lambda L: L.ones(3)[0.5:2],
 "index_str": lambda L: L.ones(3)["a"],
 "index_too_many": lambda L: L.ones(3)[0, 0],
 "index_too_many_slice": lambda L: L.ones(3)[:, :],
 "index_neg_oob": lambda L: L.ones(3)[-4],
 "index_float_tensor": lambda L: L.ones(3)[L.tensor([0.])],
 "index_bool_shape": lambda L: L.ones(3)[L.tensor([True, False])],
 "index_list_oob": lambda L: L.ones(3)[[0, 5]],
 "index_none_ok": lambda L: L.ones(3)[None],
 "index_ellipsis2": lambda L: L.ones(3)[..., ...],
 "index_dict": lambda L: L.ones(3)[{}],
 "index_0d": lambda L: L.tensor(1.)[0],
 "index_slice_step0": lambda L: L.ones(3)[::0],
 "index_slice_neg_step": lambda L: L.ones(3)[::-1],
 "index_list_float": lambda L: L.ones(3)[[0.5]],
 "index_list_mixed": lambda L: L.ones(3)[[0, "a"]],
 "index_tensor_2idx_bcast": lambda L: L.ones(3, 3)[L.tensor([0, 1]), L.tensor([0, 1, 2])],
 "setitem_oob": lambda L: L.ones(3).__setitem__(5, 1.),
 "setitem_float_idx": lambda L: L.ones(3).__setitem__(1.0, 1.),
 "setitem_too_many": lambda L: L.ones(3).__setitem__((0, 0), 1.),
 # --- reductions
 "sum_dim_str": lambda L: L.ones(3).sum("a"),
 "sum_dim_float": lambda L: L.ones(3).sum(0.5),
 "sum_dim_dup_list": lambda L: L.ones(3, 3).sum([0, 0]),
 "sum_dim_list_oob": lambda L: L.ones(3, 3).sum([0, 3]),
 "sum_dtype_bad": lambda L: L.ones(3).sum(dtype="float"),
 "mean_dim_oob": lambda L: L.ones(3).mean(1),
 "mean_bool": lambda L: L.tensor([True]).mean(),
 "max_dim_oob": lambda L: L.ones(3).max(1),
 "max_two_tensors_bcast": lambda L: L.ones(3).max(L.ones(4)),
 "min_dim_str": lambda L: L.ones(3).min("x"),
 "argmax_dim_oob": lambda L: L.ones(3).argmax(2),
 "var_dim_oob": lambda L: L.ones(3).var(1),
 "var_int": lambda L: L.tensor([1, 2]).var(),
 "std_correction_str": lambda L: L.ones(3).std(correction="a"),
 "prod_dim_list": lambda L: L.ones(3).prod([0]),
 "logsumexp_nodim": lambda L: L.ones(3).logsumexp(),
 "logsumexp_oob": lambda L: L.ones(3).logsumexp(1),
 "norm_dim_oob": lambda L: L.ones(3).norm(dim=1),
 "all_dim_oob": lambda L: L.ones(3).all(1),
 "any_dim_oob": lambda L: L.ones(3).any(2),
 "cumsum_nodim": lambda L: L.ones(3).cumsum(),
 "cumprod_oob": lambda L: L.ones(3).cumprod(1),
 "sort_oob": lambda L: L.ones(3).sort(1),
 "argsort_oob": lambda L: L.ones(3).argsort(1),
 "topk_neg": lambda L: L.ones(3).topk(-1),
 "topk_dim_oob": lambda L: L.ones(3).topk(1, dim=1),
 "median_empty": lambda L: L.ones(0).median(),
 "mode_dim_oob": lambda L: L.ones(3).mode(1),
 "amax_empty": lambda L: L.ones(0).amax(),
 "amax_dup": lambda L: L.ones(3, 3).amax((0, 0)),
 "min_empty_dim": lambda L: L.ones(2, 0).min(1),
 "sum_empty_ok": lambda L: L.ones(0).sum(),
 "count_nonzero_oob": lambda L: L.ones(3).count_nonzero(1),
 "softmax_nodim": lambda L: F(L).softmax(L.ones(3)),
 "log_softmax_oob": lambda L: F(L).log_softmax(L.ones(3), 1),
 # --- join
 "cat_empty": lambda L: L.cat([]),
 "cat_mixed_dims": lambda L: L.cat([L.ones(2, 3), L.ones(3)]),
 "cat_0d": lambda L: L.cat([L.tensor(1.), L.tensor(2.)]),
 "cat_dim_oob": lambda L: L.cat([L.ones(2), L.ones(2)], 1),
 "cat_not_list": lambda L: L.cat(L.ones(2)),
 "cat_tensor_and_list": lambda L: L.cat([L.ones(2), [1.]]),
 "cat_none": lambda L: L.cat(None),
 "cat_dtype_mix_ok": lambda L: L.cat([L.ones(2), L.ones(2, dtype=L.int64)]),
 "cat_emptys_ok": lambda L: L.cat([L.ones(0), L.ones(2, 3)]),
 "stack_empty": lambda L: L.stack([]),
 "stack_dim_oob": lambda L: L.stack([L.ones(2), L.ones(2)], 3),
 "stack_0d_ok": lambda L: L.stack([L.tensor(1.), L.tensor(2.)]),
 "hstack_empty": lambda L: L.hstack([]),
 "vstack_mismatch": lambda L: L.vstack([L.ones(2), L.ones(3)]),
 "split_bad_sizes": lambda L: L.ones(5).split([2, 2]),
 "split_neg": lambda L: L.ones(5).split(-1),
 "chunk_neg": lambda L: L.ones(5).chunk(-1),
 "tensor_split_0": lambda L: L.ones(5).tensor_split(0),
 "unbind_oob": lambda L: L.ones(5).unbind(1),
 "broadcast_tensors_bad": lambda L: L.broadcast_tensors(L.ones(2), L.ones(3)),
 "meshgrid_2d": lambda L: L.meshgrid(L.ones(2, 2), indexing="ij"),
 "meshgrid_indexing": lambda L: L.meshgrid(L.ones(2), indexing="x"),
 # --- shape ops
 "reshape_two_neg": lambda L: L.ones(6).reshape(-1, -1),
 "reshape_neg2": lambda L: L.ones(6).reshape(-2, 3),
 "reshape_float": lambda L: L.ones(6).reshape(2.0, 3),
 "reshape_str": lambda L: L.ones(6).reshape("a"),
 "reshape_none": lambda L: L.ones(6).reshape(None),
 "reshape_empty_infer": lambda L: L.ones(0).reshape(-1, 0),
 "reshape_tensor_arg": lambda L: L.ones(6).reshape(L.tensor(6)),
 "view_noncontig": lambda L: L.ones(2, 3).t().view(6),
 "view_two_neg": lambda L: L.ones(6).view(-1, -1),
 "view_float": lambda L: L.ones(6).view(2.5, 3),
 "view_str": lambda L: L.ones(6).view("a"),
 "view_as_bad": lambda L: L.ones(6).view_as(L.ones(4)),
 "expand_fewer": lambda L: L.ones(2, 3).expand(3),
 "expand_bad": lambda L: L.ones(2, 3).expand(4, 3),
 "expand_neg_new": lambda L: L.ones(3).expand(-1, 3),
 "expand_float": lambda L: L.ones(3).expand(2.0, 3),
 "expand_as_bad": lambda L: L.ones(3).expand_as(L.ones(4)),
 "permute_few": lambda L: L.ones(2, 3).permute(0),
 "permute_oob": lambda L: L.ones(2, 3).permute(0, 2),
 "permute_many": lambda L: L.ones(2, 3).permute(0, 1, 2),
 "permute_float": lambda L: L.ones(2, 3).permute(0., 1.),
 "transpose_float": lambda L: L.ones(2, 3).transpose(0., 1),
 "transpose_missing": lambda L: L.ones(2, 3).transpose(0),
 "t_3d": lambda L: L.ones(2, 3, 4).t(),
 "T_3d_ok": lambda L: L.ones(2, 3).T,
 "mT_1d": lambda L: L.ones(2).mT,
 "squeeze_float": lambda L: L.ones(2, 1).squeeze(1.),
 "squeeze_tuple_oob": lambda L: L.ones(2, 1).squeeze((0, 5)),
 "squeeze_tuple_dup": lambda L: L.ones(2, 1).squeeze((1, 1)),
 "unsqueeze_neg_oob": lambda L: L.ones(2).unsqueeze(-3),
 "unsqueeze_none": lambda L: L.ones(2).unsqueeze(None),
 "unsqueeze_missing": lambda L: L.ones(2).unsqueeze(),
 "flatten_bad_order": lambda L: L.ones(2, 3, 4).flatten(2, 1),
 "flatten_oob": lambda L: L.ones(2, 3).flatten(0, 5),
 "flatten_0d_ok": lambda L: L.tensor(1.).flatten(),
 "unflatten_bad": lambda L: L.ones(2, 6).unflatten(1, (4, 2)),
 "unflatten_two_neg": lambda L: L.ones(2, 6).unflatten(1, (-1, -1)),
 "unflatten_empty": lambda L: L.ones(2, 6).unflatten(1, ()),
 "unflatten_oob": lambda L: L.ones(2, 6).unflatten(3, (2, 3)),
 "movedim_dup": lambda L: L.ones(2, 3).movedim((0, 0), (0, 1)),
 "movedim_len": lambda L: L.ones(2, 3).movedim((0, 1), (0,)),
 "swapaxes_oob": lambda L: L.ones(2, 3).swapaxes(0, 2),
 "repeat_neg": lambda L: L.ones(2).repeat(-1),
 "repeat_interleave_neg": lambda L: L.ones(2).repeat_interleave(-1),
 "tile_neg": lambda L: L.ones(2).tile(-1),
 "narrow_neg_len": lambda L: L.ones(3).narrow(0, 0, -1),
 "narrow_start_oob": lambda L: L.ones(3).narrow(0, 5, 0),
 "narrow_0d": lambda L: L.tensor(1.).narrow(0, 0, 1),
 "select_0d": lambda L: L.tensor(1.).select(0, 0),
 "roll_shifts_len": lambda L: L.ones(2, 3).roll((1, 1), (0,)),
 "roll_nodim_ok": lambda L: L.ones(2, 3).roll(1),
 "flip_dup": lambda L: L.ones(2, 3).flip(0, 0),
 "diagonal_same": lambda L: L.ones(2, 3).diagonal(0, 0, 0),
 "triu_1d": lambda L: L.ones(3).triu(),
 "unfold_step0": lambda L: L.ones(5).unfold(0, 2, 0),
 "unfold_size_neg": lambda L: L.ones(5).unfold(0, -1, 1),
 "unfold_dim_oob": lambda L: L.ones(5).unfold(1, 2, 1),
 "unfold_ok": lambda L: L.ones(2, 5).unfold(1, 2, 1),
 "unfold_0d_ok": lambda L: L.tensor(1.).unfold(0, 1, 1),
 "view_dtype_ok": lambda L: L.ones(4).view(L.int32),
 "view_dtype_bigger": lambda L: L.ones(4, dtype=L.int8).view(L.float32),
 "view_dtype_half": lambda L: L.ones(3).view(L.float16),
 "view_dtype_0d": lambda L: L.tensor(1.).view(L.float16),
 "view_dtype_noncontig": lambda L: L.ones(4, 4).t().view(L.float64),
 "contiguous_fmt": lambda L: L.ones(2).contiguous(memory_format="x"),
 # --- creation
 "zeros_neg": lambda L: L.zeros(-1),
 "zeros_float": lambda L: L.zeros(2.5),
 "zeros_str": lambda L: L.zeros("a"),
 "zeros_none": lambda L: L.zeros(None),
 "zeros_dtype_str": lambda L: L.zeros(2, dtype="float32"),
 "ones_list_neg": lambda L: L.ones([2, -3]),
 "empty_neg": lambda L: L.empty(-2),
 "full_neg": lambda L: L.full((-1,), 1.),
 "full_none": lambda L: L.full((2,), None),
 "rand_neg": lambda L: L.rand(-1),
 "randn_int_dtype": lambda L: L.randn(2, dtype=L.int64),
 "rand_int_dtype": lambda L: L.rand(2, dtype=L.int64),
 "randint_high0": lambda L: L.randint(0, (3,)),
 "randint_float_size": lambda L: L.randint(5, 3),
 "randperm_neg": lambda L: L.randperm(-1),
 "arange_neg_dir": lambda L: L.arange(5, 0, 1),
 "arange_str": lambda L: L.arange("a"),
 "arange_inf": lambda L: L.arange(0, float("inf")),
 "arange_nan": lambda L: L.arange(float("nan")),
 "linspace_str": lambda L: L.linspace(0, 1, "a"),
 "linspace_float_steps": lambda L: L.linspace(0, 1, 2.5),
 "logspace_neg": lambda L: L.logspace(0, 1, -1),
 "eye_float": lambda L: L.eye(2.5),
 "eye_m_neg": lambda L: L.eye(2, -1),
 "tensor_str": lambda L: L.tensor("a"),
 "tensor_list_str": lambda L: L.tensor(["a"]),
 "tensor_dict": lambda L: L.tensor({}),
 "tensor_mixed_list": lambda L: L.tensor([1, None]),
 "tensor_list_tensors": lambda L: L.tensor([L.ones(2), L.ones(2)]),
 "tensor_list_tensors_bad": lambda L: L.tensor([L.ones(2), L.ones(3)]),
 "tensor_bool_dtype_str": lambda L: L.tensor([1], dtype="int"),
 "tensor_big_int": lambda L: L.tensor([2 ** 70]),
 "tensor_uint8_neg": lambda L: L.tensor([-1], dtype=L.uint8),
 "tensor_set": lambda L: L.tensor({1, 2}),
 "zeros_like_str": lambda L: L.zeros_like("a"),
 "zeros_like_list": lambda L: L.zeros_like([1, 2]),
 "ones_like_none": lambda L: L.ones_like(None),
 "full_like_str": lambda L: L.full_like(L.ones(2), "a"),
 "from_numpy_list": lambda L: L.from_numpy([1, 2]),
 "from_numpy_obj": lambda L: L.from_numpy(__import__("numpy").array(["a"])),
 "as_tensor_str": lambda L: L.as_tensor("a"),
 "empty_like_int": lambda L: L.empty_like(3),
 "tensor_requires_grad_int": lambda L: L.tensor([1, 2], requires_grad=True),
 "zeros_rg_int": lambda L: L.zeros(2, dtype=L.int64, requires_grad=True),
 "manual_seed_str": lambda L: L.manual_seed("a"),
 "manual_seed_neg_big": lambda L: L.manual_seed(-2 ** 70),
 "manual_seed_float": lambda L: L.manual_seed(1.5),
 # --- elementwise ops
 "add_alpha_float_int": lambda L: L.tensor([1]).add(L.tensor([1]), alpha=0.5),
 "add_alpha_str": lambda L: L.ones(2).add(L.ones(2), alpha="a"),
 "sub_bool_tensors": lambda L: L.sub(L.tensor([True]), L.tensor([True])),
 "clamp_min_gt_max_ok": lambda L: L.ones(2).clamp(2, 1),
 "clamp_str": lambda L: L.ones(2).clamp("a"),
 "clamp_tensor_bcast": lambda L: L.ones(2).clamp(L.ones(3)),
 "where_cond_float": lambda L: L.where(L.ones(2), L.ones(2), L.ones(2)),
 "where_one_arg": lambda L: L.where(L.tensor([True, False])),
 "lerp_weight_str": lambda L: L.ones(2).lerp(L.ones(2), "a"),
 "lerp_int": lambda L: L.tensor([1]).lerp(L.tensor([2]), 0.5),
 "pow_int_neg_tensor": lambda L: L.tensor([2]).pow(L.tensor([-1])),
 "bitwise_and_float": lambda L: L.bitwise_and(L.ones(2), L.ones(2)),
 "logical_and_bcast": lambda L: L.logical_and(L.ones(2), L.ones(3)),
 "atan2_bcast": lambda L: L.atan2(L.ones(2), L.ones(3)),
 "fmod_int_zero": lambda L: L.fmod(L.tensor([1]), 0),
 "remainder_int_zero_tensor": lambda L: L.remainder(L.tensor([1]), L.tensor([0])),
 "div_rounding_bad": lambda L: L.ones(2).div(2, rounding_mode="bogus"),
 "div_int_zero_ok": lambda L: L.tensor([1]) / 0,
 "floor_divide_int_zero_tensor": lambda L: L.tensor([1]) // L.tensor([0]),
 "exp_str": lambda L: L.exp("a"),
 "exp_list": lambda L: L.exp([1.]),
 "exp_none": lambda L: L.exp(None),
 "sin_int_ok": lambda L: L.sin(L.tensor([1])),
 "abs_bool": lambda L: L.abs(L.tensor([True])),
 "sigmoid_bool": lambda L: L.sigmoid(L.tensor([True])),
 "relu_bool": lambda L: L.relu(L.tensor([True])),
 "neg_bool2": lambda L: L.neg(L.tensor([True])),
 "sign_bool_ok": lambda L: L.sign(L.tensor([True])),
 "floor_int_ok": lambda L: L.floor(L.tensor([1])),
 "round_decimals_int": lambda L: L.round(L.tensor([1]), decimals=1),
 "erfinv_int": lambda L: L.erfinv(L.tensor([0])),
 "reciprocal_int": lambda L: L.reciprocal(L.tensor([0])),
 "mul_out_kw": lambda L: L.mul(L.ones(2), L.ones(2), out=L.ones(3)),
 "add_out_int": lambda L: L.add(L.ones(2), L.ones(2), out=L.ones(2, dtype=L.int64)),
 "maximum_bcast": lambda L: L.maximum(L.ones(2), L.ones(3)),
 "maximum_scalar": lambda L: L.maximum(L.ones(2), 1.),
 "isclose_bcast": lambda L: L.isclose(L.ones(2), L.ones(3)),
 "allclose_bcast": lambda L: L.allclose(L.ones(2), L.ones(3)),
 "equal_shape_ok": lambda L: L.equal(L.ones(2), L.ones(3)),
 "addmm_shape": lambda L: L.addmm(L.ones(2, 2), L.ones(2, 3), L.ones(4, 2)),
 "matmul_3d_bad": lambda L: L.matmul(L.ones(2, 2, 3), L.ones(3, 2, 2)),
 "mv_shape": lambda L: L.mv(L.ones(2, 3), L.ones(4)),
 "mm_int_float": lambda L: L.mm(L.ones(2, 2), L.ones(2, 2, dtype=L.int64)),
 "matmul_int_float": lambda L: L.ones(2, 2) @ L.ones(2, 2, dtype=L.int64),
 "matmul_bool": lambda L: L.ones(2, 2, dtype=L.bool) @ L.ones(2, 2, dtype=L.bool),
 "inplace_leaf_rg": lambda L: L.ones(2, requires_grad=True).add_(1),
 "inplace_int_float": lambda L: L.ones(2, dtype=L.int64).mul_(1.5),
 "inplace_bool_int": lambda L: L.ones(2, dtype=L.bool).add_(1),
 "fill_str": lambda L: L.ones(2).fill_("a"),
 "fill_tensor_multi": lambda L: L.ones(2).fill_(L.ones(2)),
 "zero_int_ok": lambda L: L.ones(2, dtype=L.int64).zero_(),
 "copy_bcast": lambda L: L.ones(2).copy_(L.ones(3)),
 "copy_list": lambda L: L.ones(2).copy_([1., 2.]),
 "masked_fill_float_mask": lambda L: L.ones(2).masked_fill(L.ones(2), 0.),
 "masked_fill_tensor_val": lambda L: L.ones(2).masked_fill(L.ones(2, dtype=L.bool), L.ones(2)),
 "masked_select_float": lambda L: L.ones(2).masked_select(L.ones(2)),
 "index_select_float": lambda L: L.ones(2).index_select(0, L.tensor([0.])),
 "index_select_2d": lambda L: L.ones(2).index_select(0, L.tensor([[0]])),
 "gather_float": lambda L: L.ones(2).gather(0, L.tensor([0.])),
 "gather_rank": lambda L: L.ones(2, 2).gather(0, L.tensor([0])),
 "scatter_float_idx": lambda L: L.zeros(2).scatter(0, L.tensor([0.]), 1.),
 "scatter_reduce_bad": lambda L: L.zeros(2).scatter_reduce(0, L.tensor([0]), L.ones(1), "bogus"),
 "index_add_shape": lambda L: L.zeros(3).index_add(0, L.tensor([0]), L.ones(2)),
 "index_add_oob": lambda L: L.zeros(3).index_add(0, L.tensor([5]), L.ones(1)),
 "index_put_oob": lambda L: L.zeros(3).index_put((L.tensor([5]),), L.ones(1)),
 "take_oob": lambda L: L.zeros(3).take(L.tensor([5])),
 "nonzero_ok": lambda L: L.zeros(3).nonzero(),
 "one_hot_float": lambda L: F(L).one_hot(L.ones(2)),
 "one_hot_small": lambda L: F(L).one_hot(L.tensor([3]), 2),
 "one_hot_neg": lambda L: F(L).one_hot(L.tensor([-1])),
 # --- functional misc
 "linear_int": lambda L: F(L).linear(L.ones(2, 3, dtype=L.int64), L.ones(2, 3)),
 "linear_bias_shape": lambda L: F(L).linear(L.ones(2, 3), L.ones(4, 3), L.ones(5)),
 "linear_weight_3d": lambda L: F(L).linear(L.ones(2, 3), L.ones(4, 3, 1)),
 "conv2d_int": lambda L: F(L).conv2d(L.ones(1, 1, 3, 3, dtype=L.int64), L.ones(1, 1, 2, 2)),
 "conv2d_bias_shape": lambda L: F(L).conv2d(L.ones(1, 1, 3, 3), L.ones(2, 1, 2, 2), L.ones(3)),
 "conv2d_weight_3d": lambda L: F(L).conv2d(L.ones(1, 1, 3, 3), L.ones(1, 2, 2)),
 "conv2d_groups_bad": lambda L: F(L).conv2d(L.ones(1, 4, 3, 3), L.ones(3, 2, 2, 2), groups=2),
 "dropout_p": lambda L: F(L).dropout(L.ones(2), p=1.5),
 "dropout_pneg": lambda L: F(L).dropout(L.ones(2), p=-1),
 "dropout_int": lambda L: F(L).dropout(L.ones(2, dtype=L.int64), p=0.5),
 "dropout2d_p": lambda L: F(L).dropout2d(L.ones(1, 2, 2, 2), p=1.5),
 "gelu_approx": lambda L: F(L).gelu(L.ones(2), approximate="bogus"),
 "softmax_dtype_int": lambda L: F(L).softmax(L.ones(2), 0, dtype=L.int64),
 "layer_norm_weight": lambda L: F(L).layer_norm(L.ones(2, 3), (3,), weight=L.ones(4)),
 "layer_norm_int": lambda L: F(L).layer_norm(L.ones(2, 3, dtype=L.int64), (3,)),
 "layer_norm_intshape": lambda L: F(L).layer_norm(L.ones(2, 3), 3),
 "batch_norm_rm_shape": lambda L: F(L).batch_norm(L.ones(2, 3), L.zeros(4), L.ones(4)),
 "batch_norm_train_one": lambda L: F(L).batch_norm(L.ones(1, 3), None, None, training=True),
 "group_norm_div": lambda L: F(L).group_norm(L.ones(2, 4, 3), 3),
 "normalize_p": lambda L: F(L).normalize(L.ones(2, 3), dim=3),
 "embedding_float": lambda L: F(L).embedding(L.ones(2), L.ones(3, 2)),
 "embedding_weight_1d": lambda L: F(L).embedding(L.tensor([0]), L.ones(3)),
 "pad_odd": lambda L: F(L).pad(L.ones(2, 3), (1,)),
 "pad_too_long": lambda L: F(L).pad(L.ones(3), (1, 1, 1, 1)),
 "pad_mode_bad": lambda L: F(L).pad(L.ones(1, 2, 3), (1, 1), mode="bogus"),
 "pad_reflect_big": lambda L: F(L).pad(L.ones(1, 2, 3), (3, 3), mode="reflect"),
 "pad_float": lambda L: F(L).pad(L.ones(2, 3), (1.5, 1)),
 "pad_neg_exact": lambda L: F(L).pad(L.ones(2, 3), (-3, 0)),
 "pad_neg_both": lambda L: F(L).pad(L.ones(2, 3), (-2, -2)),
 "pad_reflect_1d": lambda L: F(L).pad(L.ones(3), (1, 1), mode="reflect"),
 "pad_circular_big": lambda L: F(L).pad(L.ones(1, 1, 3), (4, 0), mode="circular"),
 "pad_replicate_neg": lambda L: F(L).pad(L.ones(1, 1, 3), (-1, 0), mode="replicate"),
 "pad_value_str": lambda L: F(L).pad(L.ones(2), (1, 1), value="a"),
 "interp_neg_size": lambda L: F(L).interpolate(L.ones(1, 1, 4), size=-1),
 "interp_zero_size": lambda L: F(L).interpolate(L.ones(1, 1, 4), size=0),
 "interp_zero_scale": lambda L: F(L).interpolate(L.ones(1, 1, 4), scale_factor=0.1),
 "interp_2d_input": lambda L: F(L).interpolate(L.ones(4, 4), size=2),
 "interp_mode_bad": lambda L: F(L).interpolate(L.ones(1, 1, 4), size=2, mode="bogus"),
 "interp_size_len": lambda L: F(L).interpolate(L.ones(1, 1, 4, 4), size=(2, 2, 2)),
 "interp_scale_len": lambda L: F(L).interpolate(L.ones(1, 1, 4, 4), scale_factor=(2., 2., 2.)),
 "interp_bilinear_3d": lambda L: F(L).interpolate(L.ones(1, 1, 4), size=2, mode="bilinear"),
 "interp_int": lambda L: F(L).interpolate(L.ones(1, 1, 4, dtype=L.int64), size=2, mode="linear"),
 "max_pool_int": lambda L: F(L).max_pool2d(L.ones(1, 1, 4, 4, dtype=L.int64), 2),
 "avg_pool1d_int": lambda L: F(L).avg_pool1d(L.ones(1, 1, 4, dtype=L.int64), 2),
 "avg_pool_bool": lambda L: F(L).avg_pool2d(L.ones(1, 1, 4, 4, dtype=L.bool), 2),
 "avg_pool_divisor0": lambda L: F(L).avg_pool2d(L.ones(1, 1, 4, 4), 2, divisor_override=0),
 "adaptive_avg_int": lambda L: F(L).adaptive_avg_pool2d(L.ones(1, 1, 4, 4, dtype=L.int64), 2),
 "mse_bool": lambda L: F(L).mse_loss(L.ones(3, dtype=L.bool), L.ones(3, dtype=L.bool)),
 "mse_int_float": lambda L: F(L).mse_loss(L.ones(3, dtype=L.int64), L.ones(3)),
 "mse_float_int": lambda L: F(L).mse_loss(L.ones(3), L.ones(3, dtype=L.int64)),
 "l1_int_float": lambda L: F(L).l1_loss(L.ones(3), L.ones(3, dtype=L.int64)),
 "smooth_l1_int": lambda L: F(L).smooth_l1_loss(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64)),
 "huber_int": lambda L: F(L).huber_loss(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64)),
 "relu_str": lambda L: F(L).relu("a"),
 "relu_list": lambda L: F(L).relu([1.]),
 "sigmoid_list": lambda L: L.sigmoid([1.]),
 "tanh_none": lambda L: L.tanh(None),
 "softmax_list": lambda L: F(L).softmax([1.], 0),
 "cross_entropy_list": lambda L: F(L).cross_entropy([[1.]], [0]),
 "leaky_relu_int": lambda L: F(L).leaky_relu(L.tensor([-1, 1])),
 "elu_int": lambda L: F(L).elu(L.tensor([-1, 1])),
 "silu_int": lambda L: F(L).silu(L.tensor([-1, 1])),
 "softplus_int": lambda L: F(L).softplus(L.tensor([-1, 1])),
 "hardtanh_int": lambda L: F(L).hardtanh(L.tensor([-1, 1])),
 "log_softmax_dtype": lambda L: F(L).log_softmax(L.tensor([1, 2]), 0, dtype=L.float32),
}

# PyTorch behaviour not reproduced yet (missing features or argument checks; see the report of issue 9)
KNOWN = set(['ConstantLR_factor', 'CosineWR_T0', 'CosineWR_Tmult', 'CosineWR_float', 'CyclicLR_mode', 'PolyLR_str', 'WRS_2d', 'add_out_int', 'broadcast_tensors_bad', 'clamp_str', 'contains_str', 'contiguous_fmt', 'copy_list', 'count_nonzero_oob', 'erfinv_int', 'fill_str', 'hstack_empty', 'iadd_str', 'imul_none', 'index_list_float', 'index_str', 'lerp_weight_str', 'lshift_float', 'manual_seed_neg_big', 'meshgrid_2d', 'meshgrid_indexing', 'mul_out_kw', 'rand_int_dtype', 'randn_int_dtype', 'repeat_interleave_neg', 'scatter_reduce_bad', 'setitem_list_bad', 'setitem_none', 'setitem_str', 'std_correction_str', 'sum_dtype_bad', 'tensor_big_int', 'tensor_bool_dtype_str', 'tensor_list_tensors', 'zeros_dtype_str'])

# cases whose message must start with torch's (first line, first 60 characters)
TEXT = set(['Adagrad_iav', 'Adagrad_lr', 'Adagrad_lr_decay', 'AdamW_beta', 'AdamW_wd_neg', 'Adam_beta0', 'Adam_beta1', 'Adam_beta_len', 'Adam_eps_neg', 'Adam_lr_neg', 'Adam_wd_neg', 'AdaptiveAvg_neg', 'AdaptiveAvg_rank', 'AvgPool2d_k0_call', 'AvgPool2d_rank', 'BCELoss_red', 'BatchNorm1d_float', 'BatchNorm1d_one', 'BatchNorm1d_rank', 'BatchNorm2d_chan', 'BatchNorm2d_int', 'BatchNorm2d_neg', 'BatchNorm2d_rank', 'BatchSampler_bs0', 'BatchSampler_drop', 'Bilinear_neg', 'CELoss_red', 'Conv1d_chan', 'Conv1d_rank', 'Conv2d_chan', 'Conv2d_groups', 'Conv2d_groups0', 'Conv2d_groups_out', 'Conv2d_kneg', 'Conv2d_list', 'Conv2d_neg_in', 'Conv2d_none', 'Conv2d_padmode', 'Conv2d_rank', 'Conv2d_rank5', 'Conv2d_same_stride', 'Conv2d_small', 'ConvT2d_chan', 'ConvT2d_groups', 'DL_batch_sampler_bs', 'DL_batch_sampler_drop', 'DL_batch_sampler_shuffle', 'DL_bs0', 'DL_bsfloat', 'DL_bsneg', 'DL_bsstr', 'DL_next_oob', 'DL_persistent', 'DL_prefetch', 'DL_sampler_shuffle', 'DL_timeout', 'DL_workers_neg', 'Dropout2d_p', 'Dropout_int', 'Dropout_p', 'Dropout_pneg', 'Dropout_pstr', 'ELU_str', 'Embedding_bool', 'Embedding_float_idx', 'Embedding_from_pre_1d', 'Embedding_list', 'Embedding_neg', 'Embedding_neg_idx', 'Embedding_negdim', 'Embedding_oob', 'Embedding_pad_neg_oob', 'Embedding_pad_oob', 'Embedding_weight_shape', 'Flatten_bad', 'GELU_approx', 'GELU_int', 'GroupNorm_0', 'GroupNorm_rank', 'LambdaLR_len', 'LambdaLR_notcall', 'LayerNorm_int', 'LayerNorm_neg', 'LayerNorm_shape', 'LeakyReLU_str', 'LinearLR_end', 'LinearLR_factor', 'Linear_f64', 'Linear_float', 'Linear_int', 'Linear_kw', 'Linear_list', 'Linear_neg', 'Linear_neg_out', 'Linear_no_args', 'Linear_none', 'Linear_numpy', 'Linear_str', 'Linear_str_in', 'Linear_two_args', 'Linear_wrong_feat', 'MHA_heads', 'MHA_shape', 'MSELoss_red', 'MaxPool2d_k0_call', 'MaxPool2d_rank', 'MaxPool2d_small', 'ModuleDict_bad', 'ModuleDict_key', 'ModuleList_idx', 'ModuleList_str', 'NLLLoss_red', 'OneCycle_anneal', 'OneCycle_pct', 'OneCycle_total', 'OneCycle_total0', 'Plateau_factor', 'Plateau_mode', 'Plateau_thr', 'RMSprop_alpha', 'RMSprop_eps', 'RMSprop_mom', 'RandomSampler_n0', 'RandomSampler_repl', 'ReLU_bool', 'ReLU_list', 'ReLU_str', 'SGD_dup_groups', 'SGD_empty', 'SGD_group_noparams', 'SGD_int_param', 'SGD_lr_neg', 'SGD_lr_str', 'SGD_mom_neg', 'SGD_nesterov', 'SGD_none', 'SGD_nonleaf', 'SGD_tensor_params', 'SGD_unknown_kw', 'SGD_wd_neg', 'Sched_last_epoch', 'SequentialLR_empty', 'Sequential_call_bad', 'Sequential_idx', 'Sequential_str', 'Softmax_dim_call', 'Softmax_int', 'StepLR_none', 'StepLR_notopt', 'Subset_idx', 'TensorDataset_size', 'TransformerEnc_heads', 'Unflatten_bad', 'WRS_n0', 'abs_bool', 'adaptive_avg_int', 'add_alpha_float_int', 'add_alpha_str', 'add_module_attr', 'add_module_dot', 'add_module_empty', 'add_module_int', 'add_module_notmod', 'add_param_group_dup', 'add_param_group_notdict', 'addmm_shape', 'all_dim_oob', 'allclose_bcast', 'and_float', 'any_dim_oob', 'apply_notcall', 'arange_inf', 'arange_nan', 'arange_neg_dir', 'argmax_dim_oob', 'argsort_oob', 'as_tensor_str', 'atan2_bcast', 'avg_pool_bool', 'avg_pool_divisor0', 'batch_norm_rm_shape', 'batch_norm_train_one', 'bce_int_target', 'bce_oob', 'bce_reduction', 'bcelogits_reduction', 'bcelogits_shape', 'bitwise_and_float', 'cat_0d', 'cat_dim_oob', 'cat_empty', 'cat_mixed_dims', 'cat_not_list', 'cat_tensor_and_list', 'ce_0d', 'ce_float_target_shape', 'ce_int_input', 'ce_reduction', 'ce_smooth', 'ce_target_float1d', 'ce_target_oob', 'ce_weight_shape', 'chunk_neg', 'clamp_tensor_bcast', 'conv2d_bias_shape', 'conv2d_groups_bad', 'conv2d_weight_3d', 'copy_bcast', 'cross_entropy_list', 'cuda_call', 'cumprod_oob', 'diagonal_same', 'div_rounding_bad', 'dropout2d_p', 'dropout_int', 'dropout_p', 'dropout_pneg', 'elu_int', 'embedding_float', 'embedding_weight_1d', 'empty_like_int', 'empty_neg', 'exp_list', 'exp_none', 'exp_str', 'expand_as_bad', 'expand_bad', 'expand_fewer', 'expand_float', 'expand_neg_new', 'eye_float', 'eye_m_neg', 'fill_tensor_multi', 'flatten_bad_order', 'flatten_oob', 'float_multi', 'floor_divide_int_zero_tensor', 'fmod_int_zero', 'format_multi', 'from_numpy_list', 'full_neg', 'full_none', 'gather_float', 'gather_rank', 'ge_str', 'gelu_approx', 'group_norm_div', 'huber_delta', 'huber_int', 'iadd_bcast', 'index_add_oob', 'index_dict', 'index_float', 'index_float_slice', 'index_float_tensor', 'index_int_tensor_multi', 'index_list_oob', 'index_multi', 'index_neg_oob', 'index_put_oob', 'index_select_2d', 'index_select_float', 'index_slice_neg_step', 'index_too_many', 'index_too_many_slice', 'inplace_bool_int', 'inplace_int_float', 'inplace_leaf_rg', 'int_multi', 'interp_2d_input', 'interp_bilinear_3d', 'interp_int', 'interp_mode_bad', 'interp_neg_size', 'interp_scale_len', 'interp_size_len', 'interp_zero_scale', 'interp_zero_size', 'isclose_bcast', 'iter_0d', 'kl_reduction', 'l1_int', 'l1_reduction', 'l1_shape', 'layer_norm_int', 'layer_norm_intshape', 'leaky_relu_int', 'len_0d', 'linear_bias_shape', 'linear_int', 'linear_weight_3d', 'linspace_float_steps', 'linspace_str', 'load_sd_list_value', 'load_sd_missing', 'load_sd_notdict', 'load_sd_nottensor', 'load_sd_shape', 'load_sd_unexpected', 'log_softmax_oob', 'logical_and_bcast', 'logspace_neg', 'logsumexp_oob', 'lt_none', 'mT_1d', 'manual_seed_str', 'masked_fill_float_mask', 'masked_fill_tensor_val', 'masked_select_float', 'matmul_3d_bad', 'matmul_bool', 'matmul_int_float', 'max_dim_oob', 'max_two_tensors_bcast', 'maximum_bcast', 'maximum_scalar', 'mean_bool', 'mean_dim_oob', 'min_empty_dim', 'mm_int_float', 'mode_dim_oob', 'mse_bool', 'mse_reduction', 'mse_shape', 'mv_shape', 'narrow_0d', 'narrow_neg_len', 'narrow_start_oob', 'neg_bool', 'neg_bool2', 'neg_list', 'nll_int', 'nll_reduction', 'norm_dim_oob', 'normalize_p', 'one_hot_float', 'one_hot_neg', 'one_hot_small', 'ones_device', 'ones_like_none', 'ones_list_neg', 'opt_load_bad', 'opt_load_badlen', 'opt_load_nokeys', 'or_float', 'pad_circular_big', 'pad_float', 'pad_mode_bad', 'pad_neg_both', 'pad_odd', 'pad_reflect_1d', 'pad_reflect_big', 'pad_too_long', 'pad_value_str', 'permute_few', 'permute_float', 'permute_many', 'permute_oob', 'rand_neg', 'randint_high0', 'random_split_frac', 'random_split_sum', 'randperm_neg', 'reg_buf_attr', 'reg_buf_dot', 'reg_buf_empty', 'reg_buf_existing', 'reg_buf_int', 'reg_buf_nottensor', 'reg_param_dot', 'reg_param_empty', 'reg_param_existing', 'reg_param_int', 'reg_param_nonleaf', 'reg_param_tensor', 'relu_bool', 'relu_list', 'relu_str', 'remainder_int_zero_tensor', 'requires_grad_str', 'reshape_float', 'reshape_neg2', 'reshape_none', 'reshape_str', 'reshape_two_neg', 'roll_shifts_len', 'round_decimals_int', 'round_ndigits', 'select_0d', 'setattr_param_over_tensor', 'setitem_float_idx', 'setitem_oob', 'setitem_too_many', 'sigmoid_list', 'silu_int', 'smooth_l1_beta', 'smooth_l1_int', 'softmax_dtype_int', 'softplus_int', 'sort_oob', 'split_bad_sizes', 'split_neg', 'squeeze_tuple_dup', 'squeeze_tuple_oob', 'stack_dim_oob', 'stack_empty', 'state_dict_args', 'sub_bool', 'sub_bool_tensors', 'sum_dim_list_oob', 'swapaxes_oob', 't_3d', 'take_oob', 'tanh_none', 'tensor_cuda', 'tensor_dict', 'tensor_list_str', 'tensor_mixed_list', 'tensor_requires_grad_int', 'tensor_set', 'tensor_split_0', 'tensor_str', 'tensor_to_cuda', 'to_cuda', 'to_int', 'topk_dim_oob', 'topk_neg', 'train_str', 'triu_1d', 'unbind_oob', 'unflatten_bad', 'unflatten_oob', 'unfold_dim_oob', 'unfold_size_neg', 'unfold_step0', 'unsqueeze_neg_oob', 'var_dim_oob', 'var_int', 'view_as_bad', 'view_dtype_0d', 'view_dtype_noncontig', 'view_float', 'view_noncontig', 'view_str', 'view_two_neg', 'vstack_mismatch', 'where_cond_float', 'xor_float', 'zeros_float', 'zeros_like_list', 'zeros_like_str', 'zeros_neg', 'zeros_none', 'zeros_rg_int', 'zeros_str'])


def _run(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(lib)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, e
    return "ok", tuple(r.shape) if hasattr(r, "shape") and not isinstance(r, type) else type(r).__name__


@pytest.mark.parametrize("name", sorted(set(CASES) - KNOWN))
def test_hostile_call(name):
    t, h = _run(torch, CASES[name]), _run(hookgrad, CASES[name])
    assert h[0] == t[0], f"torch {t}, hookgrad {h}"
    if t[0] == "ok":
        assert str(h[1]) == str(t[1]).replace("torch", "hookgrad") or h[1] == t[1], f"torch {t}, hookgrad {h}"
    else:
        assert type(h[1]).__module__ == "builtins" or type(h[1]).__module__.startswith("hookgrad")
        if name in TEXT:
            want = str(t[1]).split("\n")[0][:60].split("{")[0]       # a printed set's order is hash-random
            assert str(h[1]).startswith(want), f"torch {t[1]!r}, hookgrad {h[1]!r}"


# ------------------------------------------------------------------ state after a rejected call
def _expect_same_error(fn_t, fn_h):
    """Both calls raise, with the same exception type."""
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(Exception) as eh:
        fn_h()
    assert type(eh.value).__name__ == type(et.value).__name__, (et.value, eh.value)


def _params(m):
    # BatchNorm's num_batches_tracked: PyTorch counts some calls that then fail; hookgrad counts none
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items() if not k.endswith("num_batches_tracked")}


def _same_module(tm, hm):
    ts, hs = _params(tm), _params(hm)
    assert ts.keys() == hs.keys()
    for k in ts:
        np.testing.assert_allclose(hs[k], ts[k], rtol=1e-6, atol=1e-7, err_msg=k)


def _pair(ctor):
    torch.manual_seed(0)
    hookgrad.manual_seed(0)
    return ctor(torch), ctor(hookgrad)


BAD_CALLS = {
    "linear": (lambda L: L.nn.Linear(3, 2), [lambda L: L.ones(4, 5), lambda L: L.ones(4, 3, dtype=L.int64),
                                             lambda L: L.ones(4, 3, dtype=L.float64), lambda L: "a", lambda L: None]),
    "conv": (lambda L: L.nn.Conv2d(3, 4, 3), [lambda L: L.ones(1, 2, 5, 5), lambda L: L.ones(3, 5),
                                               lambda L: L.ones(1, 3, 2, 2), lambda L: L.ones(1, 3, 5, 5, dtype=L.int64)]),
    "batchnorm": (lambda L: L.nn.BatchNorm2d(3), [lambda L: L.ones(2, 4, 5, 5), lambda L: L.ones(1, 3, 1, 1),
                                                   lambda L: L.ones(2, 3, 2, 2, dtype=L.int64)]),
    "layernorm": (lambda L: L.nn.LayerNorm(3), [lambda L: L.ones(2, 4), lambda L: L.ones(2, 3, dtype=L.int64)]),
    "groupnorm": (lambda L: L.nn.GroupNorm(2, 4), [lambda L: L.ones(2, 6, 3), lambda L: L.ones(4)]),
    "embedding": (lambda L: L.nn.Embedding(3, 2), [lambda L: L.tensor([3]), lambda L: L.ones(2), lambda L: [0]]),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_module_unchanged_after_bad_input(name):
    ctor, bads = BAD_CALLS[name]
    tm, hm = _pair(ctor)
    tm.train()
    hm.train()
    for bad in bads:
        _expect_same_error(lambda: tm(bad(torch)), lambda: hm(bad(hookgrad)))
        _same_module(tm, hm)
    # still usable: a good forward and backward agree with torch
    x = np.random.RandomState(0).rand(*{"linear": (4, 3), "conv": (2, 3, 5, 5), "batchnorm": (2, 3, 4, 4),
                                        "layernorm": (2, 3), "groupnorm": (2, 4, 3)}.get(name, (1,))).astype(np.float32)
    if name == "embedding":
        to, ho = tm(torch.tensor([0, 2])), hm(hookgrad.tensor([0, 2]))
    else:
        to, ho = tm(torch.tensor(x)), hm(hookgrad.tensor(x))
    np.testing.assert_allclose(ho.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    to.sum().backward()
    ho.sum().backward()
    for (k, tp), (_, hp) in zip(tm.named_parameters(), hm.named_parameters()):
        np.testing.assert_allclose(hp.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    _same_module(tm, hm)


def test_module_api_misuse_leaves_module_unchanged():
    tm, hm = _pair(lambda L: L.nn.Sequential(L.nn.Linear(2, 2), L.nn.BatchNorm1d(2)))
    misuse = [
        lambda L, m: m.register_buffer("a.b", L.ones(1)),
        lambda L, m: m.register_buffer("", L.ones(1)),
        lambda L, m: m.register_buffer(1, L.ones(1)),
        lambda L, m: m.register_parameter("a.b", L.nn.Parameter(L.ones(1))),
        lambda L, m: m.register_parameter("x", L.ones(1)),
        lambda L, m: m.add_module("a.b", L.nn.ReLU()),
        lambda L, m: m.add_module("", L.nn.ReLU()),
        lambda L, m: m.add_module("x", 3),
        lambda L, m: m.requires_grad_("no"),
        lambda L, m: m.to("cuda"),
        lambda L, m: m.load_state_dict({"0.weight": L.ones(3, 3)}),
        lambda L, m: m.load_state_dict({k: L.zeros(v.shape) for k, v in m.state_dict().items()} | {"x": L.ones(1)}),
        lambda L, m: m.get_submodule("9"),
    ]
    for f in misuse:
        _expect_same_error(lambda: f(torch, tm), lambda: f(hookgrad, hm))
        assert [n for n, _ in hm.named_parameters()] == [n for n, _ in tm.named_parameters()]
        assert [n for n, _ in hm.named_buffers()] == [n for n, _ in tm.named_buffers()]
        assert [n for n, _ in hm.named_modules()] == [n for n, _ in tm.named_modules()]
        assert [p.requires_grad for p in hm.parameters()] == [p.requires_grad for p in tm.parameters()]
    # hookgrad's load_state_dict is atomic (docs/differences.md): its values are the ones before the calls
    hm2 = _pair(lambda L: L.nn.Sequential(L.nn.Linear(2, 2), L.nn.BatchNorm1d(2)))[1]
    _same_module(hm2, hm)


def _opt_pair():
    tp, hp = _pair(lambda L: L.nn.Parameter(L.arange(4.).reshape(2, 2)))
    to = torch.optim.SGD([tp], lr=0.1, momentum=0.9)
    ho = hookgrad.optim.SGD([hp], lr=0.1, momentum=0.9)
    tp.grad = torch.ones(2, 2)
    hp.grad = hookgrad.ones(2, 2)
    to.step()
    ho.step()
    return tp, hp, to, ho


def _opt_state(o):
    groups = [{k: (len(v) if k == "params" else v) for k, v in g.items()} for g in o.param_groups]
    state = {i: {k: (v.detach().numpy().copy() if hasattr(v, "numpy") else v) for k, v in s.items()}
             for i, s in enumerate(o.state.values())}
    return groups, state


def test_optimizer_unchanged_after_bad_calls():
    tp, hp, to, ho = _opt_pair()
    before = _opt_state(ho)
    bad = [
        lambda L, o, p: o.add_param_group({"params": [p]}),
        lambda L, o, p: o.add_param_group([p]),
        lambda L, o, p: o.load_state_dict({"state": {}, "param_groups": []}),
        lambda L, o, p: o.load_state_dict({"state": {}, "param_groups": [{"params": [0, 1]}]}),
        lambda L, o, p: o.load_state_dict({}),
    ]
    for f in bad:
        _expect_same_error(lambda: f(torch, to, tp), lambda: f(hookgrad, ho, hp))
        after = _opt_state(ho)
        assert after[0] == before[0]
        for i in before[1]:
            for k in before[1][i]:
                np.testing.assert_array_equal(after[1][i][k], before[1][i][k])
    # still usable: the next step agrees with torch's
    tp.grad = torch.ones(2, 2)
    hp.grad = hookgrad.ones(2, 2)
    to.step()
    ho.step()
    np.testing.assert_allclose(hp.detach().numpy(), tp.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("kw", [dict(lr=-1), dict(lr=0.1, momentum=-1), dict(lr=0.1, weight_decay=-1),
                                dict(lr=0.1, nesterov=True), dict(lr="a")])
def test_bad_optimizer_leaves_params_alone(kw):
    tp, hp = _pair(lambda L: L.nn.Parameter(L.ones(2)))
    _expect_same_error(lambda: torch.optim.SGD([tp], **kw), lambda: hookgrad.optim.SGD([hp], **kw))
    assert hp.grad is None and hp.requires_grad and hp.is_leaf
    np.testing.assert_array_equal(hp.detach().numpy(), tp.detach().numpy())


TENSOR_BAD = [
    lambda L, t: t.add_(L.ones(2, 3)),
    lambda L, t: t.__setitem__(7, 1.0),
    lambda L, t: t.__setitem__(slice(None), L.ones(4)),
    lambda L, t: t.copy_(L.ones(4)),
    lambda L, t: t.mul_(L.ones(5)),
    lambda L, t: t.div_(L.ones(2, 2)),
    lambda L, t: t.view(4, 4),
    lambda L, t: t.squeeze_(5) if hasattr(t, "squeeze_") else t.squeeze(5),
    lambda L, t: t.clamp_(),
    lambda L, t: t.index_add_(0, L.tensor([9]), L.ones(1)),
    lambda L, t: t.masked_fill_(L.ones(2, dtype=L.bool), 0.0),
    lambda L, t: t.scatter_(0, L.tensor([9]), 1.0),
    lambda L, t: t.pow_("a"),
    lambda L, t: t + "a",
    lambda L, t: t < None,
    lambda L, t: t @ 3,
]


@pytest.mark.parametrize("i", range(len(TENSOR_BAD)))
def test_tensor_unchanged_after_bad_call(i):
    f = TENSOR_BAD[i]
    tt, ht = torch.arange(3.), hookgrad.arange(3.)
    tv, hv = tt._version, ht._version
    _expect_same_error(lambda: f(torch, tt), lambda: f(hookgrad, ht))
    np.testing.assert_array_equal(ht.numpy(), tt.numpy())
    assert ht._version - hv == tt._version - tv == 0
    ht.add_(1)                                           # still usable
    tt.add_(1)
    np.testing.assert_array_equal(ht.numpy(), tt.numpy())


def test_view_dtype_shares_memory_and_version():
    t, h = torch.arange(4.), hookgrad.arange(4.)
    tv, hv = t.view(torch.int32), h.view(hookgrad.int32)
    np.testing.assert_array_equal(hv.numpy(), tv.numpy())
    t.add_(1)
    h.add_(1)
    np.testing.assert_array_equal(hv.numpy(), tv.numpy())
    assert hv._version == tv._version
    assert (hv._base is None) == (tv._base is None)
    same_t, same_h = t.requires_grad_().view(torch.float32), h.requires_grad_().view(hookgrad.float32)
    assert (same_h.requires_grad, same_h.grad_fn is None, same_h is h) == \
        (same_t.requires_grad, same_t.grad_fn is None, same_t is t)
    t2, h2 = torch.arange(4.).view(torch.float16), hookgrad.arange(4.).view(hookgrad.float16)
    np.testing.assert_array_equal(h2.numpy(), t2.numpy())
