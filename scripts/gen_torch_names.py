"""Write src/hookgrad/_coverage_names.py: torch's public names per namespace, a category for the names
hookgrad leaves out on purpose or for later, and the aten operators with their overload names.

Run with the test environment's torch, in a fresh interpreter (importing more of torch adds names to
``dir(torch)``; the library itself never imports torch):
    .venv/bin/python scripts/gen_torch_names.py [OUTPUT]
"""
import collections
import importlib
import os
import pprint
import re
import sys
import types

import torch

NAMESPACES = ["torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg",
              "torch.optim", "torch.optim.lr_scheduler", "torch.utils.data", "torch.autograd", "torch.distributions",
              "torch.fft", "torch.special", "torch.distributed"]
_NOT_API = {"TYPE_CHECKING", "annotations"}

# Families hookgrad leaves for later or out on purpose: (namespace regex, name regex, category).
# The first rule that matches a name decides; a name no rule matches has no category (everyday).
RULES = [
    (r".*", r"(?i)^(.*quantiz.*|q(u)?int\d.*|quint.*|qscheme|q_(scale|zero_point|per_channel.*)|int_repr|"
            r"per_(tensor|channel)_.*|choose_qparams.*|fake_quantize.*|fused_moving_avg_obs_fake_quant|"
            r"dequantize|qat|quantizable|intrinsic|ao|quantization)$",
     "non-goal: quantized tensors"),
    (r".*", r"(?i)^(.*sparse.*|spmm|smm|dsmm|hsmm|hspmm|saddmm|sspaddmm|(c?col|c?row|crow)_indices.*|"
            r"indices_copy|values_copy|to_dense|coalesce|is_coalesced|indices|values|sparse_dim|dense_dim|"
            r"_?nnz|ccol_indices|crow_indices|col_indices|row_indices|SparseAdam)$",
     "non-goal: sparse tensors"),
    (r".*", r"(?i)^(.*mkldnn.*|.*cudnn.*|.*miopen.*|fbgemm.*|.*vulkan.*|mps|xpu|mtia|cuda|ipu|hpu|"
            r"accelerator|.*_ipu_.*|.*_xla_.*|is_cuda|is_xpu|is_mps|is_mtia|is_ipu|is_xla|is_meta|is_vulkan|"
            r"is_maia|is_mkldnn|is_quantized|is_sparse|is_sparse_csr|is_nested|pin_memory|is_pinned|"
            r"share_memory_|is_shared|record_stream|cpp|Stream|Event|stream|"
            r"StreamObjType|DeviceObjType|get_device_module|OutOfMemoryError|AcceleratorError)$",
     "non-goal: devices other than the CPU"),
    (r".*", r"^(Sym.*|sym_.*|.*_sym_.*|SymInt|SymFloat|SymBool)$", "non-goal: symbolic shapes (torch.compile)"),
    (r"^torch$", r"^(Script.*|.*Type|Graph|Block|Node|Value|Use|FunctionSchema|Argument|ArgumentSpec|"
                 r"CompleteArgumentSpec|CompilationUnit|Code|ConcreteModuleType.*|ErrorReport|ExecutionPlan|"
                 r"GraphExecutorState|Gradient|IODescriptor|InferredType|JITException|LiteScriptModule|"
                 r"TracingState|StaticModule|DeepCopyMemoTable|FileCheck|CallStack|AliasDb|Capsule|"
                 r"parse_ir|parse_schema|parse_type_comment|merge_type_from_type_comment|import_ir_module.*|"
                 r"unify_type_list|PyTorchFile.*|.*SerializationStorageContext|DeserializationStorageContext|"
                 r"ScriptModuleSerializer|ThroughputBenchmark|Benchmark.*|LoggerBase|LockingLogger|NoopLogger|"
                 r"AggregationType|AVG|SUM|set_logger|DisableTorchFunction.*|DispatchKey.*|"
                 r"ExcludeDispatchKeyGuard|Tag|OperatorInfo|PRIVATE_OPS|classes|library|fx|export|compiler|"
                 r"package|cond|while_loop|compile|export)$",
     "non-goal: TorchScript, graph capture and dispatcher internals"),
    (r".*", r"^(complex(32|64|128)?|cfloat|cdouble|chalf|view_as_complex.*|view_as_real.*|polar|"
            r"is_complex|ComplexFloatStorage|ComplexDoubleStorage)$", "non-goal: complex tensors"),
    (r".*", r"^(float8_.*|float4_.*|u?int[1-7]|uint(16|32|64)|bits.*|BFloat16.*)$",
     "non-goal: dtypes NumPy has no arithmetic for"),
    (r".*", r"^(nested|jagged|.*nested.*|is_nested|NestedIOFunction)$", "non-goal: nested tensors"),
    # torch.distributed runs on MPI (issue 14); what it leaves out, and why
    (r"^torch\.distributed$", r"^(rpc|autograd|remote_device)$", "non-goal: RPC and distributed autograd"),
    (r"^torch\.distributed$", r"^(DeviceMesh|init_device_mesh|device_mesh)$", "non-goal: DTensor and device meshes"),
    (r"^torch\.distributed$", r"^(TCPStore|FileStore|rendezvous|register_rendezvous_handler)$",
     "non-goal: rendezvous (the MPI launcher starts the ranks and gives each its rank; HashStore and PrefixStore "
     "remain for code that uses a store itself)"),
    (r"^torch\.distributed$", r"^(ProcessGroupGloo|(AllToAll|AllreduceCoalesced|Allreduce|Barrier|Broadcast|Gather|"
                              r"Reduce|ReduceScatter|Scatter)Options)$",
     "non-goal: PyTorch's backend classes and their option structs (hookgrad's backend is MPI)"),
    (r"^torch\.distributed$", r"^(c10d_logger|logging_handlers|config|utils)$",
     "non-goal: torch.distributed's internal modules (its own logging, its feature flags, FSDP and DDP helpers)"),
    (r".*", r"^(.*autocast.*|amp|GradScaler)$", "non-goal: mixed-precision autocast"),
    (r".*", r"^(profiler|profiler_.*|Profiler.*|kineto_available|DeviceType|monitor)$",
     "non-goal: the PyTorch profiler"),
    (r"^torch\.utils\.data$", r"^(.*DataPipe.*|datapipes|DataChunk|functional_datapipe|graph|graph_settings|"
            r"guaranteed_datapipes_determinism|non_deterministic|argument_validation|runtime_validation.*)$",
     "non-goal: DataPipes (deprecated in PyTorch)"),
    (r"^torch\.Tensor$", r"^to_padded_tensor$", "non-goal: nested tensors"),
    (r"^torch$", r"^(fork|wait)$", "non-goal: TorchScript, graph capture and dispatcher internals"),
    (r".*", r"^(ScalingType|SwizzleType|scaled_mm|scaled_grouped_mm|grouped_mm)$",
     "non-goal: low-precision GPU matrix kernels"),
    (r"^torch$", r"^(native_(batch_norm|dropout|group_norm|layer_norm|norm)|batch_norm_(stats|elemt|"
                 r"backward_elemt|backward_reduce|gather_stats.*|update_stats)|norm_except_dim|segment_reduce)$",
     "non-goal: ATen kernel entry points (the public functions cover them)"),
    (r"^torch$", r"^(USE_GLOBAL_DEPS|USE_RTLD_GLOBAL_WITH_LIBTORCH|compiled_with_cxx11_abi|"
                 r"has_(lapack|mkl|openmp|spectral)|get_file_path|prepare_multiprocessing_environment|"
                 r"init_num_threads)$", "non-goal: how PyTorch's C++ library was built and is loaded"),
    # [lead] top-level ModuleDict/ParameterDict/BufferDict are TorchScript's classes (not nn's); masked is a prototype
    (r"^torch$", r"^(ModuleDict|ParameterDict|BufferDict)$",
     "non-goal: TorchScript, graph capture and dispatcher internals"),
    (r"^torch$", r"^masked$", "non-goal: masked tensors (a prototype API in PyTorch)"),
    (r"^torch\.(fft|special)$", r"^(common_args|factory_common_args|multi_dim_common)$",
     "non-goal: PyTorch's docstring templates"),
    (r"^torch\.special$", r"^(airy_ai|.*bessel.*|.*_polynomial_.*)$",
     "later: the rarer special functions (Airy, the Bessel functions but j0/j1, orthogonal polynomials)"),
    (r"^torch\.distributions$", r".*", "later: the distributions issue 12 did not list (mixtures, LKJ, Wishart, "
                                      "Multinomial, the remaining transforms and constraint registries)"),
]


