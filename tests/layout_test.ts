/**
 * The house rules of the code's layout, kept by a test (see "Components and
 * packages" in docs/architecture.md):
 *
 * - outside a package `lib/<pkg>/`, only its `mod.ts` is imported (a
 *   package's own files, its tests among them, import each other freely);
 * - every module under `lib/` with code has a `*_test.ts` beside it (a
 *   module of types and re-exports only, such as most `mod.ts`, needs none);
 * - no module under `lib/` but a test is over {@linkcode MAX_MODULE_LINES}
 *   lines;
 * - no import cycle between files, and no import from a package of `lib/`
 *   to one of a higher layer ({@linkcode LAYERS});
 * - a unit test under `lib/` loads none of the kcp harness: its fakes come
 *   from `testing/fakes.ts`, which loads nothing of `testing/` that starts a
 *   process, not `testing/mod.ts`;
 * - no name of a top-level function, class or arrow function bound to a
 *   `const` is defined in more than one file under `tests/`: the builders
 *   of objects and the waits the tests share live once, in `testing/`, and
 *   helpers that do different things have different names;
 * - an end-to-end file under `tests/e2e/` has at most
 *   {@linkcode MAX_SETUP_LINES} lines before its first step beyond its
 *   module doc and imports: the world it builds lives in `testing/` too.
 *
 * The checks are pure functions of the files (path and source), tested on
 * small in-memory trees that break each rule, and then run on this
 * repository. Imports are found by a plain scan of the relative specifiers
 * of `import ... from "..."`, `export ... from "..."`, `import "..."` and
 * `import("...")`. No kcp, no network.
 */
import assert from "node:assert/strict";

/**
 * The packages of `lib/`, lowest layer first: a package imports only
 * packages before it in this list. Derived from the imports: `runtime`
 * needs nothing, `causes` and `when` need nothing of `lib/` either, the
 * controller draws the graph, and grants reads as the webhook does. The
 * same order is the package table of docs/architecture.md.
 */
const LAYERS: readonly string[] = [
  "runtime",
  "causes",
  "kcp",
  "when",
  "rules",
  "dependents",
  "exports",
  "locks",
  "graph",
  "webhook",
  "controller",
  "grants",
  "plugin",
];

/** Most lines of a module under `lib/`; its `*_test.ts` may be longer. */
const MAX_MODULE_LINES = 500;

/**
 * Modules of `lib/` over {@linkcode MAX_MODULE_LINES} lines that are being
 * split now. Temporary: take a path off this list once its module is
 * split; the test fails while a path here is no longer over the limit, so
 * that the list does not outlive its reason.
 */
const LONG_MODULES_BEING_SPLIT: readonly string[] = [];

/**
 * Directories of `lib/` whose unit tests still import their fakes from
 * `testing/mod.ts`, the kcp harness. Temporary: take a directory off this
 * list once its tests import `testing/fakes.ts`; the test fails while no
 * test under a directory here loads the harness.
 */
const TESTS_STILL_ON_THE_HARNESS: readonly string[] = [];

/**
 * Names defined at the top level of more than one file under `tests/` that
 * are being made one now. Temporary: take a name off this list once it is
 * defined in one file only; the test fails while a name here is no longer
 * defined twice, so that the list does not outlive its reason.
 */
const DUPLICATES_BEING_REMOVED: readonly string[] = [];

/** The top-level files and directories whose `.ts` files are checked. */
const CHECKED = [
  "controller.ts",
  "webhook.ts",
  "kubectl_dependencies.ts",
  "lib",
  "testing",
  "tests",
  "bench",
  "scripts",
];

/** One source file: its path from the repository root, with `/`, and text. */
interface SourceFile {
  path: string;
  source: string;
}

/** One relative import of a file: what it says and the path it names. */
interface Import {
  specifier: string;
  target: string;
}

/** `import ... from "x"`, `export ... from "x"`, over several lines too. */
const STATIC_IMPORT =
  /^[ \t]*(?:import|export)\s+(?:type\s+)?(?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?)?\s*from\s*["']([^"']+)["']/gm;
/** `import "x"`, for its effects. */
const BARE_IMPORT = /^[ \t]*import\s*["']([^"']+)["']/gm;
/** `import("x")` with a literal specifier. */
const DYNAMIC_IMPORT = /\bimport\(\s*["']([^"']+)["']\s*\)/g;

/** `a/b/../c/./d.ts` as `a/c/d.ts`. */
function normalize(path: string): string {
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === ".." && parts.length > 0 && parts.at(-1) !== "..") {
      parts.pop();
    } else {
      parts.push(part);
    }
  }
  return parts.join("/");
}

