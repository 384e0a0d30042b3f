/**
 * How fresh a watch-fed index of dependents can be shown to be, on a real
 * kcp (issue 31, items 2 and 3; findings in `docs/dependents_index.md`).
 *
 * ```sh
 * bash scripts/deno.sh run --allow-all bench/watch_freshness.ts \
 *   [--kcp-version=v0.28.1] [--sharded] [--rounds=5] [--long-seconds=150]
 * ```
 *
 * It starts one kcp (or, with `--sharded`, two shards behind a front-proxy,
 * consumer c1 on shard `root` and c2 on `shard-1`) and builds the test
 * topology (`testing/topology.ts`) with a VPC and a VM in each consumer.
 * `user-1` gets nothing but `apiexports/content` (get, list, watch) on the
 * network and compute exports, and `access` to the providers' workspaces;
 * `dependency-webhook` gets list and watch of VPCs and VMs in each shard's
 * `system:admin`. Three watch endpoints are compared: each APIExport virtual
 * workspace URL (wildcard, as `user-1`), each shard's own wildcard (as
 * `shard-admin`, `system:masters`) and the front-proxy for cluster c1 (as
 * `admin`). It prints Markdown tables of:
 *
 * 1. access: who may list VMs where (status, items, clusters);
 * 2. probes of the VM type right after a write (of a VPC in c1: the VM type
 *    idle; or of a VM in c2): lists (consistent, `resourceVersion=0`,
 *    `NotOlderThan`, a selector matching nothing) and watch-lists
 *    (`sendInitialEvents=true`): the probe's resourceVersion minus the
 *    write's (negative: older than the write), and the time to the answer or
 *    to the initial-events-end bookmark;
 * 3. a watch of VMs opened at a resourceVersion from before a VPC write,
 *    with `timeoutSeconds` 1 and 3, and 3 after a consistent list made the
 *    watch cache catch up: when the first bookmark comes, whether it covers
 *    the write, and when the stream ends;
 * 4. long watches with bookmarks of an idle type (VPCs) and a busy one (VMs,
 *    a write in c2 every 2 s): bookmark times and how far behind the newest
 *    write each bookmark's resourceVersion is.
 *
 * Timings are min / median / max in ms over `--rounds` rounds (default 5).
 *
 * @module
 */
import {
  buildTopology,
  createWorkspace,
  type IdentityName,
  type KcpApi,
  type KcpServer,
  type ShardedKcp,
  startKcp,
  startShardedKcp,
  waitForEndpointUrls,
  waitForExportIdentity,
} from "../testing/mod.ts";
import { parseKcpVersion } from "../testing/kcp/binaries.ts";
import { formatSpread, spread } from "./_stats.ts";

const flags = new Map(
  Deno.args.map((a) => a.replace(/^--/, "").split("=")).map((
    [k, v],
  ) => [k!, v ?? "true"]),
);
const version = parseKcpVersion(flags.get("kcp-version") ?? "v0.31.2");
const sharded = flags.has("sharded");
const rounds = Number(flags.get("rounds") ?? 5);
const longSeconds = Number(flags.get("long-seconds") ?? 150);

const RES = {
  vms: "apis/compute.example.com/v1alpha1/virtualmachines",
  vpcs: "apis/network.example.com/v1alpha1/vpcs",
} as const;
type Res = keyof typeof RES;
const NOTHING = "labelSelector=x%2C%21x";
const WATCH_LIST =
  "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";

let single: KcpServer | undefined;
let multi: ShardedKcp | undefined;
if (sharded) multi = await startShardedKcp({ version });
else single = await startKcp({ version });
const front: KcpApi = multi?.front ?? single!;
const shards: { name: string; api: KcpApi }[] = multi
  ? Object.values(multi.shards).map((s) => ({ name: s.name, api: s }))
  : [{ name: "root", api: single! }];
const client = Deno.createHttpClient({
  caCerts: [multi?.caPem ?? front.caPem],
});
const since = (t0: number) => performance.now() - t0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const auth = (who: IdentityName) => ({
  authorization: `Bearer ${front.identity(who).token}`,
});

/** What the script reads of an answer or of a watch event's object. */
interface Body {
  metadata?: {
    resourceVersion?: string;
    annotations?: Record<string, string>;
  };
  items?: Body[];
  message?: string;
}

