import assert from "node:assert/strict";
import {
  BUSY_PASSES_BEFORE_SPACING,
  type PassClock,
  PassScheduler,
} from "./pass_scheduler.ts";

/** A clock whose time moves only when the test says so. */
class FakeClock implements PassClock {
  #now = 0;
  #nextId = 1;
  readonly #timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.#now;
  }

  after(ms: number, fn: () => void): () => void {
    const id = this.#nextId++;
    this.#timers.set(id, { at: this.#now + ms, fn });
    return () => this.#timers.delete(id);
  }

  /** Timers not fired yet. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves the time on by `ms`, firing the timers due, in order. */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const due = [...this.#timers].filter(([, t]) => t.at <= until)
        .sort(([, a], [, b]) => a.at - b.at)[0];
      if (due === undefined) break;
      const [id, timer] = due;
      this.#timers.delete(id);
      this.#now = Math.max(this.#now, timer.at);
      timer.fn();
    }
    this.#now = until;
  }
}

/** Lets settled promises run their callbacks. */
function flush(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** A pass that ends when the test says so, counting its starts. */
function gatedPass(): {
  run: () => Promise<void>;
  starts: () => number;
  /** Ends the pass under way. */
  end: () => void;
} {
  let starts = 0;
  let end: () => void = () => {};
  return {
    run: () => {
      starts++;
      const { promise, resolve } = Promise.withResolvers<void>();
      end = resolve;
      return promise;
    },
    starts: () => starts,
    end: () => end(),
  };
}

Deno.test("PassScheduler runs one pass for the triggers before it starts", () => {
  const clock = new FakeClock();
  let runs = 0;
  const passes = new PassScheduler(() => {
    runs++;
  }, { clock });
  passes.trigger();
  passes.trigger();
  passes.trigger();
  assert.equal(runs, 0, "not in the caller's task");
  assert.equal(clock.pending, 1, "one timer for all three");
  clock.advance(0);
  assert.equal(runs, 1);
  clock.advance(1_000);
  assert.equal(runs, 1);
});

Deno.test("PassScheduler never overlaps passes: triggers during a pass run one more after it", async () => {
  const clock = new FakeClock();
  const pass = gatedPass();
  const passes = new PassScheduler(pass.run, { clock });
  passes.trigger();
  clock.advance(0);
  assert.equal(pass.starts(), 1);
  passes.trigger();
  clock.advance(0);
  passes.trigger();
  clock.advance(0);
  assert.equal(pass.starts(), 1, "none while one is under way");
  pass.end();
  await flush();
  clock.advance(0);
  assert.equal(pass.starts(), 2, "one more for both triggers");
  pass.end();
  await flush();
  clock.advance(1_000);
  assert.equal(pass.starts(), 2);
});

Deno.test("PassScheduler starts passes at least minIntervalMs apart", async () => {
  const clock = new FakeClock();
  const pass = gatedPass();
  const passes = new PassScheduler(pass.run, { clock, minIntervalMs: 200 });
  passes.trigger();
  clock.advance(0);
  assert.equal(pass.starts(), 1, "the first pass starts at once");
  clock.advance(50);
  pass.end();
  await flush();
  passes.trigger();
  clock.advance(149);
  assert.equal(pass.starts(), 1);
  clock.advance(1);
  assert.equal(pass.starts(), 2, "200 ms after the first started");
  pass.end();
  await flush();
  clock.advance(500);
  passes.trigger();
  clock.advance(0);
  assert.equal(pass.starts(), 3, "at once when the last started long ago");
});

Deno.test("PassScheduler waits minIntervalMs after a pass a trigger during it asked for", async () => {
  const clock = new FakeClock();
  const pass = gatedPass();
  const passes = new PassScheduler(pass.run, { clock, minIntervalMs: 200 });
  passes.trigger();
  clock.advance(0);
  passes.trigger();
  clock.advance(300);
  pass.end();
  await flush();
  clock.advance(0);
  assert.equal(pass.starts(), 2, "the first started 300 ms ago: at once");
  passes.trigger();
  clock.advance(10);
  pass.end();
  await flush();
  clock.advance(189);
  assert.equal(pass.starts(), 2);
  clock.advance(1);
  assert.equal(pass.starts(), 3);
  pass.end();
  await flush();
});

Deno.test("PassScheduler.stop() waits for the pass under way and runs no more", async () => {
  const clock = new FakeClock();
  const pass = gatedPass();
  const passes = new PassScheduler(pass.run, { clock });
  passes.trigger();
  clock.advance(0);
  passes.trigger();
  clock.advance(0); // asks for one more after the pass
  let stopped = false;
  const stopping = passes.stop().then(() => stopped = true);
  await flush();
  assert.equal(stopped, false, "the pass is still under way");
  pass.end();
  await stopping;
  passes.trigger();
  clock.advance(1_000);
  assert.equal(pass.starts(), 1);
  assert.equal(clock.pending, 0, "no timer left behind");
});

Deno.test("PassScheduler.stop() cancels a pass not started yet", async () => {
  const clock = new FakeClock();
  let runs = 0;
  const passes = new PassScheduler(() => {
    runs++;
  }, { clock, minIntervalMs: 100 });
  passes.trigger();
  await passes.stop();
  assert.equal(clock.pending, 0);
  clock.advance(1_000);
  assert.equal(runs, 0);
});

Deno.test("PassScheduler hands a failed pass to onError and goes on", async () => {
  const clock = new FakeClock();
  const errors: unknown[] = [];
  let runs = 0;
  const passes = new PassScheduler(() => {
    runs++;
    if (runs === 1) throw new Error("sync");
    return Promise.reject(new Error("async"));
  }, { clock, onError: (error) => errors.push(error) });
  passes.trigger();
  clock.advance(0);
  passes.trigger();
  clock.advance(0);
  await flush();
  assert.deepEqual(errors.map((e) => (e as Error).message), ["sync", "async"]);
  passes.trigger();
  clock.advance(0);
  await flush();
  assert.equal(runs, 3);
  await passes.stop();
});

Deno.test("PassScheduler without onError throws a pass's error out of its timer", () => {
  const clock = new FakeClock();
  const passes = new PassScheduler(() => {
    throw new Error("boom");
  }, { clock });
  passes.trigger();
  assert.throws(() => clock.advance(0), /boom/);
  let runs = 0;
  const next = new PassScheduler(() => {
    runs++;
  }, { clock });
  next.trigger();
  clock.advance(0);
  assert.equal(runs, 1);
});

Deno.test("PassScheduler runs a pass asked for by a pass that returns nothing", () => {
  const clock = new FakeClock();
  let runs = 0;
  const passes = new PassScheduler(() => {
    runs++;
    if (runs === 1) passes.trigger();
  }, { clock });
  passes.trigger();
  clock.advance(0);
  assert.equal(runs, 2);
  assert.equal(clock.pending, 0);
});

Deno.test("PassScheduler uses the global timers by default", async () => {
  const { promise, resolve } = Promise.withResolvers<void>();
  const passes = new PassScheduler(() => resolve());
  passes.trigger();
  await promise;
  await passes.stop();
});

Deno.test("PassScheduler spaces passes further apart while changes keep coming, and back once quiet", () => {
  const clock = new FakeClock();
  const starts: number[] = [];
  const passes = new PassScheduler(() => {
    starts.push(clock.now());
  }, { clock, minIntervalMs: 200, maxIntervalMs: 1_600 });
  // A change every 50 ms for 20 s: each pass is followed by another trigger.
  for (let t = 0; t < 20_000; t += 50) {
    passes.trigger();
    clock.advance(50);
  }
  const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
  // The first passes keep the least spacing, then it grows to the cap.
  assert.deepEqual(
    gaps.slice(0, BUSY_PASSES_BEFORE_SPACING),
    Array(BUSY_PASSES_BEFORE_SPACING).fill(200),
  );
  assert.equal(Math.max(...gaps), 1_600);
  assert.ok(gaps.slice(-3).every((g) => g === 1_600));
  // A constant 200 ms spacing would have run 100 passes.
  assert.ok(starts.length < 30, `${starts.length} passes`);
  // Quiet for a while: a lone change runs at once again.
  clock.advance(10_000);
  const before = starts.length;
  passes.trigger();
  clock.advance(0);
  assert.equal(starts.length, before + 1);
  passes.trigger();
  clock.advance(200);
  assert.equal(starts.length, before + 2, "back at the least spacing");
});

Deno.test("PassScheduler without maxIntervalMs keeps the least spacing however busy", () => {
  const clock = new FakeClock();
  let passes = 0;
  const scheduler = new PassScheduler(() => {
    passes++;
  }, { clock, minIntervalMs: 200 });
  for (let t = 0; t < 10_000; t += 50) {
    scheduler.trigger();
    clock.advance(50);
  }
  // One every 200 ms from 0 to 10 s, both ends included.
  assert.equal(passes, 51);
});

Deno.test("PassScheduler with quickPasses starts that many passes without the spacing, then spaces them", () => {
  const clock = new FakeClock();
  const starts: number[] = [];
  const passes = new PassScheduler(() => {
    starts.push(clock.now());
  }, { clock, minIntervalMs: 200, quickPasses: 3 });
  // A lone change: each pass is followed by another trigger 5 ms later.
  for (let i = 0; i < 6; i++) {
    passes.trigger();
    clock.advance(5);
  }
  clock.advance(1_000);
  // The first pass at once, three quick ones, then the least spacing (the
  // triggers at 20 and 25 ms share the pass at 215).
  assert.deepEqual(starts, [0, 5, 10, 15, 215]);
});

Deno.test("PassScheduler's quick passes come back one per minIntervalMs", () => {
  const clock = new FakeClock();
  const starts: number[] = [];
  const passes = new PassScheduler(() => {
    starts.push(clock.now());
  }, { clock, minIntervalMs: 200, quickPasses: 2 });
  for (let t = 0; t < 20; t += 5) {
    passes.trigger();
    clock.advance(5);
  }
  clock.advance(200);
  // 0 at once, 5 and 10 quick, then the spacing: 210.
  assert.deepEqual(starts, [0, 5, 10, 210]);
  // About 200 ms after the last quick one, one is back, not two.
  passes.trigger();
  clock.advance(0);
  passes.trigger();
  clock.advance(0);
  assert.deepEqual(starts, [0, 5, 10, 210, 220]);
  clock.advance(199);
  assert.equal(starts.length, 5, "none left: the spacing");
  clock.advance(1);
  assert.deepEqual(starts, [0, 5, 10, 210, 220, 420]);
});

Deno.test("PassScheduler keeps its rate with quickPasses while changes keep coming", () => {
  const clock = new FakeClock();
  const starts: number[] = [];
  const passes = new PassScheduler(() => {
    starts.push(clock.now());
  }, { clock, minIntervalMs: 200, maxIntervalMs: 1_600, quickPasses: 4 });
  for (let t = 0; t < 20_000; t += 50) {
    passes.trigger();
    clock.advance(50);
  }
  const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
  // The spacing still grows to the cap, and no quick pass once it has:
  // tens of passes, not the 400 of one per change.
  assert.ok(gaps.slice(-3).every((g) => g === 1_600));
  assert.ok(starts.length < 45, `${starts.length} passes`);
});
