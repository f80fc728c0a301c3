/* The built plugin dir (target/plugin/tony) loaded the way Azkaban's job type
 * loader does: jobtype.class from private.properties, a class loader over the
 * dir's jars whose parent holds only what the executor has (Azkaban's jars and
 * their deps, not this build's classes), and the loader's own check that the
 * class constructs with ("dummy", sysProps, jobProps, logger). */
package tony.azkaban;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.lang.reflect.Array;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

class PluginLayoutIT {
    static File pluginDir() {
        String dir = System.getProperty("tony.plugin.dir");
        assertNotNull(dir, "tony.plugin.dir not set: run through `mvn verify`");
        return new File(dir);
    }

    static File[] jars(File dir) {
        File[] jars = dir.listFiles((d, n) -> n.endsWith(".jar"));
        assertNotNull(jars, dir + " is missing");
        return jars;
    }

    @Test
    void dirHoldsPropertiesAndTheJobTypeJarOnly() throws Exception {
        File dir = pluginDir();
        assertEquals("tony", dir.getName(), "the dir's name is the job type's name");
        assertTrue(new File(dir, "plugin.properties").isFile());
        assertTrue(new File(dir, "private.properties").isFile());
        File[] jars = jars(dir);
        assertEquals(1, jars.length, Arrays.toString(jars));
        try (JarFile jar = new JarFile(jars[0])) {
            assertNotNull(jar.getEntry("tony/azkaban/TonyJob.class"));
        }
        // Azkaban's own jars come from the executor: a copy here would shadow them
        for (String n : dir.list()) assertFalse(n.startsWith("az"), n);
    }

    /** The executor's classpath: every test classpath entry outside this build's target dir. */
    static ClassLoader executorLoader() throws Exception {
        String target = pluginDir().getParentFile().getParentFile().getCanonicalPath() + File.separator;
        List<URL> urls = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            File f = new File(e);
            if (!f.getCanonicalPath().startsWith(target)) urls.add(f.toURI().toURL());
        }
        return new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
    }

    @Test
    void azkabansLoaderFindsAndBuildsTheJobType() throws Exception {
        File dir = pluginDir();
        Properties priv = new Properties();
        try (InputStream in = new FileInputStream(new File(dir, "private.properties"))) {
            priv.load(in);
        }
        String cls = priv.getProperty("jobtype.class");
        assertEquals(TonyJob.class.getName(), cls);

        ClassLoader executor = executorLoader();
        try {
            executor.loadClass(cls);
            throw new AssertionError("the executor's loader must not see the job type itself");
        } catch (ClassNotFoundException expected) {
            // only the plugin's own jar has it
        }
        List<URL> urls = new ArrayList<>();
        for (File j : jars(dir)) urls.add(j.toURI().toURL());
        try (URLClassLoader plugin = new URLClassLoader(urls.toArray(new URL[0]), executor)) {
            Class<?> job = plugin.loadClass(cls);
            assertSame(plugin, job.getClassLoader());
            assertTrue(executor.loadClass("azkaban.jobExecutor.Job").isAssignableFrom(job));

            // what the executor server does at start: an injector for ProcessJob's metrics
            Class<?> sp = executor.loadClass("azkaban.ServiceProvider");
            Object provider = sp.getField("SERVICE_PROVIDER").get(null);
            Class<?> module = executor.loadClass("com.google.inject.Module");
            Object injector = executor.loadClass("com.google.inject.Guice")
                .getMethod("createInjector", Array.newInstance(module, 0).getClass())
                .invoke(null, Array.newInstance(module, 0));
            sp.getMethod("unsetInjector").invoke(provider);
            sp.getMethod("setInjector", executor.loadClass("com.google.inject.Injector")).invoke(provider, injector);

            // the loader's check: a "dummy" job from the plugin's own properties
            Class<?> props = executor.loadClass("azkaban.utils.Props");
            Object sys = props.getConstructor(props, File.class).newInstance(null, new File(dir, "private.properties"));
            Object jobProps = props.getConstructor(props, File.class).newInstance(null, new File(dir, "plugin.properties"));
            Class<?> logger = executor.loadClass("org.apache.log4j.Logger");
            Object log = logger.getMethod("getLogger", String.class).invoke(null, "plugin-check");
            Object j = job.getConstructor(String.class, props, props, logger).newInstance("dummy", sys, jobProps, log);
            Method args = job.getMethod("getSubmitArgs");
            assertEquals("submit", ((List<?>) args.invoke(j)).get(1));
        }
    }
}
