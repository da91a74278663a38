"""The names packages import at load time (issue 22), against torch 2.13 CPU: the limited-support dtypes
(uint16/32/64, the float8 types, the bit and sub-byte dtype objects), the stand-ins that answer as PyTorch built
without a feature answers (torch.backends, torch.cuda, torch.compiler, torch._dynamo, torch._C, torch.accelerator,
torch._tensor_str ...), and lazy mode (``python -m hookgrad --lazy``) in subprocesses."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import hookgrad as hg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNSIGNED = ("uint16", "uint32", "uint64")
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
NO_KERNELS = ("bits1x8", "bits2x4", "bits4x2", "bits8", "bits16", "int1", "int4", "int7", "uint1", "uint4", "uint7",
              "float4_e2m1fn_x2")
PROMOTED = ("bool", "uint8", "int8", "int64", "float16", "bfloat16", "float32", "float64", "complex64") + UNSIGNED + \
    FLOAT8[:3] + ("bits8", "uint4")


def outcome(fn):
    """``("ok", value)`` or ``("error", exception type name, message)``."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the outcome is what is compared)
        return ("error", type(e).__name__, str(e).split(" (hookgrad")[0])


# ------------------------------------------------------------------------------------------------ dtypes
@pytest.mark.parametrize("name", UNSIGNED + FLOAT8 + NO_KERNELS)
def test_dtype_objects(name):
    t, h = getattr(torch, name), getattr(hg, name)
    assert repr(h) == repr(t) and str(h) == str(t)
    assert (h.is_floating_point, h.is_complex, h.itemsize) == (t.is_floating_point, t.is_complex, t.itemsize)
    if not name.startswith("bits"):
        assert h.is_signed == t.is_signed


@pytest.mark.parametrize("a", PROMOTED)
def test_promotion(a):
    for b in PROMOTED:
        t = outcome(lambda: str(torch.promote_types(getattr(torch, a), getattr(torch, b))))
        h = outcome(lambda: str(hg.promote_types(getattr(hg, a), getattr(hg, b))))
        assert h == t, (a, b)


VALUES = [0.0, 1.3, -2.7, 500.0, 460.0, 449.0, 1e6, -1e6, np.inf, -np.inf, np.nan, 1e-9, 3e-3, 70000.0, 0.5, -0.0,
          1e-40, 3e38]


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_conversion_round_trip_and_bits(name):
    a = np.array(VALUES, dtype=np.float32)
    t = torch.from_numpy(a).to(getattr(torch, name))
    h = hg.from_numpy(a).to(getattr(hg, name))
    assert h.dtype is getattr(hg, name)
    np.testing.assert_array_equal(h.view(hg.uint8).numpy(), t.view(torch.uint8).numpy())        # the same bits
    np.testing.assert_array_equal(h.float().numpy(), t.float().numpy())                            # exact widening
    np.testing.assert_array_equal(h.to(hg.float64).numpy(), t.to(torch.float64).numpy())
    small = [1.3, -2.7, 2.0]
    assert repr(hg.tensor(small, dtype=getattr(hg, name))) == repr(torch.tensor(small, dtype=getattr(torch, name)))
    assert repr(hg.tensor(small).to(getattr(hg, name))[0]) == repr(torch.tensor(small).to(getattr(torch, name))[0])
    assert hg.tensor(small, dtype=getattr(hg, name)).tolist() == torch.tensor(small, dtype=getattr(torch, name)).tolist()


@pytest.mark.parametrize("name", UNSIGNED)
def test_unsigned_creation_conversion_printing(name):
    def run(lib):
        d = getattr(lib, name)
        x = lib.tensor([1, 2, 65535], dtype=d)
        return [repr(x), repr(x.to(lib.float32)), repr(lib.tensor([1.7, 2.2]).to(d)), repr(x.reshape(3, 1)),
                repr(lib.zeros(2, dtype=d)), x.tolist(), repr(x[1]), str(x.dtype), x.element_size(),
                repr(x * 2), repr(x == 1), repr(lib.cat([x, x])), x.numpy().dtype.name,
                repr(lib.from_numpy(np.array([3, 4], dtype=name))), repr(x + 1.5)]
    assert run(hg) == run(torch)


