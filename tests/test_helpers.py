"""The helpers the tests start child processes with: a read from a child has a timeout
(`child_io`), and the processes of a distributed run retry on a new port when the
coordinator's was taken (`test_devices.launch`)."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest
import test_devices
from child_io import finish, read_line

# Binds the port of its first argument as jax.distributed's coordinator does, or fails
# with the message jax writes when it cannot.
COORDINATOR = textwrap.dedent("""
    import socket, sys, time
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", int(sys.argv[1])))
    except OSError:
        sys.exit("UNKNOWN: Failed to start RPC server")
    print("bound", sys.argv[1], flush=True)
""")


def python(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_read_line_fails_on_a_child_that_writes_half_a_line_and_waits():
    child = python("import sys, time; sys.stdout.write('half'); sys.stdout.flush(); "
                   "time.sleep(600)")
    with pytest.raises(AssertionError, match="no line on the stdout"):
        read_line(child, timeout=2)
    assert child.poll() is not None  # killed


def test_read_line_reads_a_line():
    child = python("print('one'); print('two')")
    assert read_line(child, timeout=60) == "one\n"
    assert read_line(child, timeout=60) == "two\n"
    assert finish(child, 60) == ("", "") and child.returncode == 0


def test_finish_fails_on_a_child_that_never_exits():
    child = python("import time; print('started', flush=True); time.sleep(600)")
    with pytest.raises(AssertionError, match="still ran after 1 s") as err:
        finish(child, 1)
    assert "started" in str(err.value) and child.poll() is not None


def test_launch_starts_again_on_a_new_port_when_the_coordinators_was_taken(
        tmp_path, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        free_port, given = test_devices.free_port, []

        def racing_free_port() -> int:  # the first port is taken before it is bound
            given.append(free_port() if given else taken.getsockname()[1])
            return given[-1]
        monkeypatch.setattr(test_devices, "free_port", racing_free_port)
        logs = [tmp_path / "zero", tmp_path / "one"]
        processes = test_devices.launch(lambda port: [
            [sys.executable, "-c", COORDINATOR, str(port)],
            [sys.executable, "-c", "print('other')"]], logs, cwd=tmp_path)
        codes = [p.wait(timeout=60) for p in processes]
        assert len(given) == 2 and given[0] == taken.getsockname()[1] != given[1]
        assert codes == [0, 0]
        assert (tmp_path / "zero.out").read_text() == f"bound {given[1]}\n"

        monkeypatch.setattr(test_devices, "free_port", lambda: taken.getsockname()[1])
        with pytest.raises(AssertionError, match="port was taken 2 times"):
            test_devices.launch(lambda port: [
                [sys.executable, "-c", COORDINATOR, str(port)],
                [sys.executable, "-c", "import time; time.sleep(600)"]], logs, cwd=tmp_path,
                tries=2)


def test_finish_reads_a_child_whose_input_was_written_and_closed():
    child = subprocess.Popen([sys.executable, "-c", "import sys; print(sys.stdin.read()[::-1])"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    child.stdin.write("abc")
    child.stdin.close()
    assert finish(child, 60) == ("cba\n", "") and child.returncode == 0
