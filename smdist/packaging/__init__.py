"""What a job ships: the code directory's files (``manifest``, with ``exclusions`` and the
secret checks), the bundle and its content digest (``bundle``), and the notice printed before
anything leaves the machine (``notice``).
"""