/** The directory of a path, `""` at the root. */
function dirname(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

/**
 * The relative imports of a file, in the order written. Dynamic imports on
 * comment lines (starting with `//`, `/*` or `*`) are not imports.
 */
function relativeImports(file: SourceFile): Import[] {
  const specifiers: string[] = [];
  for (const pattern of [STATIC_IMPORT, BARE_IMPORT]) {
    for (const match of file.source.matchAll(pattern)) {
      specifiers.push(match[1]!);
    }
  }
  for (const line of file.source.split("\n")) {
    if (/^\s*(?:\/\/|\/\*|\*)/.test(line)) continue;
    for (const match of line.matchAll(DYNAMIC_IMPORT)) {
      specifiers.push(match[1]!);
    }
  }
  return specifiers
    .filter((specifier) => /^\.\.?\//.test(specifier))
    .map((specifier) => ({
      specifier,
      target: normalize(`${dirname(file.path)}/${specifier}`),
    }));
}

/** The package of a path under `lib/` (`lib/kcp/urls.ts` is `kcp`). */
function packageOf(path: string): string | undefined {
  return /^lib\/([^/]+)\/./.exec(path)?.[1];
}

/**
 * (a) Imports from outside a package `lib/<pkg>/` of any of its files but
 * its `mod.ts`.
 */
function deepImports(files: readonly SourceFile[]): string[] {
  const violations: string[] = [];
  for (const file of files) {
    const own = packageOf(file.path);
    for (const { target } of relativeImports(file)) {
      const pkg = packageOf(target);
      if (pkg === undefined || pkg === own) continue;
      if (target === `lib/${pkg}/mod.ts`) continue;
      violations.push(
        `${file.path} imports ${target}; outside lib/${pkg}/ import lib/${pkg}/mod.ts`,
      );
    }
  }
  return violations;
}

/**
 * Whether a module has code that runs: a function, class, variable or enum
 * declared at the start of a line (comments' lines start with `*` or `//`
 * and do not count), or a default export. Interfaces, type aliases and
 * re-exports are not code.
 */
function hasCode(source: string): boolean {
  return /^[ \t]*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function|class|const|let|var|enum)\b/m
    .test(source) ||
    /^[ \t]*export\s+default\b/m.test(source);
}

/** (b) Modules under `lib/` with code and no `*_test.ts` beside them. */
function missingTests(files: readonly SourceFile[]): string[] {
  const paths = new Set(files.map((file) => file.path));
  return files
    .filter((file) =>
      packageOf(file.path) !== undefined && !file.path.endsWith("_test.ts") &&
      hasCode(file.source) &&
      !paths.has(file.path.replace(/\.ts$/, "_test.ts"))
    )
    .map((file) =>
      `${file.path} has code and no ${
        file.path.replace(/^.*\//, "").replace(/\.ts$/, "_test.ts")
      } beside it`
    );
}

/** The lines of a text, a last line without its newline counted too. */
function lineCount(source: string): number {
  if (source === "") return 0;
  const newlines = source.split("\n").length - 1;
  return source.endsWith("\n") ? newlines : newlines + 1;
}

/**
 * (b) Modules under `lib/` but tests (`*_test.ts`) of more than `limit`
 * lines.
 */
function longModules(files: readonly SourceFile[], limit: number): string[] {
  return files
    .filter((file) =>
      packageOf(file.path) !== undefined && !file.path.endsWith("_test.ts") &&
      lineCount(file.source) > limit
    )
    .map((file) =>
      `${file.path} has ${lineCount(file.source)} lines, more than ${limit}`
    );
}

/** Each file's relative imports of files in `files`, by path. */
function importGraph(files: readonly SourceFile[]): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of files) edges.set(file.path, []);
  for (const file of files) {
    for (const { target } of relativeImports(file)) {
      if (edges.has(target)) edges.get(file.path)!.push(target);
    }
  }
  return edges;
}

/** The files that `from` loads through `edges`, itself included. */
function reachable(
  edges: ReadonlyMap<string, readonly string[]>,
  from: string,
): Set<string> {
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length > 0) {
    const path = stack.pop()!;
    if (seen.has(path) || !edges.has(path)) continue;
    seen.add(path);
    stack.push(...edges.get(path)!);
  }
  return seen;
}

/** The kcp harness, the public face of `testing/`. */
const HARNESS = "testing/mod.ts";
/** The unit tests' fakes, a public face of `testing/` without the harness. */
const FAKES = "testing/fakes.ts";

/**
 * (e) Unit tests under `lib/` that load the kcp harness ({@linkcode HARNESS})
 * through any chain of imports, but those under a directory of `exempt`; and
 * what {@linkcode FAKES} loads of `testing/` that is the harness or starts a
 * process (`Deno.Command`).
 */
