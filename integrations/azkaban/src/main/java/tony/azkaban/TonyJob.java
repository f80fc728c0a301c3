/* The Azkaban job type `tony`: a job's tony.* properties become a tony.xml in
 * its working dir, TonY's job properties become `tony submit` flags, and the
 * flow's identity becomes the application's tags; Azkaban's ProcessJob runs
 * the native `tony submit`, and a cancel kills the job with `tony kill`. */
package tony.azkaban;

import azkaban.flow.CommonJobProperties;
import azkaban.jobExecutor.ProcessJob;
import azkaban.utils.Props;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import javax.xml.transform.OutputKeys;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerException;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;
import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.Logger;
import org.apache.log4j.spi.LoggingEvent;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

/**
 * Runs one tony job for an Azkaban job of type {@code tony}. Properties it reads:
 * {@code tony.*} (to the job's tony.xml, as {@code --conf_file}); {@code src_dir},
 * {@code executes}, {@code task_params}, {@code python_venv}, {@code python_binary_path},
 * {@code hdfs_classpath} (flags of the same name); {@code worker_env.K=V}
 * ({@code --shell_env K=V}); {@code tony_binary} (the tony to run, a job or plugin
 * property; default {@code tony} on PATH). Azkaban's {@code env.*} properties are
 * the process's environment, as for any process job.
 */
public class TonyJob extends ProcessJob {
    public static final String TONY_CONF_PREFIX = "tony.";
    public static final String TONY_APPLICATION_TAGS = TONY_CONF_PREFIX + "application.tags";
    public static final String WORKER_ENV_PREFIX = "worker_env.";
    public static final String TONY_BINARY = "tony_binary";
    /** TonY's default for src_dir, used when the job names none and its dir has one. */
    public static final String DEFAULT_SRC_DIR = "src";
    /** The flow's identity, as TonY tagged its applications: key:value each. */
    static final String[] TAG_KEYS = {CommonJobProperties.EXEC_ID, CommonJobProperties.FLOW_ID,
        CommonJobProperties.PROJECT_NAME};
    /**
     * The line `tony submit` prints on every backend once the job has its id
     * (src/backend/{local,yarn,slurm}: "tony: job ID submitted..."); a cancel
     * needs that id for `tony kill`.
     */
    static final Pattern SUBMITTED = Pattern.compile("tony: job (\\S+) submitted");
    /** How long a cancel waits for `tony kill` before Azkaban's own kill of the process. */
    static final long KILL_WAIT_S = 120;

    private final File tonyConfFile;
    private volatile String applicationId;

    public TonyJob(String jobId, Props sysProps, Props jobProps, Logger log) {
        super(jobId, sysProps, jobProps, log);
        tonyConfFile = new File(getWorkingDirectory(), "_tony-conf-" + jobId + File.separator + "tony.xml");
    }

    /** The tony.xml this job writes and hands to `tony submit --conf_file`. */
    public File getTonyConfFile() {
        return tonyConfFile;
    }

    /** The application id `tony submit` printed, or null before it did. */
    public String getApplicationId() {
        return applicationId;
    }

    /** The job's tony.* properties, with the flow's tags added to the user's own. */
    public Map<String, String> getTonyConf() {
        Map<String, String> conf = new TreeMap<>();
        for (Map.Entry<String, String> e : getJobProps().getMapByPrefix(TONY_CONF_PREFIX).entrySet())
            conf.put(TONY_CONF_PREFIX + e.getKey(), e.getValue());
        String flowTags = flowTags(getJobProps());
        String userTags = conf.get(TONY_APPLICATION_TAGS);
        if (userTags != null && !userTags.trim().isEmpty())
            flowTags = flowTags.isEmpty() ? userTags : userTags + "," + flowTags;
        if (!flowTags.isEmpty()) conf.put(TONY_APPLICATION_TAGS, flowTags);
        return conf;
    }

    /**
     * "key:value" for each of the flow's keys the job has, comma-joined: the
     * tags TonY's job type gave (via az-hadoop-jobtype-plugin's HadoopJobUtils,
     * which needs Hadoop's client jars on the classpath: not wanted for a
     * native tony, so the same format is made here).
     */
    static String flowTags(Props p) {
        List<String> tags = new ArrayList<>();
        for (String key : TAG_KEYS)
            if (p.containsKey(key)) tags.add(key + ":" + p.get(key));
        return String.join(",", tags);
    }

    private String tonyBinary() {
        return getJobProps().getString(TONY_BINARY, getSysProps().getString(TONY_BINARY, "tony"));
    }

    /** The `tony submit` command line, one word per element. */
    public List<String> getSubmitArgs() {
        Props p = getJobProps();
        List<String> args = new ArrayList<>();
        args.add(tonyBinary());
        args.add("submit");
        args.add("--conf_file");
        args.add(tonyConfFile.getAbsolutePath());
        for (TonyJobArg a : TonyJobArg.values()) {
            String v = p.getString(a.propName, null);
            if (v == null && a == TonyJobArg.SRC_DIR && new File(getWorkingDirectory(), DEFAULT_SRC_DIR).isDirectory())
                v = DEFAULT_SRC_DIR;
            if (v == null) continue;
            args.add(a.flag);
            args.add(v);
        }
        for (Map.Entry<String, String> e : new TreeMap<>(p.getMapByPrefix(WORKER_ENV_PREFIX)).entrySet()) {
            args.add("--shell_env");
            args.add(e.getKey() + "=" + e.getValue());
        }
        return args;
    }