def _public_module(mod):
    return mod.startswith("torch") and not any(p.startswith("_") for p in mod.split("."))


def _is_api(obj, name, path="torch"):
    """False for what namespace ``path`` merely imported: stdlib modules, typing helpers, functools.partial,
    ``torch`` itself inside a submodule, and, in a submodule, Python classes and functions defined in a
    public torch module outside it (``Tensor`` in nn.functional, ``Optimizer`` in lr_scheduler) and
    constants that are torch's own (``inf``). Builtins (torch._C's operators, which submodules such as
    nn.functional and linalg re-export as their API) count wherever they appear."""
    if name in _NOT_API:
        return False
    sub = path != "torch"
    if isinstance(obj, types.ModuleType):
        mod = obj.__name__
        return mod.startswith(path + ".") if sub else mod.startswith("torch.")
    mod = getattr(obj, "__module__", None)
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)) or mod == "typing":
        if isinstance(mod, str) and not mod.startswith("torch"):
            return False
        if (sub and isinstance(mod, str) and not isinstance(obj, types.BuiltinFunctionType)
                and _public_module(mod) and not (mod == path or mod.startswith(path + "."))):
            return False
        return True
    if sub and not callable(obj) and getattr(torch, name, None) is obj:
        return False
    return True


def public_names(path):
    if path == "torch.Tensor":
        obj = torch.Tensor
    else:
        obj = importlib.import_module(path)
    out = []
    for n in dir(obj):
        if n.startswith("_"):
            continue
        try:
            v = getattr(obj, n)
        except Exception:
            continue
        if path == "torch.Tensor" or _is_api(v, n, path):
            out.append(n)
    return sorted(out)


