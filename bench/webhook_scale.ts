/**
 * The webhook's figures at scale, in process, without kcp:
 *
 * - {@linkcode measureRebuild}: how long the rule index takes to rebuild
 *   (`RuleRegistry.replace`, then `protectedTypes` as `webhook.ts` reads it)
 *   with 1 000, 5 000 and 10 000 rules on one protected type. The rebuild
 *   runs on the webhook's only thread after every rule change.
 * - {@linkcode measureDecision}: how long `DeletionValidator.validate` takes
 *   to decide a DELETE with 1, 10 and 100 rules on the protected type, over
 *   an in-memory {@linkcode DependentSource} that answers every list with one
 *   page of one dependent that does not refer to the object.
 *
 * Run as a script it prints both tables (min / median / max).
 *
 * @example Usage
 * ```ts
 * import { formatRebuildTable, measureRebuild } from "./webhook_scale.ts";
 *
 * console.log(formatRebuildTable(measureRebuild({ sizes: [100], rounds: 3 })));
 * ```
 *
 * @module
 */
import {
  type ClusterRule,
  type GroupVersionResource,
  parseDependencyRule,
} from "../lib/rules/mod.ts";
import {
  type AdmissionRequest,
  DeletionValidator,
  type DependentQuery,
  type DependentSource,
  RuleRegistry,
} from "../lib/webhook/mod.ts";
import { formatSpread, type Spread, spread } from "./_stats.ts";

/** The one protected type every rule of the bench protects. */
export const PROTECTED: GroupVersionResource = {
  group: "network.example.com",
  version: "v1alpha1",
  resource: "vpcs",
};

/** The consumer cluster, namespace, name and uid of the VPC under review. */
const CONSUMER = "consumer1";
const NAMESPACE = "default";
const TARGET_NAME = "vpc-a";
const TARGET_UID = "uid-vpc-a";

/**
 * `count` distinct schema-valid rules in cluster `provider1`: rule `i` makes
 * a type of its own (`things<i>.bench.example.com`) refer to
 * {@linkcode PROTECTED} at `.spec.vpcRef.name`, so no two protections are
 * duplicates and the protected type gets `count` of them.
 *
 * @throws {Error} If the schema rejects a generated rule.
 */
export function scaleRules(count: number): ClusterRule[] {
  const rules: ClusterRule[] = [];
  for (let i = 0; i < count; i++) {
    const parsed = parseDependencyRule({
      apiVersion: "dependencies.opendefense.cloud/v1alpha1",
      kind: "DependencyRule",
      metadata: { name: `thing${i}-needs-vpc` },
      spec: {
        dependent: {
          apiExportName: "bench.example.com",
          group: "bench.example.com",
          version: "v1",
          kind: `Thing${i}`,
          resource: `things${i}`,
        },
        dependencies: [{
          apiExportRef: {
            path: "root:providers:network",
            name: PROTECTED.group,
          },
          ...PROTECTED,
          fieldRef: { path: ".spec.vpcRef.name" },
        }],
      },
    });
    if (!parsed.ok) {
      throw new Error(`Cannot build bench rule ${i}: ${parsed.error}`);
    }
    rules.push({ cluster: "provider1", rule: parsed.rule });
  }
  return rules;
}

/**
 * What {@linkcode measureRebuild} times: the registry's `replace` and the
 * `protectedTypes` read that `webhook.ts` makes right after it.
 */
export interface RebuildTarget {
  /** Replaces every rule at once. */
  replace(rules: readonly ClusterRule[]): void;
  /** Number of protected group/version/resources. */
  readonly protectedTypes: number;
}

/** Options for {@linkcode measureRebuild}. */
export interface RebuildOptions {
  /** Rule counts to measure. @default {[1_000, 5_000, 10_000]} */
  sizes?: readonly number[];
  /** Timed rounds per size and kind of rebuild. @default {7} */
  rounds?: number;
  /**
   * Makes an empty registry; lets another implementation be measured side
   * by side. @default {() => new RuleRegistry()}
   */
  createRegistry?: () => RebuildTarget;
}

