"""Starting and stopping a local job's processes: each host's command and environment
(``commands``, ``environment``, ``mpirun``), each host's first process (``host_init``), the
supervisor that runs them to their end (``supervisor``), and reading their trees (``proctree``,
``endings``)."""
