// Rotating the token secret through its settings (read by loadConfig, as
// from the environment), on the real local server: with the old secret moved to L402_SECRET_PREVIOUS, tokens it signed
// still open paid routes (once) and new tokens are signed with the new one;
// with it removed, its tokens are refused (402 UNKNOWN_KEY, a fresh challenge).
import { describe, expect, it } from 'vitest';
import { decodeToken } from 'l402-paywall';
import { payDemoChallenge, useDevServer, type ChallengeBody, type DemoCredential, type Settings } from '../support/server.js';

const OLD = 'rotation-old-secret-0123456789abcdef0123456789abcdef';
const NEW = 'rotation-new-secret-fedcba9876543210fedcba9876543210';

describe('L402_SECRET_PREVIOUS end to end', () => {
  const server = useDevServer(() => ({ L402_SECRET: OLD }));

  /** The service rebuilt from these settings as a new deployment would be, keeping the shared store (replay marks, dev node). */
  function redeploy(env: Settings): void {
    const { store, replay, provider, devNode } = server.ctx;
    server.redeploy(server.config(env), { store, replay, provider, devNode });
  }

  async function paidCredential(): Promise<DemoCredential & { kid: string }> {
    const credential = await payDemoChallenge(server.url);
    return { ...credential, kid: decodeToken(credential.token)!.kid };
  }
  const demo = (authorization: string) => fetch(`${server.url}/api/demo/btc-price`, { headers: { authorization } });
  const verify = async (c: { token: string; preimage: string }) =>
    (await (
      await fetch(`${server.url}/api/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: `${c.token}:${c.preimage}` }),
      })
    ).json()) as { valid: boolean };

  it('old tokens open paid routes while the old secret is previous, and are refused once it is removed', async () => {
    const beforeRotation = await Promise.all([paidCredential(), paidCredential(), paidCredential()]);
    const [usedAcrossRotation, acceptedAfterRotation, refusedAfterRemoval] = beforeRotation;
    const oldKid = usedAcrossRotation!.kid;
    expect((await demo(usedAcrossRotation!.authorization)).status).toBe(200);

    redeploy({ L402_SECRET: NEW, L402_SECRET_PREVIOUS: OLD });
    const signedNew = await paidCredential();
    expect(signedNew.kid).not.toBe(oldKid); // new tokens: the new secret
    const accepted = await demo(acceptedAfterRotation!.authorization);
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toMatchObject({ usd: expect.any(Number) });
    // Still one request per token across the rotation.
    expect(await (await demo(usedAcrossRotation!.authorization)).json()).toMatchObject({ code: 'TOKEN_ALREADY_USED' });
    expect(await verify(refusedAfterRemoval!)).toMatchObject({ valid: true });

    redeploy({ L402_SECRET: NEW, L402_SECRET_PREVIOUS: undefined });
    const refused = await demo(refusedAfterRemoval!.authorization);
    expect(refused.status).toBe(402);
    const body = (await refused.json()) as ChallengeBody;
    expect(body).toMatchObject({ code: 'UNKNOWN_KEY', macaroon: expect.any(String), invoice: expect.any(String) });
    expect(decodeToken(body.macaroon)!.kid).toBe(signedNew.kid);
    expect(await verify(refusedAfterRemoval!)).toMatchObject({ valid: false });
    expect((await demo(signedNew.authorization)).status).toBe(200);
  });
});
