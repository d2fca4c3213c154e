"""Files for the Hugging Face Hub: the benchmark's dataset repository, its ``eval.yaml``, result files
and pull requests, per-sample details and the metric's Space.

* :mod:`.tasks` -- the tasks the dataset declares and ``eval.yaml`` (its one writer);
* :mod:`.result_files` -- the publishing policy and the one writer of ``.eval_results`` files;
* :mod:`.leaderboard` -- a classic run's result files and model-index card;
* :mod:`.agentic` -- an agentic run's result files, and publishing them;
* :mod:`.push` -- opening the files as pull requests;
* :mod:`.details` -- a classic run's per-sample details as a dataset, and publishing the run;
* :mod:`.dataset_repo` -- Parquet per config and split, README with ``configs:``, push;
* :mod:`.metric_space` -- the metric as a Gradio Space;
* :mod:`.ids` -- checks on Hub repository ids.

Nothing here imports :mod:`apibank.pipeline`: output folders are known by :mod:`apibank.files`' names.
"""
