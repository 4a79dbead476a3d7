"""The IPython edge: the only code that imports IPython's core, ipywidgets, ipykernel or comm.

* :mod:`.extension`: ``%load_ext msdebug`` and its exact undo;
* :mod:`.prefs`: msdebug's own preferences (``%config MsDebug``);
* :mod:`.hooks`: what runs around every cell;
* :mod:`.completion`: tab completion from the catalog and the magics' specs;
* :mod:`.panel`: the settings panel's ipywidgets (its model is :mod:`msdebug.controls`);
* :mod:`.magics`: one module per group of magics.
"""
