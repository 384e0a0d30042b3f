/**
 * Strings shared by their holders and counted: one copy of each cluster
 * name and namespace however many records hold it, forgotten when the last
 * holder lets go, so churn does not leak.
 *
 * @example Usage
 * ```ts
 * import { Interned } from "./interned.ts";
 *
 * const strings = new Interned();
 * const a = strings.intern("team-a"); // "team-a", counted once
 * strings.intern("team-a"); // the same string, counted twice
 * strings.count("team-a"); // 2
 * strings.release(a);
 * strings.release(a);
 * strings.size; // 0: no holder is left
 * ```
 *
 * @module
 */

/** One kept string and how many holders hold it. */
class Entry {
  /**
   * @param value The string, as first interned.
   * @param count How many holders hold it.
   */
  constructor(readonly value: string, public count: number) {}
}

/**
 * A set of strings with reference counts: {@linkcode Interned.intern} gives
 * every holder of an equal string the same string, and
 * {@linkcode Interned.release} forgets it once no holder is left.
 */
export class Interned {
  #entries = new Map<string, Entry>();

  /**
   * The kept copy of `value`, counted once more.
   *
   * @param value Any string.
   * @returns The string equal to `value` that every holder shares.
   */
  intern(value: string): string {
    const entry = this.#entries.get(value);
    if (entry !== undefined) {
      entry.count++;
      return entry.value;
    }
    this.#entries.set(value, new Entry(value, 1));
    return value;
  }

  /**
   * One holder of `value` lets go; at the last, it is forgotten. Releasing a
   * string not interned does nothing.
   *
   * @param value A string {@linkcode Interned.intern} gave.
   */
  release(value: string): void {
    const entry = this.#entries.get(value);
    if (entry === undefined) return;
    if (--entry.count === 0) this.#entries.delete(value);
  }

  /**
   * How many holders hold `value`.
   *
   * @param value Any string.
   * @returns Its count, 0 when it is not kept.
   */
  count(value: string): number {
    return this.#entries.get(value)?.count ?? 0;
  }

  /** How many distinct strings are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /** Forgets every string, whoever holds it. */
  clear(): void {
    this.#entries.clear();
  }
}
