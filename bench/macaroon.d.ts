// The part of js-macaroon (npm `macaroon`, no types of its own) that bench/peers.ts uses.
declare module 'macaroon' {
  export interface Macaroon {
    readonly identifier: Uint8Array;
    addFirstPartyCaveat(condition: string | Uint8Array): void;
    exportBinary(): Uint8Array;
    /** Throws when the signature or a caveat does not verify; `check` returns an error string or null. */
    verify(rootKey: Uint8Array, check: (condition: string) => string | null, discharges?: Macaroon[]): void;
  }
  export function newMacaroon(options: { identifier: Uint8Array | string; rootKey: Uint8Array | string; location?: string; version?: 1 | 2 }): Macaroon;
  export function importMacaroon(serialized: string | Uint8Array | object): Macaroon;
  export function bytesToBase64(bytes: Uint8Array): string;
  const macaroon: { newMacaroon: typeof newMacaroon; importMacaroon: typeof importMacaroon; bytesToBase64: typeof bytesToBase64 };
  export default macaroon;
}
