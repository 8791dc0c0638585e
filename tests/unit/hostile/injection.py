"""Shell, argv and look-alike shapes in places where they are never valid.

Names, identifiers and launcher flags reach command lines, paths and API calls, so each has a
pattern (SageMaker's own, or a stricter one smdist states) and anything outside it is refused
with the field named. Hyperparameter and environment *values* are different: any string is
valid there and must arrive byte-exactly (see ``accepted``).
"""

from __future__ import annotations

from hostile.build import EXAMPLE_NAMES, Case, refuse, rotate

TOUCH = "CUDA_VISIBLE_DEVICES=';touch /tmp/smdist-hostile;#'"
BUCKET = "s3://my-training-bucket/train"
MPI_EXAMPLES = ["horovod_pytorch", "horovod_tensorflow", "sddp", "smp_v1"]

# Shapes a shell, an argv parser or a human reader would take for something else.
SHAPES = {
    "semicolon": "x;touch /tmp/smdist-hostile",
    "subshell": "x$(touch /tmp/smdist-hostile)",
    "backtick": "x`touch /tmp/smdist-hostile`",
    "single-quote": "x'y",
    "double-quote": 'x"y',
    "and": "x&&id",
    "pipe": "x|id",
    "newline": "x\nid",
    "nul": "x\x00y",
    "carriage-return": "x\ry",
    "env-assignment": TOUCH,
    "look-alike": "\u0445",  # Cyrillic kha, drawn as a Latin x
    "rtl-override": "x\u202eyp.exe",
    "zero-width": "x\u200by",
    "fullwidth": "\uff58",
    "space": "x y",
}


def _names() -> list[Case]:
    cases = [
        refuse("job-name", key, "name", {"name": "job" + shape})
        for key, shape in SHAPES.items()
        if key not in ("look-alike", "fullwidth")
    ]
    cases += [
        refuse("job-name", "look-alike", "name", {"name": "j\u043eb"}),  # Cyrillic o
        refuse("job-name", "fullwidth", "name", {"name": "\uff4a\uff4f\uff42"}),
        refuse("job-name", "too-long", "name", {"name": "a" * 1000}),
        refuse("job-name", "leading-hyphen", "name", {"name": "-job"}),
        refuse("job-name", "empty", "name", {"name": ""}),
        refuse("job-name", "dot-dot-slash", "name", {"name": "../job"}),
    ]
    return cases


def _channels() -> list[Case]:
    shapes = ["semicolon", "subshell", "backtick", "newline", "nul", "pipe", "env-assignment"]
    shapes += ["look-alike", "rtl-override", "space"]
    cases = [
        refuse("channel-name", key, "inputs", {("inputs", "train" + SHAPES[key]): BUCKET}, on)
        for key, on in zip(shapes, EXAMPLE_NAMES * 2, strict=False)
    ]
    cases += [
        refuse("channel-name", "too-long", "inputs", {("inputs", "c" * 65): BUCKET}),
        refuse("channel-name", "slash", "inputs", {("inputs", "../train"): BUCKET}),
        refuse("channel-name", "empty", "inputs", {("inputs", ""): BUCKET}),
    ]
    return cases


def _hyperparameter_names() -> list[Case]:
    shapes = [k for k in SHAPES if k not in ("zero-width",)]
    cases = [
        refuse(
            "hyperparameter-name",
            key,
            "hyperparameters",
            {("hyperparameters", "lr" + SHAPES[key]): 1},
            rotate(EXAMPLE_NAMES, index),
        )
        for index, key in enumerate(shapes)
    ]
    cases += [
        refuse(
            "hyperparameter-name", "argv-flag", "hyperparameters", {("hyperparameters", "--lr"): 1}
        ),
        refuse(
            "hyperparameter-name",
            "too-long",
            "hyperparameters",
            {("hyperparameters", "h" * 300): 1},
        ),
    ]
    return cases


def _environment_names() -> list[Case]:
    shapes = ["semicolon", "subshell", "backtick", "single-quote", "newline", "nul"]
    shapes += ["carriage-return", "env-assignment", "look-alike", "space", "pipe"]
    cases = [
        refuse(
            "environment-name",
            key,
            "environment",
            {("environment", "A" + SHAPES[key]): "1"},
            rotate(EXAMPLE_NAMES, index + 3),
        )
        for index, key in enumerate(shapes)
    ]
    cases += [
        refuse("environment-name", "assignment", "environment", {("environment", "A=B"): "1"}),
        refuse("environment-name", "digit-first", "environment", {("environment", "1ABC"): "1"}),
        refuse("environment-name", "hyphen", "environment", {("environment", "A-B"): "1"}),
        refuse("environment-name", "too-long", "environment", {("environment", "E" * 600): "1"}),
        refuse("environment-name", "empty", "environment", {("environment", ""): "1"}),
    ]
    return cases


