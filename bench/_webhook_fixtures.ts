/**
 * What the webhook benches share: namespaces of VirtualMachines in a
 * consumer workspace, the live VPC a review is about, DELETE reviews built
 * from it as kcp builds them, and the answer of one review sorted into the
 * kinds the figures count; timing a sample, from the client's side and
 * inside the webhook (its metric).
 *
 * @module
 */
import type { KcpApi } from "../testing/mod.ts";

/** The webhook's GET of the object under review: its metadata only. */
export const METADATA_ONLY =
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/** The VPC every bench review is about; no VirtualMachine refers to it. */
export const TARGET_VPC = "vpc-target";

/** A live VPC as kcp returns it: the object a review's `oldObject` carries. */
export interface LiveVpc {
  /** Its API version. */
  apiVersion: string;
  /** Its kind. */
  kind: string;
  /** Its metadata, with the `kcp.io/cluster` annotation and the uid. */
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    annotations: Record<string, string>;
  } & Record<string, unknown>;
  /** Everything else. */
  [key: string]: unknown;
}

/** The collection URL of VirtualMachines in a namespace of a workspace. */
export function vmsPath(workspace: string, namespace: string): string {
  return `/clusters/${workspace}/apis/compute.example.com/v1alpha1/namespaces/${namespace}/virtualmachines`;
}

function vm(name: string, vpc: string): unknown {
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    metadata: { name },
    spec: { vpcRef: { name: vpc } },
  };
}

/** POSTs `count` objects made by `make` to `url`, 24 at a time. */
export async function createMany(
  kcp: KcpApi,
  url: string,
  count: number,
  make: (i: number) => unknown,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: 24 }, async () => {
    while (next < count) {
      const i = next++;
      await kcp.request("POST", url, { body: make(i) });
    }
  }));
}

/**
 * Creates namespace `namespace` in `workspace` with `dependents`
 * VirtualMachines (`vm-<i>` referring to `vpc-<i>`) and the VPC
 * {@linkcode TARGET_VPC}, and returns that VPC as kcp serves it.
 */
export async function createBenchNamespace(
  kcp: KcpApi,
  workspace: string,
  namespace: string,
  dependents: number,
): Promise<LiveVpc> {
  await kcp.request("POST", `/clusters/${workspace}/api/v1/namespaces`, {
    body: {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: namespace },
    },
  });
  await createMany(
    kcp,
    vmsPath(workspace, namespace),
    dependents,
    (i) => vm(`vm-${i}`, `vpc-${i}`),
  );
  const vpcs =
    `/clusters/${workspace}/apis/network.example.com/v1alpha1/namespaces/${namespace}/vpcs`;
  await kcp.request("POST", vpcs, {
    body: {
      apiVersion: "network.example.com/v1alpha1",
      kind: "VPC",
      metadata: { name: TARGET_VPC },
      spec: { cidr: "10.0.0.0/16" },
    },
  });
  return await kcp.request<LiveVpc>("GET", `${vpcs}/${TARGET_VPC}`);
}

/**
 * A DELETE AdmissionReview of `object` as kcp sends it, as JSON text.
 * `resource` is the plural the review names (`vpcs` is protected by the
 * bench's rule; `subnets` is not).
 */
export function deleteReview(
  object: LiveVpc,
  options: { resource?: string; uid?: string } = {},
): string {
  const { resource = "vpcs", uid = crypto.randomUUID() } = options;
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group: "network.example.com", version: "v1alpha1", kind: "VPC" },
      resource: { group: "network.example.com", version: "v1alpha1", resource },
      name: object.metadata.name,
      namespace: object.metadata.namespace,
      operation: "DELETE",
      userInfo: { username: "bench", groups: ["system:authenticated"] },
      oldObject: object,
      dryRun: false,
    },
  });
}

/** How one review was answered, as the figures count it. */
export type AnswerKind =
  | "allowed"
  | "denied_busy"
  | "denied_other"
  | "http_503"
  | "http_other"
  | "failed";

/** The kinds of answer in the order the figures print them. */
export const ANSWER_KINDS: readonly AnswerKind[] = [
  "allowed",
  "denied_busy",
  "http_503",
  "denied_other",
  "http_other",
  "failed",
];

/** The answer of one review and the first denial's message, for a report. */
export interface Answer {
  /** What kind of answer. */
  kind: AnswerKind;
  /** The denial's message or the HTTP status, when not allowed. */
  detail?: string;
}

/**
 * POSTs one review to the webhook and sorts its answer. A webhook busy
 * with other reviews answers 200 with a 503 `ServiceUnavailable` denial
 * that says "busy" (the reviews cap), or HTTP 503 (the body-bytes cap).
 */
export async function sendReview(
  url: string,
  body: string,
  client: Deno.HttpClient,
): Promise<Answer> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      client,
      signal: AbortSignal.timeout(60_000),
    });
  } catch (error) {
    return { kind: "failed", detail: String(error) };
  }
  const text = await response.text().catch(() => "");
  if (response.status === 503) return { kind: "http_503" };
  if (response.status !== 200) {
    return { kind: "http_other", detail: `${response.status}: ${text}` };
  }
  const answer = JSON.parse(text) as {
    response: {
      allowed: boolean;
      status?: { code?: number; message?: string };
    };
  };
  if (answer.response.allowed) return { kind: "allowed" };
  const status = answer.response.status;
  const message = status?.message ?? "";
  return status?.code === 503 && / is busy /.test(message)
    ? { kind: "denied_busy" }
    : { kind: "denied_other", detail: message };
}

/** How long `fn` takes, ms. */
export async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/**
 * The webhook's total time deciding reviews of `outcome` so far, seconds
 * (its review-duration metric's sum): the difference across one review is
 * that review's duration inside the webhook.
 */
export async function decisionSeconds(
  metricsPort: number,
  outcome = "allowed",
): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
    signal: AbortSignal.timeout(5000),
  })).text();
  const match = new RegExp(
    `^dependency_webhook_admission_review_duration_seconds_sum\\{outcome="${outcome}"\\} (\\S+)$`,
    "m",
  ).exec(text);
  return Number(match?.[1] ?? NaN);
}
