"""The project's identity is written once: the version and the repository URL in
pyproject.toml, read back by `azjax.__version__` and repeated only where a format needs
them (CITATION.cff), which must agree; the license is Apache-2.0 in every place."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import azjax

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _citation() -> dict[str, str]:
    """CITATION.cff's top-level `key: value` lines (no YAML parser needed for these)."""
    lines = (ROOT / "CITATION.cff").read_text().splitlines()
    pairs = (re.fullmatch(r'([a-z-]+): "?(.*?)"?', line) for line in lines)
    return {m[1]: m[2] for m in pairs if m}


def test_version_is_read_from_the_installed_metadata():
    assert azjax.__version__ == PROJECT["version"]


def test_citation_names_this_version_repository_and_license():
    cff = _citation()
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == PROJECT["version"]
    assert cff["repository-code"] == PROJECT["urls"]["Repository"]
    assert cff["url"] == PROJECT["urls"]["Documentation"]
    assert cff["license"] == PROJECT["license"] == "Apache-2.0"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", cff["date-released"])


def test_license_file_is_the_apache_license():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert PROJECT["license-files"] == ["LICENSE"]


def test_readme_says_how_to_cite():
    readme = (ROOT / "README.md").read_text()
    assert "CITATION.cff" in readme and "azjax.__version__" in readme
