"""The autograd profiler pieces PyTorch's test_autograd.py uses, torch vs hookgrad (issue 27): EventList's
parent/child pass from time ranges, str(profile) as its table, torch.ops.profiler's record_function entry points."""
from test_autograd_modes import both


def test_populate_cpu_children_from_time_ranges():
    def scenario(lib, log):
        from importlib import import_module
        pu = import_module(lib.__name__ + ".autograd.profiler_util")
        events = pu.EventList()
        ids = iter(range(1, 100))
        for thread, ranges in ((1, [(0, 1), (1, 2)]), (0, [(0, 2), (1, 2), (1, 3)]), (0, [(4, 9), (5, 6), (6, 7)])):
            for start, end in ranges:
                events.append(pu.FunctionEvent(id=next(ids), node_id=0, name="", thread=thread, start_us=start,
                                               end_us=end))
        events._populate_cpu_children()
        log([[c.id for c in e.cpu_children] for e in events], [getattr(e.cpu_parent, "id", None) for e in events])
    both(scenario)


def test_str_of_profile_is_its_table_and_legacy_record_function():
    def scenario(lib, log):
        x = lib.randn(10, 10)
        with lib.autograd.profiler.profile() as p:
            h = lib.ops.profiler._record_function_enter("bar", None)
            try:
                x * 2 + 4
            finally:
                lib.ops.profiler._record_function_exit(h)
        log(str(p) == p.table(), [e.name for e in p.function_events if e.name == "bar"],
            [e.count for e in p.function_events if "bar" in e.name])
    both(scenario)
