"""Files for the Hugging Face Hub: the script-free dataset repository and leaderboard result files.

* :mod:`.dataset_repo` -- Parquet per config and split, README with ``configs:``, push;
* :mod:`.leaderboard` -- model-index and ``.eval_results`` files, the dataset's ``eval.yaml``, push.
"""
