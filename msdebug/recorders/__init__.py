"""Make MindSpore record something, and say what is in effect.

* :mod:`.print`: Print output captured in order (fd 1 and ``sys.stdout``), and ``print_file_path`` on CPU/GPU;
* :mod:`.envconfig`: env_config.json and ``MS_RDR_*`` (the Running Data Recorder);
* :mod:`.graphs`: save_graphs for the next graph compiles;
* :mod:`.datadump`: data dumps (the dump JSON, MindSpore's rules, too late or not);
* :mod:`.nan`: the ``%%msnan`` engine (PyNative hooks, or a data dump of the cell's graphs);
* :mod:`.profile`: the profiler from a notebook (``%%msprofile`` and the ``Model.train`` callbacks);
  :mod:`.profile_options`: ``MS_PROFILER_OPTIONS`` and ``profiler_config.json``, validated;
  :mod:`.profile_dynamic`: MindSpore's ``DynamicProfilerMonitor``.
"""
