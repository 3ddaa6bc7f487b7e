#!/usr/bin/env python3
"""Reports import cycles between the modules of each crate (exit 1 when there is one).

A module is a source file (`a/b.rs` or `a/b/mod.rs` is `a::b`). Module A depends on module B
when A's non-test code names B by path: `use crate::b::…`, `crate::b::X`, `super::b::…`,
`self::b::…` or a bare `b::X` where `b` is a module A declares or a sibling `use`s. A parent's
`mod b;` and `pub use b::…` re-exports are the crate's facade, not a dependency of the parent.
Items under `#[cfg(test)]` and test files (`#[cfg(test)] mod x;`) are ignored: tests may reach
anywhere.

    scripts/use-cycles.py [CRATE_SRC_DIR ...]   (default: every crates/*/src)
"""

import pathlib
import re
import sys

PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_RE = re.compile(r"^\s*(pub(\([a-z]+\))?\s+)?use\s+([^;]+);", re.M | re.S)


def module_of(src: pathlib.Path, path: pathlib.Path) -> tuple:
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


ITEM_RE = re.compile(r"(?:#\[[^\]]*\]\s*)*(?:pub(?:\([a-z]+\))?\s+)?(?:unsafe\s+)?(mod|fn|impl|use|struct|enum|const|static|type|trait)\b")


def end_of_item(text: str, at: int) -> int:
    """Where the item starting at `at` ends: after its `;`, or after the `}` matching its first `{`."""
    depth = 0
    for i in range(at, len(text)):
        ch = text[i]
        if ch == ";" and depth == 0:
            return i + 1
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def strip(text: str) -> str:
    """Non-test code without comments and string literals: every item under `#[cfg(test)]`
    (a test module, a test-only function or import) is removed; on anything else (a field, an
    expression) only the attribute is."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out, pos = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < pos:
            continue
        out.append(text[pos : m.start()])
        rest = m.end()
        item = ITEM_RE.match(text, rest + len(text[rest:]) - len(text[rest:].lstrip()))
        pos = end_of_item(text, rest) if item else rest
    out.append(text[pos:])
    return "".join(out)


def test_modules(src: pathlib.Path, files: dict) -> set:
    """Modules declared `#[cfg(test)] mod x;`: test files, not part of the crate's code."""
    tests = set()
    for mod, path in files.items():
        text = re.sub(r"//[^\n]*", "", path.read_text())
        for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod\s+([a-z_0-9]+)\s*;", text):
            tests.add(mod + (m.group(1),))
    return tests


def resolve(mod: tuple, anchor: str, rest: list, modules: set) -> tuple:
    """The longest known module named by `anchor::rest` seen from `mod`."""
    if anchor == "crate":
        base = ()
    elif anchor == "self":
        base = mod
    else:  # super: the parent of a file module
        base = mod[:-1]
    best = None
    for i in range(len(rest) + 1):
        cand = base + tuple(rest[:i])
        if cand in modules:
            best = cand
    return best


def expand_use(tree: str) -> list:
    """`a::{b, c::d}` -> ['a::b', 'a::c::d'] (enough for module resolution)."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree]
    prefix, inner = m.group(1), m.group(2)
    out, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur:
        out.append(cur)
    return [p for part in out for p in expand_use(prefix + part)]


def crate_graph(src: pathlib.Path) -> dict:
    files = {module_of(src, p): p for p in src.rglob("*.rs")}
    tests = test_modules(src, files)
    files = {m: p for m, p in files.items() if not any(m[: len(t)] == t for t in tests)}
    modules = set(files)
    graph = {m: set() for m in modules}
    for mod, path in files.items():
        code = strip(path.read_text())
        is_dir_mod = path.name in ("mod.rs", "lib.rs", "main.rs")
        # A file `a/b.rs` is module a::b; `super` from it is `a`. For `a/b/mod.rs` the same.
        here = mod

        def add(target, reexport=False):
            if target is None or target == here:
                return
            if reexport and target[: len(here)] == here:
                return  # a parent's facade over its own children
            if target[: len(here)] == here and len(target) > len(here) and not is_dir_mod:
                return
            graph[here].add(target)

        for um in USE_RE.finditer(code):
            reexport = bool(um.group(1))
            for item in expand_use(um.group(3)):
                parts = item.split("::")
                if parts[0] in ("crate", "super", "self"):
                    add(resolve(here, parts[0], parts[1:], modules), reexport)
                elif here + (parts[0],) in modules:
                    add(resolve(here, "self", parts, modules), reexport)
        body = USE_RE.sub("", code)
        for pm in PATH_RE.finditer(body):
            rest = pm.group(2).split("::")[1:]
            add(resolve(here, pm.group(1), rest, modules))
        for child in re.findall(r"\b([a-z_][a-z0-9_]*)::[A-Za-z_]", body):
            cand = here + (child,)
            if cand in modules and cand != here:
                add(cand)
    return graph


def cycles(graph: dict) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def name(m: tuple) -> str:
    return "::".join(m) or "crate"


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    dirs = [pathlib.Path(a) for a in sys.argv[1:]] or sorted(root.glob("crates/*/src"))
    bad = 0
    for src in dirs:
        graph = crate_graph(src)
        for comp in cycles(graph):
            bad += 1
            inside = set(comp)
            edges = [
                f"{name(a)} -> {name(b)}"
                for a in comp
                for b in sorted(graph[a])
                if b in inside
            ]
            print(f"{src.parent.name}: cycle among {', '.join(name(m) for m in comp)}")
            for e in edges:
                print(f"    {e}")
    if bad:
        print(f"{bad} import cycle(s)")
        return 1
    print("no import cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
