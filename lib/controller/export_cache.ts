/**
 * The controller's cache of what the APIExports that rules name serve. The
 * reconciler says which exports it wants at every pass; the cache reads them
 * in the background (one task per export, per-export backoff after a failed
 * read, retried on its own timer), reads every wanted export again on a
 * resync, and calls `onChange` when what it knows changes (an answer is
 * compared whole: a type, a version or a served schema that changed all
 * count, so a provider's new schema is checked at the next pass).
 *
 * A failed read keeps the last answer and records the failure next to it:
 * the plan goes on deciding from what was last read (see `export_checks.ts`).
 *
 * @module
 */
import type { BackoffOptions, Logger } from "../runtime/mod.ts";
import { errorText } from "../runtime/mod.ts";
import {
  type ExportAnswer,
  exportKey,
  type ExportReading,
  type ExportRef,
} from "./export_checks.ts";
import { KeyedTasks } from "./keyed_tasks.ts";

/** Options for {@linkcode ExportCache}. */
export interface ExportCacheOptions {
  /** Reads one export (see `export_reader.ts`); throws when it cannot. */
  read: (ref: ExportRef, signal: AbortSignal) => Promise<ExportAnswer>;
  /** Where to log answers that change. */
  log: Logger;
  /** Called when what is known of an export changes. */
  onChange: () => void;
  /** Retry delays per export. @default {initialMs: 500, maxMs: 60_000} */
  backoff?: BackoffOptions;
}

/** Reads the wanted APIExports in the background and keeps the answers. */
export class ExportCache {
  readonly #options: ExportCacheOptions;
  readonly #tasks: KeyedTasks;
  readonly #readings = new Map<string, ExportReading>();
  #wanted = new Map<string, ExportRef>();
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** Builds an empty cache; it reads nothing until {@linkcode ExportCache.want} is called. */
  constructor(options: ExportCacheOptions) {
    this.#options = options;
    this.#tasks = new KeyedTasks({
      backoff: options.backoff ?? { initialMs: 500, maxMs: 60_000 },
      onSettled: () => this.#scheduleRetry(),
    });
  }

  /** What is known per export (by `exportKey`); a wanted export without an entry is being read. */
  readings(): ReadonlyMap<string, ExportReading> {
    return this.#readings;
  }

  /** Sets the wanted exports: reads those not read yet, forgets the others. */
  want(refs: readonly ExportRef[]): void {
    if (this.#stopped) return;
    this.#wanted = new Map(refs.map((ref) => [exportKey(ref), ref]));
    for (const key of [...this.#readings.keys()]) {
      if (!this.#wanted.has(key)) this.#readings.delete(key);
    }
    for (const key of this.#tasks.keys()) {
      if (!this.#wanted.has(key)) this.#tasks.forget(key);
    }
    this.#startAll(false);
  }

  /** Reads every wanted export again, keeping the old answers meanwhile (the periodic resync). */
  refresh(): void {
    this.#startAll(true);
  }

  /** Stops reading and waits for running reads. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    await this.#tasks.stop();
  }

  #startAll(again: boolean): void {
    if (this.#stopped) return;
    for (const [key, ref] of this.#wanted) {
      const known = this.#readings.get(key);
      if (!again && known !== undefined && known.error === undefined) continue;
      this.#start(key, ref);
    }
    this.#scheduleRetry();
  }

  #start(key: string, ref: ExportRef): void {
    this.#tasks.run(key, "read", async (signal) => {
      const before = this.#readings.get(key);
      let after: ExportReading;
      let failure: unknown;
      try {
        after = { answer: await this.#options.read(ref, signal) };
      } catch (error) {
        failure = error;
        after = {
          ...(before?.answer === undefined ? {} : { answer: before.answer }),
          error: errorText(error),
        };
      }
      if (this.#stopped || !this.#wanted.has(key)) return;
      this.#readings.set(key, after);
      if (JSON.stringify(after) !== JSON.stringify(before)) {
        this.#options.log[failure === undefined ? "info" : "warn"](
          "read APIExport",
          {
            workspace: ref.workspace,
            name: ref.name,
            found: after.answer?.found,
            types: after.answer?.found ? after.answer.types.length : undefined,
            error: after.error,
          },
        );
        this.#options.onChange();
      }
      // A failed read is tried again after the export's backoff.
      if (failure !== undefined) throw failure;
    });
  }

  /** Wakes up when the first failed export may be read again. */
  #scheduleRetry(): void {
    clearTimeout(this.#retryTimer);
    const at = this.#tasks.nextRetryAt();
    if (at === undefined || this.#stopped) return;
    this.#retryTimer = setTimeout(
      () => this.#startAll(false),
      Math.max(0, at - Date.now()) + 5,
    );
  }
}
