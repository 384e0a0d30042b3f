/**
 * The owners of a held object that are being deleted
 * ({@linkcode deletingOwners}): under foreground deletion an owner keeps a
 * `deletionTimestamp` and the `foregroundDeletion` finalizer until its
 * dependents are gone, so a dependent our webhook holds keeps its owner
 * waiting; `why` says since when. The owner need not be asked about
 * itself (a cluster-scoped owner of a namespaced object, a type `why
 * namespace/<ns>` does not list), so it is read by name, as the user,
 * through the type the workspace's discovery names for its `kind`.
 *
 * `metadata.ownerReferences` are tenant input: an entry is used only when
 * its `apiVersion` is a group (a DNS subdomain) and a version (a DNS
 * label), its `kind` a kind's name and its `name` an object's name;
 * anything else is never a request, only counted as not read. At most
 * {@linkcode MAX_OWNERS_PER_OBJECT} owners of one object and
 * {@linkcode MAX_OWNER_READS} owners in all are read, through the
 * discovery of at most {@linkcode MAX_OWNER_GROUPS} group versions; an
 * owner whose `uid` is not the reference's is another object (the owner is
 * gone) and not named.
 *
 * @module
 */
import type { CauseObject } from "../causes/mod.ts";
import { isRfc3339 } from "../causes/mod.ts";
import {
  isDnsLabel,
  isDnsSubdomain,
  KubeApiError,
  pathSegment,
} from "../kcp/mod.ts";
import { isRecord } from "../runtime/mod.ts";
import type { PluginContext } from "./context.ts";
import { parseResourceList, type ResolvedType } from "./discovery.ts";
import { objectUrl } from "./dry_run.ts";

/** The most owners of one object read. */
export const MAX_OWNERS_PER_OBJECT = 5;
/** The most owners read in all, by one command. */
export const MAX_OWNER_READS = 50;
/** The most group versions whose discovery is read to find owners' types. */
export const MAX_OWNER_GROUPS = 10;
/** Owners read at once. */
export const OWNER_CONCURRENCY = 8;

/** The finalizer of an object under foreground deletion. */
export const FOREGROUND_FINALIZER = "foregroundDeletion";

/** An entry of `metadata.ownerReferences`, checked. */
export interface OwnerReference {
  /** The owner's API group, `""` for the core group. */
  group: string;
  /** The owner's version. */
  version: string;
  /** The owner's kind. */
  kind: string;
  /** The owner's name. */
  name: string;
  /** The owner's uid, when the reference names one. */
  uid?: string;
  /** Whether the owner's foreground deletion waits for this dependent. */
  blockOwnerDeletion: boolean;
}

/** An owner being deleted. */
export interface DeletingOwner {
  /** The owner. */
  object: CauseObject;
  /** Its `deletionTimestamp` (RFC 3339). */
  deletionTimestamp: string;
  /** Whether it is deleted in the foreground (it has the `foregroundDeletion` finalizer). */
  foreground: boolean;
  /** Whether the dependent's reference says the owner waits for it (`blockOwnerDeletion`). */
  blockOwnerDeletion: boolean;
}

/** What was found of one object's owners. */
export interface OwnerFindings {
  /** Its owners being deleted, in the order the object names them. */
  deletingOwners: DeletingOwner[];
  /** Owners named but not read: malformed, past a bound, of no known type, or a read that failed. */
  ownersNotRead: number;
}

/** An object whose owners are looked at: where it is and what it names. */
export interface Dependent {
  /** The object (its namespace places a namespaced owner). */
  object: CauseObject;
  /** Its `metadata.ownerReferences`, as read. */
  ownerReferences: unknown;
}

const KIND = /^[A-Za-z][A-Za-z0-9]{0,62}$/;
const NAME = /^[A-Za-z0-9._:@+-]{1,253}$/;

/**
 * The entries of `references` (a `metadata.ownerReferences` as read) that
 * can be read, at most `max` of them, and how many could not.
 */
export function ownerReferencesOf(
  references: unknown,
  max = MAX_OWNERS_PER_OBJECT,
): { references: OwnerReference[]; invalid: number } {
  const entries = Array.isArray(references) ? references : [];
  const found: OwnerReference[] = [];
  let invalid = 0;
  for (const entry of entries) {
    const reference = checkedReference(entry);
    if (reference === undefined || found.length >= max) invalid++;
    else found.push(reference);
  }
  return { references: found, invalid };
}

/** One reference, when every part of it may go into a URL; else `undefined`. */
function checkedReference(entry: unknown): OwnerReference | undefined {
  if (!isRecord(entry)) return undefined;
  const { apiVersion, kind, name, uid } = entry;
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    return undefined;
  }
  if (typeof name !== "string" || !isObjectName(name) || !KIND.test(kind)) {
    return undefined;
  }
  const parts = apiVersion.split("/");
  const [group, version] = parts.length === 1
    ? ["", parts[0]!]
    : parts.length === 2
    ? [parts[0]!, parts[1]!]
    : ["", ""];
  if (!isDnsLabel(version)) return undefined;
  if (parts.length === 2 && !isDnsSubdomain(group)) return undefined;
  return {
    group,
    version,
    kind,
    name,
    ...(typeof uid === "string" && uid !== "" ? { uid } : {}),
    blockOwnerDeletion: entry.blockOwnerDeletion === true,
  };
}

