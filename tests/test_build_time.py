"""Generation as a build step (kafkagen.build): the [tool.kafkagen] settings, regeneration
only when the inputs change, and the example project built by hatchling and by setuptools
from a fresh virtual environment, as its users build it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import kafkagen
import pytest
from kafkagen.build.config import BuildError, Settings, load_settings
from kafkagen.build.generation import ensure_generated
from kafkagen.generator import output
from test_generate import demo_specs

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "kip-example"
PACKAGE = "src/kip_example/protocol"


def project(root: Path, table: str) -> Path:
    """A project folder with the demo specs in ``specs/`` and ``table`` as [tool.kafkagen]."""
    demo_specs(root / "specs")
    (root / "pyproject.toml").write_text(f"[tool.kafkagen]\n{table}\n", encoding="utf-8")
    return root


def config_error(root: Path) -> str:
    with pytest.raises(BuildError) as caught:
        load_settings(root)
    return str(caught.value)


# --------------------------------------------------------------------------- the settings


@pytest.mark.parametrize(
    ("table", "line"),
    [
        ('spec = ["specs"]\nout = "pkg"', "has no key 'spec' (its keys: specs, out)"),
        ('specs = "specs"\nout = "pkg"', "specs: must be a list (got 'specs')"),
        ('specs = ["specs", 3]\nout = "pkg"', "specs[1]: must be a string (got 3)"),
        ("specs = []\nout = 'pkg'", "specs: must not be empty"),
        ('specs = ["specs"]', "out: missing (it is required)"),
        ('specs = ["specs"]\nout = 7', "out: must be a string (got 7)"),
        ('specs = ["nope"]\nout = "pkg"', "specs[0]: no folder 'nope' in the project"),
        ('specs = ["specs"]\nout = "../pkg"', "out: must be a path inside the project"),
        ('specs = ["specs"]\nout = "/tmp/pkg"', "out: must be a path inside the project"),
        ('specs = ["specs"]\nout = "."', "out: must name a package folder, not the project"),
        ('specs = ["specs"]\nout = "src/my-pkg"', "out: 'my-pkg' is not a Python package name"),
        ('specs = ["specs"]\nout = "specs/pkg"', "out: 'specs/pkg' overlaps the spec folder"),
    ],
)
def test_a_wrong_setting_is_one_line_naming_the_key(tmp_path: Path, table: str, line: str) -> None:
    message = config_error(project(tmp_path, table))
    assert "\n" not in message
    assert message.startswith("pyproject.toml: [tool.kafkagen] ")
    assert line in message


def test_a_project_without_the_table_is_told_what_to_add(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    assert config_error(tmp_path) == (
        "pyproject.toml: no [tool.kafkagen] table: it names the spec folders and 'out'"
    )


def test_settings_are_paths_inside_the_project(tmp_path: Path) -> None:
    root = project(tmp_path, 'specs = ["specs"]\nout = "src/demo/protocol"').resolve()
    settings = load_settings(root)
    assert settings == Settings(root, (root / "specs",), root / "src" / "demo" / "protocol")
    assert settings.shown(settings.out) == "src/demo/protocol"


# --------------------------------------------------------------------------- regeneration


def generated(settings: Settings) -> dict[str, tuple[int, str]]:
    """Each file of the generated package: (inode, text); a rewrite changes the inode."""
    return {
        p.name: (p.stat().st_ino, p.read_text(encoding="utf-8"))
        for p in sorted(settings.out.iterdir())
        if p.is_file()
    }


@pytest.fixture
def demo(tmp_path: Path) -> Settings:
    return load_settings(project(tmp_path / "proj", 'specs = ["specs"]\nout = "src/demo"'))


def test_the_package_is_written_with_its_stamp(demo: Settings) -> None:
    said = ensure_generated(demo)
    assert said.startswith("kafkagen: wrote src/demo (2 specs, 3 files) in ")
    files = generated(demo)
    assert {"__init__.py", "demo.py", "py.typed", output.MARKER, output.STAMP} <= set(files)
    stamp = files[output.STAMP][1]
    assert stamp.startswith(f"kafkagen {kafkagen.__version__}\ninputs sha256:")


def test_unchanged_inputs_write_nothing(demo: Settings) -> None:
    ensure_generated(demo)
    before = generated(demo)
    assert (
        ensure_generated(demo) == "kafkagen: src/demo is up to date (specs and kafkagen unchanged)"
    )
    assert generated(demo) == before


def test_a_changed_spec_regenerates(demo: Settings) -> None:
    ensure_generated(demo)
    spec = demo.specs[0] / "DemoRequest.json"
    doc = json.loads(spec.read_text(encoding="utf-8"))
    doc["fields"].append({"name": "Extra", "type": "int32", "versions": "2+", "ignorable": True})
    spec.write_text(json.dumps(doc), encoding="utf-8")
    assert "wrote src/demo" in ensure_generated(demo)
    assert "self.extra = extra" in (demo.out / "demo.py").read_text(encoding="utf-8")


def test_another_kafkagen_version_regenerates(
    demo: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    ensure_generated(demo)
    monkeypatch.setattr(kafkagen, "__version__", "99.0")
    assert "wrote src/demo" in ensure_generated(demo)
    stamp = (demo.out / output.STAMP).read_text(encoding="utf-8")
    assert stamp.startswith("kafkagen 99.0\n")


def test_a_spec_error_leaves_the_previous_package_whole(demo: Settings) -> None:
    ensure_generated(demo)
    before = generated(demo)
    spec = demo.specs[0] / "DemoRequest.json"
    spec.write_text(spec.read_text(encoding="utf-8").replace('"int32"', '"int33"'), "utf-8")
    with pytest.raises(BuildError) as caught:
        ensure_generated(demo)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("DemoRequest.json: DemoRequest.Items.Id: type must be")
    assert "'int33'" in lines[0]
    assert lines[-1] == "kafkagen: 1 spec error(s); nothing written"
    assert generated(demo) == before
    assert sorted(p.name for p in demo.out.parent.iterdir()) == ["demo"]


def test_a_foreign_file_in_the_package_folder_is_refused(demo: Settings) -> None:
    demo.out.mkdir(parents=True)
    (demo.out / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(BuildError, match=r"^pyproject.toml: \[tool.kafkagen\] out: .*notes.txt"):
        ensure_generated(demo)
    assert [p.name for p in demo.out.iterdir()] == ["notes.txt"]


def test_kafkagen_generate_may_replace_a_package_the_build_wrote(demo: Settings) -> None:
    ensure_generated(demo)
    output.check_output_folder(demo.out)  # the stamp is kafkagen's own file: no refusal


def test_setuptools_names_the_package_by_its_package_dir(demo: Settings) -> None:
    from kafkagen.build.setuptools_command import package_name
    from setuptools.errors import SetupError  # type: ignore[import-untyped, unused-ignore]

    assert package_name(demo, {"": "src"}) == "demo"
    assert package_name(demo, {}) == "src.demo"
    assert package_name(demo, {"": ".", "kip": "src"}) == "kip.demo"
    with pytest.raises(SetupError, match="outside every folder"):
        package_name(demo, {"": "lib"})


def test_the_example_commits_no_generated_code() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "examples"], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout.split()
    assert "examples/kip-example/specs/DescribeTopicLabelsRequest.json" in tracked
    assert not [name for name in tracked if f"kip-example/{PACKAGE}/" in name]


@pytest.mark.slow
def test_the_repository_suite_does_not_collect_the_example_tests() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"],
        capture_output=True, text=True, cwd=REPO, timeout=600,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stdout[-2000:]
    assert "tests/test_build_time.py::" in listed.stdout
    assert "examples/" not in listed.stdout


# --------------------------------------------------------------------------- the example, built


class Venv:
    """A fresh virtual environment whose pip finds kafkagen only in ``wheels``."""

    def __init__(self, root: Path, wheels: Path) -> None:
        self.root = root
        self.env = {
            **os.environ,
            "PIP_FIND_LINKS": str(wheels),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        self.env.pop("VIRTUAL_ENV", None)
        self.env.pop("PYTHONPATH", None)
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
        self.ok("-m", "pip", "install", "--quiet", "build", "pytest")

    def run(self, *args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.root / "bin" / "python"), *map(str, args)],
            capture_output=True, text=True, cwd=cwd, env=self.env, timeout=900,
        )  # fmt: skip

    def ok(self, *args: str | Path, cwd: Path | None = None) -> str:
        result = self.run(*args, cwd=cwd)
        assert result.returncode == 0, (args, result.stdout[-3000:], result.stderr[-3000:])
        return result.stdout + result.stderr


def example_copy(root: Path, backend: str) -> Path:
    """The example project as its users have it (outside this repository), built by
    ``backend``; without anything a build left in the repository's copy."""
    shutil.copytree(
        EXAMPLE, root,
        ignore=shutil.ignore_patterns("protocol", "dist", "build", "*.egg-info", "__pycache__"),
    )  # fmt: skip
    if backend == "setuptools":
        shutil.copy(root / "pyproject.setuptools.toml", root / "pyproject.toml")
    assert not (root / PACKAGE).exists()
    return root


