"""Writes or verifies N nodes with kazoo (for the crash/recovery test).

Usage: kazoo_bulk.py HOST:PORT BASE N write|verify. `write` creates BASE and BASE/n<i> with data "d<i>"
and prints OK once every create was acknowledged; `verify` checks all of them are there with that data.
"""
import sys

from kazoo.client import KazooClient

hosts, base, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
zk = KazooClient(hosts=hosts, timeout=30)
zk.start(timeout=60)
if mode == "write":
    zk.ensure_path(base)
    for i in range(n):
        zk.create("%s/n%04d" % (base, i), b"d%d" % i)
else:
    children = zk.get_children(base)
    assert len(children) == n, len(children)
    for i in range(n):
        data, _ = zk.get("%s/n%04d" % (base, i))
        assert data == b"d%d" % i, (i, data)
zk.stop()
print("OK")
