/**
 * The controller's background reads besides the watches and the workspace
 * paths (`path_cache.ts`), each kept in a `ReadCache`: what each APIExport
 * a rule names serves, what a Lock's workspace serves of the Lock's target
 * type, and whether the webhook's identity may make each read a rule
 * needs. One table ({@linkcode READ_CACHE_SPECS}) says per kind what is
 * read (for the log), how a reference is keyed and logged, how many reads
 * run at once, and which answers are read again soon; one construction
 * ({@linkcode readCache}) builds the cache of a kind from its row, its
 * reads taking turns through a `Semaphore` (see `semaphore.ts` for why).
 *
 * @example Usage
 * ```ts
 * import { readCache } from "./read_caches.ts";
 * import { PlanMemo } from "./plan_memo.ts";
 * import { createLogger } from "../runtime/mod.ts";
 *
 * const cache = readCache("access", {
 *   read: () => Promise.resolve(true),
 *   log: createLogger({ level: "error" }),
 *   memo: new PlanMemo(),
 *   onChange: () => {},
 * });
 * await cache?.stop();
 * ```
 *
 * @module
 */
import {
  type BackoffOptions,
  type Logger,
  ReadCache,
  type Reading,
  Semaphore,
} from "../runtime/mod.ts";
import {
  describeExportReading,
  type ExportAnswer,
  exportKey,
  type ExportRef,
} from "../exports/mod.ts";
import {
  type LockTargetAnswer,
  lockTargetKey,
  type LockTargetRef,
} from "./lock_targets.ts";
import type { PlanMemo } from "./plan_memo.ts";
import { accessKey, type AccessRef } from "./webhook_access.ts";

/** What each kind of background read reads (`ref`) and answers. */
export interface ReadKinds {
  /** What an APIExport serves. */
  exports: { ref: ExportRef; answer: ExportAnswer };
  /** What a Lock's workspace serves of its target type. */
  lockTargets: { ref: LockTargetRef; answer: LockTargetAnswer };
  /** Whether the webhook's identity may make a read. */
  access: { ref: AccessRef; answer: boolean };
}

/** One kind of background read, as its cache is built. */
export interface ReadCacheSpec<R, A> {
  /** What is read, for the log line (`read <what>`). */
  what: string;
  /**
   * The key of a reference in the readings; `memo` holds the keys the plan
   * remembers (the refs it hands out are the same objects pass after pass).
   */
  key: (ref: R, memo: PlanMemo) => string;
  /** The fields of the log line that describe a reference and its reading. */
  describe: (ref: R, reading: Reading<A>) => Record<string, unknown>;
  /** How many reads of the kind run at once; the others wait their turn. */
  atOnce: number;
  /**
   * Answers expected to change soon, read again every
   * {@linkcode RECHECK_MS} besides the resync.
   */
  recheck: (answer: A) => boolean;
}

/** The table of {@linkcode ReadCacheSpec}s, one row per kind. */
export type ReadCacheSpecs = {
  readonly [K in keyof ReadKinds]: ReadCacheSpec<
    ReadKinds[K]["ref"],
    ReadKinds[K]["answer"]
  >;
};

/**
 * How often answers that are expected to change soon (an export or a
 * binding not there yet, a grant not applied yet) are read again, besides
 * the resync.
 */
export const RECHECK_MS = 15_000;

/**
 * Each kind of background read. An export read makes one request for the
 * export and a few at a time for its schemas; an access review is one
 * request: so 8 of the former at once, 16 of the latter.
 */
export const READ_CACHE_SPECS: ReadCacheSpecs = {
  exports: {
    what: "APIExport",
    key: (ref) => exportKey(ref),
    describe: describeExportReading,
    atOnce: 8,
    // An export not there yet is often being created: look again soon.
    recheck: (answer) => !answer.found,
  },
  lockTargets: {
    what: "a Lock's target type",
    key: (ref) => lockTargetKey(ref),
    describe: (ref, reading) => ({
      cluster: ref.cluster,
      type: `${ref.resource}.${ref.group}`,
      version: ref.version,
      ...reading,
    }),
    atOnce: 8,
    // A type not served yet is often being bound: look again soon.
    recheck: (answer) => !answer.served,
  },
  access: {
    what: "whether the webhook may read a type",
    key: (ref, memo) => accessKey(ref, memo),
    describe: (ref, reading) => ({
      cluster: ref.cluster,
      verb: ref.verb,
      type: `${ref.resource}.${ref.group}`,
      ...(ref.subresource === undefined
        ? {}
        : { subresource: ref.subresource }),
      ...(ref.name === undefined ? {} : { name: ref.name }),
      allowed: reading.answer,
      error: reading.error,
    }),
    atOnce: 16,
    // A grant an operator is about to apply: look again soon.
    recheck: (allowed) => !allowed,
  },
};

/** Options of {@linkcode readCache}. */
export interface ReadCacheBuild<R, A> {
  /** Reads one reference; `undefined`: this kind is not read at all. */
  read: ((ref: R, signal: AbortSignal) => Promise<A>) | undefined;
  /** Told when a read gets its turn (and so is sent). */
  onStart?: (ref: R) => void;
  /** Where to log answers that change. */
  log: Logger;
  /** The plan's memo, for the keys of the refs it hands out. */
  memo: PlanMemo;
  /** Called when what is known of a reference changes. */
  onChange: () => void;
  /** Retry delays per reference. @default {initialMs: 500, maxMs: 60_000} */
  backoff?: BackoffOptions;
}

/**
 * The cache of the reads of `kind`, built from its row of
 * {@linkcode READ_CACHE_SPECS}, or `undefined` when there is nothing to
 * read with (`options.read` undefined).
 */
export function readCache<K extends keyof ReadKinds>(
  kind: K,
  options: ReadCacheBuild<ReadKinds[K]["ref"], ReadKinds[K]["answer"]>,
): ReadCache<ReadKinds[K]["ref"], ReadKinds[K]["answer"]> | undefined {
  type R = ReadKinds[K]["ref"];
  type A = ReadKinds[K]["answer"];
  const spec: ReadCacheSpec<R, A> = READ_CACHE_SPECS[kind];
  const { read, onStart, memo } = options;
  if (read === undefined) return undefined;
  return new ReadCache<R, A>({
    key: (ref) => spec.key(ref, memo),
    read: new Semaphore(spec.atOnce).wrap(
      read,
      onStart === undefined ? {} : { onStart },
    ),
    log: options.log,
    what: spec.what,
    describe: spec.describe,
    recheck: { when: spec.recheck, everyMs: RECHECK_MS },
    onChange: options.onChange,
    ...(options.backoff === undefined ? {} : { backoff: options.backoff }),
  });
}
