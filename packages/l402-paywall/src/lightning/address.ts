// Lightning Address (LUD-16): user@domain, usernames a-z0-9-_. (lower case).
import { z } from 'zod';

const USERNAME = '[a-z0-9\\-_.+]+';
const PUBLIC_HOST = '(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]{2,63}';
// Development only: a server on this machine, e.g. `alice@127.0.0.1:3000`, `alice@localhost:3000`, `alice@[::1]:3000`.
const LOOPBACK_HOST = '(?:localhost|127(?:\\.\\d{1,3}){3}|\\[::1\\])';
const PORT = '(?::\\d{1,5})?';

const PUBLIC_ADDRESS = new RegExp(`^${USERNAME}@${PUBLIC_HOST}${PORT}$`);
const LOOPBACK_ADDRESS = new RegExp(`^${USERNAME}@${LOOPBACK_HOST}${PORT}$`);
const MESSAGE = 'must be a Lightning Address like name@example.com';

function addressSchema(allowLoopback: boolean) {
  return z
    .string()
    .trim()
    .max(320)
    .transform((s) => s.toLowerCase())
    .pipe(z.string().refine((s) => PUBLIC_ADDRESS.test(s) || (allowLoopback && LOOPBACK_ADDRESS.test(s) && validLoopback(s)), MESSAGE));
}

/** Public addresses only (name@example.com): what production accepts. */
export const LightningAddress = addressSchema(false);

/** Also accepts addresses on this machine (name@127.0.0.1:3000, name@localhost:3000) when `allowLoopback` (development). */
export const LightningAddressWithLoopback = addressSchema(true);

export function lightningAddressSchema(options: { allowLoopback: boolean }): typeof LightningAddress {
  return options.allowLoopback ? LightningAddressWithLoopback : LightningAddress;
}

export interface LightningAddressParts {
  username: string;
  /** Host as written, with its port when it has one (`example.com`, `127.0.0.1:3000`). */
  host: string;
  loopback: boolean;
}

/** Splits a normalised address (parse it with one of the schemas first). */
export function splitLightningAddress(address: string): LightningAddressParts {
  const at = address.lastIndexOf('@');
  return { username: address.slice(0, at), host: address.slice(at + 1), loopback: LOOPBACK_ADDRESS.test(address) };
}

function validLoopback(address: string): boolean {
  const octets = /@127\.(\d+)\.(\d+)\.(\d+)/.exec(address);
  return !octets || octets.slice(1).every((o) => Number(o) <= 255);
}
