/**
 * Which lists were slow lately, by scope (a dependent type in a workspace,
 * or in one of its namespaces): what lets a review of an idle index try
 * the index's quiet proof **before** listing where a list was slower than
 * the freshness budget, instead of beside a list that would move the
 * whole workspace through the webhook again (docs/dependents_index.md,
 * "An idle index"). Only speed depends on it, never an answer: a proof
 * that fails still lists.
 *
 * Bounded: at most `maxScopes` scopes are remembered (the oldest mark goes
 * first) and each mark is forgotten after `forgetAfterMs`, so a workspace
 * that shrank is measured again.
 *
 * @module
 */

/** Options of {@linkcode SlowLists}. */
export interface SlowListsOptions {
  /** Most scopes remembered. @default {10000} */
  maxScopes?: number;
  /** How long a slow list is remembered. @default {600000} (10 minutes) */
  forgetAfterMs?: number;
  /** The clock, in milliseconds. @default {performance.now} */
  now?: () => number;
}

/** The scope of one dependent type's list for a review. */
export interface ListScope {
  /** The dependent type, `group/resource`. */
  type: string;
  /** The workspace's logical cluster. */
  cluster: string;
  /** The namespace listed; absent when every namespace is. */
  namespace?: string | undefined;
}

/** The scopes whose last list was slower than the freshness budget. */
export class SlowLists {
  /** When each slow scope was last marked, oldest first. */
  readonly #marked = new Map<string, number>();
  readonly #maxScopes: number;
  readonly #forgetAfterMs: number;
  readonly #now: () => number;

  /** An empty memo. */
  constructor(options: SlowListsOptions = {}) {
    this.#maxScopes = options.maxScopes ?? 10_000;
    this.#forgetAfterMs = options.forgetAfterMs ?? 600_000;
    this.#now = options.now ?? (() => performance.now());
  }

  /** How many scopes are remembered. */
  get size(): number {
    return this.#marked.size;
  }

  /** Whether the last list of `scope` was slow, within `forgetAfterMs`. */
  slow(scope: ListScope): boolean {
    const key = scopeKey(scope);
    const at = this.#marked.get(key);
    if (at === undefined) return false;
    if (this.#now() - at > this.#forgetAfterMs) {
      this.#marked.delete(key);
      return false;
    }
    return true;
  }

  /** Records whether a list of `scope` was slow; a quick one clears its mark. */
  record(scope: ListScope, slow: boolean): void {
    const key = scopeKey(scope);
    this.#marked.delete(key);
    if (!slow) return;
    this.#marked.set(key, this.#now());
    for (const oldest of this.#marked.keys()) {
      if (this.#marked.size <= this.#maxScopes) break;
      this.#marked.delete(oldest);
    }
  }
}

/** One string per scope; NUL cannot occur in a type, cluster or namespace. */
function scopeKey(scope: ListScope): string {
  return `${scope.type}\u0000${scope.cluster}\u0000${scope.namespace ?? ""}`;
}
