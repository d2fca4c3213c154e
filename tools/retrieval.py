"""ToolSearcher retrieval backends (being written)."""


def default_retriever():
    raise NotImplementedError("ToolSearcher retrieval backend not written yet")
