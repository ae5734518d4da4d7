#!/usr/bin/env python3
"""The cluster test: deploy/local-cluster.sh's four nodes (us twice, eu, ap)
on PostgreSQL databases of their own and a Redis of their own, then:

1. requests sent to the wrong region's node are answered by the right one;
2. a key revoked on one node is refused on every other within 200 ms;
3. a region move started on one node is seen by all;
4. one of the two us nodes killed (SIGKILL) under a write load: every
   acknowledged write is there afterwards and the other us node answers;
5. Redis stopped: every node still answers correctly (a revoked key is
   refused everywhere within the directory and key caches' 5 s bound).

usage: tests/cluster/run.py path/to/gatehouse   (run by .ci/run)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/debug/gatehouse"))
PG = os.environ.get("PG", "postgres://postgres@127.0.0.1:5432")
BASE_PORT = 18181
REDIS_PORT = 16390
PREFIX = f"ghcluster_{os.getpid()}"
NODES = {"us1": BASE_PORT, "us2": BASE_PORT + 1, "eu": BASE_PORT + 2, "ap": BASE_PORT + 3}


def url(node, path):
    return f"http://127.0.0.1:{NODES[node]}{path}"


def call(node, method, path, app=None, key=None, body=None, timeout=10):
    """(status, headers, json body); a connection failure is status 0."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url(node, path), data=data, method=method)
    if app:
        request.add_header("x-application-id", app)
    if key:
        request.add_header("authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as answer:
        return answer.code, dict(answer.headers), json.loads(answer.read() or b"null")
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, {}, None


def check(condition, what):
    if not condition:
        raise SystemExit(f"cluster test FAILED: {what}")
    print(f"  ok: {what}")


def psql(sql):
    subprocess.run(["psql", f"{PG}/postgres", "-qAtc", sql], check=True, stdout=subprocess.DEVNULL)


def bootstrap(env, region, name):
    out = subprocess.run([BIN, "bootstrap", "--name", name, "--region", region], env=env, check=True,
                         capture_output=True, text=True).stdout
    created = json.loads(out)
    return created["application_id"], created["secret_key"]


def wait_healthy(nodes):
    for _ in range(300):
        if all(call(n, "GET", "/healthz")[0] == 200 for n in nodes):
            return
        time.sleep(0.1)
    raise SystemExit("cluster test FAILED: the nodes did not start")


def until(predicate, limit):
    """Seconds until predicate() holds, or None after `limit` seconds."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.005)
    return None


def main():
    data = tempfile.mkdtemp(prefix="ghcluster")
    redis = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(REDIS_PORT), "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL)
    env = dict(os.environ, PG=PG, REDIS=f"redis://127.0.0.1:{REDIS_PORT}", BASE_PORT=str(BASE_PORT),
               DB_PREFIX=PREFIX, DATA_DIR=data, BIN=BIN, RUST_LOG="warn",
               GATEHOUSE__NODE__MOVE_LEASE_SECONDS="3")
    cluster = subprocess.Popen(["bash", os.path.join(ROOT, "deploy/local-cluster.sh")], env=env,
                               stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_healthy(NODES)
        node_env = dict(env, GATEHOUSE__STORAGE__CATALOG_URL=f"{PG}/{PREFIX}_catalog",
                        GATEHOUSE__REGIONS__US__DATABASE_URL=f"{PG}/{PREFIX}_us",
                        GATEHOUSE__REGIONS__EU__DATABASE_URL=f"{PG}/{PREFIX}_eu",
                        GATEHOUSE__REGIONS__AP__DATABASE_URL=f"{PG}/{PREFIX}_ap",
                        GATEHOUSE__STORAGE__DATA_DIR=data,
                        GATEHOUSE__SECURITY__MASTER_KEY=open(os.path.join(data, "master.key")).read().strip())
        scenarios(node_env, data)
        print("cluster test passed")
    finally:
        os.killpg(cluster.pid, signal.SIGTERM)
        cluster.wait()
        redis.kill()
        redis.wait()
        for db in ["catalog", "us", "eu", "ap"]:
            psql(f"DROP DATABASE IF EXISTS {PREFIX}_{db} WITH (FORCE)")


def scenarios(env, data):
    print("1. the wrong node answers for the right one")
    eu_app, eu_key = bootstrap(env, "eu", "Cluster EU")
    for node in NODES:
        status, headers, _ = call(node, "GET", "/v1/api-keys", eu_app, eu_key)
        served_by = headers.get("x-gatehouse-region") or headers.get("X-Gatehouse-Region")
        check(status == 200 and served_by == (None if node == "eu" else "eu"),
              f"{node} answers for an eu application ({status}, served by {served_by or 'itself'})")
    status, _, created = call("ap", "POST", "/v1/api-keys", eu_app, eu_key, {"name": "via-ap", "scopes": ["api_keys:read"]})
    check(status == 201, "a write through the ap node lands")

    print("2. a key revoked on one node is refused on every other within 200 ms")
    second = created["data"]
    for node in NODES:
        check(call(node, "GET", "/v1/api-keys", eu_app, second["secret"])[0] == 200, f"{node} knows the new key")
    status, _, _ = call("us1", "POST", f"/v1/api-keys/{second['id']}/revoke", eu_app, eu_key)
    check(status == 200, "revoked through us1")
    for node in NODES:
        took = until(lambda: call(node, "GET", "/v1/api-keys", eu_app, second["secret"])[0] == 401, 2)
        check(took is not None and took <= 0.2, f"{node} refuses it after {took if took is None else round(took * 1000)} ms")

    print("3. a move started on one node is seen by all")
    us_app, us_key = bootstrap(env, "us", "Cluster mover")
    for node in NODES:
        call(node, "GET", "/v1/security/region", us_app, us_key)  # every node caches the entry
    status, _, moved = call("us2", "POST", "/v1/security/region", us_app, us_key, {"region": "ap"}, timeout=60)
    check(status == 200 and moved["data"]["region"] == "ap", "us2 moved the application to ap")
    for node in NODES:
        status, _, region = call(node, "GET", "/v1/security/region", us_app, us_key)
        check(status == 200 and region["data"]["region"] == "ap", f"{node} sees it in ap at once")

    print("4. one us node killed under load")
    load_app, load_key = bootstrap(env, "us", "Cluster load")
    acknowledged, cut_off, wrong, stop = [], [], [], threading.Event()

    def writer(node, index):
        n = 0
        while not stop.is_set():
            name = f"{node}-{index}-{n}"
            status, _, _ = call(node, "POST", "/v1/organizations", load_app, load_key, {"name": name}, timeout=5)
            {201: acknowledged, 0: cut_off}.get(status, wrong).append((name, status))
            n += 1
            if status == 0:
                time.sleep(0.01)  # a dead node refuses at once; do not spin

    threads = [threading.Thread(target=writer, args=(node, i)) for node in ("us1", "us2") for i in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    os.kill(int(open(os.path.join(data, "us2.pid")).read()), signal.SIGKILL)
    time.sleep(1.5)
    stop.set()
    for thread in threads:
        thread.join()
    names = set()
    offset = 0
    while True:
        status, _, page = call("us1", "GET", f"/v1/organizations?limit=100&offset={offset}", load_app, load_key)
        if status != 200:
            check(False, f"us1 lists organizations (offset {offset}: {status})")
        names.update(o["name"] for o in page["data"])
        if not page["meta"]["has_more"]:
            break
        offset += 100
    lost = [n for n, _ in acknowledged if n not in names]
    check(len(acknowledged) > 50 and not lost,
          f"{len(acknowledged)} acknowledged writes, {len(cut_off)} cut off by the kill, none lost ({len(lost)})")
    check(not wrong, f"no other answer than 201 or a cut connection ({wrong[:5]})")
    after = [call("us1", "POST", "/v1/organizations", load_app, load_key, {"name": f"after-{i}"})[0] for i in range(20)]
    check(all(s == 201 for s in after), "us1 keeps answering")
    del NODES["us2"]

    print("5. Redis stopped: every answer still correct")
    subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "shutdown", "nosave"], stdout=subprocess.DEVNULL)
    status, _, third = call("eu", "POST", "/v1/api-keys", eu_app, eu_key, {"name": "no-redis", "scopes": ["api_keys:read"]})
    check(status == 201, "a write without Redis")
    third = third["data"]
    for node in NODES:
        status, _, listed = call(node, "GET", "/v1/api-keys", eu_app, eu_key)
        check(status == 200 and any(k["id"] == third["id"] for k in listed["data"]), f"{node} reads it")
        check(call(node, "GET", "/v1/api-keys", eu_app, third["secret"])[0] == 200, f"{node} accepts the new key")
    check(call("eu", "POST", f"/v1/api-keys/{third['id']}/revoke", eu_app, eu_key)[0] == 200, "revoked on eu")
    for node in NODES:
        took = until(lambda: call(node, "GET", "/v1/api-keys", eu_app, third["secret"])[0] == 401, 7)
        check(took is not None, f"{node} refuses it after {took if took is None else round(took, 2)} s (bound: 5 s)")
    status, _, region = call("us1", "GET", "/v1/security/region", us_app, us_key)
    check(status == 200 and region["data"]["region"] == "ap", "the moved application still answers from ap")


if __name__ == "__main__":
    main()
