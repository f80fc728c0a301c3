// One-JVM YARN + HDFS test cluster for tony's tests: a MiniDFSCluster (NameNode
// + DataNodes) and a MiniYARNCluster (ResourceManager + NodeManagers) from
// Hadoop's published test jars. Started by scripts/hadoop-test-cluster, which
// writes the input configuration (yarn-site.xml, capacity-scheduler.xml,
// resource-types.xml, ... first on the classpath) and reads back the bound
// ports from the file this program writes once the cluster is usable.
//
// System properties (all set by the script):
//   htc.dir          state directory (data under htc.dir/data)
//   htc.ready        file to write "KEY=value" lines to once ready
//   htc.datanodes    number of DataNodes (default 1)
//   htc.nodemanagers number of NodeManagers (default 3)
//   htc.nn.port      NameNode RPC port (0 = any free one)
//   htc.nn.http.port NameNode HTTP port (0 = any free one)
//   htc.label        node label to create ("" = none)
//   htc.label.exclusive  true/false
//   htc.label.nodes  how many NodeManagers (the last ones) get the label
//   htc.wait.s       how long to wait for the NodeManagers to register
//   htc.rm.ready     file to write the ports to once HDFS and the RM are up,
//                    before the NodeManagers of other JVMs can register
//   htc.external.nms how many of htc.nodemanagers run in JVMs of their own
//                    ("HadoopTestCluster nm"); they are the last ones
//   htc.hdfs / htc.yarn  false: leave HDFS / YARN out of this JVM (a secure
//                    cluster runs them in JVMs of their own: one Kerberos
//                    login per JVM); the HDFS-only JVM writes its ports to
//                    htc.ready and serves on
//   htc.principal, htc.keytab  log in from this keytab before anything starts
//                    (secure cluster; the daemons' configuration is Kerberos)
//   htc.user         HDFS user whose /user/<name> is made theirs (secure
//                    cluster: the test principal, not the JVM's user)
//
// "HadoopTestCluster nm" runs one NodeManager with its web UI in this JVM (the
// configuration on the classpath names the RM); with htc.ready it writes
// HTC_NM_NODE and HTC_NM_HTTP_PORT there once it runs. Several YARN web apps
// cannot share one JVM (see run()), so a NodeManager whose web UI and REST
// must answer, like a production one's, gets a JVM to itself.
import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.NodeLabel;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.NMClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.server.resourcemanager.nodelabels.RMNodeLabelsManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.webapp.util.WebAppUtils;

public final class HadoopTestCluster {
  private static MiniDFSCluster dfs;
  private static MiniYARNCluster yarn;

  private static String prop(String k, String d) {
    String v = System.getProperty(k);
    return v == null ? d : v;
  }

  private static int intProp(String k, int d) {
    return Integer.parseInt(prop(k, Integer.toString(d)));
  }

  /* The RM serves its web proxy (/proxy/<app>/) on its own web port, but it
   * works out the proxy's address once, while its web port is still the
   * configured 0, and caches it in its context: every app's tracking URL
   * would read host:0. Setting that cache to the real port makes tracking
   * URLs lead somewhere, as on a real cluster. Best effort: another Hadoop
   * version may keep it elsewhere. */
  private static void fixTrackingUrls(ResourceManager rm, int webPort) {
    try {
      java.lang.reflect.Field f = rm.getRMContext().getClass().getDeclaredField("proxyHostAndPort");
      f.setAccessible(true);
      f.set(rm.getRMContext(), "localhost:" + webPort);
    } catch (ReflectiveOperationException | RuntimeException e) {
      say("warning: tracking URLs will read port 0 (" + e + ")");
    }
  }

  /* Set when this JVM's NodeManagers were made with web UIs (Hadoop before 3.4). */
  private static boolean nmWebInThisJvm = false;

