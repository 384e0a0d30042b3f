/**
 * The image build is hermetic: the Containerfile's builder stage, replayed
 * here from a cold DENO_DIR, needs the network only for its `deno install`
 * step; after it, every entrypoint that a `deno compile` line builds starts
 * from that cache alone, with `--frozen --cached-only` and no network.
 *
 * The image itself cannot be built on this machine or in CI (`deno compile`
 * downloads its runtime, denort, from dl.deno.land), so everything here is
 * read from the Containerfile: which files the builder copies and where, the
 * install and compile commands with their flags, the runtime stage. When the
 * Containerfile drifts (a file not copied, a flag dropped, a third entrypoint,
 * an instruction this test does not model), a test fails.
 */
import assert from "node:assert/strict";
import { basename, posix } from "node:path";
import { type CommandResult, runCommand } from "./harness/process.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const CONTAINERFILE = `${ROOT}Containerfile`;
const DENO_SH = `${ROOT}scripts/deno.sh`;
/** What the image ships: one `deno compile` per entrypoint. */
const ENTRYPOINTS = ["controller.ts", "webhook.ts"];

// ---------------------------------------------------------------------------
// Containerfile model

/** One instruction after joining backslash-continued lines. */
interface Instruction {
  keyword: string;
  args: string;
  /** 1-based line where the instruction starts. */
  line: number;
}

interface Stage {
  /** The base image, with ARG references resolved. */
  image: string;
  /** The `AS` name (lower case), if any. */
  name: string | undefined;
  /** ARGs declared in the stage, with their values (global default if any). */
  args: Map<string, string | undefined>;
  instructions: Instruction[];
  line: number;
}

/** A `deno compile` command of the builder stage. */
interface CompileCommand {
  /** The flags in order, each with its value when given as a separate word. */
  flags: string[][];
  /** `-A`, `--allow-*`, `--deny-*`. */
  permissions: string[];
  /** `--unstable-*`. */
  unstable: string[];
  /** `--v8-flags=...`. */
  v8Flags: string[];
  output: string;
  entrypoint: string;
  /** Words after the entrypoint, which the binary receives first. */
  scriptArgs: string[];
}

type BuildStep =
  | { kind: "copy"; sources: string[]; dest: string; workdir: string }
  | { kind: "install"; argv: string[]; workdir: string }
  | { kind: "compile"; compile: CompileCommand; workdir: string };

interface Containerfile {
  globalArgs: Map<string, string | undefined>;
  /** The stage the runtime stage copies from, as replayable steps. */
  builder: Stage & { steps: BuildStep[] };
  /** The last stage: the image that is shipped. */
  runtime: Stage;
}

/** Flags of `deno compile` that may take their value as the next word. */
const VALUE_FLAGS = new Set([
  "--output",
  "-o",
  "--target",
  "--include",
  "--exclude",
  "--icon",
  "--config",
  "-c",
  "--import-map",
  "--lock",
  "--cert",
  "--location",
  "--seed",
  "--ext",
  "--preload",
  "--require",
  "--conditions",
]);
/** Flags only `deno compile` has: dropped when running the entrypoint. */
const COMPILE_ONLY_FLAGS = new Set([
  "--output",
  "-o",
  "--target",
  "--include",
  "--exclude",
  "--icon",
  "--no-terminal",
  "--self-extracting",
]);
/** Flags of a compile that also shape its type check (`deno check`). */
const CHECK_FLAGS = new Set([
  "--frozen",
  "--cached-only",
  "--config",
  "-c",
  "--import-map",
  "--lock",
  "--no-lock",
  "--no-remote",
  "--no-npm",
  "--node-modules-dir",
  "--vendor",
  "--cert",
]);
/** Instructions of the builder stage this test knows how to replay. */
const BUILDER_INSTRUCTIONS = new Set([
  "WORKDIR",
  "ARG",
  "LABEL",
  "COPY",
  "RUN",
]);

function fail(line: number, message: string): never {
  throw new Error(`Containerfile:${line}: ${message}`);
}

