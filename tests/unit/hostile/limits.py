"""What the API, the disk and the catalogue refuse: lengths, NUL, secrets, paths, versions.

Lengths and maxima are SageMaker's own (botocore's service model); paths are checked against
the files the test lays out (``build.make_workspace``); versions and instance families against
the catalogue.
"""

from __future__ import annotations

from hostile.build import HOME, Case, refuse

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
SESSION_KEY = "ASIAIOSFODNN7EXAMPLE"
RSA = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----\n"
PRIVATE = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQ\n-----END PRIVATE KEY-----\n"


def _too_long() -> list[Case]:
    g = "too-long"
    hp = "hyperparameters"
    return [
        refuse(g, "hyperparameter-2501", "hyperparameters.prompt", {(hp, "prompt"): "x" * 2499}),
        refuse(g, "hyperparameter-shell", "hyperparameters.cmd", {(hp, "cmd"): ";" * 3000}),
        # 1,300 newlines are 2,600 characters once JSON-encoded, as the SDK sends them.
        refuse(g, "hyperparameter-escaped", "hyperparameters.lines", {(hp, "lines"): "\n" * 1300}),
        refuse(
            g, "hyperparameter-list", "hyperparameters.items", {(hp, "items"): ["x" * 100] * 30}
        ),
        refuse(
            g, "hyperparameter-mapping", "hyperparameters.cfg", {(hp, "cfg"): {"k": "v" * 2600}}
        ),
        refuse(g, "environment-513", "environment.NOTE", {"environment.NOTE": "x" * 513}),
        refuse(g, "environment-100k", "environment.NOTE", {"environment.NOTE": "$" * 100_000}),
        refuse(
            g, "hyperparameter-count", "hyperparameters", {hp: {f"h{i}": i for i in range(100)}}
        ),
        refuse(
            g,
            "environment-count",
            "environment",
            {"environment": {f"E{i}": "1" for i in range(101)}},
        ),
    ]


def _nul() -> list[Case]:
    g = "nul"
    return [
        refuse(
            g, "hyperparameter-value", "hyperparameters.note", {"hyperparameters.note": "a\x00b"}
        ),
        refuse(
            g, "hyperparameter-only-nul", "hyperparameters.note", {"hyperparameters.note": "\x00"}
        ),
        refuse(g, "environment-value", "environment.NOTE", {"environment.NOTE": "a\x00b"}),
        refuse(
            g,
            "hyperparameter-list",
            "hyperparameters.note",
            {"hyperparameters.note": ["a", "b\x00"]},
        ),
        refuse(
            g,
            "hyperparameter-mapping-key",
            "hyperparameters.note",
            {"hyperparameters.note": {"a\x00": 1}},
        ),
        refuse(
            g,
            "entry-point",
            "code.entry_point",
            {"code.entry_point": "train.py\x00.sh", "code.source_dir": "src"},
        ),
        refuse(
            g,
            "source-dir",
            "code.source_dir",
            {"code.source_dir": "src\x00", "code.entry_point": "train.py"},
        ),
        refuse(
            g,
            "framework-version",
            "code.framework_version",
            {"code.framework_version": "2.3.0\x00"},
        ),
        refuse(g, "strategy-kind", "strategy", {"strategy.kind": "pytorch_ddp\x00"}),
        refuse(
            g,
            "image-uri",
            "code.image_uri",
            {"code.image_uri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/x:1\x00"},
        ),
        refuse(
            g,
            "checkpoint-local-path",
            "checkpoint.local_path",
            {"checkpoint.local_path": "/opt/ml/checkpoints\x00"},
        ),
        refuse(
            g,
            "mwms-communication",
            "strategy.communication",
            {"strategy.communication": "ring\x00"},
            "mwms",
        ),
    ]