/** One request: status, decoded body, time. */
async function call(
  method: string,
  url: string,
  who: IdentityName,
  body?: unknown,
) {
  const t0 = performance.now();
  const r = await fetch(url, {
    method,
    client,
    headers: { ...auth(who), "content-type": "application/merge-patch+json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  const ms = since(t0);
  let parsed: Body = {};
  try {
    parsed = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: r.status, body: parsed, ms, rv: rvOf(parsed) };
}
const rvOf = (b: Body) => Number(b.metadata?.resourceVersion ?? NaN);

interface WatchEvent {
  ms: number;
  type: string;
  rv: number;
  end: boolean;
  /** The newest write's resourceVersion when the event arrived. */
  written: number;
}

let lastWrite = 0;

/** Reads a watch until `stop` says so, the stream ends or `maxMs` passes. */
async function watch(
  url: string,
  who: IdentityName,
  stop: (e: WatchEvent) => boolean,
  maxMs: number,
) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), maxMs);
  const t0 = performance.now();
  const out: {
    status: number;
    events: WatchEvent[];
    endedMs?: number;
    error?: string | undefined;
  } = { status: 0, events: [] };
  try {
    const r = await fetch(url, {
      client,
      signal: ac.signal,
      headers: auth(who),
    });
    out.status = r.status;
    if (!r.ok) {
      out.error = ((await r.json()) as Body).message?.slice(0, 100);
      return out;
    }
    const reader = r.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const e = JSON.parse(buf.slice(0, nl)) as {
          type: string;
          object: Body;
        };
        buf = buf.slice(nl + 1);
        const ev: WatchEvent = {
          ms: since(t0),
          type: e.type,
          rv: rvOf(e.object),
          end: e.object.metadata?.annotations?.["k8s.io/initial-events-end"] ===
            "true",
          written: lastWrite,
        };
        if (e.type === "ERROR") out.error = e.object.message?.slice(0, 100);
        out.events.push(ev);
        if (stop(ev)) {
          ac.abort();
          return out;
        }
      }
    }
    out.endedMs = since(t0);
  } catch (error) {
    if (!ac.signal.aborted) out.error = String(error).slice(0, 100);
  } finally {
    clearTimeout(timer);
  }
  return out;
}

function table(title: string, columns: string): void {
  const head = columns.split("|");
  const where = `kcp ${version}${sharded ? ", two shards" : ""}`;
  console.log(`\n### ${title} (${where})\n\n| ${head.join(" | ")} |`);
  console.log(`|${head.map(() => " --- ").join("|")}|`);
}
const row = (...cells: unknown[]) => console.log(`| ${cells.join(" | ")} |`);
const fmt = (v: number[]) => v.length ? formatSpread(spread(v)) : "-";
const rbac = (kind: string, name: string, rest: object) => ({
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind,
  metadata: { name },
  ...rest,
});
const binding = (name: string, user: string) =>
  rbac("ClusterRoleBinding", name, {
    roleRef: {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name,
    },
    subjects: [{
      apiGroup: "rbac.authorization.k8s.io",
      kind: "User",
      name: user,
    }],
  });
const list = (items: object[]) =>
  JSON.stringify({ apiVersion: "v1", kind: "List", items });

