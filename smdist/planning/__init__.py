"""``plan(spec) -> Plan``, then ``Plan.bind(...) -> Submission``: everything derived from a
job, once, for every backend (``plan``, ``submission``), and the views of it that ``smdist
plan`` shows (``display``, ``host_view``).
"""