def _mpi_options() -> list[Case]:
    options = {
        "semicolon": "-x A=1; touch /tmp/smdist-hostile",
        "subshell": "-x A=$(touch /tmp/smdist-hostile)",
        "backtick": "-x A=`touch /tmp/smdist-hostile`",
        "and": "-x A=1 && id",
        "pipe": "-x A=1 | tee /tmp/smdist-hostile",
        "single-quote": "-x 'A=1 2'",
        "double-quote": '-x "A=1"',
        "newline": "-x A=1\nid",
        "nul": "-x A=1\x00",
        "carriage-return": "-x A=1\r",
        "env-assignment": "-x " + TOUCH,
        "redirect": "-x A=1 > /tmp/smdist-hostile",
        "variable": "-x A=${HOME}",
        "comment": "-x A=1 #",
        "en-dash-flag": "\u2013x A=1",  # looks like -x
        "rtl-override": "-x A=\u202e1",
        "too-long": "-x A=" + "1" * 3000,
        "not-a-flag": "touch /tmp/smdist-hostile",
    }
    cases = [
        refuse(
            "mpi-options",
            key,
            "strategy.custom_mpi_options",
            {"strategy.custom_mpi_options": v},
            on,
        )
        for (key, v), on in zip(options.items(), MPI_EXAMPLES * 5, strict=False)
    ]
    cases.append(
        refuse(
            "mpi-options",
            "list",
            "strategy.custom_mpi_options",
            {"strategy.custom_mpi_options": ["-x", "A=1"]},
            "horovod_pytorch",
        )
    )
    return cases


def _identifiers() -> list[Case]:
    """Instance types, regions, role ARNs, S3 URIs and tag keys."""
    role = "arn:aws:iam::123456789012:role/SageMakerRole"
    itype = "cluster.instance_type"
    cases = [
        refuse("instance-type", "semicolon", itype, {itype: "ml.p3.2xlarge;id"}),
        refuse("instance-type", "subshell", itype, {itype: "ml.p3.2xlarge$(id)"}),
        refuse("instance-type", "newline", itype, {itype: "ml.p3.2xlarge\n"}),
        refuse("instance-type", "nul", itype, {itype: "ml.p3.2xlarge\x00"}),
        refuse("instance-type", "look-alike", itype, {itype: "ml.\u04403.2xlarge"}),
        refuse("instance-type", "upper-case", itype, {itype: "ML.P3.2XLARGE"}),
        refuse("instance-type", "leading-space", itype, {itype: " ml.p3.2xlarge"}),
        refuse("instance-type", "too-long", itype, {itype: "ml." + "x" * 5000}),
        refuse("instance-type", "list", itype, {itype: ["ml.p3.2xlarge"]}),
        refuse("instance-type", "number", itype, {itype: 5}),
        refuse("instance-type", "not-for-training", itype, {itype: "ml.t2.micro"}),
        refuse("region", "typo", "region", {"region": "us-westt-2"}),
        refuse("region", "semicolon", "region", {"region": "us-west-2;id"}),
        refuse("region", "newline", "region", {"region": "us-west-2\n"}),
        refuse("region", "nul", "region", {"region": "us-west-2\x00"}),
        refuse("region", "not-a-region", "region", {"region": "xx-west-9"}),
        refuse("region", "fullwidth", "region", {"region": "\uff55s-west-2"}),
        refuse("region", "upper-case", "region", {"region": "US-WEST-2"}),
        refuse("region", "number", "region", {"region": 2}),
        refuse("role", "semicolon", "role", {"role": role + ";id"}),
        refuse("role", "subshell", "role", {"role": "arn:aws:iam::123456789012:role/$(id)"}),
        refuse("role", "newline", "role", {"role": role + "\n"}),
        refuse("role", "nul", "role", {"role": role + "\x00"}),
        refuse("role", "user-not-role", "role", {"role": "arn:aws:iam::123456789012:user/R"}),
        refuse("role", "quote", "role", {"role": role + "'"}),
        refuse("role", "too-long", "role", {"role": role + "a" * 2100}),
        refuse("role", "mapping", "role", {"role": {"name": "SageMakerRole"}}),
        refuse("s3", "bucket-semicolon", "output_path", {"output_path": "s3://buck;et/x"}),
        refuse("s3", "bucket-subshell", "output_path", {"output_path": "s3://b$(id)/x"}),
        refuse("s3", "look-alike-bucket", "output_path", {"output_path": "s3://buc\u043aet/x"}),
        refuse("s3", "upper-case-bucket", "inputs", {"inputs.train": "S3://My-Bucket/x"}),
        refuse("s3", "nul-in-key", "checkpoint.s3_uri", {"checkpoint.s3_uri": BUCKET + "\x00"}),
        refuse("s3", "nul-in-input", "inputs", {"inputs.train": BUCKET + "/\x00"}),
        refuse("s3", "too-long", "output_path", {"output_path": BUCKET + "/" + "k" * 1100}),
        refuse("s3", "http", "output_path", {"output_path": "http://my-training-bucket/x"}),
        refuse("s3", "list", "output_path", {"output_path": [BUCKET]}),
        refuse("tags", "semicolon", "tags", {("tags", "team;id"): "ml"}),
        refuse("tags", "subshell", "tags", {("tags", "$(id)"): "ml"}),
        refuse("tags", "backtick", "tags", {("tags", "`id`"): "ml"}),
        refuse("tags", "nul-key", "tags", {("tags", "team\x00"): "ml"}),
        refuse("tags", "key-too-long", "tags", {("tags", "k" * 129): "ml"}),
        refuse("tags", "aws-prefix", "tags", {("tags", "aws:cost"): "ml"}),
        refuse("tags", "nul-value", "tags", {("tags", "team"): "m\x00l"}),
        refuse("tags", "value-too-long", "tags", {("tags", "team"): "v" * 257}),
        refuse("tags", "list", "tags", {"tags": ["team=ml"]}),
        refuse("tags", "number-value", "tags", {("tags", "team"): 5}),
    ]
    return cases


REFUSED: list[Case] = [
    *_names(),
    *_channels(),
    *_hyperparameter_names(),
    *_environment_names(),
    *_mpi_options(),
    *_identifiers(),
]
