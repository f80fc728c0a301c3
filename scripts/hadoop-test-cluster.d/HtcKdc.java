// The Kerberos side of a secure hadoop-test-cluster (start --secure): a KDC
// (Hadoop's MiniKdc, an Apache Kerby KDC, TCP only) with the cluster's
// principals and their keytabs, plus the TLS key and trust stores the
// HTTPS_ONLY HDFS web servers need. Runs in a small JVM of its own, started by
// scripts/hadoop-test-cluster before the Hadoop JVMs (which log in from the
// keytabs it writes), and serves until killed.
//
// System properties (all set by the script):
//   htc.dir        state directory: writes DIR/krb5.conf, DIR/keytabs/*.keytab,
//                  DIR/ssl/* (kept across starts), KDC state under DIR/data/kdc
//   htc.ready      file to write "KEY=value" lines to once the KDC serves
//   htc.realm      realm (EXAMPLE.COM)
//   htc.kdc.port   KDC port (0 = a free one)
//   htc.user       the test user's principal (no realm), keytab DIR/keytabs/<user>.keytab
//   htc.other.user a second user's principal (no realm), keytab DIR/keytabs/<other>.keytab
//   htc.ticket.lifetime.ms  longest ticket the KDC issues
//
// Principals (realm omitted), one keytab each under DIR/keytabs:
//   hdfs/localhost  NameNode and DataNode (one JVM: one Kerberos login)
//   rm/localhost    ResourceManager (and the NodeManagers of its JVM)
//   nm/localhost    the NodeManagers in JVMs of their own
//   HTTP/localhost  SPNEGO on every web server (HTTP.keytab)
//   <user>          the test user
//   <other>         a second user, to try what others may do to the test user's jobs
import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.Date;
import java.util.Locale;
import java.util.Properties;

import org.apache.hadoop.minikdc.MiniKdc;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

public final class HtcKdc {
  /** Password of the generated key and trust stores (test material only). */
  static final String STORE_PASSWORD = "htc-secret";

  private static String prop(String k, String d) {
    String v = System.getProperty(k);
    return v == null ? d : v;
  }

  private static void say(String msg) {
    System.out.println("hadoop-test-cluster: " + msg);
    System.out.flush();
  }

  public static void main(String[] args) {
    try {
      run();
    } catch (Throwable t) {
      System.out.flush();
      System.err.println("hadoop-test-cluster: KDC FAILED: " + t);
      t.printStackTrace();
      System.err.flush();
      Runtime.getRuntime().halt(1);
    }
  }

