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
//           revocable  like hold, but the lock is made revocable first (InterProcessMutex.makeRevocable):
//                      when a revocation request arrives (the node's data set to __REVOKE__), print
//                      "REVOCATION_REQUESTED" and release as if a line had come.
//           revoke     PATH is a participant's node: Revoker.attemptRevoke(client, PATH) (sets its data to
//                      __REVOKE__), then print "REVOKE_SENT" and exit. LOCK is not used.
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
//   java CuratorPeer bench waiters CONNECT PATH CLIENTS HANDOFFS SECONDS [HOLD_MS]
//       Hand-offs with CLIENTS sessions queued on one InterProcessMutex (compare-scale's waiters section). CLIENTS
//       daemon threads, each with its own CuratorFramework, loop acquire() + release(); the first holder keeps the
//       lock until every client's node is in PATH. "READY" once every client is connected, waits for "GO",
//       queues everybody, prints "QUEUED", waits for "START", then times HANDOFFS hand-offs (fewer if SECONDS pass
//       first): from a holder's release() call to the next holder's acquire() returning. The last holder keeps
//       the lock. Prints "DONE <hand-offs> <seconds> <latency in µs>...", waits for a line (or EOF), closes the
//       sessions (for at most 5 s; the rest expire after the JVM exits) and exits 0.
//
// Counter and queue modes, for zklock's counter, priority_queue and delay_queue interop tests (see recipes() below):
//
//   java CuratorPeer recipes CONNECT
//       Prints "READY" once connected, then reads one command per line from stdin and answers each with one line:
//         long-get PATH                DistributedAtomicLong.get()                   -> VALUE <value>
//         long-add PATH DELTA          add(DELTA), again until it succeeds           -> ADDED <pre> <post>
//         long-set PATH VALUE          forceSet(VALUE)                               -> SET
//         long-cas PATH OLD NEW        compareAndSet(OLD, NEW)                       -> CAS <succeeded> <pre> <post>
//         long-increments PATH N       N increments, each again until it succeeds    -> DONE
//         count-get PATH SEED          a started SharedCount, kept for the commands below (its VersionedValue
//                                      now is remembered as "seen")                  -> COUNT <value> <version>
//         count-set PATH VALUE         setCount(VALUE) on the kept SharedCount       -> COUNT <value> <version>
//         count-tryset PATH VALUE      trySetCount(seen, VALUE)                      -> TRYSET <true|false>
//         count-watch PATH VALUE       a listener on the kept SharedCount            -> WATCHING; then, from the
//                                      listener, "CHANGED <VALUE>" once it hears the count change to VALUE
//         pq-put PATH PRIORITY TEXT    DistributedPriorityQueue.put(TEXT, PRIORITY) (UTF-8 items, put in the
//                                      foreground)                                   -> PUT
//         pq-consume PATH LOCK         starts a consumer (lockPath LOCK, or none for "-") that keeps what it
//                                      consumes, in order                            -> CONSUMING
//         pq-stop PATH                 closes that consumer                          -> CONSUMED <text>,<text>,...
//                                      (or "-" if it consumed nothing)
//         dq-put PATH EPOCHMS TEXT     DistributedDelayQueue.put(TEXT, EPOCHMS), in the foreground -> PUT
//         dq-consume PATH              starts a delay-queue consumer (no lock path)  -> CONSUMING
//         dq-stop PATH COUNT           waits (30 s at most) until it consumed COUNT items, closes it
//                                      -> CONSUMED <text>@<epoch ms consumed>,... (or "-")
//       EOF ends it (exit 0); a failure prints a stack trace on stderr and exits 2.

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
import org.apache.curator.framework.recipes.locks.Revoker;
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
        if (args.length > 0 && args[0].equals("recipes")) {
            return recipes(args[1]);
        }
        if (args.length < 4) {
            System.err.println(
                    "usage: CuratorPeer mutex|read|write increment|observe|hold|revocable|revoke CONNECT PATH [ROUNDS FILE]");
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
            if (action.equals("revoke")) {
                Revoker.attemptRevoke(client, args[3]);
                say("REVOKE_SENT");
                return 0;
            }
            InterProcessMutex lock = lock(client, kind, args[3]);
            switch (action) {
                case "revocable": {
                    // Released by the main thread (Curator's locks belong to the thread that acquired them) on
                    // whichever comes first: the revocation request, or a line (or EOF) on stdin.
                    CountDownLatch release = new CountDownLatch(1);
                    lock.makeRevocable(forLock -> {
                        say("REVOCATION_REQUESTED");
                        release.countDown();
                    });
                    lock.acquire();
                    say("ACQUIRED " + ourNode(lock));
                    Thread reader = new Thread(() -> {
                        try {
                            stdin.readLine();
                        } catch (Exception ignored) {
                            // EOF or a closed pipe: release all the same.
                        }
                        release.countDown();
                    });
                    reader.setDaemon(true);
                    reader.start();
                    release.await();
                    lock.release();
                    say("RELEASED");
                    return 0;
                }
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
            case "waiters":
                return benchWaiters(connect, path, Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                        Double.parseDouble(args[6]), args.length > 7 ? Long.parseLong(args[7]) : 0);
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

    private static void expectLine(BufferedReader stdin, String word) throws Exception {
        String line = stdin.readLine();
        if (!word.equals(line)) {
            throw new IllegalStateException("expected " + word + ", got " + line);
        }
    }

    private static int benchWaiters(String connect, String path, int clients, int handoffs, double seconds,
            long holdMillis) throws Exception {
        List<CuratorFramework> all = connectAll(connect, clients);
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        say("READY");
        expectLine(stdin, "GO");
        CountDownLatch start = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(1);
        AtomicLong releasedAt = new AtomicLong();
        AtomicLong deadline = new AtomicLong(Long.MAX_VALUE);
        java.util.concurrent.atomic.AtomicLongArray samples = new java.util.concurrent.atomic.AtomicLongArray(handoffs);
        java.util.concurrent.atomic.AtomicInteger taken = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
        for (int i = 0; i < clients; i++) {
            InterProcessMutex mutex = new InterProcessMutex(all.get(i), path);
            Thread thread = new Thread(() -> {
                try {
                    while (true) {
                        mutex.acquire();
                        if (start.getCount() > 0) {
                            start.await(); // the first holder keeps the lock until everybody is queued
                        } else {
                            long now = System.nanoTime();
                            long at = releasedAt.getAndSet(0);
                            if (at != 0) {
                                int k = taken.getAndIncrement();
                                samples.set(k, now - at);
                                if (k + 1 >= handoffs || now >= deadline.get()) {
                                    done.countDown();
                                    return; // keeps the lock: nothing moves any more
                                }
                            }
                        }
                        if (holdMillis > 0) {
                            Thread.sleep(holdMillis); // the holder's work
                        }
                        releasedAt.set(System.nanoTime());
                        mutex.release();
                    }
                } catch (Throwable t) {
                    if (done.getCount() > 0) {
                        failure.compareAndSet(null, t);
                        done.countDown();
                    }
                }
            });
            thread.setDaemon(true);
            thread.start();
        }
        long bound = System.nanoTime() + 600_000_000_000L;
        while (true) {
            org.apache.zookeeper.data.Stat stat = all.get(0).checkExists().forPath(path);
            if (stat != null && stat.getNumChildren() >= clients) {
                break;
            }
            if (failure.get() != null) {
                throw new IllegalStateException("a contender failed while queueing", failure.get());
            }
            if (System.nanoTime() > bound) {
                throw new IllegalStateException("not every contender queued within 600 s");
            }
            Thread.sleep(20);
        }
        Thread.sleep(100 + clients / 20); // the last ones set their watches
        say("QUEUED");
        expectLine(stdin, "START");
        long begin = System.nanoTime();
        deadline.set(begin + (long) (seconds * 1e9));
        start.countDown();
        done.await((long) seconds + 60, TimeUnit.SECONDS);
        long end = System.nanoTime();
        if (failure.get() != null) {
            throw new IllegalStateException("a contender failed", failure.get());
        }
        int count = Math.min(taken.get(), handoffs);
        StringBuilder line = new StringBuilder("DONE " + count + " " + (end - begin) / 1e9);
        for (int k = 0; k < count; k++) {
            line.append(' ').append(samples.get(k) / 1000);
        }
        say(line.toString());
        stdin.readLine(); // the caller reads its counters before our closes delete nodes and fire watches
        // Each session's own handle: closeSession goes out at once and the server deletes our nodes. Bounded:
        // ZooKeeper's Java client serialises much of its work on one JVM-wide monitor (the shared
        // ZooKeeper.States constant), so a thousand closes take minutes; whatever is still open after 5 s is
        // left to expire with the JVM's exit (the caller waits for its nodes to go).
        java.util.concurrent.ExecutorService closer = java.util.concurrent.Executors.newFixedThreadPool(64);
        for (CuratorFramework client : all) {
            closer.submit(() -> {
                client.getZookeeperClient().getZooKeeper().close();
                return null;
            });
        }
        closer.shutdown();
        closer.awaitTermination(5, TimeUnit.SECONDS);
        return 0;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Counter and priority-queue modes (zklock's counter and priority_queue interop tests): see the header.

    private static int recipes(String connect) throws Exception {
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        java.util.Map<String, org.apache.curator.framework.recipes.shared.SharedCount> counts =
                new java.util.HashMap<>();
        java.util.Map<String, org.apache.curator.framework.recipes.shared.VersionedValue<Integer>> seen =
                new java.util.HashMap<>();
        java.util.Map<String, org.apache.curator.framework.recipes.queue.DistributedPriorityQueue<String>> consumers =
                new java.util.HashMap<>();
        java.util.Map<String, java.util.List<String>> consumed = new java.util.HashMap<>();
        java.util.Map<String, org.apache.curator.framework.recipes.queue.DistributedDelayQueue<String>> delayed =
                new java.util.HashMap<>();
        org.apache.curator.framework.recipes.queue.QueueSerializer<String> utf8 =
                new org.apache.curator.framework.recipes.queue.QueueSerializer<String>() {
                    @Override
                    public byte[] serialize(String item) {
                        return item.getBytes(StandardCharsets.UTF_8);
                    }

                    @Override
                    public String deserialize(byte[] bytes) {
                        return new String(bytes, StandardCharsets.UTF_8);
                    }
                };
        try (CuratorFramework client = connectAll(connect, 1).get(0)) {
            say("READY");
            String line;
            while ((line = stdin.readLine()) != null) {
                String[] c = line.trim().split(" ", 4);
                String path = c.length > 1 ? c[1] : "";
                org.apache.curator.framework.recipes.atomic.DistributedAtomicLong atomic =
                        new org.apache.curator.framework.recipes.atomic.DistributedAtomicLong(client, path,
                                new org.apache.curator.retry.RetryNTimes(20, 10));
                switch (c[0]) {
                    case "long-get":
                        say("VALUE " + atomic.get().postValue());
                        break;
                    case "long-add": {
                        org.apache.curator.framework.recipes.atomic.AtomicValue<Long> added;
                        do {
                            added = atomic.add(Long.parseLong(c[2]));
                        } while (!added.succeeded());
                        say("ADDED " + added.preValue() + " " + added.postValue());
                        break;
                    }
                    case "long-set":
                        atomic.forceSet(Long.parseLong(c[2]));
                        say("SET");
                        break;
                    case "long-cas": {
                        org.apache.curator.framework.recipes.atomic.AtomicValue<Long> swapped =
                                atomic.compareAndSet(Long.parseLong(c[2]), Long.parseLong(c[3]));
                        say("CAS " + swapped.succeeded() + " " + swapped.preValue() + " " + swapped.postValue());
                        break;
                    }
                    case "long-increments":
                        for (int i = Integer.parseInt(c[2]); i > 0; i--) {
                            while (!atomic.increment().succeeded()) {
                                // contended: Curator gave up after its retries; try again
                            }
                        }
                        say("DONE");
                        break;
                    case "count-get": {
                        org.apache.curator.framework.recipes.shared.SharedCount count =
                                new org.apache.curator.framework.recipes.shared.SharedCount(client, path,
                                        Integer.parseInt(c[2]));
                        count.start();
                        counts.put(path, count);
                        org.apache.curator.framework.recipes.shared.VersionedValue<Integer> now =
                                count.getVersionedValue();
                        seen.put(path, now);
                        say("COUNT " + now.getValue() + " " + now.getVersion());
                        break;
                    }
                    case "count-set": {
                        org.apache.curator.framework.recipes.shared.SharedCount count = counts.get(path);
                        count.setCount(Integer.parseInt(c[2]));
                        org.apache.curator.framework.recipes.shared.VersionedValue<Integer> now =
                                count.getVersionedValue();
                        say("COUNT " + now.getValue() + " " + now.getVersion());
                        break;
                    }
                    case "count-tryset":
                        say("TRYSET " + counts.get(path).trySetCount(seen.get(path), Integer.parseInt(c[2])));
                        break;
                    case "count-watch": {
                        java.util.concurrent.atomic.AtomicBoolean heard = new java.util.concurrent.atomic.AtomicBoolean();
                        counts.get(path).addListener(new org.apache.curator.framework.recipes.shared.SharedCountListener() {
                            @Override
                            public void countHasChanged(
                                    org.apache.curator.framework.recipes.shared.SharedCountReader reader, int value) {
                                if (value == Integer.parseInt(c[2]) && !heard.getAndSet(true)) {
                                    say("CHANGED " + value);
                                }
                            }

                            @Override
                            public void stateChanged(CuratorFramework unused,
                                    org.apache.curator.framework.state.ConnectionState state) {}
                        });
                        say("WATCHING");
                        break;
                    }
                    case "pq-put": {
                        org.apache.curator.framework.recipes.queue.DistributedPriorityQueue<String> queue =
                                org.apache.curator.framework.recipes.queue.QueueBuilder
                                        .builder(client, null, utf8, path)
                                        .putInBackground(false)
                                        .buildPriorityQueue(0);
                        queue.start();
                        queue.put(c[3], Integer.parseInt(c[2]));
                        queue.close();
                        say("PUT");
                        break;
                    }
                    case "pq-consume": {
                        java.util.List<String> items = java.util.Collections.synchronizedList(new ArrayList<>());
                        org.apache.curator.framework.recipes.queue.QueueConsumer<String> consumer =
                                keeping(items, false);
                        org.apache.curator.framework.recipes.queue.QueueBuilder<String> builder =
                                org.apache.curator.framework.recipes.queue.QueueBuilder
                                        .builder(client, consumer, utf8, path)
                                        .executor(Runnable::run);
                        if (!c[2].equals("-")) {
                            builder = builder.lockPath(c[2]);
                        }
                        org.apache.curator.framework.recipes.queue.DistributedPriorityQueue<String> queue =
                                builder.buildPriorityQueue(0);
                        queue.start();
                        consumers.put(path, queue);
                        consumed.put(path, items);
                        say("CONSUMING");
                        break;
                    }
                    case "dq-put": {
                        org.apache.curator.framework.recipes.queue.DistributedDelayQueue<String> queue =
                                org.apache.curator.framework.recipes.queue.QueueBuilder
                                        .builder(client, null, utf8, path)
                                        .putInBackground(false)
                                        .buildDelayQueue();
                        queue.start();
                        queue.put(c[3], Long.parseLong(c[2]));
                        queue.close();
                        say("PUT");
                        break;
                    }
                    case "dq-consume": {
                        // Each item consumed as "<item>@<epoch ms when Curator handed it over>".
                        java.util.List<String> items = java.util.Collections.synchronizedList(new ArrayList<>());
                        org.apache.curator.framework.recipes.queue.QueueConsumer<String> consumer =
                                keeping(items, true);
                        org.apache.curator.framework.recipes.queue.DistributedDelayQueue<String> queue =
                                org.apache.curator.framework.recipes.queue.QueueBuilder
                                        .builder(client, consumer, utf8, path)
                                        .executor(Runnable::run)
                                        .buildDelayQueue();
                        queue.start();
                        delayed.put(path, queue);
                        consumed.put(path, items);
                        say("CONSUMING");
                        break;
                    }
                    case "dq-stop": {
                        // Curator deletes an item before it hands it over: wait (30 s at most) for COUNT of them.
                        java.util.List<String> items = consumed.remove(path);
                        long deadline = System.currentTimeMillis() + 30_000;
                        synchronized (items) {
                            while (items.size() < Integer.parseInt(c[2]) && System.currentTimeMillis() < deadline) {
                                items.wait(deadline - System.currentTimeMillis());
                            }
                        }
                        delayed.remove(path).close();
                        synchronized (items) {
                            say("CONSUMED " + (items.isEmpty() ? "-" : String.join(",", items)));
                        }
                        break;
                    }
                    case "pq-stop": {
                        consumers.remove(path).close();
                        java.util.List<String> items = consumed.remove(path);
                        synchronized (items) {
                            say("CONSUMED " + (items.isEmpty() ? "-" : String.join(",", items)));
                        }
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("unknown command " + line);
                }
            }
            for (org.apache.curator.framework.recipes.shared.SharedCount count : counts.values()) {
                count.close();
            }
            for (org.apache.curator.framework.recipes.queue.DistributedPriorityQueue<String> queue : consumers.values()) {
                queue.close();
            }
            for (org.apache.curator.framework.recipes.queue.DistributedDelayQueue<String> queue : delayed.values()) {
                queue.close();
            }
        }
        return 0;
    }

    /** A queue consumer that keeps what it consumes in `items`, in order (`stamped`: as "item@epoch ms now"). */
    private static org.apache.curator.framework.recipes.queue.QueueConsumer<String> keeping(
            java.util.List<String> items, boolean stamped) {
        return new org.apache.curator.framework.recipes.queue.QueueConsumer<String>() {
            @Override
            public void consumeMessage(String item) {
                synchronized (items) {
                    items.add(stamped ? item + "@" + System.currentTimeMillis() : item);
                    items.notifyAll();
                }
            }

            @Override
            public void stateChanged(CuratorFramework unused,
                    org.apache.curator.framework.state.ConnectionState state) {}
        };
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
