#!/usr/bin/env python3
"""Helpers for ops/bench/apns (standard library only; reuses ops/bench/campaign_tool.py).

  campaign URL APP TOKEN TIMEOUT PORT  createMessage (content "Hello", title "Bench", no
                                       conditions, send_date now), then poll the funnel every
                                       100 ms until status "done"; meanwhile count the
                                       ESTABLISHED TCP connections whose local port is PORT
                                       (the server side of pushes). Prints one JSON line.
  cpu PID...                           CPU seconds (utime+stime) of each pid and its descendants,
                                       per thread as "<pid-label>:<thread name>/<tid>". JSON.
  cpu-diff BEFORE AFTER WALL LABELS    CPU use between two `cpu` snapshots: one line per process
                                       (percent of one core) and the busiest threads. LABELS is a
                                       JSON object pid -> name.
  h2load FILE                          parse h2load's output: req/s, succeeded, failed, 2xx. JSON.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import campaign_tool  # noqa: E402  (reuse: send(), wait_done(), ports, checkpoint, wait-devices)


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


def campaign(url, app, token, timeout, port):
    conn, code, t0, _ = campaign_tool.send(url, app, token, {"send_date": "now", "content": "Hello", "title": "Bench"})
    peak, seen, samples, total_open = 0, set(), 0, 0

    def sample_connections():
        nonlocal peak, seen, samples, total_open
        open_now = established(port)
        peak = max(peak, len(open_now))
        seen |= open_now
        samples += 1
        total_open += len(open_now)

    funnel, t_first, _ = campaign_tool.wait_done(conn, code, token, t0, timeout,
                                                 lambda f: f.get("sent", 0) + f.get("failed", 0) > 0, sample_connections)
    wall = time.monotonic() - t0
    print(json.dumps({"code": code, "wall": wall, "first_result_s": t_first, "funnel": funnel,
                      "conns_peak": peak, "conns_seen": len(seen),
                      "conns_mean": round(total_open / max(1, samples), 1)}))


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
    tick = os.sysconf("SC_CLK_TCK")

    def times(path):
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    out = {}
    for pid in pids:
        total, threads = 0.0, {}
        for p in descendants(pid):
            try:
                total += times(f"/proc/{p}/stat")
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
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    out["_system"] = {"total": (sum(ticks) - ticks[3] - ticks[4]) / tick, "threads": {}, "steal": ticks[7] / tick}
    print(json.dumps(out))


def cpu_diff(before, after, wall, labels):
    before, after, wall, labels = json.loads(before), json.loads(after), float(wall), json.loads(labels)
    procs, threads, ours = [], [], 0.0
    for pid, a in after.items():
        b = before.get(pid, {"total": 0, "threads": {}})
        if pid == "_system":
            continue
        ours += a["total"] - b["total"]
        name = labels.get(pid, pid)
        procs.append(f"{name} {100 * (a['total'] - b['total']) / wall:.0f}%")
        for t, s in a["threads"].items():
            threads.append((s - b["threads"].get(t, 0), f"{name}:{t.rsplit('/', 1)[0]}"))
    threads.sort(reverse=True)
    busiest = ", ".join(f"{n} {100 * s / wall:.0f}%" for s, n in threads[:4] if s > 0)
    machine = after["_system"]["total"] - before["_system"]["total"]
    steal = after["_system"]["steal"] - before["_system"]["steal"]
    print(f"CPU (% of one core over {wall:.1f}s): {'; '.join(procs)}; busiest threads: {busiest}; "
          f"machine busy {100 * machine / wall:.0f}% of {100 * os.cpu_count()}%, other programs "
          f"{100 * max(0.0, machine - ours) / wall:.0f}%, steal {100 * steal / wall:.0f}%")


def h2load(path):
    import re
    text = open(path, errors="replace").read()
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


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    command, args = sys.argv[1], sys.argv[2:]
    handlers = {"campaign": campaign, "cpu": cpu, "cpu-diff": cpu_diff, "h2load": h2load,
                "ports": campaign_tool.ports, "wait-devices": campaign_tool.wait_devices,
                "checkpoint": campaign_tool.checkpoint}
    if command not in handlers:
        sys.exit(__doc__)
    handlers[command](*args)


if __name__ == "__main__":
    main()
