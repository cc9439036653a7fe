// Apache Curator (Java) against a ZooKeeper-compatible server: basic CRUD and InterProcessMutex with two
// contenders on separate sessions. Usage: java -cp <curator+zookeeper jars> CuratorCheck.java HOST:PORT
// Prints OK and exits 0 on success; any failure throws (exit 1).
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;

public class CuratorCheck {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        try (CuratorFramework a = CuratorFrameworkFactory.newClient(hosts, 30000, 30000, new RetryOneTime(500));
             CuratorFramework b = CuratorFrameworkFactory.newClient(hosts, 30000, 30000, new RetryOneTime(500))) {
            a.start();
            b.start();
            check(a.blockUntilConnected(60, TimeUnit.SECONDS), "a connects");
            check(b.blockUntilConnected(60, TimeUnit.SECONDS), "b connects");

            a.create().creatingParentsIfNeeded().forPath("/curator/data/x", "v1".getBytes());
            check(new String(b.getData().forPath("/curator/data/x")).equals("v1"), "b reads a's write");
            a.setData().withVersion(0).forPath("/curator/data/x", "v2".getBytes());
            check(b.checkExists().forPath("/curator/data/x").getVersion() == 1, "version bumped");
            check(b.getChildren().forPath("/curator/data").equals(java.util.List.of("x")), "children");
            a.delete().deletingChildrenIfNeeded().forPath("/curator/data");
            check(b.checkExists().forPath("/curator/data") == null, "deleted");

            InterProcessMutex lockA = new InterProcessMutex(a, "/curator/lock");
            InterProcessMutex lockB = new InterProcessMutex(b, "/curator/lock");
            check(lockA.acquire(30, TimeUnit.SECONDS), "a acquires");
            check(!lockB.acquire(300, TimeUnit.MILLISECONDS), "b must not get a held lock");
            lockA.release();
            check(lockB.acquire(30, TimeUnit.SECONDS), "b acquires after release");
            check(!lockA.acquire(300, TimeUnit.MILLISECONDS), "a must not get b's lock");
            lockB.release();
            check(a.getChildren().forPath("/curator/lock").isEmpty(), "no lock nodes left");
        }
        System.out.println("OK");
    }
}
