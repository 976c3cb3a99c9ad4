// Constant-time checks of secrets sent by callers (docs/architecture.md decision 10).
import { createHash, timingSafeEqual } from 'node:crypto';
import { HttpError, notConfigured } from './errors.js';

/** True when `sent` equals `expected`, taking the same time whatever was sent (both are hashed first, so lengths match). */
export function sameSecret(sent: string | null | undefined, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(sent ?? ''), digest(expected));
}

/** Scheduled functions (api/cron/*): Vercel calls them with `Authorization: Bearer <CRON_SECRET>`; nothing else may. */
export function requireCronSecret(secret: string | undefined, authorization: string | null): void {
  if (!secret) throw notConfigured('Scheduled functions are not configured: set CRON_SECRET', ['CRON_SECRET'], 3600);
  if (!sameSecret(authorization, `Bearer ${secret}`)) {
    throw new HttpError(401, 'UNAUTHORIZED', 'This endpoint is for the scheduler only', {}, { 'WWW-Authenticate': 'Bearer' });
  }
}
