"""One module per paper. Each registers itself when imported; the registry imports them through
the ``theorylab.studies`` entry points listed in ``pyproject.toml`` (see
:func:`theorylab.core.study.load_studies`)."""
