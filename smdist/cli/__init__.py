"""The ``smdist`` command (``app``), its help texts and its local-job verbs."""
