/**
 * What the standard CEL functions cost a `when`'s budget: every overload of
 * `@bufbuild/cel`'s standard library that takes a string, bytes or a value of
 * any type is replaced by one that charges for the characters and bytes it
 * reads and produces, then runs the original. The charge does not depend on
 * where a string comes from (the object, a literal, a concatenation), so a
 * comprehension that runs a function over a literal for each element pays
 * for it too.
 *
 * - Every such function costs 1 unit per {@linkcode CHARS_PER_UNIT}
 *   characters (UTF-16 code units) or bytes of its string and bytes operands,
 *   charged before it runs, and as much for a string or bytes result, charged
 *   after; a comparison (`==`, `<`...), `startsWith()` and `endsWith()` read
 *   at most the shorter operand's length of each, and are charged that.
 * - `int()` and `uint()` of a string cost, on top, the square of its length
 *   over {@linkcode QUADRATIC_PARSE_DIVISOR}: JavaScript's `BigInt()` parse,
 *   which they run, is quadratic in the digits.
 * - `x in list` costs {@linkcode IN_LIST_UNITS} per element of the list, the
 *   element's read included.
 * - `size()` of a string counts code points in one pass rather than
 *   spreading the string into an array of them.
 *
 * `matches()` is charged apart, by the regular expression's work
 * (`regexCost` in `./limits.ts`).
 *
 * @module
 */
import {
  type CelFunc,
  celFunc,
  celMethod,
  CelScalar,
  type CelType,
  type CelValue,
  isCelError,
  isCelList,
} from "@bufbuild/cel";

/**
 * Characters (UTF-16 code units) or bytes of a function's operands and
 * result that cost one unit. Measured (`bench/when_cost.ts`), the slowest of
 * them (`int()` of a string, `contains()` of a pattern whose first character
 * matches everywhere, `size()`) take some 5 to 25 ns of CPU per unit so
 * charged, where one unit per 64 characters read let them take 0.2 to 5
 * microseconds.
 */
export const CHARS_PER_UNIT = 4;

/**
 * `int()` and `uint()` of a string of `n` characters cost `n * n` over this
 * on top: `BigInt()` of a 64 000-digit string takes some 7 ms, the square
 * over this some 125 000 units.
 */
export const QUADRATIC_PARSE_DIVISOR = 32_768;

/**
 * What `x in list` costs per element of the list: the read of the element
 * (1) and its comparison through the list's iterator, which measured some
 * 0.15 microseconds of CPU per element of an object's list.
 */
export const IN_LIST_UNITS = 4;

/**
 * The functions that read at most as many characters of each operand as the
 * shorter one has: comparisons, `startsWith()` and `endsWith()`.
 */
const BY_SHORTER = new Set([
  "_==_",
  "_!=_",
  "_<_",
  "_<=_",
  "_>_",
  "_>=_",
  "startsWith",
  "endsWith",
]);

/** The functions not wrapped: `matches()` is charged by its own hook. */
const NOT_WRAPPED = new Set(["matches"]);

/**
 * The units that `length` characters or bytes cost (0 for fewer than
 * {@linkcode CHARS_PER_UNIT}).
 *
 * @param length Characters or bytes.
 * @returns Units.
 */
export function lengthCost(length: number): number {
  return Math.floor(length / CHARS_PER_UNIT);
}

/**
 * The characters of a string or the bytes of a `Uint8Array`, 0 for any
 * other value.
 *
 * @param value A CEL value.
 * @returns Its length in characters or bytes.
 */
export function operandLength(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (value instanceof Uint8Array) return value.byteLength;
  return 0;
}

/**
 * The code points of a string, as CEL's `size()` counts them (a surrogate
 * pair is one, a lone surrogate one), in one pass.
 *
 * @param text The string.
 * @returns Its number of code points.
 */
export function codePoints(text: string): number {
  let count = text.length;
  const last = text.length - 1;
  for (let i = 0; i < last; i++) {
    const high = text.charCodeAt(i);
    if (high >= 0xd800 && high <= 0xdbff) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}

/**
 * What a call costs before it runs, in units: its string and bytes operands,
 * and the extra of `int()`/`uint()` of a string and of `in` over a list.
 *
 * @param name The function's name (`contains`, `_==_`, `@in`...).
 * @param operands The target (for a method) and the arguments.
 * @returns Units.
 */
export function callCost(name: string, operands: readonly unknown[]): number {
  let length = 0;
  if (BY_SHORTER.has(name) && operands.length === 2) {
    length = 2 *
      Math.min(operandLength(operands[0]), operandLength(operands[1]));
  } else {
    for (const operand of operands) length += operandLength(operand);
  }
  let units = lengthCost(length);
  if ((name === "int" || name === "uint") && typeof operands[0] === "string") {
    units += Math.floor(length * length / QUADRATIC_PARSE_DIVISOR);
  }
  if (name === "@in" && isCelList(operands[1])) {
    units += (IN_LIST_UNITS - 1) * operands[1].size;
  }
  return units;
}

/**
 * The standard functions, costed: one replacement for each overload of
 * `std` (the functions of an environment without options) that takes a
 * string, bytes or any value, with the same signature, so that an
 * environment given them in its `funcs` runs them instead.
 *
 * @param std The standard functions.
 * @param charge Spends units of the evaluation running now; throws once
 * its budget is spent.
 * @returns The replacements.
 */
export function costedFuncs(
  std: Iterable<CelFunc>,
  charge: (units: number) => void,
): CelFunc[] {
  const costed: CelFunc[] = [];
  for (const func of std) {
    if (NOT_WRAPPED.has(func.name)) continue;
    const types = [...func.arguments];
    if (func.target !== undefined) types.push(func.target);
    if (!types.some(costly)) continue;
    costed.push(wrap(func, charge));
  }
  return costed;
}

/** Whether a parameter type may hold a string or bytes. */
function costly(type: CelType): boolean {
  return type === CelScalar.STRING || type === CelScalar.BYTES ||
    type === CelScalar.DYN;
}

/** One overload, charged, with its signature. */
function wrap(func: CelFunc, charge: (units: number) => void): CelFunc {
  const name = func.name;
  const size = name === "size" && (func.target ?? func.arguments[0]) ===
      CelScalar.STRING;
  const run = (target: CelValue | undefined, args: CelValue[]) => {
    const operands = target === undefined ? args : [target, ...args];
    charge(callCost(name, operands));
    if (size) return BigInt(codePoints(operands[0] as string));
    const result = func.call(0, target, args);
    if (result === undefined) {
      throw new Error(`no overload of ${name} for these arguments`);
    }
    if (isCelError(result)) throw result;
    charge(lengthCost(operandLength(result)));
    return result;
  };
  // The signature is the original's; the library checks the arguments
  // against it before the implementation runs.
  type Impl = Parameters<typeof celFunc>[3];
  type MethodImpl = Parameters<typeof celMethod>[4];
  if (func.target === undefined) {
    const impl = (...args: CelValue[]) => run(undefined, args);
    return celFunc(
      name,
      func.arguments,
      func.result,
      impl as unknown as Impl,
    );
  }
  const impl = function (this: CelValue, ...args: CelValue[]) {
    return run(this, args);
  };
  return celMethod(
    name,
    func.target,
    func.arguments,
    func.result,
    impl as unknown as MethodImpl,
  );
}
