// Stands in for Hadoop's org.apache.hadoop.io.SecureIOUtils in the secure
// hadoop-test-cluster's NodeManager JVMs only (first on their classpath; see
// start_nm in scripts/hadoop-test-cluster). Written for tony; not Hadoop's code.
//
// With Kerberos on, Hadoop's version checks the owner of every file it opens
// through the native libhadoop (fstat), which Maven Central does not carry:
// without it every container log a NodeManager serves over its web UI and
// REST fails with 500. Here the same public methods open the files without
// an owner check, as Hadoop's do with security off. The check could not pass
// here anyway: with the DefaultContainerExecutor container logs belong to the
// user who runs the cluster, not to the application's user.
package org.apache.hadoop.io;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.conf.Configuration;

public class SecureIOUtils {
  /** Thrown by createForWrite when the file is there already. */
  public static class AlreadyExistsException extends IOException {
    private static final long serialVersionUID = 1L;

    public AlreadyExistsException(String msg) {
      super(msg);
    }

    public AlreadyExistsException(Throwable cause) {
      super(cause);
    }
  }

  public static RandomAccessFile openForRandomRead(File f, String mode, String expectedOwner,
      String expectedGroup) throws IOException {
    return new RandomAccessFile(f, mode);
  }

  protected static RandomAccessFile forceSecureOpenForRandomRead(File f, String mode,
      String expectedOwner, String expectedGroup) throws IOException {
    return openForRandomRead(f, mode, expectedOwner, expectedGroup);
  }

  public static FSDataInputStream openFSDataInputStream(File file, String expectedOwner,
      String expectedGroup) throws IOException {
    return FileSystem.getLocal(new Configuration()).getRaw().open(new Path(file.getAbsolutePath()));
  }

  protected static FSDataInputStream forceSecureOpenFSDataInputStream(File file,
      String expectedOwner, String expectedGroup) throws IOException {
    return openFSDataInputStream(file, expectedOwner, expectedGroup);
  }

  public static FileInputStream openForRead(File f, String expectedOwner, String expectedGroup)
      throws IOException {
    return new FileInputStream(f);
  }

  protected static FileInputStream forceSecureOpenForRead(File f, String expectedOwner,
      String expectedGroup) throws IOException {
    return openForRead(f, expectedOwner, expectedGroup);
  }

  /** A new file (never an existing one) with the given octal permissions. */
  public static FileOutputStream createForWrite(File f, int permissions) throws IOException {
    try {
      Files.createFile(f.toPath());
    } catch (FileAlreadyExistsException e) {
      throw new AlreadyExistsException(e);
    }
    Set<PosixFilePermission> perms = EnumSet.noneOf(PosixFilePermission.class);
    PosixFilePermission[] bits = PosixFilePermission.values(); // OWNER_READ .. OTHERS_EXECUTE
    for (int i = 0; i < 9; i++) {
      if ((permissions & (1 << (8 - i))) != 0) {
        perms.add(bits[i]);
      }
    }
    Files.setPosixFilePermissions(f.toPath(), perms);
    return new FileOutputStream(f);
  }
}
