/**
 * `deno task bench:kcp-startup`: how long a fresh test kcp takes from spawn
 * to `/readyz` 200, over several sequential starts (default 3, or the first
 * argument), each in a new root directory. Prints every run and the median.
 *
 * @module
 */
import { startKcp } from "../tests/harness/mod.ts";

const runs = Number(Deno.args[0] ?? "3");
if (!Number.isInteger(runs) || runs < 1) {
  console.error(
    `kcp_startup: the run count must be a positive integer: current value is '${
      Deno.args[0]
    }'`,
  );
  Deno.exit(2);
}

const samples: number[] = [];
for (let i = 1; i <= runs; i++) {
  const kcp = await startKcp();
  samples.push(kcp.lastStartupMs);
  console.log(`run ${i}: ready in ${(kcp.lastStartupMs / 1000).toFixed(1)} s`);
  await kcp.stop();
}
const sorted = [...samples].sort((a, b) => a - b);
const median = sorted.length % 2 === 1
  ? sorted[(sorted.length - 1) / 2]!
  : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
console.log(
  `kcp startup-to-ready: median ${
    (median / 1000).toFixed(1)
  } s over ${runs} starts`,
);
