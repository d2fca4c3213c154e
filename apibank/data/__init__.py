"""The benchmark's data: the pinned upstream files (locate, download, verify) and the rows built from them.

* :mod:`.upstream` -- the manifest of pinned files, ``fetch`` and the tool environment's
  ``UpstreamSource``;
* :mod:`.rows` -- evaluation and training rows derived from the raw dialogues;
* :mod:`.features` -- the config table and Arrow features shared by the builder and the export.
"""
