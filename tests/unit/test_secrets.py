"""Nothing secret ever ships: by name, by content, through symlinks, whatever the ignore files say.

Every test builds a real directory and runs the real manifest, bundle, stage and pack code.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from smdist.checks import secrets as secret_scan
from smdist.errors import SpecError
from smdist.packaging import bundle as packaging
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


def write(root: Path, relative: str, text: str | bytes = "x = 1\n") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def body(n: int = 600) -> str:
    """A key body: base64 of random bytes in 64-character lines, as PEM writes it."""
    text = base64.b64encode(os.urandom(n)).decode()
    return "\n".join(text[i : i + 64] for i in range(0, len(text), 64))


def pem(label: str) -> str:
    return f"-----BEGIN {label}-----\n{body()}\n-----END {label}-----\n"


IMAGE = "111122223333.dkr.ecr.us-west-2.amazonaws.com/train:1"
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root, "train.py", "print('train')\n")
    write(root, "lib/model.py", "X = 1\n")
    return root


def shipped(root: Path) -> list[str]:
    return packaging.source_files(root)


def reason(root: Path, relative: str) -> str | None:
    return packaging.manifest(root).reason(relative)


# ---- by name -----------------------------------------------------------------------------------
SECRET_FILES = [
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".gitcookies",
    ".pypirc",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".docker/config.json",
    "tools/.docker/config.json",
    ".ssh/config",
    ".ssh/known_hosts",
    "deploy/.ssh/authorized_keys",
    ".kube/config",
    ".gnupg/pubring.kbx",
    ".aws/credentials",
    ".aws/config",
    ".azure/accessTokens.json",
    ".config/gcloud/application_default_credentials.json",
    ".config/gcloud/credentials.db",
    "nested/.config/gcloud/access_tokens.db",
    "application_default_credentials.json",
    "client_secret_1234.apps.googleusercontent.com.json",
    "service-account.json",
    "service_account_prod.json",
    "kaggle.json",
    "config/huggingface/token",  # under .cache/ it is left out by default as well
    "cert.p12",
    "cert.pfx",
    "release.keystore",
    "store.jks",
    "putty.ppk",
    "server.pem",
    "tls/private.key",
    "Server.KEY",
    "id_rsa",
    "ID_RSA",
    "id_rsa.pub",
    "id_dsa",
    "keys/id_ecdsa",
    "keys/id_ed25519",
    "keys/id_ed25519_sk.pub",
    ".env",
    ".env.production",
    "prod.env",
    "credentials",
    "credentials.json",
    "Credentials.ini",
    ".boto",
    ".s3cfg",
    "terraform.tfstate",
    "infra/terraform.tfstate.backup",
    ".vault-token",
    ".htpasswd",
    ".pgpass",
    ".my.cnf",
    "kubeconfig",
    "secrets.yaml",
    ".bash_history",
]


@pytest.mark.parametrize("relative", SECRET_FILES)
def test_secret_file_is_left_out_by_name(project: Path, relative: str):
    write(project, relative, "harmless text\n")
    assert relative not in shipped(project)
    assert reason(project, relative).startswith("secret by name: ")
    assert relative in packaging.excluded_secrets(project)


def test_reason_names_the_pattern(project: Path):
    write(project, ".netrc", "machine example.com login u password p\n")
    write(project, ".ssh/config", "Host x\n")
    assert reason(project, ".netrc") == "secret by name: .netrc"
    assert reason(project, ".ssh/config") == "secret by name: .ssh/"


INNOCENT = [
    "id_mapping.py",
    "keyboard.py",
    "keys.py",
    "monkey.py",
    "tokenizer.json",
    "environment.py",
    "env.py",
    "ssh_utils.py",
    "netrc_parser.py",
    "pem_utils.py",
    "keystore.py",
    "docker/config.json",
    "config/service.json",
    "secret_sauce.py",
    "terraform/main.tf",
]


@pytest.mark.parametrize("relative", INNOCENT)
def test_innocent_look_alike_names_ship(project: Path, relative: str):
    write(project, relative, "VALUE = 1\n")
    assert relative in shipped(project)


def test_a_large_secret_directory_is_listed_as_one_entry(project: Path):
    for i in range(80):
        write(project, f".env/lib/mod{i}.py")  # a virtualenv named .env
    found = packaging.manifest(project)
    assert [item.path for item in found.left_out] == [".env/"]
    assert found.left_out[0].secret


# ---- by content --------------------------------------------------------------------------------
CONTENT = {
    "rsa": (pem("RSA PRIVATE KEY"), "private key header"),
    "pkcs8": (pem("PRIVATE KEY"), "private key header"),
    "ec": (pem("EC PRIVATE KEY"), "private key header"),
    "encrypted": (pem("ENCRYPTED PRIVATE KEY"), "private key header"),
    "openssh": (pem("OPENSSH PRIVATE KEY"), "private key header"),
    "pgp": (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n"
        + body()
        + "\n-----END PGP PRIVATE KEY BLOCK-----\n",
        "private key header",
    ),
    "ssh2": (
        '---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: "k"\n' + body() + "\n",
        "private key header",
    ),
    "putty": (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n" + body(),
        "PuTTY private key",
    ),
    "aws_pair": (
        f"KEY_ID = '{AWS_ID}'\nSECRET = '{AWS_SECRET}'\n",
        "AWS access key id with a secret key",
    ),
    "aws_session": (
        f"ASIAY34FZKBOKMUTVV7A\n{AWS_SECRET}\n",
        "AWS access key id with a secret key",
    ),
    "aws_labelled": (f"aws_secret_access_key = {AWS_SECRET}\n", "AWS secret access key"),
    "aws_json": (f'{{"SecretAccessKey": "{AWS_SECRET}"}}', "AWS secret access key"),
    "aws_env": (f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n", "AWS secret access key"),
    "private_key_field": ('{"private_key": "REDACTED-BUT-PRESENT"}', 'JSON "private_key" field'),
    "service_account": (
        json.dumps(
            {
                "type": "service_account",
                "project_id": "p",
                "private_key_id": "0123abcd",
                "client_email": "sa@p.iam.gserviceaccount.com",
            },
            indent=2,
        ),
        "Google service-account / authorized-user credentials",
    ),
    "authorized_user": (
        json.dumps({"type": "authorized_user", "refresh_token": "1//0abc", "client_id": "x"}),
        "Google service-account / authorized-user credentials",
    ),
    "github": ("TOKEN = 'ghp_" + "a1B2" * 9 + "'\n", "GitHub token"),
    "gitlab": ("token: glpat-" + "xY3_" * 5 + "\n", "GitLab token"),
    "slack": ("SLACK = 'xoxb-123456789012-" + "Ab3" * 8 + "'\n", "Slack token"),
    "huggingface": ("HF_TOKEN=hf_" + "abcDEFghiJ" * 3 + "abcd\n", "Hugging Face token"),
}


@pytest.mark.parametrize("kind", sorted(CONTENT))
def test_secret_content_under_an_innocent_name_is_left_out(project: Path, kind: str):
    text, why = CONTENT[kind]
    write(project, "notes.txt", "some notes\n" + text + "\nmore notes\n")
    assert "notes.txt" not in shipped(project)
    assert reason(project, "notes.txt") == f"secret by content: {why}"
    assert "notes.txt" in packaging.excluded_secrets(project)


def test_service_account_json_with_a_real_looking_key(project: Path):
    key = pem("PRIVATE KEY")
    write(
        project,
        "config/settings.json",
        json.dumps({"type": "service_account", "private_key": key, "client_email": "a@b"}),
    )
    assert reason(project, "config/settings.json") == "secret by content: private key header"


@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="needs ssh-keygen")
def test_a_real_openssh_key_is_found(project: Path, tmp_path: Path):
    key = tmp_path / "k"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30
    )
    shutil.copyfile(key, project / "README")
    shutil.copyfile(key.with_suffix(".pub"), project / "public.txt")
    assert reason(project, "README") == "secret by content: private key header"
    assert "public.txt" in shipped(project)  # a public key is not a secret


@pytest.mark.skipif(not shutil.which("openssl"), reason="needs openssl")
def test_a_real_encrypted_pem_key_is_found(project: Path):
    result = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
        + ["-aes-128-cbc", "-pass", "pass:pw"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    write(project, "data/blob.dat", result.stdout)
    assert reason(project, "data/blob.dat") == "secret by content: private key header"


INNOCENT_CONTENT = {
    "key_parser": 'HEADER = "-----BEGIN RSA PRIVATE KEY-----"\nif line == HEADER:\n    pass\n',
    "redacted": "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n",
    "public_key": pem("PUBLIC KEY"),
    "certificate": pem("CERTIFICATE"),
    "lone_key_id": f"# the example key id in AWS's docs: {AWS_ID}\n",
    "git_sha": f"{AWS_ID} at 3f786850e387550fdab836ed7e6dc881de23001b\n",
    "schema": json.dumps({"type": "object", "properties": {"type": {"type": "string"}}}),
    "sa_template": json.dumps({"type": "service_account"}),
    "code_reading_a_key": 'creds = {"type": "x", "private_key": os.environ["KEY"]}\n',
    "prose": "Use a service_account and a private_key; set AWS_SECRET_ACCESS_KEY yourself.\n",
    "binary": bytes(range(256)) * 64,
}


@pytest.mark.parametrize("kind", sorted(INNOCENT_CONTENT))
def test_innocent_look_alike_content_ships(project: Path, kind: str):
    write(project, "module.py", INNOCENT_CONTENT[kind])
    assert "module.py" in shipped(project)


def test_a_key_at_the_end_of_a_large_file_is_found_within_budget(project: Path):
    size = 24 << 20
    data = bytearray(os.urandom(size))
    key = pem("OPENSSH PRIVATE KEY").encode()
    data[-len(key) :] = key
    write(project, "weights.bin", bytes(data))
    write(project, "clean.bin", os.urandom(size))
    start = time.perf_counter()
    found = packaging.manifest(project)
    elapsed = time.perf_counter() - start
    assert found.reason("weights.bin") == "secret by content: private key header"
    assert "clean.bin" in found.shipped
    assert elapsed < 10, f"scanning 48 MB took {elapsed:.1f} s"  # ~1 s on a busy 2-core machine


def test_a_key_across_a_read_chunk_boundary_is_found(project: Path):
    key = pem("RSA PRIVATE KEY").encode()
    boundary = secret_scan._CHUNK
    data = b"\0" * (boundary - 20) + key + b"\0" * 100  # the header straddles the boundary
    write(project, "blob.bin", data)
    assert reason(project, "blob.bin") == "secret by content: private key header"


def test_aws_key_id_and_secret_far_apart_in_a_large_file(project: Path):
    data = AWS_ID.encode() + b"\n" + os.urandom(10 << 20).replace(b"\n", b" ") + b"\n"
    data += AWS_SECRET.encode() + b"\n"
    write(project, "dump.log", data)
    assert reason(project, "dump.log") == "secret by content: AWS access key id with a secret key"


# ---- symlinks ----------------------------------------------------------------------------------
def test_symlink_to_a_secret_by_name_is_left_out(project: Path):
    write(project, ".env", "TOKEN=1\n")
    write(project, ".aws/credentials", "[default]\n")
    (project / "settings.txt").symlink_to(".env")
    (project / "creds.ini").symlink_to(".aws/credentials")
    found = packaging.manifest(project)
    assert found.reason("settings.txt") == "symlink to .env (secret by name: .env*)"
    assert found.reason("creds.ini").startswith("symlink to .aws/credentials (secret by name: ")
    assert {"settings.txt", "creds.ini"} <= set(found.secrets)


def test_a_chain_of_symlinks_is_followed_to_the_secret(project: Path):
    write(project, ".netrc", "machine x\n")
    (project / "b.txt").symlink_to(".netrc")
    (project / "a.txt").symlink_to("b.txt")
    assert reason(project, "a.txt") == "symlink to .netrc (secret by name: .netrc)"


def test_symlink_through_a_directory_link_into_a_secret_directory(project: Path):
    write(project, ".ssh/config", "Host x\n")
    (project / "ssh").symlink_to(".ssh", target_is_directory=True)
    (project / "cfg").symlink_to("ssh/config")
    assert reason(project, "cfg") == "symlink to .ssh/config (secret by name: .ssh/)"


def test_symlink_to_a_file_whose_content_is_a_secret(project: Path):
    write(project, "notes.txt", pem("RSA PRIVATE KEY"))
    (project / "readme.md").symlink_to("notes.txt")
    found = packaging.manifest(project)
    assert found.reason("notes.txt") == "secret by content: private key header"
    assert found.reason("readme.md") == (
        "symlink to notes.txt (secret by content: private key header)"
    )


def test_symlink_outside_source_dir_is_left_out_not_refused(project: Path, tmp_path: Path):
    outside = write(tmp_path / "elsewhere", "data.txt", "shared\n")
    (project / "data.txt").symlink_to(outside)
    (project / "up.txt").symlink_to("../elsewhere/data.txt")
    found = packaging.manifest(project)
    assert found.reason("data.txt") == f"symlink to a path outside source_dir: {outside}"
    assert found.reason("up.txt") == f"symlink to a path outside source_dir: {outside}"
    assert not {"data.txt", "up.txt"} & set(found.secrets)
    assert "train.py" in found.shipped  # the job still packs


def test_symlink_to_a_secret_outside_source_dir_counts_as_a_secret(project: Path, tmp_path: Path):
    outside = write(tmp_path / "home/.aws", "config", "[default]\n")
    (project / "creds.ini").symlink_to(outside)
    found = packaging.manifest(project)
    assert found.reason("creds.ini").endswith("(secret by name: .aws/)")
    assert "creds.ini" in found.secrets


def test_dangling_symlink_and_loop_do_not_crash(project: Path):
    (project / "dangling.txt").symlink_to("missing.txt")
    (project / "loop_a").symlink_to("loop_b")
    (project / "loop_b").symlink_to("loop_a")
    found = packaging.manifest(project)
    assert found.reason("dangling.txt") == "dangling symlink to missing.txt"
    assert found.reason("loop_a") == "symlink loop"
    assert found.shipped == ["lib/model.py", "train.py"]


def test_directory_symlinks_are_not_followed(project: Path, tmp_path: Path):
    write(tmp_path / "elsewhere", "secret.txt", "x\n")
    (project / "inside_dir").symlink_to("lib", target_is_directory=True)
    (project / "outside_dir").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    found = packaging.manifest(project)
    assert found.reason("inside_dir") == "symlink to a directory (not followed)"
    assert found.reason("outside_dir").startswith("symlink to a path outside source_dir")
    assert found.shipped == ["lib/model.py", "train.py"]


def test_innocent_symlink_inside_ships_its_targets_content(project: Path, tmp_path: Path):
    (project / "alias.py").symlink_to("train.py")
    assert "alias.py" in shipped(project)
    names = packaging.stage(ddp_plan(project), tmp_path / "code")
    assert "alias.py" in names
    assert (tmp_path / "code/alias.py").read_text() == "print('train')\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs fifos")
def test_a_fifo_is_left_out_without_being_opened(project: Path):
    os.mkfifo(project / "pipe")
    (project / "to_pipe").symlink_to("pipe")
    found = packaging.manifest(project)  # opening a fifo would block forever
    assert found.reason("pipe") == found.reason("to_pipe") == "not a regular file"


# ---- ignore files cannot bring a secret back -----------------------------------------------------
def test_negated_ignore_rules_cannot_bring_secrets_back(project: Path):
    write(project, ".gitignore", "*\n!*\n!.netrc\n!.ssh/\n!.ssh/**\n!.env\n")
    write(project, ".smdistignore", "!.git-credentials\n!notes.txt\n!id_rsa\n")
    write(project, "lib/.gitignore", "!*.pem\n!credentials*\n")
    for relative in (".netrc", ".ssh/config", ".env", ".git-credentials", "id_rsa"):
        write(project, relative, "x\n")
    write(project, "lib/server.pem", "x\n")
    write(project, "lib/credentials.json", "{}\n")
    write(project, "notes.txt", pem("RSA PRIVATE KEY"))
    (project / "link.txt").symlink_to(".netrc")
    files = shipped(project)
    for relative in (".netrc", ".ssh/config", ".env", ".git-credentials", "id_rsa", "notes.txt"):
        assert relative not in files
    assert "lib/server.pem" not in files and "lib/credentials.json" not in files
    assert "link.txt" not in files
    assert "train.py" in files


def test_ignored_paths_are_reported_with_their_ignore_file(project: Path):
    write(project, ".gitignore", "data/\n*.ckpt\n")
    write(project, "lib/.smdistignore", "scratch.py\n")
    write(project, "data/big.bin")
    write(project, "model.ckpt")
    write(project, "lib/scratch.py")
    found = packaging.manifest(project)
    assert found.reason("data/") == "ignored by .gitignore"
    assert found.reason("data/big.bin") == "ignored by .gitignore"
    assert found.reason("model.ckpt") == "ignored by .gitignore"
    assert found.reason("lib/scratch.py") == "ignored by lib/.smdistignore"
    assert found.secrets == []


# ---- the verdict cache -------------------------------------------------------------------------
def counting_scans(monkeypatch: pytest.MonkeyPatch) -> list[str | Path]:
    scanned: list[str | Path] = []
    real = secret_scan.scan_file

    def scan(path: str | Path) -> str | None:
        scanned.append(path)
        return real(path)

    monkeypatch.setattr(secret_scan, "scan_file", scan)
    monkeypatch.setattr(secret_scan, "_RACY_SECONDS", 0.0)
    return scanned


def test_a_re_scan_reads_only_changed_files(project: Path, monkeypatch):
    scanned = counting_scans(monkeypatch)
    first = packaging.manifest(project)
    assert len(scanned) == 2
    scanned.clear()
    assert packaging.manifest(project).shipped == first.shipped
    assert scanned == []
    write(project, "lib/model.py", "X = 2\n")
    packaging.manifest(project)
    assert [Path(p).name for p in scanned] == ["model.py"]


def test_a_file_that_becomes_a_secret_is_caught_despite_the_cache(project: Path, monkeypatch):
    counting_scans(monkeypatch)
    assert "lib/model.py" in shipped(project)
    write(project, "lib/model.py", pem("RSA PRIVATE KEY"))
    assert reason(project, "lib/model.py") == "secret by content: private key header"


def test_a_corrupt_or_unwritable_cache_changes_nothing(project: Path, private_cache: Path):
    write(project, "notes.txt", pem("PRIVATE KEY"))
    expected = shipped(project)
    for path in (private_cache / "smdist/secret-scan").iterdir():
        path.write_text("{not json")
    assert shipped(project) == expected
    shutil.rmtree(private_cache)
    private_cache.write_text("a file where the cache directory should be")
    assert shipped(project) == expected


def test_fresh_files_are_not_cached(project: Path, monkeypatch):
    scanned = counting_scans(monkeypatch)
    monkeypatch.setattr(secret_scan, "_RACY_SECONDS", 3600.0)
    packaging.manifest(project)
    packaging.manifest(project)
    assert len(scanned) == 4  # written just now: could change again within the same mtime tick


# ---- what ships: bundle, stage, pack, dry run ---------------------------------------------------
def ddp_plan(source_dir: Path, entry_point: str = "train.py"):
    return plan(
        JobSpec.from_dict(
            {
                "name": "secret-test",
                "strategy": {"kind": "pytorch_ddp", "launcher": "torchrun"},
                "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
                "code": {
                    "source_dir": str(source_dir),
                    "entry_point": entry_point,
                    "framework_version": "2.3.0",
                    "py_version": "py311",
                    "image_uri": IMAGE,  # packaging does not depend on the container catalogue
                },
            }
        )
    )


@pytest.fixture
def leaky(project: Path, tmp_path: Path) -> Path:
    """The source_dir from the issue: credential files of every kind, and links to them."""
    write(project, ".netrc", "machine api.example.com login u password p\n")
    write(project, ".git-credentials", "https://u:t@example.com\n")
    write(project, ".pypirc", "[pypi]\npassword = x\n")
    write(project, ".ssh/config", "Host x\n")
    write(project, "service-account.json", CONTENT["service_account"][0])
    write(project, ".env", "TOKEN=1\n")
    write(project, ".aws/credentials", f"[default]\n{AWS_ID}\n{AWS_SECRET}\n")
    (project / "settings.txt").symlink_to(".env")
    (project / "creds.ini").symlink_to(".aws/credentials")
    write(project, "notes.txt", pem("RSA PRIVATE KEY"))
    write(project, "id_mapping.py", "MAPPING = {}\n")
    return project


LEAKED = [
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".ssh/config",
    "service-account.json",
    ".env",
    ".aws/credentials",
    "settings.txt",
    "creds.ini",
    "notes.txt",
]


def test_pack_ships_no_secret(leaky: Path, tmp_path: Path):
    package = packaging.pack(ddp_plan(leaky), tmp_path / "out")
    with tarfile.open(package.path, "r:gz") as tar:
        names = tar.getnames()
    assert not set(LEAKED) & set(names)
    assert {"train.py", "lib/model.py", "id_mapping.py"} <= set(names)


def test_stage_copies_no_secret(leaky: Path, tmp_path: Path):
    code = tmp_path / "opt/ml/code"
    packaging.stage(ddp_plan(leaky), code)
    copied = {p.relative_to(code).as_posix() for p in code.rglob("*") if p.is_file()}
    assert not set(LEAKED) & copied
    assert "id_mapping.py" in copied


def test_an_entry_point_left_out_as_a_secret_says_why(leaky: Path):
    with pytest.raises(SpecError, match="secret by content: private key header"):
        packaging.bundle(ddp_plan(leaky, entry_point="notes.txt"))


def test_dry_run_lines_list_what_ships_and_every_left_out_path(leaky: Path):
    lines = packaging.dry_run_lines(ddp_plan(leaky))
    assert lines[0].startswith("code: ") and " files, " in lines[0]
    assert lines[1] == f"left out ({len(LEAKED)}):"
    listed = {line.split()[0]: line for line in lines[2:]}
    assert set(listed) == set(LEAKED)
    assert listed["settings.txt"].endswith("symlink to .env (secret by name: .env*)")
    assert listed["notes.txt"].endswith("secret by content: private key header")


def test_cli_dry_run_prints_the_listing_on_stderr_and_json_on_stdout(
    leaky: Path, tmp_path: Path, capsys, monkeypatch
):
    from smdist.cli.app import main

    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    job = yaml.safe_load(Path("examples/pytorch_ddp.yaml").read_text())
    job["code"].update(source_dir=str(leaky), entry_point="train.py")
    job["code"]["image_uri"] = IMAGE  # no SDK import needed to name the image
    job.update(role="arn:aws:iam::111122223333:role/SageMakerRole", region="us-west-2")
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    code = main(["submit", str(path), "--dry-run", "--bucket", "b"])
    out, err = capsys.readouterr()
    assert code == 0, err
    shown = json.loads(out)
    assert not set(LEAKED) & set(shown["files"])
    assert f"left out ({len(LEAKED)}):" in err
    assert "creds.ini" in err and "secret by name: .netrc" in err
