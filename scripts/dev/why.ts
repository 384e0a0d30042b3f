/**
 * The walk-through's `kubectl dependencies why`: the same question as the
 * dry run, answered as a tree from the denial's machine-readable causes,
 * run as a user runs the installed plugin.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import type { KcpApi } from "../../testing/mod.ts";
import { indent, note, red, showCommand, shown } from "./output.ts";
import { PLUGIN_PERMISSIONS } from "../install_plugin.ts";

/** The plugin's entrypoint, run as `deno task plugin:install` installs it. */
const PLUGIN = fileURLToPath(
  new URL("../../kubectl_dependencies.ts", import.meta.url),
);

/** The permissions `deno task plugin:install` gives the plugin. */
export { PLUGIN_PERMISSIONS };

/**
 * Runs `kubectl dependencies why <object> --recursive` as the consumer's
 * admin, printing the command as a user types it and the tree it answers.
 *
 * @throws {Error} Unless it exits 1 (something holds the object) naming
 * `expect`.
 */
export async function whyWalkThrough(
  kcp: KcpApi,
  options: { consumer: string; object: string; expect: string },
): Promise<void> {
  const kubeconfig = await kcp.kubeconfig("admin", options.consumer);
  const args = ["why", options.object, "--recursive"];
  showCommand(
    `kubectl dependencies --kubeconfig=${shown(kubeconfig)} ${args.join(" ")}`,
  );
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      ...PLUGIN_PERMISSIONS,
      PLUGIN,
      `--kubeconfig=${kubeconfig}`,
      ...args,
    ],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  if (output.code !== 1 || !stdout.includes(options.expect)) {
    throw new Error(
      `kubectl dependencies why ${options.object} exited ${output.code} without naming ${options.expect}: ${stdout}${stderr}`,
    );
  }
  console.log(indent(stdout, red));
  note(
    "(install it with `deno task plugin:install`; exit code 1: something holds it)",
  );
}
