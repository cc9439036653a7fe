// A contender driven by Apache Curator's lock recipes, for zklock's interoperability tests.
//
// The tests compile this file with javac into a temporary directory and run it as a separate JVM next to
// zklock contenders on the same lock path. It talks to the test over stdin/stdout, one line at a time:
//
//   java CuratorPeer LOCK ACTION CONNECT PATH [ROUNDS FILE]
//
//   LOCK    mutex  InterProcessMutex                         (_c_<uuid>-lock-<seq>)
//           read   InterProcessReadWriteLock.readLock()      (_c_<uuid>-__READ__<seq>)
//           write  InterProcessReadWriteLock.writeLock()     (_c_<uuid>-__WRIT__<seq>)
//   ACTION  increment  ROUNDS times: acquire, read the integer in FILE, write it back plus one, release.
//           observe    ROUNDS times: acquire, read FILE twice with a pause between, fail if it changed,
//                      release.
//           hold       acquire once, print "ACQUIRED <node path>", wait for a line (or EOF) on stdin,
//                      release, print "RELEASED".
//
// increment/observe print "READY" once connected and wait for a "GO" line, so that the test can start every
// contender at the same moment (a JVM takes about a second to start); they print "DONE" at the end.
// Any failure prints a stack trace to stderr and exits with status 2; a changed value in observe exits
// with 3.
//
// Benchmark modes, for crates/bench's compare-peers (see bench() below):
//
//   java CuratorPeer bench mutex|rwlock CONNECT PATH CLIENTS WARMUP_S SECONDS [READ_FRACTION]
//       CLIENTS threads, each with its own CuratorFramework (its own session), loop acquire+release of one
//       InterProcessMutex (mutex) or of InterProcessReadWriteLock's read lock with probability READ_FRACTION and
//       its write lock otherwise (rwlock). Prints "READY" once every client is connected, waits for "GO", runs
//       WARMUP_S seconds unmeasured then SECONDS measured, prints "COUNT <acquisitions> <measured seconds>".
//   java CuratorPeer bench failover CONNECT PATH ROUNDS resign|close|closeframework
//       ROUNDS times, on a fresh path: a LeaderLatch leads, a second one (another session) queues behind it;
//       then the leader resigns (LeaderLatch.close(): deletes its node), or closes its session (close: the
//       ZooKeeper handle's close(); closeframework: CuratorFramework.close()) and the server deletes the node.
//       Prints "FAILOVER <microseconds until the second latch's isLeader() ran> <microseconds the close call
//       blocked>" per round, "DONE" at the end.
//   java CuratorPeer bench dbarrier CONNECT PATH CLIENTS BARRIERS
//       CLIENTS threads with their own sessions pass BARRIERS DistributedDoubleBarriers (PATH/b<i>, CLIENTS
//       members each) one after the other: enter(), leave(). "READY", waits for "GO", prints
//       "BARRIERS <count> <seconds>"; or, when no barrier completes for 20 s, "STALLED <barriers completed by
//       every client> <seconds until the last of them>" (and exits 0 without waiting for the stuck threads).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorPeer {
    /** Widens the window in which two holders at once would lose an update; not used for synchronisation. */
    private static final long PAUSE_MS = 2;

    public static void main(String[] args) {
        try {
            System.exit(run(args));
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(2);
        }
    }

    private static int run(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("bench")) {
            return bench(args);
        }
        if (args.length < 4) {
            System.err.println(
                    "usage: CuratorPeer mutex|read|write increment|observe|hold CONNECT PATH [ROUNDS FILE]");
            return 2;
        }
        String kind = args[0];
        String action = args[1];
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ExponentialBackoffRetry retry = new ExponentialBackoffRetry(100, 10);
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(args[2], 10_000, 10_000, retry)) {
            client.start();
            if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not connect to " + args[2]);
            }
            InterProcessMutex lock = lock(client, kind, args[3]);
            switch (action) {
                case "hold":
                    lock.acquire();
                    say("ACQUIRED " + ourNode(lock));
                    stdin.readLine(); // a line or EOF: either way, release
                    lock.release();
                    say("RELEASED");
                    return 0;
                case "increment":
                case "observe":
                    int rounds = Integer.parseInt(args[4]);
                    Path file = Path.of(args[5]);
                    say("READY");
                    String go = stdin.readLine();
                    if (!"GO".equals(go)) {
                        throw new IllegalStateException("expected GO, got " + go);
                    }
                    for (int i = 0; i < rounds; i++) {
                        lock.acquire();
                        try {
                            if (!criticalSection(action, file)) {
                                return 3;
                            }
                        } finally {
                            lock.release();
                        }
                    }
                    say("DONE");
                    return 0;
                default:
                    throw new IllegalArgumentException("unknown action " + action);
            }
        }
    }

    /** Increments the counter, or checks that it does not change; false if it did change. */
    private static boolean criticalSection(String action, Path file) throws Exception {
        long value = read(file);
        Thread.sleep(PAUSE_MS);
        if (action.equals("increment")) {
            Files.writeString(file, (value + 1) + "\n");
            return true;
        }
        long again = read(file);
        if (again != value) {
            System.err.println("the value changed under a read lock: " + value + " -> " + again);
            return false;
        }
        return true;
    }

    private static InterProcessMutex lock(CuratorFramework client, String kind, String path) {
        switch (kind) {
            case "mutex":
                return new InterProcessMutex(client, path);
            case "read":
                return new InterProcessReadWriteLock(client, path).readLock();
            case "write":
                return new InterProcessReadWriteLock(client, path).writeLock();
            default:
                throw new IllegalArgumentException("unknown lock " + kind);
        }
    }

    /** Our lock node. Curator keeps it behind a protected accessor: reflection is fine in a test. */
    private static String ourNode(InterProcessMutex lock) throws Exception {
        Method getLockPath = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        getLockPath.setAccessible(true);
        return (String) getLockPath.invoke(lock);
    }

    private static long read(Path file) throws Exception {
        return Long.parseLong(Files.readString(file).trim());
    }

    // ---------------------------------------------------------------------------------------------------------
    // Benchmark modes (compare-peers). Timing uses System.nanoTime inside this JVM; nothing here is used by the
    // interop tests.

    private static int bench(String[] args) throws Exception {
        String what = args[1];
        String connect = args[2];
        String path = args[3];
        switch (what) {
            case "mutex":
            case "rwlock": {
                int clients = Integer.parseInt(args[4]);
                double warmup = Double.parseDouble(args[5]);
                double seconds = Double.parseDouble(args[6]);
                double readFraction = args.length > 7 ? Double.parseDouble(args[7]) : 0.0;
                return benchLock(what, connect, path, clients, warmup, seconds, readFraction);
            }
            case "failover":
                return benchFailover(connect, path, Integer.parseInt(args[4]), args[5]);
            case "dbarrier":
                return benchDoubleBarrier(connect, path, Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            default:
                throw new IllegalArgumentException("unknown benchmark " + what);
        }
    }

    private static CuratorFramework started(String connect) {
        CuratorFramework client =
                CuratorFrameworkFactory.newClient(connect, 10_000, 10_000, new ExponentialBackoffRetry(100, 10));
        client.start();
        return client;
    }

    private static List<CuratorFramework> connectAll(String connect, int clients) throws Exception {
        List<CuratorFramework> all = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            all.add(started(connect));
        }
        for (CuratorFramework client : all) {
            if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not connect to " + connect);
            }
        }
        return all;
    }

    private static void awaitGo() throws Exception {
        say("READY");
        String go = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        if (!"GO".equals(go)) {
            throw new IllegalStateException("expected GO, got " + go);
        }
    }

    /** Runs one body per client on its own thread; rethrows the first failure. */
    private interface Body {
        void run(int index) throws Exception;
    }

    private static void onThreads(int count, Body body) throws Exception {
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < count; i++) {
            final int index = i;
            Thread thread = new Thread(() -> {
                try {
                    body.run(index);
                } catch (Throwable t) {
                    failures.add(t);
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (!failures.isEmpty()) {
            throw new RuntimeException(failures.get(0));
        }
    }

    private static int benchLock(String what, String connect, String path, int clients, double warmup,
            double seconds, double readFraction) throws Exception {
        List<CuratorFramework> all = connectAll(connect, clients);
        awaitGo();
        long measureFrom = System.nanoTime() + (long) (warmup * 1e9);
        long end = measureFrom + (long) (seconds * 1e9);
        AtomicLong count = new AtomicLong();
        onThreads(clients, index -> {
            CuratorFramework client = all.get(index);
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
            while (System.nanoTime() < end) {
                InterProcessMutex lock = what.equals("mutex") ? mutex
                        : ThreadLocalRandom.current().nextDouble() < readFraction ? rw.readLock() : rw.writeLock();
                lock.acquire();
                lock.release();
                if (System.nanoTime() >= measureFrom) {
                    count.incrementAndGet();
                }
            }
        });
        double measured = (System.nanoTime() - measureFrom) / 1e9;
        say("COUNT " + count.get() + " " + measured);
        for (CuratorFramework client : all) {
            client.close();
        }
        return 0;
    }

    private static int benchFailover(String connect, String root, int rounds, String how) throws Exception {
        CuratorFramework observer = connectAll(connect, 1).get(0);
        for (int round = 0; round < rounds; round++) {
            String path = root + "/r" + round;
            List<CuratorFramework> pair = connectAll(connect, 2);
            LeaderLatch first = new LeaderLatch(pair.get(0), path);
            first.start();
            if (!first.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the first latch did not lead");
            }
            LeaderLatch second = new LeaderLatch(pair.get(1), path);
            AtomicLong ledAt = new AtomicLong();
            CountDownLatch leads = new CountDownLatch(1);
            second.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    ledAt.set(System.nanoTime());
                    leads.countDown();
                }

                @Override
                public void notLeader() {}
            });
            second.start();
            // Wait (on a children watch, bounded) until the second candidate's node is queued.
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (true) {
                CountDownLatch changed = new CountDownLatch(1);
                int children = observer.getChildren().usingWatcher(
                        (org.apache.zookeeper.Watcher) event -> changed.countDown()).forPath(path).size();
                if (children >= 2) {
                    break;
                }
                if (System.nanoTime() > deadline || !changed.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the second latch never queued");
                }
            }
            long start = System.nanoTime();
            switch (how) {
                case "close":
                    // The session's own handle: closeSession goes out at once. (CuratorFramework.close() first
                    // shuts Curator's executors and listeners down, which is client bookkeeping, not the recipe.)
                    pair.get(0).getZookeeperClient().getZooKeeper().close();
                    break;
                case "closeframework":
                    pair.get(0).close();
                    break;
                default:
                    first.close();
            }
            long closed = System.nanoTime();
            if (!leads.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the second latch did not lead after the first left");
            }
            say("FAILOVER " + (ledAt.get() - start) / 1000 + " " + (closed - start) / 1000);
            second.close();
            if (how.equals("close")) {
                try {
                    first.close();
                } catch (Exception gone) {
                    // Its session is closed already; the latch has nothing left to delete.
                }
            }
            pair.get(0).close();
            pair.get(1).close();
        }
        observer.close();
        say("DONE");
        return 0;
    }

    /** With no barrier completed by every client for this long, the run is reported as stalled. */
    private static final long STALL_NS = 20_000_000_000L;

    private static int benchDoubleBarrier(String connect, String root, int clients, int barriers)
            throws Exception {
        List<CuratorFramework> all = connectAll(connect, clients);
        awaitGo();
        long start = System.nanoTime();
        java.util.concurrent.atomic.AtomicIntegerArray done = new java.util.concurrent.atomic.AtomicIntegerArray(clients);
        Thread runner = new Thread(() -> {
            try {
                onThreads(clients, index -> {
                    for (int i = 0; i < barriers; i++) {
                        DistributedDoubleBarrier barrier = new DistributedDoubleBarrier(all.get(index),
                                root + "/b" + i, clients);
                        barrier.enter();
                        barrier.leave();
                        done.set(index, i + 1);
                    }
                });
            } catch (Exception e) {
                e.printStackTrace();
            }
        });
        runner.setDaemon(true);
        runner.start();
        // Watch progress: Curator's double barrier can stall in leave() with every client waiting; report how
        // far it got instead of hanging.
        int completed = 0;
        long progressAt = start;
        while (true) {
            runner.join(200);
            int least = Integer.MAX_VALUE;
            for (int i = 0; i < clients; i++) {
                least = Math.min(least, done.get(i));
            }
            long now = System.nanoTime();
            if (least > completed) {
                completed = least;
                progressAt = now;
            }
            if (!runner.isAlive()) {
                if (completed < barriers) {
                    throw new IllegalStateException("a client failed after " + completed + " barriers");
                }
                say("BARRIERS " + barriers + " " + (now - start) / 1e9);
                break;
            }
            if (now - progressAt > STALL_NS) {
                say("STALLED " + completed + " " + (progressAt - start) / 1e9);
                System.exit(0); // the stuck threads and their sessions go with the JVM
            }
        }
        for (CuratorFramework client : all) {
            client.close();
        }
        return 0;
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
