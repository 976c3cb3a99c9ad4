// fetchWithL402 against hostile servers on real sockets: its destination
// policy (`destinations`, with l402-paywall/node's nodeDestinations) keeps
// requests and their redirects out of non-public networks, and its limits
// (`timeoutMs`, `maxChallengeBytes`) keep a server from holding the caller
// for ever or filling its memory.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DestinationRefused, fetchWithL402, type DestinationPolicy, type FetchWithL402Options, type Wallet } from 'l402-paywall/client';
import { nodeDestinations } from 'l402-paywall/node';
import { MIB, SECRET_BODY, startHostileServer, type HostileServer } from '../support/hostile-server.js';

/** No test here pays: any payment is a failure. */
const wallet: Wallet = {
  network: 'regtest',
  payInvoice: () => {
    throw new Error('nothing may be paid in these tests');
  },
};
// Every call gives up after 5 s, so that the code before the fix fails fast instead of hanging.
const call = (url: string, options: Partial<FetchWithL402Options> = {}, init: RequestInit = {}) =>
  fetchWithL402(url, { signal: AbortSignal.timeout(5_000), ...init }, { wallet, maxPriceSats: 10, tokens: false, ...options });

async function refused(work: Promise<unknown>): Promise<DestinationRefused> {
  const error = await work.then(
    (answer) => expect.fail(`expected a refusal, got ${answer instanceof Response ? `HTTP ${answer.status}` : String(answer)}`),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DestinationRefused);
  return error as DestinationRefused;
}

let internal: HostileServer; // what an agent's network holds: must stay unreached unless allowed
let other: HostileServer; // the server that redirects
beforeAll(async () => {
  [internal, other] = await Promise.all([startHostileServer(), startHostileServer()]);
});
afterAll(async () => {
  await Promise.all([internal?.close(), other?.close()]);
});
beforeEach(() => {
  internal.requests.length = 0;
  internal.headers.length = 0;
  other.requests.length = 0;
  other.headers.length = 0;
});

/** A host name the test's resolver says is public (a documentation-free public address), served by `other` on loopback. */
const PUBLIC_NAME = 'api.public-host.example';
const PUBLIC_ADDRESS = '93.184.216.34';
function withPublicHost(policy: DestinationPolicy): DestinationPolicy {
  return {
    ...policy,
    resolve: async (hostname) => (hostname === PUBLIC_NAME ? [PUBLIC_ADDRESS] : policy.resolve!(hostname)),
    // The public address is reached on loopback, where `other` listens; every other address as judged.
    connectTo: (addresses) => policy.connectTo!(addresses.map((address) => (address === PUBLIC_ADDRESS ? '127.0.0.1' : address))),
  };
}

describe('destinations: public only', () => {
  const publicOnly = nodeDestinations();

  it('refuses loopback in every spelling (literal, resolved name, IPv4-mapped, IPv6, hex) before connecting', async () => {
    const port = internal.port;
    for (const [url, kind] of [
      [`http://127.0.0.1:${port}/secret`, 'loopback'],
      [`http://localhost:${port}/secret`, 'loopback'],
      [`http://[::ffff:127.0.0.1]:${port}/secret`, 'loopback'],
      [`http://[::1]:${port}/secret`, 'loopback'],
      [`http://0x7f.1:${port}/secret`, 'loopback'],
      [`http://2130706433:${port}/secret`, 'loopback'],
      ['http://169.254.169.254/latest/meta-data/', 'link-local'],
      ['http://[::ffff:a9fe:a9fe]/latest/meta-data/', 'link-local'],
      ['http://10.1.2.3/admin', 'private'],
      ['http://metadata.google.internal/computeMetadata/v1/', 'private'],
    ] as const) {
      const error = await refused(call(url, { destinations: publicOnly }));
      expect(error, url).toMatchObject({ code: 'DESTINATION_REFUSED', addressKind: kind, redirected: false });
      expect(error.message).toContain('not a public one');
    }
    expect(internal.requests).toEqual([]);
  });

  it('refuses a redirect from a public host into a private one, and never sends it', async () => {
    const url = `http://${PUBLIC_NAME}:${other.port}/redirect?to=${encodeURIComponent(`${internal.url}/secret`)}`;
    const error = await refused(call(url, { destinations: withPublicHost(publicOnly) }));
    expect(error).toMatchObject({ url: `${internal.url}/secret`, addressKind: 'loopback', redirected: true });
    expect(error.message).toContain('Refused a redirect to');
    expect(other.requests).toHaveLength(1);
    expect(internal.requests).toEqual([]);
  });
});