    /**
     * ProcessJob splits each command with partitionCommandLine, which honours
     * single and double quotes: each word goes in the quote it does not contain.
     */
    static String toCommandLine(List<String> words) {
        StringBuilder line = new StringBuilder();
        for (String w : words) {
            if (line.length() > 0) line.append(' ');
            if (w.indexOf('\'') < 0) line.append('\'').append(w).append('\'');
            else if (w.indexOf('"') < 0) line.append('"').append(w).append('"');
            else
                throw new IllegalArgumentException("the value '" + w + "' holds both ' and \", which an Azkaban "
                    + "command line cannot carry; drop one kind of quote from that property");
        }
        return line.toString();
    }

    @Override
    protected List<String> getCommandList() {
        return Collections.singletonList(toCommandLine(getSubmitArgs()));
    }

    void writeTonyConf() throws IOException {
        File dir = tonyConfFile.getParentFile();
        if (!dir.isDirectory() && !dir.mkdirs())
            throw new IOException("cannot create " + dir + " for the job's tony.xml: check that Azkaban's "
                + "working dir is writable");
        try {
            Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().newDocument();
            Element root = doc.createElement("configuration");
            doc.appendChild(root);
            for (Map.Entry<String, String> e : getTonyConf().entrySet()) {
                Element prop = doc.createElement("property");
                Element name = doc.createElement("name");
                name.setTextContent(e.getKey());
                Element value = doc.createElement("value");
                value.setTextContent(e.getValue());
                prop.appendChild(name);
                prop.appendChild(value);
                root.appendChild(prop);
            }
            Transformer t = TransformerFactory.newInstance().newTransformer();
            t.setOutputProperty(OutputKeys.INDENT, "yes");
            t.setOutputProperty(OutputKeys.ENCODING, "UTF-8");
            t.transform(new DOMSource(doc), new StreamResult(tonyConfFile));
        } catch (ParserConfigurationException | TransformerException e) {
            throw new IOException("cannot write " + tonyConfFile + ": " + e.getMessage(), e);
        }
    }

    /** Reads the application id off the process's output, which ProcessJob logs line by line. */
    private final class IdCatcher extends AppenderSkeleton {
        @Override
        protected void append(LoggingEvent event) {
            if (applicationId != null) return;
            String msg = event.getRenderedMessage();
            Matcher m = msg == null ? null : SUBMITTED.matcher(msg);
            if (m != null && m.find()) applicationId = m.group(1);
        }

        @Override
        public void close() {}

        @Override
        public boolean requiresLayout() {
            return false;
        }
    }

    @Override
    public void run() throws Exception {
        resolveProps();
        writeTonyConf();
        info("tony.xml for this job: " + tonyConfFile);
        IdCatcher catcher = new IdCatcher();
        getLog().addAppender(catcher);
        try {
            super.run();
        } finally {
            getLog().removeAppender(catcher);
        }
    }

    /**
     * Kills the job itself with `tony kill`, then lets ProcessJob end `tony
     * submit` (which, signalled before the job had an id, leaves nothing behind).
     */
    @Override
    public void cancel() throws InterruptedException {
        String id = applicationId;
        if (id != null) killApplication(id);
        else info("cancel: tony submit printed no job id yet; ending it stops the submission");
        super.cancel();
    }

    private void killApplication(String id) throws InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(tonyBinary());
        cmd.add("kill");
        cmd.add(id);
        cmd.add("--conf_file");
        cmd.add(tonyConfFile.getAbsolutePath());
        info("cancel: " + String.join(" ", cmd));
        // its output goes to a file, read once it ended: a pipe read here
        // would block past KILL_WAIT_S if tony kill hung
        File out = new File(tonyConfFile.getParentFile(), "tony-kill.log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out)
            .directory(new File(getCwd()));
        pb.environment().putAll(getEnvironmentVariables());
        try {
            Process p = pb.start();
            boolean ended = p.waitFor(KILL_WAIT_S, TimeUnit.SECONDS);
            if (!ended) p.destroyForcibly();
            for (String line : Files.readAllLines(out.toPath(), StandardCharsets.UTF_8)) info(line);
            if (!ended)
                warn("cancel: tony kill " + id + " did not finish in " + KILL_WAIT_S + " s; ending tony submit");
            else if (p.exitValue() != 0)
                warn("cancel: tony kill " + id + " exited " + p.exitValue() + " (see its output above); ending tony submit");
        } catch (IOException e) {
            warn("cancel: cannot run " + cmd.get(0) + " (" + e.getMessage() + "); set " + TONY_BINARY
                + " to the tony binary. Ending tony submit, which kills the job if it still can");
        }
    }
}
