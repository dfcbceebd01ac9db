"""The layer families of ``funcgrad.nn``, one module each (``linear``, ``conv``, ``normalization``,
``activation``, ``dropout``, ``pooling``, ``rnn``, ``attention``, ``transformer``, ``sparse``,
``loss``, ``container``); the public names are re-exported by ``funcgrad.nn``."""
