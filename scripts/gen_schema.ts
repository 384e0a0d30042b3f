/**
 * Regenerates the DependencyRule APIResourceSchema from the zod schemas in
 * `lib/api.ts`: writes `manifests/kcp/dep-ctrl/apiresourceschema.yaml` and
 * points the `schema:` line of `manifests/kcp/dep-ctrl/apiexport.yaml` at the
 * new name. Run it after changing `lib/api.ts`:
 *
 * ```sh
 * deno task schema
 * ```
 *
 * @module
 */

import {
  API_EXPORT_FILE,
  API_RESOURCE_SCHEMA_FILE,
  apiResourceSchema,
  apiResourceSchemaYaml,
  setApiExportSchema,
} from "./crd_schema.ts";

/** Writes both manifests and prints the schema name. */
async function main(): Promise<void> {
  const { name } = apiResourceSchema().metadata;
  await Deno.writeTextFile(API_RESOURCE_SCHEMA_FILE, apiResourceSchemaYaml());
  const apiExport = await Deno.readTextFile(API_EXPORT_FILE);
  const updated = setApiExportSchema(apiExport, name);
  if (updated !== apiExport) {
    await Deno.writeTextFile(API_EXPORT_FILE, updated);
  }
  console.log(`APIResourceSchema ${name}`);
}

if (import.meta.main) await main();