@pytest.mark.parametrize("name", UNSIGNED + ("uint8", "int8", "int32", "int64"))
def test_iinfo(name):
    t, h = torch.iinfo(getattr(torch, name)), hg.iinfo(getattr(hg, name))
    assert (h.bits, h.min, h.max, h.dtype, repr(h)) == (t.bits, t.min, t.max, t.dtype, repr(t))


@pytest.mark.parametrize("name", FLOAT8 + ("bfloat16", "float16"))
def test_finfo(name):
    t, h = torch.finfo(getattr(torch, name)), hg.finfo(getattr(hg, name))
    assert (h.bits, h.eps, h.max, h.min, h.tiny, h.smallest_normal, h.resolution, h.dtype, repr(h)) == \
        (t.bits, t.eps, t.max, t.min, t.tiny, t.smallest_normal, t.resolution, t.dtype, repr(t))


@pytest.mark.parametrize("name", ("int4", "uint4", "bits8", "float4_e2m1fn_x2"))
def test_no_kernel_dtypes_refuse_tensors(name):
    t = outcome(lambda: torch.ones(2).to(getattr(torch, name)))
    h = outcome(lambda: hg.ones(2).to(getattr(hg, name)))
    assert h[:2] == t[:2] == ("error", "NotImplementedError") and f"'{name[0].upper()}" in h[2]
    assert outcome(lambda: hg.iinfo(getattr(hg, name)))[:2] == outcome(lambda: torch.iinfo(getattr(torch, name)))[:2]


# ------------------------------------------------------------------------------------------------ torch.backends
def test_backends_flags_defaults_and_scoping():
    def run(lib):
        b = lib.backends
        c = b.cudnn
        out = [c.enabled, c.benchmark, c.deterministic, c.allow_tf32, c.fp32_precision, c.is_available(), c.version(),
               b.mps.is_available(), b.mps.is_built(), b.cuda.is_built(), b.cuda.is_flash_attention_available(),
               b.mkl.is_available() if lib is hg else False, b.mha.get_fastpath_enabled(), b.fp32_precision,
               b.flags_frozen(), b.cuda.flash_sdp_enabled(), b.cuda.math_sdp_enabled(),
               str(b.cuda.preferred_linalg_library()), b.cudnn.is_acceptable(lib.zeros(1))]
        with c.flags(enabled=False, benchmark=True, deterministic=True):
            out.append((c.enabled, c.benchmark, c.deterministic))
        out.append((c.enabled, c.benchmark, c.deterministic))
        c.deterministic = True
        out.append(c.deterministic)
        c.deterministic = False
        with b.mkldnn.flags(enabled=False):
            out.append(b.mkldnn.enabled)
        out.append(b.mkldnn.enabled)
        b.cuda.enable_flash_sdp(False)
        out.append((b.cuda.flash_sdp_enabled(), b.cuda.math_sdp_enabled()))
        b.cuda.enable_flash_sdp(True)
        out.append(outcome(lambda: b.cuda.matmul.no_such_flag))
        b.disable_global_flags()
        try:
            out.append(outcome(lambda: setattr(c, "benchmark", True)))
            with c.flags(benchmark=True):
                out.append(c.benchmark)
        finally:
            if lib is torch:
                setattr(b, "__allow_nonbracketed_mutation_flag", True)
            else:
                b._flags._allow_mutation[0] = True
        return out
    assert run(hg) == run(torch)
    import hookgrad.backends.cudnn as cudnn                  # a real submodule: `import torch.backends.cudnn` works
    assert cudnn is hg.backends.cudnn


def test_backends_honest_answers():
    """hookgrad has no oneDNN, MKL or OpenMP: it answers as a PyTorch built without them (torch's wheel has them)."""
    b = hg.backends
    assert (b.mkldnn.is_available(), b.mkl.is_available(), b.openmp.is_available(), b.nnpack.is_available()) == \
        (False,) * 4
    assert b.cpu.get_cpu_capability() == "AVX2" and b.quantized.engine == "none"
    with pytest.raises(AssertionError, match="Failed to set MKLDNN into verbose mode"):
        with b.mkldnn.verbose(b.mkldnn.VERBOSE_ON):
            pass
    old = hg.get_float32_matmul_precision()
    try:                                # matmul.allow_tf32 is the float32 matmul precision, as in PyTorch
        b.cuda.matmul.allow_tf32 = True
        assert hg.get_float32_matmul_precision() == "high" and b.cuda.matmul.allow_tf32
        hg.set_float32_matmul_precision("highest")
        assert b.cuda.matmul.allow_tf32 is False
    finally:
        hg.set_float32_matmul_precision(old)


