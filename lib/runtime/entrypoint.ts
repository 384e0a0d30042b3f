/**
 * What both entrypoints do around their own wiring: parse the command line
 * (exit 2 with the reason on a bad flag, print `--help` and exit 0), make a
 * JSON logger for the component, run it, and turn a startup failure into
 * one `cannot start` log line and exit 1. Also the wait for SIGTERM/SIGINT
 * that begins a graceful shutdown, and the shutdown itself: every stop step
 * under one deadline, after which the process exits anyway.
 *
 * @module
 */
import { sleep } from "./backoff.ts";
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
  /**
   * A command run by hand, not a service: an error `run` throws is written
   * to `err` as one line, `<name>: <message>`, not logged as a JSON line
   * with its stack. @default {false}
   */
  plainErrors?: boolean;
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
 * stop, 2 for bad flags, 1 if `run` throws (logged as `cannot start`, or
 * one line to `err` with `plainErrors`), and
 * whatever `run` returns otherwise ({@linkcode SHUTDOWN_TIMEOUT_EXIT_CODE}
 * after a shutdown that did not finish in time).
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
    if (entrypoint.plainErrors === true) {
      err(`${entrypoint.name}: ${errorText(error)}`);
    } else {
      log.error("cannot start", { error });
    }
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

/**
 * The whole shutdown's deadline of a component without a flag for it (the
 * controller): 15 s, well below Kubernetes' default
 * `terminationGracePeriodSeconds` of 30 s, so the process exits by itself,
 * and logs what hung, before the kubelet kills it.
 */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 15_000;

/** The exit code of a process whose shutdown passed its deadline. */
export const SHUTDOWN_TIMEOUT_EXIT_CODE = 3;

/**
 * The part of a shutdown deadline kept to close what has not drained:
 * 1 s, or a quarter of a deadline shorter than 4 s.
 */
const CLOSE_MARGIN_MS = 1_000;

/**
 * How long a listener may drain in-flight requests within a shutdown
 * deadline of `shutdownTimeoutMs`, leaving time to close the connections
 * still open before the deadline: the deadline less 1 s (less a quarter
 * below 4 s).
 *
 * @example Usage
 * ```ts
 * import { drainTimeoutWithin } from "./entrypoint.ts";
 * drainTimeoutWithin(8_000); // 7_000
 * drainTimeoutWithin(2_000); // 1_500
 * ```
 */
export function drainTimeoutWithin(shutdownTimeoutMs: number): number {
  const margin = Math.min(CLOSE_MARGIN_MS, shutdownTimeoutMs / 4);
  return Math.max(0, Math.floor(shutdownTimeoutMs - margin));
}

/** One thing to stop at shutdown. */
export interface ShutdownStep {
  /** What it stops, as the log names it: `admission server`, `rule watcher`. */
  name: string;
  /** Stops it; may return a promise, throw or reject. */
  stop: () => unknown;
}

/** Options for {@linkcode shutdownWithin}. */
export interface ShutdownOptions {
  /** The deadline of the whole shutdown, from the call. */
  timeoutMs: number;
  /** Where to log failed steps and the deadline. */
  log: Logger;
  /**
   * Resolves after `ms`, or at once when `signal` aborts (once the steps
   * are done); the deadline's clock.
   * @default {sleep}
   */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Clock in milliseconds, for `durationMs`. @default {performance.now} */
  now?: () => number;
}

/** What {@linkcode shutdownWithin} did not get done. */
export interface ShutdownResult {
  /** Whether every step finished (or failed) before the deadline. */
  finished: boolean;
  /** Steps started that had not finished at the deadline. */
  pending: string[];
  /** Steps of later stages that never started. */
  notStarted: string[];
}

/**
 * Runs the stop steps of a shutdown under one deadline: the stages one
 * after the other, the steps of a stage at once. A step that throws or
 * rejects is logged (`error` `shutdown step failed`, fields `step` and
 * `error`) and counts as done; each finished step is logged at `debug`
 * (`shutdown step done`, fields `step` and `durationMs` since the start). When `options.timeoutMs`
 * passes first, it logs `error` `shutdown timed out, exiting anyway` with
 * `timeoutMs`, the steps still running (`pending`) and those never started
 * (`notStarted`), and resolves without waiting for them: the caller exits,
 * with {@linkcode SHUTDOWN_TIMEOUT_EXIT_CODE}.
 *
 * @example Usage
 * ```ts
 * import { createLogger, shutdownWithin } from "./mod.ts";
 *
 * const result = await shutdownWithin([
 *   [{ name: "reconciler", stop: () => Promise.resolve() }],
 *   [{ name: "leader lease", stop: () => Promise.resolve() }],
 * ], { timeoutMs: 15_000, log: createLogger() });
 * result.finished; // true
 * ```
 */
export async function shutdownWithin(
  stages: readonly (readonly ShutdownStep[])[],
  options: ShutdownOptions,
): Promise<ShutdownResult> {
  const { timeoutMs, log, wait = sleep, now = () => performance.now() } =
    options;
  const started = now();
  const running = new Set<string>();
  let stage = 0;
  const finish = async (step: ShutdownStep): Promise<void> => {
    running.add(step.name);
    try {
      await step.stop();
      log.debug("shutdown step done", {
        step: step.name,
        durationMs: Math.round(now() - started),
      });
    } catch (error) {
      log.error("shutdown step failed", { step: step.name, error });
    } finally {
      running.delete(step.name);
    }
  };
  const all = (async () => {
    for (; stage < stages.length; stage++) {
      await Promise.all(stages[stage]!.map(finish));
    }
  })();
  const done = new AbortController();
  const deadline = wait(timeoutMs, done.signal).then(() => "deadline" as const);
  const first = await Promise.race([all.then(() => "done" as const), deadline]);
  done.abort();
  if (first === "done") return { finished: true, pending: [], notStarted: [] };
  const result = {
    finished: false,
    pending: [...running],
    notStarted: stages.slice(stage + 1).flat().map((s) => s.name),
  };
  log.error("shutdown timed out, exiting anyway", {
    timeoutMs,
    pending: result.pending,
    notStarted: result.notStarted,
  });
  return result;
}
