"""torch.autograd.profiler_util: the profiler's events (FunctionEvent, FunctionEventAvg), their list
(EventList: key_averages, table, export_chrome_trace) and the table's formatting, as PyTorch prints them.
Times are in microseconds."""
import enum
import itertools
import json
import math
from collections import defaultdict

__all__ = ["EventList", "FormattedTimesMixin", "Interval", "Kernel", "FunctionEvent", "FunctionEventAvg",
           "StringTable", "MemRecordsAcc", "DeviceType"]


class DeviceType(enum.IntEnum):
    """torch.autograd.DeviceType (the profiler's device kinds)."""
    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20

    def __str__(self):
        return f"DeviceType.{self.name}"


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes * 1.0 / size:.2f} {unit}"
    return f"{nbytes} B"


def _time_attr(name):
    return property(lambda self: _format_time(getattr(self, name)))


class FormattedTimesMixin:
    """``*_str`` forms of the times and ``cpu_time`` (the average over ``count``)."""
    cpu_time_str = _time_attr("cpu_time")
    device_time_str = _time_attr("device_time")
    cpu_time_total_str = _time_attr("cpu_time_total")
    device_time_total_str = _time_attr("device_time_total")
    self_cpu_time_total_str = _time_attr("self_cpu_time_total")
    self_device_time_total_str = _time_attr("self_device_time_total")

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count

    @property
    def cuda_time(self):
        return self.device_time


class Interval:
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class Kernel:
    def __init__(self, name, device, duration):
        self.name, self.device, self.duration = name, device, duration


class StringTable(defaultdict):
    def __missing__(self, key):
        self[key] = key
        return key


class MemRecordsAcc:
    """Kept for imports; hookgrad attributes memory to the events directly."""

    def __init__(self, mem_records):
        self._mem_records = mem_records


class FunctionEvent(FormattedTimesMixin):
    """One recorded range: an op (``aten::addmm``), a backward node (``AddmmBackward0`` inside
    ``autograd::engine::evaluate_function: AddmmBackward0``) or a ``record_function`` label."""

    def __init__(self, id, name, thread, start_us, end_us, overload_name=None, fwd_thread=None, input_shapes=None,
                 stack=None, scope=0, use_device=None, cpu_memory_usage=0, device_memory_usage=0, is_async=False,
                 is_remote=False, sequence_nr=-1, node_id=-1, device_type=DeviceType.CPU, device_index=0,
                 device_resource_id=None, is_legacy=False, flops=None, trace_name=None, concrete_inputs=None,
                 kwinputs=None, is_user_annotation=False, metadata_json=None):
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = overload_name
        self.trace_name = trace_name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.kernels = []
        self.count = 1
        self.cpu_children = []
        self.cpu_parent = None
        self.input_shapes = input_shapes
        self.concrete_inputs = concrete_inputs
        self.kwinputs = kwinputs
        self.stack = stack
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.device_resource_id = thread if device_resource_id is None else device_resource_id
        self.is_legacy = is_legacy
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1
        self.total_device_percent = -1
        self.metadata_json = metadata_json

    def append_kernel(self, name, device, duration):
        self.kernels.append(Kernel(name, device, duration))

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return 0

    @property
    def self_cuda_memory_usage(self):
        return 0

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        return 0

    @property
    def self_device_time_total(self):
        return 0

    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total

    @property
    def key(self):
        return self.name

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
                f"device_type={self.device_type} node_id={self.node_id} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start} end_us={self.time_range.end} "
                f"cpu_children={[c.id for c in self.cpu_children]} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} is_legacy={self.is_legacy} scope={self.scope} "
                f"flops={self.flops}>")