# ------------------------------------------------------------------------------------------------ torch.cuda
CUDA_CALLS = ["Stream()", "Event()", "Event(enable_timing=True)", "current_stream()", "default_stream()",
              "get_device_name()", "get_device_name(0)", "get_device_properties(0)", "get_device_capability()",
              "is_bf16_supported()", "memory_allocated()", "max_memory_allocated()", "memory_reserved()",
              "mem_get_info()", "memory_stats()", "is_initialized()", "current_device()", "synchronize()",
              "get_rng_state()", "get_rng_state_all()", "initial_seed()", "get_arch_list()", "device_count()",
              "is_available()", "CUDAGraph()", "_is_compiled()", "empty_cache()", "manual_seed_all(0)",
              "is_tf32_supported()", "FloatTensor([1.0])", "nvtx.range_push('a')", "graph(None)",
              "_get_device_index('cuda:1')", "init()", "ipc_collect()"]


def test_cuda_answers_as_pytorch_without_cuda():
    def run(lib):
        out = [outcome(lambda: eval(f"lib.cuda.{c}", {"lib": lib})) for c in CUDA_CALLS]
        out = [o if o[0] == "error" or not hasattr(o[1], "__module__") else ("ok", type(o[1]).__name__) for o in out]
        with lib.cuda.stream(None):
            out.append("stream block")
        with lib.cuda.device(-1):
            out.append("device block")
        out.append(isinstance(lib.zeros(1), lib.cuda.FloatTensor))
        out.append(lib.cuda.default_generators)
        return out
    assert run(hg) == run(torch)


# ------------------------------------------------------------------------------------------------ compiler, _dynamo
def test_compiler_and_dynamo():
    """The queries against torch; the decorators and torch._dynamo's config (PyTorch's defaults, read from torch
    2.13 once: importing torch._dynamo takes seconds) on hookgrad alone."""
    def f(x):
        return x * 2

    for lib in (torch, hg):
        c = lib.compiler
        assert (c.is_compiling(), c.is_dynamo_compiling(), c.is_exporting()) == (False, False, False)
    c = hg.compiler
    assert c.disable(f) is f and c.disable(recursive=False)(f) is f and c.allow_in_graph(f) is f
    assert c.reset() is None and c.cudagraph_mark_step_begin() is None and c.substitute_in_graph(len)(f) is f
    with c.set_stance("force_eager"):
        assert hg.compiler._state["stance"] == "force_eager"
    assert hg.compiler._state["stance"] == "default"
    with pytest.raises(RuntimeError, match="invalid torch.compile stance"):
        c.set_stance("nonsense")
    from hookgrad import _dynamo as dyn
    from hookgrad._dynamo import external_utils
    assert dyn.is_compiling() is False and external_utils.is_compiling() is False
    assert (dyn.config.cache_size_limit, dyn.config.accumulated_cache_size_limit, dyn.config.suppress_errors,
            dyn.config.capture_scalar_outputs, dyn.config.optimize_ddp) == (8, 256, False, False, True)
    with dyn.config.patch(cache_size_limit=3, capture_scalar_outputs=True):
        assert (dyn.config.cache_size_limit, dyn.config.capture_scalar_outputs) == (3, True)
    assert (dyn.config.cache_size_limit, dyn.config.capture_scalar_outputs) == (8, False)

    @dyn.config.patch("verbose", True)
    def g():
        return dyn.config.verbose
    assert g() is True and dyn.config.verbose is False
    with pytest.raises(AttributeError, match="no_such_setting does not exist"):
        dyn.config.patch(no_such_setting=1)
    assert dyn.disable(f) is f and dyn.mark_static_address(hg.zeros(2)) is None and dyn.mark_dynamic(hg.zeros(2), 0) is None
    with pytest.raises(TypeError, match="mark_static_address expects a tensor"):
        dyn.mark_static_address(3)
    assert not isinstance(hg.nn.Linear(1, 1), dyn.OptimizedModule)
    assert hg.compile(f) is f and hg.compile()(f) is f and hg.compile(mode="reduce-overhead")(f) is f