  /* The MiniYARNCluster with the NodeManagers' web UIs off where the Hadoop
   * version can (3.4 added a constructor with that switch), else with them on
   * (3.3 and older; dropNodeManagerWebServers turns them off). Every YARN web
   * app in one JVM shares Guice's static GuiceFilter pipeline, and the web app
   * started last (an NM's) takes it over: the RM's port would then answer the
   * NM's pages, and /ws/v1/cluster/* with 404. Chosen by reflection so that
   * this file compiles against both. */
  private static MiniYARNCluster newMiniYarnCluster(int nms) throws Exception {
    try {
      return MiniYARNCluster.class
          .getConstructor(String.class, int.class, int.class, int.class, boolean.class)
          .newInstance("htc", nms, 1, 1, false);
    } catch (NoSuchMethodException e) {
      nmWebInThisJvm = true;
      return new MiniYARNCluster("htc", nms, 1, 1);
    }
  }

  /* Before 3.4 each NodeManager of a MiniYARNCluster gets a web server. The
   * NodeManagers are made and initialised in init() and started in start():
   * in between, each one's web server is taken out of its services, so it
   * never starts. Its port stays 0, which is what the NodeManager reports as
   * its HTTP port (its context asks the server), so nodeHTTPAddress reads
   * localhost:0 and containers get NM_HTTP_PORT=0, as with 3.4's switch. Left
   * on, these ports served the RM's pages (the shared Guice pipeline) and a
   * client following a log link there got HTML instead of a log. */
  private static void dropNodeManagerWebServers(MiniYARNCluster yarn, int nms) throws Exception {
    java.lang.reflect.Method remove = org.apache.hadoop.service.CompositeService.class
        .getDeclaredMethod("removeService", org.apache.hadoop.service.Service.class);
    remove.setAccessible(true);
    for (int i = 0; i < nms; i++) {
      NodeManager nm = yarn.getNodeManager(i);
      boolean dropped = false;
      for (org.apache.hadoop.service.Service s : nm.getServices()) {
        if (s instanceof org.apache.hadoop.yarn.server.nodemanager.webapp.WebServer) {
          dropped |= (Boolean) remove.invoke(nm, s);
        }
      }
      if (!dropped) {
        throw new IllegalStateException("NodeManager " + i + " of this JVM has no web server to turn off");
      }
    }
    say("NodeManager web UIs of this JVM off (Hadoop < 3.4: their web servers taken out before start)");
  }

  private static int port(String hostPort) {
    return Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
  }

  private static void say(String msg) {
    System.out.println("hadoop-test-cluster: " + msg);
    System.out.flush();
  }

  public static void main(String[] args) {
    try {
      if (args.length > 0 && args[0].equals("am")) {
        SelfTestAM.run(args);
        return;
      }
      if (args.length > 0 && args[0].equals("nm")) {
        runNodeManager();
        return;
      }
      run();
    } catch (Throwable t) {
      System.out.flush();
      System.err.println("hadoop-test-cluster: FAILED: " + t);
      t.printStackTrace();
      System.err.flush();
      exitCode = 1;
      System.exit(1); // runs the shutdown hook, which stops what did start
    }
  }

