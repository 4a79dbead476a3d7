"""Make MindSpore record something, and say what is in effect.

* :mod:`.envconfig`: env_config.json and ``MS_RDR_*`` (the Running Data Recorder);
* :mod:`.savegraphs`: save_graphs for the next graph compiles.
"""
