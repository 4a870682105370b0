"""Shared by scripts/check-public-api, scripts/api-baseline and scripts/check-api-breaks.

These scripts read HubHostKit's public API from an already built SwiftPM build directory
(`.build/debug`, made by `swift build` or `swift test`) without building anything. They need the
search paths SwiftPM gives its API tools, which `search_paths` rebuilds from what the build
directory and the checkouts hold (see there).

Python 3 standard library only.
"""

import glob
import os
import re
import shutil
import subprocess
import sys

MODULE = "HubHostKit"

# The package root: this file is scripts/lib/api_tools.py.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Failure(Exception):
    """An error that stops a script before it can check anything (exit status 2)."""


def fail_and_exit(program, error):
    print(f"{program}: error: {error}", file=sys.stderr)
    sys.exit(2)


def build_directory(argument):
    """The build directory as an absolute path (a relative one is relative to the package root),
    checked to hold the built HubHostKit module."""
    path = argument or ".build/debug"
    if not os.path.isabs(path):
        path = os.path.join(PACKAGE_ROOT, path)
    path = os.path.abspath(path)
    if not os.path.isdir(path):
        raise Failure(
            f"no build directory at {path}: build the package first (`swift build` or `swift test`), "
            "or pass the build directory (the one with a Modules/ folder, e.g. .build/debug)")
    module = os.path.join(path, "Modules", MODULE + ".swiftmodule")
    if not os.path.exists(module):
        raise Failure(
            f"{module} does not exist: {path} is not a SwiftPM build directory of this package "
            f"that has built {MODULE} (expected <build dir>/Modules/{MODULE}.swiftmodule)")
    return path


def tool(name, environment_variable):
    """A toolchain program: $ENVIRONMENT_VARIABLE, else next to `swift` on PATH, else PATH, else /opt/swift."""
    explicit = os.environ.get(environment_variable)
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise Failure(f"{environment_variable}={explicit} is not an executable")
        return explicit
    candidates = []
    swift = shutil.which("swift")
    if swift:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(swift)), name))
    found = shutil.which(name)
    if found:
        candidates.append(found)
    candidates.append(os.path.join("/opt/swift/usr/bin", name))
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    raise Failure(f"{name} not found (looked next to `swift` on PATH, on PATH and in /opt/swift/usr/bin); "
                  f"set {environment_variable} to its path")


def _module_map_include_dirs(module_map):
    """The folders a SwiftPM-generated module map points into (`umbrella header "x/y.h"`, `umbrella "x"`,
    `header "x/y.h"`): the C target's public include folder."""
    folders = []
    try:
        text = open(module_map, encoding="utf-8").read()
    except OSError:
        return folders
    for kind, path in re.findall(r'\b(umbrella header|umbrella|header)\s+"([^"]+)"', text):
        if not os.path.isabs(path):
            path = os.path.join(os.path.dirname(module_map), path)
        folders.append(path if kind == "umbrella" else os.path.dirname(path))
    return folders


def checkouts_directory(build, explicit=None):
    """Where SwiftPM checked out the dependencies: `explicit`, else the `checkouts` folder of the
    scratch directory the build directory is in (.build/<triple>/debug or .build/debug), else the
    one the build's generated module maps point into (a copy of a build directory made elsewhere)."""
    if explicit:
        if not os.path.isdir(explicit):
            raise Failure(f"--checkouts {explicit} is not a directory")
        return os.path.abspath(explicit)
    real = os.path.realpath(build)
    for candidate in (os.path.join(real, "..", "..", "checkouts"), os.path.join(real, "..", "checkouts"),
                      os.path.join(build, "..", "checkouts"), os.path.join(PACKAGE_ROOT, ".build", "checkouts")):
        if os.path.isdir(candidate):
            return os.path.abspath(candidate)
    for module_map in sorted(glob.glob(os.path.join(build, "*.build", "module.modulemap"))):
        for folder in _module_map_include_dirs(module_map):
            marker = os.sep + "checkouts" + os.sep
            if marker in folder:
                candidate = folder[: folder.index(marker) + len(marker) - 1]
                if os.path.isdir(candidate):
                    return candidate
    return None


def search_paths(build, checkouts=None):
    """The `-I` arguments SwiftPM's `BuildPlan.createAPIToolCommonArgs` gives swift-api-digester (and,
    with module maps, what swift-symbolgraph-extract needs), rebuilt from the build directory:

    - `-I <build>/Modules`: every Swift target's module (SwiftPM adds the folder once per target);
    - for each C target: `-I` the folder of its module map and `-I` its public include folder.
      A target whose module map SwiftPM generated has `<build>/<Target>.build/module.modulemap`,
      which names the include folder. A target with its own module map (`include/module.modulemap`,
      e.g. CYaml, CNIOBoringSSL, _NumericsShims) has a `<build>/<Target>.build` folder of objects and
      its module map in its sources: `<checkouts>/<package>/Sources/<Target>/include/`;
    - for each system library target: `-I` the folder of its module map: this package's
      Host/COpenSSL and Host/CCmarkGFM (every module.modulemap under Host/), and a dependency's
      `[system]` module map at `<checkouts>/<package>/Sources/<Target>/module.modulemap` (GRDBSQLite).
      SwiftPM also adds their pkg-config cflags: none are needed on Linux (system headers).

    The toolchain's extra swiftc flags, which SwiftPM puts first, are empty with the default
    toolchain. A folder named twice is kept once."""
    arguments = []
    seen = set()

    def add(folder):
        folder = os.path.normpath(folder)
        if folder not in seen and os.path.isdir(folder):
            seen.add(folder)
            arguments.extend(["-I", folder])

    add(os.path.join(build, "Modules"))
    target_folders = {os.path.basename(p)[: -len(".build")]
                      for p in glob.glob(os.path.join(build, "*.build")) if os.path.isdir(p)}
    for module_map in sorted(glob.glob(os.path.join(build, "*.build", "module.modulemap"))):
        add(os.path.dirname(module_map))
        for folder in _module_map_include_dirs(module_map):
            add(folder)
    if checkouts:
        for module_map in sorted(glob.glob(os.path.join(checkouts, "*", "Sources", "*", "include", "module.modulemap"))):
            target = os.path.basename(os.path.dirname(os.path.dirname(module_map)))
            if target in target_folders:
                add(os.path.dirname(module_map))
        for module_map in sorted(glob.glob(os.path.join(checkouts, "*", "Sources", "*", "module.modulemap"))):
            target = os.path.basename(os.path.dirname(module_map))
            try:
                system = re.search(r"\bmodule\s+\w+\s*\[system\]", open(module_map, encoding="utf-8").read())
            except OSError:
                system = None
            if target in target_folders or system:
                add(os.path.dirname(module_map))
    for module_map in sorted(glob.glob(os.path.join(PACKAGE_ROOT, "Host", "*", "module.modulemap"))):
        add(os.path.dirname(module_map))
    return arguments


def run(arguments, **options):
    """Runs a program, returning (status, stdout, stderr); a program that cannot start is a Failure."""
    try:
        result = subprocess.run(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)
    except OSError as error:
        raise Failure(f"cannot run {arguments[0]}: {error}")
    return result.returncode, result.stdout, result.stderr


def git_revision(treeish):
    """The full commit hash `treeish` names, as SwiftPM resolves it (`git rev-parse --verify <treeish>^{commit}`)."""
    status, out, err = run(["git", "-C", PACKAGE_ROOT, "rev-parse", "--verify", treeish + "^{commit}"])
    if status != 0:
        raise Failure(f"git cannot resolve {treeish!r} to a commit: {err.strip()}")
    return out.strip()
