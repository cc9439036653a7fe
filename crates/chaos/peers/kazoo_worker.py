"""A contender of zklock-chaos's mixed campaign (`--mix kazoo`), driven by kazoo's ``Lock`` recipe.

    python3 -u kazoo_worker.py CONNECT PATH REGISTER CLIENT SESSION_TIMEOUT_MS UNTIL_NS SEED LAUNCH

It does what zklock-chaos's own mutex worker (crates/chaos/src/worker.rs) does, on the same lock path and against
the same fenced register (crates/chaos/src/register.rs), until ``UNTIL_NS`` on CLOCK_MONOTONIC (Python's
``time.monotonic_ns`` on Linux, the clock of every process of the campaign):

* take ``kazoo.recipe.lock.Lock(PATH, extra_lock_patterns=("-lock-",))`` (so that it queues behind zklock's and
  Curator's ``_c_<uuid>-lock-<seq>`` nodes; zklock's workers queue behind kazoo's ``<hex>__lock__<seq>`` nodes with
  ``with_kazoo_contenders(true)``) with a timeout of three session timeouts;
* fencing token: the czxid of its own lock node (``client.exists``), as zklock's ``Guard::fencing_token``;
* critical section: ``OP x <token> read 0``, work 20-120 ms, ``OP x <token> write <read + 1>``, checking before
  each use that the connection has not been suspended or lost since the acquire (as a careful kazoo user does
  with a state listener) and stopping at the first rejection;
* release, and again.

The register protocol is one line per request: ``HELLO <client> <pid>``, then ``OP <kind> <token> <action>
<value>`` answered ``OK <counter>`` or ``NO <floor>``. A failing register exits 2 (the campaign cannot be judged);
ZooKeeper errors are logged to stderr and the loop goes on. The session is closed at the end.
"""

import os
import random
import socket
import sys
import threading
import time

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.handlers.threading import KazooTimeoutError


def log(client, text):
    sys.stderr.write("kazoo worker %d: %s\n" % (client, text))
    sys.stderr.flush()


class Register:
    """The fenced register, over TCP on 127.0.0.1."""

    def __init__(self, addr, client):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rwb")
        self.call("HELLO %d %d" % (client, os.getpid()))

    def call(self, line):
        self.file.write((line + "\n").encode("ascii"))
        self.file.flush()
        reply = self.file.readline().decode("ascii").strip()
        if not reply:
            raise RuntimeError("the register closed the connection")
        if reply.startswith("ERR"):
            raise RuntimeError("register: " + reply)
        return reply

    def op(self, token, action, value):
        """The counter after an accepted operation, or None when the fence rejected it."""
        word, number = self.call("OP x %d %s %d" % (token, action, value)).split(" ", 1)
        if word == "OK":
            return int(number)
        if word == "NO":
            return None
        raise RuntimeError("register: unexpected reply %r" % word)


def section(register, token, lost, rng):
    """One critical section; whether it completed."""
    if lost.is_set():
        return False
    value = register.op(token, "read", 0)
    if value is None:
        return False
    time.sleep(rng.uniform(0.020, 0.120))
    if lost.is_set():
        return False
    return register.op(token, "write", value + 1) is not None


def main(argv):
    connect, path, register_addr = argv[0], argv[1], argv[2]
    client_id, session_ms, until_ns = int(argv[3]), int(argv[4]), int(argv[5])
    seed, launch = int(argv[6]), int(argv[7])
    rng = random.Random(seed ^ ((launch * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF))
    timeout = session_ms / 1000.0
    try:
        register = Register(register_addr, client_id)
    except Exception as err:  # noqa: BLE001 - any failure to reach the register ends the worker
        log(client_id, "the register failed: %r" % err)
        return 2

    # Set when the connection is suspended or the session lost: the lock may be gone.
    lost = threading.Event()

    def listener(state):
        if state != KazooState.CONNECTED:
            lost.set()

    zk = KazooClient(
        hosts=connect,
        timeout=timeout,
        connection_retry=dict(max_tries=-1, delay=0.1, max_delay=1.0),
        command_retry=dict(max_tries=3, delay=0.1, max_delay=1.0, deadline=timeout),
    )
    zk.add_listener(listener)
    while True:
        try:
            zk.start(timeout=timeout * 2)
            break
        except KazooTimeoutError as err:
            log(client_id, "connecting: %r" % err)
            if time.monotonic_ns() >= until_ns:
                return 0
    held = failed = 0
    try:
        while time.monotonic_ns() < until_ns:
            lock = zk.Lock(path, "kazoo-%d" % client_id, extra_lock_patterns=("-lock-",))
            lost.clear()
            try:
                got = lock.acquire(timeout=timeout * 3)
            except LockTimeout:
                got = False
            except (KazooException, KazooTimeoutError) as err:
                failed += 1
                log(client_id, "acquire: %r" % err)
                time.sleep(0.05)
                continue
            if not got:
                continue
            held += 1
            try:
                stat = zk.exists(path + "/" + lock.node)
                if stat is None:
                    lost.set()
                else:
                    try:
                        section(register, stat.czxid, lost, rng)
                    except Exception as err:  # noqa: BLE001 - the register failed: the campaign cannot be judged
                        log(client_id, "the register failed: %r" % err)
                        os._exit(2)
            except (KazooException, KazooTimeoutError) as err:
                log(client_id, "reading our node: %r" % err)
            finally:
                try:
                    lock.release()
                except (KazooException, KazooTimeoutError) as err:
                    log(client_id, "release: %r" % err)
    finally:
        try:
            zk.stop()
            zk.close()
        except Exception as err:  # noqa: BLE001 - closing is best effort: the session expires anyway
            log(client_id, "closing: %r" % err)
    log(client_id, "done, held %d times, %d acquires failed" % (held, failed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
