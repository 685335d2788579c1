"""Run one of the collection's modules in a separate process, exactly as Ansible's module wrapper would.

`python -m testenv.module_runner MODULE ARGS.json [--gate DIR]` imports the real module
file; with --gate it then creates DIR/ready-<pid> and waits for DIR/go (so racing processes hit the
API server within a millisecond of each other, after their imports), then runs its main() with ARGS.json
({"ANSIBLE_MODULE_ARGS": {...}}) and prints the module's JSON result. `run_module()` is the test-side
helper, ~5x cheaper than a whole ansible-playbook run; `Zygote` forks racers from one warm process,
which makes the 50-round lock race take seconds.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from testenv import COLLECTIONS_ROOT, REPO_ROOT

MODULE_PACKAGE = "ansible_collections.hypershift.private_capi.plugins.modules."


class ModuleResult(dict):
    """The module's JSON result plus the process' rc and stderr."""

    @property
    def failed(self):
        return bool(self.get("failed")) or self.rc != 0


def module_args_file(args, check_mode=False, diff=False, directory=None):
    payload = dict(args)
    payload["_ansible_check_mode"] = check_mode
    payload["_ansible_diff"] = diff
    handle, path = tempfile.mkstemp(prefix="module-args-", suffix=".json", dir=directory)
    with os.fdopen(handle, "w") as stream:
        json.dump({"ANSIBLE_MODULE_ARGS": payload}, stream)
    return path


def runner_command(module, args_path, gate=None):
    command = [sys.executable, "-m", "testenv.module_runner", module, args_path]
    if gate is not None:
        command += ["--gate", gate]
    return command


def runner_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([COLLECTIONS_ROOT, REPO_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def parse_output(completed_stdout, rc, stderr):
    text = completed_stdout.strip()
    start = text.find("{")
    try:
        result = ModuleResult(json.loads(text[start:]) if start >= 0 else {})
    except ValueError:
        result = ModuleResult({"failed": True, "msg": "unparsable module output: %r" % text[:2000]})
    result.rc = rc
    result.stderr = stderr
    return result


def run_module(module, args, check_mode=False, diff=False, timeout=120):
    """Run hypershift.private_capi.<module> with args in a new process; returns its ModuleResult."""
    path = module_args_file(args, check_mode=check_mode, diff=diff)
    try:
        completed = subprocess.run(runner_command(module, path), cwd=REPO_ROOT, env=runner_env(), capture_output=True,
                                   text=True, timeout=timeout, check=False)
    finally:
        os.unlink(path)
    return parse_output(completed.stdout, completed.returncode, completed.stderr)


def race(module, args_list, timeout=120):
    """Run one process per args, released together once all have imported; returns their ModuleResults."""
    gate = tempfile.mkdtemp(prefix="module-race-")
    paths = [module_args_file(args) for args in args_list]
    processes = [subprocess.Popen(runner_command(module, path, gate), cwd=REPO_ROOT, env=runner_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for path in paths]
    deadline = time.monotonic() + timeout
    while len([name for name in os.listdir(gate) if name.startswith("ready-")]) < len(processes):
        if time.monotonic() > deadline or any(process.poll() is not None for process in processes):
            break  # a racer died before the gate: collect() reports its output
        time.sleep(0.005)
    open(os.path.join(gate, "go"), "w").close()
    try:
        results = []
        for process, path in zip(processes, paths):
            stdout, stderr = process.communicate(timeout=timeout)
            results.append(parse_output(stdout, process.returncode, stderr))
        return results
    finally:
        for path in paths:
            os.unlink(path)
        for name in os.listdir(gate):
            os.unlink(os.path.join(gate, name))
        os.rmdir(gate)


class Zygote(object):
    """A process that imports Ansible, kubernetes and the module once, then forks one child per racer.

    Each child is a separate process running the real module main() with its own args file, stdout
    and pid (so its default lease holder differs); forking after the imports makes a race round cost
    milliseconds instead of a second of interpreter start-up.
    """

    def __init__(self, module):
        self.process = subprocess.Popen([sys.executable, "-m", "testenv.module_runner", "--zygote", module],
                                        cwd=REPO_ROOT, env=runner_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        ready = self.process.stdout.readline()
        if ready.strip() != "ready":
            raise RuntimeError("module zygote did not start: %r" % ready)

    def race(self, args_list):
        paths = [module_args_file(args) for args in args_list]
        try:
            self.process.stdin.write(json.dumps(paths) + "\n")
            self.process.stdin.flush()
            outcomes = json.loads(self.process.stdout.readline())
        finally:
            for path in paths:
                os.unlink(path)
        return [parse_output(outcome["stdout"], outcome["rc"], outcome["stderr"]) for outcome in outcomes]

    def close(self):
        self.process.stdin.close()
        return self.process.wait(30)


def _zygote(module):
    import importlib

    loaded = importlib.import_module(MODULE_PACKAGE + module)
    import kubernetes.dynamic  # noqa: F401
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client  # noqa: F401
    print("ready", flush=True)
    for line in sys.stdin:
        children = []
        for args_path in json.loads(line):
            out_path, err_path = args_path + ".out", args_path + ".err"
            pid = os.fork()
            if pid == 0:  # the racer: a separate process running the real module
                out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                err_fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(out_fd, 1)
                os.dup2(err_fd, 2)
                sys.argv = [loaded.__file__, args_path]
                code = 0
                try:
                    loaded.main()
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:  # report, never return into the zygote's loop
                    import traceback
                    traceback.print_exc()
                    code = 70
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            children.append((pid, out_path, err_path))
        outcomes = []
        for pid, out_path, err_path in children:
            _pid, status = os.waitpid(pid, 0)
            with open(out_path) as out, open(err_path) as err:
                outcomes.append({"rc": os.waitstatus_to_exitcode(status), "stdout": out.read(), "stderr": err.read()})
            os.unlink(out_path)
            os.unlink(err_path)
        print(json.dumps(outcomes), flush=True)
    return 0


def main(argv):
    if argv[0] == "--zygote":
        return _zygote(argv[1])
    module, args_path = argv[0], argv[1]
    gate = argv[3] if len(argv) > 3 and argv[2] == "--gate" else None
    import importlib

    loaded = importlib.import_module(MODULE_PACKAGE + module)
    import kubernetes.dynamic  # noqa: F401  (imported before the gate, so racers are not skewed by it)
    if gate is not None:
        open(os.path.join(gate, "ready-%d" % os.getpid()), "w").close()
        go = os.path.join(gate, "go")
        deadline = time.monotonic() + 120
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.001)
    sys.argv = [loaded.__file__, args_path]
    try:
        loaded.main()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
