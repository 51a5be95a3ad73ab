#!/usr/bin/env python3
"""Python helpers of the ops/bench scripts (standard library only):
python3 ops/bench/benchlib.py SUBCOMMAND ARGS...

Any benchmark:
  ports N                          N distinct free loopback TCP ports
  field JSON KEY                   the value of a dotted KEY (a.b) in JSON, empty when missing
  file-field FILE KEY              the same, in the JSON file FILE (one too large for an argument)
  wait-devices DB N TIMEOUT        poll the device count every second until N devices exist
  checkpoint DB                    WAL checkpoint (TRUNCATE) so the main file is complete
  seed-windows PID DB WINDOW TIMEOUT MARK...
                                   while herald-ingest PID registers devices into DB: for each
                                   MARK, the WINDOW registrations before it (counted every 0.5 s).
                                   One JSON line per MARK: rate, and per registration PID's CPU
                                   (us), bytes and calls of its write syscalls (/proc/PID/io wchar,
                                   syscw) and database pages added
  cpu PID...                       CPU seconds (utime+stime) of each pid and its descendants, per
                                   thread as "<thread name>/<tid>", and of the machine. JSON.
  cpu-seconds BEFORE AFTER INGEST  CPU seconds between two `cpu` snapshots: per process (ingest or
                                   worker) and its busiest thread; one line
  cpu-diff BEFORE AFTER WALL LABELS
                                   CPU use between two `cpu` snapshots: percent of one core per
                                   process, the busiest threads and the machine; one line. LABELS
                                   is a JSON object pid -> name.
  cpu-per-item BEFORE AFTER PID N  microseconds of CPU that process PID used per item (N items)
                                   between two `cpu` snapshots
  machine                          the machine's CPU ticks so far (/proc/stat: busy, idle, iowait,
                                   steal), for machine-diff
  machine-diff BEFORE AFTER        the share of all CPUs' time between two `machine` snapshots
                                   that was busy, idle, waiting for the disk (iowait) and taken by
                                   the hypervisor (steal); one line
  sync-latency DIR                 fdatasync after rewriting 16 KiB of a file in DIR, 200 times:
                                   the median and 90th percentile in ms (the disk's cost of a commit)
  mem PID                          VmHWM, VmRSS, RssAnon, RssFile in MB
  stats T...                       min and median of the given times

ops/bench/campaign:
  expected DB APP                  devices the campaign filter should reach (plain SQL over
                                   devices/device_tags, not Herald's TargetFilter)
  campaign URL APP TOKEN TIMEOUT [INBOX_DAYS]
                                   createMessage with the filter (and inbox_days when given), then
                                   poll the funnel every 100 ms until status "done"; prints one JSON
                                   line with the timings
  inbox-rows DB CODE               inbox copies of message CODE getInboxMessages lists (SQL over deliveries)
  sink SINK CODE DB APP            check the sink lines of message CODE against the expected
                                   hwid set; prints one JSON line
  pg-copy DB PSQL...               copy the seeded devices, their tags and the tag definitions of
                                   SQLite file DB into the PostgreSQL database that the psql command
                                   PSQL... reaches (its schema migrated by herald-ingest, the same
                                   application ids), with COPY, ids kept; then ANALYZE

ops/bench/apns:
  apns-campaign URL APP TOKEN TIMEOUT PORT
                                   createMessage (content "Hello", title "Bench", no conditions,
                                   send_date now), then poll the funnel every 100 ms until status
                                   "done"; meanwhile count the ESTABLISHED TCP connections whose
                                   local port is PORT (the server side of pushes). One JSON line.
  h2load FILE                      parse h2load's output: req/s, succeeded, failed, 2xx. JSON.

ops/bench/webpush:
  platform-campaign URL APP TOKEN TIMEOUT PLATFORMS
                                   createMessage (content "Hello", title "Bench", send_date now) to the
                                   device types PLATFORMS (comma-separated, such as 11,12), then poll
                                   the funnel every 100 ms until status "done". One JSON line:
                                   code, wall, first_result_s, funnel.

ops/bench/outage:
  outage-campaign URL APP TOKEN TIMEOUT ADMIN_PORT AT STATUS SECONDS
                                   createMessage as apns-campaign, then poll the funnel every
                                   100 ms until status "done"; the first time the funnel's sent
                                   reaches AT (0 = never), POST /outage?status=STATUS&seconds=SECONDS
                                   to the mock's admin port. One JSON line: timings, funnel, the
                                   burst, and "timeline": "<s>s:<sent>/<retrying>" once a second.
  record-check FILE OFFSET         count the mock's --record lines from byte OFFSET on: lines per
                                   status and per mock process, distinct tokens answered 200,
                                   tokens answered 200 more than once; when (s after the first
                                   line; a line is written when its request arrives) the first
                                   and last non-200 line and the longest stretch without a
                                   request came. JSON.

ops/bench/events:
  seed-events DB APP N END         insert N unprocessed 'event' reports for APP into a migrated
                                   Herald database, occurred_at spread over the 30 days before END
                                   (unix s), in time order, 1M rows per transaction; one JSON line
  summary APP                      read an events API answer on stdin; print one line with the
                                   PW_ScreenOpen count and the sums of events/screens/days
  count APP NAME                   read an events API answer on stdin; print the count of event NAME

ops/bench/soak:
  soak-send URL APP TOKEN          createMessage to every device of APP ("Hello", send_date now, no
                                   conditions); prints the message code
  soak-funnels URL TOKEN TIMEOUT CODE...
                                   poll the funnels of the messages every second until all are
                                   "done" or TIMEOUT s have passed; one JSON line per message:
                                   code, status, targeted, sent, failed, throttled
"""
import http.client
import json
import os
import random
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import time

