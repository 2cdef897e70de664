export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

/**
 * Waits for `promise` to settle, at most `ms`. The timer is cleared when the promise wins, so a
 * bounded wait never keeps the process alive once there is nothing left to wait for.
 */
export async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))));
  try {
    await Promise.race([promise.then(() => undefined, () => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
