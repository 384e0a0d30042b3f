import assert from "node:assert/strict";
import { durationText, sinceText } from "./since_text.ts";

Deno.test("durationText() says a time in its largest whole unit", () => {
  const cases: [number, string][] = [
    [-5_000, "0s"],
    [Number.NaN, "0s"],
    [999, "0s"],
    [45_000, "45s"],
    [12 * 60_000 + 59_000, "12m"],
    [3 * 3_600_000 + 1, "3h"],
    [47 * 3_600_000, "47h"],
    [9 * 86_400_000 + 3_600_000, "9d"],
  ];
  for (const [ms, text] of cases) assert.equal(durationText(ms), text, `${ms}`);
});

Deno.test("sinceText() names the time and, with a clock, how long ago", () => {
  const time = "2026-11-29T12:00:00Z";
  assert.equal(sinceText(time), `since ${time}`);
  assert.equal(
    sinceText(time, Date.parse("2026-11-29T15:00:00Z")),
    `since ${time} (3h ago)`,
  );
  assert.equal(
    sinceText(time, Date.parse(time) - 60_000),
    `since ${time} (0s ago)`,
  );
  assert.equal(sinceText("x\u001b[31m", 0), "since x\\u{1b}[31m");
});