describe('destinations: what may be allowed', () => {
  it('allowPrivate: [origin] reaches that origin only; its redirect to another local origin is refused', async () => {
    const destinations = nodeDestinations({ allowPrivate: [other.url] });
    const response = await call(`${other.url}/secret`, { destinations });
    expect(await response.text()).toBe(SECRET_BODY);
    const error = await refused(call(`${other.url}/redirect?to=${encodeURIComponent(`${internal.url}/secret`)}`, { destinations }));
    expect(error).toMatchObject({ redirected: true, addressKind: 'loopback' });
    expect(internal.requests).toEqual([]);
    await refused(call(`${internal.url}/secret`, { destinations }));
  });

  it('allowPrivate: true reaches any of them, redirects included', async () => {
    const response = await call(`${other.url}/redirect?to=${encodeURIComponent(`${internal.url}/secret`)}`, {
      destinations: nodeDestinations({ allowPrivate: true }),
    });
    expect(await response.text()).toBe(SECRET_BODY);
    expect(internal.requests).toEqual(['/secret']);
  });

  it('allowRequestedPrivate (the command line): the private host asked for and its private redirects, never public into private', async () => {
    const destinations = nodeDestinations({ allowRequestedPrivate: true });
    expect(await (await call(`${internal.url}/secret`, { destinations })).text()).toBe(SECRET_BODY);
    const viaLocal = await call(`${other.url}/redirect?to=${encodeURIComponent(`${internal.url}/secret`)}`, { destinations });
    expect(await viaLocal.text()).toBe(SECRET_BODY);
    internal.requests.length = 0;
    const fromPublic = `http://${PUBLIC_NAME}:${other.port}/redirect?to=${encodeURIComponent(`${internal.url}/secret`)}`;
    expect(await refused(call(fromPublic, { destinations: withPublicHost(destinations) }))).toMatchObject({ redirected: true });
    expect(internal.requests).toEqual([]);
  });

  it('connects to the addresses it judged, never to a second DNS answer', async () => {
    // owner.test resolves nowhere in DNS: the request can only arrive if the connection used the judged address.
    const judged = { ...nodeDestinations({ allowPrivate: true }), resolve: async () => ['127.0.0.1'] };
    const response = await call(`http://owner.test:${internal.port}/secret`, { destinations: judged });
    expect(await response.text()).toBe(SECRET_BODY);
    expect(internal.headers[0]!.host).toBe(`owner.test:${internal.port}`);
  });

  it('follows redirects as fetch does: 303 turns a POST into a GET without body; Authorization never crosses origins', async () => {
    const destinations = nodeDestinations({ allowPrivate: true });
    const crossOrigin = `${other.url}/redirect?status=303&to=${encodeURIComponent(`${internal.url}/secret`)}`;
    const response = await call(
      crossOrigin,
      { destinations },
      { method: 'POST', body: '{"a":1}', headers: { authorization: 'Bearer mine', 'content-type': 'application/json' } },
    );
    expect(response.status).toBe(200);
    expect(other.headers[0]).toMatchObject({ authorization: 'Bearer mine', 'content-type': 'application/json' });
    expect(internal.headers[0]!.authorization).toBeUndefined();
    expect(internal.headers[0]!['content-type']).toBeUndefined();
    await response.text();
    // Same origin: kept.
    const sameOrigin = `${other.url}/redirect?status=307&to=${encodeURIComponent('/secret')}`;
    expect(await (await call(sameOrigin, { destinations }, { headers: { authorization: 'Bearer mine' } })).text()).toBe(SECRET_BODY);
    expect(other.headers.at(-1)!.authorization).toBe('Bearer mine');
  });
});

describe('limits', () => {
  it('reads at most maxChallengeBytes of a 402 without WWW-Authenticate: a 64 MiB JSON body is no challenge and is not read', async () => {
    const response = await call(`${internal.url}/stream?mib=64&status=402&json=1`);
    expect(response.status).toBe(402);
    await response.body!.cancel();
    const { bytes, clientHungUp } = await internal.streamed();
    expect(clientHungUp).toBe(true);
    expect(bytes).toBeLessThan(16 * MIB);
  });

  it('timeoutMs ends an answer that trickles and one that never comes, through fetch and through nodeDestinations', async () => {
    for (const destinations of [undefined, nodeDestinations({ allowPrivate: true })]) {
      const started = Date.now();
      const trickling = await call(`${internal.url}/trickle`, { timeoutMs: 800, destinations });
      await expect(trickling.text()).rejects.toMatchObject({ name: 'TimeoutError' });
      await expect(call(`${internal.url}/silent`, { timeoutMs: 800, destinations })).rejects.toMatchObject({ name: 'TimeoutError' });
      expect(Date.now() - started).toBeLessThan(4_000);
    }
  });

  it('refuses a timeoutMs or maxChallengeBytes that is not a positive whole number', async () => {
    for (const options of [
      { timeoutMs: 0 },
      { timeoutMs: -1 },
      { timeoutMs: 1.5 },
      { timeoutMs: 2 ** 31 },
      { maxChallengeBytes: 0 },
      { maxChallengeBytes: Number.NaN },
    ]) {
      await expect(call(`${internal.url}/secret`, options), JSON.stringify(options)).rejects.toBeInstanceOf(TypeError);
    }
  });
});
