/**
 * How `deno task dev` prints: numbered steps with the time since the start,
 * notes, the commands a person would type (`$ kubectl ...`) with their
 * output indented beneath, and colours on a terminal (none with
 * `NO_COLOR`).
 *
 * @module
 */
import { relative } from "node:path";
import type { KcpApi, KubectlResult } from "../../testing/mod.ts";

const useColor = !Deno.noColor && Deno.stdout.isTerminal();

function paint(code: string, text: string): string {
  return useColor ? `\x1b[${code}m${text}\x1b[0m` : text;
}

/** Bold on a terminal. */
export const bold = (text: string): string => paint("1", text);
/** Dim on a terminal. */
export const dim = (text: string): string => paint("2", text);
/** Bold green on a terminal. */
export const green = (text: string): string => paint("1;32", text);
/** Bold red on a terminal. */
export const red = (text: string): string => paint("1;31", text);
/** Cyan on a terminal: the commands. */
export const cyan = (text: string): string => paint("36", text);

let started = performance.now();
let stepNumber = 0;
let stepCount = 0;

/**
 * Starts the clock of the steps (and of {@linkcode elapsed}) and sets how
 * many steps {@linkcode step} numbers out of.
 */
export function startSteps(total: number): void {
  started = performance.now();
  stepNumber = 0;
  stepCount = total;
}

/** Prints the next step's title, `[n/total] title (seconds since the start)`. */
export function step(title: string): void {
  stepNumber++;
  console.log(
    `\n${bold(`[${stepNumber}/${stepCount}] ${title}`)} ${
      dim(`(${secondsSince(started)})`)
    }`,
  );
}

/** Seconds since {@linkcode startSteps}, like `12.3s`. */
export function elapsed(): string {
  return secondsSince(started);
}

/** Prints a line under the current step. */
export function note(text: string): void {
  console.log(`      ${text}`);
}

/** Indents each line of `text` as a command's output. */
export function indent(
  text: string,
  paintLine: (line: string) => string = (line) => line,
): string {
  return text.trimEnd().split("\n").map((line) => `        ${paintLine(line)}`)
    .join("\n");
}

/** A path as a person in the current directory types it. */
export function shown(path: string): string {
  const rel = relative(Deno.cwd(), path);
  return rel.startsWith("..") ? path : rel;
}

/** Milliseconds as seconds, like `12.3s`. */
export function secondsOf(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

function secondsSince(start: number): string {
  return secondsOf(performance.now() - start);
}

/** Prints a command as typed at a shell prompt: `$ command`. */
export function showCommand(command: string): void {
  console.log(cyan(`      $ ${command}`));
}

/** Options for {@linkcode kubectl} and {@linkcode kubectlOk}. */
export interface DevKubectlOptions {
  /** The workspace, whose kcp admin kubeconfig the command names. */
  workspace: string;
  /**
   * Wraps the run once the command is printed, say to print a heartbeat
   * while a `kubectl wait` lasts.
   */
  during?: (run: Promise<KubectlResult>) => Promise<KubectlResult>;
}

/** Runs kubectl as the kcp admin in a workspace, printing the command a person would type. */
export async function kubectl(
  kcp: KcpApi,
  args: readonly string[],
  options: DevKubectlOptions,
): Promise<KubectlResult> {
  const { workspace, during = (run) => run } = options;
  const kubeconfig = shown(await kcp.kubeconfig("admin", workspace));
  showCommand(`kubectl --kubeconfig=${kubeconfig} ${args.join(" ")}`);
  return await during(kcp.kubectl(args, { workspace }));
}

/**
 * Like {@linkcode kubectl}, printing the output.
 *
 * @throws {Error} With kubectl's standard error if it exits non-zero.
 */
export async function kubectlOk(
  kcp: KcpApi,
  args: readonly string[],
  options: DevKubectlOptions,
): Promise<string> {
  const result = await kubectl(kcp, args, options);
  if (result.code !== 0) {
    throw new Error(
      `kubectl ${
        args.join(" ")
      } failed (${result.code}): ${result.stderr.trim()}`,
    );
  }
  if (result.stdout.trim() !== "") console.log(indent(result.stdout));
  return result.stdout;
}

/** Prints `$ cat <path>` and the file, as it is about to be applied; returns the text. */
export async function showFile(path: string): Promise<string> {
  const text = await Deno.readTextFile(path);
  showCommand(`cat ${shown(path)}`);
  console.log(indent(text));
  return text;
}
