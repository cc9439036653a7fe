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

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
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

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
