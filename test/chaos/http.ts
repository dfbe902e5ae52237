/** HTTP calls to the processes under chaos (a failed connection answers status 0), a bounded pool, sleep. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function request(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  bearer?: string,
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = bearer ? { authorization: `Bearer ${bearer}` } : {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      signal: AbortSignal.timeout(15_000),
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    return { status: 0, text: err instanceof Error ? err.message : String(err) };
  }
}

/** Runs `fn` over `items`, at most `limit` at once. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  fn: (t: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        await fn(item);
      }
    }),
  );
}
