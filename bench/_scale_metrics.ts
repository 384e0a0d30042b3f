/**
 * What the controller scale bench reads of its processes: Prometheus text
 * summed over label filters, a process's CPU time and peak memory from
 * `/proc`, and the requests kcp itself counted (its own
 * `apiserver_request_total`), so that a run's load on kcp can be told by
 * verb and resource whoever sent it.
 *
 * @module
 */
import type { KcpServer } from "../testing/mod.ts";

/** One sample of Prometheus text: its name, labels and value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of `name` in Prometheus exposition `text`. */
function samplesOf(text: string, name: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const match = LINE.exec(line);
    if (match === null || match[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(LABEL)) {
      labels[key!] = value!;
    }
    samples.push({ name, labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * The sum of every sample of `name` whose labels include `labels` (0 when
 * there is none): label order does not matter.
 */
export function sumOf(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number {
  let sum = 0;
  for (const s of samplesOf(text, name)) {
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) {
      sum += s.value;
    }
  }
  return sum;
}

/** utime + stime of a process (every thread), seconds. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 of stat(5), counted after the command name (field 2).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * utime + stime of the threads of a process, seconds: the main thread's
 * (where JavaScript runs), and every thread's summed by name (`comm`: V8's
 * helpers are `V8 DefaultWorke`, tokio's `tokio-runtime-w`, ...). Threads
 * that ended are not counted (their time is in {@linkcode cpuSeconds}).
 */
export async function threadCpuSeconds(
  pid: number,
): Promise<{ main: number; byName: Map<string, number> }> {
  const byName = new Map<string, number>();
  let main = 0;
  for await (const entry of Deno.readDir(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = await Deno.readTextFile(`/proc/${pid}/task/${entry.name}/stat`);
    } catch {
      continue; // ended meanwhile
    }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const seconds = (Number(fields[11]) + Number(fields[12])) / 100;
    byName.set(name, (byName.get(name) ?? 0) + seconds);
    if (entry.name === String(pid)) main = seconds;
  }
  return { main, byName };
}

/** Peak resident memory of a process (`VmHWM`), MB. */
export async function peakRssMb(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
}

/** Requests kcp counted, by `VERB resource[/subresource]`. */
export type RequestCounts = Map<string, number>;

/** Verbs that change something. */
export const WRITE_VERBS = new Set([
  "POST",
  "PUT",
  "PATCH",
  "APPLY",
  "DELETE",
  "DELETECOLLECTION",
]);

/**
 * kcp's own count of the requests it served (`apiserver_request_total`),
 * by verb and resource, read from its `/metrics` as a `system:masters`
 * identity. Undefined when kcp does not answer it.
 */
export async function kcpRequests(
  kcp: KcpServer,
): Promise<RequestCounts | undefined> {
  let text: string;
  try {
    const client = Deno.createHttpClient({ caCerts: [kcp.caPem] });
    try {
      const response = await fetch(`${kcp.baseUrl}/metrics`, {
        headers: {
          authorization: `Bearer ${kcp.identity("shardAdmin").token}`,
        },
        client,
        signal: AbortSignal.timeout(30_000),
      });
      text = await response.text();
      if (!response.ok) return undefined;
    } finally {
      client.close();
    }
  } catch {
    return undefined;
  }
  const counts: RequestCounts = new Map();
  for (const s of samplesOf(text, "apiserver_request_total")) {
    const { verb = "", resource = "", subresource = "" } = s.labels;
    const key = `${verb} ${resource}${
      subresource === "" ? "" : "/"
    }${subresource}`;
    counts.set(key, (counts.get(key) ?? 0) + s.value);
  }
  return counts;
}

/** `after - before`, keeping only keys that grew. */
export function countsSince(
  before: RequestCounts,
  after: RequestCounts,
): RequestCounts {
  const delta: RequestCounts = new Map();
  for (const [key, value] of after) {
    const grown = value - (before.get(key) ?? 0);
    if (grown > 0) delta.set(key, grown);
  }
  return delta;
}

/** The total of the counts whose verb `keep` accepts. */
export function totalOf(
  counts: RequestCounts,
  keep: (verb: string) => boolean = () => true,
): number {
  let total = 0;
  for (const [key, value] of counts) {
    if (keep(key.slice(0, key.indexOf(" ")))) total += value;
  }
  return total;
}

/** `PATCH dependencyrules/status 2000, POST subjectaccessreviews 2002, ...`, largest first. */
export function formatCounts(counts: RequestCounts, limit = 12): string {
  const sorted = [...counts].sort((a, b) => b[1] - a[1]);
  const shown = sorted.slice(0, limit).map(([k, v]) => `${k} ${v}`);
  const rest = sorted.slice(limit).reduce((sum, [, v]) => sum + v, 0);
  return [...shown, ...(rest > 0 ? [`others ${rest}`] : [])].join(", ");
}