function harnessLoads(
  files: readonly SourceFile[],
  exempt: readonly string[],
): string[] {
  const edges = importGraph(files);
  const sources = new Map(files.map((file) => [file.path, file.source]));
  const violations: string[] = [];
  for (const file of files) {
    if (
      packageOf(file.path) === undefined || !file.path.endsWith("_test.ts") ||
      exempt.some((dir) => file.path.startsWith(dir))
    ) continue;
    if (reachable(edges, file.path).has(HARNESS)) {
      violations.push(
        `${file.path} loads ${HARNESS}, the kcp harness; import the fakes from ${FAKES}`,
      );
    }
  }
  if (edges.has(FAKES)) {
    for (const path of [...reachable(edges, FAKES)].sort()) {
      if (!path.startsWith("testing/")) continue;
      if (path === HARNESS) {
        violations.push(`${FAKES} loads ${HARNESS}, the kcp harness`);
      } else if (/\bDeno\.Command\b/.test(sources.get(path)!)) {
        violations.push(`${FAKES} loads ${path}, which starts processes`);
      }
    }
  }
  return violations;
}

/**
 * (c) Import cycles between the files: each as its files in a cycle,
 * `a.ts -> b.ts -> a.ts`. Imports of files not in `files` are left out.
 */
function importCycles(files: readonly SourceFile[]): string[] {
  const edges = importGraph(files);
  // Depth first; an edge back to a file on the current path closes a cycle.
  const cycles: string[] = [];
  const done = new Set<string>();
  const onPath: string[] = [];
  const visit = (path: string): void => {
    onPath.push(path);
    for (const next of edges.get(path)!) {
      const at = onPath.indexOf(next);
      if (at >= 0) {
        cycles.push([...onPath.slice(at), next].join(" -> "));
      } else if (!done.has(next)) {
        visit(next);
      }
    }
    onPath.pop();
    done.add(path);
  };
  for (const path of [...edges.keys()].sort()) {
    if (!done.has(path)) visit(path);
  }
  return cycles;
}

/**
 * (c) Imports from a package of `lib/` to one of a higher layer in
 * `layers`, and packages that are not in `layers` at all.
 */
function backArrows(
  files: readonly SourceFile[],
  layers: readonly string[],
): string[] {
  const violations: string[] = [];
  const unlisted = new Set<string>();
  for (const file of files) {
    const own = packageOf(file.path);
    if (own === undefined) continue;
    if (!layers.includes(own)) unlisted.add(own);
    for (const { target } of relativeImports(file)) {
      const pkg = packageOf(target);
      if (pkg === undefined || pkg === own) continue;
      if (!layers.includes(pkg)) unlisted.add(pkg);
      if (!layers.includes(own) || !layers.includes(pkg)) continue;
      if (layers.indexOf(pkg) > layers.indexOf(own)) {
        violations.push(
          `${file.path} imports ${target}: lib/${pkg}/ comes after lib/${own}/ in the layers`,
        );
      }
    }
  }
  for (const pkg of [...unlisted].sort()) {
    violations.push(`lib/${pkg}/ is not in the layer table`);
  }
  return violations;
}

/** Packages under `lib/` without a `mod.ts`, their public face. */
function packagesWithoutMod(files: readonly SourceFile[]): string[] {
  const paths = new Set(files.map((file) => file.path));
  const packages = new Set(
    files.map((file) => packageOf(file.path)).filter((pkg) =>
      pkg !== undefined
    ),
  );
  return [...packages].sort()
    .filter((pkg) => !paths.has(`lib/${pkg}/mod.ts`))
    .map((pkg) => `lib/${pkg}/ has no mod.ts`);
}

/**
 * A function or class declared at the start of a line: `function f`,
 * `async function* g`, `class C`, exported or not.
 */
const TOP_LEVEL_DECLARATION =
  /^(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\s*\*?|class)\s+([\w$]+)/gm;
/** A `const` at the start of a line, its type too, up to its value. */
const TOP_LEVEL_CONST =
  /^(?:export\s+)?const\s+([\w$]+)\s*(?::(?:=>|[^=])*?)?=(?!>)\s*/gm;

/**
 * Whether the value at the start of `text` is a function: `function`, an
 * arrow function of one bare parameter, or a parenthesised parameter list
 * (type parameters before it, a return type after it) and `=>`.
 */