/** The rebuild times at one rule count, in milliseconds. */
export interface RebuildRow {
  /** Rules on the one protected type. */
  rules: number;
  /** A fresh registry given every rule: the webhook's first load. */
  firstLoad: Spread;
  /**
   * A loaded registry given the same rules with one of them a new object:
   * what the webhook does after one rule changed.
   */
  afterChange: Spread;
}

/**
 * Times the rule index rebuild at each size, `rounds` times for a first
 * load and `rounds` times for a rebuild after one rule changed.
 *
 * @throws {Error} If a rebuild does not report the one protected type.
 */
export function measureRebuild(options: RebuildOptions = {}): RebuildRow[] {
  const {
    sizes = [1_000, 5_000, 10_000],
    rounds = 7,
    createRegistry = () => new RuleRegistry(),
  } = options;
  const all = scaleRules(Math.max(0, ...sizes));
  const rows: RebuildRow[] = [];
  for (const size of sizes) {
    const rules = all.slice(0, size);
    const firstLoad: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const registry = createRegistry();
      firstLoad.push(timeRebuild(registry, rules));
    }
    const registry = createRegistry();
    timeRebuild(registry, rules);
    const afterChange: number[] = [];
    for (let round = 0; round < rounds; round++) {
      // A new object for one rule, as the rule watcher hands on an edit.
      const changed = [...rules];
      const index = round % changed.length;
      changed[index] = { ...changed[index]! };
      afterChange.push(timeRebuild(registry, changed));
    }
    rows.push({
      rules: size,
      firstLoad: spread(firstLoad),
      afterChange: spread(afterChange),
    });
  }
  return rows;
}

/** Milliseconds for one `replace` and the `protectedTypes` read after it. */
function timeRebuild(
  registry: RebuildTarget,
  rules: readonly ClusterRule[],
): number {
  const started = performance.now();
  registry.replace(rules);
  const types = registry.protectedTypes;
  const elapsed = performance.now() - started;
  const want = rules.length === 0 ? 0 : 1;
  if (types !== want) {
    throw new Error(`Rebuild reported ${types} protected types, not ${want}`);
  }
  return elapsed;
}

/**
 * A consumer workspace in memory: every list is one page holding one
 * dependent of the listed type that refers to another VPC, and the live
 * object is the one under review.
 */
class OneDependentSource implements DependentSource {
  /** How many lists were asked for. */
  lists = 0;

  /** One page of one dependent that does not refer to the object. */
  async *pages(query: DependentQuery): AsyncIterable<readonly unknown[]> {
    this.lists++;
    await Promise.resolve();
    yield [{
      apiVersion: `${query.dependent.group}/${query.dependent.version}`,
      kind: "Thing",
      metadata: { name: "dependent-1", namespace: NAMESPACE },
      spec: { vpcRef: { name: "vpc-other" } },
    }];
  }

  /** The uid of the object under review. */
  liveUid(): Promise<string | undefined> {
    return Promise.resolve(TARGET_UID);
  }

  /** The metadata of the object under review. */
  liveMetadata(): Promise<Record<string, unknown> | undefined> {
    return Promise.resolve({ name: TARGET_NAME, uid: TARGET_UID });
  }

  /** No owner exists. */
  ownerObject(): Promise<Record<string, unknown> | undefined> {
    return Promise.resolve(undefined);
  }

  /** The workspace is not being deleted. */
  workspaceDeletedAt(): Promise<Date | undefined> {
    return Promise.resolve(undefined);
  }
  boundIdentities(): Promise<ReadonlyMap<string, string>> {
    return Promise.resolve(new Map());
  }
}

