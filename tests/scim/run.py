"""Runs scim2-tester (an independent check of RFC 7643 and 7644) against a
SCIM directory of a fresh server, and fails on any check that errs.

    python3 tests/scim/run.py target/debug/gatehouse

The server starts on a free port in an empty directory; its first start
creates the development application and prints its id and secret key. An
organization and a directory are made with that key, and the tester runs
discovery, create, read (with `attributes` and `excludedAttributes`),
replace, PATCH add/remove/replace of every attribute, and delete, for Users
and Groups, through the directory's token.

Needs Python's scim2-tester and scim2-client[httpx2].
"""
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "quickstart"))
from run import free_port, start_server  # noqa: E402

import httpx2  # noqa: E402
from scim2_client.engines.httpx2 import SyncSCIMClient  # noqa: E402
from scim2_tester import Status, check_server  # noqa: E402


def call(port, key, app, method, path, body=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "x-application-id": app, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)["data"]


def main():
    binary = os.path.abspath(sys.argv[1])
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        server, printed = start_server(binary, workdir, port)
        try:
            app, key = printed["application_id"], printed["secret_key"]
            organization = call(port, key, app, "POST", "/v1/organizations", {"name": "Acme"})
            directory = call(port, key, app, "POST", f"/v1/organizations/{organization['id']}/scim-directories",
                             {"name": "Okta", "group_roles": [{"group": "Admins", "role": "admin"}]})
            http = httpx2.Client(base_url=directory["base_url"],
                                 headers={"Authorization": f"Bearer {directory['token']}"})
            results = check_server(SyncSCIMClient(http))
        finally:
            server.terminate()
            server.wait(timeout=30)
    failed = [r for r in results if r.status in (Status.ERROR, Status.CRITICAL)]
    counts = {}
    for result in results:
        counts[result.status.name] = counts.get(result.status.name, 0) + 1
    for result in results:
        if result.status in (Status.ERROR, Status.CRITICAL, Status.SKIPPED):
            print(f"{result.status.name} {result.resource_type or ''} {result.title}: {result.reason}")
    print(f"scim2-tester: {len(results)} checks, {counts}")
    sys.exit(1 if failed or not results else 0)


if __name__ == "__main__":
    main()
