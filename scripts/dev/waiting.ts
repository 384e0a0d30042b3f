/**
 * The long waits of `deno task dev` (kcp starting, the demo topology
 * settling, a rule becoming Ready) say what they wait for: one line before,
 * and while the wait lasts a heartbeat with the time spent, every 10 s (or
 * one line redrawn in place on a terminal), so a quiet half minute never
 * looks like a hang.
 *
 * @module
 */
import {
  StatusLine,
  terminalColumns,
} from "../../testing/kcp/build_progress.ts";
import { dim } from "./output.ts";

/** A short wait says what it waits for only once it lasts this long. */
export const QUIET_MS = 3_000;

/** Options for {@linkcode waitingFor}. */
export interface WaitingOptions {
  /**
   * Whether to print `waiting for <what> ...` (when the line before already
   * says it, say a `$ kubectl wait` command, only the heartbeat is printed).
   * @default {true}
   */
  announce?: boolean;
  /** Said once, after what is waited for: `(a first start takes a minute)`. */
  hint?: string;
  /** Print nothing unless the wait lasts this long. @default {0} */
  quietMs?: number;
  /** Whether the heartbeat is one line redrawn in place. @default {whether standard output is a terminal} */
  terminal?: boolean;
  /** Writes text as it is. @default {to standard output} */
  write?: (text: string) => void;
  /** The clock, in milliseconds. @default {performance.now} */
  now?: () => number;
  /** The least time between two heartbeat lines off a terminal. @default {10_000} */
  intervalMs?: number;
  /** How often the heartbeat is looked at. @default {1_000} */
  tickMs?: number;
  /** The terminal's width. @default {the width of the terminal on standard output} */
  columns?: number;
}

/**
 * Waits for `work`, saying what for: `waiting for <what> ...`, then
 * `... still waiting for <what> (20s)` every `intervalMs`. The heartbeat is
 * erased from a terminal when the wait ends. Returns what `work` resolves
 * to, and rejects as it does.
 */
export async function waitingFor<T>(
  what: string,
  work: Promise<T>,
  options: WaitingOptions = {},
): Promise<T> {
  const {
    announce = true,
    quietMs = 0,
    terminal = Deno.stdout.isTerminal(),
    now = () => performance.now(),
    tickMs = 1_000,
  } = options;
  const encoder = new TextEncoder();
  const write = options.write ??
    ((text: string) => Deno.stdout.writeSync(encoder.encode(text)));
  const start = now();
  let loud = false;
  const speak = () => {
    loud = true;
    const hint = options.hint === undefined ? "" : ` ${options.hint}`;
    if (announce) write(`      ${dim(`waiting for ${what}${hint} ...`)}\n`);
  };
  if (quietMs <= 0) speak();
  const status = new StatusLine({
    terminal,
    write,
    now,
    intervalMs: options.intervalMs ?? 10_000,
    columns: options.columns ?? (terminal ? terminalColumns() : 0),
  });
  const timer = setInterval(() => {
    const ms = now() - start;
    if (!loud) {
      if (ms < quietMs) return;
      speak();
    }
    const seconds = Math.floor(ms / 1000);
    status.update(
      `      ${
        dim(
          terminal
            ? `... waiting for ${what}: ${seconds}s`
            : `... still waiting for ${what} (${seconds}s)`,
        )
      }`,
    );
  }, tickMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
    status.clear();
  }
}
