# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of hypershift.private_capi.controller_files (documented in plugins/modules/controller_files.py).

Writes files on the controller inside the worker process: no module process is started, which is what makes it
cheaper than ansible.builtin.copy with delegate_to localhost (a new Python process per file).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
import tempfile

from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

DEFAULT_MODE = "0644"
DIRECTORY_MODE = 0o755


class FileSpecError(Exception):
    """A files entry that cannot be written as given."""


def file_specs(files, directories=()):
    """Validated (path, bytes content, int mode) of each entry; raises FileSpecError naming the entry. files may be
    empty (or None) only when directories are given."""
    if files is None and directories:
        files = []
    if not isinstance(files, list) or not (files or directories):
        raise FileSpecError("files must be a non-empty list of {path, content, mode} (or give directories), got %r"
                            % (files,))
    specs = []
    for index, entry in enumerate(files):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) or not entry.get("path"):
            raise FileSpecError("files[%d] must have a path (a non-empty string), got %r" % (index, entry))
        unknown = sorted(set(entry) - {"path", "content", "mode"})
        if unknown:
            raise FileSpecError("files[%d] (%s) has unknown keys %s; expected path, content, mode"
                                % (index, entry["path"], ", ".join(unknown)))
        path = entry["path"]
        if not os.path.isabs(path):
            raise FileSpecError("files[%d] path %r is relative; give an absolute path on the controller" % (index, path))
        mode_text = str(entry.get("mode", DEFAULT_MODE))
        try:
            mode = int(mode_text, 8)
        except ValueError:
            raise FileSpecError("files[%d] (%s) mode %r is not an octal mode such as '0644'" % (index, path, mode_text))
        content = entry.get("content", "")
        if not isinstance(content, str):
            raise FileSpecError("files[%d] (%s) content must be a string, got %s" % (index, path, type(content).__name__))
        specs.append((path, to_bytes(content), mode))
    return specs


def current(path):
    """(bytes, mode) of the file at path, or (None, None) when it does not exist."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        return data, stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None, None


def write_atomically(path, data, mode):
    """Write to a temporary file beside path, set its mode, then rename it over path (readers never see half)."""
    directory = os.path.dirname(path)
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def directory_list(directories):
    """Validated absolute directory paths of the directories option ([] when not given); raises FileSpecError."""
    if directories is None:
        return []
    if not isinstance(directories, list):
        raise FileSpecError("directories must be a list of absolute paths, got %r" % (directories,))
    expanded = [os.path.expanduser(directory) if isinstance(directory, str) else directory for directory in directories]
    for index, directory in enumerate(expanded):
        if not isinstance(directory, str) or not os.path.isabs(directory):
            raise FileSpecError("directories[%d] %r is not an absolute path on the controller" % (index, directory))
    return [os.path.normpath(directory) for directory in expanded]


def missing_directories(paths, directories=()):
    """The directories the files at paths need, and directories themselves, that do not exist yet, parents first,
    each once."""
    missing = []
    for path in [os.path.join(directory, "") for directory in directories] + list(paths):
        directory, needed = os.path.dirname(path), []
        while directory and not os.path.isdir(directory) and directory not in missing:
            needed.append(directory)
            directory = os.path.dirname(directory)
        missing.extend(reversed(needed))
    return missing


def write_or_explain(path, data, mode, directory="its directory"):
    """Write one file atomically: None, or why it could not be written and what to check."""
    try:
        write_atomically(path, data, mode)
    except (IOError, OSError) as error:
        return "could not write %s on the controller: %s; check that %s exists and is writable" % (
            path, to_native(error), directory)
    return None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("files", "parents", "directories"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        try:
            wanted = directory_list(self._task.args.get("directories"))
            specs = file_specs(self._task.args.get("files"), wanted)
        except FileSpecError as error:
            result.update(failed=True, msg=str(error))
            return result
        parents = boolean(self._task.args.get("parents", False), strict=False)
        directories = missing_directories([path for path, _data, _mode in specs] if parents else [], wanted)
        if directories and not self._task.check_mode:
            try:
                for directory in directories:
                    os.mkdir(directory, DIRECTORY_MODE)
            except (IOError, OSError) as error:
                result.update(failed=True, msg="could not create %s on the controller: %s; check that its parent is "
                                               "writable" % (directory, to_native(error)))
                return result
        written = []
        diffs = []
        for path, data, mode in specs:
            before, before_mode = current(path)
            changed = before != data or before_mode != mode
            written.append({"path": path, "changed": changed})
            if not changed:
                continue
            diffs.append({"before_header": path, "after_header": path,
                          "before": to_native(before or b""), "after": to_native(data)})
            if self._task.check_mode:
                continue
            problem = write_or_explain(path, data, mode)
            if problem:
                result.update(failed=True, files=written, msg=problem)
                return result
        result["changed"] = bool(directories) or any(entry["changed"] for entry in written)
        result["directories"] = directories
        result["files"] = written
        if self._task.diff and diffs:
            result["diff"] = diffs
        return result
