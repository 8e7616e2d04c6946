#!/usr/bin/env python3
"""Runs a command while llama.cpp's HTTP server (llama_server.py) serves a model: every "{url}"
in the command becomes the server's base URL. Exits with the command's status; the command's
output passes through.

usage: llama_server_run.py LLAMA_SERVER MODEL_GGUF [SERVER_ARGS...] -- COMMAND...
  e.g. llama_server_run.py llama-server m.gguf --ctx-size 4096 -- proctor eval gsm8k --endpoint {url}
Standard library only.
"""
import subprocess
import sys

from llama_server import running_server


def main() -> int:
    args = sys.argv[1:]
    if "--" not in args or len(args[:args.index("--")]) < 2:
        sys.exit(__doc__)
    server, model, *extra = args[:args.index("--")]
    command = args[args.index("--") + 1:]
    try:
        with running_server(server, model, extra) as base:
            return subprocess.call([part.replace("{url}", base) for part in command])
    except Exception as e:
        sys.stderr.write(f"\nllama_server_run.py: {e}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
