#!/usr/bin/env python3
"""Oracle driver for llama.cpp's HTTP server (llama-server, built by tools/oracle/setup.sh from
the llama-cpp-python sdist): starts it on a free loopback port with the given model, waits until
/health answers, sends each request of REQUESTS_JSON to /completion, prints the JSON responses
(one list) on stdout, and stops the server. Its log goes to stderr when something fails.

usage: llama_server_complete.py LLAMA_SERVER MODEL_GGUF REQUESTS_JSON [-- SERVER_ARGS...]
  REQUESTS_JSON: a list of /completion request bodies, e.g.
    [{"prompt": [1], "n_predict": 32, "temperature": 0, "return_tokens": true}]
Standard library only.
"""
import json
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


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)


def main() -> int:
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    if len(args) != 3:
        sys.exit(__doc__)
    server, model, requests_path = args
    with open(requests_path) as f:
        requests = json.load(f)
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen([server, "-m", model, "--host", "127.0.0.1", "--port", str(port),
                                *extra], stdout=log, stderr=subprocess.STDOUT)
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
        responses = [post(base + "/completion", body) for body in requests]
    except Exception as e:  # the server's log says why
        log.seek(0)
        sys.stderr.write(log.read()[-4000:])
        sys.stderr.write(f"\nllama_server_complete.py: {e}\n")
        return 1
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
    print(json.dumps(responses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
