/* TonyJob with real Azkaban Props and Azkaban's own ProcessJob: properties to
 * tony.xml, flags and tags, and real `tony submit` runs of the local backend
 * (success, failure, cancel). Only Azkaban's server is missing: the test calls
 * run() and cancel() as its executor would. */
package tony.azkaban;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import azkaban.ServiceProvider;
import azkaban.flow.CommonJobProperties;
import azkaban.jobExecutor.ProcessJob;
import azkaban.utils.Props;
import com.google.inject.Guice;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.xml.parsers.DocumentBuilderFactory;
import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.Logger;
import org.apache.log4j.spi.LoggingEvent;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class TonyJobTest {
    @TempDir Path tmp;

    /** What Azkaban's executor server sets up before it builds any job. */
    @BeforeAll
    static void injector() {
        ServiceProvider.SERVICE_PROVIDER.unsetInjector();
        ServiceProvider.SERVICE_PROVIDER.setInjector(Guice.createInjector());
    }

    static String tonyBin() {
        String env = System.getenv("TONY_BIN");
        String bin = env != null && !env.isEmpty() ? env : System.getProperty("tony.bin");
        if (bin == null || !new File(bin).canExecute())
            fail("no tony binary at " + bin + ": run `make build` or set TONY_BIN");
        return new File(bin).getAbsolutePath();
    }

    /** Collects what the job logs, as Azkaban's job log would. */
    static final class Lines extends AppenderSkeleton {
        final List<String> lines = Collections.synchronizedList(new ArrayList<>());

        @Override
        protected void append(LoggingEvent e) {
            lines.add(String.valueOf(e.getRenderedMessage()));
        }

        @Override
        public void close() {}

        @Override
        public boolean requiresLayout() {
            return false;
        }

        String all() {
            synchronized (lines) {
                return String.join("\n", lines);
            }
        }
    }

    /** sysProps as a plugin's private.properties would give them, minus Azkaban's setuid helper. */
    Props sysProps() {
        Props sys = new Props();
        sys.put(ProcessJob.EXECUTE_AS_USER, "false");
        sys.put("memCheck.enabled", "false");
        sys.put(ProcessJob.AZKABAN_MEMORY_CHECK, "false");
        return sys;
    }

    Props jobProps(Path workDir) {
        Props p = new Props();
        p.put("type", "tony");
        p.put("working.dir", workDir.toString());
        p.put(CommonJobProperties.EXEC_ID, "4711");
        p.put(CommonJobProperties.FLOW_ID, "train_flow");
        p.put(CommonJobProperties.PROJECT_NAME, "mnist");
        // the flow's submitter, which Azkaban's executor puts in every job's props
        p.put(CommonJobProperties.SUBMIT_USER, System.getProperty("user.name"));
        return p;
    }

    static Map<String, String> readXml(File f) throws Exception {
        Map<String, String> m = new LinkedHashMap<>();
        NodeList props = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(f)
            .getDocumentElement().getElementsByTagName("property");
        for (int i = 0; i < props.getLength(); i++) {
            Element e = (Element) props.item(i);
            m.put(e.getElementsByTagName("name").item(0).getTextContent(),
                e.getElementsByTagName("value").item(0).getTextContent());
        }
        return m;
    }

    @Test
    void propertiesBecomeTonyXmlFlagsAndTags() throws Exception {
        Path work = Files.createDirectories(tmp.resolve("work"));
        Files.createDirectories(work.resolve("src"));
        Props p = jobProps(work);
        p.put("tony.worker.instances", "2");
        p.put("tony.worker.memory", "2g & <more>");
        p.put("tony.application.tags", "team:ml");
        p.put("executes", "python train.py");
        p.put("task_params", "--steps 10 --note it's fine");
        p.put("python_venv", "venv.zip");
        p.put("python_binary_path", "venv/bin/python");
        p.put("worker_env.GREETING", "hello world");
        p.put("worker_env.MODE", "fast");
        p.put("not_tony.key", "x");
        p.put("tony_binary", "/opt/tony/bin/tony");
        TonyJob job = new TonyJob("train", sysProps(), p, Logger.getLogger("t1"));

        job.writeTonyConf();
        File xml = job.getTonyConfFile();
        assertEquals(new File(work.toFile(), "_tony-conf-train/tony.xml"), xml);
        Map<String, String> conf = readXml(xml);
        assertEquals("2", conf.get("tony.worker.instances"));
        assertEquals("2g & <more>", conf.get("tony.worker.memory"));
        assertEquals("team:ml,azkaban.flow.execid:4711,azkaban.flow.flowid:train_flow,azkaban.flow.projectname:mnist",
            conf.get("tony.application.tags"));
        assertEquals(3, conf.size(), conf.toString());

        List<String> expect = Arrays.asList("/opt/tony/bin/tony", "submit", "--conf_file", xml.getAbsolutePath(),
            "--src_dir", "src", "--executes", "python train.py", "--task_params", "--steps 10 --note it's fine",
            "--python_venv", "venv.zip", "--python_binary_path", "venv/bin/python",
            "--shell_env", "GREETING=hello world", "--shell_env", "MODE=fast");
        assertEquals(expect, job.getSubmitArgs());
        // the one command ProcessJob runs splits back into the same words
        assertEquals(expect, Arrays.asList(ProcessJob.partitionCommandLine(job.getCommandList().get(0))));
    }

    @Test
    void noSrcDirWithoutOneAndNoTagsWithoutAFlow() throws Exception {
        Path work = Files.createDirectories(tmp.resolve("bare"));
        Props p = new Props();
        p.put("working.dir", work.toString());
        p.put("executes", "echo \"it's\"");
        TonyJob job = new TonyJob("bare", sysProps(), p, Logger.getLogger("t2"));
        assertEquals(Collections.emptyMap(), job.getTonyConf());
        assertEquals(Arrays.asList("tony", "submit", "--conf_file", job.getTonyConfFile().getAbsolutePath(),
            "--executes", "echo \"it's\""), job.getSubmitArgs());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, job::getCommandList);
        assertTrue(e.getMessage().contains("both ' and \""), e.getMessage());
    }

    TonyJob realJob(String id, Path work, Props p, Lines log) throws IOException {
        Files.createDirectories(work);
        p.put(CommonJobProperties.JOB_ID, id);
        p.put("tony_binary", tonyBin());
        p.put("env.TONY_HOME", tmp.resolve("tony-home").toString());
        p.put("tony.worker.memory", "256m");
        Logger logger = Logger.getLogger("tony-azkaban-" + id);
        logger.addAppender(log);
        return new TonyJob(id, sysProps(), p, logger);
    }

    @Test
    void runsARealJobThatReadsItsTonyXmlAndEnv() throws Exception {
        Path work = tmp.resolve("ok");
        Path out = tmp.resolve("out.txt");
        Props p = jobProps(work);
        p.put("tony.worker.instances", "2");
        p.put("executes", "echo \"$GREETING\" >> " + out);
        p.put("worker_env.GREETING", "hello from azkaban");
        Lines log = new Lines();
        TonyJob job = realJob("ok", work, p, log);
        job.run();
        assertNotNull(job.getApplicationId(), log.all());
        // two workers: tony.worker.instances came from the tony.xml
        assertEquals(Arrays.asList("hello from azkaban", "hello from azkaban"),
            Files.readAllLines(out, StandardCharsets.UTF_8), log.all());
        assertTrue(log.all().contains("SUCCEEDED"), log.all());
    }

    @Test
    void aFailedJobFailsTheAzkabanJob() throws Exception {
        Path work = tmp.resolve("bad");
        Props p = jobProps(work);
        p.put("tony.worker.instances", "1");
        p.put("executes", "exit 3");
        Lines log = new Lines();
        TonyJob job = realJob("bad", work, p, log);
        assertThrows(Exception.class, job::run);
        assertTrue(log.all().contains("FAILED"), log.all());
    }

    String status(String id, Path work) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(tonyBin(), "status", id, "--json").directory(work.toFile())
            .redirectErrorStream(true);
        pb.environment().put("TONY_HOME", tmp.resolve("tony-home").toString());
        Process p = pb.start();
        p.getOutputStream().close();
        String s = new String(readAll(p), StandardCharsets.UTF_8);
        p.waitFor(30, TimeUnit.SECONDS);
        return s;
    }

    /** Pids whose command line is exactly cmdline (NUL-separated words). */
    static List<String> processesRunning(String cmdline) {
        List<String> pids = new ArrayList<>();
        File[] procs = new File("/proc").listFiles((d, n) -> n.matches("[0-9]+"));
        for (File pr : procs == null ? new File[0] : procs) {
            try {
                if (new String(Files.readAllBytes(pr.toPath().resolve("cmdline")), StandardCharsets.UTF_8).equals(cmdline))
                    pids.add(pr.getName());
            } catch (IOException gone) {
                // exited meanwhile
            }
        }
        return pids;
    }

    static byte[] readAll(Process p) throws IOException {
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        for (int n; (n = p.getInputStream().read(buf)) > 0;) b.write(buf, 0, n);
        return b.toByteArray();
    }

    @Test
    void cancelKillsTheJobWithTonyKill() throws Exception {
        Path work = tmp.resolve("cancel");
        Path marker = tmp.resolve("started");
        Props p = jobProps(work);
        p.put("tony.worker.instances", "1");
        // a length of sleep no other process here has, to find it after the cancel
        long secs = 2000 + new java.util.Random().nextInt(5000);
        p.put("executes", "touch " + marker + "; exec sleep " + secs);
        Lines log = new Lines();
        TonyJob job = realJob("cancel", work, p, log);
        AtomicReference<Throwable> ended = new AtomicReference<>();
        Thread runner = new Thread(() -> {
            try {
                job.run();
                ended.set(new AssertionError("run() returned normally"));
            } catch (Throwable t) {
                ended.set(t);
            }
        });
        runner.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!(job.getApplicationId() != null && Files.exists(marker))) {
            if (System.nanoTime() > deadline || !runner.isAlive()) fail("the job never started:\n" + log.all());
            Thread.sleep(200);
        }
        String id = job.getApplicationId();
        job.cancel();
        runner.join(TimeUnit.SECONDS.toMillis(60));
        assertTrue(!runner.isAlive(), "run() still running after cancel:\n" + log.all());
        assertNotNull(ended.get());
        assertTrue(log.all().contains("cancel: " + tonyBin() + " kill " + id), log.all());
        String st = status(id, work);
        assertTrue(st.matches("(?s).*\"final_status\"\\s*:\\s*\"KILLED\".*"), st);
        assertEquals(Collections.emptyList(), processesRunning("sleep\0" + secs + "\0"), "the task outlived the cancel");
    }
}