def category(path, name):
    for ns_re, name_re, cat in RULES:
        if re.match(ns_re, path) and re.match(name_re, name):
            return cat
    return None


def aten_ops():
    ops = collections.defaultdict(list)
    for s in torch._C._jit_get_all_schemas():
        if s.name.startswith("aten::"):
            ops[s.name[6:]].append(s.overload_name or "default")
    return {k: " ".join(v) for k, v in sorted(ops.items())}


def main(dest=None):
    """Write the data file (to ``dest`` if given: the test suite compares it with the package's file)."""
    names = {p: public_names(p) for p in NAMESPACES}
    cats = {p: {n: c for n in ns if (c := category(p, n))} for p, ns in names.items()}
    here = os.path.dirname(os.path.abspath(__file__))
    dest = dest or os.path.join(here, "..", "src", "hookgrad", "_coverage_names.py")
    with open(dest, "w") as f:
        f.write('"""torch 2.13\'s public names, per namespace, and the category of those hookgrad leaves out.\n\n'
                "Generated by scripts/gen_torch_names.py from torch " + torch.__version__.split("+")[0] +
                " (hookgrad never imports torch); do not edit by hand: edit the generator's RULES.\n"
                '"""\n')
        f.write(f"TORCH_VERSION = {torch.__version__.split('+')[0]!r}\n\n")
        f.write("# namespace -> space-separated public names (dir() without leading underscores)\n")
        f.write("NAMES = " + pprint.pformat({p: " ".join(ns) for p, ns in names.items()}, width=118,
                                           sort_dicts=False) + "\n\n")
        f.write("# namespace -> {name: 'later: ...' | 'non-goal: ...'}; a name not listed is everyday API\n")
        f.write("CATEGORY = " + pprint.pformat(cats, width=118, sort_dicts=False) + "\n\n")
        f.write("# aten operator -> space-separated overload names (torch.ops.aten.<op>.overloads())\n")
        f.write("ATEN_OVERLOADS = " + pprint.pformat(aten_ops(), width=118, sort_dicts=False) + "\n")
    print("wrote", os.path.normpath(dest))


if __name__ == "__main__":
    main(*sys.argv[1:2])