def edit_toml(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


NEW_FIELD = {
    "name": "KeyPrefix",
    "type": "string",
    "versions": "1+",
    "nullableVersions": "1+",
    "default": "null",
    "ignorable": True,
}

USES_THE_NEW_FIELD = textwrap.dedent("""
    import kip_example.protocol as p
    from kip_example.protocol.describe_topic_labels import DescribeTopicLabelsRequest as R
    r = R(topics=["orders"], key_prefix="team.")
    assert R.decode(r.encode(1), 1) == r
    print(p.__file__)
    """)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["hatchling", "setuptools"])
def test_the_example_builds_installs_and_passes_its_tests(
    tmp_path: Path, kafkagen_dist: Path, backend: str
) -> None:
    venv = Venv(tmp_path / "venv", kafkagen_dist)
    proj = example_copy(tmp_path / "kip-example", backend)
    dist = tmp_path / "dist"

    # A wheel, built where the project is: the package is generated, then packed.
    said = venv.ok("-m", "build", "--wheel", "--outdir", dist, proj)
    assert "kafkagen: wrote src/kip_example/protocol (4 specs, 4 files)" in said
    (wheel,) = dist.glob("kip_example-*.whl")
    with zipfile.ZipFile(wheel) as z:
        packed = {name for name in z.namelist() if name.startswith("kip_example/protocol/")}
    assert packed == {
        f"kip_example/protocol/{name}"
        for name in ("__init__.py", "api_versions.py", "describe_topic_labels.py", "py.typed")
    }

    # Unchanged specs: the next build does not generate again.
    said = venv.ok("-m", "build", "--wheel", "--outdir", tmp_path / "again", proj)
    assert "kafkagen: src/kip_example/protocol is up to date" in said
    assert "kafkagen: wrote" not in said

    # The sdist carries what a wheel built from it needs: the specs (and for hatchling the
    # generated package with its stamp, so that wheel finds it current).
    venv.ok("-m", "build", "--sdist", "--outdir", tmp_path / "sdist", proj)
    (sdist,) = (tmp_path / "sdist").glob("kip_example-*.tar.gz")
    listed = subprocess.run(["tar", "tzf", sdist], capture_output=True, text=True, check=True)
    assert "kip_example-0.1.0/specs/DescribeTopicLabelsResponse.json" in listed.stdout.split()
    stamp = f"kip_example-0.1.0/{PACKAGE}/{output.STAMP}"
    assert (stamp in listed.stdout.split()) == (backend == "hatchling")

    # Installed with kafkagen, the project's own tests pass against the installed package.
    (kafkagen_wheel,) = kafkagen_dist.glob("kafkagen-*.whl")
    venv.ok("-m", "pip", "install", "--quiet", kafkagen_wheel, wheel)
    installed = venv.ok("-c", "import kip_example.protocol as p; print(p.__file__)", cwd=tmp_path)
    assert installed.strip().startswith(str(venv.root))
    tests = tmp_path / "example-tests"
    shutil.copytree(proj / "tests", tests)
    result = venv.ok("-m", "pytest", "-q", "-p", "no:cacheprovider", tests, cwd=tmp_path)
    assert " passed" in result and "failed" not in result

    # Editable: the package lives in the project; a changed spec is there after reinstalling.
    venv.ok("-m", "pip", "uninstall", "--yes", "--quiet", "kip-example")
    venv.ok("-m", "pip", "install", "--quiet", "-e", proj)
    spec = proj / "specs" / "DescribeTopicLabelsRequest.json"
    text = spec.read_text(encoding="utf-8")
    field = '{"name": "Topics", "type": "[]string", "versions": "0+", "entityType": "topicName"},'
    assert field in text
    spec.write_text(text.replace(field, f"{field}\n    {json.dumps(NEW_FIELD)},"), "utf-8")
    assert venv.run("-c", USES_THE_NEW_FIELD, cwd=tmp_path).returncode != 0  # not yet
    venv.ok("-m", "pip", "install", "--quiet", "-e", proj)
    used = venv.ok("-c", USES_THE_NEW_FIELD, cwd=tmp_path)
    assert used.strip() == str(proj / PACKAGE / "__init__.py")

    # A wrong setting fails the build with one line naming the key.
    before = {p.name: p.read_bytes() for p in (proj / PACKAGE).iterdir() if p.is_file()}
    pyproject = proj / "pyproject.toml"
    edit_toml(pyproject, 'specs = ["specs"]', 'specs = "specs"')
    failed = venv.run("-m", "build", "--wheel", "--outdir", tmp_path / "bad", proj)
    assert failed.returncode != 0
    shown = failed.stdout + failed.stderr
    assert "pyproject.toml: [tool.kafkagen] specs: must be a list (got 'specs')" in shown
    assert "Traceback" not in shown
    edit_toml(pyproject, 'specs = "specs"', 'specs = ["specs"]')

    # A spec error fails the build with the generator's line; the package is left whole.
    spec.write_text(spec.read_text(encoding="utf-8").replace('"[]string"', '"[]strin"'), "utf-8")
    failed = venv.run("-m", "build", "--wheel", "--outdir", tmp_path / "bad", proj)
    assert failed.returncode != 0
    shown = failed.stdout + failed.stderr
    assert "DescribeTopicLabelsRequest.json: DescribeTopicLabelsRequest.Topics: " in shown
    assert "'[]strin'" in shown
    assert "kafkagen: 1 spec error(s); nothing written" in shown
    assert "Traceback" not in shown
    after = {p.name: p.read_bytes() for p in (proj / PACKAGE).iterdir() if p.is_file()}
    assert after == before
    leftovers = [p.name for p in (proj / PACKAGE).parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # no half-written package beside the old one
