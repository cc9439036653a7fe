// A contender of zklock-chaos's mixed campaign (`--mix curator`), driven by Apache Curator's InterProcessMutex.
//
//   java CuratorWorker CONNECT PATH REGISTER CLIENT SESSION_TIMEOUT_MS UNTIL_NS SEED LAUNCH DRIVER
//
// zklock-chaos compiles this file with javac at the start of the campaign (against the Curator and ZooKeeper jars
// in /usr/share/java) and runs it in a contender slot. It does what zklock-chaos's own mutex worker
// (crates/chaos/src/worker.rs) does, on the same lock path and against the same fenced register
// (crates/chaos/src/register.rs), until UNTIL_NS on CLOCK_MONOTONIC (System.nanoTime on Linux, the clock of every
// process of the campaign):
//
// * take an InterProcessMutex on PATH (its nodes are _c_<uuid>-lock-<seq>, the names zklock's Mutex uses, so the
//   two queue behind each other) with a timeout of three session timeouts. DRIVER "stock": Curator's standard
//   LockInternalsDriver, which sorts the children by what follows "lock-" in their names and so sorts kazoo's
//   <hex>__lock__<seq> nodes by their whole name, after every sequence number: stock Curator does not queue
//   behind kazoo. DRIVER "kazoo": that driver, but sorting kazoo's nodes by their sequence number too (what
//   kazoo's extra_lock_patterns and zklock's with_kazoo_contenders do on their side);
// * fencing token: the czxid of its own lock node (checkExists), as zklock's Guard::fencing_token;
// * critical section: "OP x <token> read 0", work 20-120 ms, "OP x <token> write <read + 1>", checking before each
//   use that the connection has not been SUSPENDED or LOST since the acquire (a ConnectionStateListener, as
//   Curator's documentation asks of lock holders) and stopping at the first rejection;
// * release, and again.
//
// The register protocol is one line per request: "HELLO <client> <pid>", then "OP <kind> <token> <action>
// <value>" answered "OK <counter>" or "NO <floor>". A failing register exits 2 (the campaign cannot be judged);
// ZooKeeper errors are logged to stderr and the loop goes on. The session is closed at the end.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.LockInternalsDriver;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

public final class CuratorWorker {
    private static int clientId;

    /** InterProcessMutex, with its own node's path made visible (Curator keeps the accessor protected). */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path, LockInternalsDriver driver) {
            super(client, path, driver);
        }

        String node() {
            return getLockPath();
        }
    }

    /** Curator's standard driver, but kazoo's <hex>__lock__<seq> nodes are sorted by their sequence number. */
    static final class KazooAwareDriver extends StandardLockInternalsDriver {
        private static final String KAZOO = "__lock__";

        @Override
        public String fixForSorting(String name, String lockName) {
            int at = name.lastIndexOf(KAZOO);
            return at >= 0 ? name.substring(at + KAZOO.length()) : super.fixForSorting(name, lockName);
        }
    }

    /** The fenced register, over TCP on 127.0.0.1. */
    static final class Register {
        private final BufferedReader in;
        private final OutputStream out;

        Register(String addr, int client) throws Exception {
            int colon = addr.lastIndexOf(':');
            Socket socket = new Socket(addr.substring(0, colon), Integer.parseInt(addr.substring(colon + 1)));
            socket.setTcpNoDelay(true);
            in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
            out = socket.getOutputStream();
            call("HELLO " + client + " " + ProcessHandle.current().pid());
        }

        private String call(String line) throws Exception {
            out.write((line + "\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String reply = in.readLine();
            if (reply == null) {
                throw new IllegalStateException("the register closed the connection");
            }
            if (reply.startsWith("ERR")) {
                throw new IllegalStateException("register: " + reply);
            }
            return reply;
        }

        /** The counter after an accepted operation, or null when the fence rejected it. */
        Long op(long token, String action, long value) throws Exception {
            String reply = call("OP x " + token + " " + action + " " + value);
            if (reply.startsWith("OK ")) {
                return Long.parseLong(reply.substring(3));
            }
            if (reply.startsWith("NO ")) {
                return null;
            }
            throw new IllegalStateException("register: unexpected reply " + reply);
        }
    }

    private static void log(String text) {
        System.err.println("curator worker " + clientId + ": " + text);
    }

    public static void main(String[] args) {
        try {
            System.exit(run(args));
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(2);
        }
    }

    private static int run(String[] args) throws Exception {
        String connect = args[0];
        String path = args[1];
        clientId = Integer.parseInt(args[3]);
        int sessionMs = Integer.parseInt(args[4]);
        long untilNs = Long.parseLong(args[5]);
        long seed = Long.parseLong(args[6]);
        long launch = Long.parseLong(args[7]);
        LockInternalsDriver driver;
        switch (args[8]) {
            case "stock":
                driver = new StandardLockInternalsDriver();
                break;
            case "kazoo":
                driver = new KazooAwareDriver();
                break;
            default:
                throw new IllegalArgumentException("unknown driver " + args[8]);
        }
        SplittableRandom rng = new SplittableRandom(seed ^ (launch * 0x9E3779B97F4A7C15L));
        Register register;
        try {
            register = new Register(args[2], clientId);
        } catch (Exception e) {
            log("the register failed: " + e);
            return 2;
        }
        // Set when the connection is suspended or the session lost: the lock may be gone.
        AtomicBoolean lost = new AtomicBoolean(false);
        long held = 0;
        long failed = 0;
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(sessionMs)
                .retryPolicy(new ExponentialBackoffRetry(100, 3, 1000))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (!state.isConnected()) {
                lost.set(true);
            }
        });
        try {
            client.start();
            while (!client.blockUntilConnected(2 * sessionMs, TimeUnit.MILLISECONDS)) {
                log("connecting timed out");
                if (System.nanoTime() - untilNs >= 0) {
                    return 0;
                }
            }
            while (System.nanoTime() - untilNs < 0) {
                Mutex lock = new Mutex(client, path, driver);
                lost.set(false);
                boolean got;
                try {
                    got = lock.acquire(3L * sessionMs, TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    failed++;
                    log("acquire: " + e);
                    Thread.sleep(50);
                    continue;
                }
                if (!got) {
                    continue;
                }
                held++;
                try {
                    Stat stat = client.checkExists().forPath(lock.node());
                    if (stat == null) {
                        lost.set(true);
                    } else {
                        section(register, stat.getCzxid(), lost, rng);
                    }
                } catch (RegisterFailed e) {
                    log("the register failed: " + e.getCause());
                    Runtime.getRuntime().halt(2);
                } catch (Exception e) {
                    log("reading our node: " + e);
                } finally {
                    try {
                        lock.release();
                    } catch (Exception e) {
                        log("release: " + e);
                    }
                }
            }
        } finally {
            client.close();
        }
        log("done, held " + held + " times, " + failed + " acquires failed");
        return 0;
    }

    /** A failure of the register, not of ZooKeeper. */
    static final class RegisterFailed extends Exception {
        RegisterFailed(Exception cause) {
            super(cause);
        }
    }

    /** One critical section; whether it completed. */
    private static boolean section(Register register, long token, AtomicBoolean lost, SplittableRandom rng)
            throws Exception {
        try {
            if (lost.get()) {
                return false;
            }
            Long value = register.op(token, "read", 0);
            if (value == null) {
                return false;
            }
            Thread.sleep(rng.nextLong(20, 121));
            if (lost.get()) {
                return false;
            }
            return register.op(token, "write", value + 1) != null;
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            throw new RegisterFailed(e);
        }
    }
}