def _secrets() -> list[Case]:
    g = "secret"
    hp = "hyperparameters"
    account = {"type": "service_account", "client_email": "x@p.iam.gserviceaccount.com"}
    return [
        refuse(g, "access-key-in-flag", "hyperparameters.note", {(hp, "note"): f"--key {AWS_KEY}"}),
        refuse(g, "rsa-key", "hyperparameters.pem", {(hp, "pem"): RSA}),
        refuse(
            g, "openssh-key", "hyperparameters.ssh", {(hp, "ssh"): RSA.replace("RSA", "OPENSSH")}
        ),
        refuse(g, "ec-key", "hyperparameters.ec", {(hp, "ec"): RSA.replace("RSA", "EC")}),
        refuse(
            g,
            "pgp-key",
            "hyperparameters.pgp",
            {(hp, "pgp"): "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n"},
        ),
        refuse(g, "key-in-list", "hyperparameters.keys", {(hp, "keys"): ["a", SESSION_KEY]}),
        refuse(
            g,
            "service-account",
            "hyperparameters.sa",
            {(hp, "sa"): {**account, "private_key": PRIVATE}},
        ),
        refuse(g, "password-name", "hyperparameters.db_password", {(hp, "db_password"): "hunter2"}),
        refuse(g, "environment-session-key", "environment.NOTE", {"environment.NOTE": SESSION_KEY}),
        refuse(
            g, "environment-private-key", "environment.KEY_PEM", {"environment.KEY_PEM": PRIVATE}
        ),
        refuse(
            g,
            "environment-session-token",
            "environment.AWS_SESSION_TOKEN",
            {"environment.AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjE"},
        ),
        refuse(
            g,
            "environment-lower-case",
            "environment.aws_access_key_id",
            {"environment.aws_access_key_id": AWS_KEY},
        ),
    ]


def _paths() -> list[Case]:
    g = "path"
    sd, ep = "code.source_dir", "code.entry_point"

    def code(source_dir: object, entry_point: object = "train.py") -> dict:
        return {sd: source_dir, ep: entry_point}

    return [
        refuse(g, "source-dir-root", sd, code("/")),
        refuse(g, "source-dir-home", sd, code(HOME)),
        refuse(g, "source-dir-root-symlink", sd, code("root_link")),
        refuse(g, "source-dir-home-symlink", sd, code("home_link")),
        refuse(g, "source-dir-missing", sd, code("no_such_dir")),
        refuse(g, "source-dir-is-a-file", sd, code("a_file.txt")),
        refuse(g, "source-dir-list", sd, code(["src"])),
        refuse(g, "entry-point-etc-passwd", ep, {ep: "/etc/passwd"}),
        refuse(g, "entry-point-etc-passwd-in-source", ep, code("src", "/etc/passwd")),
        refuse(g, "entry-point-dot-dot", ep, code("src", "../outside.py")),
        refuse(g, "entry-point-symlink-escape", ep, code("src", "escape.py")),
        refuse(g, "entry-point-missing", ep, code("src", "missing.py")),
        refuse(g, "entry-point-injection", ep, code("src", "train.py; touch /tmp/smdist-hostile")),
        refuse(g, "entry-point-empty", ep, code("src", "")),
        refuse(g, "entry-point-not-ready", ep, {ep: "my_train.py"}),
        refuse(
            g,
            "input-file-missing",
            "inputs",
            {"inputs.train": "file:///nonexistent/smdist-hostile"},
        ),
    ]


def _catalogue() -> list[Case]:
    g = "catalogue"
    fv, itype = "code.framework_version", "cluster.instance_type"
    trainium = (itype, "strategy")
    return [
        refuse(g, "pytorch-9.9.9", fv, {fv: "9.9.9"}),
        refuse(g, "torch-distributed-9.9.9", fv, {fv: "9.9.9"}, "pytorch_ddp_torch_distributed"),
        refuse(g, "tensorflow-9.9.9", fv, {fv: "9.9.9"}, "mwms"),
        refuse(g, "mwms-on-trainium", trainium, {itype: "ml.trn1.32xlarge"}, "mwms"),
        refuse(g, "mwms-on-trainium-2", trainium, {itype: "ml.trn2.48xlarge"}, "mwms"),
        refuse(
            g,
            "horovod-tf-on-trainium",
            trainium,
            {itype: "ml.trn1n.32xlarge"},
            "horovod_tensorflow",
        ),
        refuse(g, "keep-alive-21601", "keep_alive", {"keep_alive": 21601}),
        refuse(g, "keep-alive-negative", "keep_alive", {"keep_alive": -1}),
        refuse(g, "py27", ("code.py_version", fv), {"code.py_version": "py27"}),
    ]


REFUSED: list[Case] = [*_too_long(), *_nul(), *_secrets(), *_paths(), *_catalogue()]
