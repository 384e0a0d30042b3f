/**
 * `kubectl dependencies`: the command line ({@linkcode main}). It takes the
 * kubeconfig flags every command shares (`--kubeconfig`, `--context`,
 * `-n/--namespace`) wherever they stand, picks the command (`why`, `lock`,
 * `unlock`, `graph`, `help`), builds the context from the user's kubeconfig
 * and nothing else, runs the command with the rest of the arguments (its
 * own flags, such as `-o/--output`), and turns a failure into a message on
 * stderr and an exit code.
 *
 * @module
 */
import { errorText, printable } from "../runtime/mod.ts";
import {
  EXIT_ERROR,
  EXIT_OK,
  type KubeconfigFlags,
  type PluginContext,
  pluginContext,
  PluginError,
  type PluginIo,
} from "./context.ts";
import { DryRunDeleter } from "./dry_run.ts";
import { GRAPH_USAGE, graphCommand, parseGraphArgs } from "./graph_command.ts";
import { lockCommand, unlockCommand } from "./lock_command.ts";
import {
  LOCK_USAGE,
  parseLockArgs,
  parseUnlockArgs,
  UNLOCK_USAGE,
} from "./lock_object.ts";
import { parseWhyArgs, WHY_USAGE, whyCommand } from "./why.ts";

/** One command of the plugin. */
export interface PluginCommand {
  /** One line for the command list of `help`. */
  summary: string;
  /** Its `--help`. */
  usage: string;
  /**
   * Checks its arguments before the context is built, so that a usage
   * error is named before a kubeconfig problem.
   *
   * @throws {PluginError} On a usage error.
   */
  check?(args: readonly string[]): void;
  /**
   * Runs it with its arguments (after the command name, without the
   * kubeconfig flags) and returns the exit code.
   */
  run(args: string[], context: PluginContext): Promise<number>;
}

/** The commands of `kubectl dependencies`, by name. */
export const COMMANDS: Readonly<Record<string, PluginCommand>> = {
  why: {
    summary: "Say what holds an object: dependents, owners, Locks",
    usage: WHY_USAGE,
    check: (args) => void parseWhyArgs(args),
    run: runWhy,
  },
  lock: {
    summary: "Lock an object against deletion, with a reason",
    usage: LOCK_USAGE,
    check: (args) => void parseLockArgs(args, { now: Date.now() }),
    run: (args, context) => lockCommand(context, args),
  },
  unlock: {
    summary: "Delete the Locks that hold an object",
    usage: UNLOCK_USAGE,
    check: (args) => void parseUnlockArgs(args),
    run: (args, context) => unlockCommand(context, args),
  },
  graph: {
    summary: "Draw the DependencyRules of the workspace as a graph of types",
    usage: GRAPH_USAGE,
    check: (args) => void parseGraphArgs(args),
    run: (args, context) => graphCommand(context, args),
  },
};

/** `kubectl dependencies --help`, for `commands`. */
export function helpText(
  commands: Readonly<Record<string, PluginCommand>> = COMMANDS,
): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length), 4) +
    2;
  const rows = Object.entries(commands).map(([name, c]) =>
    `  ${name.padEnd(width)}${c.summary}`
  );
  return `Usage: kubectl dependencies <command> [flags]

Why a kcp object cannot be deleted, and Locks that keep it, in the workspace
of your kubeconfig's context, as you.

Commands:
${rows.join("\n")}
  ${"help".padEnd(width)}This help, or a command's (help <command>)

Flags of every command:
  --kubeconfig <path>    The kubeconfig (default $KUBECONFIG, else ~/.kube/config)
  --context <name>       The kubeconfig's context (default its current context)
  -n, --namespace <ns>   The namespace (default the context's, else "default")
  -h, --help             Help

Exit codes: 0 done (nothing holds the object), 1 held (or not in effect),
2 a usage, access or server error.

Run 'kubectl dependencies <command> --help' for a command's flags.
`;
}

/** The command line, split: the kubeconfig flags, the command, the rest. */
export interface SplitArgs {
  /** `--kubeconfig`, `--context`, `-n/--namespace`. */
  flags: KubeconfigFlags;
  /** The first word that is no flag, if any. */
  command?: string;
  /** The other arguments, in order. */
  rest: string[];
  /** Whether `-h` or `--help` is among them (before any `--`). */
  help: boolean;
}

/** The kubeconfig flags, by every name they take. */
const GLOBAL_FLAGS: Readonly<Record<string, keyof KubeconfigFlags>> = {
  "--kubeconfig": "kubeconfig",
  "--context": "context",
  "--namespace": "namespace",
  "-n": "namespace",
};

/** Flags of the commands that take a value, which may come before the command. */
const VALUE_FLAGS = new Set(["-o", "--output", "--max-objects", "--max-held"]);

