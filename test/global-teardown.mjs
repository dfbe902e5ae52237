export default async function globalTeardown() {
  globalThis.__stopTestRedis?.();
}
