/**
 * Regenerates the dep-ctrl export's APIResourceSchemas from the zod schemas:
 * DependencyRule from `lib/rules/api.ts` into
 * `manifests/kcp/dep-ctrl/apiresourceschema.yaml`, Lock from
 * `lib/locks/api.ts` into `manifests/kcp/dep-ctrl/apiresourceschema-locks.yaml`,
 * and points the `schema:` lines of `manifests/kcp/dep-ctrl/apiexport.yaml` at
 * the new names. Run it after changing either API:
 *
 * ```sh
 * deno task schema
 * ```
 *
 * @module
 */

import {
  API_EXPORT_FILE,
  apiResourceSchema,
  apiResourceSchemaYaml,
  DEPENDENCY_RULES,
  LOCKS,
  setApiExportSchema,
} from "./crd_schema.ts";

/** Writes every schema and the export, and prints the schema names. */
async function main(): Promise<void> {
  let apiExport = await Deno.readTextFile(API_EXPORT_FILE);
  const before = apiExport;
  for (const source of [DEPENDENCY_RULES, LOCKS]) {
    const { name } = apiResourceSchema(source).metadata;
    await Deno.writeTextFile(source.file, apiResourceSchemaYaml(source));
    apiExport = setApiExportSchema(apiExport, name);
    console.log(`APIResourceSchema ${name}`);
  }
  if (apiExport !== before) {
    await Deno.writeTextFile(API_EXPORT_FILE, apiExport);
  }
}

if (import.meta.main) await main();
