/**
 * Child-process plumbing shared by the kcp server and the component
 * processes: logs appended as they arrive, a stop that escalates to SIGKILL,
 * and waiting on files a process writes.
 *
 * @module
 */

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
