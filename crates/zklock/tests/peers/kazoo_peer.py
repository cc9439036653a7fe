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

Benchmark mode, for crates/bench's compare-peers (one client, i.e. one session, per process: threads would
share the GIL, so N contenders are N processes):

    python3 kazoo_peer.py bench mutex|rwlock CONNECT PATH WARMUP_S SECONDS [READ_FRACTION]

loops acquire+release of ``kazoo.recipe.lock.Lock`` (mutex), or of ``ReadLock`` with probability READ_FRACTION
and ``WriteLock`` otherwise (rwlock). Prints "READY" once connected, waits for "GO", runs WARMUP_S seconds
unmeasured then SECONDS measured, prints "COUNT <acquisitions> <measured seconds>".

Group mode, for zklock's group-membership interoperability tests:

    python3 kazoo_peer.py party|shallow-party CONNECT PATH IDENTIFIER

joins ``kazoo.recipe.party.Party`` (or ``ShallowParty``) at PATH with IDENTIFIER, prints "JOINED <node path>",
then answers lines on stdin: "members" prints "MEMBERS <JSON list>" (what kazoo's iteration yields — the members'
data for Party, their identifiers for ShallowParty — sorted); "await N" waits (with a child watch, at most 60 s)
until kazoo counts N members, then prints the same; "leave" leaves and prints "LEFT". EOF leaves and exits.

Work division and leases, for the partitioner's and the lease's interoperability tests:

    python3 kazoo_peer.py partitioner CONNECT PATH IDENTIFIER ITEM,ITEM,... TIME_BOUNDARY_S

runs ``kazoo.recipe.partitioner.SetPartitioner`` as its documentation shows: prints "ACQUIRED <JSON list of its
items>" each time it holds a share, "RELEASING" when the party changed (then releases the share and allocates
again), "FAILED" on failure; a "finish" line on stdin (or EOF) finishes it and prints "FINISHED".

    python3 kazoo_peer.py lease CONNECT PATH IDENTIFIER SECONDS

answers each "obtain" line on stdin with "OBTAINED" or "REFUSED" (``NonBlockingLease`` for SECONDS).

    python3 kazoo_peer.py stock-hold CONNECT PATH

is "hold" with a stock ``Lock`` (no ``extra_lock_patterns``): it sees only kazoo-named nodes.
"""

import json
import threading

import random
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


def bench(args):
    what, hosts, path = args[0], args[1], args[2]
    warmup, seconds = float(args[3]), float(args[4])
    read_fraction = float(args[5]) if len(args) > 5 else 0.0
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=60)
    try:
        if what == "mutex":
            locks = None
            mutex = client.Lock(path)
        elif what == "rwlock":
            locks = (client.ReadLock(path), client.WriteLock(path))
        else:
            raise ValueError("unknown benchmark %r" % what)
        say("READY")
        go = sys.stdin.readline().strip()
        if go != "GO":
            raise RuntimeError("expected GO, got %r" % go)
        measure_from = time.monotonic() + warmup
        end = measure_from + seconds
        count = 0
        while time.monotonic() < end:
            if locks is None:
                lock = mutex
            else:
                lock = locks[0] if random.random() < read_fraction else locks[1]
            lock.acquire()
            lock.release()
            if time.monotonic() >= measure_from:
                count += 1
        say("COUNT %d %f" % (count, time.monotonic() - measure_from))
        return 0
    finally:
        client.stop()
        client.close()


def party(args):
    kind, hosts, path, identifier = args[0], args[1], args[2], args[3]
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=60)
    try:
        if kind == "party":
            group = client.Party(path, identifier)
        else:
            group = client.ShallowParty(path, identifier)
        group.join()
        say("JOINED %s" % group.create_path)
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == "members":
                say("MEMBERS " + json.dumps(sorted(group)))
            elif words[0] == "await":
                wanted = int(words[1])
                deadline = time.monotonic() + 60
                while True:
                    changed = threading.Event()
                    client.get_children(path, watch=lambda event: changed.set())
                    if len(group) == wanted:
                        break
                    if not changed.wait(max(0.0, deadline - time.monotonic())):
                        raise RuntimeError("kazoo never counted %d members: %r" % (wanted, sorted(group)))
                say("MEMBERS " + json.dumps(sorted(group)))
            elif words[0] == "leave":
                group.leave()
                say("LEFT")
            else:
                raise ValueError("unknown command %r" % line)
        group.leave()
        return 0
    finally:
        client.stop()
        client.close()


def partitioner(args):
    hosts, path, identifier = args[0], args[1], args[2]
    items, boundary = args[3].split(","), float(args[4])
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=60)
    finish = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), finish.set()), daemon=True).start()
    try:
        member = client.SetPartitioner(path=path, set=items, identifier=identifier, time_boundary=boundary)
        said = None
        while not finish.is_set():
            if member.failed:
                say("FAILED")
                return 2
            elif member.release:
                said = None
                say("RELEASING")
                member.release_set()
            elif member.acquired:
                mine = sorted(member)
                if mine != said:
                    say("ACQUIRED " + json.dumps(mine))
                    said = mine
                member.state_change_event.clear()
                member.state_change_event.wait(0.1)
            elif member.allocating:
                member.wait_for_acquire(0.1)
        member.finish()
        say("FINISHED")
        return 0
    finally:
        client.stop()
        client.close()


def lease(args):
    import datetime

    hosts, path, identifier, seconds = args[0], args[1], args[2], float(args[3])
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=60)
    try:
        for line in sys.stdin:
            if line.strip() != "obtain":
                raise ValueError("unknown command %r" % line)
            held = client.NonBlockingLease(path, datetime.timedelta(seconds=seconds), identifier=identifier)
            say("OBTAINED" if held else "REFUSED")
        return 0
    finally:
        client.stop()
        client.close()


def stock_hold(args):
    hosts, path = args[0], args[1]
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=60)
    try:
        lock = client.Lock(path)
        lock.acquire()
        say("ACQUIRED %s/%s" % (path, lock.node))
        sys.stdin.readline()
        lock.release()
        say("RELEASED")
        return 0
    finally:
        client.stop()
        client.close()


def run(args):
    if args and args[0] == "bench":
        return bench(args[1:])
    if args and args[0] == "partitioner":
        return partitioner(args[1:])
    if args and args[0] == "lease":
        return lease(args[1:])
    if args and args[0] == "stock-hold":
        return stock_hold(args[1:])
    if args and args[0] in ("party", "shallow-party"):
        return party(args)
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