# --- any benchmark ------------------------------------------------------------------------


def ports(n):
    socks = []
    for _ in range(int(n)):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    print(" ".join(str(s.getsockname()[1]) for s in socks))
    for s in socks:
        s.close()


def field(text, key):
    v = json.loads(text)
    for k in key.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    print("" if v is None else v)


def file_field(path, key):
    with open(path) as f:
        field(f.read(), key)


def connect_ro(db):
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def wait_devices(db, n, timeout):
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


def seed_windows(pid, db, window, timeout, *marks):
    window, deadline = int(window), time.monotonic() + float(timeout)
    tick = os.sysconf("SC_CLK_TCK")
    pending = sorted(int(m) for m in marks)

    def sample():
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/io") as f:
            io = dict(line.split(": ") for line in f.read().splitlines())
        con = connect_ro(db)
        count, pages = con.execute("SELECT (SELECT count(*) FROM devices), (SELECT page_count FROM pragma_page_count)").fetchone()
        con.close()
        return {"count": count, "pages": pages, "at": time.monotonic(), "cpu": (int(fields[11]) + int(fields[12])) / tick,
                "wchar": int(io["wchar"]), "syscw": int(io["syscw"])}

    starts = {}
    while pending:
        if time.monotonic() > deadline:
            sys.exit(f"seed-windows: marks {pending} not reached in {timeout} s")
        now = sample()
        for mark in list(pending):
            if mark not in starts and now["count"] >= mark - window:
                starts[mark] = now
            if mark in starts and now["count"] >= mark:
                start, n = starts[mark], now["count"] - starts[mark]["count"]
                print(json.dumps({
                    "mark": mark, "registrations": n, "seconds": round(now["at"] - start["at"], 2),
                    "rate": round(n / (now["at"] - start["at"])), "cpu_us": round((now["cpu"] - start["cpu"]) * 1e6 / n, 1),
                    "write_bytes": round((now["wchar"] - start["wchar"]) / n), "writes": round((now["syscw"] - start["syscw"]) / n, 2),
                    "pages": round((now["pages"] - start["pages"]) / n, 3)}), flush=True)
                pending.remove(mark)
        time.sleep(0.5)


def descendants(pid):
    out, todo = [], [str(pid)]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo.extend(f.read().split())
        except OSError:
            pass
    return out


