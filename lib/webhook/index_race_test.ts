import assert from "node:assert/strict";
import { listOrQuiet } from "./index_race.ts";
import type {
  IdleIndexReply,
  IndexAnswer,
  IndexOutcome,
} from "./index_reads.ts";
import type { Blockers } from "./review_list.ts";
import type { Blocker } from "./verdicts.ts";
import { vmBlocker as blocker } from "../../testing/fakes.ts";

/** What the fake reply and list saw. */
interface Seen {
  quietCalls: number;
  listCalls: number;
  took: number[];
  outcomes: IndexOutcome[];
  listAborted: boolean;
  quietAborted: boolean;
}

/** Resolves when `signal` aborts, noting it. */
function untilAbort(signal: AbortSignal, note: () => void): Promise<never> {
  return new Promise((_, reject) =>
    signal.addEventListener("abort", () => {
      note();
      reject(signal.reason);
    }, { once: true })
  );
}

/**
 * An idle index's reply and a list: `quiet` answers `proof` ("hang" never,
 * until aborted), the list finds `listed` after `listWait` resolves.
 */
function race(options: {
  quietFirst: boolean;
  proof: IndexAnswer | undefined | "hang";
  listed: Blocker[];
  listWait?: (signal: AbortSignal, seen: Seen) => Promise<void>;
  listFails?: boolean;
}) {
  const seen: Seen = {
    quietCalls: 0,
    listCalls: 0,
    took: [],
    outcomes: [],
    listAborted: false,
    quietAborted: false,
  };
  const reply: IdleIndexReply = {
    list: "race",
    quietFirst: options.quietFirst,
    freshnessMs: 10,
    listTook: (ms) => seen.took.push(ms),
    observe: (outcome) => seen.outcomes.push(outcome),
    quiet: (signal) => {
      seen.quietCalls++;
      if (options.proof === "hang") {
        return untilAbort(signal, () => seen.quietAborted = true);
      }
      return Promise.resolve(options.proof);
    },
  };
  const found: Blockers = { named: [], total: 0 };
  const run = listOrQuiet(reply, {
    signal: new AbortController().signal,
    found,
    maxNamed: 10,
    list: async (into, signal) => {
      seen.listCalls++;
      await options.listWait?.(signal, seen);
      for (const b of options.listed) {
        into.named.push(b);
        into.total++;
        if (options.listFails) throw new Error("the list failed");
      }
    },
  });
  return { run, seen, found };
}

Deno.test("proof first: a scope whose list was slow is not listed when the index shows itself quiet", async () => {
  const { run, seen, found } = race({
    quietFirst: true,
    proof: { named: [], total: 0 },
    listed: [blocker("vm-1")],
  });
  await run;
  assert.equal(seen.listCalls, 0);
  assert.equal(seen.quietCalls, 1);
  assert.deepEqual(found, { named: [], total: 0 });
  // Not listed: nothing to record, the mark stays.
  assert.deepEqual(seen.took, []);
});

Deno.test("proof first: a proof that fails leaves it to the list, whose time is recorded", async () => {
  const { run, seen, found } = race({
    quietFirst: true,
    proof: undefined,
    listed: [blocker("vm-1")],
  });
  await run;
  assert.equal(seen.quietCalls, 1);
  assert.equal(seen.listCalls, 1);
  assert.equal(found.total, 1);
  assert.equal(found.named[0]?.name, "vm-1");
  assert.equal(seen.took.length, 1);
  assert.ok(Number.isFinite(seen.took[0]));
});

Deno.test("list first: a quick list decides, no proof is tried, and its time is recorded", async () => {
  const { run, seen, found } = race({
    quietFirst: false,
    proof: "hang",
    listed: [blocker("vm-1")],
  });
  await run;
  assert.equal(seen.quietCalls, 0);
  assert.equal(found.total, 1);
  assert.deepEqual(seen.outcomes, ["idle"]);
  assert.equal(seen.took.length, 1);
  assert.ok(Number.isFinite(seen.took[0]));
});

Deno.test("list first: past the budget the proof answers, the list stops and the scope is marked slow", async () => {
  const { run, seen, found } = race({
    quietFirst: false,
    proof: { named: [], total: 0 },
    listed: [blocker("vm-1")],
    listWait: (signal, s) => untilAbort(signal, () => s.listAborted = true),
  });
  await run;
  assert.equal(seen.quietCalls, 1);
  assert.equal(seen.listAborted, true);
  assert.deepEqual(found, { named: [], total: 0 });
  assert.deepEqual(seen.took, [Infinity]);
});

Deno.test("list first: a list that answers after the proof began decides, and the proof stops", async () => {
  const { run, seen, found } = race({
    quietFirst: false,
    proof: "hang",
    listed: [blocker("vm-1")],
    listWait: async (_signal, s) => {
      while (s.quietCalls === 0) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
  });
  await run;
  assert.equal(seen.quietAborted, true);
  assert.equal(found.total, 1);
  assert.equal(seen.took.length, 1);
  assert.ok(seen.took[0]! >= 10);
});

Deno.test("a list that fails keeps what it found for the denial and throws, in either order", async () => {
  for (const quietFirst of [false, true]) {
    const { run, found, seen } = race({
      quietFirst,
      proof: quietFirst ? undefined : "hang",
      listed: [blocker("vm-1")],
      listFails: true,
    });
    await assert.rejects(run, /the list failed/);
    assert.equal(found.total, 1, `quietFirst ${quietFirst}`);
    assert.deepEqual(seen.took, []);
  }
});

Deno.test("proof first: a proof still open past its limit is stopped and the scope listed", async () => {
  const seen = { quietAborted: false, took: [] as number[] };
  const found: Blockers = { named: [], total: 0 };
  await listOrQuiet({
    list: "race",
    quietFirst: true,
    freshnessMs: 10,
    listTook: (ms) => seen.took.push(ms),
    observe: () => {},
    quiet: (signal) => untilAbort(signal, () => seen.quietAborted = true),
  }, {
    signal: new AbortController().signal,
    found,
    maxNamed: 10,
    quietLimitMs: 20,
    list: (into) => {
      into.named.push(blocker("vm-1"));
      into.total++;
      return Promise.resolve();
    },
  });
  assert.equal(seen.quietAborted, true);
  assert.equal(found.total, 1);
  assert.equal(seen.took.length, 1);
});