/**
 * Splits the command line: the kubeconfig flags (`--kubeconfig <path>`,
 * `--kubeconfig=<path>`, the same for `--context` and `--namespace`, and
 * `-n <ns>`, `-n=<ns>`, `-n<ns>`) are taken wherever they stand, up to a
 * `--`; the first other word that is not a flag (nor the value of `-o`) is
 * the command; everything else stays, in order.
 *
 * @throws {PluginError} With exit code 2 when a kubeconfig flag has no value.
 */
export function splitArgs(args: readonly string[]): SplitArgs {
  const flags: KubeconfigFlags = {};
  const rest: string[] = [];
  let command: string | undefined;
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      rest.push(...args.slice(i));
      break;
    }
    const global = globalFlag(arg);
    if (global !== undefined) {
      const value = global.value ?? args[++i];
      if (value === undefined || value === "") {
        throw new PluginError(`${global.flag} needs a value`);
      }
      flags[GLOBAL_FLAGS[global.flag]!] = value;
      continue;
    }
    if (arg === "-h" || arg === "--help") help = true;
    if (command === undefined && !arg.startsWith("-")) {
      command = arg;
      continue;
    }
    rest.push(arg);
    if (command === undefined && VALUE_FLAGS.has(arg) && i + 1 < args.length) {
      rest.push(args[++i]!);
    }
  }
  return { flags, ...(command === undefined ? {} : { command }), rest, help };
}

/** A kubeconfig flag and its value when given in the same word. */
function globalFlag(
  arg: string,
): { flag: string; value?: string } | undefined {
  if (Object.hasOwn(GLOBAL_FLAGS, arg)) return { flag: arg };
  const eq = arg.indexOf("=");
  if (eq > 0 && Object.hasOwn(GLOBAL_FLAGS, arg.slice(0, eq))) {
    return { flag: arg.slice(0, eq), value: arg.slice(eq + 1) };
  }
  if (arg.startsWith("-n") && !arg.startsWith("--")) {
    return { flag: "-n", value: arg.slice(2) };
  }
  return undefined;
}

/** Options for {@linkcode main}. */
export interface MainOptions {
  /** Builds a command's context; tests pass their own. @default {pluginContext} */
  contextOf?: (flags: KubeconfigFlags, io: PluginIo) => PluginContext;
  /** The commands; tests pass their own. @default {COMMANDS} */
  commands?: Readonly<Record<string, PluginCommand>>;
}

/**
 * Runs `kubectl dependencies` with `args` (what follows the program's
 * name) and returns the exit code; nothing is thrown. Help goes to stdout
 * (exit 0); no command, an unknown one, or a failure goes to stderr, each
 * line of a message made printable, with exit code 2 (or the failure's own).
 */
export async function main(
  args: readonly string[],
  io: PluginIo,
  options: MainOptions = {},
): Promise<number> {
  const commands = options.commands ?? COMMANDS;
  try {
    const split = splitArgs(args);
    if (split.command === undefined || split.command === "help") {
      return help(split, { io, commands });
    }
    const command = Object.hasOwn(commands, split.command)
      ? commands[split.command]
      : undefined;
    if (command === undefined) {
      throw new PluginError(
        `unknown command "${split.command}": want one of ${
          [...Object.keys(commands), "help"].join(", ")
        } (see kubectl dependencies --help)`,
      );
    }
    if (split.help) {
      io.out(command.usage);
      return EXIT_OK;
    }
    command.check?.(split.rest);
    const context = (options.contextOf ?? pluginContext)(split.flags, io);
    try {
      return await command.run(split.rest, context);
    } finally {
      context.client.close();
    }
  } catch (error) {
    const message = error instanceof PluginError
      ? error.message
      : errorText(error);
    io.err(`error: ${shownLines(message)}\n`);
    return error instanceof PluginError ? error.exitCode : EXIT_ERROR;
  }
}

/** `help`, `help <command>`, `--help`, or no command at all. */
function help(
  split: SplitArgs,
  context: {
    io: PluginIo;
    commands: Readonly<Record<string, PluginCommand>>;
  },
): number {
  const { io, commands } = context;
  if (split.command === undefined && !split.help) {
    io.err(helpText(commands));
    return EXIT_ERROR;
  }
  const topic = split.command === "help"
    ? split.rest.find((a) => !a.startsWith("-"))
    : undefined;
  if (topic === undefined || topic === "help") {
    io.out(helpText(commands));
    return EXIT_OK;
  }
  const command = Object.hasOwn(commands, topic) ? commands[topic] : undefined;
  if (command === undefined) {
    throw new PluginError(
      `no help for "${topic}": want one of ${Object.keys(commands).join(", ")}`,
    );
  }
  io.out(command.usage);
  return EXIT_OK;
}

/** `why`, with dry runs sent as the kubeconfig's user. */
async function runWhy(
  args: string[],
  context: PluginContext,
): Promise<number> {
  const deleter = new DryRunDeleter(context.client);
  return await whyCommand(args, context, {
    dryRun: (url) => deleter.ask(url),
  });
}

/** Each line of `text` made printable (a message may span lines). */
function shownLines(text: string): string {
  return text.split("\n").map((line) => printable(line, 2000)).join("\n");
}
