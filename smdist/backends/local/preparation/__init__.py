"""Before a local job starts: the plan fitted to this machine (``layout``), what this machine
must offer (``setup``, ``requirements``), and the job's files (``files``)."""
