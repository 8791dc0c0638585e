"""Files a careless or hostile hand produces: wrong types, pasted blocks, bad bytes, bombs.

Each is refused with the field named (or, for a problem of the file itself, the line or byte
where it is), in well under a second, and never with a traceback.
"""

from __future__ import annotations

from hostile.build import (
    BOTH_LINES,
    DELETE,
    WHERE,
    Case,
    example,
    refuse,
    refuse_bytes,
    render,
)

NON_UTF8 = r"(byte|offset)\D{0,12}\d+"
BOMB = r"alias|anchor|expan|too (large|big|deep|many)|nest|depth|size|limit"
CYCLE = r"alias|anchor|recurs|circular|cycl"
DEEP = r"nest|deep|depth|hyperparameters\.deep"


def _text(name: str = "pytorch_ddp") -> str:
    return render(example(name)).decode()


def _after(line_start: str, extra: str, name: str = "pytorch_ddp") -> bytes:
    """The example's text with ``extra`` inserted after the line starting ``line_start``."""
    lines = _text(name).splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.startswith(line_start))
    lines.insert(index + 1, extra)
    return "".join(lines).encode()


def _replace_line(line_start: bytes, new: bytes, name: str = "pytorch_ddp") -> bytes:
    lines = _text(name).encode().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.startswith(line_start))
    lines[index] = new + b"\n"
    return b"".join(lines)


def _append(extra: str, drop: str = "hyperparameters") -> bytes:
    """The example without key ``drop``, then the raw YAML ``extra`` at the end."""
    data = example("pytorch_ddp")
    data.pop(drop, None)
    return render(data) + extra.encode()


def _with_hyperparameters(block: str) -> bytes:
    """The example with its hyperparameters replaced by a raw YAML ``block``."""
    return _append("hyperparameters:\n" + block)


def _bomb(levels: int, width: int) -> str:
    rows = ["  l0: &l0 [" + ", ".join(["lol"] * width) + "]\n"]
    for level in range(1, levels + 1):
        rows.append(f"  l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]\n")
    return "".join(rows)


