#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes docs/cli.md, the command-line reference, from the programs' own
--help, so that it says what the build does:

    scripts/cli_reference.py [--build build] [--check]

--check compares with the committed file instead (ctest docs_cli_reference)
and names what to run when it is stale."""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = """# The command line

Every subcommand's `--help`, as this version prints it (written by
`scripts/cli_reference.py` from the build; `ctest -R docs_cli_reference` fails when it
is stale). How the commands fit together, with examples: the [README](../README.md);
the options' background: the pages named in each section of [the docs index](../README.md#documentation).

Dimensions and brick shapes are given in file order `Z,Y,X` (x fastest), as `ncdump`
lists them. Under `mpirun -np N` every command runs on N ranks; `info`, `backends` and
`trace-report` need no more than one.
"""


def run(argv):
    env = dict(os.environ, COLUMNS="100")
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit(f"cli_reference: {' '.join(argv)} failed ({proc.returncode}):\n{text}")
    return text


def clean(text, program, name):
    """The help as a user reads it: the program by its name, not the build path."""
    return re.sub(re.escape(program) + r"\b", name, text).rstrip() + "\n"


def reference(build):
    volseg = os.path.join(build, "app", "cli", "volseg")
    sim = os.path.join(build, "app", "insitu", "volseg-sim")
    top = clean(run([volseg, "--help"]), volseg, "volseg")
    commands = re.findall(r"^  ([a-z][a-z-]+)\s{2,}", top.split("Subcommands:", 1)[1], re.M)
    out = [HEADER, "\n## `volseg`\n\n```text\n" + top + "```\n"]
    for command in commands:
        text = clean(run([volseg, command, "--help"]), volseg, "volseg")
        out.append(f"\n## `volseg {command}`\n\n```text\n{text}```\n")
    text = clean(run([sim, "--insitu-help"]), sim, "volseg-sim")
    out.append("\n## The in-situ hook's options\n\nThe option string of `volseg_insitu_create`, "
               "`volseg.insitu.Hook` and `volseg-sim --insitu` ([docs/insitu.md](insitu.md)):\n\n"
               f"```text\n{text}```\n")
    return "".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = reference(os.path.abspath(args.build))
    path = os.path.join(ROOT, "docs", "cli.md")
    if args.check:
        with open(path) as f:
            if f.read() != text:
                sys.exit("docs/cli.md is not what this build's --help says: run scripts/cli_reference.py and commit it")
        print("docs/cli.md is current")
        return
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    print("wrote", path)


if __name__ == "__main__":
    main()