def cpu(*pids):
    """total is null when the pid itself is gone."""
    tick = os.sysconf("SC_CLK_TCK")

    def times(path):
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    out = {}
    for pid in pids:
        total, threads = None, {}
        for p in descendants(pid):
            try:
                total = (total or 0.0) + times(f"/proc/{p}/stat")
                for tid in os.listdir(f"/proc/{p}/task"):
                    try:
                        with open(f"/proc/{p}/task/{tid}/comm") as f:
                            name = f.read().strip()
                        threads[f"{name}/{tid}"] = times(f"/proc/{p}/task/{tid}/stat")
                    except OSError:
                        pass
            except OSError:
                pass
        out[pid] = {"total": total, "threads": threads}
    ticks = machine_ticks()
    out["_system"] = {"total": (sum(ticks) - ticks[3] - ticks[4]) / tick, "threads": {}, "steal": ticks[7] / tick}
    print(json.dumps(out))


def cpu_spans(before, after):
    """(pid, seconds, {thread: seconds}) of every process both `cpu` snapshots saw alive."""
    before, after = json.loads(before), json.loads(after)
    for pid, a in after.items():
        b = before.get(pid, {})
        if pid == "_system" or a["total"] is None or b.get("total") is None:
            continue
        yield pid, a["total"] - b["total"], {t: s - b["threads"].get(t, 0) for t, s in a["threads"].items()}


def cpu_seconds(before, after, ingest):
    parts = []
    for pid, total, threads in cpu_spans(before, after):
        name = "ingest" if pid == ingest else "worker"
        parts.append(f"{name} {total:.1f}s (busiest thread {max(threads.values(), default=0):.1f}s)")
    print("; ".join(parts))


def cpu_diff(before, after, wall, labels):
    wall, labels = float(wall), json.loads(labels)
    procs, threads, ours = [], [], 0.0
    for pid, total, spans in cpu_spans(before, after):
        ours += total
        name = labels.get(pid, pid)
        procs.append(f"{name} {100 * total / wall:.0f}%")
        threads.extend((s, f"{name}:{t.rsplit('/', 1)[0]}") for t, s in spans.items())
    threads.sort(reverse=True)
    busiest = ", ".join(f"{n} {100 * s / wall:.0f}%" for s, n in threads[:4] if s > 0)
    system_before, system_after = json.loads(before)["_system"], json.loads(after)["_system"]
    machine = system_after["total"] - system_before["total"]
    steal = system_after["steal"] - system_before["steal"]
    print(f"CPU (% of one core over {wall:.1f}s): {'; '.join(procs)}; busiest threads: {busiest}; "
          f"machine busy {100 * machine / wall:.0f}% of {100 * os.cpu_count()}%, other programs "
          f"{100 * max(0.0, machine - ours) / wall:.0f}%, steal {100 * steal / wall:.0f}%")


def cpu_per_item(before, after, pid, items):
    for span_pid, total, _ in cpu_spans(before, after):
        if span_pid == pid:
            print(f"{1e6 * total / max(1, int(items)):.1f}")
            return
    print("n/a")


