/**
 * Reads what an APIExport serves, through the front-proxy: the APIExport
 * (`apis.kcp.io/v1alpha2`) and the APIResourceSchema of each of its
 * resources (served versions, kind, and each served version's OpenAPI v3
 * schema, pruned to what field paths are checked against: types, fields,
 * items, maps and the `x-kubernetes-*` flags that matter, without
 * descriptions or validations). The controller's identity needs `get`
 * on both in the export's workspace; `manifests/kcp/system-admin` grants it
 * per shard (kcp cannot make `apis.kcp.io` types a permission claim).
 *
 * @module
 */
import {
  clusterUrl,
  KubeApiError,
  type KubeClient,
  pathSegment,
} from "../kcp/mod.ts";
import { pruneSchema, type SchemaNode } from "../rules/mod.ts";
import { isRecord } from "../runtime/mod.ts";
import type {
  ExportAnswer,
  ExportedType,
  ExportReading,
  ExportRef,
} from "./export_checks.ts";

const EXPORTS = "/apis/apis.kcp.io/v1alpha2/apiexports";
const SCHEMAS = "/apis/apis.kcp.io/v1alpha1/apiresourceschemas";

/**
 * Reads the export `ref` and its schemas.
 *
 * @returns `{found: false}` when the export does not exist; its types
 * otherwise. A resource whose schema does not exist is not served, so it is
 * left out.
 * @throws {KubeApiError} For any other failure (403, outage, deadline).
 */
export async function readExport(
  client: KubeClient,
  base: string,
  ref: ExportRef,
  options: { signal?: AbortSignal } = {},
): Promise<ExportAnswer> {
  const workspace = clusterUrl(base, ref.workspace);
  let object: unknown;
  try {
    object = await client.get(
      `${workspace}${EXPORTS}/${pathSegment(ref.name)}`,
      options,
    );
  } catch (error) {
    if (error instanceof KubeApiError && error.notFound) {
      return { found: false };
    }
    throw error;
  }
  const spec = isRecord(object) && isRecord(object.spec) ? object.spec : {};
  const resources: {
    group: string;
    name: string;
    schema: string;
    virtual: boolean;
  }[] = [];
  for (const resource of Array.isArray(spec.resources) ? spec.resources : []) {
    if (!isRecord(resource)) continue;
    const { group, name, schema, storage } = resource;
    if (
      typeof group !== "string" || typeof name !== "string" ||
      typeof schema !== "string" || schema === ""
    ) continue;
    // kcp v0.31: `storage.virtual` (served by another virtual workspace)
    // instead of `storage.crd`.
    const virtual = isRecord(storage) && storage.virtual !== undefined;
    resources.push({ group, name, schema, virtual });
  }
  const schemas = await mapAtMost(
    resources,
    SCHEMA_READS_AT_ONCE,
    ({ schema }) =>
      readSchema(
        client,
        `${workspace}${SCHEMAS}/${pathSegment(schema)}`,
        options,
      ),
  );
  const types: ExportedType[] = [];
  for (const [i, { group, name, virtual }] of resources.entries()) {
    const read = schemas[i];
    if (read !== undefined) {
      types.push({
        group,
        resource: name,
        ...read,
        ...(virtual ? { virtual: true as const } : {}),
      });
    }
  }
  const status = isRecord(object) && isRecord(object.status)
    ? object.status
    : {};
  const identityHash = typeof status.identityHash === "string" &&
      status.identityHash !== ""
    ? status.identityHash
    : undefined;
  return {
    found: true,
    types,
    ...(identityHash === undefined ? {} : { identityHash }),
  };
}

/** How many of an export's schemas are read at once. */
const SCHEMA_READS_AT_ONCE = 4;

/**
 * `work` of each item, at most `limit` at a time, in the items' order; the
 * first failure is thrown once the works running have ended, and no work
 * starts after it.
 */
async function mapAtMost<T, U>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<U>,
): Promise<U[]> {
  const results = new Array<U>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const at = next++;
      try {
        results[at] = await work(items[at]!);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  const workers = Array.from(
    { length: Math.min(limit, items.length) },
    worker,
  );
  const settled = await Promise.allSettled(workers);
  const failure = settled.find((s) => s.status === "rejected");
  if (failure !== undefined) throw failure.reason;
  return results;
}

/**
 * A schema's served versions, kind and each served version's schema;
 * `undefined` when it does not exist.
 */
async function readSchema(
  client: KubeClient,
  url: string,
  options: { signal?: AbortSignal },
): Promise<
  | { versions: string[]; kind: string; schemas: Record<string, SchemaNode> }
  | undefined
> {
  let object: unknown;
  try {
    object = await client.get(url, options);
  } catch (error) {
    if (error instanceof KubeApiError && error.notFound) return undefined;
    throw error;
  }
  const spec = isRecord(object) && isRecord(object.spec) ? object.spec : {};
  const served = (Array.isArray(spec.versions) ? spec.versions : [])
    .filter((v): v is Record<string, unknown> & { name: string } =>
      isRecord(v) && typeof v.name === "string" && v.served !== false
    );
  const schemas: [string, SchemaNode][] = [];
  for (const version of served) {
    const schema = openApiSchema(version.schema);
    if (schema !== undefined) schemas.push([version.name, pruneSchema(schema)]);
  }
  const names = isRecord(spec.names) ? spec.names : {};
  return {
    versions: served.map((v) => v.name),
    kind: typeof names.kind === "string" ? names.kind : "",
    // fromEntries: a version named __proto__ stays a key.
    schemas: Object.fromEntries(schemas),
  };
}

/**
 * The OpenAPI v3 schema of an APIResourceSchema version: kcp keeps it in
 * `schema` itself; a CRD-style `schema.openAPIV3Schema` is read too.
 */
function openApiSchema(schema: unknown): Record<string, unknown> | undefined {
  if (!isRecord(schema)) return undefined;
  return isRecord(schema.openAPIV3Schema) ? schema.openAPIV3Schema : schema;
}

/** The fields of a log line about what reading an export gave. */
export function describeExportReading(
  ref: ExportRef,
  reading: ExportReading,
): Record<string, unknown> {
  return {
    workspace: ref.workspace,
    name: ref.name,
    found: reading.answer?.found,
    types: reading.answer?.found ? reading.answer.types.length : undefined,
    error: reading.error,
  };
}
