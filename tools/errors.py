"""Errors of the environment the tools run in, as opposed to errors of a call.

A tool reports failures of its own logic in the result envelope, as upstream does. But missing or
corrupt benchmark data, or a ToolSearcher model that cannot be loaded, would turn every sample into
the same tool exception and silently skew the scores; these raise instead.
"""


class EnvironmentUnavailable(RuntimeError):
    """Something every call depends on (data files, the retrieval model) is not available."""


class UpstreamDataError(EnvironmentUnavailable):
    """A benchmark data file is missing, unreachable or does not match its pinned checksum."""
