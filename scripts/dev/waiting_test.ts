import assert from "node:assert/strict";
import { waitingFor } from "./waiting.ts";

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Colour codes, which a terminal running the tests would add. */
const COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** A writer collecting text without colour codes into `into`. */
const collect = (into: string[]) => (text: string) => {
  into.push(text.replace(COLOUR, ""));
};

Deno.test("waitingFor() says what it waits for, then a heartbeat while it lasts", async () => {
  const written: string[] = [];
  const value = await waitingFor(
    "kcp to answer /readyz",
    delay(200).then(() => 42),
    {
      hint: "(about half a minute)",
      terminal: false,
      write: collect(written),
      intervalMs: 50,
      tickMs: 5,
    },
  );
  assert.equal(value, 42);
  assert.equal(
    written[0],
    "      waiting for kcp to answer /readyz (about half a minute) ...\n",
  );
  const beats = written.slice(1);
  // At most one line every 50 ms of a 200 ms wait.
  assert.ok(beats.length >= 1 && beats.length <= 4, beats.join(""));
  for (const beat of beats) {
    assert.match(
      beat,
      /^ {6}\.\.\. still waiting for kcp to answer \/readyz \(0s\)\n$/,
    );
  }
});

Deno.test("waitingFor() prints nothing for a wait shorter than quietMs", async () => {
  const written: string[] = [];
  await waitingFor("a quick thing", delay(20), {
    quietMs: 1_000,
    terminal: false,
    write: collect(written),
    intervalMs: 1,
    tickMs: 5,
  });
  assert.deepEqual(written, []);
});

Deno.test("waitingFor() without announce prints only the heartbeat; a rejection passes through", async () => {
  const written: string[] = [];
  await assert.rejects(
    waitingFor(
      "a rule to be Ready",
      delay(120).then(() => Promise.reject(new Error("timed out"))),
      {
        announce: false,
        terminal: false,
        write: collect(written),
        intervalMs: 50,
        tickMs: 5,
      },
    ),
    /timed out/,
  );
  assert.ok(written.length >= 1, "a heartbeat was printed");
  assert.ok(written.every((line) => line.includes("still waiting for a rule")));
  const count = written.length;
  await delay(100);
  assert.equal(written.length, count, "nothing is printed after the wait");
});

Deno.test("waitingFor() on a terminal redraws one line and erases it at the end", async () => {
  const written: string[] = [];
  await waitingFor("kcp", delay(60), {
    terminal: true,
    write: collect(written),
    tickMs: 5,
  });
  assert.equal(written[0], "      waiting for kcp ...\n");
  assert.equal(written[1], "\r\x1b[K      ... waiting for kcp: 0s");
  assert.equal(written.at(-1), "\r\x1b[K");
  assert.ok(written.every((text, i) => i === 0 || !text.includes("\n")));
});
