/**
 * Which DependencyRules the webhook enforces: a rule is admitted only when
 * the APIExport its `spec.dependent.apiExportName` names exists in the
 * rule's own workspace and serves the dependent type, the check the
 * controller reports as `APIExportNotFound` or `TypeNotExported`. A provider
 * declares what *its* type refers to; a tenant that bound the dep-ctrl export
 * (to write Locks, say) cannot declare rules about types it does not export,
 * so its rules reach no other tenant and make no delete fail.
 *
 * Pure over what was read: reading the exports is a `ReadCache`'s job. A
 * rule whose export has not been read yet is pending (not enforced; the
 * webhook is not ready until every rule of the first load is read), and
 * one whose export could not be read is admitted (a failed read never
 * weakens protection).
 *
 * @example Usage
 * ```ts
 * import { admitRules } from "./rule_admission.ts";
 *
 * const { admitted, pending } = admitRules([], new Map());
 * admitted.length + pending.length; // 0
 * ```
 *
 * @module
 */
import {
  checkExported,
  describeExportReading,
  type ExportAnswer,
  exportKey,
  type ExportReading,
  type ExportRef,
} from "../exports/mod.ts";
import { type ClusterRule, ruleKey } from "../rules/mod.ts";
import { type BackoffOptions, type Logger, ReadCache } from "../runtime/mod.ts";

/** A rule the webhook does not enforce, and why. */
export interface RefusedRule {
  /** The rule. */
  rule: ClusterRule;
  /** `APIExportNotFound` or `TypeNotExported`. */
  reason: string;
  /** What is wrong, as the controller's status says it. */
  message: string;
}

/** The rules sorted by what the webhook does with them. */
export interface RuleAdmission {
  /** The rules to enforce. */
  admitted: ClusterRule[];
  /** The rules not to enforce. */
  refused: RefusedRule[];
  /** The rules whose export is being read. */
  pending: ClusterRule[];
  /** Every export the rules name, to read. */
  exports: ExportRef[];
  /**
   * The identity of each admitted rule's dependent export, by rule key,
   * where it was read: only a consumer's dependents bound from that export
   * are the rule's.
   */
  identities: Map<string, string>;
}

/** The export a rule's dependent type must come from: in the rule's own workspace. */
export function dependentExport(rule: ClusterRule): ExportRef {
  return {
    workspace: rule.cluster,
    name: rule.rule.spec.dependent.apiExportName,
  };
}

/** Sorts `rules` into admitted, refused and pending, from the exports read. */
export function admitRules(
  rules: readonly ClusterRule[],
  readings: ReadonlyMap<string, ExportReading>,
): RuleAdmission {
  const admission: RuleAdmission = {
    admitted: [],
    refused: [],
    pending: [],
    exports: [],
    identities: new Map(),
  };
  const wanted = new Map<string, ExportRef>();
  for (const rule of rules) {
    const ref = dependentExport(rule);
    const key = exportKey(ref);
    wanted.set(key, ref);
    const reading = readings.get(key);
    if (reading === undefined) {
      admission.pending.push(rule);
      continue;
    }
    const check = checkExported(
      reading,
      { ...ref, shown: `the rule's own workspace (${rule.cluster})` },
      rule.rule.spec.dependent,
    );
    if (check.ok) {
      admission.admitted.push(rule);
      const answer = reading.answer;
      if (answer?.found && answer.identityHash !== undefined) {
        admission.identities.set(
          ruleKey(rule.cluster, rule.rule.metadata.name),
          answer.identityHash,
        );
      }
    } else {
      admission.refused.push({
        rule,
        reason: check.reason,
        message: check.message,
      });
    }
  }
  admission.exports = [...wanted.values()];
  return admission;
}

/** Options for {@linkcode RuleAdmitter}. */
export interface RuleAdmitterOptions {
  /** Reads one APIExport (`readExport` with the webhook's client). */
  read: (ref: ExportRef, signal: AbortSignal) => Promise<ExportAnswer>;
  /** Where to log rules that are refused, and exports read. */
  log: Logger;
  /** Called with each new admission: load `admitted` into the registry. */
  onAdmitted: (admission: RuleAdmission) => void;
  /** Retry delays per export. @default {initialMs: 500, maxMs: 60_000} */
  backoff?: BackoffOptions;
  /** How often every export is read again. @default {300_000} */
  recheckIntervalMs?: number;
  /** How often an export that was not found is read again. @default {15_000} */
  recheckMissingMs?: number;
}

/**
 * Keeps the admitted rules current: reads the exports the rules name in the
 * background, and hands each admission to `onAdmitted` once every rule of
 * the first load has been read (until then the registry stays unloaded and
 * the webhook not ready, so a restart never drops protection), and on every
 * change after that. Reads every export again every `recheckIntervalMs`.
 */
export class RuleAdmitter {
  readonly #options: RuleAdmitterOptions;
  readonly #exports: ReadCache<ExportRef, ExportAnswer>;
  readonly #timer: ReturnType<typeof setInterval>;
  #rules: readonly ClusterRule[] | undefined;
  #loaded = false;
  #refused = new Set<string>();

  /** Builds an admitter; it reads nothing until {@linkcode RuleAdmitter.update}. */
  constructor(options: RuleAdmitterOptions) {
    this.#options = options;
    this.#exports = new ReadCache({
      key: exportKey,
      read: options.read,
      log: options.log,
      what: "APIExport of a rule's dependent type",
      describe: describeExportReading,
      ...(options.backoff === undefined ? {} : { backoff: options.backoff }),
      // A provider creating its export: enforce its rules soon after.
      recheck: {
        when: (answer) => !answer.found,
        everyMs: options.recheckMissingMs ?? 15_000,
      },
      onChange: () => this.#admit(),
    });
    this.#timer = setInterval(
      () => this.#exports.refresh(),
      options.recheckIntervalMs ?? 300_000,
    );
  }

  /** The rules as last loaded (synced, valid, without self-dependencies). */
  update(rules: readonly ClusterRule[]): void {
    this.#rules = rules;
    this.#exports.want(admitRules(rules, new Map()).exports);
    this.#admit();
  }

  /** Stops reading. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#exports.stop();
  }

  #admit(): void {
    if (this.#rules === undefined) return;
    const admission = admitRules(this.#rules, this.#exports.readings());
    if (!this.#loaded && admission.pending.length > 0) return;
    this.#loaded = true;
    const refused = new Set<string>();
    for (const { rule, reason, message } of admission.refused) {
      const key = `${rule.cluster}/${rule.rule.metadata.name}`;
      refused.add(key);
      if (this.#refused.has(key)) continue;
      this.#options.log.warn("not enforcing DependencyRule", {
        workspace: rule.cluster,
        name: rule.rule.metadata.name,
        reason,
        message,
      });
    }
    this.#refused = refused;
    this.#options.onAdmitted(admission);
  }
}
