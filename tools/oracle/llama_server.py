"""llama.cpp's HTTP server (llama-server, built by tools/oracle/setup.sh from the
llama-cpp-python sdist) as a context manager: started on a free loopback port with a model,
ready once /health answers, stopped on exit; its log is printed when something fails.
Standard library only.
"""
import contextlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(server: str, model: str, extra_args):
    """Yields the server's base URL (http://127.0.0.1:PORT)."""
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen([server, "-m", model, "--host", "127.0.0.1", "--port", str(port),
                                *extra_args], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama-server exited with status {process.returncode}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama-server did not answer /health within 60 s")
            time.sleep(0.1)
        yield base
    except Exception:
        log.seek(0)
        sys.stderr.write(log.read()[-4000:])
        raise
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
