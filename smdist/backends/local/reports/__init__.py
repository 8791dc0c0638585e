"""What a local job says: its one log (``logs``), why it failed (``failure``,
``failure_evidence``, ``verdict``) and the noise of a stop kept out of view (``shutdown_noise``)."""
