"""kazoo's TreeCache, for the cache section of compare-peers (crates/compare/src/caches.rs).

    python3 -u kazoo_cache_peer.py CONNECT ROOT WATCH SETTLE_S INIT_TIMEOUT_S

One KazooClient (one session). The conversation is CuratorCachePeer.java's, with -1 for the heap fields (the
memory figures are the process's resident memory, VmRSS, after ``gc.collect()``):

    -> READY
    <- GO
    -> INITIALIZED <seconds from start() to TreeEvent.INITIALIZED, -1 if it did not come within INIT_TIMEOUT_S>
       <nodes held then> -1 -1 <rss before> <rss after> <faults the cache reported until then>
    -> LATER <nodes held SETTLE_S seconds later> -1 <rss>
    -> LISTENING
    -> CHANGED <data> <time.monotonic_ns() in the listener: CLOCK_MONOTONIC>   (every add or update of WATCH)

EOF on stdin closes the cache and the session; exit 0. Any failure prints a traceback and exits 2.
"""

import gc
import sys
import threading
import time
import traceback

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent

LOCK = threading.Lock()


def say(line):
    with LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def rss():
    gc.collect()
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return -1


def held(cache, root):
    """How many nodes the cache holds, walked from the root."""
    count, stack = 0, [root]
    while stack:
        path = stack.pop()
        if cache.get_data(path) is None:
            continue
        count += 1
        for name in cache.get_children(path) or ():
            stack.append(path.rstrip("/") + "/" + name)
    return count


def run(args):
    hosts, root, watch = args[0], args[1], args[2]
    settle, init_timeout = float(args[3]), float(args[4])
    client = KazooClient(hosts=hosts, timeout=30.0)
    client.start(timeout=60)
    try:
        rss_before = rss()
        say("READY")
        go = sys.stdin.readline().strip()
        if go != "GO":
            raise RuntimeError("expected GO, got %r" % go)
        initialized = threading.Event()
        listening = threading.Event()

        def listener(event):
            if event.event_type == TreeEvent.INITIALIZED:
                initialized.set()
            elif (
                listening.is_set()
                and event.event_type in (TreeEvent.NODE_ADDED, TreeEvent.NODE_UPDATED)
                and event.event_data.path == watch
            ):
                now = time.monotonic_ns()
                say("CHANGED %s %d" % (event.event_data.data.decode(), now))

        cache = TreeCache(client, root)
        cache.listen(listener)
        faults = []

        def fault(error):
            if not faults:
                sys.stderr.write("kazoo TreeCache fault: %r\n" % (error,))
            faults.append(error)

        cache.listen_fault(fault)
        start = time.monotonic()
        cache.start()
        seconds = time.monotonic() - start if initialized.wait(init_timeout) else -1
        nodes = held(cache, root)
        say("INITIALIZED %f %d -1 -1 %d %d %d" % (seconds, nodes, rss_before, rss(), len(faults)))
        time.sleep(settle)
        say("LATER %d -1 %d" % (held(cache, root), rss()))
        listening.set()
        say("LISTENING")
        for _ in sys.stdin:
            pass  # nothing is asked: EOF ends the run
        cache.close()
        return 0
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    try:
        sys.exit(run(sys.argv[1:]))
    except Exception:  # noqa: BLE001 - report anything, loudly
        traceback.print_exc()
        sys.exit(2)