def _types() -> list[Case]:
    g = "type"
    cases = [
        refuse(g, "max-run-true", "max_run", {"max_run": True}),
        refuse(g, "max-run-string", "max_run", {"max_run": "3600"}),
        refuse(g, "max-run-fraction", "max_run", {"max_run": 3600.5}),
        refuse(g, "max-run-float", "max_run", {"max_run": 3600.0}),
        refuse(g, "max-run-infinite", "max_run", {"max_run": float("inf")}),
        refuse(g, "max-run-null", "max_run", {"max_run": None}),
        refuse(g, "max-run-list", "max_run", {"max_run": [3600]}),
        refuse(g, "count-string", "cluster.instance_count", {"cluster.instance_count": "2"}),
        refuse(g, "count-fraction", "cluster.instance_count", {"cluster.instance_count": 2.5}),
        refuse(g, "count-float", "cluster.instance_count", {"cluster.instance_count": 2.0}),
        refuse(g, "count-true", "cluster.instance_count", {"cluster.instance_count": True}),
        refuse(g, "count-list", "cluster.instance_count", {"cluster.instance_count": [2]}),
        refuse(g, "count-huge", "cluster.instance_count", {"cluster.instance_count": 10**30}),
        refuse(g, "keep-alive-false", "keep_alive", {"keep_alive": False}),
        refuse(g, "keep-alive-fraction", "keep_alive", {"keep_alive": 1.5}),
        refuse(g, "spot-yes", "spot.enabled", {"spot.enabled": "yes"}),
        refuse(g, "spot-one", "spot.enabled", {"spot.enabled": 1}),
        refuse(g, "isolation-string", "network.isolation", {"network.isolation": "false"}),
        refuse(g, "restarts-string", "strategy.max_restarts", {"strategy.max_restarts": "1"}),
        refuse(g, "restarts-true", "strategy.max_restarts", {"strategy.max_restarts": True}),
        refuse(g, "ppp-list", "strategy.processes_per_host", {"strategy.processes_per_host": [1]}),
        refuse(g, "ppp-true", "strategy.processes_per_host", {"strategy.processes_per_host": True}),
        refuse(
            g, "partitions-string", "strategy.partitions", {"strategy.partitions": "2"}, "smp_v1"
        ),
        refuse(g, "ddp-string", "strategy.ddp", {"strategy.ddp": "true"}, "smp_v1"),
        refuse(
            g,
            "communication-number",
            "strategy.communication",
            {"strategy.communication": 1},
            "mwms",
        ),
        refuse(g, "kind-number", "strategy", {"strategy.kind": 1}),
        refuse(g, "cluster-list", "cluster", {"cluster": ["ml.p3.2xlarge", 2]}),
        refuse(g, "hyperparameters-list", "hyperparameters", {"hyperparameters": ["epochs", 3]}),
        refuse(g, "hyperparameters-string", "hyperparameters", {"hyperparameters": "epochs=3"}),
        refuse(g, "environment-string", "environment", {"environment": "A=1"}),
        refuse(g, "environment-int", "environment.NUM", {"environment.NUM": 1}),
        refuse(g, "environment-bool", "environment.FLAG", {"environment.FLAG": True}),
        refuse(g, "environment-list", "environment.PATHS", {"environment.PATHS": ["/a", "/b"]}),
        refuse(
            g, "subnets-scalar", "network.subnets", {"network.subnets": "subnet-0123456789abcdef0"}
        ),
        refuse(g, "inputs-list", "inputs", {"inputs": ["s3://my-training-bucket/train"]}),
        refuse(g, "name-number", "name", {"name": 123}),
        refuse(g, "name-list", "name", {"name": ["a", "b"]}),
        refuse(g, "code-string", "code", {"code": "train.py"}),
        refuse(g, "strategy-string", "strategy", {"strategy": "pytorch_ddp"}),
        refuse(g, "spot-bool", "spot", {"spot": True}),
        refuse(g, "checkpoint-string", "checkpoint", {"checkpoint": "s3://my-training-bucket/c"}),
        refuse(
            g, "framework-version-float", "code.framework_version", {"code.framework_version": 2.1}
        ),
        refuse(g, "py-version-float", "code.py_version", {"code.py_version": 3.11}),
    ]
    text = _text()
    cases += [
        refuse_bytes(
            g,
            "binary-name",
            "name",
            text.replace("name: pytorch-ddp", "name: !!binary aGVsbG8=").encode(),
        ),
        refuse_bytes(
            g, "date-name", "name", text.replace("name: pytorch-ddp", "name: 2024-01-01").encode()
        ),
        refuse_bytes(
            g,
            "date-hyperparameter",
            "hyperparameters.start",
            _with_hyperparameters("  start: 2024-01-01\n"),
        ),
        refuse_bytes(
            g, "set-hyperparameters", "hyperparameters", _append("hyperparameters: !!set {a, b}\n")
        ),
        refuse_bytes(g, "int-key", "hyperparameters", _with_hyperparameters("  1: one\n")),
        refuse_bytes(
            g, "null-key", "environment", _append("environment:\n  ~: '1'\n", "environment")
        ),
        refuse_bytes(
            g,
            "python-object-tag",
            (),
            _with_hyperparameters(
                '  run: !!python/object/apply:os.system ["touch /tmp/smdist-hostile"]\n'
            ),
            says=WHERE,
        ),
        refuse_bytes(
            g,
            "not-a-mapping",
            (),
            b"- name: job\n- strategy: pytorch_ddp\n",
            says=r"mapping|dict|object",
        ),
        refuse_bytes(g, "empty-file", (), b"", says=r"empty|mapping|nothing"),
    ]
    return cases


def _duplicates() -> list[Case]:
    g = "duplicate-key"
    pasted = "cluster:\n  instance_type: ml.p4d.24xlarge\n  instance_count: 64\n"
    return [
        refuse_bytes(g, "cluster", "cluster", (_text() + pasted).encode(), BOTH_LINES),
        refuse_bytes(
            g,
            "instance-count",
            "cluster.instance_count",
            _after("cluster:", "  instance_count: 64\n"),
            BOTH_LINES,
        ),
        refuse_bytes(
            g,
            "hyperparameter",
            "hyperparameters.epochs",
            _after("hyperparameters:", "  epochs: 300\n"),
            BOTH_LINES,
        ),
        refuse_bytes(g, "name", "name", (_text() + "name: other\n").encode(), BOTH_LINES),
        refuse_bytes(
            g,
            "flow-mapping",
            "environment.A",
            (_text() + "environment: {A: '1', A: '2'}\n").encode(),
            BOTH_LINES,
        ),
        refuse_bytes(
            g, "strategy-kind", "strategy", _after("strategy:", "  kind: horovod\n"), BOTH_LINES
        ),
        refuse_bytes(
            g, "quoted-twin", "max_run", (_text() + '"max_run": 1\n').encode(), BOTH_LINES
        ),
    ]