  private static void run() throws Exception {
    long t0 = System.nanoTime();
    File dir = new File(prop("htc.dir", "."));
    File ready = new File(prop("htc.ready", new File(dir, "run/kdc.env").getPath()));
    String realm = prop("htc.realm", "EXAMPLE.COM");
    String user = prop("htc.user", "tony");
    String other = prop("htc.other.user", "tonyother");
    int dot = realm.indexOf('.');
    if (dot <= 0 || !realm.equals(realm.toUpperCase(Locale.ROOT))) {
      // MiniKdc builds its realm as ORG.DOMAIN.
      throw new IllegalArgumentException("realm must be upper-case NAME.DOMAIN, got " + realm);
    }

    File ssl = new File(dir, "ssl");
    if (!new File(ssl, "ca.pem").isFile()) {
      makeTlsMaterial(ssl);
      say("TLS key and trust stores written to " + ssl);
    }

    Properties kconf = MiniKdc.createConf();
    kconf.setProperty(MiniKdc.ORG_NAME, realm.substring(0, dot));
    kconf.setProperty(MiniKdc.ORG_DOMAIN, realm.substring(dot + 1));
    kconf.setProperty(MiniKdc.KDC_BIND_ADDRESS, "localhost");
    kconf.setProperty(MiniKdc.KDC_PORT, prop("htc.kdc.port", "0"));
    kconf.setProperty(MiniKdc.MAX_TICKET_LIFETIME, prop("htc.ticket.lifetime.ms", "86400000"));
    File work = new File(dir, "data/kdc");
    work.mkdirs();
    MiniKdc kdc = new MiniKdc(kconf, work);
    kdc.start();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      say("KDC stopping");
      Runtime.getRuntime().halt(0);
    }, "htc-kdc-stop"));

    File keytabs = new File(dir, "keytabs");
    keytabs.mkdirs();
    String[][] principals = {
        {"hdfs", "hdfs/localhost"},
        {"rm", "rm/localhost"},
        {"nm", "nm/localhost"},
        {"HTTP", "HTTP/localhost"},
        {user, user},
        {other, other},
    };
    for (String[] p : principals) {
      File kt = new File(keytabs, p[0] + ".keytab");
      File tmp = new File(keytabs, p[0] + ".keytab.tmp");
      kdc.createPrincipal(tmp, p[1]);
      Files.setPosixFilePermissions(tmp.toPath(), PosixFilePermissions.fromString("rw-------"));
      Files.move(tmp.toPath(), kt.toPath(), StandardCopyOption.ATOMIC_MOVE,
          StandardCopyOption.REPLACE_EXISTING);
    }
    writeAtomically(new File(dir, "krb5.conf"), krb5conf(realm, kdc.getPort()));
    say("KDC for " + realm + " on localhost:" + kdc.getPort() + " (TCP), "
        + principals.length + " principals, keytabs in " + keytabs + " ("
        + (System.nanoTime() - t0) / 1000000 + " ms)");
    writeAtomically(ready, "HTC_KDC_PID=" + ProcessHandle.current().pid()
        + "\nHTC_KDC_PORT=" + kdc.getPort() + "\nHTC_REALM=" + realm + "\n");
    Object forever = new Object();
    synchronized (forever) {
      while (true) {
        forever.wait();
      }
    }
  }

  // For MIT Kerberos (kinit, curl's GSS-API) and Java alike. Kerby's KDC
  // speaks TCP only, so udp_preference_limit = 1; no DNS anywhere: every
  // service is localhost.
  static String krb5conf(String realm, int port) {
    return "# written by tony scripts/hadoop-test-cluster (secure); KDC: Hadoop's MiniKdc\n"
        + "[libdefaults]\n"
        + "  default_realm = " + realm + "\n"
        + "  dns_lookup_kdc = false\n"
        + "  dns_lookup_realm = false\n"
        + "  dns_canonicalize_hostname = false\n"
        + "  rdns = false\n"
        + "  udp_preference_limit = 1\n"
        + "  forwardable = true\n"
        + "  ticket_lifetime = 24h\n"
        + "  renew_lifetime = 7d\n"
        + "\n"
        + "[realms]\n"
        + "  " + realm + " = {\n"
        + "    kdc = localhost:" + port + "\n"
        + "  }\n"
        + "\n"
        + "[domain_realm]\n"
        + "  localhost = " + realm + "\n"
        + "  .localhost = " + realm + "\n";
  }

  // A self-signed certificate for localhost (DNS:localhost, IP:127.0.0.1)
  // in a PKCS#12 key store, the same certificate in a trust store, and as
  // PEM for curl and libcurl (CURLOPT_CAINFO).
  static void makeTlsMaterial(File ssl) throws Exception {
    ssl.mkdirs();
    KeyPairGenerator gen = KeyPairGenerator.getInstance("RSA");
    gen.initialize(2048, new SecureRandom());
    KeyPair kp = gen.generateKeyPair();
    long now = System.currentTimeMillis();
    X500Name name = new X500Name("CN=localhost, O=tony hadoop-test-cluster");
    X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(name,
        BigInteger.valueOf(now), new Date(now - 86400000L), new Date(now + 3650L * 86400000L),
        name, kp.getPublic());
    b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
        new GeneralName(GeneralName.dNSName, "localhost"),
        new GeneralName(GeneralName.iPAddress, "127.0.0.1")}));
    // Its own CA: what OpenSSL wants of a certificate in CAfile.
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    X509Certificate cert = new JcaX509CertificateConverter().getCertificate(
        b.build(new JcaContentSignerBuilder("SHA256withRSA").build(kp.getPrivate())));
    char[] pw = STORE_PASSWORD.toCharArray();
    KeyStore ks = KeyStore.getInstance("PKCS12");
    ks.load(null, null);
    ks.setKeyEntry("localhost", kp.getPrivate(), pw, new X509Certificate[] {cert});
    try (FileOutputStream out = new FileOutputStream(new File(ssl, "keystore.p12"))) {
      ks.store(out, pw);
    }
    KeyStore ts = KeyStore.getInstance("PKCS12");
    ts.load(null, null);
    ts.setCertificateEntry("localhost", cert);
    try (FileOutputStream out = new FileOutputStream(new File(ssl, "truststore.p12"))) {
      ts.store(out, pw);
    }
    String pem = "-----BEGIN CERTIFICATE-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
            .encodeToString(cert.getEncoded())
        + "\n-----END CERTIFICATE-----\n";
    writeAtomically(new File(ssl, "ca.pem"), pem);
  }

  static void writeAtomically(File f, String text) throws Exception {
    File tmp = new File(f.getPath() + ".tmp");
    try (Writer w = new OutputStreamWriter(new FileOutputStream(tmp), StandardCharsets.UTF_8)) {
      w.write(text);
    }
    Files.move(tmp.toPath(), f.toPath(), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }
}
