"""The tests' costs, from the files the cost plugin wrote (`tests/cost_plugin.py`).

    AZJAX_TEST_COSTS=costs-default.jsonl pytest
    AZJAX_TEST_COSTS=costs-slow.jsonl pytest -m slow
    python tests/cost_table.py costs-default.jsonl costs-slow.jsonl --write

prints the tables of docs/trust.md's "What the tests cost" (per file, and every test
over `--over` seconds), under a line that says when, at which commit and on which
machine the runs were measured (what each file's totals line records; for a file that
records none, `--date`, `--commit` and `--machine`, else the file's date and the
checkout's commit, and no machine); `--write`
puts them into the page between its markers and
writes `tests/file_costs.json`, the seconds of each file's default and slow tests, by
which `tests/conftest.py` hands the files to the workers longest first.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from cost_plugin import checkout_commit

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "trust.md"
FILE_COSTS = Path(__file__).resolve().parent / "file_costs.json"
BEGIN, END = "<!-- test-costs: begin -->", "<!-- test-costs: end -->"


def read_records(paths: list[Path]) -> tuple[list[dict], list[dict]]:
    """The per-test records and the totals lines of the cost files.

    Args:
        paths: files written by the cost plugin.

    Returns:
        (tests, totals): one dict per test (a test met twice keeps its last record) and
        one dict per file's totals line.
    """
    tests: dict[str, dict] = {}
    totals = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            record = json.loads(line)
            if record.get("total"):
                totals.append(record)
            else:
                tests[record["test"]] = record
    return list(tests.values()), totals


def per_file(tests: list[dict]) -> dict[str, dict]:
    """Sums of each file's tests, split into its default and slow ones.

    Args:
        tests: per-test records.

    Returns:
        {file: {"tests", "slow_tests", "seconds", "slow_seconds", "compiles",
        "compile_seconds", "cache_hits", "children"}}.
    """
    files: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for test in tests:
        entry = files[test["file"]]
        slow = test.get("slow", False)
        entry["slow_tests" if slow else "tests"] += 1
        entry["slow_seconds" if slow else "seconds"] += test["seconds"]
        for key in ("compiles", "compile_seconds", "cache_hits", "children"):
            entry[key] += test[key]
    return {name: dict(entry) for name, entry in files.items()}


def _row(cells) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def markdown(tests: list[dict], totals: list[dict], over: float) -> str:
    """The page's tables: totals, per file (longest first), and each test over `over` s."""
    lines = ["| run | tests | test seconds | wall seconds | compilations | compile s | "
             "cache hits | child processes |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for total in totals:
        lines.append(_row([total.get("name", "pytest"), total["tests"], f"{total['seconds']:.0f}",
                           f"{total['wall_seconds']:.0f}", int(total["compiles"]),
                           f"{total['compile_seconds']:.0f}", int(total["cache_hits"]),
                           int(total["children"])]))
    lines += ["", "| file | tests (slow) | seconds (slow) | compilations | compile s | "
              "cache hits | child processes |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    files = per_file(tests)
    for name, entry in sorted(files.items(),
                              key=lambda item: -(item[1].get("seconds", 0)
                                                 + item[1].get("slow_seconds", 0))):
        lines.append(_row([
            f"`{name.removeprefix('tests/')}`",
            f"{int(entry.get('tests', 0))} ({int(entry.get('slow_tests', 0))})",
            f"{entry.get('seconds', 0):.0f} ({entry.get('slow_seconds', 0):.0f})",
            int(entry["compiles"]), f"{entry['compile_seconds']:.0f}", int(entry["cache_hits"]),
            int(entry["children"])]))
    lines += ["", f"Every test over {over:g} s:", "",
              "| test | slow | seconds | compilations | compile s | cache hits | "
              "child processes |", "| --- | :---: | ---: | ---: | ---: | ---: | ---: |"]
    for test in sorted(tests, key=lambda t: -t["seconds"]):
        if test["seconds"] < over:
            break
        lines.append(_row([f"`{test['test'].removeprefix('tests/')}`",
                           "slow" if test.get("slow") else "", f"{test['seconds']:.1f}",
                           test["compiles"], f"{test['compile_seconds']:.1f}",
                           test["cache_hits"], test["children"]]))
    return "\n".join(lines)


def stamp(totals: list[dict]) -> str:
    """The line above the tables: when, at which commit and on which machine each run was
    measured.

    Args:
        totals: the runs' totals lines, each with its `name`, `date` and `commit`, and
            its `machine` where it records one.

    Returns:
        e.g. "Measured on 2026-11-28 at commit `c764b1c` (machine: AMD EPYC, 2 CPUs,
        23.5 GiB of memory)." (one clause per run where they differ).
    """
    def clause(date: str, commit: str, machine: str | None) -> str:
        return f"{date} at commit `{commit}`" + (f" (machine: {machine})" if machine else "")

    when = [(total["date"], total["commit"], total.get("machine")) for total in totals]
    if len(set(when)) == 1:
        return f"Measured on {clause(*when[0])}."
    return "Measured: " + "; ".join(f"{total['name']} on {clause(*each)}"
                                    for total, each in zip(totals, when)) + "."


def write(tests: list[dict], table: str, page: Path = PAGE,
          file_costs: Path = FILE_COSTS) -> None:
    """Puts `table` into `page` between its markers and writes `file_costs`.

    Args:
        tests: per-test records.
        table: the stamp and tables (`stamp`, `markdown`).
        page: the page with the markers (docs/trust.md).
        file_costs: the seconds of each file (tests/file_costs.json).
    """
    text = page.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    page.write_text(text[:start] + "\n" + table + "\n" + text[end:])
    costs = {name: {"default": round(entry.get("seconds", 0.0), 1),
                    "slow": round(entry.get("slow_seconds", 0.0), 1)}
             for name, entry in sorted(per_file(tests).items())}
    file_costs.write_text(json.dumps(costs, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="cost files (JSON lines)")
    parser.add_argument("--over", type=float, default=10.0,
                        help="list every test that took at least this many seconds")
    parser.add_argument("--write", action="store_true",
                        help="update docs/trust.md and tests/file_costs.json")
    parser.add_argument("--date", help="the date of the runs, for files that record none "
                        "(default: each file's modification date)")
    parser.add_argument("--commit", help="the commit the runs measured, for files that "
                        "record none (default: the checkout's)")
    parser.add_argument("--machine", help="the machine the runs measured on, for files "
                        "that record none (default: none named)")
    parser.add_argument("--page", type=Path, default=PAGE,
                        help="the page --write puts the tables into (default: docs/trust.md)")
    parser.add_argument("--file-costs", type=Path, default=FILE_COSTS,
                        help="the file of each test file's seconds --write writes "
                        "(default: tests/file_costs.json)")
    args = parser.parse_args(argv)
    tests, totals = read_records(args.files)
    if len(totals) != len(args.files):
        parser.error("each cost file must end in its totals line (a run that finished)")
    for path, total in zip(args.files, totals):
        total.setdefault("name", path.stem)
        if "date" not in total:
            total["date"] = args.date or _modified(path)
            print(f"{path} records no date: stamped {total['date']}", file=sys.stderr)
        if "commit" not in total:
            total["commit"] = args.commit or checkout_commit()
            print(f"{path} records no commit: stamped {total['commit']}", file=sys.stderr)
        if "machine" not in total and args.machine:
            total["machine"] = args.machine
    table = stamp(totals) + "\n\n" + markdown(tests, totals, args.over)
    print(table)
    if args.write:
        write(tests, table, args.page, args.file_costs)


def _modified(path: Path) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(path.stat().st_mtime))


if __name__ == "__main__":
    main()
