// The Payment scheme's wire as a payer writes it (docs/mpp.md): a challenge
// read from a 402's WWW-Authenticate with the client's public parser, and a
// credential that echoes it, `Payment <base64url(JSON)>`. The bench builds its
// charge and session credentials with this from the paywall's own 402s, so it
// needs no entry point beyond the public ones and drives any copy of the library alike.
import { parseAuthenticate } from 'l402-paywall/client';

/** A Payment challenge's parameters as the credential echoes them. */
export type PaymentChallengeEcho = Readonly<Record<string, string>>;

// The parameters a challenge carries and a credential echoes (draft-httpauth-payment).
const ECHOED = ['id', 'realm', 'method', 'intent', 'request', 'expires', 'digest', 'description', 'opaque'] as const;

/** The first Payment challenge of `intent` in a WWW-Authenticate value, with its decoded request object. */
export function paymentChallenge(header: string | null, intent: 'charge' | 'session'): { echo: PaymentChallengeEcho; request: Record<string, unknown> } {
  for (const raw of parseAuthenticate(header ?? '')) {
    if (raw.scheme.toLowerCase() !== 'payment' || raw.params.get('intent') !== intent) continue;
    const echo: Record<string, string> = {};
    for (const name of ECHOED) {
      const value = raw.params.get(name);
      if (value !== undefined) echo[name] = value;
    }
    const request = JSON.parse(Buffer.from(echo.request ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    return { echo, request };
  }
  throw new Error(`the 402 offered no Payment ${intent} challenge`);
}

/** The Authorization value answering `echo` with `payload` (keys sorted, as a JCS writer sends them). */
export function paymentCredential(echo: PaymentChallengeEcho, payload: Record<string, string>): string {
  return `Payment ${Buffer.from(sortedJson({ challenge: echo, payload }), 'utf8').toString('base64url')}`;
}

const encoder = new TextEncoder();

function sortedJson(value: Record<string, unknown>): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );
}

/** One Server-Sent Event as meteredEventStream writes it (no event name): a `data:` line per line, then a blank line. */
export function sseData(data: string): Uint8Array {
  return encoder.encode(
    `${data
      .split(/\r\n|\r|\n/)
      .map((line) => `data: ${line}\n`)
      .join('')}\n`,
  );
}