/**
 * Whether `name` may be an object's name in a URL: letters, digits and
 * `.-_:@+`, at most 253, neither `.` nor `..`.
 */
export function isObjectName(name: string): boolean {
  return NAME.test(name) && name !== "." && name !== "..";
}

/** `{ deletionTimestamp }` of an object being deleted, when RFC 3339; else `{}`. */
export function deletionOf(object: unknown): { deletionTimestamp?: string } {
  const metadata = isRecord(object) ? object.metadata : undefined;
  const stamp = isRecord(metadata) ? metadata.deletionTimestamp : undefined;
  return isRfc3339(stamp) ? { deletionTimestamp: stamp } : {};
}

/** Options for {@linkcode deletingOwners}. */
export interface OwnerOptions {
  /** The most owners of one object read. @default {MAX_OWNERS_PER_OBJECT} */
  perObject?: number;
  /** The most owners read in all. @default {MAX_OWNER_READS} */
  reads?: number;
  /** The most group versions whose discovery is read. @default {MAX_OWNER_GROUPS} */
  groups?: number;
}

/** Metadata only: a `PartialObjectMetadata`, else the object whole. */
const METADATA =
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/** The most bytes of an owner or a discovery answer read. */
const MAX_READ_BYTES = 1024 * 1024;

/**
 * For each of `dependents`, in order: its owners being deleted, read as
 * the user (bounded as {@linkcode OwnerOptions} says; an owner named by
 * several is read once), and how many of its owners were not read.
 */
export async function deletingOwners(
  context: PluginContext,
  dependents: readonly Dependent[],
  options: OwnerOptions = {},
): Promise<OwnerFindings[]> {
  const named = dependents.map((d) =>
    ownerReferencesOf(d.ownerReferences, options.perObject)
  );
  const types = await ownerTypes(
    context,
    named.flatMap((n) => n.references),
    options.groups ?? MAX_OWNER_GROUPS,
  );
  const plans = dependents.map((dependent, i) =>
    named[i]!.references.map((reference) => ({
      reference,
      place: ownerPlace(context, { dependent, reference, types }),
    }))
  );
  const urls = [
    ...new Set(
      plans.flat().flatMap((p) => p.place === undefined ? [] : [p.place.url]),
    ),
  ].slice(0, options.reads ?? MAX_OWNER_READS);
  const owners = await readOwners(context, urls);
  return plans.map((plan, i) => {
    const found: OwnerFindings = {
      deletingOwners: [],
      ownersNotRead: named[i]!.invalid,
    };
    for (const { reference, place } of plan) {
      const read = place === undefined ? undefined : owners.get(place.url);
      if (place === undefined || read === undefined || read === FAILED) {
        found.ownersNotRead++;
        continue;
      }
      const owner = read === GONE
        ? undefined
        : deletingOwner(read, { reference, ...place });
      if (owner !== undefined) found.deletingOwners.push(owner);
    }
    return found;
  });
}

/** What {@linkcode withDeletingOwners} adds to an object: only what there is. */
export interface OwnerFields {
  /** Its owners being deleted, when any is. */
  deletingOwners?: DeletingOwner[];
  /** Owners named but not read, when any was not. */
  ownersNotRead?: number;
}

/**
 * `entries` with their {@linkcode OwnerFields}: the owners of each (the
 * `metadata.ownerReferences` that `referencesOf` gives, none when it gives
 * `undefined`) read by {@linkcode deletingOwners}. An entry that names no
 * owner is given back as it is.
 */
export async function withDeletingOwners<T extends { object: CauseObject }>(
  context: PluginContext,
  entries: readonly T[],
  referencesOf: (entry: T) => unknown,
): Promise<(T & OwnerFields)[]> {
  const naming = entries.filter((e) => {
    const references = referencesOf(e);
    return Array.isArray(references) && references.length > 0;
  });
  if (naming.length === 0) return [...entries];
  const findings = await deletingOwners(
    context,
    naming.map((e) => ({ object: e.object, ownerReferences: referencesOf(e) })),
  );
  const found = new Map(naming.map((e, i) => [e, findings[i]!]));
  return entries.map((entry) => {
    const f = found.get(entry);
    if (f === undefined) return entry;
    return {
      ...entry,
      ...(f.deletingOwners.length === 0
        ? {}
        : { deletingOwners: f.deletingOwners }),
      ...(f.ownersNotRead === 0 ? {} : { ownersNotRead: f.ownersNotRead }),
    };
  });
}

/**
 * `entry` (an object `why` asked about) with its own deletion and its
 * owners being deleted, read as the user; `entry` as it is when the object
 * cannot be read (best effort: what holds it is known already).
 */
