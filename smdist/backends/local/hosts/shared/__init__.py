"""Emulated hosts sharing this machine's files and network: names that resolve to loopback
addresses of their own (``names``), and the ``ssh`` stand-in mpirun reaches them through."""
