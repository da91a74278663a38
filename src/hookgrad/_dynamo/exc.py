"""torch._dynamo.exc: the exception classes packages catch (hookgrad raises none of them)."""


class TorchDynamoException(RuntimeError):
    pass


class Unsupported(TorchDynamoException):
    pass


class RestartAnalysis(TorchDynamoException):
    pass


class TensorifyScalarRestartAnalysis(RestartAnalysis):
    pass


class InternalTorchDynamoError(TorchDynamoException):
    pass


class BackendCompilerFailed(TorchDynamoException):
    pass
