"""A contender driven by kazoo's Lock recipe, for zklock's interoperability tests.

    python3 kazoo_peer.py ACTION CONNECT PATH [ROUNDS FILE]

The lock is ``kazoo.recipe.lock.Lock`` with ``extra_lock_patterns=["-lock-"]``, so that it also queues
behind zklock's (Curator-format) ``_c_<uuid>-lock-<seq>`` nodes; zklock sees kazoo's ``<hex>__lock__<seq>``
nodes when built with ``Mutex::with_kazoo_contenders(true)``.

ACTION
    increment  ROUNDS times: acquire, read the integer in FILE, write it back plus one, release. Prints
               "READY" once connected, waits for a "GO" line on stdin, prints "DONE" at the end.
    hold       acquire once, print "ACQUIRED <node path>", wait for a line (or EOF) on stdin, release, print
               "RELEASED".

Any failure prints a traceback to stderr and exits with status 2.
"""

import sys
import time
import traceback

from kazoo.client import KazooClient

# Widens the window in which two holders at once would lose an update; not used for synchronisation.
PAUSE_S = 0.002


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def read(path):
    with open(path, encoding="ascii") as f:
        return int(f.read().strip())


def run(args):
    if len(args) < 3:
        sys.stderr.write("usage: kazoo_peer.py increment|hold CONNECT PATH [ROUNDS FILE]\n")
        return 2
    action, hosts, path = args[0], args[1], args[2]
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=60)
    try:
        lock = client.Lock(path, extra_lock_patterns=["-lock-"])
        if action == "hold":
            lock.acquire()
            say("ACQUIRED %s/%s" % (path, lock.node))
            sys.stdin.readline()  # a line or EOF: either way, release
            lock.release()
            say("RELEASED")
            return 0
        if action == "increment":
            rounds, counter = int(args[3]), args[4]
            say("READY")
            go = sys.stdin.readline().strip()
            if go != "GO":
                raise RuntimeError("expected GO, got %r" % go)
            for _ in range(rounds):
                with lock:
                    value = read(counter)
                    time.sleep(PAUSE_S)
                    with open(counter, "w", encoding="ascii") as f:
                        f.write("%d\n" % (value + 1))
            say("DONE")
            return 0
        raise ValueError("unknown action %r" % action)
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    try:
        sys.exit(run(sys.argv[1:]))
    except Exception:  # noqa: BLE001 - report anything, loudly
        traceback.print_exc()
        sys.exit(2)
