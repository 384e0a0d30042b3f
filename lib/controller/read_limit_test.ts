import assert from "node:assert/strict";
import { ReadLimit } from "./read_limit.ts";

/** A read that ends when the test says, recording the order reads start in. */
function controlled(): {
  read: (name: string, signal: AbortSignal) => Promise<string>;
  started: string[];
  finish: (name: string) => void;
} {
  const started: string[] = [];
  const pending = new Map<string, () => void>();
  return {
    started,
    read: (name) =>
      new Promise((resolve) => {
        started.push(name);
        pending.set(name, () => resolve(name));
      }),
    finish: (name) => pending.get(name)!(),
  };
}

/** Lets promise callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

Deno.test("ReadLimit runs at most its capacity of reads at once, the others in the order they asked", async () => {
  const limit = new ReadLimit(2);
  const { read, started, finish } = controlled();
  const limited = limit.wrap(read);
  const signal = new AbortController().signal;
  const answers = ["a", "b", "c", "d"].map((name) => limited(name, signal));
  await settle();
  assert.deepEqual(started, ["a", "b"]);
  assert.equal(limit.running, 2);
  assert.equal(limit.waiting, 2);
  finish("b");
  await settle();
  assert.deepEqual(started, ["a", "b", "c"]);
  finish("a");
  finish("c");
  await settle();
  finish("d");
  assert.deepEqual(await Promise.all(answers), ["a", "b", "c", "d"]);
  assert.equal(limit.running, 0);
  assert.equal(limit.waiting, 0);
});

Deno.test("ReadLimit rejects a waiting read whose signal aborts, which never runs, and frees its turn after a read that throws", async () => {
  const limit = new ReadLimit(1);
  const { read, started, finish } = controlled();
  const limited = limit.wrap(read);
  const first = limited("a", new AbortController().signal);
  const abort = new AbortController();
  const second = limited("b", abort.signal);
  const third = limited("c", new AbortController().signal);
  abort.abort(new Error("stopped"));
  await assert.rejects(second, /stopped/);
  finish("a");
  await first;
  await settle();
  assert.deepEqual(started, ["a", "c"]);
  finish("c");
  await third;
  const failing = limit.wrap(() => Promise.reject(new Error("403")));
  await assert.rejects(failing("x", new AbortController().signal), /403/);
  assert.equal(limit.running, 0);
  await assert.rejects(
    limited("d", AbortSignal.abort(new Error("gone"))),
    /gone/,
  );
});

Deno.test("ReadLimit tells when each read gets its turn", async () => {
  const limit = new ReadLimit(1);
  const { read, finish } = controlled();
  const turns: string[] = [];
  const limited = limit.wrap(read, (name) => turns.push(name));
  const signal = new AbortController().signal;
  const answers = [limited("a", signal), limited("b", signal)];
  await settle();
  assert.deepEqual(turns, ["a"]);
  finish("a");
  await settle();
  assert.deepEqual(turns, ["a", "b"]);
  finish("b");
  await Promise.all(answers);
});

Deno.test("ReadLimit refuses a capacity that is not a positive integer", () => {
  assert.throws(() => new ReadLimit(0), RangeError);
  assert.throws(() => new ReadLimit(1.5), RangeError);
});
