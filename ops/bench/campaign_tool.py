#!/usr/bin/env python3
"""Helpers for ops/bench/campaign (standard library only).

  ports N                          N distinct free loopback TCP ports
  wait-devices DB N TIMEOUT        poll max(devices.id) / count until N devices exist
  checkpoint DB                    WAL checkpoint (TRUNCATE) so the main file is complete
  expected DB APP                  devices the campaign filter should reach (plain SQL over
                                   devices/device_tags, not Herald's TargetFilter)
  campaign URL APP TOKEN TIMEOUT   createMessage, then poll the funnel every 100 ms until
                                   status "done"; prints one JSON line with the timings
  sink SINK CODE DB APP            check the sink lines of message CODE against the expected
                                   hwid set; prints one JSON line
  cpu PID...                       utime+stime seconds of each pid and of each of its threads
  mem PID                          VmHWM, VmRSS, RssAnon, RssFile in MB
"""
import http.client
import json
import os
import socket
import sqlite3
import sys
import time

CONDITIONS = [["Level", "GTE", 25], ["City", "NOTEQ", "Rome"]]

# The same two conditions written directly against the storage format (Schema.swift,
# TagValue.swift): Level is an integer tag (type 1, value in `num`), City a string tag
# (type 2, value in `str`). NOTEQ needs the tag to be set. Deliverable devices: a push
# token, subscribed, platform iOS (1) or Android (3).
EXPECTED_SQL = """
SELECT {cols} FROM devices d
JOIN device_tags lv ON lv.device_id = d.id AND lv.name = 'Level' AND lv.type = 1
JOIN device_tags ct ON ct.device_id = d.id AND ct.name = 'City' AND ct.type = 2
WHERE d.app_id = (SELECT id FROM applications WHERE code = ?)
  AND d.push_token IS NOT NULL AND d.subscribed = 1 AND d.platform IN (1, 3)
  AND lv.num >= 25 AND ct.str <> 'Rome'
"""


def ports(n):
    socks = []
    for _ in range(int(n)):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    print(" ".join(str(s.getsockname()[1]) for s in socks))
    for s in socks:
        s.close()


def connect_ro(db):
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def wait_devices(db, n, timeout, wrk_pid=None):
    n, deadline = int(n), time.monotonic() + float(timeout)
    last, last_change, started = -1, time.monotonic(), time.monotonic()
    while time.monotonic() < deadline:
        try:
            con = connect_ro(db)
            count = con.execute("SELECT count(*) FROM devices").fetchone()[0]
            con.close()
        except sqlite3.Error:
            count = -1
        if count != last:
            last, last_change = count, time.monotonic()
        elapsed = time.monotonic() - started
        print(f"\r  {count} / {n} devices ({elapsed:.0f} s)", end="", file=sys.stderr, flush=True)
        if count >= n:
            print(file=sys.stderr)
            print(count)
            return
        if time.monotonic() - last_change > 30 and count > 0:
            break  # no progress for 30 s: registrations were lost
        time.sleep(1)
    print(file=sys.stderr)
    print(last)
    sys.exit(1)


def checkpoint(db):
    con = sqlite3.connect(db, timeout=30)
    busy, log, done = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    con.close()
    if busy != 0 or log != done:
        sys.exit(f"checkpoint incomplete: busy={busy} log={log} checkpointed={done}")


def expected(db, app):
    con = connect_ro(db)
    count = con.execute(EXPECTED_SQL.format(cols="count(*)"), (app,)).fetchone()[0]
    total = con.execute("SELECT count(*) FROM devices").fetchone()[0]
    con.close()
    print(count, total)


def request(conn, method, path, body=None, headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    return response.status, data


def send(url, app, token, notification):
    """createMessage with one notification; returns (connection, message code, start time, seconds
    the create took). Exits with the answer when no message was created."""
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    body = json.dumps({"request": {"application": app, "auth": token, "notifications": [notification]}})
    t0 = time.monotonic()
    status, data = request(conn, "POST", "/json/1.3/createMessage", body, {"Content-Type": "application/json"})
    t_created = time.monotonic() - t0
    try:
        code = json.loads(data)["response"]["Messages"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        sys.exit(f"createMessage failed: HTTP {status} {data[:300]!r}")
    return conn, code, t0, t_created


def wait_done(conn, code, token, t0, timeout, started, each=None):
    """Polls the message's funnel every 0.1 s until it is done or `timeout` s after t0 have passed
    (then the funnel gets "timed_out"). `started(funnel)` tells when the first results came;
    `each()` runs before every poll. Returns (funnel, first result s after t0, polls)."""
    deadline = t0 + float(timeout)
    t_first = None
    funnel = {}
    polls = 0
    while True:
        if each:
            each()
        status, data = request(conn, "GET", f"/api/v1/messages/{code}", headers={"Authorization": f"Token {token}"})
        now = time.monotonic()
        polls += 1
        if status == 200:
            funnel = json.loads(data)
            if t_first is None and started(funnel):
                t_first = now - t0
            if funnel.get("status") == "done":
                break
        if now > deadline:
            funnel["timed_out"] = True
            break
        time.sleep(0.1)
    return funnel, t_first, polls


def campaign(url, app, token, timeout):
    conn, code, t0, t_created = send(url, app, token, {"send_date": "now", "content": "Hello", "conditions": CONDITIONS})
    funnel, t_first, polls = wait_done(conn, code, token, t0, timeout, lambda f: f.get("targeted", 0) > 0)
    wall = time.monotonic() - t0
    print(json.dumps({"code": code, "wall": wall, "create_s": t_created, "first_result_s": t_first,
                      "polls": polls, "funnel": funnel}))


def sink(path, code, db, app):
    con = connect_ro(db)
    want = {row[0] for row in con.execute(EXPECTED_SQL.format(cols="d.hwid"), (app,))}
    con.close()
    lines = other = bad = 0
    seen = set()
    dupes = 0
    needle = f'"message":"{code}"'
    with open(path, "rb") as f:
        for raw in f:
            text = raw.decode()
            if needle not in text:
                other += 1
                continue
            lines += 1
            try:
                hwid = json.loads(text)["hwid"]
            except (ValueError, KeyError):
                bad += 1
                continue
            if hwid in seen:
                dupes += 1
            seen.add(hwid)
    print(json.dumps({"lines": lines, "other_lines": other, "unparsable": bad, "duplicates": dupes,
                      "missing": len(want - seen), "unexpected": len(seen - want)}))


def cpu(*pids):
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        def times(stat_path):
            with open(stat_path) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick
        threads = {}
        try:
            total = times(f"/proc/{pid}/stat")
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    with open(f"/proc/{pid}/task/{tid}/comm") as f:
                        name = f.read().strip()
                    threads[f"{name}/{tid}"] = times(f"/proc/{pid}/task/{tid}/stat")
                except OSError:
                    pass
        except OSError:
            total = None
        out[pid] = {"total": total, "threads": threads}
    print(json.dumps(out))


def mem(pid):
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
                values[key] = int(rest.split()[0]) / 1024
    print(" ".join(f"{values.get(k, 0):.1f}" for k in ("VmHWM", "VmRSS", "RssAnon", "RssFile")))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    command, args = sys.argv[1], sys.argv[2:]
    handlers = {"ports": ports, "wait-devices": wait_devices, "checkpoint": checkpoint, "expected": expected,
                "campaign": campaign, "sink": sink, "cpu": cpu, "mem": mem}
    if command not in handlers:
        sys.exit(__doc__)
    handlers[command](*args)


if __name__ == "__main__":
    main()