try {
  // Topology, objects and grants.
  const C1 = "root:consumers:c1", C2 = "root:consumers:c2";
  if (multi) {
    await createWorkspace(front, C1, { shard: "root" });
    await createWorkspace(front, C2, { shard: "shard-1" });
  }
  const topo = await buildTopology(front, { consumerPaths: [C1, C2] });
  const [c1, c2] = topo.consumers.map((c) => c.cluster) as [string, string];
  const providers = { vms: topo.compute, vpcs: topo.network };
  const exports = { vms: "compute.example.com", vpcs: "network.example.com" };
  const hash = {} as Record<Res, string>, vw = {} as Record<Res, string[]>;
  for (const r of ["vms", "vpcs"] as const) {
    hash[r] = await waitForExportIdentity(front, providers[r].path, exports[r]);
    vw[r] = (await waitForEndpointUrls(front, providers[r].path, exports[r]))
      .sort();
    await front.kubectlOk(["apply", "-f", "-"], {
      workspace: providers[r].path,
      stdin: list([
        rbac("ClusterRole", "bench:content", {
          rules: [{
            apiGroups: ["apis.kcp.io"],
            resources: ["apiexports/content"],
            resourceNames: [exports[r]],
            verbs: ["get", "list", "watch"],
          }, { nonResourceURLs: ["/"], verbs: ["access"] }],
        }),
        binding("bench:content", "user-1"),
      ]),
    });
  }
  const fixtures = await Promise.all(
    ["network/vpc-a.yaml", "compute/vm-1.yaml"].map((f) =>
      Deno.readTextFile(new URL(`../testing/fixtures/${f}`, import.meta.url))
    ),
  );
  for (const c of [C1, C2]) {
    await front.kubectlOk(["apply", "-f", "-"], {
      workspace: c,
      stdin: fixtures.join("\n---\n"),
    });
  }
  for (const s of shards) {
    await s.api.kubectlOk(["apply", "-f", "-"], {
      workspace: "system:admin",
      identity: "shardAdmin",
      stdin: list([
        rbac("ClusterRole", "bench:wildcard", {
          rules: [{
            apiGroups: ["compute.example.com", "network.example.com"],
            resources: ["virtualmachines", "vpcs"],
            verbs: ["list", "watch"],
          }],
        }),
        binding("bench:wildcard", "dependency-webhook"),
      ]),
    });
  }
  await sleep(3_000); // RBAC informers

  // Endpoints: the export's virtual workspaces, the shards, the front-proxy.
  interface Endpoint {
    name: string;
    who: IdentityName;
    url: (r: Res, cluster?: string) => string;
  }
  const endpoints: Endpoint[] = [
    ...vw.vms.map((_, i): Endpoint => ({
      name: `VW #${i + 1} wildcard`,
      who: "user",
      url: (r, c = "*") => `${vw[r][i]}/clusters/${c}/${RES[r]}`,
    })),
    ...shards.map((s): Endpoint => ({
      name: `shard ${s.name} wildcard`,
      who: "shardAdmin",
      url: (r, c = "*") =>
        `${s.api.baseUrl}/clusters/${c}/${RES[r]}:${hash[r]}`,
    })),
    {
      name: "front-proxy c1",
      who: "admin",
      url: (r, c = c1) => `${front.baseUrl}/clusters/${c}/${RES[r]}`,
    },
  ];
  const named = (c: string) => c === c1 ? "c1" : c === c2 ? "c2" : c;

  // 1. Access.
  table("Access: list VMs", "endpoint|as|status|items (clusters) or message");
  const probe = async (label: string, url: string, who: IdentityName) => {
    const r = await call("GET", url, who);
    const items = r.body.items ?? [];
    const clusters = [
      ...new Set(
        items.map((o) =>
          named(o.metadata?.annotations?.["kcp.io/cluster"] ?? "")
        ),
      ),
    ];
    row(
      label,
      who,
      r.status,
      r.status === 200
        ? `${items.length} (${clusters.join(", ")}), RV ${r.rv}`
        : r.body.message?.slice(0, 110),
    );
  };
  for (const e of endpoints) {
    for (const who of ["user", "webhook", "shardAdmin"] as const) {
      await probe(e.name, e.url("vms"), who);
    }
  }
  for (const [i, u] of vw.vms.entries()) {
    for (const c of [c1, c2]) {
      await probe(
        `VW #${i + 1} cluster ${named(c)}`,
        `${u}/clusters/${c}/${RES.vms}`,
        "user",
      );
    }
    await probe(
      `VW #${i + 1} VPCs (not in the export)`,
      `${u}/clusters/*/${RES.vpcs}`,
      "user",
    );
  }

  // 2. Probes right after a write.
  const objectUrl = (r: Res, c: string) =>
    `${front.baseUrl}/clusters/${c}/${
      RES[r].replace(/(\w+)$/, "namespaces/default/$1")
    }/${r === "vms" ? "vm-1" : "vpc-a"}`;
  let n = 0;
  const write = async (r: Res, c: string) => {
    const w = await call("PATCH", objectUrl(r, c), "admin", {
      metadata: { annotations: { bench: String(++n) } },
    });
    lastWrite = w.rv;
    return w.rv;
  };
  const probes: [string, (w: number) => string, boolean][] = [
    ["list consistent", () => "limit=1", false],
    ["list RV=0", () => "limit=1&resourceVersion=0", false],
    [
      "list NotOlderThan=write",
      (w) => `limit=1&resourceVersion=${w}&resourceVersionMatch=NotOlderThan`,
      false,
    ],
    ["list consistent, nothing", () => `limit=1&${NOTHING}`, false],
    ["watch-list RV unset", () => WATCH_LIST, true],
    ["watch-list RV unset, nothing", () => `${WATCH_LIST}&${NOTHING}`, true],
    ["watch-list RV=write", (w) => `${WATCH_LIST}&resourceVersion=${w}`, true],
  ];
  table(
    "Probes of VMs right after a write",
    "endpoint|write|probe|status|ms|probe RV - write RV",
  );
  for (const e of endpoints) {
    const writes = [["VPC c1", "vpcs", c1], ["VM c2", "vms", c2]] as const;
    for (const [wname, wr, wc] of writes) {
      for (const [pname, query, isWatch] of probes) {
        const times: number[] = [], deltas: number[] = [];
        let status = 0, note = "";
        for (let i = 0; i < rounds; i++) {
          const w = await write(wr, wc);
          if (isWatch) {
            const url = `${e.url("vms")}?${query(w)}&timeoutSeconds=30`;
            const r = await watch(url, e.who, (x) => x.end, 10_000);
            const end = r.events.find((x) => x.end);
            status = r.status;
            note = r.error ??
              (end ? "" : `no end bookmark: ${r.events.map((x) => x.type)}`);
            if (!end) break;
            times.push(end.ms), deltas.push(end.rv - w);
          } else {
            const r = await call("GET", `${e.url("vms")}?${query(w)}`, e.who);
            status = r.status;
            note = r.body.message?.slice(0, 80) ?? "";
            if (r.status !== 200) break;
            times.push(r.ms), deltas.push(r.rv - w);
          }
        }
        row(e.name, wname, pname, status, fmt(times), deltas.join(" ") || note);
      }
    }
  }

  // 3. Short watches from a resourceVersion older than a write.
  table(
    "Watch of VMs from an RV before a VPC write, allowWatchBookmarks",
    "endpoint|timeoutSeconds|first bookmark ms|bookmark RV - write RV|ended ms",
  );
  for (const e of endpoints) {
    for (const [t, catchUp] of [[1, false], [3, false], [3, true]] as const) {
      const first: number[] = [], ended: number[] = [], deltas: string[] = [];
      let note = "";
      for (let i = 0; i < Math.min(rounds, 3); i++) {
        const before = (await call("GET", `${e.url("vms")}?limit=1`, e.who)).rv;
        const w = await write("vpcs", c1);
        if (catchUp) await call("GET", `${e.url("vms")}?limit=1`, e.who);
        const url = `${
          e.url("vms")
        }?watch=true&allowWatchBookmarks=true&timeoutSeconds=${t}&resourceVersion=${before}`;
        const r = await watch(url, e.who, () => false, 15_000);
        const b = r.events.find((x) => x.type === "BOOKMARK");
        if (b) first.push(b.ms);
        deltas.push(b ? String(b.rv - w) : "none");
        if (r.endedMs !== undefined) ended.push(r.endedMs);
        note = r.error ?? "";
      }
      const what = `${t}${catchUp ? ", after a consistent list" : ""}`;
      row(e.name, what, fmt(first), deltas.join(" "), note || fmt(ended));
    }
  }

  // 4. Long watches.
  table(
    `Long watches (${longSeconds} s) from a fresh list RV; a VM write in c2 every 2 s`,
    "endpoint|type|start RV|events|bookmarks at s|bookmark RV - start RV|newest write RV - bookmark RV",
  );
  let writing = true;
  const writer = (async () => {
    while (writing) await write("vms", c2), await sleep(2_000);
  })();
  const long = await Promise.all(
    endpoints.flatMap((e) =>
      (["vms", "vpcs"] as const).map(async (r) => {
        const rv = (await call("GET", `${e.url(r)}?limit=1`, e.who)).rv;
        const url = `${
          e.url(r)
        }?watch=true&allowWatchBookmarks=true&timeoutSeconds=${
          longSeconds + 60
        }&resourceVersion=${rv}`;
        const w = await watch(url, e.who, () => false, longSeconds * 1000);
        return { e, r, rv, w };
      })
    ),
  );
  writing = false;
  await writer;
  for (const { e, r, rv, w } of long) {
    const b = w.events.filter((x) => x.type === "BOOKMARK");
    row(
      e.name,
      r === "vms" ? "VMs (busy)" : "VPCs (idle)",
      rv,
      w.events.length - b.length,
      b.map((x) => (x.ms / 1000).toFixed(1)).join(" ") || w.error || "none",
      b.map((x) => x.rv - rv).join(" ") || "-",
      b.map((x) => x.written - x.rv).join(" ") || "-",
    );
  }
} finally {
  client.close();
  await (multi ?? single)?.stop();
}