def machine_ticks():
    """All CPUs' ticks so far: user, nice, system, idle, iowait, irq, softirq, steal (/proc/stat)."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:9]]


def machine():
    user, nice, system, idle, iowait, irq, softirq, steal = machine_ticks()
    print(f"{user + nice + system + irq + softirq},{idle},{iowait},{steal}")


def machine_diff(before, after):
    # The kernel's iowait count can go back (proc(5)): a span is never below zero.
    spans = [max(0, b - a) for a, b in zip((int(x) for x in before.split(",")), (int(x) for x in after.split(",")))]
    total = max(1, sum(spans))
    busy, idle, iowait, steal = (100 * x / total for x in spans)
    print(f"busy {busy:.0f}% idle {idle:.0f}% iowait {iowait:.0f}% steal {steal:.0f}%")


def sync_latency(folder):
    path = os.path.join(folder, "sync-latency.probe")
    block, rounds, times = b"\xa5" * 16384, 200, []
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        os.pwrite(fd, block * 8, 0)
        os.fsync(fd)
        for n in range(rounds):
            os.pwrite(fd, block, (n % 8) * len(block))
            started = time.perf_counter()
            os.fdatasync(fd)
            times.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        os.unlink(path)
    times.sort()
    print(f"{1e3 * times[rounds // 2]:.2f} {1e3 * times[rounds * 9 // 10]:.2f}")


def mem(pid):
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
                values[key] = int(rest.split()[0]) / 1024
    print(" ".join(f"{values.get(k, 0):.1f}" for k in ("VmHWM", "VmRSS", "RssAnon", "RssFile")))


def stats(*times):
    t = sorted(float(x) for x in times)
    print("%.3f %.3f" % (t[0], statistics.median(t)))


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


def wait_done(conn, code, token, t0, timeout, started, each=None, seen=None, interval=0.1):
    """Polls the message's funnel every `interval` s until it is done or `timeout` s after t0 have passed
    (then the funnel gets "timed_out"). `started(funnel)` tells when the first results came;
    `each()` runs before every poll, `seen(funnel, now)` after every funnel read.
    Returns (funnel, first result s after t0, polls)."""
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
            if seen:
                seen(funnel, now)
            if t_first is None and started(funnel):
                t_first = now - t0
            if funnel.get("status") == "done":
                break
        if now > deadline:
            funnel["timed_out"] = True
            break
        time.sleep(interval)
    return funnel, t_first, polls


# --- ops/bench/campaign -------------------------------------------------------------------

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


def expected(db, app):
    con = connect_ro(db)
    count = con.execute(EXPECTED_SQL.format(cols="count(*)"), (app,)).fetchone()[0]
    total = con.execute("SELECT count(*) FROM devices").fetchone()[0]
    con.close()
    print(count, total)


def campaign(url, app, token, timeout, inbox_days=""):
    notification = {"send_date": "now", "content": "Hello", "conditions": CONDITIONS}
    if inbox_days:
        notification["inbox_days"] = int(inbox_days)
    conn, code, t0, t_created = send(url, app, token, notification)
    funnel, t_first, polls = wait_done(conn, code, token, t0, timeout, lambda f: f.get("targeted", 0) > 0)
    wall = time.monotonic() - t0
    print(json.dumps({"code": code, "wall": wall, "create_s": t_created, "first_result_s": t_first,
                      "polls": polls, "funnel": funnel}))


def inbox_rows(db, code):
    """The copies of message CODE that getInboxMessages lists now (the SQL of SQLiteCampaignStore.ownedCopies)."""
    con = connect_ro(db)
    print(con.execute("""
        SELECT count(*) FROM messages m JOIN deliveries d ON d.message_id = m.id
        WHERE m.code = ?1 AND m.inbox_until > ?2 AND d.status IN ('sent', 'throttled')
          AND coalesce(d.created_at + m.inbox_seconds, m.inbox_until) > ?2""", (code, int(time.time()))).fetchone()[0])
    con.close()


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


# The tables pg-copy moves, in that order, with the columns both schemas share.
PG_COPY = {
    "tag_definitions": "app_id, name, type, created_at",
    "devices": "id, app_id, hwid, platform, push_token, gateway, language, timezone_offset, app_version, os_version, "
               "device_model, sdk_version, user_id, subscribed, notification_types, badge, created_at, updated_at, "
               "last_open_at, token_invalid_reason",
    "device_tags": "device_id, name, app_id, type, num, str",
}


def copy_text(value):
    """One value in COPY's text format."""
    if value is None:
        return "\\N"
    text = str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def pg_copy(db, *psql):
    con = connect_ro(db)
    for table, columns in PG_COPY.items():
        if table == "tag_definitions":
            # The SQLite file holds every definition, also the declared ones herald-ingest registered here.
            subprocess.run([*psql, "-c", "DELETE FROM tag_definitions"], check=True, stdout=subprocess.DEVNULL)
        copy = subprocess.Popen([*psql, "-c", f"COPY {table} ({columns}) FROM STDIN"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, text=True)
        for row in con.execute(f"SELECT {columns} FROM {table}"):
            copy.stdin.write("\t".join(map(copy_text, row)) + "\n")
        copy.stdin.close()
        if copy.wait() != 0:
            sys.exit(f"COPY {table} failed")
    con.close()
    subprocess.run([*psql, "-c", "SELECT setval(pg_get_serial_sequence('devices', 'id'), max(id)) FROM devices"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([*psql, "-c", "VACUUM ANALYZE"], check=True, stdout=subprocess.DEVNULL)


# --- ops/bench/apns -----------------------------------------------------------------------


def established(port):
    """Server-side ESTABLISHED sockets on 127.0.0.1:port -> set of remote ports."""
    remotes = set()
    want = f"{int(port):04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    local, remote, state = parts[1], parts[2], parts[3]
                    if state == "01" and local.rsplit(":", 1)[1] == want:
                        remotes.add(remote)
        except OSError:
            pass
    return remotes


def apns_campaign(url, app, token, timeout, port):
    conn, code, t0, _ = send(url, app, token, {"send_date": "now", "content": "Hello", "title": "Bench"})
    peak, seen, samples, total_open = 0, set(), 0, 0
    last_sample = 0.0

    def sample_connections():
        # Every 0.1 s at most: reading /proc/net/tcp that often takes a third of a CPU, which a
        # campaign at 0 ms needs.
        nonlocal peak, seen, samples, total_open, last_sample
        if time.monotonic() - last_sample < 0.1:
            return
        last_sample = time.monotonic()
        open_now = established(port)
        peak = max(peak, len(open_now))
        seen |= open_now
        samples += 1
        total_open += len(open_now)

    # Polled every 20 ms: a campaign here lasts about as long as h2load's run (1-2 s), which
    # h2load times to the microsecond.
    funnel, t_first, _ = wait_done(conn, code, token, t0, timeout,
                                   lambda f: f.get("sent", 0) + f.get("failed", 0) > 0, sample_connections, interval=0.02)
    wall = time.monotonic() - t0
    print(json.dumps({"code": code, "wall": wall, "first_result_s": t_first, "funnel": funnel,
                      "conns_peak": peak, "conns_seen": len(seen),
                      "conns_mean": round(total_open / max(1, samples), 1)}))


def platform_campaign(url, app, token, timeout, platforms):
    notification = {"send_date": "now", "content": "Hello", "title": "Bench", "platforms": [int(p) for p in platforms.split(",")]}
    conn, code, t0, _ = send(url, app, token, notification)
    funnel, t_first, _ = wait_done(conn, code, token, t0, timeout, lambda f: f.get("sent", 0) + f.get("failed", 0) > 0)
    print(json.dumps({"code": code, "wall": time.monotonic() - t0, "first_result_s": t_first, "funnel": funnel}))


def h2load(path):
    with open(path, errors="replace") as f:
        text = f.read()
    out = {}
    m = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s, ([\d.]+)([KMG]?B)/s", text)
    if m:
        secs = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
        out.update(seconds=secs, rps=float(m.group(3)))
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", text)
    if m:
        out.update(total=int(m.group(1)), succeeded=int(m.group(4)), failed=int(m.group(5)), errored=int(m.group(6)))
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    if m:
        out.update(s2xx=int(m.group(1)), s4xx=int(m.group(3)), s5xx=int(m.group(4)))
    m = re.search(r"traffic: .*?\((\d+)\) total", text)
    if m:
        out.update(bytes=int(m.group(1)))
    print(json.dumps(out))


# --- ops/bench/outage ---------------------------------------------------------------------


def outage_campaign(url, app, token, timeout, admin, burst_at, status, seconds):
    conn, code, t0, _ = send(url, app, token, {"send_date": "now", "content": "Hello", "title": "Bench"})
    burst_at = int(burst_at)
    burst = None
    retrying_peak = 0
    timeline = []  # (s after t0, sent, retrying), about once a second

    def seen(funnel, now):
        nonlocal burst, retrying_peak
        sent, retrying = funnel.get("sent", 0), funnel.get("retrying", 0)
        retrying_peak = max(retrying_peak, retrying)
        if not timeline or now - t0 >= timeline[-1][0] + 1:
            timeline.append((now - t0, sent, retrying))
        if burst_at and burst is None and sent >= burst_at:
            admin_conn = http.client.HTTPConnection("127.0.0.1", int(admin), timeout=10)
            answer_status, answer = request(admin_conn, "POST", f"/outage?status={status}&seconds={seconds}")
            admin_conn.close()
            burst = {"at_s": round(time.monotonic() - t0, 3), "sent": sent, "retrying": retrying,
                     "status": answer_status, "answer": answer.decode(errors="replace")[:300]}

    funnel, t_first, _ = wait_done(conn, code, token, t0, timeout,
                                   lambda f: f.get("sent", 0) + f.get("failed", 0) > 0, seen=seen)
    wall = time.monotonic() - t0
    print(json.dumps({"code": code, "wall": wall, "first_result_s": t_first, "funnel": funnel, "burst": burst,
                      "retrying_peak": retrying_peak,
                      "timeline": " ".join(f"{t:.0f}s:{s}/{r}" for t, s, r in timeline)}))


def record_check(path, offset):
    statuses, accepted, processes = {}, {}, {}
    lines = unparsable = 0
    times, failed_times = [], []
    with open(path, "rb") as f:
        f.seek(int(offset))
        for raw in f:
            lines += 1
            try:
                line = json.loads(raw)
            except ValueError:
                unparsable += 1
                continue
            status = line.get("status")
            times.append(line.get("ts", 0))
            if status != 200:
                failed_times.append(line.get("ts", 0))
            pid = str(line.get("connection", "")).split("/")[0]
            processes[pid] = processes.get(pid, 0) + 1
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            if status == 200:
                accepted[line.get("token")] = accepted.get(line.get("token"), 0) + 1
    twice = [n for n in accepted.values() if n > 1]
    # The longest stretch without a request, and where it starts (s after the first request)
    times.sort()
    gap, gap_at = max(((b - a, a) for a, b in zip(times, times[1:])), default=(0, 0))
    start = times[0] if times else 0
    failures = {"first_s": round(min(failed_times) - start, 3), "last_s": round(max(failed_times) - start, 3)} \
        if failed_times else None
    print(json.dumps({"lines": lines, "unparsable": unparsable, "statuses": statuses,
                      "tokens_accepted": len(accepted), "tokens_accepted_twice": len(twice),
                      "extra_accepts": sum(twice) - len(twice),
                      "per_process": "/".join(str(n) for _, n in sorted(processes.items())),
                      "span_s": round(times[-1] - start, 3) if times else 0, "not_200": failures,
                      "longest_gap_s": round(gap, 3), "longest_gap_at_s": round(gap_at - start, 3)}))


# --- ops/bench/events ---------------------------------------------------------------------

# ~15 event names; PW_ScreenOpen the most common.
EVENTS = [
    ("PW_ScreenOpen", 40), ("PW_ApplicationOpen", 12), ("PW_ApplicationMinimized", 8),
    ("PW_UserIdle", 6), ("PW_ApplicationExit", 6), ("PW_InAppPurchase", 2),
    ("AddToCart", 5), ("Search", 5), ("ViewProduct", 5), ("Login", 3), ("Logout", 2),
    ("Share", 2), ("Checkout", 1), ("Signup", 1), ("RateApp", 2),
]
DAY = 86_400
BATCH = 1_000_000


def seed_events(db, app, n, end):
    n, end = int(n), int(end)
    start = end - 30 * DAY
    span = end - start
    con = sqlite3.connect(db, isolation_level=None)
    # Bulk load: no journal while seeding (Herald turns WAL back on when it opens the file).
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("PRAGMA synchronous=OFF")
    con.execute("PRAGMA cache_size=-262144")
    row = con.execute("SELECT id FROM applications WHERE code = ?", (app,)).fetchone()
    if row is None:
        sys.exit(f"benchlib: application {app} not in {db}")
    app_id = row[0]
    names = [e[0] for e in EVENTS]
    weights = [e[1] for e in EVENTS]
    # body prefix per (event, screen); the session duration closes it.
    prefix = {
        (name, j): '{"application":"%s","event":"%s","attributes":{"screen_name":"Screen%d","session_duration":' % (app, name, j)
        for name in names for j in range(50)
    }
    rng = random.Random(42)
    sql = ("INSERT INTO reports (app_id, kind, hwid, platform, name, body, timestamp_utc, timestamp_current,"
           " received_at, occurred_at) VALUES (?, 'event', ?, ?, ?, ?, ?, ?, ?, ?)")
    t0 = time.monotonic()
    done = 0
    while done < n:
        b = min(BATCH, n - done)
        picked = rng.choices(names, weights, k=b)
        rows = []
        for i in range(b):
            g = done + i
            ts = start + g * span // n
            name = picked[i]
            k = rng.randrange(200_000)
            rows.append((app_id, "dev-%d" % k, 1 if k & 1 else 3, name,
                         prefix[(name, g % 50)] + "%d}}" % (g % 1800 + 1), ts, ts, ts, ts))
        con.execute("BEGIN")
        con.executemany(sql, rows)
        con.execute("COMMIT")
        done += b
        print(f"seeded {done}/{n} in {time.monotonic() - t0:.0f}s", file=sys.stderr, flush=True)
    total = con.execute("SELECT count(*) FROM reports").fetchone()[0]
    con.close()
    print(json.dumps({"rows": total, "seconds": round(time.monotonic() - t0, 1), "from": start, "to": end,
                      "app_id": app_id}))


def events_answer(app):
    """The events API answer on stdin, checked to be APP's."""
    try:
        a = json.load(sys.stdin)
    except ValueError:
        sys.exit("benchlib: answer is not JSON")
    if a.get("application") != app or "events" not in a:
        sys.exit(f"benchlib: unexpected answer {json.dumps(a)[:300]}")
    return a


def summary(app):
    a = events_answer(app)
    ev = {e["name"]: e["count"] for e in a["events"]}
    print("events=%d screen_open=%d kinds=%d screens=%d days=%d day_events=%d sessions=%d purchases=%d" % (
        sum(ev.values()), ev.get("PW_ScreenOpen", 0), len(ev), sum(s["count"] for s in a["screens"]),
        len(a["days"]), sum(d["events"] for d in a["days"]), a["sessions"]["count"], a["purchases"]["count"]))


def count(app, name):
    a = events_answer(app)
    print(sum(e["count"] for e in a["events"] if e["name"] == name))


# --- ops/bench/soak -----------------------------------------------------------------------


def soak_send(url, app, token):
    conn, code, _, _ = send(url, app, token, {"send_date": "now", "content": "Hello"})
    conn.close()
    print(code)


def soak_funnels(url, token, timeout, *codes):
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    deadline = time.monotonic() + float(timeout)
    funnels = {}
    while True:
        for code in codes:
            if funnels.get(code, {}).get("status") == "done":
                continue
            status, data = request(conn, "GET", f"/api/v1/messages/{code}", headers={"Authorization": f"Token {token}"})
            funnels[code] = json.loads(data) if status == 200 else {"status": f"http_{status}"}
        if all(f.get("status") == "done" for f in funnels.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    for code in codes:
        f = funnels[code]
        print(json.dumps({"code": code, **{k: f.get(k) for k in ("status", "targeted", "sent", "failed", "throttled")}}))


COMMANDS = {
    "ports": ports, "field": field, "file-field": file_field, "wait-devices": wait_devices, "checkpoint": checkpoint, "cpu": cpu,
    "seed-windows": seed_windows,
    "cpu-seconds": cpu_seconds, "cpu-diff": cpu_diff, "cpu-per-item": cpu_per_item, "machine": machine,
    "machine-diff": machine_diff, "sync-latency": sync_latency, "mem": mem, "stats": stats,
    "expected": expected, "campaign": campaign, "inbox-rows": inbox_rows, "sink": sink,
    "apns-campaign": apns_campaign, "h2load": h2load, "platform-campaign": platform_campaign,
    "outage-campaign": outage_campaign, "record-check": record_check,
    "seed-events": seed_events, "summary": summary, "count": count,
    "pg-copy": pg_copy, "soak-send": soak_send, "soak-funnels": soak_funnels,
}


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__, end="")
        return
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    COMMANDS[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
