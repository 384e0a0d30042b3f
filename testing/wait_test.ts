import assert from "node:assert/strict";
import { GiveUp, waitFor } from "./wait.ts";

Deno.test("waitFor() returns the first defined probe value", async () => {
  let calls = 0;
  const value = await waitFor(
    "three calls",
    () => Promise.resolve(++calls === 3 ? "done" : undefined),
    {
      intervalMs: 1,
    },
  );
  assert.equal(value, "done");
  assert.equal(calls, 3);
});

Deno.test("waitFor() treats a throwing probe as not yet and names its last error on timeout", async () => {
  let calls = 0;
  await assert.rejects(
    waitFor("a broken thing", () => {
      calls++;
      return Promise.reject(new Error("connection refused"));
    }, { timeoutMs: 30, intervalMs: 5 }),
    /Timed out after 0.03 s waiting for a broken thing: last error: connection refused/,
  );
  assert.ok(calls >= 2, `probed ${calls} times`);
});

Deno.test("waitFor() keeps false and 0 as values, only undefined means not yet", async () => {
  assert.equal(await waitFor("false", () => Promise.resolve(false)), false);
  assert.equal(await waitFor("zero", () => Promise.resolve(0)), 0);
});

Deno.test("waitFor() ends at once when a probe throws GiveUp", async () => {
  let calls = 0;
  await assert.rejects(
    waitFor("a process that exited", () => {
      calls++;
      return Promise.reject(new GiveUp("exited with 70"));
    }, { timeoutMs: 60_000 }),
    /exited with 70/,
  );
  assert.equal(calls, 1);
});
