/**
 * What the plan remembers between passes, owned by whoever runs them: each
 * `Reconciler` builds one `PlanMemo` and passes it to every
 * `planReconcile`. A pass over thousands of rules of which few changed
 * reuses what an earlier pass computed from the same objects (the watch
 * caches keep an object until a newer version replaces it, and the plan's
 * parts hand out the same objects while they do not change); nothing is
 * kept in a module, so two reconcilers (an old leader's and a new one's)
 * or two tests never share what they found.
 *
 * A memo changes how much a pass computes, never what it plans: a plan
 * with a fresh memo equals the plan with a warm one for the same input.
 * Each part of the plan says what it keeps in its own memo type; this
 * class holds them all.
 *
 * @example Usage
 * ```ts
 * import { PlanMemo } from "./plan_memo.ts";
 *
 * const memo = new PlanMemo(); // one per reconciler, for all its passes
 * ```
 *
 * @module
 */
import type { ConfigurationMemo } from "./configuration_plan.ts";
import type { CoverMemo, RulePlanMemo } from "./rule_plan.ts";
import type { RuleStatusMemo } from "./rule_status_plan.ts";
import type { IndexAccessMemo } from "./index_access.ts";
import { WhenEnvironment } from "../when/mod.ts";

/**
 * Everything the plan's parts remember between passes: the rules' analysis
 * and the reads they need (`rule_plan.ts`), each rule's cover
 * (`rule_cover.ts`) with the checks of its field paths in each schema
 * (`lib/exports/export_checks.ts`), each rule's settled conditions
 * (`rule_status_plan.ts`) with its `spec.when` problem and Enforced message
 * (`rule_conditions.ts`), the conditions each object was
 * found to show (`status_tally.ts`), each rule's reads and their keys
 * (`webhook_access.ts`) and those that feed the dependents index
 * (`index_access.ts`), each configuration found up to date
 * (`configuration_plan.ts`), the provider URLs and each configuration's
 * canonical webhooks (`webhook_config.ts`). Objects are held weakly: what
 * the watch caches drop, the memo drops.
 */
export class PlanMemo
  implements
    RulePlanMemo,
    CoverMemo,
    RuleStatusMemo,
    IndexAccessMemo,
    ConfigurationMemo {
  /** The last rules analyzed, and what was found. */
  analysis: RulePlanMemo["analysis"] = undefined;
  /** The last rules whose reads were asked for, and those reads. */
  accessNeeds: RulePlanMemo["accessNeeds"] = undefined;
  /** Each rule object's last cover. */
  readonly covers: CoverMemo["covers"] = new WeakMap();
  /** The checks of field paths in each schema read. */
  readonly pathChecks: CoverMemo["pathChecks"] = new WeakMap();
  /** Each rule object's last settled conditions, with their inputs. */
  readonly settled: RuleStatusMemo["settled"] = new WeakMap();
  /** Each rule object's `spec.when` problem (`null`: none). */
  readonly whenProblems: RuleStatusMemo["whenProblems"] = new WeakMap();
  /** The CEL environment the rules' `when`s are compiled in. */
  readonly whenEnvironment: RuleStatusMemo["whenEnvironment"] =
    new WhenEnvironment();
  /** What each rule object denies, as its Enforced message starts. */
  readonly denied: RuleStatusMemo["denied"] = new WeakMap();
  /** The conditions each object was last found to show. */
  readonly shown: RuleStatusMemo["shown"] = new WeakMap();
  /** The keys of the frozen access refs. */
  readonly accessKeys: RuleStatusMemo["accessKeys"] = new WeakMap();
  /** Each rule object's reads the webhook must be allowed. */
  readonly accessNeeded: RuleStatusMemo["accessNeeded"] = new WeakMap();
  /** Each rule object's reads that feed the dependents index. */
  readonly indexNeeded: IndexAccessMemo["indexNeeded"] = new WeakMap();
  /** What each configuration read was last found up to date with. */
  readonly upToDate: ConfigurationMemo["upToDate"] = new WeakMap();
  /** The provider URLs, by webhook URL and provider path. */
  readonly providerUrls: ConfigurationMemo["providerUrls"] = new Map();
  /** Each configuration read's canonical webhooks. */
  readonly normalisedWebhooks: ConfigurationMemo["normalisedWebhooks"] =
    new WeakMap();
}
