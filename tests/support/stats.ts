// GET /api/stats as the dashboard reads it: a login of a key (made directly,
// as a signed LNURL-auth challenge would make it) and its Bearer token.
import { expect } from 'vitest';
import { createLogin } from '../../lib/service/accounts/auth.js';
import type { TestServer } from './server.js';

/** Logs `pubkey` in on `server`; `read()` then answers GET /api/stats's body as that login sees it (200, or the test fails). */
export async function statsReader(server: Pick<TestServer, 'url' | 'ctx'>, pubkey: string): Promise<{ read(): Promise<Record<string, unknown>> }> {
  const { token } = await createLogin(server.ctx, pubkey);
  return {
    async read() {
      const response = await fetch(`${server.url}/api/stats`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).toBe(200);
      return (await response.json()) as Record<string, unknown>;
    },
  };
}