  private static void run() throws Exception {
    File dir = new File(prop("htc.dir", "."));
    File data = new File(dir, "data");
    File ready = new File(prop("htc.ready", new File(dir, "run/ready.env").getPath()));
    int nDn = intProp("htc.datanodes", 1);
    int nNm = intProp("htc.nodemanagers", 3);
    int waitS = intProp("htc.wait.s", 120);
    String label = prop("htc.label", "");
    boolean labelExclusive = Boolean.parseBoolean(prop("htc.label.exclusive", "false"));
    int labelNodes = intProp("htc.label.nodes", 1);
    int nExt = intProp("htc.external.nms", 0);
    boolean withHdfs = Boolean.parseBoolean(prop("htc.hdfs", "true"));
    boolean withYarn = Boolean.parseBoolean(prop("htc.yarn", "true"));
    if (withYarn && (nExt < 0 || nExt >= nNm)) {
      // MiniYARNCluster needs at least one NodeManager of its own.
      throw new IllegalArgumentException("htc.external.nms must be 0.." + (nNm - 1) + ", got " + nExt);
    }

    // Both mini clusters put their directories under test.build.data.
    System.setProperty("test.build.data", data.getAbsolutePath());
    System.setProperty("hadoop.tmp.dir", new File(data, "tmp").getAbsolutePath());

    Runtime.getRuntime().addShutdownHook(new Thread(HadoopTestCluster::shutdown, "htc-stop"));
    loginFromKeytab();

    StringBuilder sb = new StringBuilder();
    sb.append("HTC_PID=").append(ProcessHandle.current().pid()).append('\n');
    // Without HDFS here (a secure cluster's YARN JVM) YARN keeps file:/// as
    // its default file system: nothing of it needs HDFS to start, and
    // applications name HDFS in their resources' URLs.
    String defaultFs = "";
    long t0;
    if (withHdfs) {
      defaultFs = startHdfs(data, nDn, sb);
      if (!withYarn) {
        writeAtomically(ready, sb.toString());
        say("ready (HDFS)");
        serveForever();
      }
    }

    // ---- YARN ----
    t0 = System.nanoTime();
    YarnConfiguration yconf = new YarnConfiguration(new Configuration());
    if (!defaultFs.isEmpty()) {
      yconf.set("fs.defaultFS", defaultFs);
    }
    yconf.set(YarnConfiguration.FS_NODE_LABELS_STORE_ROOT_DIR,
        new File(data, "node-labels").toURI().toString());
    int nInternal = nNm - nExt;
    yarn = newMiniYarnCluster(nInternal);
    yarn.init(yconf);
    if (nmWebInThisJvm) {
      dropNodeManagerWebServers(yarn, nInternal);
    }
    yarn.start();
    ResourceManager rm = yarn.getResourceManager();

    Configuration rc = rm.getConfig();
    fixTrackingUrls(rm, port(WebAppUtils.getRMWebAppURLWithoutScheme(rc)));
    sb.append("HTC_RM_PORT=").append(rm.getClientRMService().getBindAddress().getPort()).append('\n');
    sb.append("HTC_RM_SCHEDULER_PORT=")
        .append(rm.getApplicationMasterService().getBindAddress().getPort()).append('\n');
    sb.append("HTC_RM_TRACKER_PORT=")
        .append(port(rc.get(YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS))).append('\n');
    sb.append("HTC_RM_ADMIN_PORT=")
        .append(port(rc.get(YarnConfiguration.RM_ADMIN_ADDRESS))).append('\n');
    sb.append("HTC_RM_WEBAPP_PORT=")
        .append(port(WebAppUtils.getRMWebAppURLWithoutScheme(rc))).append('\n');
    sb.append("HTC_YARN_WORK_DIR=").append(yarn.getTestWorkDir().getAbsolutePath()).append('\n');
    String rmReady = prop("htc.rm.ready", "");
    if (!rmReady.isEmpty()) {
      writeAtomically(new File(rmReady), sb.toString());
      say("RM up; waiting for " + nExt + " NodeManager(s) of other JVMs to register");
    }

    long deadline = System.currentTimeMillis() + waitS * 1000L;
    // Registered with the RM and known to the scheduler (an async event later).
    while (rm.getRMContext().getRMNodes().size() < nNm
        || rm.getResourceScheduler().getNumClusterNodes() < nNm) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("only " + rm.getRMContext().getRMNodes().size()
            + " of " + nNm + " NodeManagers registered after " + waitS + " s");
      }
      Thread.sleep(100);
    }
    // This JVM's NodeManagers first, then the others' in the order they registered.
    List<NodeId> nodeIds = new ArrayList<>();
    for (int i = 0; i < nInternal; i++) {
      nodeIds.add(yarn.getNodeManager(i).getNMContext().getNodeId());
    }
    List<RMNode> ext = new ArrayList<>();
    for (RMNode n : rm.getRMContext().getRMNodes().values()) {
      if (!nodeIds.contains(n.getNodeID())) {
        ext.add(n);
      }
    }
    ext.sort((a, b) -> a.getNodeID().toString().compareTo(b.getNodeID().toString()));
    StringBuilder web = new StringBuilder();
    for (RMNode n : ext) {
      nodeIds.add(n.getNodeID());
      web.append(web.length() == 0 ? "" : ",").append(n.getHttpAddress());
    }

    if (!label.isEmpty() && labelNodes > 0) {
      RMNodeLabelsManager nlm = rm.getRMContext().getNodeLabelManager();
      nlm.addToCluserNodeLabels(
          Collections.singletonList(NodeLabel.newInstance(label, labelExclusive)));
      Map<NodeId, Set<String>> map = new HashMap<>();
      for (int i = Math.max(0, nNm - labelNodes); i < nNm; i++) {
        map.put(nodeIds.get(i), new HashSet<>(Collections.singleton(label)));
      }
      nlm.replaceLabelsOnNode(map);
      say("node label '" + label + "' (exclusive=" + labelExclusive + ") on " + map.keySet());
    }

    StringBuilder nodes = new StringBuilder();
    for (NodeId id : nodeIds) {
      nodes.append(nodes.length() == 0 ? "" : ",").append(id);
    }
    sb.append("HTC_NODES=").append(nodes).append('\n');
    // The NodeManager web UIs that answer (those in JVMs of their own).
    sb.append("HTC_NODE_WEB=").append(web).append('\n');
    say("YARN up: " + nNm + " NodeManagers " + nodes + " ("
        + (System.nanoTime() - t0) / 1000000 + " ms)");

    writeAtomically(ready, sb.toString());
    say("ready");
    serveForever();
  }

  // ---- HDFS ----
  private static String startHdfs(File data, int nDn, StringBuilder sb) throws Exception {
    long t0 = System.nanoTime();
    Configuration hconf = new HdfsConfiguration();
    dfs = new MiniDFSCluster.Builder(hconf, new File(data, "dfs"))
        .numDataNodes(nDn)
        .nameNodePort(intProp("htc.nn.port", 0))
        .nameNodeHttpPort(intProp("htc.nn.http.port", 0))
        .format(true)
        .waitSafeMode(true)
        .build();
    dfs.waitActive();
    int nnPort = dfs.getNameNodePort();
    // HTTPS_ONLY (secure cluster): no plain HTTP port.
    java.net.InetSocketAddress http = dfs.getNameNode().getHttpAddress();
    java.net.InetSocketAddress https = dfs.getNameNode().getHttpsAddress();
    int nnHttpPort = http == null ? 0 : http.getPort();
    int nnHttpsPort = https == null ? 0 : https.getPort();
    String defaultFs = "hdfs://localhost:" + nnPort;
    say("HDFS up at " + defaultFs + ", web port " + nnHttpPort + ", https port " + nnHttpsPort
        + " (" + (System.nanoTime() - t0) / 1000000 + " ms)");

    // The directories a client expects on a fresh cluster.
    FileSystem fs = dfs.getFileSystem();
    String owner = prop("htc.user", "");
    String user = owner.isEmpty() ? System.getProperty("user.name") : owner;
    fs.mkdirs(new Path("/tmp"));
    fs.setPermission(new Path("/tmp"), new FsPermission((short) 01777));
    fs.mkdirs(new Path("/user/" + user));
    if (!owner.isEmpty()) {
      fs.setOwner(new Path("/user/" + user), owner, null);
    }
    fs.mkdirs(new Path("/tmp/hadoop-yarn/staging"));
    fs.setPermission(new Path("/tmp/hadoop-yarn"), new FsPermission((short) 01777));
    fs.setPermission(new Path("/tmp/hadoop-yarn/staging"), new FsPermission((short) 01777));
    sb.append("HTC_NN_PORT=").append(nnPort).append('\n');
    sb.append("HTC_NN_HTTP_PORT=").append(nnHttpPort).append('\n');
    sb.append("HTC_NN_HTTPS_PORT=").append(nnHttpsPort).append('\n');
    return defaultFs;
  }

  // A secure cluster's daemons: the JVM's Kerberos login, before any of them
  // starts (the ResourceManager and NodeManagers of a MiniYARNCluster do not
  // log in themselves; the NameNode and DataNode log in again as the same).
  private static void loginFromKeytab() throws Exception {
    String principal = prop("htc.principal", "");
    if (principal.isEmpty()) {
      return;
    }
    UserGroupInformation.setConfiguration(new Configuration());
    UserGroupInformation.loginUserFromKeytab(principal, prop("htc.keytab", ""));
    say("logged in as " + UserGroupInformation.getLoginUser());
  }

  // Readers poll for the file: it appears whole or not at all.
  private static void writeAtomically(File f, String text) throws Exception {
    File tmp = new File(f.getPath() + ".tmp");
    try (Writer w = new OutputStreamWriter(new FileOutputStream(tmp), StandardCharsets.UTF_8)) {
      w.write(text);
    }
    Files.move(tmp.toPath(), f.toPath(), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }

  // Until killed; the shutdown hook stops what runs.
  private static void serveForever() throws InterruptedException {
    Object forever = new Object();
    synchronized (forever) {
      while (true) {
        forever.wait();
      }
    }
  }

  // One NodeManager, web UI on, configured from the classpath (the script
  // writes its yarn-site.xml: the RM's addresses, its own dirs, port 0 for
  // every server).
  private static void runNodeManager() throws Exception {
    Runtime.getRuntime().addShutdownHook(new Thread(HadoopTestCluster::shutdown, "htc-stop"));
    long t0 = System.nanoTime();
    YarnConfiguration conf = new YarnConfiguration(new Configuration());
    NodeManager nodeManager = new NodeManager();
    nodeManager.init(conf);
    // start() returns registered with the RM, or throws.
    nodeManager.start();
    NodeId id = nodeManager.getNMContext().getNodeId();
    int http = nodeManager.getNMContext().getHttpPort();
    say("NodeManager " + id + " up, web UI on port " + http + " ("
        + (System.nanoTime() - t0) / 1000000 + " ms)");
    String ready = prop("htc.ready", "");
    if (!ready.isEmpty()) {
      writeAtomically(new File(ready), "HTC_NM_PID=" + ProcessHandle.current().pid()
          + "\nHTC_NM_NODE=" + id + "\nHTC_NM_HTTP_PORT=" + http + "\n");
    }
    serveForever();
  }

  private static volatile int exitCode = 0;

  // Runs on SIGTERM/SIGINT and on System.exit. A graceful YARN stop is slow
  // (each NodeManager that ran an application waits ~6 s for it and its
  // NonAggregatingLogHandler another 10 s) and the state is thrown away on the
  // next start anyway, so: kill the container processes (children of this
  // JVM), stop HDFS, and halt.
  private static void shutdown() {
    say("stopping");
    long t0 = System.nanoTime();
    // The RM first, so that it launches no new AM attempt for the AMs killed below.
    // (A NodeManager JVM has no RM: its containers are killed below.)
    try {
      if (yarn != null && yarn.getResourceManager() != null) {
        yarn.getResourceManager().stop();
      }
    } catch (Throwable t) {
      say("RM stop: " + t);
    }
    // Then every process this JVM started (the containers: NMs launch them as
    // children through bash/setsid), twice in case one was being launched.
    int killed = 0;
    for (int round = 0; round < 2; round++) {
      List<ProcessHandle> kids = new ArrayList<>();
      ProcessHandle.current().descendants().forEach(kids::add);
      for (ProcessHandle p : kids) {
        p.destroy();
      }
      long deadline = System.currentTimeMillis() + 2000;
      for (ProcessHandle p : kids) {
        while (p.isAlive() && System.currentTimeMillis() < deadline) {
          try {
            Thread.sleep(20);
          } catch (InterruptedException e) {
            break;
          }
        }
        if (p.isAlive()) {
          p.destroyForcibly();
        }
      }
      killed += kids.size();
    }
    say("stopped (" + killed + " container process(es) killed, "
        + (System.nanoTime() - t0) / 1000000 + " ms)");
    System.out.flush();
    // HDFS, the NMs and their data die with the JVM; start wipes the data.
    Runtime.getRuntime().halt(exitCode);
  }

  /**
   * "HadoopTestCluster am SECONDS GPUS LABEL [HDFS_PATH]": a minimal
   * ApplicationMaster for the script's selftest. Registers, asks for one
   * container with GPUS yarn.io/gpu on node label LABEL ("-" = none) and runs
   * "echo ...; sleep SECONDS" in it, then unregisters SUCCEEDED if that
   * container exited 0. With HDFS_PATH (secure cluster) it first names the
   * tokens it was given and reads that path's status from HDFS: it has no
   * Kerberos ticket, so that works only with a delegation token the
   * submission passed.
   */
  static final class SelfTestAM {
    static void run(String[] args) throws Exception {
      int seconds = Integer.parseInt(args[1]);
      long gpus = Long.parseLong(args[2]);
      String label = args[3].equals("-") ? null : args[3];
      String hdfsPath = args.length > 4 && !args[4].equals("-") ? args[4] : null;
      YarnConfiguration conf = new YarnConfiguration();
      if (hdfsPath != null) {
        Credentials creds = UserGroupInformation.getCurrentUser().getCredentials();
        for (Token<?> t : creds.getAllTokens()) {
          say("token " + t.getKind() + " for " + t.getService());
        }
        say("HDFS " + hdfsPath + " as " + UserGroupInformation.getCurrentUser() + ": "
            + FileSystem.get(conf).getFileStatus(new Path(hdfsPath)));
      }
      AMRMClient<ContainerRequest> rm = AMRMClient.createAMRMClient();
      rm.init(conf);
      rm.start();
      rm.registerApplicationMaster(System.getenv("NM_HOST"), 0, "");
      say("AM registered");
      Resource ask = Resource.newInstance(256, 1);
      ask.setResourceValue("yarn.io/gpu", gpus);
      rm.addContainerRequest(new ContainerRequest(ask, null, null,
          Priority.newInstance(1), true, label));
      NMClient nm = NMClient.createNMClient();
      nm.init(conf);
      nm.start();
      Container got = null;
      int exit = -1;
      long deadline = System.currentTimeMillis() + 120000L;
      while (System.currentTimeMillis() < deadline && exit < 0) {
        AllocateResponse r = rm.allocate(0.1f);
        for (Container c : r.getAllocatedContainers()) {
          if (got != null) {
            rm.releaseAssignedContainer(c.getId());
            continue;
          }
          got = c;
          say("allocated " + c.getId() + " on " + c.getNodeId() + " resource "
              + c.getResource());
          // Output that the selftest reads back through the NodeManager's REST.
          ContainerLaunchContext ctx = ContainerLaunchContext.newInstance(null, null,
              Collections.singletonList("echo htc-selftest-output " + c.getId()
                  + " 1><LOG_DIR>/stdout; sleep " + seconds), null, null, null);
          nm.startContainer(c, ctx);
          say("started sleep " + seconds + " in " + c.getId());
          rm.removeContainerRequest(new ContainerRequest(ask, null, null,
              Priority.newInstance(1), true, label));
        }
        for (ContainerStatus st : r.getCompletedContainersStatuses()) {
          if (got != null && st.getContainerId().equals(got.getId())) {
            exit = st.getExitStatus();
            say("container " + st.getContainerId() + " finished, exit " + exit);
          }
        }
        Thread.sleep(200);
      }
      boolean ok = exit == 0;
      rm.unregisterApplicationMaster(
          ok ? FinalApplicationStatus.SUCCEEDED : FinalApplicationStatus.FAILED,
          ok ? "selftest ok" : "selftest: container exit " + exit, null);
      say("AM unregistered, " + (ok ? "SUCCEEDED" : "FAILED"));
      nm.stop();
      rm.stop();
      System.exit(ok ? 0 : 1);
    }
  }
}
