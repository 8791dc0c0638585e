"""Every check a job passes before anything runs: the spec's values and cross-field rules
(``validation``), the catalogue's images and versions (``catalog``, ``images``), paths on disk
(``disk``), secrets by name and content (``secrets``, ``values``), and what SDK v3's container
script can carry (``v3_names``). Checks return ``Problem`` values; nothing here plans or runs.
"""
