/**
 * The Containerfile as a model the tests can check and replay: its stages,
 * the builder's COPY, `deno install` and `deno compile` steps (strictly: an
 * instruction it does not model is an error naming the line), and what the
 * runtime stage copies from the builder.
 *
 * @module
 */
import { posix } from "node:path";

const ROOT = new URL("../", import.meta.url).pathname;
const CONTAINERFILE = `${ROOT}Containerfile`;

/** One instruction after joining backslash-continued lines. */
export interface Instruction {
  keyword: string;
  args: string;
  /** 1-based line where the instruction starts. */
  line: number;
}

/** One stage: FROM up to the next FROM. */
export interface Stage {
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
export interface CompileCommand {
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

/** One replayable step of the builder stage. */
export type BuildStep =
  | { kind: "copy"; sources: string[]; dest: string; workdir: string }
  | { kind: "install"; argv: string[]; workdir: string }
  | { kind: "compile"; compile: CompileCommand; workdir: string };

/** The parsed Containerfile: what its builder does and what ships. */
export interface Containerfile {
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

/** The name of a parsed flag (`--output` for `["--output", "x"]` or `--output=x`). */
export function nameOf(flag: string[]): string {
  return flag[0]!.split("=")[0]!;
}

/** `deno run` arguments equivalent to a compile, minus compile-only flags. */
export function runArgs(compile: CompileCommand, extra: string[]): string[] {
  return [
    "run",
    ...compile.flags.filter((f) => !COMPILE_ONLY_FLAGS.has(nameOf(f))).flat(),
    compile.entrypoint,
    ...compile.scriptArgs,
    ...extra,
  ];
}

/** The type check `deno compile` does first, unless told `--no-check`. */
export function checkArgs(compile: CompileCommand): string[] | undefined {
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

/** A `COPY --from=<stage>` of a stage. */
export interface CopyFrom {
  /** The stage copied from (its name, lower case, or index). */
  from: string;
  /** Paths in that stage. */
  sources: string[];
  /** Where they go in this stage. */
  dest: string;
}

/** `COPY --from=<stage>` instructions of a stage, in order. */
export function copiesFrom(stage: Stage): CopyFrom[] {
  return stage.instructions.filter((i) => i.keyword === "COPY").flatMap(
    (i) => {
      const words = i.args.split(/\s+/);
      const from = words.find((w) => w.startsWith("--from="));
      if (from === undefined) return [];
      const paths = words.filter((w) => !w.startsWith("--"));
      return [{
        from: from.slice(7).toLowerCase(),
        sources: paths.slice(0, -1),
        dest: paths.at(-1) ?? "",
      }];
    },
  );
}

/**
 * Parses a Containerfile's text.
 *
 * @throws {Error} Naming the line of anything it cannot model.
 */
export function parseContainerfile(text: string): Containerfile {
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

/** Parses the project's Containerfile. */
export async function loadContainerfile(): Promise<Containerfile> {
  return parseContainerfile(await Deno.readTextFile(CONTAINERFILE));
}

/** The builder's `deno compile` commands, in order. */
export function compiles(containerfile: Containerfile): CompileCommand[] {
  return containerfile.builder.steps.flatMap((s) =>
    s.kind === "compile" ? [s.compile] : []
  );
}
