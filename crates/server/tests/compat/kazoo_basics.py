"""kazoo against a ZooKeeper-compatible server: create/get/set/ls/watch/delete, ephemeral, sequence.

Usage: kazoo_basics.py HOST:PORT BASE_PATH. Prints OK and exits 0 on success; any failure raises.
"""
import sys
import threading

from kazoo.client import KazooClient

hosts, base = sys.argv[1], sys.argv[2]
zk = KazooClient(hosts=hosts, timeout=30)
zk.start(timeout=30)

zk.create(base, b"")
assert zk.create(base + "/n", b"hello") == base + "/n"
data, stat = zk.get(base + "/n")
assert data == b"hello" and stat.version == 0 and stat.dataLength == 5, (data, stat)

changed = threading.Event()
seen = []


def watcher(event):
    seen.append((event.type, event.path))
    changed.set()


zk.get(base + "/n", watch=watcher)
stat = zk.set(base + "/n", b"world")
assert stat.version == 1, stat
assert changed.wait(30), "no data watch event"
assert seen == [("CHANGED", base + "/n")], seen

seq = zk.create(base + "/q-", b"", sequence=True)
assert seq == base + "/q-0000000001", seq
eph = zk.create(base + "/e", b"x", ephemeral=True)
assert zk.exists(eph).ephemeralOwner == zk.client_id[0]
assert sorted(zk.get_children(base)) == ["e", "n", "q-0000000001"], zk.get_children(base)

children_changed = threading.Event()
zk.get_children(base, watch=lambda e: children_changed.set())
zk.delete(base + "/n")
assert children_changed.wait(30), "no child watch event"
assert zk.exists(base + "/n") is None

tx = zk.transaction()
tx.create(base + "/t1", b"1")
tx.set_data(base + "/t1", b"2")
tx.check(base + "/t1", 1)
results = tx.commit()
assert results[0] == base + "/t1" and results[1].version == 1 and results[2] is True, results

zk.delete(base, recursive=True)
assert zk.exists(base) is None
zk.stop()
zk.close()
print("OK")
