#!/usr/bin/env python3
"""Oracle driver for llama.cpp's HTTP server (llama_server.py): starts it with the given model,
sends each request of REQUESTS_JSON to /completion, prints the JSON responses (one list) on
stdout, and stops the server. Its log goes to stderr when something fails.

usage: llama_server_complete.py LLAMA_SERVER MODEL_GGUF REQUESTS_JSON [-- SERVER_ARGS...]
  REQUESTS_JSON: a list of /completion request bodies, e.g.
    [{"prompt": [1], "n_predict": 32, "temperature": 0, "return_tokens": true}]
Standard library only.
"""
import json
import sys
import urllib.request

from llama_server import running_server


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
    try:
        with running_server(server, model, extra) as base:
            responses = [post(base + "/completion", body) for body in requests]
    except Exception as e:  # the server's log is already on stderr
        sys.stderr.write(f"\nllama_server_complete.py: {e}\n")
        return 1
    print(json.dumps(responses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
