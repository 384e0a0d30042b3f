/**
 * The state of one evaluation of a `when`: its budget, charged by every
 * read of the object, and the object's lazy, read-only views that
 * `@bufbuild/cel` reads (`celMap` over a view of an object, `celList` over
 * a proxy of an array). Each field or index looked up and each element
 * or key iterated over costs 1, listing the keys of a map 1 per key, and a
 * string read 1 more per 64 characters. The object is never written to.
 *
 * @example Reading through a view
 * ```ts
 * import { Evaluation } from "./evaluation.ts";
 *
 * const evaluation = new Evaluation(10);
 * const view = evaluation.toCel({ spec: { replicas: 3 } });
 * evaluation.spent; // 0: nothing read yet
 * ```
 *
 * @module
 */
import {
  type CelInput,
  type CelList,
  celList,
  type CelMap,
  celMap,
  type CelUint,
} from "@bufbuild/cel";
import { RE2JS } from "@bufbuild/re2";
import { regexCost, WHEN_COST_LIMIT } from "./limits.ts";

/** A key of a CEL map. */
type MapKey = bigint | string | boolean | CelUint;

/** Thrown when an evaluation's budget is spent; the result says so. */
export class BudgetExceeded extends Error {
  /**
   * The error of a spent budget: the review's when `shared`, else the
   * evaluation's own.
   */
  constructor(shared: boolean) {
    super(
      shared
        ? "the review's budget for conditions is spent"
        : `the condition exceeded its budget of ${WHEN_COST_LIMIT} units`,
    );
  }
}

/** The state of one evaluation: its budget and its views of the object. */
export class Evaluation {
  /** Set once the budget is spent: the result is then an error. */
  exceeded = false;
  readonly #limit: number;
  #remaining: number;
  /** One view per JSON object or array, so that keys are listed once. */
  #views: Map<object, CelMap | CelList> | undefined;
  /** Patterns compiled in this evaluation (never shared across them). */
  #regexes: Map<string, RE2JS> | undefined;

  /** An evaluation that may spend `limit` units. */
  constructor(limit: number) {
    this.#limit = limit;
    this.#remaining = limit;
  }

  /** The units spent so far (at most the limit). */
  get spent(): number {
    return Math.min(this.#limit, this.#limit - this.#remaining);
  }

  /** Spends `units` of the budget, throwing once it is exceeded. */
  charge(units: number): void {
    this.#remaining -= units;
    if (this.#remaining < 0) {
      this.exceeded = true;
      throw new BudgetExceeded(false);
    }
  }

  /** A JSON value as a CEL value; objects and arrays as lazy views. */
  toCel(value: unknown): CelInput {
    switch (typeof value) {
      case "boolean":
        return value;
      case "string":
        this.charge(value.length >> 6);
        return value;
      case "number":
        return Number.isSafeInteger(value) ? BigInt(value) : value;
      case "bigint":
        return value;
      case "object": {
        if (value === null) return null;
        const seen = this.#views?.get(value);
        if (seen !== undefined) return seen;
        let view: CelMap | CelList;
        if (Array.isArray(value)) {
          view = celList(arrayView(value, this));
        } else if (isPlainObject(value)) {
          view = celMap(new ObjectView(value, this));
        } else {
          throw new TypeError(
            `unsupported value in the object: ${
              value.constructor?.name ?? "object"
            }`,
          );
        }
        (this.#views ??= new Map()).set(value, view);
        return view;
      }
      default:
        throw new TypeError(`unsupported value in the object: ${typeof value}`);
    }
  }

  /** The `matches()` matcher of a pattern, charging every test. */
  regex(pattern: string): { test(text: string): boolean } {
    let compiled = this.#regexes?.get(pattern);
    if (compiled === undefined) {
      this.charge(pattern.length);
      compiled = RE2JS.compile(pattern);
      (this.#regexes ??= new Map()).set(pattern, compiled);
    }
    const regex = compiled;
    const size = regex.re2().prog.numInst();
    return {
      test: (text: string) => {
        this.charge(regexCost(text.length, size));
        return regex.test(text);
      },
    };
  }
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * A read-only view of a JSON array for `celList`: every index read (and so
 * every step of an iteration) is charged, and elements are converted when
 * read. The proxy's target is an empty array of its own, so that a frozen
 * array imposes no invariants on what the view returns.
 */
function arrayView(array: readonly unknown[], evaluation: Evaluation) {
  const index = (property: string | symbol) =>
    typeof property === "string"
      ? arrayIndex(property, array.length)
      : undefined;
  return new Proxy<CelInput[]>([], {
    get(target, property, receiver) {
      if (property === "length") return array.length;
      const at = index(property);
      if (at === undefined) return Reflect.get(target, property, receiver);
      evaluation.charge(1);
      return evaluation.toCel(array[at]);
    },
    has: (target, property) =>
      property === "length" || index(property) !== undefined ||
      Reflect.has(target, property),
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false,
    setPrototypeOf: () => false,
  });
}

/** The index a property key names in an array of `length`, if any. */
function arrayIndex(property: string, length: number): number | undefined {
  if (!/^(?:0|[1-9]\d{0,9})$/.test(property)) return undefined;
  const index = Number(property);
  return index < length ? index : undefined;
}

/**
 * A read-only view of a JSON object for `celMap`: own string keys only,
 * every lookup and every step of an iteration charged, values converted when
 * read.
 */
class ObjectView implements ReadonlyMap<MapKey, CelInput> {
  readonly #object: Record<string, unknown>;
  readonly #evaluation: Evaluation;
  #keys: string[] | undefined;

  constructor(object: Record<string, unknown>, evaluation: Evaluation) {
    this.#object = object;
    this.#evaluation = evaluation;
  }

  get size(): number {
    return this.#ownKeys().length;
  }

  get(key: MapKey): CelInput | undefined {
    this.#evaluation.charge(1);
    if (typeof key !== "string" || !Object.hasOwn(this.#object, key)) {
      return undefined;
    }
    return this.#evaluation.toCel(this.#object[key]);
  }

  has(key: MapKey): boolean {
    return this.get(key) !== undefined;
  }

  *keys(): MapIterator<MapKey> {
    for (const key of this.#ownKeys()) {
      this.#evaluation.charge(1);
      yield key;
    }
  }

  *values(): MapIterator<CelInput> {
    for (const [, value] of this.entries()) yield value;
  }

  *entries(): MapIterator<[MapKey, CelInput]> {
    for (const key of this.#ownKeys()) {
      this.#evaluation.charge(1);
      yield [key, this.#evaluation.toCel(this.#object[key])];
    }
  }

  forEach(
    callback: (
      value: CelInput,
      key: MapKey,
      map: ReadonlyMap<MapKey, CelInput>,
    ) => void,
    thisArg?: unknown,
  ): void {
    for (const [key, value] of this.entries()) {
      callback.call(thisArg, value, key, this);
    }
  }

  [Symbol.iterator](): MapIterator<[MapKey, CelInput]> {
    return this.entries();
  }

  #ownKeys(): string[] {
    if (this.#keys === undefined) {
      const keys = Object.keys(this.#object);
      this.#evaluation.charge(keys.length);
      this.#keys = keys;
    }
    return this.#keys;
  }
}
