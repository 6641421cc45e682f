#!/usr/bin/env python3
"""Unit tests of scripts/check-module-cycles, on tiny fake crates in temporary directories.

Run with: python3 scripts/check_module_cycles_test.py
"""

import contextlib
import importlib.machinery
import importlib.util
import io
import tempfile
import textwrap
import unittest
from pathlib import Path

_SCRIPT = Path(__file__).resolve().parent / "check-module-cycles"
_loader = importlib.machinery.SourceFileLoader("check_module_cycles", str(_SCRIPT))
_spec = importlib.util.spec_from_loader("check_module_cycles", _loader)
cmc = importlib.util.module_from_spec(_spec)
_loader.exec_module(cmc)


class FakeWorkspace:
    """A workspace in a temporary directory: `crate(dir, name, files)` adds a member."""

    def __init__(self, root):
        self.root = Path(root)
        self.members = []
        self.extra = ""

    def crate(self, directory, name, files, lib_section=""):
        self.members.append(directory)
        base = self.root / directory
        base.mkdir(parents=True, exist_ok=True)
        (base / "Cargo.toml").write_text(
            f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n{lib_section}')
        for rel, text in files.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"))
        self._write_root()

    def _write_root(self):
        members = ", ".join(f'"{m}"' for m in self.members)
        (self.root / "Cargo.toml").write_text(
            f'[workspace]\nmembers = [{members}]\nexclude = ["patches/dep"]\n{self.extra}')

    def edges(self, name):
        crate = next(c for c in cmc.analyze_workspace(self.root) if c.name == name)
        return crate

    def run(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cmc.main(list(args), repo_root=self.root)
        return code, out.getvalue(), err.getvalue()


class ModuleCycleTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.ws = FakeWorkspace(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def test_cycle_through_a_use_group(self):
        self.ws.crate("demo", "demo", {
            "src/lib.rs": """
                pub mod a;
                pub mod b;
                pub(crate) mod c;
                pub use a::X;
            """,
            "src/a.rs": """
                use crate::c::Y;
                pub struct X;
            """,
            "src/b.rs": "pub struct Z;\n",
            "src/c/mod.rs": """
                //! The c module.
                use crate::{a::X, b};
                pub struct Y;
            """,
        })
        crate = self.ws.edges("demo")
        self.assertEqual(crate.modules, ["a", "b", "c"])
        self.assertEqual(sorted(crate.edges), [("a", "c"), ("c", "a"), ("c", "b")])
        self.assertEqual(crate.edges[("c", "a")], [("demo/src/c/mod.rs", 2, "crate::a::X")])
        self.assertEqual(cmc.strongly_connected(crate.modules, crate.edges), [["a", "c"]])

        code, out, err = self.ws.run()
        self.assertEqual(code, 1)
        self.assertEqual(out, "")
        self.assertIn("demo: cycle a -> c -> a\n", err)
        self.assertIn("  a -> c: demo/src/a.rs:1 crate::c::Y\n", err)
        self.assertIn("  c -> a: demo/src/c/mod.rs:2 crate::a::X\n", err)
        self.assertNotIn("c -> b", err)  # not inside the cycle
        self.assertIn(cmc.GUIDANCE, err)
        self.assertNotIn(self._tmp.name, err)

    def test_nested_groups_visibility_expressions_and_macros(self):
        self.ws.crate("demo", "demo", {
            "src/lib.rs": "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\n",
            "src/a.rs": """
                pub(crate) use crate::{
                    {b::One},
                    c::{self, Two as Three},
                };
                fn f() -> crate::d::T {
                    let x: <crate::e::U as Default>::Output = crate::e::make();
                    x
                }
            """,
            "src/b.rs": """
                macro_rules! m {
                    () => { $crate::c::go() };
                }
            """,
            "src/c.rs": "", "src/d.rs": "", "src/e.rs": "",
        })
        crate = self.ws.edges("demo")
        self.assertEqual(sorted(crate.edges),
                         [("a", "b"), ("a", "c"), ("a", "d"), ("a", "e"), ("b", "c")])
        self.assertEqual(len(crate.edges[("a", "e")]), 2)
        self.assertEqual(crate.edges[("a", "c")][0][1], 3)  # the line of `c::{...}`
        self.assertEqual(crate.edges[("b", "c")], [("demo/src/b.rs", 2, "$crate::c::go")])

    def test_super_edges_by_module_depth(self):
        self.ws.crate("demo", "demo", {
            "src/lib.rs": "mod a;\nmod b;\nmod c;\nmod d;\n",
            # depth 1: `super` is the crate root
            "src/a/mod.rs": """
                mod inner;
                mod b;
                use super::b::Thing;
                use self::b::Local;
                mod nested {
                    use super::super::d::Deep;
                    use super::b::NotRoot;
                }
            """,
            # depth 2: `super` is module a, `super::super` the crate root
            "src/a/inner.rs": """
                use super::b::AlsoLocal;
                use super::super::c::Far;
            """,
            "src/a/b.rs": "",
            "src/b.rs": "pub struct Thing;\n",
            # depth 1 again, through a group
            "src/c.rs": "use super::{d, b::Thing};\n",
            "src/d.rs": "",
        })
        crate = self.ws.edges("demo")
        self.assertEqual(sorted(crate.edges), [("a", "b"), ("a", "c"), ("a", "d"),
                                                ("c", "b"), ("c", "d")])
        self.assertEqual(crate.edges[("a", "b")], [("demo/src/a/mod.rs", 3, "super::b::Thing")])
        self.assertEqual(crate.edges[("a", "c")],
                         [("demo/src/a/inner.rs", 2, "super::super::c::Far")])
        self.assertEqual(crate.edges[("a", "d")],
                         [("demo/src/a/mod.rs", 6, "super::super::d::Deep")])

    def test_test_code_is_ignored(self):
        self.ws.crate("demo", "demo", {
            "src/lib.rs": """
                mod a;
                mod b;
                #[cfg(test)]
                mod tests;
            """,
            "src/tests.rs": "use crate::a::X;\nuse crate::b::Y;\n",
            "src/a.rs": """
                pub struct X;
                #[cfg(test)]
                mod tests {
                    use crate::b::Y;
                    fn inner() { let _ = { crate::b::y() }; }
                }
                #[cfg(all(test, feature = "x"))]
                fn helper() -> crate::b::Y { crate::b::Y }
                #[cfg(test)]
                use crate::b::Z;
                #[cfg(test)]
                mod more;
            """,
            "src/a/more.rs": "use crate::b::Y;\n",
            "src/b/mod.rs": """
                use crate::a::X;
                #[cfg(not(test))]
                fn real() {}
                #[cfg(test)]
                #[path = "elsewhere.rs"]
                mod t;
            """,
            "src/b/elsewhere.rs": "use crate::a::X;\n",
        })
        crate = self.ws.edges("demo")
        self.assertEqual(crate.modules, ["a", "b"])
        self.assertEqual(sorted(crate.edges), [("b", "a")])
        self.assertEqual(crate.edges[("b", "a")], [("demo/src/b/mod.rs", 1, "crate::a::X")])
        self.assertEqual(self.ws.run()[0], 0)

    def test_cfg_that_also_holds_outside_tests_is_not_test_code(self):
        self.ws.crate("demo", "demo", {
            "src/lib.rs": "mod a;\nmod b;\n",
            "src/a.rs": """
                #[cfg(any(test, feature = "x"))]
                use crate::b::Y;
                #[cfg(not(test))]
                mod real {
                    use crate::b::Z;
                }
            """,
            "src/b.rs": "",
        })
        self.assertEqual(len(self.ws.edges("demo").edges[("a", "b")]), 2)

    def test_comments_and_strings_are_ignored(self):
        self.ws.crate("demo", "demo", {
            "src/lib.rs": "mod a;\nmod b;\n",
            "src/a.rs": r'''
                //! See [`crate::b`].
                /// Uses [`crate::b::Y`](crate::b::Y).
                // use crate::b::Y;
                /* outer /* nested crate::b::Y */ still a comment: crate::b::Y */
                /** doc block crate::b::Y */
                #[doc = "crate::b::Y"]
                fn f<'a>(s: &'a str) -> char {
                    let _ = "crate::b::Y \" crate::b::Y";
                    let _ = r#"crate::b::Y " crate::b::Y"#;
                    let _ = b"crate::b";
                    let _ = '\'';
                    let _ = 'x';
                    let r#type = 1;
                    '"'
                }
                fn g() -> &'static str { "}" }
            ''',
            "src/b.rs": "pub struct Y;\n",
        })
        self.assertEqual(self.ws.edges("demo").edges, {})

    def test_clean_workspace_and_graph(self):
        self.ws.crate("core", "core-crate", {
            "src/lib.rs": "pub mod a;\npub mod b;\n",
            "src/a.rs": "use crate::b::Y;\n",
            "src/b.rs": "pub struct Y;\n",
        })
        self.ws.crate("other", "other-crate", {
            "src/main.rs": "mod x;\nfn main() {}\n",
            "src/x.rs": "",
        })
        self.ws.crate("custom", "custom-lib", {
            "src/root.rs": "mod p;\nmod q;\n",
            "src/p.rs": "use crate::q::Z;\n",
            "src/q.rs": "use crate::p::Z;\n",
        }, lib_section='[lib]\npath = "src/root.rs"\n')
        # patches/ is not part of the workspace, even with a cycle.
        patch = self.ws.root / "patches" / "dep" / "src"
        patch.mkdir(parents=True)
        (patch.parent / "Cargo.toml").write_text('[package]\nname = "dep"\nversion = "0.1.0"\n')
        (patch / "lib.rs").write_text("mod a;\nmod b;\n")
        (patch / "a.rs").write_text("use crate::b::X;\n")
        (patch / "b.rs").write_text("use crate::a::X;\n")
        self.ws.members.append("patches/dep")  # even if listed as a member by mistake
        self.ws._write_root()

        code, out, err = self.ws.run("core-crate", "other-crate")
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(out, "check-module-cycles: 2 crates, no cycles\n")

        code, out, _ = self.ws.run("--graph", "core-crate")
        self.assertEqual(code, 0)
        self.assertEqual(out.splitlines(), [
            "core-crate (core/src/lib.rs): 2 modules, 1 edges",
            "  a -> b: core/src/a.rs:1 crate::b::Y",
            "check-module-cycles: 1 crates, no cycles",
        ])

        code, _, err = self.ws.run()  # the [lib] path crate has a cycle
        self.assertEqual(code, 1)
        self.assertIn("custom-lib: cycle p -> q -> p\n", err)
        self.assertIn("1 of 3 crates", err)
        self.assertNotIn("patches", err)
        self.assertNotIn("dep:", err)

    def test_larger_component_is_covered_by_cycles(self):
        edges = {("a", "b"): [], ("b", "c"): [], ("c", "a"): [], ("b", "a"): [], ("c", "d"): []}
        comps = cmc.strongly_connected(["a", "b", "c", "d"], edges)
        self.assertEqual(comps, [["a", "b", "c"]])
        cycles = cmc.cycles_covering(comps[0], edges)
        self.assertEqual(cycles, [["a", "b", "a"], ["b", "c", "a", "b"]])

    def test_lexer(self):
        toks = cmc.tokenize("let r#mod = 'a'; fn f<'b>() { x::y }")
        self.assertIn(("ident", "mod", 1), toks)
        self.assertIn(("lifetime", "'b", 1), toks)
        self.assertIn(("punct", "::", 1), toks)
        self.assertEqual(cmc.tokenize('"a\nb"\nc')[-1], ("ident", "c", 3))
        self.assertEqual(cmc.tokenize("/* a\n/* b\n*/ */ c")[-1], ("ident", "c", 3))


if __name__ == "__main__":
    unittest.main()
