#!/usr/bin/env python3
"""Runs the README's quickstart and every guide as written, against a fresh server.

    python3 tests/quickstart/run.py target/debug/gatehouse

The server starts on a free port in an empty directory, so its first start
creates the development application and prints its id and secret key, as
the README says. The quickstart's `sh placeholder` block names them; this
script gives them their real values instead of running it. Every other
`sh` block of the Quickstart section runs in order in one bash (so
`export`s carry on), in an empty directory. Each guide in docs/guides then
runs the same way in a directory of its own, with `GATEHOUSE`, `APP` and
`KEY` naming a fresh development application, as the guides assume.

`curl` fails on an HTTP error status there (`--fail-with-body`), so a
refused request fails its step. The `json` block after a command is its
answer, shown whole: the command's output must have the same keys at every
depth, the same types, and the same values wherever the shown value holds
no digit (ids, times, tokens and ports differ from run to run; `"success":
true`, an email, a scope or an event type may not).

Needs curl, jq and Python's PyJWT, pyotp and standardwebhooks.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLACEHOLDER_VARIABLES = {"GATEHOUSE", "ADMIN_APP", "ADMIN_KEY"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fenced_blocks(text):
    """The fenced blocks of a Markdown text: [(info, text)]."""
    return [(m.group(1).strip(), m.group(2)) for m in re.finditer(r"^```([^\n]*)\n(.*?)^```$", text, re.S | re.M)]


def quickstart_blocks(readme):
    return fenced_blocks(readme.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0])


def start_server(binary, workdir, port):
    env = dict(os.environ, GATEHOUSE__SERVER__LISTEN=f"127.0.0.1:{port}", RUST_LOG="warn")
    server = subprocess.Popen([binary, "serve"], cwd=workdir, env=env, stdout=subprocess.PIPE, text=True)
    printed = {}
    while len(printed) < 2:
        line = server.stdout.readline()
        if not line:
            sys.exit("quickstart: the server exited before printing its first application")
        m = re.match(r"\s+(application_id|secret_key):\s+(\S+)", line)
        if m:
            printed[m.group(1)] = m.group(2)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return server, printed


def same_shape(shown, actual, path="$"):
    """Problems where `actual` differs from the answer the README shows."""
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            return [f"{path}: shown an object, got {actual!r}"]
        problems = [f"{path}: keys differ: shown {sorted(shown)}, got {sorted(actual)}"] if set(shown) != set(actual) else []
        for key in shown.keys() & actual.keys():
            problems += same_shape(shown[key], actual[key], f"{path}.{key}")
        return problems
    if isinstance(shown, list):
        if not isinstance(actual, list) or len(shown) != len(actual):
            return [f"{path}: shown {shown!r}, got {actual!r}"]
        return [p for i, (s, a) in enumerate(zip(shown, actual)) for p in same_shape(s, a, f"{path}[{i}]")]
    if shown is None or isinstance(shown, bool):
        return [] if shown is actual else [f"{path}: shown {shown!r}, got {actual!r}"]
    if isinstance(shown, (int, float)):
        return [] if isinstance(actual, (int, float)) and not isinstance(actual, bool) else [f"{path}: shown a number, got {actual!r}"]
    if not isinstance(actual, str):
        return [f"{path}: shown a string, got {actual!r}"]
    if any(c.isdigit() for c in shown) or shown.endswith("…"):
        return []
    return [] if shown == actual else [f"{path}: shown {shown!r}, got {actual!r}"]


def steps_of(blocks, port, receiver_port):
    """The commands to run, each with the answer shown after it (or None)."""
    steps = []
    for i, (info, text) in enumerate(blocks):
        if info == "sh":
            command = text.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
            command = re.sub(r"\b9000\b", str(receiver_port), command)
            shown = blocks[i + 1][1] if i + 1 < len(blocks) and blocks[i + 1][0] == "json" else None
            steps.append((command, shown))
        elif info == "json":
            assert i > 0 and blocks[i - 1][0] == "sh", f"a json block follows no command:\n{text}"
    return steps


def run_steps(name, steps, env):
    """Runs the commands in one bash in an empty directory; the number of failures."""
    marker = "@@document-step@@"
    preamble = "set -euo pipefail\ncurl() { command curl --fail-with-body \"$@\"; }\n"
    script = preamble + "".join(f"echo {marker}\n{command}\n" for command, _ in steps)
    with tempfile.TemporaryDirectory() as workdir:
        run = subprocess.run(["bash", "-c", script], cwd=workdir, env=env, capture_output=True, text=True,
                             timeout=120, start_new_session=True)
        subprocess.run(["pkill", "-f", "receiver.py"], check=False)
    outputs = run.stdout.split(marker + "\n")[1:]
    if run.returncode != 0 or len(outputs) != len(steps):
        print(f"{name}: step {len(outputs)} failed (exit {run.returncode}):\n{steps[len(outputs) - 1][0]}\n"
              f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}")
        return 1
    failures = 0
    for n, ((command, shown), output) in enumerate(zip(steps, outputs), 1):
        if shown is None:
            continue
        try:
            actual = json.loads(output)
        except json.JSONDecodeError:
            print(f"{name} step {n}: the output is not one JSON document:\n{output}")
            failures += 1
            continue
        problems = same_shape(json.loads(shown), actual)
        for problem in problems:
            print(f"{name} step {n}: {problem}")
        if problems:
            print(f"{name} step {n}: the whole answer: {json.dumps(actual)}")
        failures += bool(problems)
    print(f"{name}: {len(steps)} commands ran{', every shown answer matches' if not failures else ''}")
    return failures


def fresh_application(base, admin_app, admin_key):
    """A development application and its admin key, as a guide's reader has after the quickstart."""
    made = subprocess.run(
        ["curl", "-sf", f"{base}/v1/applications", "-H", f"Authorization: Bearer {admin_key}",
         "-H", f"x-application-id: {admin_app}", "-H", "content-type: application/json",
         "-d", json.dumps({"name": "Guide", "environment": "development"})],
        capture_output=True, text=True, check=True)
    data = json.loads(made.stdout)["data"]
    return data["id"], data["secret_key"]