/** Joins backslash-continued lines and drops comment and blank lines. */
function instructions(text: string): Instruction[] {
  if (/^#\s*escape\s*=/im.test(text)) {
    fail(1, "an `# escape=` directive is not modelled by this test");
  }
  const out: Instruction[] = [];
  let current: string | undefined;
  let start = 0;
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    const trimmed = raw.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const continued = /\\\s*$/.test(raw);
    const body = continued ? raw.replace(/\\\s*$/, "") : raw;
    if (current === undefined) {
      current = body;
      start = index + 1;
    } else {
      current += body;
    }
    if (!continued) {
      const match = /^([A-Za-z]+)(?:\s+([\s\S]*))?$/.exec(current.trim());
      if (!match) fail(start, `cannot read the instruction ${current.trim()}`);
      out.push({
        keyword: match[1]!.toUpperCase(),
        args: (match[2] ?? "").trim(),
        line: start,
      });
      current = undefined;
    }
  }
  if (current !== undefined) fail(start, "a continued line ends the file");
  return out;
}

/** Resolves `$NAME` and `${NAME}`; anything unresolved is an error. */
function substitute(
  text: string,
  vars: Map<string, string | undefined>,
  line: number,
): string {
  const resolved = text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_, braced: string | undefined, bare: string | undefined) => {
      const name = (braced ?? bare)!;
      const value = vars.get(name);
      if (value === undefined) fail(line, `$${name} has no value`);
      return value;
    },
  );
  if (resolved.includes("$")) {
    fail(line, `cannot resolve the variable reference in ${text}`);
  }
  return resolved;
}

function unquote(value: string): string {
  const match = /^"(.*)"$|^'(.*)'$/.exec(value);
  return match ? (match[1] ?? match[2])! : value;
}

/** `ARG NAME[=default]`, one per instruction. */
function parseArg(
  instruction: Instruction,
): [name: string, value: string | undefined] {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?$/.exec(instruction.args);
  if (!match) fail(instruction.line, `cannot read ARG ${instruction.args}`);
  return [match[1]!, match[2] === undefined ? undefined : unquote(match[2])];
}

/**
 * Splits a RUN's shell form into the commands it joins with `&&`. Anything
 * else a shell would interpret (pipes, `;`, `||`, redirections, variables,
 * globs, subshells) is refused: its effect is not modelled by the replay.
 */
function shellCommands(script: string, line: number): string[][] {
  const commands: string[][] = [[]];
  let word: string | undefined;
  const endWord = () => {
    if (word !== undefined) commands.at(-1)!.push(word);
    word = undefined;
  };
  for (let i = 0; i < script.length; i++) {
    const c = script[i]!;
    if (/\s/.test(c)) {
      endWord();
    } else if (c === "&" && script[i + 1] === "&") {
      endWord();
      if (commands.at(-1)!.length === 0) fail(line, "`&&` without a command");
      commands.push([]);
      i++;
    } else if (c === "'") {
      const close = script.indexOf("'", i + 1);
      if (close < 0) fail(line, "unterminated single quote");
      word = (word ?? "") + script.slice(i + 1, close);
      i = close;
    } else if (c === '"') {
      let quoted = "";
      let j = i + 1;
      for (; j < script.length && script[j] !== '"'; j++) {
        let d = script[j]!;
        if (d === "\\" && '"\\$`'.includes(script[j + 1] ?? "")) {
          d = script[++j]!;
        } else if (d === "$" || d === "`") {
          fail(line, `shell expansion in ${script} is not modelled`);
        }
        quoted += d;
      }
      if (j >= script.length) fail(line, "unterminated double quote");
      word = (word ?? "") + quoted;
      i = j;
    } else if (c === "\\") {
      if (i + 1 >= script.length) fail(line, "a backslash ends the command");
      word = (word ?? "") + script[++i];
    } else if (
      "|;<>()&`$*?[]{}".includes(c) ||
      (word === undefined && (c === "#" || c === "~"))
    ) {
      fail(line, `the shell syntax \`${c}\` in ${script} is not modelled`);
    } else {
      word = (word ?? "") + c;
    }
  }
  endWord();
  if (commands.at(-1)!.length === 0) fail(line, `empty command in ${script}`);
  return commands;
}

