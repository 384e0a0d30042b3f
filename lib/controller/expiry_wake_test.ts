import assert from "node:assert/strict";
import { ExpiryWake, wakeDelay } from "./expiry_wake.ts";

const NOW = Date.parse("2026-12-01T12:00:00Z");

Deno.test("wakeDelay() waits until a second after the expiry, at once for a past one, at most a day", () => {
  assert.equal(wakeDelay(NOW + 30_000, NOW), 31_000);
  assert.equal(wakeDelay(NOW, NOW), 1_000);
  assert.equal(wakeDelay(NOW - 60_000, NOW), 1_000);
  assert.equal(wakeDelay(NOW + 30 * 86_400_000, NOW), 86_400_000);
});

Deno.test("ExpiryWake.set() replaces its one timer, and stop() leaves none running", () => {
  let woken = 0;
  const wake = new ExpiryWake(() => woken++);
  wake.set(NOW + 3_600_000, { now: NOW });
  wake.set(NOW + 7_200_000, { now: NOW });
  wake.set(undefined, { now: NOW });
  wake.set(NOW + 3_600_000, { now: NOW });
  wake.stop();
  // Stopped: setting it again starts nothing (the test's op sanitizer
  // would fail on a timer left running).
  wake.set(NOW + 3_600_000, { now: NOW });
  assert.equal(woken, 0);
});