# ------------------------------------------------------------------------------------------------ torch._C and others
def test_c_names():
    for lib in (torch, hg):
        C = lib._C
        assert C._log_api_usage_once("x") is None and C._get_tracing_state() is None
        assert C._are_functorch_transforms_active() is False and C._get_default_device() == "cpu"
        assert str(C._get_accelerator()) == "cpu" and C._get_privateuse1_backend_name() == "privateuseone"

        class Sub(lib.Tensor):
            __torch_function__ = C._disabled_torch_function_impl
        assert Sub.__torch_function__(lib.add, (), (1, 2)).item() == 3
        assert C._TensorMeta is type(lib.Tensor)
        with C.DisableTorchFunctionSubclass():
            pass

    def parse(lib):
        p = lib._C._nn._parse_to
        return [tuple(str(v) for v in p(*a, **k)) for a, k in (
            ((lib.float16,), {}), (("cpu", lib.float64), {"non_blocking": True}),
            ((lib.zeros(1, dtype=lib.int8),), {}), ((), {"dtype": lib.float32, "device": "cpu"}))]
    assert parse(hg) == parse(torch)


def test_load_time_modules():
    assert hg.torch is hg and torch.torch is torch
    assert "USE_MKL=OFF" in hg.__config__.show() and "at::get_num_threads()" in hg.__config__.parallel_info()
    for lib in (torch, hg):
        assert lib.jit._script_if_tracing(len)("ab") == 2 and lib.jit.is_scripting() is False
        assert lib.jit.is_tracing() is False and lib.jit.annotations.BroadcastingList2[float] is None
        assert lib.accelerator.is_available() is False and lib.accelerator.device_count() == 0
        assert lib.accelerator.current_accelerator() is None
        assert lib._utils._element_size(lib.float16) == 2 and lib._utils._get_device_index("cpu", allow_cpu=True) == -1
        import importlib
        assert importlib.import_module(f"{lib.__name__}._subclasses.fake_tensor").is_fake(lib.zeros(1)) is False
        assert lib.onnx.is_in_onnx_export() is False
    assert outcome(hg.accelerator.current_device_index) == outcome(torch.accelerator.current_device_index)
    x_t, x_h = torch.tensor([[1.5, 2.0], [3.0, 4.25]]), hg.tensor([[1.5, 2.0], [3.0, 4.25]])
    for force in (False, True):
        t = torch._tensor_str._add_suffixes("tensor(" + torch._tensor_str._tensor_str(x_t, 7), ["dtype=x"], 7, force)
        h = hg._tensor_str._add_suffixes("tensor(" + hg._tensor_str._tensor_str(x_h, 7), ["dtype=x"], 7, force)
        assert h == t
    assert hg._tensor_str._str_intern(x_h) == torch._tensor_str._str_intern(x_t)


def test_dataloader_classes():
    from torch.utils.data import dataloader as tdl

    from hookgrad.utils.data import dataloader as hdl
    for lib, dl in ((torch, tdl), (hg, hdl)):
        data = lib.utils.data
        it = iter(data.DataLoader(data.TensorDataset(lib.arange(4)), batch_size=2))
        assert isinstance(it, dl._BaseDataLoaderIter) and isinstance(it, dl._SingleProcessDataLoaderIter)
        assert not isinstance(it, dl._MultiProcessingDataLoaderIter)
        assert data.Dataset[int] is not None and data.Sampler[int] is not None and data.DataLoader[int] is not None