/** The words of a shell-form or exec-form (JSON array) instruction. */
function runCommands(args: string, line: number): string[][] {
  if (args.startsWith("--")) {
    fail(line, `RUN flags are not modelled: ${args}`);
  }
  if (args.startsWith("<<")) fail(line, "a RUN heredoc is not modelled");
  if (args.startsWith("[")) {
    const argv: unknown = JSON.parse(args);
    if (
      !Array.isArray(argv) || argv.length === 0 ||
      !argv.every((a) => typeof a === "string")
    ) {
      fail(line, `cannot read the exec form ${args}`);
    }
    return [argv as string[]];
  }
  return shellCommands(args, line);
}

function parseCompile(argv: string[], line: number): CompileCommand {
  const flags: string[][] = [];
  let entrypoint: string | undefined;
  let scriptArgs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === "--") fail(line, "`--` in deno compile is not modelled");
    if (!word.startsWith("-")) {
      entrypoint = word;
      scriptArgs = argv.slice(i + 1);
      break;
    }
    const name = word.split("=")[0]!;
    if (VALUE_FLAGS.has(name) && !word.includes("=")) {
      const value = argv[++i];
      if (value === undefined) fail(line, `${name} without a value`);
      flags.push([word, value]);
    } else {
      flags.push([word]);
    }
  }
  if (entrypoint === undefined) fail(line, "deno compile has no entrypoint");
  const names = flags.map(nameOf);
  const outputs = flags.filter((f) => ["--output", "-o"].includes(nameOf(f)));
  if (outputs.length !== 1) {
    fail(line, `deno compile ${entrypoint} needs exactly one --output`);
  }
  const output = outputs[0]![1] ?? outputs[0]![0]!.replace(/^[^=]*=/, "");
  return {
    flags,
    permissions: flags.map((f) => f[0]!).filter((w) =>
      /^(-A|--allow-.*|--deny-.*)$/.test(w.split("=")[0]!)
    ),
    unstable: names.filter((n) => n.startsWith("--unstable")),
    v8Flags: flags.map((f) => f[0]!).filter((w) => w.startsWith("--v8-flags=")),
    output,
    entrypoint: posix.normalize(entrypoint),
    scriptArgs,
  };
}

function nameOf(flag: string[]): string {
  return flag[0]!.split("=")[0]!;
}

/** `deno run` arguments equivalent to a compile, minus compile-only flags. */
function runArgs(compile: CompileCommand, extra: string[]): string[] {
  return [
    "run",
    ...compile.flags.filter((f) => !COMPILE_ONLY_FLAGS.has(nameOf(f))).flat(),
    compile.entrypoint,
    ...compile.scriptArgs,
    ...extra,
  ];
}

/** The type check `deno compile` does first, unless told `--no-check`. */
function checkArgs(compile: CompileCommand): string[] | undefined {
  const names = compile.flags.map(nameOf);
  if (names.includes("--no-check")) return undefined;
  return [
    "check",
    ...compile.flags.filter((f) =>
      CHECK_FLAGS.has(nameOf(f)) || nameOf(f).startsWith("--unstable")
    ).flat(),
    compile.entrypoint,
  ];
}

/** The builder stage as steps to replay, in order; strict about the rest. */
function builderSteps(stage: Stage): BuildStep[] {
  const steps: BuildStep[] = [];
  let workdir = "/";
  for (const instruction of stage.instructions) {
    const { keyword, line } = instruction;
    if (!BUILDER_INSTRUCTIONS.has(keyword)) {
      fail(line, `${keyword} in the builder stage is not modelled`);
    }
    const args = keyword === "ARG"
      ? instruction.args
      : substitute(instruction.args, stage.args, line);
    if (keyword === "WORKDIR") {
      workdir = posix.resolve(workdir, unquote(args));
    } else if (keyword === "COPY") {
      let words: string[];
      if (args.startsWith("[")) {
        words = JSON.parse(args) as string[];
      } else {
        words = args.split(/\s+/);
        while (words[0]?.startsWith("--")) {
          const flag = words.shift()!;
          if (!/^--(chown|chmod)=|^--link$/.test(flag)) {
            fail(line, `COPY ${flag} is not modelled`);
          }
        }
      }
      if (words.length < 2) fail(line, `COPY needs a source and a dest`);
      steps.push({
        kind: "copy",
        sources: words.slice(0, -1),
        dest: words.at(-1)!,
        workdir,
      });
    } else if (keyword === "RUN") {
      for (const argv of runCommands(args, line)) {
        const [program, subcommand, ...rest] = argv;
        if (program !== "deno") {
          fail(line, `the command ${argv.join(" ")} is not modelled`);
        }
        if (subcommand === "install") {
          steps.push({ kind: "install", argv: argv.slice(1), workdir });
        } else if (subcommand === "compile") {
          steps.push({
            kind: "compile",
            compile: parseCompile(rest, line),
            workdir,
          });
        } else {
          fail(line, `deno ${subcommand} is not modelled`);
        }
      }
    }
  }
  if (!steps.some((s) => s.kind === "copy")) {
    fail(stage.line, "the builder stage has no COPY line");
  }
  if (steps.filter((s) => s.kind === "install").length !== 1) {
    fail(stage.line, "the builder stage needs exactly one `deno install`");
  }
  if (!steps.some((s) => s.kind === "compile")) {
    fail(stage.line, "the builder stage has no `deno compile` command");
  }
  return steps;
}