def main():
    root = Path(__file__).parents[2]
    binary = str(Path(sys.argv[1]).resolve())
    blocks = quickstart_blocks((root / "README.md").read_text())
    placeholders = [text for info, text in blocks if info == "sh placeholder"]
    assert len(placeholders) == 1, "the quickstart has one `sh placeholder` block"
    named = set(re.findall(r"^export (\w+)=", placeholders[0], re.M))
    assert named == PLACEHOLDER_VARIABLES, f"the placeholder block names {named}, not {PLACEHOLDER_VARIABLES}"

    port, receiver_port = free_port(), free_port()
    quickstart = steps_of(blocks, port, receiver_port)
    assert len(quickstart) >= 7, f"the quickstart has {len(quickstart)} commands"
    guides = sorted((root / "docs" / "guides").glob("*.md"))
    assert len(guides) >= 10, f"{len(guides)} guides"

    with tempfile.TemporaryDirectory() as serverdir:
        server, printed = start_server(binary, serverdir, port)
        try:
            base = f"http://127.0.0.1:{port}"
            env = dict(os.environ, GATEHOUSE=base, ADMIN_APP=printed["application_id"], ADMIN_KEY=printed["secret_key"])
            failures = run_steps("README quickstart", quickstart, env)
            for guide in guides:
                app, key = fresh_application(base, printed["application_id"], printed["secret_key"])
                steps = steps_of(fenced_blocks(guide.read_text()), port, receiver_port)
                failures += run_steps(str(guide.relative_to(root)), steps, dict(env, APP=app, KEY=key))
            if failures:
                sys.exit(f"{failures} document(s) or answer(s) differ from what the server does")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
