/**
 * What `tenant_fairness.ts` builds and sends: a heavy tenant's namespace of
 * large VirtualMachines that all refer to one VPC, a light tenant's VPC with
 * one referring VM, dry-run DELETEs sent to kcp as a user sends them (sorted
 * into the verdicts the bench counts), and the webhook's resident memory
 * sampled while it works.
 *
 * @module
 */
import type { KcpApi } from "../testing/mod.ts";

/** The annotation that pads each heavy VM to its size. */
export const PADDING_ANNOTATION = "bench.example.com/padding";

/** The VPCs API collection in a namespace of a workspace. */
export function vpcsPath(workspace: string, namespace: string): string {
  return `/clusters/${workspace}/apis/network.example.com/v1alpha1/namespaces/${namespace}/vpcs`;
}

/** The VirtualMachines API collection in a namespace of a workspace. */
export function vmsPath(workspace: string, namespace: string): string {
  return `/clusters/${workspace}/apis/compute.example.com/v1alpha1/namespaces/${namespace}/virtualmachines`;
}

/** A namespace object. */
export function namespaceObject(name: string): unknown {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name } };
}

/** A VPC object. */
export function vpcObject(name: string): unknown {
  return {
    apiVersion: "network.example.com/v1alpha1",
    kind: "VPC",
    metadata: { name },
    spec: { cidr: "10.0.0.0/16" },
  };
}

/**
 * A VirtualMachine `name` referring to VPC `vpc`, padded with an annotation
 * of `paddingChars` characters of base64 of random bytes (incompressible,
 * so that no gzip on the way makes the list cheaper than its size).
 */
export function vmObject(
  name: string,
  vpc: string,
  paddingChars = 0,
): unknown {
  const metadata: Record<string, unknown> = { name };
  if (paddingChars > 0) {
    const bytes = new Uint8Array(Math.ceil(paddingChars * 3 / 4));
    crypto.getRandomValues(bytes);
    const text = btoa(String.fromCharCode(...bytes)).slice(0, paddingChars);
    metadata.annotations = { [PADDING_ANNOTATION]: text };
  }
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    metadata,
    spec: { vpcRef: { name: vpc } },
  };
}

/** POSTs `count` objects made by `make` to `url`, `parallel` at a time. */
export async function createParallel(
  kcp: KcpApi,
  url: string,
  count: number,
  make: (i: number) => unknown,
  parallel: number,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < count) {
      const i = next++;
      await kcp.request("POST", url, { body: make(i), timeoutMs: 60_000 });
    }
  }));
}

/** How kcp answered one dry-run DELETE, as the bench counts it. */
export type DeleteKind =
  /** 409, "still referenced by VirtualMachine/...": the real verdict of a referred VPC. */
  | "referenced"
  /** 200: the (dry-run) delete is allowed, the verdict of a VPC none refers to. */
  | "allowed"
  /** A denial that says the webhook is busy (503 from the webhook's queue). */
  | "busy"
  /** Anything else: another status (another 503 too), a failed call, a timeout. */
  | "other";

/** The answer to one dry-run DELETE and how long it took. */
export interface DeleteAnswer {
  /** The verdict. */
  kind: DeleteKind;
  /** From sending the request to having read the whole answer, ms. */
  ms: number;
  /** HTTP status; 0 when no answer came. */
  status: number;
  /** The Status message kcp sent, or the error. */
  message: string;
}

/** One VPC a dry-run DELETE is about. */
export interface DeleteTarget {
  /** The workspace path. */
  workspace: string;
  /** Its namespace. */
  namespace: string;
  /** Its name. */
  name: string;
  /** Its type. @default {"vpcs"} */
  resource?: "vpcs" | "virtualmachines";
}

/**
 * Sends `DELETE .../vpcs/<name>?dryRun=All` to kcp with `token` over
 * `client`, and sorts the answer. A 409 counts as `referenced` only when
 * its message names a VirtualMachine that still refers (`referrer`, when
 * given, must be that VM's name).
 */
export async function dryRunDelete(
  kcp: KcpApi,
  client: Deno.HttpClient,
  token: string,
  target: DeleteTarget,
  options: { referrer?: string; timeoutMs?: number } = {},
): Promise<DeleteAnswer> {
  const { referrer, timeoutMs = 30_000 } = options;
  const path = target.resource === "virtualmachines" ? vmsPath : vpcsPath;
  const url = `${kcp.baseUrl}${
    path(target.workspace, target.namespace)
  }/${target.name}?dryRun=All`;
  const started = performance.now();
  let status = 0;
  let text: string;
  try {
    const response = await fetch(url, {
      method: "DELETE",
      headers: {
        accept: "application/json",
        authorization: `Bearer ${token}`,
      },
      client,
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = response.status;
    text = await response.text();
  } catch (error) {
    return {
      kind: "other",
      ms: performance.now() - started,
      status,
      message: String(error),
    };
  }
  const ms = performance.now() - started;
  let message = text;
  try {
    message = (JSON.parse(text) as { message?: string }).message ?? text;
  } catch {
    // not JSON: keep the text
  }
  const referenced = new RegExp(
    `still referenced by VirtualMachine/${referrer ?? ""}`,
  );
  const kind: DeleteKind = status === 409 && referenced.test(message)
    ? "referenced"
    : status === 200
    ? "allowed"
    : / is busy /.test(message)
    ? "busy"
    : "other";
  return { kind, ms, status, message };
}

/**
 * Samples a process's resident memory (`VmRSS` of `/proc/<pid>/status`)
 * every `intervalMs` and keeps the peak per phase the caller names.
 */
export class RssSampler {
  readonly #pid: number;
  readonly #peaks = new Map<string, number>();
  #phase: string | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #reading = false;

  /** Starts sampling `pid`; nothing is kept until a phase is set. */
  constructor(pid: number, intervalMs = 100) {
    this.#pid = pid;
    this.#timer = setInterval(() => this.#sample(), intervalMs);
  }

  /** The process's resident memory now, MB. */
  async rssMb(): Promise<number> {
    const status = await Deno.readTextFile(`/proc/${this.#pid}/status`);
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
  }

  /** Keeps samples under `phase` from now on (`undefined`: none). */
  set phase(phase: string | undefined) {
    this.#phase = phase;
  }

  /** The peak under `phase`, MB, if it had samples. */
  peak(phase: string): number | undefined {
    return this.#peaks.get(phase);
  }

  /** Stops sampling. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #sample(): Promise<void> {
    const phase = this.#phase;
    if (phase === undefined || this.#reading) return;
    this.#reading = true;
    try {
      const mb = await this.rssMb();
      this.#peaks.set(phase, Math.max(this.#peaks.get(phase) ?? 0, mb));
    } catch {
      // the process is gone: nothing to keep
    } finally {
      this.#reading = false;
    }
  }
}