export async function withObjectDeletions<T extends { object: CauseObject }>(
  context: PluginContext,
  entry: T,
): Promise<T & OwnerFields & { deletionTimestamp?: string }> {
  let read: unknown;
  try {
    read = await context.client.get(objectUrl(context.server, entry.object), {
      accept: METADATA,
      maxBytes: MAX_READ_BYTES,
    });
  } catch {
    return entry;
  }
  const metadata = isRecord(read) && isRecord(read.metadata)
    ? read.metadata
    : {};
  const [found] = await withDeletingOwners(
    context,
    [{ ...entry, ...deletionOf(read) }],
    () => metadata.ownerReferences,
  );
  return found!;
}

/** What {@linkcode readOwners} keeps of an owner that is not there (404). */
const GONE = Symbol("gone");
/** What {@linkcode readOwners} keeps of an owner that could not be read. */
const FAILED = Symbol("failed");

/** `<group>/<version>` of a reference. */
function gvKey(reference: { group: string; version: string }): string {
  return `${reference.group}/${reference.version}`;
}

/**
 * The types of the group versions `references` name, by `<group>/<version>`
 * then kind: the discovery of the first `max` of them, read in parallel; a
 * group version whose discovery fails has none.
 */
async function ownerTypes(
  context: PluginContext,
  references: readonly OwnerReference[],
  max: number,
): Promise<Map<string, Map<string, ResolvedType>>> {
  const gvs = [...new Map(references.map((r) => [gvKey(r), r])).values()]
    .slice(0, max);
  const types = new Map<string, Map<string, ResolvedType>>();
  await Promise.all(gvs.map(async ({ group, version }) => {
    const url = group === ""
      ? `${context.server}/api/${pathSegment(version)}`
      : `${context.server}/apis/${pathSegment(group)}/${pathSegment(version)}`;
    try {
      const answer = await context.client.get(url, {
        maxBytes: MAX_READ_BYTES,
      });
      const byKind = new Map<string, ResolvedType>();
      for (const r of parseResourceList(answer, { group, version })) {
        if (!byKind.has(r.kind)) byKind.set(r.kind, r);
      }
      types.set(gvKey({ group, version }), byKind);
    } catch {
      // No type known: its owners are counted as not read.
    }
  }));
  return types;
}

/**
 * Where the owner `reference` names is: its type, namespace and URL; or
 * `undefined` when its type is not known or a namespaced owner is named by
 * a cluster-scoped object.
 */
function ownerPlace(
  context: PluginContext,
  at: {
    dependent: Dependent;
    reference: OwnerReference;
    types: Map<string, Map<string, ResolvedType>>;
  },
): { type: ResolvedType; namespace: string; url: string } | undefined {
  const { reference, dependent } = at;
  const type = at.types.get(gvKey(reference))?.get(reference.kind);
  if (type === undefined) return undefined;
  const namespace = type.namespaced ? dependent.object.namespace : "";
  if (type.namespaced && namespace === "") return undefined;
  try {
    const url = objectUrl(context.server, {
      group: type.group,
      version: type.version,
      resource: type.resource,
      namespace,
      name: reference.name,
    });
    return { type, namespace, url };
  } catch {
    return undefined;
  }
}

/** Each URL's owner as read: its metadata, {@linkcode GONE} (404) or {@linkcode FAILED}. */
async function readOwners(
  context: PluginContext,
  urls: readonly string[],
): Promise<Map<string, unknown>> {
  const read = new Map<string, unknown>();
  let next = 0;
  const worker = async () => {
    while (next < urls.length) {
      const url = urls[next++]!;
      try {
        read.set(
          url,
          await context.client.get(url, {
            accept: METADATA,
            maxBytes: MAX_READ_BYTES,
          }),
        );
      } catch (error) {
        const gone = error instanceof KubeApiError && error.status === 404;
        read.set(url, gone ? GONE : FAILED);
      }
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(OWNER_CONCURRENCY, urls.length) }, worker),
  );
  return read;
}

/**
 * The {@linkcode DeletingOwner} of an owner as read, or `undefined` when it
 * is not being deleted or is not the object the reference names (another
 * uid).
 */
export function deletingOwner(
  read: unknown,
  at: { reference: OwnerReference; type: ResolvedType; namespace: string },
): DeletingOwner | undefined {
  const metadata = isRecord(read) && isRecord(read.metadata)
    ? read.metadata
    : {};
  const { reference, type } = at;
  if (
    reference.uid !== undefined && typeof metadata.uid === "string" &&
    metadata.uid !== reference.uid
  ) {
    return undefined;
  }
  const { deletionTimestamp } = deletionOf(read);
  if (deletionTimestamp === undefined) return undefined;
  const finalizers = Array.isArray(metadata.finalizers)
    ? metadata.finalizers
    : [];
  return {
    object: {
      group: type.group,
      version: type.version,
      resource: type.resource,
      kind: type.kind,
      namespace: at.namespace,
      name: reference.name,
    },
    deletionTimestamp,
    foreground: finalizers.includes(FOREGROUND_FINALIZER),
    blockOwnerDeletion: reference.blockOwnerDeletion,
  };
}
