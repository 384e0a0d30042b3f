/**
 * `deno task bench:kcp-startup`: how long a fresh test kcp takes from spawn
 * to `/readyz` 200, over several sequential starts (default 3, or the first
 * argument), each in a new root directory. Prints every run and the median.
 *
 * @module
 */
import { startKcp } from "../testing/mod.ts";
import { median, runCount } from "./_stats.ts";

const runs = runCount(Deno.args, { program: "kcp_startup", fallback: 3 });

const samples: number[] = [];
for (let i = 1; i <= runs; i++) {
  const kcp = await startKcp();
  samples.push(kcp.lastStartupMs);
  console.log(`run ${i}: ready in ${(kcp.lastStartupMs / 1000).toFixed(1)} s`);
  await kcp.stop();
}
console.log(
  `kcp startup-to-ready: median ${
    (median(samples) / 1000).toFixed(1)
  } s over ${runs} starts`,
);
