/* The job properties of TonY's Azkaban job type that become `tony submit`
 * flags: the property name is the flag's name (TonY's contract, kept so that
 * a TonY user's .job files work unchanged). */
package tony.azkaban;

/** A job property that `tony submit` takes as the flag of the same name. */
public enum TonyJobArg {
    SRC_DIR("src_dir"),
    EXECUTES("executes"),
    TASK_PARAMS("task_params"),
    PYTHON_VENV("python_venv"),
    PYTHON_BINARY_PATH("python_binary_path"),
    HDFS_CLASSPATH("hdfs_classpath");

    /** The name in the .job file. */
    public final String propName;
    /** The `tony submit` flag. */
    public final String flag;

    TonyJobArg(String propName) {
        this.propName = propName;
        this.flag = "--" + propName;
    }
}