function isFunctionValue(text: string): boolean {
  const rest = text.replace(/^async\s+/, "");
  if (/^function\b/.test(rest) || /^[\w$]+\s*=>/.test(rest)) return true;
  const open = /^(?:<[^>()]*>\s*)?\(/.exec(rest);
  if (open === null) return false;
  let depth = 0;
  for (let i = open[0].length - 1; i < rest.length; i++) {
    if (rest[i] === "(") depth++;
    if (rest[i] === ")" && --depth === 0) {
      return /^\s*(?::[^=;]+?)?=>/.test(rest.slice(i + 1));
    }
  }
  return false;
}

/**
 * The names a file defines at its top level (at the start of a line): its
 * functions, its classes, and its `const`s bound to a function.
 */
function topLevelNames(source: string): Set<string> {
  const names = new Set<string>();
  for (const match of source.matchAll(TOP_LEVEL_DECLARATION)) {
    names.add(match[1]!);
  }
  for (const match of source.matchAll(TOP_LEVEL_CONST)) {
    const value = source.slice(match.index + match[0].length);
    if (isFunctionValue(value)) names.add(match[1]!);
  }
  return names;
}

/**
 * (f) Names of top-level functions, classes and arrow functions defined in
 * more than one file under `tests/`, but those in `exempt`.
 */
function duplicateDefinitions(
  files: readonly SourceFile[],
  exempt: readonly string[],
): string[] {
  const definedIn = new Map<string, string[]>();
  for (const file of files) {
    if (!file.path.startsWith("tests/")) continue;
    for (const name of topLevelNames(file.source)) {
      definedIn.set(name, [...definedIn.get(name) ?? [], file.path]);
    }
  }
  return [...definedIn]
    .filter(([name, paths]) => paths.length > 1 && !exempt.includes(name))
    .sort(([a], [b]) => a < b ? -1 : 1)
    .map(([name, paths]) =>
      `${name} is defined in ${
        paths.sort().join(", ")
      }: define it once, in testing/, or give each its own name`
    );
}

/**
 * Most lines of an end-to-end file under `tests/e2e/` before its first step
 * (or its test), not counting its module doc comment and imports: the
 * steps function's JSDoc and signature and a call that builds its world.
 * The world itself (objects, rules, waits, expectations) lives in
 * `testing/`, so that the file reads as its steps.
 */
const MAX_SETUP_LINES = 20;

/** The first step or test of an e2e file: `step(`, `t.step(` or a suite call. */
const FIRST_STEP =
  /(?:^|[^\w$.])(?:step|t\.step)\(|^(?:componentTest|kcpTest|Deno\.test)\(/;

/**
 * The lines of `source` before its first step ({@linkcode FIRST_STEP}),
 * after its leading module doc comment, blank lines and import statements.
 */
function setupLines(source: string): number {
  const lines = source.split("\n");
  let at = 0;
  const skipBlank = () => {
    while (at < lines.length && lines[at]!.trim() === "") at++;
  };
  skipBlank();
  if (lines[at]?.startsWith("/**")) {
    while (at < lines.length && !lines[at]!.includes("*/")) at++;
    at++;
  }
  skipBlank();
  while (
    at < lines.length &&
    /^(?:import|export)\b.*\bfrom\b|^import\b/.test(lines[at]!)
  ) {
    // An import statement ends at its line with `from "..."` or `import "..."`.
    while (
      at < lines.length &&
      !/(?:from|import)\s*["'][^"']+["'];?\s*$/.test(lines[at]!)
    ) at++;
    at++;
    skipBlank();
  }
  const first = lines.findIndex((line, i) => i >= at && FIRST_STEP.test(line));
  return first === -1 ? lines.length - at : first - at;
}

/**
 * (g) End-to-end files under `tests/e2e/` with more than `limit` lines of
 * setup before their first step ({@linkcode setupLines}).
 */
function longSetups(files: readonly SourceFile[], limit: number): string[] {
  return files
    .filter((file) => file.path.startsWith("tests/e2e/"))
    .map((file) => ({ path: file.path, lines: setupLines(file.source) }))
    .filter(({ lines }) => lines > limit)
    .map(({ path, lines }) =>
      `${path} has ${lines} lines before its first step (at most ${limit}): build its world in testing/`
    );
}

/** Every `.ts` file under the repository's checked files and directories. */
async function repositoryFiles(root: string): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  const walk = async (path: string): Promise<void> => {
    const info = await Deno.stat(`${root}/${path}`);
    if (info.isFile) {
      if (path.endsWith(".ts")) {
        files.push({
          path,
          source: await Deno.readTextFile(`${root}/${path}`),
        });
      }
      return;
    }
    for await (const entry of Deno.readDir(`${root}/${path}`)) {
      if (entry.name.startsWith(".") || entry.isSymlink) continue;
      await walk(`${path}/${entry.name}`);
    }
  };
  for (const path of CHECKED) await walk(path);
  return files.sort((a, b) => a.path < b.path ? -1 : 1);
}

/**
 * `import`, for the fixtures' dynamic imports: written out, they would be
 * this file's own imports to the scan.
 */
const IMPORT = "import";

/** Files from `path: source` pairs. */
function tree(sources: Record<string, string>): SourceFile[] {
  return Object.entries(sources).map(([path, source]) => ({ path, source }));
}

Deno.test("relativeImports() finds static, re-export, bare and dynamic imports, not comments or packages", () => {
  const file: SourceFile = {
    path: "lib/a/x.ts",
    source: [
      "/**",
      ' * import { y } from "./in_a_comment.ts";',
      ` * await ${IMPORT}("./also_in_a_comment.ts");`,
      " */",
      'import { a, type B } from "./one.ts";',
      "import {",
      "  c,",
      "  d,",
      '} from "../b/mod.ts";',
      'import type { E } from "../c/types.ts";',
      'import * as f from "./two.ts";',
      'import g, { h } from "./three.ts";',
      'import data from "./testdata/x.json" with { type: "json" };',
      'import "./effects.ts";',
      'import { z } from "zod";',
      'export * from "./four.ts";',
      'export { i, type J } from "../d/five.ts";',
      'export type { K } from "./six.ts";',
      `const lazy = await ${IMPORT}("../e/mod.ts");`,
      `// const old = await ${IMPORT}("../f/mod.ts");`,
    ].join("\n"),
  };
  assert.deepEqual(relativeImports(file).map((i) => i.target), [
    "lib/a/one.ts",
    "lib/b/mod.ts",
    "lib/c/types.ts",
    "lib/a/two.ts",
    "lib/a/three.ts",
    "lib/a/testdata/x.json",
    "lib/a/four.ts",
    "lib/d/five.ts",
    "lib/a/six.ts",
    "lib/a/effects.ts",
    "lib/e/mod.ts",
  ]);
});

Deno.test("deepImports() flags an import of a package's inner file from outside it", () => {
  const cases: {
    name: string;
    files: Record<string, string>;
    want: string[];
  }[] = [
    {
      name: "a deep import from another package",
      files: { "lib/b/y.ts": 'import { x } from "../a/x.ts";' },
      want: [
        "lib/b/y.ts imports lib/a/x.ts; outside lib/a/ import lib/a/mod.ts",
      ],
    },
    {
      name: "a deep import from an entrypoint",
      files: { "controller.ts": 'import { x } from "./lib/a/x.ts";' },
      want: [
        "controller.ts imports lib/a/x.ts; outside lib/a/ import lib/a/mod.ts",
      ],
    },
    {
      name: "a dynamic deep import from a test helper",
      files: {
        "testing/h.ts": `const m = await ${IMPORT}("../lib/a/inner/x.ts");`,
      },
      want: [
        "testing/h.ts imports lib/a/inner/x.ts; outside lib/a/ import lib/a/mod.ts",
      ],
    },
    {
      name: "mod.ts from anywhere",
      files: {
        "lib/b/y.ts": 'import { x } from "../a/mod.ts";',
        "tests/t_test.ts": 'import { x } from "../lib/a/mod.ts";',
      },
      want: [],
    },
    {
      name: "a package's own files and tests",
      files: {
        "lib/a/x.ts": 'import { w } from "./w.ts";',
        "lib/a/x_test.ts": 'import { w } from "./w.ts";',
        "lib/a/inner/v.ts": 'import { x } from "../x.ts";',
      },
      want: [],
    },
    {
      name: "files outside lib/",
      files: { "tests/t_test.ts": 'import { f } from "../testing/f.ts";' },
      want: [],
    },
  ];
  for (const { name, files, want } of cases) {
    assert.deepEqual(deepImports(tree(files)), want, name);
  }
});

Deno.test("missingTests() flags a module with code and no test beside it", () => {
  const cases: {
    name: string;
    files: Record<string, string>;
    want: string[];
  }[] = [
    {
      name: "a function without a test",
      files: { "lib/a/x.ts": "export function x(): number {\n  return 1;\n}" },
      want: ["lib/a/x.ts has code and no x_test.ts beside it"],
    },
    {
      name: "a class, a constant, in a subdirectory",
      files: {
        "lib/a/y.ts": "/** Y. */\nexport class Y {}",
        "lib/a/inner/z.ts": "const Z = 1;\nexport { Z };",
      },
      want: [
        "lib/a/y.ts has code and no y_test.ts beside it",
        "lib/a/inner/z.ts has code and no z_test.ts beside it",
      ],
    },
    {
      name: "a module with its test",
      files: {
        "lib/a/x.ts": "export const x = 1;",
        "lib/a/x_test.ts": 'import { x } from "./x.ts";',
      },
      want: [],
    },
    {
      name: "types only, re-exports only, code in comments",
      files: {
        "lib/a/types.ts":
          "/**\n * ```ts\n * const t: T = { a: 1 };\n * ```\n */\nexport interface T {\n  a: number;\n}\nexport type U = T | undefined;",
        "lib/a/mod.ts":
          'export * from "./types.ts";\nexport { x } from "./x.ts";',
      },
      want: [],
    },
    {
      name: "code outside lib/",
      files: { "testing/h.ts": "export const h = 1;" },
      want: [],
    },
  ];
  for (const { name, files, want } of cases) {
    assert.deepEqual(missingTests(tree(files)), want, name);
  }
});

Deno.test("longModules() flags a module of lib/ over the limit, not tests or files outside lib/", () => {
  const lines = (count: number) => "const x = 1;\n".repeat(count);
  assert.deepEqual(
    longModules(
      tree({
        "lib/a/long.ts": lines(4),
        "lib/a/inner/long.ts": lines(3) + "const y = 2;",
        "lib/a/at_limit.ts": lines(3),
        "lib/a/long_test.ts": lines(10),
        "testing/long.ts": lines(10),
        "tests/long_test.ts": lines(10),
      }),
      3,
    ),
    [
      "lib/a/long.ts has 4 lines, more than 3",
      "lib/a/inner/long.ts has 4 lines, more than 3",
    ],
  );
  assert.equal(lineCount(""), 0);
  assert.equal(lineCount("a"), 1);
  assert.equal(lineCount("a\n"), 1);
  assert.equal(lineCount("a\nb"), 2);
});

Deno.test("harnessLoads() flags a unit test of lib/ that loads the harness, and fakes that start processes", () => {
  const files = tree({
    "testing/mod.ts":
      'export * from "./process.ts";\nexport * from "./fakes.ts";',
    "testing/process.ts": 'new Deno.Command("kcp");',
    "testing/fakes.ts": 'export * from "./fake_api.ts";',
    "testing/fake_api.ts": "export class FakeApi {}",
    "testing/fixtures.ts": 'import { x } from "./mod.ts";',
    "lib/a/direct_test.ts": 'import { FakeApi } from "../../testing/mod.ts";',
    "lib/a/through_test.ts": 'import { x } from "../../testing/fixtures.ts";',
    "lib/a/fakes_test.ts": 'import { FakeApi } from "../../testing/fakes.ts";',
    "lib/a/helper.ts": 'import { FakeApi } from "../../testing/mod.ts";',
    "lib/b/exempt_test.ts": 'import { FakeApi } from "../../testing/mod.ts";',
    "tests/e2e_test.ts": 'import { FakeApi } from "../testing/mod.ts";',
  });
  assert.deepEqual(harnessLoads(files, ["lib/b/"]), [
    "lib/a/direct_test.ts loads testing/mod.ts, the kcp harness; import the fakes from testing/fakes.ts",
    "lib/a/through_test.ts loads testing/mod.ts, the kcp harness; import the fakes from testing/fakes.ts",
  ]);
  assert.deepEqual(
    harnessLoads(
      tree({
        "testing/mod.ts": 'export * from "./fakes.ts";',
        "testing/process.ts": 'new Deno.Command("kcp");',
        "testing/fakes.ts":
          'export * from "./process.ts";\nimport { y } from "./mod.ts";',
      }),
      [],
    ),
    [
      "testing/fakes.ts loads testing/mod.ts, the kcp harness",
      "testing/fakes.ts loads testing/process.ts, which starts processes",
    ],
  );
});

Deno.test("importCycles() flags a cycle between files, type-only imports too", () => {
  assert.deepEqual(
    importCycles(tree({
      "lib/a/x.ts": 'import { y } from "./y.ts";',
      "lib/a/y.ts": 'import type { Z } from "./z.ts";',
      "lib/a/z.ts": 'export { x } from "./x.ts";',
      "lib/a/w.ts": 'import { x } from "./x.ts";',
    })),
    ["lib/a/x.ts -> lib/a/y.ts -> lib/a/z.ts -> lib/a/x.ts"],
  );
  assert.deepEqual(
    importCycles(tree({
      "lib/a/mod.ts": 'export * from "./x.ts";',
      "lib/a/x.ts": 'import { y } from "./y.ts";',
      "lib/a/y.ts": "export const y = 1;",
      "lib/a/x_test.ts": 'import { x } from "./mod.ts";',
    })),
    [],
  );
});

Deno.test("backArrows() flags an import from a lower layer to a higher one, and unlisted packages", () => {
  const layers = ["low", "high"];
  assert.deepEqual(
    backArrows(
      tree({
        "lib/high/h.ts": 'import { l } from "../low/mod.ts";',
        "lib/low/l.ts": 'import { h } from "../high/mod.ts";',
        "lib/low/l_test.ts": 'import { h } from "../high/mod.ts";',
        "lib/other/o.ts": 'import { l } from "../low/mod.ts";',
        "controller.ts": 'import { h } from "./lib/high/mod.ts";',
      }),
      layers,
    ),
    [
      "lib/low/l.ts imports lib/high/mod.ts: lib/high/ comes after lib/low/ in the layers",
      "lib/low/l_test.ts imports lib/high/mod.ts: lib/high/ comes after lib/low/ in the layers",
      "lib/other/ is not in the layer table",
    ],
  );
});

Deno.test("packagesWithoutMod() flags a package of lib/ without a mod.ts", () => {
  assert.deepEqual(
    packagesWithoutMod(tree({
      "lib/a/mod.ts": 'export * from "./x.ts";',
      "lib/a/x.ts": "export const x = 1;",
      "lib/b/y.ts": "export const y = 1;",
      "controller.ts": "",
    })),
    ["lib/b/ has no mod.ts"],
  );
});

Deno.test("topLevelNames() finds functions, classes and const arrow functions at the top level only", () => {
  const source = [
    "/**",
    " * function inAComment() {}",
    " */",
    "function plain(): void {}",
    "export async function exported(): Promise<void> {}",
    "async function* generator() {}",
    "export abstract class Base {}",
    "class Plain {}",
    "const arrow = (a: string): number => a.length;",
    "export const asyncArrow = async (",
    "  a: (b: string) => void,",
    "  c = (1 + 2),",
    "): Promise<{ d: number }> => {",
    "  return { d: 1 };",
    "};",
    "const bare = async x => x;",
    "const generic = <T,>(t: T): T => t;",
    "const expression = function () {};",
    "const typed: (a: number) => number = (a) => a;",
    'const ROOT = new URL("../", import.meta.url);',
    "const SUM = (1 + 2) * 3;",
    "const CALLED = (() => 1)();",
    "const LIST = [(a: number) => a];",
    'Deno.test("a test", () => {',
    "  function inside(): void {}",
    "  const insideArrow = () => 1;",
    "});",
  ].join("\n");
  assert.deepEqual([...topLevelNames(source)].sort(), [
    "Base",
    "Plain",
    "arrow",
    "asyncArrow",
    "bare",
    "exported",
    "expression",
    "generator",
    "generic",
    "plain",
    "typed",
  ]);
});

Deno.test("duplicateDefinitions() flags a name defined at the top level of two files under tests/", () => {
  const files = tree({
    "tests/e2e/a_steps.ts": [
      "export async function waitForReady(name: string): Promise<void> {}",
      "const exists = async (path: string) => true;",
      "class Harness {}",
      "function section(markdown: string): string {",
      '  return "";',
      "}",
    ].join("\n"),
    "tests/e2e/b_steps.ts":
      "async function waitForReady(kind: string): Promise<void> {}",
    "tests/docs_test.ts": [
      "function exists(url: URL): boolean {",
      "  return true;",
      "}",
      "export class Harness {}",
    ].join("\n"),
    "tests/chart_test.ts": "function section(): void {}",
  });
  assert.deepEqual(duplicateDefinitions(files, []), [
    "Harness is defined in tests/docs_test.ts, tests/e2e/a_steps.ts: define it once, in testing/, or give each its own name",
    "exists is defined in tests/docs_test.ts, tests/e2e/a_steps.ts: define it once, in testing/, or give each its own name",
    "section is defined in tests/chart_test.ts, tests/e2e/a_steps.ts: define it once, in testing/, or give each its own name",
    "waitForReady is defined in tests/e2e/a_steps.ts, tests/e2e/b_steps.ts: define it once, in testing/, or give each its own name",
  ]);
  assert.deepEqual(
    duplicateDefinitions(files, ["exists", "Harness", "section"]),
    [
      "waitForReady is defined in tests/e2e/a_steps.ts, tests/e2e/b_steps.ts: define it once, in testing/, or give each its own name",
    ],
  );
});

Deno.test("duplicateDefinitions() passes names defined once under tests/, nested, not functions, or outside tests/", () => {
  assert.deepEqual(
    duplicateDefinitions(
      tree({
        "tests/a_test.ts": [
          'import { waitFor } from "../testing/wait.ts";',
          "export function overloaded(a: string): void;",
          "export function overloaded(a: number): void;",
          "export function overloaded(a: unknown): void {}",
          'const ROOT = new URL("../", import.meta.url);',
          "/** function documented() {} */",
          'Deno.test("a", () => {',
          "  function run(): void {}",
          "});",
        ].join("\n"),
        "tests/e2e/b_steps.ts": [
          'const ROOT = new URL("../../", import.meta.url);',
          "function documented(): void {}",
          'Deno.test("b", () => {',
          "  const run = () => 1;",
          "});",
        ].join("\n"),
        "testing/wait.ts": "export function waitFor(): void {}",
        "testing/other.ts": "export function documented(): void {}",
        "lib/a/x_test.ts": "function documented(): void {}",
      }),
      [],
    ),
    [],
  );
});

Deno.test("setupLines() counts what stands before the first step, past the module doc and imports", () => {
  const header = [
    "/**",
    " * A suite.",
    " */",
    'import assert from "node:assert/strict";',
    "import {",
    "  a,",
    "  b,",
    '} from "../../testing/mod.ts";',
    'import "./side_effect.ts";',
    "",
  ];
  assert.equal(
    setupLines(
      [...header, "export async function s() {", '  await step("x", f);'].join(
        "\n",
      ),
    ),
    1,
  );
  assert.equal(
    setupLines(
      [
        ...header,
        "const W = 1;",
        "function vm() {",
        "  return {};",
        "}",
        "",
        'componentTest("n", {}, body);',
      ].join("\n"),
    ),
    5,
  );
  assert.equal(
    setupLines([...header, '  await t.step("x", f);'].join("\n")),
    0,
  );
  // Neither a property named step nor a word ending in step is a step.
  assert.equal(
    setupLines(
      [...header, "w.step(1);", "firststep(2);", "await step(3);"].join("\n"),
    ),
    2,
  );
});

Deno.test("longSetups() flags an e2e file whose world is built before its first step, not other files", () => {
  const built = [
    "function vm() {",
    "  return {};",
    "}",
    "",
    'await step("x", f);',
  ].join("\n");
  assert.deepEqual(
    longSetups(
      tree({
        "tests/e2e/a_steps.ts": built,
        "tests/e2e/b_steps.ts": 'await step("x", f);',
        "testing/a_world.ts": built,
        "tests/docs_test.ts": built,
      }),
      3,
    ),
    [
      "tests/e2e/a_steps.ts has 4 lines before its first step (at most 3): build its world in testing/",
    ],
  );
});

Deno.test("this repository keeps the house rules", async () => {
  const files = await repositoryFiles(`${import.meta.dirname}/..`);
  assert.ok(files.some((file) => file.path === "lib/runtime/mod.ts"));
  assert.ok(files.some((file) => file.path === "tests/layout_test.ts"));
  const long = longModules(files, MAX_MODULE_LINES);
  // One assertion, so that a failure shows every rule broken at once.
  assert.deepEqual({
    "imports past a mod.ts": deepImports(files),
    "modules without a test": missingTests(files),
    "modules over the line limit": long.filter((problem) =>
      !LONG_MODULES_BEING_SPLIT.some((path) => problem.startsWith(`${path} `))
    ),
    "modules split, still on LONG_MODULES_BEING_SPLIT": LONG_MODULES_BEING_SPLIT
      .filter((path) => !long.some((problem) => problem.startsWith(`${path} `)))
      .map((path) =>
        `${path} is not over ${MAX_MODULE_LINES} lines: take it off the list`
      ),
    "unit tests loading the kcp harness": harnessLoads(
      files,
      TESTS_STILL_ON_THE_HARNESS,
    ),
    "directories still on TESTS_STILL_ON_THE_HARNESS":
      TESTS_STILL_ON_THE_HARNESS
        .filter((dir) =>
          harnessLoads(files, []).every((problem) => !problem.startsWith(dir))
        )
        .map((dir) =>
          `no test under ${dir} loads ${HARNESS}: take it off the list`
        ),
    "import cycles": importCycles(files),
    "imports up the layers": backArrows(files, LAYERS),
    "packages without a mod.ts": packagesWithoutMod(files),
    "names defined in more than one file of tests/": duplicateDefinitions(
      files,
      DUPLICATES_BEING_REMOVED,
    ),
    "e2e files building their world before the first step": longSetups(
      files,
      MAX_SETUP_LINES,
    ),
    "names defined once, still on DUPLICATES_BEING_REMOVED":
      DUPLICATES_BEING_REMOVED
        .filter((name) =>
          duplicateDefinitions(files, []).every((problem) =>
            !problem.startsWith(`${name} `)
          )
        )
        .map((name) =>
          `${name} is defined in one file of tests/ at most: take it off the list`
        ),
  }, {
    "imports past a mod.ts": [],
    "modules without a test": [],
    "modules over the line limit": [],
    "modules split, still on LONG_MODULES_BEING_SPLIT": [],
    "unit tests loading the kcp harness": [],
    "directories still on TESTS_STILL_ON_THE_HARNESS": [],
    "import cycles": [],
    "imports up the layers": [],
    "packages without a mod.ts": [],
    "names defined in more than one file of tests/": [],
    "e2e files building their world before the first step": [],
    "names defined once, still on DUPLICATES_BEING_REMOVED": [],
  });
  assert.deepEqual(
    [...new Set(files.map((file) => packageOf(file.path)))]
      .filter((pkg) => pkg !== undefined).sort(),
    [...LAYERS].sort(),
    "the layer table names every package of lib/, and only those",
  );
  const architecture = await Deno.readTextFile(
    `${import.meta.dirname}/../docs/architecture.md`,
  );
  assert.deepEqual(
    [...architecture.matchAll(/^\| `lib\/([^/`]+)\/` +\|/gm)].map((m) => m[1]),
    LAYERS,
    "docs/architecture.md's package table is in the order of LAYERS",
  );
});
