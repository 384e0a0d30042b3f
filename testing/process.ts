/**
 * Child-process plumbing shared by the kcp server, the component processes
 * and the tests: a command run to completion with its output decoded, logs
 * appended as they arrive, a stop that escalates to SIGKILL, and waiting on
 * files a process writes.
 *
 * @module
 */

/** What a finished command printed, and its exit code. */
export interface CommandResult {
  /** Exit code. */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/** Options for {@linkcode runCommand}. */
export interface RunCommandOptions {
  /** Working directory. @default the current one */
  cwd?: string;
  /** Environment variables added to the inherited ones. */
  env?: Record<string, string>;
  /** Text piped to standard input; without it, standard input is null. */
  stdin?: string;
}

/** Runs `program` with `args` until it exits and returns what it printed. */
export async function runCommand(
  program: string,
  args: readonly string[],
  options: RunCommandOptions = {},
): Promise<CommandResult> {
  const { cwd, env, stdin } = options;
  const child = new Deno.Command(program, {
    args: [...args],
    ...(cwd === undefined ? {} : { cwd }),
    ...(env === undefined ? {} : { env }),
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const { code, stdout, stderr } = await child.output();
  const decoder = new TextDecoder();
  return {
    code,
    stdout: decoder.decode(stdout),
    stderr: decoder.decode(stderr),
  };
}

/**
 * Appends everything a stream yields to a file as it arrives (a `pipeTo`
 * into `file.writable` holds the bytes back until the stream ends).
 */
export async function appendTo(
  stream: ReadableStream<Uint8Array>,
  path: string,
): Promise<void> {
  using file = await Deno.open(path, { create: true, append: true });
  try {
    for await (const chunk of stream) {
      for (let written = 0; written < chunk.length;) {
        written += await file.write(chunk.subarray(written));
      }
    }
  } catch {
    // the process is gone: keep what was written
  }
}

/** Options for {@linkcode stopProcess}. */
export interface StopOptions {
  /** The first signal. @default {"SIGTERM"} */
  signal?: Deno.Signal;
  /** How long to wait before SIGKILL. @default {20_000} */
  graceMs?: number;
}

/** Signals exactly this child, escalates to SIGKILL after the grace period, and waits for its exit. */
export async function stopProcess(
  child: Deno.ChildProcess,
  options: StopOptions = {},
): Promise<Deno.CommandStatus> {
  const { signal = "SIGTERM", graceMs = 20_000 } = options;
  const kill = (s: Deno.Signal) => {
    try {
      child.kill(s);
    } catch {
      // it exited meanwhile
    }
  };
  kill(signal);
  const timer = setTimeout(() => kill("SIGKILL"), graceMs);
  try {
    return await child.status;
  } finally {
    clearTimeout(timer);
  }
}

/** Whether a path exists. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
