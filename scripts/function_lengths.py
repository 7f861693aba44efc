#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Lists C++ functions longer than a limit (default 120 lines).

A function is a brace block opened right after a parameter list (")" and
qualifiers such as const, noexcept, override, or a trailing return type, or
a constructor's initializer list) at namespace or class level; lambdas and
blocks inside it count toward it. Comments, strings and character literals
are skipped. Not seen: function-try-blocks, and bodies whose "{" follows a
name or ">" with no space (clang-format puts one there). Usage: function_lengths.py [--max N] FILE_OR_DIR...
"""
import argparse
import os
import re
import sys

EXTENSIONS = (".cpp", ".hpp", ".h", ".cc", ".cxx", ".in")


def strip(text):
    """Text with comments, strings and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")  # digit separator 1'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


SIGNATURE_END = re.compile(
    r"\)\s*(?:const\s*|noexcept(?:\([^)]*\))?\s*|override\s*|final\s*|mutable\s*|&&?\s*|"
    r"->\s*[\w:<>,\s\*&]+?\s*)*$")
INITIALIZER = re.compile(r"\)\s*:\s*[\w:]+\s*[({]")


def brace_inits_as_parens(code):
    """Code with brace initializers (a "{" right after a name or ">": x{v},
    Type<T>{}) written as parentheses, so that a constructor's initializer list
    reads as one signature and an initialized member is not taken for a scope."""
    chars, stack = list(code), []
    for i, c in enumerate(chars):
        if c == "{":
            init = i > 0 and (code[i - 1].isalnum() or code[i - 1] in "_>")
            stack.append(init)
            if init:
                chars[i] = "("
        elif c == "}" and stack and stack.pop():
            chars[i] = ")"
    return "".join(chars)


def functions(text):
    """(first line, last line, name) of each function at namespace/class level."""
    code = brace_inits_as_parens(strip(text))
    stack = []  # for each open brace: 'scope', 'function' or 'block'
    starts = []
    results = []
    depth_in_function = 0
    for i, c in enumerate(code):
        if c == "{":
            if depth_in_function:
                stack.append("block")
                depth_in_function += 1
                continue
            head = code[max(0, i - 2000):i]
            statement = re.split(r"[;{}]", head)[-1]
            is_function = bool(SIGNATURE_END.search(statement.rstrip())) or bool(INITIALIZER.search(statement))
            if is_function and not re.search(r"\b(if|for|while|switch|catch)\s*\(", statement):
                # the line of the function's name: the statement's first non-blank line
                offset = i - len(statement) + (len(statement) - len(statement.lstrip()))
                name = re.search(r"([~\w:]+)\s*\(", statement)
                stack.append("function")
                starts.append((code.count("\n", 0, offset) + 1, name.group(1) if name else "?"))
                depth_in_function = 1
            else:
                stack.append("scope")
        elif c == "}":
            if not stack:
                continue
            kind = stack.pop()
            if depth_in_function:
                depth_in_function -= 1
                if depth_in_function == 0 and kind == "function":
                    first, name = starts.pop()
                    results.append((first, code.count("\n", 0, i) + 1, name))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max", type=int, default=120)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    files = []
    for path in args.paths:
        if os.path.isdir(path):
            for folder, _, names in os.walk(path):
                files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(EXTENSIONS)]
        else:
            files.append(path)
    long_ones = 0
    for path in sorted(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            for first, last, name in functions(f.read()):
                if last - first + 1 > args.max:
                    print(f"{path}:{first}: {name} is {last - first + 1} lines (more than {args.max})")
                    long_ones += 1
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main())
