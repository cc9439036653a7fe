// Curator 5.4's CuratorCache, for the cache section of compare-peers (crates/compare/src/caches.rs).
//
//   java CuratorCachePeer CONNECT ROOT WATCH SETTLE_S INIT_TIMEOUT_S
//
// One CuratorFramework (one session). The conversation, one line at a time (the same as kazoo_cache_peer.py's and
// `compare-peers __cache`'s):
//
//   -> READY                    connected; the heap (used after a full GC) and the resident memory measured
//   <- GO
//   -> INITIALIZED <seconds from start() to the initialized() callback, -1 if it did not come within
//      INIT_TIMEOUT_S> <nodes held then> <heap before> <heap after> <rss before> <rss after> (bytes) <errors the
//      cache reported to its exception handler until then (the first one goes to stderr)>
//   -> LATER <nodes held SETTLE_S seconds later> <heap> <rss>
//   -> LISTENING                from now on, every create or change of WATCH that the cache's listener sees:
//   -> CHANGED <the node's data, UTF-8> <System.nanoTime() in the listener: CLOCK_MONOTONIC ns on Linux>
//
// EOF on stdin closes the cache and the session; exit 0. Any failure prints a stack trace and exits 2.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorCachePeer {
    public static void main(String[] args) {
        try {
            System.exit(run(args));
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(2);
        }
    }

    private static volatile boolean listening;

    private static int run(String[] args) throws Exception {
        String connect = args[0];
        String root = args[1];
        String watch = args[2];
        double settle = Double.parseDouble(args[3]);
        double initTimeout = Double.parseDouble(args[4]);
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ExponentialBackoffRetry retry = new ExponentialBackoffRetry(100, 10);
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 30_000, 10_000, retry)) {
            client.start();
            if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not connect to " + connect);
            }
            long heapBefore = heapAfterGc();
            long rssBefore = rss();
            say("READY");
            String go = stdin.readLine();
            if (!"GO".equals(go)) {
                throw new IllegalStateException("expected GO, got " + go);
            }
            CountDownLatch initialized = new CountDownLatch(1);
            CuratorCacheListener listener = CuratorCacheListener.builder()
                    .forInitialized(initialized::countDown)
                    .forCreatesAndChanges((old, node) -> {
                        if (listening && node.getPath().equals(watch)) {
                            long now = System.nanoTime();
                            say("CHANGED " + new String(node.getData(), StandardCharsets.UTF_8) + " " + now);
                        }
                    })
                    .build();
            // CuratorCache's default handler only logs (and slf4j-nop drops the log): count what it reports.
            AtomicLong errors = new AtomicLong();
            AtomicReference<Exception> firstError = new AtomicReference<>();
            try (CuratorCache cache = CuratorCache.builder(client, root).withExceptionHandler(e -> {
                errors.incrementAndGet();
                firstError.compareAndSet(null, e);
            }).build()) {
                cache.listenable().addListener(listener);
                long start = System.nanoTime();
                cache.start();
                boolean done = initialized.await((long) (initTimeout * 1e9), TimeUnit.NANOSECONDS);
                double seconds = done ? (System.nanoTime() - start) / 1e9 : -1;
                int nodes = cache.size();
                long errorCount = errors.get();
                if (firstError.get() != null) {
                    System.err.println("CuratorCache reported " + errorCount + " errors, the first: " + firstError.get());
                }
                say("INITIALIZED " + seconds + " " + nodes + " " + heapBefore + " " + heapAfterGc() + " " + rssBefore
                        + " " + rss() + " " + errorCount);
                Thread.sleep((long) (settle * 1000));
                say("LATER " + cache.size() + " " + heapAfterGc() + " " + rss());
                listening = true;
                say("LISTENING");
                while (stdin.readLine() != null) {
                    // Nothing is asked: EOF ends the run.
                }
            }
        }
        return 0;
    }

    /** The heap in use after full collections (System.gc() is a full collection with the JVM's default collectors). */
    private static long heapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** The process's resident memory (VmRSS), bytes. */
    private static long rss() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