def test_distributed_names_without_init():
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor.placement_types import _StridedShard

    from hookgrad.distributed import fsdp
    from hookgrad.distributed.tensor import Partial as HP, Replicate as HR, Shard as HS
    from hookgrad.distributed.tensor.placement_types import _StridedShard as HSS
    for t, h in ((Shard(1), HS(1)), (Replicate(), HR()), (Partial(), HP()), (Partial("max"), HP("max")),
                 (_StridedShard(0, split_factor=2), HSS(0, split_factor=2))):
        assert (repr(h), str(h), h.is_shard(), h.is_replicate(), h.is_partial()) == \
            (repr(t), str(t), t.is_shard(), t.is_replicate(), t.is_partial())
    assert HS(0) == HS(0) and HS(0) != HSS(0, split_factor=2) and hash(HS(2)) == hash(HS(2))
    import torch.distributed.fsdp as tfsdp
    assert [(m.name, m.value) for m in fsdp.ShardingStrategy] == [(m.name, m.value) for m in tfsdp.ShardingStrategy]
    assert fsdp.MixedPrecisionPolicy() == fsdp.MixedPrecisionPolicy() and not fsdp.CPUOffload().offload_params
    with pytest.raises(NotImplementedError, match="fully sharded"):
        fsdp.fully_shard(hg.nn.Linear(1, 1))
    assert not isinstance(hg.nn.Linear(1, 1), fsdp.FullyShardedDataParallel)


def test_flex_attention_eager():
    """create_block_mask / flex_attention (transformers imports them at load): values, lse and the block mask."""
    import warnings

    from torch.nn.attention import flex_attention as tfa

    from hookgrad.nn.attention import flex_attention as hfa
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 5, 3)).astype(np.float32) for _ in range(3))
    kv2 = [a[:, :2].copy() for a in (k, v)]

    def causal(b, h, qi, ki):
        return qi >= ki

    def bias(s, b, h, qi, ki):
        return s + (qi - ki) * 0.1 + h

    def run(lib, fa):
        m = fa.create_block_mask(fa.and_masks(causal, fa.noop_mask), 2, 4, 5, 5, device="cpu", BLOCK_SIZE=2)
        T = lib.from_numpy
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, lse = fa.flex_attention(T(q), T(k), T(v), score_mod=bias, block_mask=m, return_lse=True)
            gqa = fa.flex_attention(T(q), T(kv2[0]), T(kv2[1]), block_mask=m, enable_gqa=True, scale=0.5)
        return out.numpy(), lse.numpy(), gqa.numpy(), m.to_dense().numpy(), m.shape, m.seq_lengths, m.BLOCK_SIZE
    for t, h in zip(run(torch, tfa), run(hg, hfa)):
        if isinstance(t, np.ndarray):
            np.testing.assert_allclose(h, t, rtol=1e-5, atol=1e-6)
        else:
            assert h == t


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart(param):
    """peft imports torch.distributions.wishart at load: PyTorch's formulas; samples by hookgrad's samplers."""
    from torch.distributions.wishart import Wishart as TW

    from hookgrad.distributions.wishart import Wishart as HW
    a = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])
    x = np.array([[3.0, 0.5, 0.2], [0.5, 2.0, 0.1], [0.2, 0.1, 1.5]])

    def run(lib, W):
        m = lib.from_numpy(a)
        if param == "scale_tril":
            m = lib.linalg.cholesky(m)
        w = W(lib.tensor([4.0, 6.5], dtype=lib.float64), **{param: m})
        return [w.log_prob(lib.from_numpy(x)).numpy(), w.entropy().numpy(), w.mean.numpy(), w.variance.numpy(),
                w.mode.numpy(), tuple(w.batch_shape), tuple(w.event_shape), tuple(w.expand((3, 2)).batch_shape),
                tuple(w.rsample((5,)).shape), tuple(w._bartlett_sampling(lib.Size()).shape)]
    for t, h in zip(run(torch, TW), run(hg, HW)):
        if isinstance(t, np.ndarray):
            np.testing.assert_allclose(h, t, rtol=1e-10, equal_nan=True)
        else:
            assert h == t
    hg.manual_seed(0)
    w = HW(hg.tensor(6.5, dtype=hg.float64), covariance_matrix=hg.from_numpy(a))
    ratio = w.rsample((4000,)).mean(0).numpy() / w.mean.numpy()
    assert np.all(np.abs(ratio - 1) < 0.15), ratio
    assert hg.distributions.Wishart is HW
    with pytest.raises(ValueError, match="expected to be greater than ndim - 1 = 2"):
        HW(hg.tensor(1.0), covariance_matrix=hg.from_numpy(a))