class FunctionEventAvg(FormattedTimesMixin):
    """The events of one key (name, and input shapes or stack when grouped by them), summed."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0
        self.device_time_total = 0
        self.self_cpu_time_total = 0
        self.self_device_time_total = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops = 0
        self.is_user_annotation = False

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of FunctionEvents (or of their averages) with PyTorch's summaries."""

    def __init__(self, *args, **kwargs):
        use_device = kwargs.pop("use_device", None)
        profile_memory = kwargs.pop("profile_memory", False)
        with_flops = kwargs.pop("with_flops", False)
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._tree_built = False

    def _build_tree(self):
        self._tree_built = True     # the recorder links parents and children as it records

    def __str__(self):
        return self.table()

    def _populate_cpu_children(self):
        """Link parents and children from the time ranges, per thread (an event nests in the innermost open
        event whose range contains it), for events made outside the recorder (PyTorch's same pass)."""
        import itertools
        events = sorted((e for e in self if not e.is_async and e.device_type == DeviceType.CPU),
                        key=lambda e: e.thread)
        for _, thread_events in itertools.groupby(events, key=lambda e: (e.thread, e.node_id)):
            current = []
            for ev in sorted(thread_events, key=lambda e: [e.time_range.start, -e.time_range.end]):
                while current:
                    parent = current[-1]
                    if ev.time_range.start >= parent.time_range.end or ev.time_range.end > parent.time_range.end:
                        current.pop()           # it cannot be the parent
                    else:
                        parent.append_cpu_child(ev)
                        ev.set_cpu_parent(parent)
                        break
                current.append(ev)
        self._cpu_children_populated = True

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The events as PyTorch's text table, sorted by ``sort_by`` (an attribute: ``"cpu_time_total"``,
        ``"self_cpu_time_total"``, ``"cpu_memory_usage"``, ``"count"``...), at most ``row_limit`` rows."""
        return _build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                            max_src_column_width=max_src_column_width, max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, with_flops=self._with_flops,
                            profile_memory=self._profile_memory, top_level_events_only=top_level_events_only,
                            time_unit=time_unit)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (chrome://tracing, Perfetto)."""
        trace = []
        for e in self:
            if not isinstance(e, FunctionEvent):
                continue
            args = {}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            if e.sequence_nr >= 0:
                args["Sequence number"] = e.sequence_nr
            trace.append({"name": e.trace_name or e.name, "ph": "X", "ts": e.time_range.start,
                          "dur": e.time_range.elapsed_us(), "tid": e.thread, "pid": "CPU functions",
                          "cat": "user_annotation" if e.is_user_annotation else "cpu_op", "args": args})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)

    def supported_export_stacks_metrics(self):
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total", "self_privateuse1_time_total"]

    def export_stacks(self, path, metric):
        """Write ``stack;frames value`` lines (flame graphs) for events recorded ``with_stack``."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: " + str(self.supported_export_stacks_metrics()))
        with open(path, "w") as f:
            for e in self:
                if e.stack:
                    f.write(";".join(reversed(e.stack)) + " " + str(int(getattr(e, metric.replace("cuda", "device")
                                                                               .replace("xpu", "device"), 0))) + "\n")

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """One FunctionEventAvg per name (and input shapes / top ``group_by_stack_n`` frames if asked)."""
        stats = defaultdict(FunctionEventAvg)

        def key_of(e):
            key = [str(e.key), str(e.node_id), str(e.device_type), str(e.is_legacy), str(e.is_user_annotation)]
            if group_by_overload_name:
                key.append(str(e.overload_name))
            if group_by_input_shapes:
                key.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                key += list(e.stack or ())[:group_by_stack_n]
            return tuple(key)
        for e in self:
            stats[key_of(e)].add(e)
        avg = EventList(stats.values(), use_device=self._use_device, profile_memory=self._profile_memory,
                        with_flops=self._with_flops)
        for a in avg:
            a.stack = (a.stack or [])[:group_by_stack_n]
            if not group_by_input_shapes:
                a.input_shapes = ""
        return avg

    def total_average(self):
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
            total.key = None
        total.key = "Total"
        return total


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, with_flops=False, profile_memory=False,
                 top_level_events_only=False, time_unit=None):
    """PyTorch's profiler table (CPU columns) for FunctionEvents or FunctionEventAvgs."""
    if len(events) == 0:
        return ""
    has_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    name_w = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_w = min(name_w, max_name_column_width)
    shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_w = min(shapes_w, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    src_w = None
    if stacks:
        src_w = max(len(s) for st in stacks for s in st) + 4
        if max_src_column_width is not None:
            src_w = min(src_w, max_src_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [(name_w, ">")] + [(12, ">")] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append((shapes_w, ">"))
    if src_w:
        headers.append("Source Location")
        widths.append((src_w, "<"))
    flops_scale = None
    if with_flops:
        raw = [e.flops for e in events if e.flops]
        if raw:
            names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
            lg = int(max(0, min(math.log10(min(raw)) / 3, len(names) - 1)))
            flops_scale = 10 ** (-3 * lg)
            headers.append(f"Total {names[lg]}")
            widths.append((12, ">"))
    row_format = "".join("{: " + d + str(w) + "}  " for w, d in widths)
    sep = "".join("-" * w + "  " for w, _ in widths)
    line_length = sum(w + 2 for w, _ in widths) - 2
    total = sum(e.self_cpu_time_total for e in events)

    def unit(t, default):
        return {"s": f"{t / 1e6:.3f}s", "ms": f"{t / 1e3:.3f}ms", "us": f"{t:.3f}us"}.get(time_unit, default)

    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        e.self_cpu_percent = _format_time_share(e.self_cpu_time_total, total)
        e.total_cpu_percent = _format_time_share(e.cpu_time_total, total) if not e.is_async else 0
        row = [name, e.self_cpu_percent, unit(e.self_cpu_time_total, e.self_cpu_time_total_str), e.total_cpu_percent,
               unit(e.cpu_time_total, e.cpu_time_total_str), unit(e.cpu_time, e.cpu_time_str)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if src_w:
            src = e.stack[0] if e.stack else ""
            if len(src) > src_w:
                src = "..." + src[len(src) - src_w + 3:]
            row.append(src)
        if flops_scale is not None:
            row.append(f"{e.flops * flops_scale:8.3f}" if e.flops else "--")
        out.append(row_format.format(*row))
    out += [sep, f"Self CPU time total: {unit(total, _format_time(total))}"]
    return "\n".join(out) + "\n"


_ids = itertools.count(1)
