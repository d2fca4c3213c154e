"""Training on API-Bank: the training rows in the formats trainers take.

* :mod:`.upstream_text` reads upstream's flattened samples back into dialogue rows;
* :mod:`.formats` converts dialogue rows (training and test alike) into conversations with tools and
  prompt/completion pairs, checks each, and counts what cannot be converted;
* :mod:`.finetune` fine-tunes a model on those rows (``apibank finetune``, the ``train`` extra).
"""
