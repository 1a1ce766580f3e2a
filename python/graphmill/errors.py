"""Exceptions raised by the graphmill client."""


class GraphmillError(Exception):
    """An error reported by graphmill: a bad dataset, a failed command, or an
    error status from the sampler service (the message is the Go side's)."""


class WireError(GraphmillError, ValueError):
    """A minibatch frame that does not follow docs/wire.md."""


class ServiceError(GraphmillError):
    """An error status returned by the sampler service. ``code`` is the gRPC
    status code (a ``grpc.StatusCode``) and the message is the service's."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code
