"""The benchmark's data: the pinned upstream files (locate, download, verify) and what is built from them.

* :mod:`.upstream` -- the manifest of pinned files, ``fetch`` and the tool environment's
  ``UpstreamSource``;
* :mod:`.dialogues` -- the one reader of the upstream dialogues (levels 1-2 files, level-3 list);
* :mod:`.renames` -- parameters renamed after annotation, applied to recorded gold calls;
* :mod:`.configs` -- the dataset configs and the upstream files each one reads;
* :mod:`.rendering` -- the prompt text and tool lists of the rows;
* :mod:`.rows` -- evaluation and training rows derived from the raw dialogues;
* :mod:`.episodes` -- the dialogues as agentic episodes (user turns, gold calls, gold answers);
* :mod:`.features` -- the config table and Arrow features shared by the builder and the export.
"""
