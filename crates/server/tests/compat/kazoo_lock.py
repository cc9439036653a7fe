"""kazoo's Lock recipe with two contenders on separate sessions.

Usage: kazoo_lock.py HOST:PORT LOCK_PATH. The first contender holds the lock; the second must not get it
(non-blocking attempt fails, blocking attempt waits), then gets it as soon as the first releases.
Prints OK and exits 0 on success.
"""
import sys
import threading

from kazoo.client import KazooClient

hosts, path = sys.argv[1], sys.argv[2]
a = KazooClient(hosts=hosts, timeout=30)
b = KazooClient(hosts=hosts, timeout=30)
a.start(timeout=30)
b.start(timeout=30)

lock_a = a.Lock(path, "contender-a")
lock_b = b.Lock(path, "contender-b")
assert lock_a.acquire(timeout=30)
assert not lock_b.acquire(blocking=False), "second contender got a held lock"
assert lock_a.contenders() == ["contender-a"], lock_a.contenders()

acquired = threading.Event()
order = []


def contend():
    assert lock_b.acquire(timeout=60)
    order.append("b")
    acquired.set()


t = threading.Thread(target=contend)
t.start()
# b waits on a's lock node; give the lock to b by releasing it.
assert not acquired.wait(0.5), "second contender got the lock while it was held"
order.append("a-release")
lock_a.release()
assert acquired.wait(60), "second contender never got the lock"
t.join(60)
assert order == ["a-release", "b"], order
lock_b.release()
assert b.get_children(path) == [], b.get_children(path)
a.stop()
b.stop()
print("OK")
