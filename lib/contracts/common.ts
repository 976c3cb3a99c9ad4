// Pieces the routes' answer schemas share (lib/contracts/*.ts).
import { z } from 'zod';

export const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
export const isoTime = z.iso.datetime();
export const loose = (shape: z.ZodRawShape) => z.object(shape).loose();
export const LnurlAuthChallenge = loose({ k1: hex64, lnurl: z.string(), expiresAt: isoTime, pollToken: z.string(), qr: z.string() });
export const Pending = loose({ status: z.literal('pending'), expiresAt: isoTime });
export const CATEGORY = z.enum(['data', 'ai', 'finance', 'weather', 'compute', 'storage', 'other']);
export const NO_CACHE = { 'Cache-Control': 'no-store' };
