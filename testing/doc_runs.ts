/**
 * A doc's shell blocks run as a test runs them, one step each: the label a
 * block's step and messages carry, whether a run did what the doc shows
 * (exit code, output), a block run again while its prose allows, and the
 * message when it did not pass. The blocks come from
 * {@linkcode operatorPath} and run in a {@linkcode DocShell}
 * (`./doc_shell.ts`).
 *
 * ```ts
 * import { DocShell, operatorPath } from "./doc_shell.ts";
 * import { blockFailure, blockLabel, blockPassed, runBlock } from "./doc_runs.ts";
 *
 * const markdown = await Deno.readTextFile("docs/operations.md");
 * const shell = new DocShell({ cwd: ".", env: {}, stateDir: "/tmp/s" });
 * for (const item of operatorPath(markdown, "Schema upgrades")) {
 *   if (item.kind !== "run") continue;
 *   const run = await runBlock(shell, item);
 *   if (!blockPassed(item, run)) {
 *     throw new Error(blockFailure(blockLabel("docs/operations.md", item), item, run));
 *   }
 * }
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import type { BlockRun, DocShell, PathItem } from "./doc_shell.ts";
import { outputMatches } from "./doc_shell.ts";
import type { Step } from "./kcp_suite.ts";

/** A block of a path that runs. */
export type RunItem = PathItem & { kind: "run" };

/** Where a block comes from, for step names and messages: `<doc>:<line> (<section>)`. */
export function blockLabel(doc: string, item: PathItem): string {
  return `${doc}:${item.block.line} (${item.from})`;
}

/** Whether a run did what the doc shows. */
export function blockPassed(item: RunItem, run: BlockRun): boolean {
  if (run.code === undefined) return false;
  if (item.mustFail !== (run.code !== 0)) return false;
  if (item.exitCode !== undefined && run.code !== item.exitCode) return false;
  return item.expected === undefined ||
    outputMatches(item.expected, run.output);
}

/**
 * Runs the block in `shell`, and again every 2 s while it does not pass
 * and its prose allows (`item.retryMs` from the first start); answers the
 * last run.
 */
export async function runBlock(
  shell: DocShell,
  item: RunItem,
): Promise<BlockRun> {
  const started = Date.now();
  let run = await shell.run(item.block.text);
  while (!blockPassed(item, run) && Date.now() - started < item.retryMs) {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    run = await shell.run(item.block.text);
  }
  return run;
}

/**
 * Why a run did not do what the doc shows, with the block, its output and
 * what the doc shows after it.
 */
export function blockFailure(
  label: string,
  item: RunItem,
  run: BlockRun,
): string {
  return `${label}: ${
    run.code === undefined
      ? "did not finish"
      : item.mustFail && run.code === 0
      ? "succeeded where the guide shows an error"
      : run.code !== 0 && !item.mustFail
      ? `failed (exit ${run.code})`
      : item.exitCode !== undefined && run.code !== item.exitCode
      ? `exited ${run.code} where the guide says ${item.exitCode}`
      : "does not print what the guide shows"
  }\n--- block ---\n${item.block.text}--- output ---\n${run.output}${
    item.expected === undefined
      ? ""
      : `--- the guide shows ---\n${item.expected}`
  }`;
}

/** Options for {@linkcode docSteps}. */
export interface DocStepsOptions {
  /** The doc the blocks come from, for their labels. */
  doc: string;
  /** The shell they run in. */
  shell: DocShell;
}

/**
 * Runs each block of `items` in order, as a step named by
 * {@linkcode blockLabel}, and fails the step when the block does not do
 * what the doc shows.
 *
 * @throws {Error} In the step of an item that is no block to run (a file
 * to save, a block left out).
 */
export async function docSteps(
  step: Step,
  items: readonly PathItem[],
  options: DocStepsOptions,
): Promise<void> {
  for (const item of items) {
    const label = blockLabel(options.doc, item);
    await step(label, async () => {
      if (item.kind !== "run") {
        throw new Error(`${label}: a ${item.kind} item, not a block to run`);
      }
      const run = await runBlock(options.shell, item);
      assert.ok(blockPassed(item, run), blockFailure(label, item, run));
    });
  }
}
