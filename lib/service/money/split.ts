// The 99.7/0.3 split (docs/architecture.md decision 6), in integer millisatoshis: the
// owner's share is rounded down, the service's fee is exactly the rest, so
// share + fee always equals what was paid and no millisatoshi is invented.

const OWNER_PER_MILLE = 997n;

export function ownerShareMsat(amountMsat: number): number {
  if (!Number.isSafeInteger(amountMsat) || amountMsat < 0) throw new RangeError('amountMsat must be a non-negative whole number of millisatoshis');
  // BigInt: amountMsat * 997 can pass 2^53 for large amounts.
  return Number((BigInt(amountMsat) * OWNER_PER_MILLE) / 1000n);
}

export function serviceFeeMsat(amountMsat: number): number {
  return amountMsat - ownerShareMsat(amountMsat);
}
