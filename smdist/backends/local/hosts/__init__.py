"""The emulated hosts (``algo-1``, ``algo-2``, ...): their folders standing in for ``/opt/ml``
(``folders``), and the two ways of making them behind one interface (``choice`` picks one):

- ``namespaced/``: each host in Linux namespaces of its own, as a container is (``/opt/ml`` at
  its real path, its hostname, its ``eth0`` and ports, its own ``/etc/hosts``);
- ``shared/``: hosts sharing this machine's files and network, where namespaces cannot be made
  (loopback addresses named by libnss_wrapper, free ports, an ssh stand-in).

``ssh_arguments`` reads ssh's command line for both ways' ssh.
"""