/** `COPY --from=<stage>` sources of a stage, by stage reference. */
function copiesFrom(stage: Stage): { from: string; sources: string[] }[] {
  return stage.instructions.filter((i) => i.keyword === "COPY").flatMap(
    (i) => {
      const words = i.args.split(/\s+/);
      const from = words.find((w) => w.startsWith("--from="));
      if (from === undefined) return [];
      const paths = words.filter((w) => !w.startsWith("--"));
      return [{
        from: from.slice(7).toLowerCase(),
        sources: paths.slice(0, -1),
      }];
    },
  );
}

function parseContainerfile(text: string): Containerfile {
  const globalArgs = new Map<string, string | undefined>();
  const stages: Stage[] = [];
  for (const instruction of instructions(text)) {
    const { keyword, line } = instruction;
    if (keyword === "FROM") {
      const words = instruction.args.split(/\s+/).filter((w) =>
        !w.startsWith("--platform=")
      );
      const named = words.length === 3 && words[1]!.toUpperCase() === "AS";
      if (words.length !== 1 && !named) {
        fail(line, `cannot read FROM ${instruction.args}`);
      }
      stages.push({
        image: substitute(words[0]!, globalArgs, line),
        name: named ? words[2]!.toLowerCase() : undefined,
        args: new Map(),
        instructions: [],
        line,
      });
    } else if (stages.length === 0) {
      if (keyword !== "ARG") fail(line, `${keyword} before the first FROM`);
      const [name, value] = parseArg(instruction);
      globalArgs.set(name, value);
    } else {
      const stage = stages.at(-1)!;
      if (keyword === "ARG") {
        const [name, value] = parseArg(instruction);
        stage.args.set(name, value ?? globalArgs.get(name));
      }
      stage.instructions.push(instruction);
    }
  }
  const runtime = stages.at(-1);
  if (runtime === undefined) fail(1, "no FROM");
  const froms = [...new Set(copiesFrom(runtime).map((c) => c.from))];
  if (froms.length !== 1) {
    fail(runtime.line, "the runtime stage must copy from one builder stage");
  }
  const builder = stages.find((s, i) =>
    s !== runtime && (s.name === froms[0] || String(i) === froms[0])
  );
  if (builder === undefined) {
    fail(runtime.line, `no stage named ${froms[0]} to copy from`);
  }
  return {
    globalArgs,
    builder: { ...builder, steps: builderSteps(builder) },
    runtime,
  };
}

async function loadContainerfile(): Promise<Containerfile> {
  return parseContainerfile(await Deno.readTextFile(CONTAINERFILE));
}

function compiles(containerfile: Containerfile): CompileCommand[] {
  return containerfile.builder.steps.flatMap((s) =>
    s.kind === "compile" ? [s.compile] : []
  );
}

// ---------------------------------------------------------------------------
// Replay helpers

interface Result extends CommandResult {
  argv: string[];
}