# ------------------------------------------------------------------------------------------------ lazy mode
FAKE_PACKAGE = '''
import torch
from torch.distributed.pipelining import ScheduleGPipe
from torch.no_such_module.sub import Thing
import torch.no_such_module.other
from torch._C import _no_such_private_name
try:
    from torch.definitely_missing import X
    HAVE_X = True
except ImportError:
    HAVE_X = False
HAS_VMAP = hasattr(torch.distributions, "Kumaraswamy")
DEFAULT = ScheduleGPipe.SOME_MEMBER


class MySchedule(ScheduleGPipe):
    pass


def use_call():
    return torch.distributions.Kumaraswamy(lambda x: x)


def use_value():
    return len(torch.nn.qat)


def is_one(x):
    return isinstance(x, ScheduleGPipe)


from torch.nn.attention.flex_attention import NoSuchThing   # a hookgrad module without its own __getattr__
from torch._C._nn import _no_such_function                    # a submodule of torch._C
'''

MAIN = '''
import sys
if sys.argv[1:] == ["install"]:
    import hookgrad.compat
    hookgrad.compat.install(lazy=True)
import fakepkg, torch
print("loaded", fakepkg.HAVE_X, fakepkg.HAS_VMAP, fakepkg.is_one(torch.zeros(1)))
print("repr", repr(fakepkg.DEFAULT))
print("plain", type(fakepkg.NoSuchThing).__name__, type(fakepkg._no_such_function).__name__)
for f in (fakepkg.use_call, fakepkg.use_value, fakepkg.MySchedule, fakepkg.Thing):
    try:
        f()
    except Exception as e:
        print("raised", type(e).__name__, isinstance(e, AttributeError), e.torch_name, "|", e)
'''


def _run(tmp_path, *args):
    pkg = tmp_path / "fakepkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(FAKE_PACKAGE))
    (tmp_path / "main.py").write_text(textwrap.dedent(MAIN))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("how", ["--lazy", "install"])
def test_lazy_mode_loads_and_fails_where_used(tmp_path, how):
    r = _run(tmp_path, *(["-m", "hookgrad", "--lazy", "main.py"] if how == "--lazy" else ["main.py", "install"]))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    init = str(tmp_path / "fakepkg" / "__init__.py")
    assert lines[0] == "loaded False False False"      # try/except fallback, hasattr and isinstance as without it
    assert lines[1].startswith("repr <hookgrad lazy placeholder for torch.distributed.pipelining.ScheduleGPipe."
                               "SOME_MEMBER (first named at " + init + ":3)>")
    assert lines[2] == "plain MissingName MissingName"
    used = lines[3:]
    assert [u.split(" | ")[0] for u in used] == [
        "raised NotImplementedName True torch.distributions.Kumaraswamy", "raised NotImplementedName True torch.nn.qat",
        "raised NotImplementedName True torch.distributed.pipelining.ScheduleGPipe",
        "raised NotImplementedName True torch.no_such_module.sub.Thing"]
    assert "It was called" in used[0] and f"first named at {init}:21" in used[0] and "comes later" in used[0]
    assert "read as a value (__len__)" in used[1] and f"{init}:25" in used[1] and "non-goal" in used[1]
    assert "instantiated (as the base of MySchedule)" in used[2] and f"{init}:3)" in used[2]
    assert f"{init}:4)" in used[3]


def test_strict_mode_names_lazy_mode(tmp_path):
    """Without --lazy, the first missing name stops the program, and the error says where lazy mode is."""
    r = _run(tmp_path, "-m", "hookgrad", "-c", "import torch\ntry:\n    torch.distributions.Kumaraswamy\nexcept AttributeError as e:\n"
             "    print(type(e).__name__, e)\nimport fakepkg")
    assert r.returncode == 1
    assert r.stdout.startswith("NotImplementedName torch.distributions.Kumaraswamy is not implemented in hookgrad "
                               "yet")
    assert "python -m hookgrad --lazy script.py" in r.stdout
    assert "No module named 'torch.distributed.pipelining'" in r.stderr and "--lazy" in r.stderr