/** The DELETE review of the VPC every decision is about, as kcp sends it. */
function deleteReview(): AdmissionRequest {
  return {
    uid: "review-1",
    kind: { group: PROTECTED.group, version: PROTECTED.version, kind: "VPC" },
    resource: { ...PROTECTED },
    name: TARGET_NAME,
    namespace: NAMESPACE,
    operation: "DELETE",
    oldObject: {
      apiVersion: `${PROTECTED.group}/${PROTECTED.version}`,
      kind: "VPC",
      metadata: {
        name: TARGET_NAME,
        namespace: NAMESPACE,
        uid: TARGET_UID,
        annotations: { "kcp.io/cluster": CONSUMER },
      },
    },
  };
}

/** Options for {@linkcode measureDecision}. */
export interface DecisionOptions {
  /** Rule counts on the protected type to measure. @default {[1, 10, 100]} */
  ruleCounts?: readonly number[];
  /** Timed decisions per rule count. @default {2_000} */
  samples?: number;
  /** Untimed decisions before the timed ones, per rule count. @default {200} */
  warmup?: number;
}

/** The decision times at one rule count, in microseconds. */
export interface DecisionRow {
  /** Rules on the protected type, each with a dependent type of its own. */
  rules: number;
  /** The time of one `validate`. */
  decision: Spread;
}

/**
 * Times `DeletionValidator.validate` deciding one DELETE, one at a time,
 * `samples` times per rule count. Every decision lists each dependent type
 * once and allows the delete.
 *
 * @throws {Error} If a decision is not an allow after one list per rule.
 */
export async function measureDecision(
  options: DecisionOptions = {},
): Promise<DecisionRow[]> {
  const { ruleCounts = [1, 10, 100], samples = 2_000, warmup = 200 } = options;
  const request = deleteReview();
  const rows: DecisionRow[] = [];
  for (const count of ruleCounts) {
    const registry = new RuleRegistry();
    registry.replace(scaleRules(count));
    const source = new OneDependentSource();
    const validator = new DeletionValidator(registry, source);
    const decide = async (): Promise<number> => {
      const before = source.lists;
      const started = performance.now();
      const verdict = await validator.validate(request);
      const elapsed = performance.now() - started;
      if (verdict.outcome !== "allowed" || source.lists - before !== count) {
        throw new Error(
          `Decision with ${count} rules was ${verdict.outcome} after ${
            source.lists - before
          } lists`,
        );
      }
      return elapsed * 1_000;
    };
    for (let i = 0; i < warmup; i++) await decide();
    const times: number[] = [];
    for (let i = 0; i < samples; i++) times.push(await decide());
    rows.push({ rules: count, decision: spread(times) });
  }
  return rows;
}

/** The rebuild rows as a Markdown table, milliseconds as min / median / max. */
export function formatRebuildTable(rows: readonly RebuildRow[]): string {
  return [
    "| rules on one type | first load (ms) | rebuild after a change (ms) | rounds |",
    "| ---: | ---: | ---: | ---: |",
    ...rows.map((row) =>
      `| ${row.rules} | ${formatSpread(row.firstLoad, 2)} | ${
        formatSpread(row.afterChange, 2)
      } | ${row.firstLoad.count} |`
    ),
  ].join("\n");
}

/** The decision rows as a Markdown table, microseconds as min / median / max. */
export function formatDecisionTable(rows: readonly DecisionRow[]): string {
  return [
    "| rules on the type | validate() (us) | samples |",
    "| ---: | ---: | ---: |",
    ...rows.map((row) =>
      `| ${row.rules} | ${
        formatSpread(row.decision, 1)
      } | ${row.decision.count} |`
    ),
  ].join("\n");
}

if (import.meta.main) {
  console.log(
    "Rule index rebuild (RuleRegistry.replace, then protectedTypes), min / median / max:\n",
  );
  console.log(formatRebuildTable(measureRebuild()));
  console.log(
    "\nAdmission decision (DeletionValidator.validate, one page of 1 dependent per list), min / median / max:\n",
  );
  console.log(formatDecisionTable(await measureDecision()));
}
