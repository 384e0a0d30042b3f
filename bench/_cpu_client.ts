/**
 * The floor of `webhook_cpu.ts`: a bare Deno client that sends, `count`
 * times, what a review must ask of kcp (the object's metadata GET and the
 * lists, all at once) over kept-alive HTTP/1.1 connections, and prints the CPU it
 * spent on them (user + system, microseconds) as JSON.
 *
 * ```sh
 * deno run --allow-net --allow-read --allow-env bench/_cpu_client.ts \
 *   <ca file> <count> <get url> <list url>...   # token in BENCH_TOKEN
 * ```
 *
 * @module
 */
import { cpuUsage } from "node:process";

const METADATA_ONLY =
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

const [caFile, countText, getUrl, ...listUrls] = Deno.args;
const token = Deno.env.get("BENCH_TOKEN") ?? "";
const count = Number(countText);
// HTTP/1.1 on kept-alive connections, as the webhook's review client reads
// (over HTTP/2 the same pair costs this client about half as much again).
const client = Deno.createHttpClient({
  caCerts: [await Deno.readTextFile(caFile!)],
  http2: false,
});
const headers = (accept: string) => ({
  accept,
  authorization: `Bearer ${token}`,
});
const pair = async () => {
  const [get, ...lists] = await Promise.all([
    fetch(getUrl!, { headers: headers(METADATA_ONLY), client }),
    ...listUrls.map((url) =>
      fetch(url, { headers: headers("application/json"), client })
    ),
  ]);
  const object = await get!.json() as { metadata?: { uid?: string } };
  for (const list of lists) {
    const items = (await list.json() as { items?: unknown[] }).items;
    if (items === undefined) throw new Error("a list failed");
  }
  if (object.metadata?.uid === undefined) {
    throw new Error("the floor's GET failed");
  }
};
// Warm the connections, then measure.
for (let i = 0; i < 5; i++) await pair();
const before = cpuUsage();
for (let i = 0; i < count; i++) await pair();
const spent = cpuUsage(before);
client.close();
console.log(JSON.stringify({ user: spent.user, system: spent.system, count }));
