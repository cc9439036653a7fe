// Curator's CuratorCache following a tree, for zklock's cache interoperability tests (tests/it/cache_interop.rs).
// (CuratorCachePeer.java, next to this file, is crates/compare's cache benchmark peer.)
//
// The tests compile this file with javac (against the Debian Curator 5.4 jars, as CuratorPeer.java) into a temporary
// directory and run it as a separate JVM. It talks to the test over stdin/stdout, one line at a time:
//
//   java CuratorCacheViewPeer CONNECT ROOT [NODE...]
//
// Starts a CuratorCache of the tree at ROOT and a CuratorCache with Options.SINGLE_NODE_CACHE on each NODE (which need
// not exist), and prints "READY" once every cache has said initialized. Then it answers lines on stdin:
//
//   await PATH   waits (at most 60 s) until the tree cache holds PATH, then prints "SEEN"
//   dump         prints "VIEW <JSON>": {"tree": {PATH: NODE, ...}, "nodes": {NODE_PATH: NODE or null, ...}}, what
//                the tree cache and each single-node cache hold now; NODE is {"data": "<hex>", "stat": {"czxid": ...,
//                "mzxid": ..., "pzxid": ..., "ctime": ..., "mtime": ..., "version": ..., "cversion": ...,
//                "aversion": ..., "ephemeralOwner": ..., "dataLength": ..., "numChildren": ...}} (the ChildData's
//                data, null as empty, and stat)
//
// EOF closes the caches and the session and exits 0. Any failure prints a stack trace to stderr and exits with
// status 2.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

public final class CuratorCacheViewPeer {
    private static final long TIMEOUT_S = 60;

    public static void main(String[] args) {
        try {
            System.exit(run(args));
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(2);
        }
    }

    private static int run(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: CuratorCacheViewPeer CONNECT ROOT [NODE...]");
            return 2;
        }
        String root = args[1];
        List<String> watched = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            watched.add(args[i]);
        }
        try (CuratorFramework client =
                CuratorFrameworkFactory.newClient(args[0], 10_000, 10_000, new ExponentialBackoffRetry(100, 10))) {
            client.start();
            if (!client.blockUntilConnected((int) TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected to " + args[0]);
            }
            CountDownLatch initialized = new CountDownLatch(1 + watched.size());
            CuratorCache tree = start(CuratorCache.build(client, root), initialized);
            List<CuratorCache> nodes = new ArrayList<>();
            for (String path : watched) {
                nodes.add(start(CuratorCache.build(client, path, CuratorCache.Options.SINGLE_NODE_CACHE), initialized));
            }
            if (!initialized.await(TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the caches did not initialize");
            }
            say("READY");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+");
                if (words[0].isEmpty()) {
                    continue;
                }
                switch (words[0]) {
                    case "await": {
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
                        while (!tree.get(words[1]).isPresent()) {
                            if (System.nanoTime() > deadline) {
                                throw new IllegalStateException("the CuratorCache never held " + words[1]);
                            }
                            Thread.sleep(10);
                        }
                        say("SEEN");
                        break;
                    }
                    case "dump": {
                        StringBuilder json = new StringBuilder("{\"tree\":{");
                        List<ChildData> held = tree.stream()
                                .sorted(Comparator.comparing(ChildData::getPath))
                                .collect(Collectors.toList());
                        for (int i = 0; i < held.size(); i++) {
                            if (i > 0) {
                                json.append(',');
                            }
                            string(json, held.get(i).getPath());
                            json.append(':');
                            node(json, held.get(i));
                        }
                        json.append("},\"nodes\":{");
                        for (int i = 0; i < watched.size(); i++) {
                            if (i > 0) {
                                json.append(',');
                            }
                            string(json, watched.get(i));
                            json.append(':');
                            Optional<ChildData> found = nodes.get(i).get(watched.get(i));
                            if (found.isPresent()) {
                                node(json, found.get());
                            } else {
                                json.append("null");
                            }
                        }
                        json.append("}}");
                        say("VIEW " + json);
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("unknown command " + line);
                }
            }
            for (CuratorCache cache : nodes) {
                cache.close();
            }
            tree.close();
        }
        return 0;
    }

    private static CuratorCache start(CuratorCache cache, CountDownLatch initialized) {
        cache.listenable().addListener(CuratorCacheListener.builder().forInitialized(initialized::countDown).build());
        cache.start();
        return cache;
    }

    private static void node(StringBuilder json, ChildData child) {
        byte[] data = child.getData() == null ? new byte[0] : child.getData();
        StringBuilder hex = new StringBuilder();
        for (byte b : data) {
            hex.append(String.format("%02x", b & 0xff));
        }
        Stat s = child.getStat();
        json.append("{\"data\":\"").append(hex).append("\",\"stat\":{")
                .append("\"czxid\":").append(s.getCzxid())
                .append(",\"mzxid\":").append(s.getMzxid())
                .append(",\"pzxid\":").append(s.getPzxid())
                .append(",\"ctime\":").append(s.getCtime())
                .append(",\"mtime\":").append(s.getMtime())
                .append(",\"version\":").append(s.getVersion())
                .append(",\"cversion\":").append(s.getCversion())
                .append(",\"aversion\":").append(s.getAversion())
                .append(",\"ephemeralOwner\":").append(s.getEphemeralOwner())
                .append(",\"dataLength\":").append(s.getDataLength())
                .append(",\"numChildren\":").append(s.getNumChildren())
                .append("}}");
    }

    /** A JSON string (the paths here are ASCII; quotes, backslashes and control characters are escaped anyway). */
    private static void string(StringBuilder json, String text) {
        json.append('"');
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                json.append('\\').append(c);
            } else if (c < 0x20) {
                json.append(String.format("\\u%04x", (int) c));
            } else {
                json.append(c);
            }
        }
        json.append('"');
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
