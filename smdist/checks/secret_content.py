"""What counts as a secret by file content: the rules, and the scan of a buffer or a file."""

from __future__ import annotations

import re
from pathlib import Path

_B64 = rb"[A-Za-z0-9/+]"
_AWS_VALUE = rb"[\"']?\s{0,8}[:=]\s{0,8}[\"']?" + _B64 + rb"{40}(?![A-Za-z0-9/+=])"
_ALNUM = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_UPPER_DIGITS = _ALNUM[:26] + _ALNUM[52:]
# (kind, pattern, bytes that must not come just before the match). Every pattern starts with a
# literal, so each is one fast prefix search over the raw bytes: a single alternation of them
# all, or a lookbehind in front, made Python's regex engine 10-100x slower.
_RULES: tuple[tuple[str, bytes, bytes], ...] = (
    # PEM ("RSA", "EC", "DSA", "ENCRYPTED", none), OpenSSH, PGP ("... KEY BLOCK"), SSH2.
    ("pem", rb"PRIVATE KEY(?: BLOCK)? ?-{4,5}", b""),
    ("putty", rb"PuTTY-User-Key-File-\d+:", b""),
    ("akid", rb"AKIA[A-Z0-9]{16}(?![A-Z0-9])", _UPPER_DIGITS),
    ("akid", rb"ASIA[A-Z0-9]{16}(?![A-Z0-9])", _UPPER_DIGITS),
    # secret_access_key, SecretAccessKey, SECRET_ACCESS_KEY, then a 40-character value.
    ("awssecret", rb"ccess_key" + _AWS_VALUE, b""),
    ("awssecret", rb"ccessKey" + _AWS_VALUE, b""),
    ("awssecret", rb"CCESS_KEY" + _AWS_VALUE, b""),
    ("jsonkey", rb"\"private_key\"\s{0,8}:\s{0,8}\"[^\"\s]", b""),
    ("gcloud", rb"\"type\"\s{0,8}:\s{0,8}\"(?:service_account|authorized_user)\"", b""),
    ("github", rb"gh[pousr]_[A-Za-z0-9]{36}", _ALNUM + b"_"),
    ("github", rb"github_pat_[A-Za-z0-9_]{80,}", _ALNUM + b"_"),
    ("gitlab", rb"glpat-[A-Za-z0-9_-]{20}", b""),
    ("slack", rb"xox[abprs]-[0-9]{6,}-[A-Za-z0-9-]{10,}", b""),
    ("huggingface", rb"hf_[A-Za-z]{34}(?![A-Za-z0-9])", _ALNUM + b"_"),
)
_TRIGGERS = [(kind, re.compile(pattern), before) for kind, pattern, before in _RULES]
# What must stand before "PRIVATE KEY" for it to be a key block's header line.
_PEM_HEAD = re.compile(rb"(?:-----BEGIN[ A-Z0-9]{0,40}|---- BEGIN SSH2 ENCRYPTED )$")
# A key block's base64 body starts within a few header lines; a bare header (a parser's
# constant, a redacted example) is not a key.
_KEY_BODY = re.compile(_B64 + rb"{40}")
_KEY_BODY_WINDOW = 400
# An AWS secret access key: 40 base64 characters, mixed case (a git SHA-1 is not one).
_AWS_SECRET = re.compile(rb"(?<![A-Za-z0-9/+=])" + _B64 + rb"{40}(?![A-Za-z0-9/+=])")
_REFRESH_TOKEN = re.compile(rb"\"refresh_token\"\s{0,8}:\s{0,8}\"[^\"\s]")
_SA_FIELDS = re.compile(rb"\"(?:private_key_id|client_email)\"\s{0,8}:")

REASONS = {
    "pem": "private key header",
    "putty": "PuTTY private key",
    "akid": "AWS access key id with a secret key",
    "awssecret": "AWS secret access key",
    "jsonkey": 'JSON "private_key" field',
    "gcloud": "Google service-account / authorized-user credentials",
    "github": "GitHub token",
    "gitlab": "GitLab token",
    "slack": "Slack token",
    "huggingface": "Hugging Face token",
}
_CHUNK = 8 << 20
_OVERLAP = 4096  # longer than any trigger plus its key-body window


def _looks_like_aws_secret(token: bytes) -> bool:
    return (
        any(c in b"abcdefghijklmnopqrstuvwxyz" for c in token)
        and any(c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ" for c in token)
        and any(c in b"0123456789/+" for c in token)
    )


def _has_aws_secret(data: bytes) -> bool:
    return any(_looks_like_aws_secret(m.group()) for m in _AWS_SECRET.finditer(data))


def _confirmed(kind: str, data: bytes, match: re.Match[bytes]) -> bool:
    """Whether a trigger is a secret in its context (the rest are secrets on sight)."""
    if kind == "pem":
        head = data[max(0, match.start() - 60) : match.start()]
        body = _KEY_BODY.search(data, match.end(), match.end() + _KEY_BODY_WINDOW)
        return bool(_PEM_HEAD.search(head) and body)
    if kind == "awssecret":  # "access key" alone names the key id; the label says "secret"
        label = data[max(0, match.start() - 8) : match.start()].lower()
        return label.endswith((b"secret_a", b"secreta"))
    if kind == "gcloud":
        # The type alone is a template; with the fields only a real key file has, it is one.
        return bool(_SA_FIELDS.search(data) or _REFRESH_TOKEN.search(data))
    return kind != "akid"  # an access key id alone is an identifier, not a secret


def scan_bytes(data: bytes) -> tuple[str | None, bool]:
    """(reason, saw an access key id) for one buffer."""
    saw_key_id = False
    for kind, pattern, before in _TRIGGERS:
        for match in pattern.finditer(data):
            start = match.start()
            if before and start > 0 and data[start - 1] in before:
                continue
            saw_key_id = saw_key_id or kind == "akid"
            if _confirmed(kind, data, match):
                return REASONS[kind], saw_key_id
    return None, saw_key_id


def scan_file(path: str | Path) -> str | None:
    """Why ``path``'s content is a secret (``"private key header"``, ...), or None.

    Reads the whole file in overlapping chunks, so a key at the end of a large file is found.
    """
    saw_key_id = False
    with open(path, "rb") as handle:
        tail = b""
        while block := handle.read(_CHUNK):
            data = tail + block
            reason, key_id = scan_bytes(data)
            if reason:
                return reason
            saw_key_id = saw_key_id or key_id
            tail = data[-_OVERLAP:]
    if saw_key_id and _file_has_aws_secret(path):
        return REASONS["akid"]
    return None


def _file_has_aws_secret(path: str | Path) -> bool:
    with open(path, "rb") as handle:
        tail = b""
        while block := handle.read(_CHUNK):
            data = tail + block
            if _has_aws_secret(data):
                return True
            tail = data[-64:]
    return False
