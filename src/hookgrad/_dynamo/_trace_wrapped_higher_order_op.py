"""torch._dynamo._trace_wrapped_higher_order_op: ``TransformGetItemToIndex`` rewrites tensor indexing while Dynamo
traces flex attention's mask functions; eagerly (hookgrad) indexing needs no rewrite, so the block changes nothing."""


class TransformGetItemToIndex:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
