"""ssh's command line read as OpenSSH reads it: (destination host, remote command words).

Both ssh stand-ins use it: ``shared/ssh_stand_in.py`` for hosts sharing this machine and
``namespaced/sshd.py`` for hosts in their own namespaces. Standard library only, and importable
without its package: the stand-ins run under the image's Python with ``-S``, before the job's
code, with this folder on ``sys.path``.
"""

from __future__ import annotations

# ssh options that take a value: the letters followed by ':' in OpenSSH 9's getopt string.
OPTIONS_WITH_VALUE = frozenset("BbcDEeFIiJLlmOoPpQRSWw")

# The ssh stand-in's map of the hosts sharing this machine (name -> folder, GPUs, environment
# file), which mpirun's launching environment carries and its exports leave as it is.
HOSTS_VARIABLE = "SMDIST_LOCAL_HOSTS"


def _skip_options(words: list[str], index: int) -> int:
    """Index of the first word at or after ``index`` that is not an ssh option."""
    while index < len(words):
        word = words[index]
        if word == "--":
            return index + 1
        if not word.startswith("-") or word == "-":
            return index
        letters = word[1:]
        # "-p 22" takes the next word; "-p22" / "-oX=y" carry their value; "-xT" are flags,
        # and in "-xp 22" the last letter takes the next word.
        for position, letter in enumerate(letters):
            if letter in OPTIONS_WITH_VALUE:
                if position == len(letters) - 1:
                    index += 1
                break
        index += 1
    return index


def split_ssh_arguments(words: list[str]) -> tuple[str, list[str]]:
    """(destination host, remote command words) from ssh's arguments.

    Like OpenSSH, options are read after the destination too, up to the first word that is not
    one (some launchers put ``-o ConnectTimeout=...`` there). ``user@`` is dropped.
    """
    index = _skip_options(words, 0)
    if index >= len(words):
        raise SystemExit("ssh: no destination host given")
    destination = words[index].rpartition("@")[2]
    return destination, words[_skip_options(words, index + 1) :]
