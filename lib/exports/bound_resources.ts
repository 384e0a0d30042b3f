/**
 * What a workspace's APIBindings bind: each bound group and resource, the
 * identity of the APIExport it comes from and that export's reference.
 * The controller asks it where a Lock's target type comes from; the webhook,
 * which export a consumer's dependents are bound from.
 *
 * @example Usage
 * ```ts
 * import { boundResourcesOf } from "./bound_resources.ts";
 *
 * boundResourcesOf([{
 *   spec: { reference: { export: { path: "root:net", name: "net.io" } } },
 *   status: { boundResources: [{ group: "net.io", resource: "vpcs", schema: { identityHash: "h" } }] },
 * }]); // [{ group: "net.io", resource: "vpcs", identityHash: "h", export: { path: "root:net", name: "net.io" } }]
 * ```
 *
 * @module
 */
import { isRecord } from "../runtime/mod.ts";

/** One type an APIBinding binds. */
export interface BoundResource {
  /** API group. */
  group: string;
  /** Plural resource. */
  resource: string;
  /** The identity of the export it comes from (`schema.identityHash`), when set. */
  identityHash?: string;
  /** The binding's `spec.reference.export`: `path` absent means the binding's own workspace. */
  export: { path?: string; name: string };
}

/**
 * Every bound resource of `bindings` (APIBinding objects as read), in
 * order, leaving out what is malformed.
 */
export function boundResourcesOf(
  bindings: readonly unknown[],
): BoundResource[] {
  const found: BoundResource[] = [];
  for (const binding of bindings) {
    if (!isRecord(binding)) continue;
    const status = isRecord(binding.status) ? binding.status : {};
    const bound = Array.isArray(status.boundResources)
      ? status.boundResources
      : [];
    const spec = isRecord(binding.spec) ? binding.spec : {};
    const reference = isRecord(spec.reference) ? spec.reference : {};
    const exported = isRecord(reference.export) ? reference.export : {};
    const exportRef = {
      ...(typeof exported.path === "string" && exported.path !== ""
        ? { path: exported.path }
        : {}),
      name: typeof exported.name === "string" ? exported.name : "",
    };
    for (const entry of bound) {
      if (!isRecord(entry)) continue;
      const { group, resource } = entry;
      if (typeof group !== "string" || typeof resource !== "string") continue;
      const identityHash = isRecord(entry.schema) &&
          typeof entry.schema.identityHash === "string" &&
          entry.schema.identityHash !== ""
        ? entry.schema.identityHash
        : undefined;
      found.push({
        group,
        resource,
        ...(identityHash === undefined ? {} : { identityHash }),
        export: exportRef,
      });
    }
  }
  return found;
}
