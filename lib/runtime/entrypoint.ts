/**
 * What both entrypoints do around their own wiring: parse the command line
 * (exit 2 with the reason on a bad flag, print `--help` and exit 0), make a
 * JSON logger for the component, run it, and turn a startup failure into
 * one `cannot start` log line and exit 1. Also the wait for SIGTERM/SIGINT
 * that begins a graceful shutdown.
 *
 * @module
 */
import { type FlagSpec, usage } from "./flags.ts";
import { errorText } from "./values.ts";
import {
  createLogger,
  type Logger,
  type LoggerOptions,
  type LogLevel,
} from "./log.ts";

/** One component's command line and body. */
export interface Entrypoint<O extends { logLevel: LogLevel }> {
  /** Program name, e.g. `webhook`: the `component` field of every log line. */
  name: string;
  /** One sentence for `--help`. */
  summary: string;
  /** The flag table, for `--help`. */
  flags: readonly FlagSpec[];
  /** Parses the arguments; throws a readable error on bad input. */
  parse: (args: readonly string[]) => { help: true } | {
    help: false;
    options: O;
  };
  /** Runs the component until it stops; returns the exit code. */
  run: (options: O, log: Logger) => Promise<number>;
}

/** Where {@linkcode runEntrypoint} writes; the defaults are the console and stderr. */
export interface EntrypointIo {
  /** Standard output (the `--help` text). */
  out?: (text: string) => void;
  /** Standard error (flag errors). */
  err?: (text: string) => void;
  /** The log's line writer. */
  write?: LoggerOptions["write"];
}

/**
 * Runs an entrypoint and returns its exit code: 0 after `--help` or a clean
 * stop, 2 for bad flags, 1 if `run` throws (logged as `cannot start`).
 */
export async function runEntrypoint<O extends { logLevel: LogLevel }>(
  args: readonly string[],
  entrypoint: Entrypoint<O>,
  io: EntrypointIo = {},
): Promise<number> {
  const { out = console.log, err = console.error } = io;
  let parsed;
  try {
    parsed = entrypoint.parse(args);
  } catch (error) {
    err(`${entrypoint.name}: ${errorText(error)}`);
    return 2;
  }
  if (parsed.help) {
    out(usage(entrypoint.name, entrypoint.summary, entrypoint.flags));
    return 0;
  }
  const log = createLogger({
    level: parsed.options.logLevel,
    ...(io.write === undefined ? {} : { write: io.write }),
  }).with({ component: entrypoint.name });
  try {
    return await entrypoint.run(parsed.options, log);
  } catch (error) {
    log.error("cannot start", { error });
    return 1;
  }
}

/** Resolves with the signal's name at the first SIGTERM or SIGINT. */
export function stopSignal(): Promise<Deno.Signal> {
  return new Promise((resolve) => {
    for (const name of ["SIGTERM", "SIGINT"] as const) {
      Deno.addSignalListener(name, () => resolve(name));
    }
  });
}