def _bytes() -> list[Case]:
    g = "bytes"
    text = _text().encode()
    return [
        refuse_bytes(g, "latin-1-comment", (), b"# caf\xe9\n" + text, NON_UTF8),
        refuse_bytes(
            g, "invalid-in-value", (), _replace_line(b"name:", b"name: pytorch-ddp\xff"), NON_UTF8
        ),
        refuse_bytes(g, "utf-16", (), _text().encode("utf-16"), NON_UTF8),
        refuse_bytes(g, "truncated-sequence", (), text + b"# \xe2\x82", NON_UTF8),
        refuse_bytes(
            g, "overlong-slash", (), _replace_line(b"name:", b"name: x\xc0\xaf"), NON_UTF8
        ),
        refuse_bytes(g, "surrogate", (), text + b"# \xed\xa0\x80\n", NON_UTF8),
        refuse_bytes(
            g,
            "cp1252-quotes",
            (),
            _after("hyperparameters:", "  note: @Q@\n").replace(b"@Q@", b"\x93x\x94"),
            NON_UTF8,
        ),
        refuse_bytes(g, "raw-nul-comment", (), text + b"# \x00\n", WHERE),
        refuse_bytes(
            g, "raw-nul-value", (), _replace_line(b"name:", b"name: pytorch\x00ddp"), WHERE
        ),
        refuse_bytes(
            g, "raw-escape-char", (), _replace_line(b"name:", b"name: pytorch\x1bddp"), WHERE
        ),
    ]


def _bombs() -> list[Case]:
    g = "alias"
    return [
        refuse_bytes(g, "bomb-8x10", (), _with_hyperparameters(_bomb(8, 10)), BOMB),
        refuse_bytes(g, "bomb-20x2", (), _with_hyperparameters(_bomb(20, 2)), BOMB),
        refuse_bytes(
            g,
            "bomb-in-environment",
            (),
            _append("environment:\n" + _bomb(8, 10), "environment"),
            BOMB,
        ),
        refuse_bytes(g, "self-list", (), _with_hyperparameters("  loop: &a [*a]\n"), CYCLE),
        refuse_bytes(g, "self-mapping", (), _append("hyperparameters: &h\n  loop: *h\n"), CYCLE),
        refuse_bytes(
            g,
            "deep-1000",
            (),
            _with_hyperparameters("  deep: " + "[" * 1000 + "]" * 1000 + "\n"),
            DEEP,
        ),
        refuse_bytes(
            g,
            "deep-50000",
            (),
            _with_hyperparameters("  deep: " + "[" * 50000 + "]" * 50000 + "\n"),
            DEEP,
        ),
    ]


def _unknown_keys() -> list[Case]:
    g = "unknown-key"
    return [
        refuse(g, "enviroment", "enviroment", {"enviroment": {"A": "1"}}),
        refuse(g, "instance-cnt", "cluster.instance_cnt", {"cluster.instance_cnt": 2}),
        refuse(g, "procesess", "strategy.procesess_per_host", {"strategy.procesess_per_host": 1}),
        refuse(g, "entrypoint", "code.entrypoint", {"code.entrypoint": "train.py"}),
        refuse(g, "max-wait-time", "spot.max_wait_time", {"spot.max_wait_time": 10}),
        refuse(g, "proto", "__proto__", {"__proto__": {"admin": True}}),
        refuse(g, "subshell-key", "$(id)", {"$(id)": 1}),
        refuse(g, "vpc", "network.vpc", {"network.vpc": "vpc-1"}),
        refuse(g, "s3uri", "checkpoint.s3uri", {"checkpoint.s3uri": "s3://my-training-bucket/c"}),
        refuse(
            g,
            "input-url",
            "inputs.train.url",
            {"inputs.train": {"url": "s3://my-training-bucket/t"}},
        ),
        refuse(g, "kms-key", "kms.key", {"kms.key": "alias/k"}),
        refuse(
            g, "missing-instance-type", "cluster.instance_type", {"cluster.instance_type": DELETE}
        ),
    ]


REFUSED: list[Case] = [*_types(), *_duplicates(), *_bytes(), *_bombs(), *_unknown_keys()]
