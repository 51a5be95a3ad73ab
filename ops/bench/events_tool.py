#!/usr/bin/env python3
"""Helpers for ops/bench/events (standard library only).

  ports N                    N distinct free loopback TCP ports
  seed DB APP N END          insert N unprocessed 'event' reports for APP into a migrated Herald database,
                             occurred_at spread over the 30 days before END (unix s), in time
                             order, 1M rows per transaction; prints one JSON line
  summary APP                read an events API answer on stdin; print one line with the
                             PW_ScreenOpen count and the sums of events/screens/days
  count APP NAME             read an events API answer on stdin; print the count of event NAME
  stats T...                 min and median of the given times
"""
import json
import os
import random
import sqlite3
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import campaign_tool  # noqa: E402  (its ports())

# ~15 event names; PW_ScreenOpen the most common.
EVENTS = [
    ("PW_ScreenOpen", 40), ("PW_ApplicationOpen", 12), ("PW_ApplicationMinimized", 8),
    ("PW_UserIdle", 6), ("PW_ApplicationExit", 6), ("PW_InAppPurchase", 2),
    ("AddToCart", 5), ("Search", 5), ("ViewProduct", 5), ("Login", 3), ("Logout", 2),
    ("Share", 2), ("Checkout", 1), ("Signup", 1), ("RateApp", 2),
]
DAY = 86_400
BATCH = 1_000_000

def seed(db, app, n, end):
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
        sys.exit(f"events_tool: application {app} not in {db}")
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


def load(stdin):
    try:
        return json.load(stdin)
    except ValueError:
        sys.exit("events_tool: answer is not JSON")


def summary(app):
    a = load(sys.stdin)
    if a.get("application") != app or "events" not in a:
        sys.exit(f"events_tool: unexpected answer {json.dumps(a)[:300]}")
    ev = {e["name"]: e["count"] for e in a["events"]}
    print("events=%d screen_open=%d kinds=%d screens=%d days=%d day_events=%d sessions=%d purchases=%d" % (
        sum(ev.values()), ev.get("PW_ScreenOpen", 0), len(ev), sum(s["count"] for s in a["screens"]),
        len(a["days"]), sum(d["events"] for d in a["days"]), a["sessions"]["count"], a["purchases"]["count"]))


def count(app, name):
    a = load(sys.stdin)
    if a.get("application") != app or "events" not in a:
        sys.exit(f"events_tool: unexpected answer {json.dumps(a)[:300]}")
    print(sum(e["count"] for e in a["events"] if e["name"] == name))


def stats(*times):
    t = sorted(float(x) for x in times)
    print("%.3f %.3f" % (t[0], statistics.median(t)))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"ports": campaign_tool.ports, "seed": seed, "summary": summary, "count": count, "stats": stats}[cmd](*args)