async function exec(
  argv: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<Result> {
  const [program, ...args] = argv;
  const result = await runCommand(program!, args, {
    cwd,
    env: { NO_COLOR: "1", KUBECONFIG: "", ...env },
  });
  return { argv, ...result };
}

function describe(result: Result): string {
  return [
    `$ ${result.argv.join(" ")}`,
    `exit code ${result.code}`,
    `stdout:\n${result.stdout.slice(-2000)}`,
    `stderr:\n${result.stderr.slice(-4000)}`,
  ].join("\n");
}

interface Isolation {
  name: string;
  wrap(argv: string[]): string[];
  env: Record<string, string>;
}

/** A network namespace with no interfaces, else a proxy that refuses all. */
async function networkIsolation(): Promise<Isolation> {
  try {
    const { code } = await runCommand("unshare", ["--net", "--", "true"]);
    if (code === 0) {
      return {
        name: "unshare --net (empty network namespace)",
        wrap: (argv) => ["unshare", "--net", "--", ...argv],
        env: {},
      };
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const proxy = "http://127.0.0.1:9";
  return {
    name: `HTTP(S)_PROXY=${proxy} (unshare --net is not usable here)`,
    wrap: (argv) => argv,
    env: {
      HTTPS_PROXY: proxy,
      HTTP_PROXY: proxy,
      https_proxy: proxy,
      http_proxy: proxy,
      NO_PROXY: "",
      no_proxy: "",
    },
  };
}

/** Copies a file, symlink or directory tree (contents and all). */
async function copyTree(source: string, target: string): Promise<void> {
  const info = await Deno.lstat(source);
  if (info.isDirectory) {
    await Deno.mkdir(target, { recursive: true });
    for await (const entry of Deno.readDir(source)) {
      await copyTree(`${source}/${entry.name}`, `${target}/${entry.name}`);
    }
    return;
  }
  await Deno.mkdir(posix.dirname(target), { recursive: true });
  if (info.isSymlink) {
    await Deno.symlink(await Deno.readLink(source), target);
  } else {
    await Deno.copyFile(source, target);
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Docker's COPY from the build context (the project root) into `rootfs`. */
async function applyCopy(
  step: Extract<BuildStep, { kind: "copy" }>,
  rootfs: string,
): Promise<void> {
  const dest = posix.resolve(step.workdir, step.dest);
  const destIsDirectory = step.dest.endsWith("/") ||
    step.sources.length > 1 || await isDirectory(`${rootfs}${dest}`);
  for (const source of step.sources) {
    if (/[*?[\]]/.test(source)) {
      throw new Error(`COPY ${source}: wildcards are not modelled`);
    }
    const relative = posix.normalize(source).replace(/^\/+/, "");
    if (relative === ".." || relative.startsWith("../")) {
      throw new Error(`COPY ${source} leaves the build context`);
    }
    const from = `${ROOT}${relative === "." ? "" : relative}`;
    if (await isDirectory(from)) {
      await copyTree(from, `${rootfs}${dest}`);
    } else {
      await Deno.stat(from); // a missing source fails the build
      await copyTree(
        from,
        destIsDirectory
          ? `${rootfs}${dest}/${posix.basename(relative)}`
          : `${rootfs}${dest}`,
      );
    }
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

// ---------------------------------------------------------------------------
// Tests

Deno.test("Containerfile builder stage: COPY lines, one frozen `deno install`, and a frozen cached-only `deno compile` per entrypoint", async () => {
  const containerfile = await loadContainerfile();
  const { steps } = containerfile.builder;
  const copies = steps.flatMap((s) => s.kind === "copy" ? s.sources : []);
  assert.ok(copies.length > 0, "the builder stage copies nothing");
  const install = steps.flatMap((s) => s.kind === "install" ? [s.argv] : []);
  assert.equal(install.length, 1);
  assert.ok(
    install[0]!.includes("--frozen"),
    "`deno install` must be --frozen so the lockfile alone decides",
  );
  const commands = compiles(containerfile);
  assert.deepEqual(
    commands.map((c) => c.entrypoint).sort(),
    ENTRYPOINTS,
    "the compile commands must cover exactly the shipped entrypoints",
  );
  const outputs = commands.map((c) => c.output);
  assert.equal(new Set(outputs).size, outputs.length, "duplicate --output");
  for (const command of commands) {
    const names = command.flags.map(nameOf);
    for (const flag of ["--frozen", "--cached-only"]) {
      assert.ok(
        names.includes(flag),
        `deno compile ${command.entrypoint} lacks ${flag}`,
      );
    }
    assert.ok(
      command.permissions.length > 0,
      `deno compile ${command.entrypoint} grants no permissions`,
    );
    assert.deepEqual(command.scriptArgs, []);
  }
});

Deno.test("Containerfile runtime stage: distroless, non-root, with both compiled binaries from the builder stage", async () => {
  const containerfile = await loadContainerfile();
  const { runtime, builder } = containerfile;
  assert.notEqual(runtime.line, builder.line, "the builder is the last stage");
  assert.match(runtime.image, /(^|\/)distroless\//);
  const users = runtime.instructions.filter((i) => i.keyword === "USER");
  const tag = /:([^:/@]+)(@.*)?$/.exec(runtime.image)?.[1] ?? "latest";
  if (users.length > 0) {
    const user = users.at(-1)!.args.split(":")[0]!;
    assert.ok(
      /^[1-9][0-9]*$/.test(user) || user === "nonroot",
      `USER ${users.at(-1)!.args} is not a non-root user`,
    );
  } else {
    assert.ok(
      tag === "nonroot" || tag.endsWith("-nonroot"),
      `no USER and ${runtime.image} is not a :nonroot tag`,
    );
  }
  const copied = copiesFrom(runtime).flatMap((c) => c.sources);
  for (const command of compiles(containerfile)) {
    assert.ok(
      copied.includes(command.output),
      `the runtime stage does not copy ${command.output} (${command.entrypoint})`,
    );
  }
});

Deno.test("Containerfile builder stage uses the Deno version scripts/deno.sh pins, which runs this test", async () => {
  const containerfile = await loadContainerfile();
  const pinned = /^version="([^"]+)"$/m.exec(
    await Deno.readTextFile(DENO_SH),
  )?.[1];
  assert.ok(pinned, "scripts/deno.sh pins no version");
  const declared = [
    containerfile.globalArgs.get("DENO_VERSION"),
    ...containerfile.builder.args.has("DENO_VERSION")
      ? [containerfile.builder.args.get("DENO_VERSION")]
      : [],
  ];
  for (const version of declared) {
    assert.equal(version, pinned, "ARG DENO_VERSION differs from deno.sh");
  }
  assert.match(
    containerfile.builder.image,
    new RegExp(
      `^(docker\\.io/)?denoland/deno:([a-z0-9]+-)?${
        pinned.replaceAll(".", "\\.")
      }$`,
    ),
  );
  assert.equal(
    Deno.version.deno,
    pinned,
    "run this test with scripts/deno.sh: the replay proves nothing for another Deno",
  );
});

Deno.test("Containerfile parser refuses a builder stage it cannot replay", () => {
  const valid = [
    "# a comment",
    "ARG DENO_VERSION=2.9.6",
    "FROM docker.io/denoland/deno:debian-${DENO_VERSION} AS build",
    "WORKDIR /src",
    "COPY deno.json deno.lock ./",
    "RUN deno install --frozen",
    "COPY controller.ts ./",
    "RUN deno compile --frozen --cached-only --v8-flags=--a=2 --allow-net \\",
    "      --output /out/controller controller.ts \\",
    " && deno compile --frozen --cached-only -A --unstable-net \\",
    "      -o /out/w ./webhook.ts",
    "FROM gcr.io/distroless/cc-debian12:nonroot",
    "COPY --from=build /out/controller /usr/local/bin/",
  ].join("\n");
  const parsed = parseContainerfile(valid);
  assert.equal(parsed.builder.image, "docker.io/denoland/deno:debian-2.9.6");
  assert.deepEqual(
    compiles(parsed).map((c) => [
      c.entrypoint,
      c.output,
      c.permissions,
      c.unstable,
      c.v8Flags,
    ]),
    [
      ["controller.ts", "/out/controller", ["--allow-net"], [], [
        "--v8-flags=--a=2",
      ]],
      ["webhook.ts", "/out/w", ["-A"], ["--unstable-net"], []],
    ],
  );
  const without = (pattern: RegExp) =>
    valid.split("\n").filter((l) => !pattern.test(l)).join("\n");
  const cases: [string, string, RegExp][] = [
    ["no COPY line", without(/^COPY (deno|controller)/), /no COPY line/],
    [
      "no compile",
      without(/compile|--output|-o \/out/),
      /no `deno compile`/,
    ],
    ["no install", without(/deno install/), /exactly one `deno install`/],
    [
      "a pipe",
      valid.replace("RUN deno install --frozen", "RUN deno install | cat"),
      /shell syntax `\|`/,
    ],
    [
      "a `;`",
      valid.replace("--frozen\n", "--frozen; true\n"),
      /shell syntax `;`/,
    ],
    ["ENV", valid.replace("WORKDIR /src", "ENV DENO_DIR=/x"), /ENV in the/],
    ["another command", valid.replace("deno install", "npm ci"), /npm ci/],
    [
      "no --output",
      valid.replace("-o /out/w", ""),
      /exactly one --output/,
    ],
    ["no runtime COPY", without(/--from=build/), /copy from one builder/],
  ];
  for (const [what, text, error] of cases) {
    assert.throws(() => parseContainerfile(text), error, what);
  }
});

Deno.test("Containerfile builder stage replayed from a cold DENO_DIR: after `deno install`, each compiled entrypoint prints its usage with no network; an empty DENO_DIR cannot", async () => {
  const containerfile = await loadContainerfile();
  for (const ignore of [".dockerignore", ".containerignore"]) {
    await assert.rejects(
      Deno.stat(`${ROOT}${ignore}`),
      Deno.errors.NotFound,
      `${ignore} shapes the build context; this test does not model it`,
    );
  }
  const deno = Deno.execPath();
  const isolation = await networkIsolation();
  console.log(`network isolation: ${isolation.name}`);
  const tmp = await Deno.makeTempDir({ prefix: "hermetic-build-" });
  try {
    const rootfs = `${tmp}/rootfs`;
    const denoDir = `${tmp}/deno-dir`;
    await Deno.mkdir(denoDir);

    // The isolation really cuts the registry `deno install` reaches.
    const registry = Deno.env.get("NPM_CONFIG_REGISTRY") ??
      "https://registry.npmjs.org/";
    const probe = await exec(
      isolation.wrap([
        deno,
        "eval",
        `try { await fetch(${
          JSON.stringify(registry)
        }); console.log("reachable"); } catch { console.log("unreachable"); }`,
      ]),
      tmp,
      { DENO_DIR: `${tmp}/probe-deno-dir`, ...isolation.env },
    );
    assert.equal(probe.stdout.trim(), "unreachable", describe(probe));

    let offlineRuns = 0;
    for (const [index, step] of containerfile.builder.steps.entries()) {
      const cwd = `${rootfs}${step.workdir}`;
      await Deno.mkdir(cwd, { recursive: true });
      const started = performance.now();
      if (step.kind === "copy") {
        await applyCopy(step, rootfs);
        continue;
      }
      if (step.kind === "install") {
        const install = await exec([deno, ...step.argv], cwd, {
          DENO_DIR: denoDir,
        });
        assert.equal(install.code, 0, describe(install));
        console.log(
          `deno ${step.argv.join(" ")} (network): ${
            seconds(performance.now() - started)
          }`,
        );
        continue;
      }
      const { compile } = step;
      const name = basename(compile.entrypoint, ".ts");
      const offline = (dir: string, argv: string[]) =>
        exec(isolation.wrap([deno, ...argv]), cwd, {
          DENO_DIR: dir,
          ...isolation.env,
        });

      const warm = await offline(denoDir, runArgs(compile, ["--help"]));
      assert.equal(warm.code, 0, describe(warm));
      assert.match(
        warm.stdout,
        new RegExp(`^Usage: ${name}(\\s|$)`),
        describe(warm),
      );
      const check = checkArgs(compile);
      if (check !== undefined) {
        const checked = await offline(denoDir, check);
        assert.equal(checked.code, 0, describe(checked));
      }
      console.log(
        `${compile.entrypoint}: deno run --help${
          check ? " and deno check" : ""
        } offline: ${seconds(performance.now() - started)}`,
      );

      // Negative control: the same run without the cache must fail.
      const emptyDir = `${tmp}/empty-deno-dir-${index}`;
      await Deno.mkdir(emptyDir);
      const cold = await offline(emptyDir, runArgs(compile, ["--help"]));
      assert.notEqual(cold.code, 0, describe(cold));
      assert.match(cold.stderr, /--cached-only/, describe(cold));
      offlineRuns++;
    }
    assert.equal(offlineRuns, compiles(containerfile).length);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
