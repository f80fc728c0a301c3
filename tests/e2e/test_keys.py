"""The registry of tony.* keys (src/conf/keys.c) as a user meets it: typo'd
role and application keys and values of the wrong type refused at submit and
--dry-run (exit 2, nothing started), in tony.xml and --conf alike; `tony conf
keys` listing it; docs/keys.md generated from it."""
import json
import re

import pytest

from conftest import REPO

SMALL = ["--conf", "tony.worker.memory=256m"]


def conf_xml(path, **keys):
    props = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in keys.items())
    path.write_text(f"<configuration>{props}</configuration>")
    return path


def nothing_started(tony):
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir())


REFUSED_TYPOS = [
    # (key=value, the key meant)
    ("tony.wroker.memory=1g", "tony.worker.memory"),  # a role misspelled (it has no instances)
    ("tony.worker.instance=2", "tony.worker.instances"),
    ("tony.worker.vcore=2", "tony.worker.vcores"),  # a role key's attribute
    ("tony.chief.memroy=1g", "tony.chief.memory"),
    ("tony.application.timout=60000", "tony.application.timeout"),  # application keys
    ("tony.application.fail-on-worker-failure=true", "tony.application.fail-on-worker-failure-enabled"),
    ("tony.docker.enable=true", "tony.docker.enabled"),
]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("where", ["conf", "xml"])
@pytest.mark.parametrize("typo,meant", REFUSED_TYPOS)
def test_typos_are_refused_with_the_key_meant(tony, tmp_path, dry_run, where, typo, meant):
    key, value = typo.split("=", 1)
    extra = ["--dry-run"] if dry_run else []
    if where == "conf":
        args, source = ["--conf", typo], "--conf"
    else:
        xml = conf_xml(tmp_path / "tony.xml", **{key: value})
        args, source = ["--conf_file", str(xml)], str(xml)
    r = tony.submit(*extra, *args, "--executes", "echo hi", "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 2, r
    assert f"unknown key {key} (from {source}): did you mean {meant}?" in r.err, r
    assert "keys for your own code: name them outside tony.*" in r.err, r
    nothing_started(tony)


BAD_VALUES = [
    # (key, value, type named)
    ("tony.worker.instances", "two", "int"),
    ("tony.worker.memory", "2gb", "size"),
    ("tony.am.memory", "lots", "size"),
    ("tony.docker.enabled", "yes", "bool"),
    ("tony.task.progress-timeout", "ten minutes", "duration"),
    ("tony.application.timeout", "1h", "ms"),
    ("tony.task.max-missed-heartbeats", "4.5", "int"),
]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("where", ["conf", "xml"])
@pytest.mark.parametrize("key,value,type_", BAD_VALUES)
def test_a_value_of_the_wrong_type_is_refused(tony, tmp_path, dry_run, where, key, value, type_):
    extra = ["--dry-run"] if dry_run else []
    if where == "conf":
        args, source = ["--conf", f"{key}={value}"], "--conf"
    else:
        xml = conf_xml(tmp_path / "tony.xml", **{key: value})
        args, source = ["--conf_file", str(xml)], str(xml)
    # the key itself is set only where the test says (--conf would win over tony.xml)
    base = ["--executes", "echo hi"] + (["--conf", "tony.worker.instances=1"] if key != "tony.worker.instances" else [])
    r = tony.submit(*extra, *base, *(SMALL if key != "tony.worker.memory" else []), *args)
    assert r.rc == 2, r
    assert f"{key} must be " in r.err and f"got '{value}' from {source} (its type: {type_};" in r.err, r
    nothing_started(tony)


DO_NOTHING = [
    # (key=value, what the refusal must say) -- keys that would change nothing (issue 34 #3)
    # TonY's older name, read as tony.docker.enabled: then no image is set
    ("tony.application.docker.enabled=true",
     "tony.docker.enabled is true but no image is set: set tony.docker.containers.image"),
    ("tony.docker.enabled=true",
     "tony.docker.enabled is true but no image is set: set tony.docker.containers.image"),
    # a group of tony's own keys is no job type (it made roles named am, docker, application)
    ("tony.am.instances=2", "tony.am.instances (from {src}): am is a group of tony's own keys (tony.am.*), not a job type"),
    ("tony.application.instances=1",
     "tony.application.instances (from {src}): application is a group of tony's own keys (tony.application.*), not a "
     "job type; name the job type otherwise (did you mean tony.application.name?)"),
    ("tony.docker.memory=2g", "docker is a group of tony's own keys (tony.docker.*), not a job type"),
    ("tony.worker.memory=0", "tony.worker.memory must be more than 0 (the memory of each worker task, e.g. 2g), got '0'"),
    ("tony.am.memory=0", "tony.am.memory must be more than 0"),
]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("setting,said", DO_NOTHING)
def test_keys_that_would_do_nothing_are_refused(tony, tmp_path, dry_run, setting, said):
    extra = ["--dry-run"] if dry_run else []
    r = tony.submit(*extra, "--executes", "echo hi", "--conf", "tony.worker.instances=1", "--conf", setting)
    assert r.rc == 2, r
    assert said.format(src="--conf") in r.err, r
    nothing_started(tony)


def test_tonys_older_names_are_read_as_the_keys_tony_reads(tony):
    """A TonY config with TonY's older names runs as it did under TonY: each
    is taken as the key tony reads, with a note naming both."""
    r = tony.submit("--dry-run", "--executes", "echo hi", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.application.docker.enabled=true", "--conf", "tony.application.docker.image=img:1",
                    "--conf", "tony.task.heartbeat-interval=700")
    # both docker keys taken: the image is looked for (and not in this machine's store)
    assert r.rc == 2 and "image img:1 (tony.docker.worker.image or tony.docker.containers.image" in r.err, r
    for old, now, value in [("tony.application.docker.enabled", "tony.docker.enabled", "true"),
                            ("tony.application.docker.image", "tony.docker.containers.image", "img:1"),
                            ("tony.task.heartbeat-interval", "tony.task.heartbeat-interval-ms", "700")]:
        assert f"tony: note: {old} is TonY's older name of {now}: read as {now}={value}" in r.err, r
    r = tony.submit("--dry-run", "--executes", "echo hi", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.task.heartbeat-interval=700")
    assert r.rc == 0 and "heartbeat:  every 700 ms" in r.out, r


def test_an_older_name_beside_the_key_tony_reads_passes(tony):
    """A config written for both TonY and tony (the older name and the key
    tony reads): nothing to refuse; an older name's false asks for nothing."""
    r = tony.submit("--dry-run", "--executes", "echo hi", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.application.docker.enabled=false", "--conf", "tony.task.heartbeat-interval=500",
                    "--conf", "tony.task.heartbeat-interval-ms=500")
    assert r.rc == 0, r


def test_keys_for_the_users_own_code_pass(tony):
    """The escape hatch: keys outside tony.* are the user's, never checked."""
    r = tony.submit("--executes", "echo hi", "--conf", "tony.worker.instances=1", "--conf", "myjob.lr=fast",
                    "--conf", "tony.worker.memory=512M", "--conf", "tony.docker.enabled=FALSE", check_rc=0)
    assert "myjob.lr" not in r.err, r
    assert r.log("worker", 0).strip() == "hi"


def test_conf_keys_lists_the_registry(tony):
    r = tony.run("conf", "keys", "--json", check_rc=0)
    keys = {k["name"]: k for k in json.loads(r.out)}
    inst = keys["tony.<role>.instances"]
    assert inst["type"] == "int" and inst["backends"] == ["local", "yarn", "slurm"] and inst["implemented"], inst
    assert keys["tony.local.vcores"]["backends"] == ["local"]
    assert keys["tony.yarn.queue"]["default"] == "default" and keys["tony.yarn.queue"]["backends"] == ["yarn"]
    for name in ("tony.docker.enabled", "tony.docker.containers.image", "tony.docker.<role>.image",
                 "tony.docker.containers.mount", "tony.docker.am.image", "tony.docker.runtime", "tony.docker.network"):
        assert name in keys, name
    # TonY's keys tony does not act on, with why
    jvm = keys["tony.task.executor.jvm.opts"]
    assert not jvm["implemented"] and jvm["why"], jvm
    for k in keys.values():
        assert set(k) == {"name", "type", "default", "doc", "backends", "implemented", "why"}, k
        assert k["doc"] and k["backends"], k
    text = tony.run("conf", "keys", check_rc=0).out
    assert "tony.<role>.instances" in text and "TonY's keys tony accepts and does not act on" in text
    assert "tony conf keys" in tony.run("help", "conf", check_rc=0).out
    assert tony.run("conf", "nope").rc == 2


def test_docs_keys_md_is_generated_from_the_registry(tony):
    """docs/keys.md is `tony conf keys --markdown`: regenerate it (that
    command > docs/keys.md) when a key changes."""
    r = tony.run("conf", "keys", "--markdown", check_rc=0)
    assert "| `tony.<role>.instances` | int |" in r.out
    committed = (REPO / "docs" / "keys.md").read_text()
    assert committed == r.out, "docs/keys.md is stale: run `build/bin/tony conf keys --markdown > docs/keys.md`"


def test_code_names_keys_through_the_registry(tony):
    """A key's spelling exists once, in src/conf/keys.h: a string literal that
    is a whole registered key (or a tony.%s.X role format) elsewhere in src/
    is a second spelling that can drift. src/common/ sits below conf/ in the
    layer order (scripts/check-layers), so it cannot include keys.h."""
    registry = json.loads(tony.run("conf", "keys", "--json", check_rc=0).out)

    def pattern(name):
        r = re.escape(name).replace(re.escape("<role>"), "([a-z]+|%s)")
        r = re.sub(re.escape("<") + "[a-z]+" + re.escape(">") + "$", ".+", r)
        return re.compile("^" + re.sub(re.escape("<") + "[a-z]+" + re.escape(">"), "[^.]+", r) + "$")

    patterns = [pattern(k["name"]) for k in registry]
    found = []
    for path in sorted((REPO / "src").rglob("*.[ch]")):
        rel = path.relative_to(REPO).as_posix()
        if rel in ("src/conf/keys.h", "src/conf/keys.c") or rel.startswith("src/common/"):
            continue
        code = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(), flags=re.S)
        for lit in re.findall(r'"(tony\.[^"\s]*)"', code):
            if any(p.match(lit) for p in patterns):
                found.append(f"{rel}: \"{lit}\"")
    assert not found, "use the TONY_KEY_* names of src/conf/keys.h:\n" + "\n".join(found)
