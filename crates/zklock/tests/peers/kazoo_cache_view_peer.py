"""kazoo's caches following a tree, for zklock's cache interoperability tests (tests/it/cache_interop.rs).

    python3 kazoo_cache_view_peer.py CONNECT ROOT [NODE...]

Starts ``kazoo.recipe.cache.TreeCache`` at ROOT (which must exist already: kazoo's TreeCache creates its root
otherwise) and a ``DataWatch`` on each NODE (which need not exist), and prints "READY" once the tree cache has
said INITIALIZED and every DataWatch has been called once. Then it answers lines on stdin:

    await PATH   waits (at most 60 s) until the tree cache holds PATH, then prints "SEEN"
    dump         prints "VIEW <JSON>": {"tree": {PATH: NODE, ...}, "nodes": {NODE_PATH: NODE or null, ...}},
                 what the tree cache (walked from ROOT with get_children and get_data) and each DataWatch (its
                 last call) hold now; NODE is {"data": "<hex>", "stat": {"czxid": ..., "mzxid": ..., "pzxid": ...,
                 "ctime": ..., "mtime": ..., "version": ..., "cversion": ..., "aversion": ..., "ephemeralOwner":
                 ..., "dataLength": ..., "numChildren": ...}}, as the recipe holds it

EOF closes the caches and the session and exits 0. Any failure prints a traceback to stderr and exits with
status 2. (kazoo_cache_peer.py, next to this file, is crates/compare's cache benchmark peer.)
"""

import json
import sys
import threading
import time
import traceback

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent

TIMEOUT_S = 60.0
STAT_FIELDS = (
    "czxid",
    "mzxid",
    "pzxid",
    "ctime",
    "mtime",
    "version",
    "cversion",
    "aversion",
    "ephemeralOwner",
    "dataLength",
    "numChildren",
)


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def node(data, stat):
    return {
        "data": (data or b"").hex(),
        "stat": {field: getattr(stat, field) for field in STAT_FIELDS},
    }


def main(args):
    hosts, root, watched = args[0], args[1], args[2:]
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=TIMEOUT_S)
    tree = TreeCache(client, root)
    initialized = threading.Event()

    def on_event(event):
        if event.event_type == TreeEvent.INITIALIZED:
            initialized.set()

    tree.listen(on_event)
    tree.start()

    lock = threading.Lock()
    views = {}
    called = {path: threading.Event() for path in watched}

    def data_watch(path):
        def on_change(data, stat):
            with lock:
                views[path] = None if stat is None else node(data, stat)
            called[path].set()

        return on_change

    for path in watched:
        client.DataWatch(path, data_watch(path))
    if not initialized.wait(TIMEOUT_S):
        raise RuntimeError("the TreeCache at %s did not initialize" % root)
    for path, event in called.items():
        if not event.wait(TIMEOUT_S):
            raise RuntimeError("the DataWatch on %s was never called" % path)
    say("READY")

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "await":
            deadline = time.monotonic() + TIMEOUT_S
            while tree.get_data(words[1]) is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("the TreeCache never held %s" % words[1])
                time.sleep(0.01)
            say("SEEN")
        elif words[0] == "dump":
            held = {}
            todo = [root]
            while todo:
                path = todo.pop()
                found = tree.get_data(path)
                if found is None:
                    continue
                held[path] = node(found.data, found.stat)
                for name in tree.get_children(path) or ():
                    todo.append(path.rstrip("/") + "/" + name)
            with lock:
                nodes = dict(views)
            say("VIEW " + json.dumps({"tree": held, "nodes": nodes}, sort_keys=True))
        else:
            raise ValueError("unknown command %r" % line)

    tree.close()
    client.stop()
    client.close()


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Exception:  # noqa: BLE001 - any failure is the test's to report
        traceback.print_exc()
        sys.exit(2)
