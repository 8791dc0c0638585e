"""Emulated SageMaker hosts in Linux namespaces of their own, as containers are.

Each host gets a private mount table (its folder mounted at ``/opt/ml``, the job's hosts in
``/etc/hosts``), its hostname ``algo-K``, a PID space (it sees only its own processes) and a
network namespace whose ``eth0`` is cabled to one bridge in a namespace of the job's own, so
every host has its own ports and nothing is added to this machine's network.

- ``probe``: whether this machine can make such hosts, and if not, why;
- ``switch``: the job's bridge, and each host's cable to it;
- ``host``: start a host (``unshare`` + ``enter.py``, which makes the namespaces the host's and
  execs its command);
- ``sshd``: the hosts' sshd: runs ``ssh <host> <command>`` inside that host (a process cannot
  enter a sibling PID namespace, so the sessions start from outside every host), and ``ssh``,
  the client every host has on its PATH.
- ``capabilities``: what a host's processes may do once its setup is done: a Docker
  container's default capabilities, no more (no mount, no change of its network).

Needs root, util-linux (``unshare``, ``nsenter``, ``mount``) and iproute2 (``ip``).
"""
