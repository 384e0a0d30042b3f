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
